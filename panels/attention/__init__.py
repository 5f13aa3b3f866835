"""The attention panel: FlashMask mask designer with live kernel timing (issue #3)."""

from __future__ import annotations

TITLE = "Attention masks (FlashMask)"
FILE_SUFFIXES = (".flashmask.json", ".flashmask.npy")


def create_panel(ctx):
    from .panel import AttentionPanel

    return AttentionPanel(ctx)
