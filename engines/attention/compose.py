"""Combine two masks without going dense: intersection or union of what rows may see.

Each column's masked rows are at most three intervals per mask (causal part, [LTS, LTE),
[UTS, UTE)). Cutting the rows at every interval end gives at most 13 elementary segments per
column; membership is constant on each, so the result's masked runs come out in O(N_k) and go
through the same form chooser as ``from_dense`` (with its error when no form holds them).
"""

from __future__ import annotations

import numpy as np

from engines.core import EngineError

from .forms import MAX_RUNS, from_runs
from .representation import FlashMask

OPERATIONS = ("intersection", "union")


def compose(a: FlashMask, b: FlashMask, operation: str = "intersection") -> FlashMask:
    """``intersection``: a row sees a key only if both masks allow it; ``union``: if either does."""
    if operation not in OPERATIONS:
        raise EngineError(f"unknown operation {operation!r}; choose intersection or union")
    if (a.n_q, a.n_k) != (b.n_q, b.n_k):
        raise EngineError(f"the masks differ in size: {a.n_q}x{a.n_k} and {b.n_q}x{b.n_k}")
    try:
        shape = np.broadcast_shapes(a.indices.shape[:3], b.indices.shape[:3])
    except ValueError:
        raise EngineError(f"the masks' batch/heads {a.indices.shape[:2]} and {b.indices.shape[:2]} do not broadcast") from None
    sets_a, sets_b = _intervals(a, shape), _intervals(b, shape)
    points = np.sort(np.stack([np.zeros(shape, np.int64), np.full(shape, a.n_q)] + [x for s in sets_a + sets_b for x in s], axis=-1), axis=-1)
    lo, hi = points[..., :-1], points[..., 1:]
    mid = lo  # membership is constant on [lo, hi); test at lo, and ignore empty segments below
    in_a, in_b = _member(sets_a, mid), _member(sets_b, mid)
    masked = (in_a | in_b) if operation == "intersection" else (in_a & in_b)
    empty = hi <= lo
    # An empty segment copies its left neighbour, so it never splits or starts a run.
    for k in range(1, masked.shape[-1]):
        masked[..., k] = np.where(empty[..., k], masked[..., k - 1], masked[..., k])
    masked[..., 0] &= ~empty[..., 0]
    flags = np.concatenate([np.zeros(shape + (1,), bool), masked, np.zeros(shape + (1,), bool)], axis=-1).astype(np.int8)
    change = np.diff(flags, axis=-1)  # +1 at a run start (segment k), -1 after a run end
    bounds = np.concatenate([lo, hi[..., -1:]], axis=-1)  # boundary k is the start of segment k
    counts = (change == 1).sum(axis=-1)
    starts = np.full(shape + (MAX_RUNS,), a.n_q, dtype=np.int64)
    ends = starts.copy()
    for kind, target in ((1, starts), (-1, ends)):
        rank = np.cumsum(change == kind, axis=-1) - 1
        idx = np.nonzero((change == kind) & (rank < MAX_RUNS))
        target[idx[:-1] + (rank[idx],)] = bounds[idx]
    return from_runs(starts, ends, counts, a.n_q, a.n_k, None)


def _intervals(mask: FlashMask, shape: tuple[int, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    iv = mask.intervals()
    ce = np.broadcast_to(iv.causal_end(), shape)
    return [
        (np.zeros(shape, np.int64), np.array(ce, dtype=np.int64)),
        (np.broadcast_to(iv.lts, shape), np.broadcast_to(iv.lte, shape)),
        (np.broadcast_to(iv.uts, shape), np.broadcast_to(iv.ute, shape)),
    ]


def _member(sets: list[tuple[np.ndarray, np.ndarray]], rows: np.ndarray) -> np.ndarray:
    hit = np.zeros(rows.shape, dtype=bool)
    for start, end in sets:
        hit |= (rows >= start[..., None]) & (rows < end[..., None])
    return hit
