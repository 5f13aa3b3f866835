"""A vectorised CSG2D renderer (numpy) and the IoU measures the search and the benchmark use.

Geometry is the reference's: a 32x32-unit canvas, origin top-left, y down. ``(Circle r x y)`` is
the disc of radius 2r centred at (2x, 2y); ``(Quad x y w h a)`` is the rectangle centred at
(2x, 2y), 2w wide and 2h tall, turned by a*45 degrees. A pixel of an SxS image belongs to a shape
when its centre does (boundaries included); zero-area shapes are empty. ``+`` is union and ``-``
subtraction, evaluated as a tree. All primitive masks of a batch are computed in one numpy pass
when they fit a memory budget, else one at a time as the evaluation needs them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

from engines.core import EngineError

from .vocab import ADD, ANG0, CIRCLE, NUM0, QUAD, SUB, Tokens

CANVAS_UNITS = 32.0
DEFAULT_SIZE = 64
MIN_SIZE, MAX_SIZE = 8, 4096
MASK_BUDGET = 1 << 26  # primitive-mask pixels made in one numpy pass (64 MB); beyond it, one at a time
_EPS = 1e-4


def check_size(size: int) -> int:
    if not isinstance(size, (int, np.integer)) or not MIN_SIZE <= int(size) <= MAX_SIZE:
        raise EngineError(f"image size {size} is out of range: it must be {MIN_SIZE} to {MAX_SIZE} pixels")
    return int(size)


@functools.lru_cache(maxsize=16)
def _centres(size: int) -> np.ndarray:
    return ((np.arange(size, dtype=np.float32) + 0.5) * (CANVAS_UNITS / size)).astype(np.float32)


def _circle_rows(params: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per image row, the x interval [lo, hi] (units) inside each disc: (N, S) each."""
    c = _centres(size)
    r, x, y = (params[:, k, None].astype(np.float32) for k in range(3))
    half2 = (2 * r) ** 2 + _EPS - (c[None, :] - 2 * y) ** 2
    half = np.sqrt(np.maximum(half2, 0))
    inside = (half2 >= 0) & (r > 0)
    return np.where(inside, 2 * x - half, np.inf), np.where(inside, 2 * x + half, -np.inf)


