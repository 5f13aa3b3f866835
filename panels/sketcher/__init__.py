"""The sketcher panel: draw, and get a CSG2D graphics program found by tree diffusion + search."""

from __future__ import annotations

from engines.sketcher.params import IMAGE_SUFFIXES as FILE_SUFFIXES  # light: no torch

__all__ = ["FILE_SUFFIXES", "create_panel"]


def create_panel(ctx):
    from .panel import SketcherPanel

    return SketcherPanel(ctx)
