"""Qt panels, one package per method. Each package exposes ``create_panel(ctx) -> MethodPanel``.

Import them lazily (``load_panel``) so that a panel's imports never slow the first paint.
"""

from __future__ import annotations

import importlib

from .base import MethodPanel, PanelContext


def load_panel(name: str, ctx: PanelContext) -> MethodPanel:
    module = importlib.import_module(f"panels.{name}")
    return module.create_panel(ctx)


__all__ = ["MethodPanel", "PanelContext", "load_panel"]