def _slab(a: np.ndarray, b: np.ndarray, half: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The dx interval where |a*dx + b| <= half, with a constant per shape and b per row."""
    safe = np.where(np.abs(a) > 1e-6, a, 1.0)
    e1, e2 = (-half - b) / safe, (half - b) / safe
    lo, hi = np.minimum(e1, e2), np.maximum(e1, e2)
    flat = np.abs(a) <= 1e-6  # the slab is parallel to the rows: all or nothing
    all_in = np.abs(b) <= half
    lo = np.where(flat, np.where(all_in, -np.inf, np.inf), lo)
    hi = np.where(flat, np.where(all_in, np.inf, -np.inf), hi)
    return lo, hi


def _quad_rows(params: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per image row, the x interval inside each turned rectangle (the intersection of two slabs)."""
    c = _centres(size)
    x, y, w, h = (params[:, k, None].astype(np.float32) for k in range(4))
    angle = params[:, 4, None].astype(np.float32) * np.float32(math.pi / 4)
    cos, sin = np.cos(angle), np.sin(angle)
    dy = c[None, :] - 2 * y
    lo1, hi1 = _slab(cos, dy * sin, w + _EPS)  # |u| <= w, u = dx cos + dy sin
    lo2, hi2 = _slab(-sin, dy * cos, h + _EPS)  # |v| <= h, v = dy cos - dx sin
    ok = (w > 0) & (h > 0)
    lo = np.where(ok, np.maximum(lo1, lo2), np.inf) + 2 * x
    hi = np.where(ok, np.minimum(hi1, hi2), -np.inf) + 2 * x
    return lo, hi


def _masks(lo: np.ndarray, hi: np.ndarray, size: int) -> np.ndarray:
    c = _centres(size)
    return (c[None, None, :] >= lo[:, :, None]) & (c[None, None, :] <= hi[:, :, None])


def _mask_maker(lo: np.ndarray, hi: np.ndarray, size: int) -> Callable[[int], np.ndarray]:
    """Primitive k's (size, size) mask, from its per-row intervals.

    The search's many small renders get every mask from one numpy pass; when they would not fit
    ``MASK_BUDGET`` (2000 primitives at 4096 px would be 33 GB) each is made when the evaluation
    reaches it, so memory is O(size^2 x tree depth) and the pixels are the same.
    """
    if lo.shape[0] * size * size <= MASK_BUDGET:
        return _masks(lo, hi, size).__getitem__

    def one(k: int) -> np.ndarray:
        mask = np.zeros((size, size), bool)
        rows = np.flatnonzero(lo[k] <= hi[k])  # the rows the shape reaches; no pixel lies in the others
        if rows.size:
            mask[rows[0] : rows[-1] + 1] = _masks(lo[k : k + 1, rows[0] : rows[-1] + 1], hi[k : k + 1, rows[0] : rows[-1] + 1], size)[0]
        return mask

    return one


def render_batch(programs: Sequence[Tokens], size: int = DEFAULT_SIZE) -> np.ndarray:
    """Render programs to a (B, size, size) boolean array (True = inside the shape)."""
    size = check_size(size)
    circles: list[tuple[int, ...]] = []
    quads: list[tuple[int, ...]] = []
    for tokens in programs:
        for i, tok in enumerate(tokens):
            if tok == CIRCLE:
                circles.append(tuple(t - NUM0 for t in tokens[i + 1 : i + 4]))
            elif tok == QUAD:
                quads.append((*(t - NUM0 for t in tokens[i + 1 : i + 5]), tokens[i + 5] - ANG0))
    circle_mask = _mask_maker(*_circle_rows(np.array(circles, np.int16), size), size) if circles else None
    quad_mask = _mask_maker(*_quad_rows(np.array(quads, np.int16), size), size) if quads else None
    out = np.empty((len(programs), size, size), bool)
    ci = qi = 0
    for b, tokens in enumerate(programs):
        stack: list[np.ndarray] = []
        prims: list[tuple[Callable[[int], np.ndarray], int]] = []
        for tok in tokens:  # primitives in program order
            if tok == CIRCLE:
                prims.append((circle_mask, ci))
                ci += 1
            elif tok == QUAD:
                prims.append((quad_mask, qi))
                qi += 1
        p = len(prims)
        for tok in reversed(tokens):  # evaluate the prefix program from the right: at most depth + 1 masks wait
            if tok == CIRCLE or tok == QUAD:
                p -= 1
                make, k = prims[p]
                stack.append(make(k))
            elif tok == ADD:
                left = stack.pop()
                stack.append(left | stack.pop())
            elif tok == SUB:
                left = stack.pop()
                stack.append(left & ~stack.pop())
        out[b] = stack[-1]
    return out


def render(tokens: Tokens, size: int = DEFAULT_SIZE) -> np.ndarray:
    """Render one program to a (size, size) boolean mask."""
    return render_batch([tokens], size)[0]


def foreground_iou(masks: np.ndarray, target: np.ndarray) -> np.ndarray | float:
    """|A and B| / |A or B| per mask (1 when both are empty); masks (..., S, S), target (S, S)."""
    inter = np.count_nonzero(masks & target, axis=(-2, -1))
    union = np.count_nonzero(masks | target, axis=(-2, -1))
    iou = np.where(union == 0, 1.0, inter / np.maximum(union, 1))
    return float(iou) if np.ndim(iou) == 0 else iou


def mean_iou(masks: np.ndarray, target: np.ndarray) -> np.ndarray | float:
    """The paper's measure: the mean of foreground and background IoU."""
    fg = foreground_iou(masks, target)
    bg = foreground_iou(~masks, ~target)
    return (np.asarray(fg) + np.asarray(bg)) / 2 if np.ndim(fg) else (fg + bg) / 2
