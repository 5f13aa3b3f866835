"""The sketcher's vocabulary: names, defaults and ranges that the engine checks and the panel, the
CLI and session files all import, so a value means the same everywhere.

``SearchParams`` is what one search is given; like every parameter object here it checks itself
when built (``__post_init__``), so an impossible one never exists and the sentence is the same
from the panel, the CLI or Python. Importing this module stays light (no torch).
"""

from __future__ import annotations

from dataclasses import dataclass

from engines.core import EngineError, check_seed

from .polish import POLISH_AFTER

STYLES: tuple[str, ...] = ("auto", "filled", "sketch")  # how a drawing is judged: detect, filled shapes, outlines
PROPOSERS: tuple[str, ...] = ("model", "random")  # where edits come from: the edit model, or random mutations
# Pictures the panel and `sketcher solve` open as a target (Pillow reads them all).
IMAGE_SUFFIXES: tuple[str, ...] = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")
BUDGET_RANGE = (1, 1_000_000)  # renderer calls of one search
BEAM_RANGE = (1, 256)
PROPOSALS_RANGE = (1, 64)
EXAMPLE_BUDGET = 1500  # renderer calls for the embedded example drawing (the panel's Run example, `workbench demo`)


@dataclass(frozen=True)
class SearchParams:
    budget: int = 2000  # renderer calls
    beam: int = 16
    proposals: int = 8  # edits asked per beam program and round
    goal: float = 0.98  # stop when the score reaches this
    style: str = "auto"  # one of STYLES
    start: str = ""  # a program to continue from; empty: the empty program and random ones
    seed: int = 0
    temperature: float = 1.0
    polish_after: int = POLISH_AFTER  # renders without a better match before the best program's numbers are polished; 0: never
    residual: bool = True  # the polish also tries parts fitted to the wrong pixels (residual.py)

    def __post_init__(self) -> None:
        low, high = BUDGET_RANGE
        if not low <= self.budget <= high:
            raise EngineError(f"budget {self.budget} is out of range: use {low} to {high} renderer calls")
        if self.polish_after < 0:
            raise EngineError("polish_after must be 0 (never) or a number of renders")
        if not in_range(self.beam, BEAM_RANGE) or not in_range(self.proposals, PROPOSALS_RANGE):
            raise EngineError(f"beam must be {BEAM_RANGE[0]} to {BEAM_RANGE[1]} and proposals {PROPOSALS_RANGE[0]} to {PROPOSALS_RANGE[1]}")
        if self.style not in STYLES:
            raise EngineError(f"unknown target style {self.style!r}: use {', '.join(STYLES[:-1])} or {STYLES[-1]}")
        check_seed(self.seed)


def in_range(value: int, bounds: tuple[int, int]) -> bool:
    return bounds[0] <= value <= bounds[1]
