"""The attention engine (Qt-free): FlashMask masks, five attention backends, timing and exports.

Importing this package stays cheap (no torch): the torch-backed names load on first use.
"""

from __future__ import annotations

from typing import Any

from .blocks import BlockLayout, MaskStats, classify, mask_stats
from .dense import density_image, from_dense, to_dense
from .library import MASKS, build, mask_spec, resolve_params
from .representation import FlashMask, as_mask, full_mask, make_mask

_LAZY = {"flashmask_attention": "api", "BACKENDS": "api"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BACKENDS",
    "BlockLayout",
    "FlashMask",
    "MASKS",
    "MaskStats",
    "as_mask",
    "build",
    "classify",
    "density_image",
    "flashmask_attention",
    "from_dense",
    "full_mask",
    "make_mask",
    "mask_spec",
    "mask_stats",
    "resolve_params",
    "to_dense",
]
