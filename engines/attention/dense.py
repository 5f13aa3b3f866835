"""Between FlashMask vectors and dense boolean masks, and a downsampled view that never allocates N².

Dense masks are what users have today (and what ``sdpa_dense`` and ``reference`` consume);
``from_dense`` finds the smallest FlashMask form for one, or names the first column it cannot hold.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from engines.core import EngineError

from .forms import MAX_RUNS, from_runs
from .representation import FlashMask

#: Largest dense mask (elements per batch and head) we agree to materialise: 16384 x 16384.
MAX_DENSE_ELEMENTS = 1 << 28


def to_dense(mask: FlashMask, max_elements: int = MAX_DENSE_ELEMENTS) -> np.ndarray:
    """Boolean ``[B, Hm, N_q, N_k]``, True where row i may attend to column j."""
    elements = mask.n_q * mask.n_k * mask.batch * mask.heads
    if elements > max_elements:
        raise EngineError(
            f"a dense {mask.n_q} x {mask.n_k} mask ({elements / 1e6:.0f} M elements) is too large to materialise; use the downsampled view instead"
        )
    return mask.intervals().allowed_rows(np.arange(mask.n_q))


def from_dense(allowed, causal: bool | None = None) -> FlashMask:
    """The FlashMask form of a dense boolean mask ``[N_q, N_k]`` or ``[B, H, N_q, N_k]``.

    ``causal=None`` picks causal mode when the mask hides everything above the (bottom-right)
    diagonal and fits in it, else the non-causal form. Chooses the smallest C that represents it.
    Raises EngineError naming the first column that needs more than two masked intervals.
    """
    arr = np.asarray(allowed)
    if arr.dtype != bool:
        if arr.dtype.kind in "iuf" and np.isin(arr, (0, 1)).all():
            arr = arr.astype(bool)
        else:
            raise EngineError("a dense mask must be boolean (True = may attend) or 0/1")
    if arr.ndim == 2:
        arr = arr[None, None]
    if arr.ndim != 4 or 0 in arr.shape:
        raise EngineError(f"a dense mask must have shape [N_q, N_k] or [B, H, N_q, N_k], got {list(arr.shape)}")
    pad = np.zeros(arr.shape[:2] + (1, arr.shape[3]), dtype=np.int8)
    d = np.diff(np.concatenate([pad, (~arr).astype(np.int8), pad], axis=2), axis=2)  # [B, H, N_q + 1, N_k]
    counts = (d == 1).sum(axis=2)
    starts = np.full(counts.shape + (MAX_RUNS,), arr.shape[2], dtype=np.int64)
    ends = starts.copy()
    for kind, target in ((1, starts), (-1, ends)):
        b, h, col, row = np.nonzero(np.moveaxis(d == kind, 2, 3))  # ordered by column, then row
        rank = _rank_within(b, h, col)
        keep = rank < MAX_RUNS
        target[b[keep], h[keep], col[keep], rank[keep]] = row[keep]
    return from_runs(starts, ends, counts, arr.shape[2], arr.shape[3], causal)


def _rank_within(b: np.ndarray, h: np.ndarray, col: np.ndarray) -> np.ndarray:
    """0, 1, 2, ... for successive hits of each (b, h, column); hits come grouped and sorted."""
    if b.size == 0:
        return b
    key = (b * (h.max() + 1) + h) * (col.max() + 1) + col
    first = np.r_[True, key[1:] != key[:-1]]
    group_start = np.maximum.accumulate(np.where(first, np.arange(key.size), 0))
    return np.arange(key.size) - group_start


def density_image(mask: FlashMask, height: int, width: int, batch: int = 0, head: int = 0) -> np.ndarray:
    """Fraction of visible elements in each pixel of a ``height x width`` view of one batch/head.

    Exact (0/1) when the view is as large as the mask; otherwise each pixel averages its whole
    block of rows x columns. Never allocates N²: for each pixel column it sums, over its key
    columns, how many rows below r are masked (a piecewise-linear function of r) from sorted
    interval ends and prefix sums: O(N_k log N_k + height x width).
    """
    height = max(1, min(int(height), mask.n_q))
    width = max(1, min(int(width), mask.n_k))
    iv = mask.intervals().head(batch, head)
    row_edges = np.linspace(0, mask.n_q, height + 1).round().astype(np.int64)
    col_edges = np.linspace(0, mask.n_k, width + 1).round().astype(np.int64)
    bucket = np.searchsorted(col_edges, np.arange(mask.n_k), side="right") - 1
    sets = [(s, e) for s, e in ((np.zeros_like(iv.ce), iv.ce), (iv.lts, iv.lte), (iv.uts, iv.ute)) if (e > s).any()]
    below = np.zeros((width, height + 1), dtype=np.int64)  # masked elements in rows [0, r) per pixel column
    for size in range(1, len(sets) + 1):
        for combo in combinations(sets, size):
            start = np.maximum.reduce([c[0] for c in combo])
            end = np.maximum(np.minimum.reduce([c[1] for c in combo]), start)
            term = _sum_ramp(start, bucket, width, row_edges, mask.n_q) - _sum_ramp(end, bucket, width, row_edges, mask.n_q)
            below += term if size % 2 else -term
    masked = np.diff(below, axis=1).T  # [height, width]
    area = np.diff(row_edges)[:, None] * np.diff(col_edges)[None, :]
    return (area - masked) / np.maximum(area, 1)


def _sum_ramp(values: np.ndarray, bucket: np.ndarray, width: int, r: np.ndarray, n_q: int) -> np.ndarray:
    """For every pixel column p and every r: sum over its columns j of max(0, r - values_j)."""
    stride = n_q + 1
    keys = bucket * stride + values
    order = np.argsort(keys, kind="stable")
    keys, vals = keys[order], values[order]
    csum = np.concatenate([[0], np.cumsum(vals)])
    first = np.searchsorted(keys, np.arange(width) * stride)
    idx = np.searchsorted(keys, np.arange(width)[:, None] * stride + r[None, :])  # columns with value < r
    return r[None, :] * (idx - first[:, None]) - (csum[idx] - csum[first][:, None])
