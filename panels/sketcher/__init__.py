"""The sketcher panel: draw, and get a CSG2D graphics program found by tree diffusion + search."""
from __future__ import annotations

TITLE = "Sketcher (tree diffusion)"
FILE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")


def create_panel(ctx):
    from .panel import SketcherPanel

    return SketcherPanel(ctx)
