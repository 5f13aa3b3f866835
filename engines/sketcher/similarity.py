"""How alike a candidate render and the target are: IoU for filled targets, and for sketches a
tolerant outline match (F1 of outline pixels within a few pixels of the strokes and back).

Hand drawings are outlines, so a filled render can never overlap them; its outline can.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from .render import foreground_iou

SKETCH_TOLERANCE_PX = 2
_STROKE_SHARE = 0.35  # below this share of ink surviving one erosion, a drawing is strokes


def _shift_or(masks: np.ndarray, radius: int, axis: int) -> np.ndarray:
    out = masks.copy()
    n = masks.shape[axis]
    for d in range(1, radius + 1):
        lo = [slice(None)] * masks.ndim
        hi = [slice(None)] * masks.ndim
        lo[axis], hi[axis] = slice(0, n - d), slice(d, n)
        out[tuple(lo)] |= masks[tuple(hi)]
        out[tuple(hi)] |= masks[tuple(lo)]
    return out


def dilate(masks: np.ndarray, radius: int) -> np.ndarray:
    """Square dilation of (..., S, S) masks."""
    return _shift_or(_shift_or(masks, radius, -1), radius, -2)


def _four_neighbours(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each pixel's upper, lower, left and right neighbour; beyond the canvas edge is False."""
    padded = np.pad(masks, [(0, 0)] * (masks.ndim - 2) + [(1, 1), (1, 1)])
    return padded[..., :-2, 1:-1], padded[..., 2:, 1:-1], padded[..., 1:-1, :-2], padded[..., 1:-1, 2:]


def erode(masks: np.ndarray) -> np.ndarray:
    """4-neighbour erosion; the canvas edge counts as outside."""
    up, down, left, right = _four_neighbours(masks)
    return masks & up & down & left & right


def outline(masks: np.ndarray) -> np.ndarray:
    return masks & ~erode(masks)


def looks_like_strokes(target: np.ndarray) -> bool:
    """True for a line drawing (outlines), False for filled shapes."""
    ink = int(target.sum())
    if ink == 0:
        return False
    return int(erode(target).sum()) < _STROKE_SHARE * ink


def sketch_match(masks: np.ndarray, strokes: np.ndarray, tolerance: int = SKETCH_TOLERANCE_PX) -> np.ndarray:
    """F1 of outline pixels near strokes (precision) and stroke pixels near outlines (recall)."""
    edges = outline(masks)
    near_strokes = dilate(strokes, tolerance)
    near_edges = dilate(edges, tolerance)
    n_edges = edges.sum(axis=(-2, -1))
    precision = (edges & near_strokes).sum(axis=(-2, -1)) / np.maximum(n_edges, 1)
    recall = (strokes & near_edges).sum(axis=(-2, -1)) / max(int(strokes.sum()), 1)
    f1 = 2 * precision * recall / np.maximum(precision + recall, 1e-9)
    return np.where(n_edges == 0, 0.0, f1)


def similarity(masks: np.ndarray, target: np.ndarray, sketch: bool) -> np.ndarray:
    """The search's score in [0, 1] for each of (N, S, S) masks."""
    return sketch_match(masks, target) if sketch else np.asarray(foreground_iou(masks, target))


def boundary(masks: np.ndarray) -> np.ndarray:
    """The pixels on both sides of each mask's edge: its outline and the ring just outside it.

    A drawn line runs along the true edge, which lies between a mask's outermost pixels and the
    ones beyond; the outline alone sits half a pixel inside it and so favours larger shapes.
    """
    up, down, left, right = _four_neighbours(masks)
    return outline(masks) | (~masks & (up | down | left | right))


def outline_distance(masks: np.ndarray, strokes: np.ndarray) -> np.ndarray:
    """Mean distance (px) from each render's edge (``boundary``) to the strokes and back."""
    to_strokes = ndimage.distance_transform_edt(~strokes)
    out = np.empty(len(masks))
    for i, edges in enumerate(boundary(masks)):
        if not edges.any():
            out[i] = np.inf
            continue
        to_edges = ndimage.distance_transform_edt(~edges)
        out[i] = 0.5 * (to_strokes[edges].mean() + to_edges[strokes].mean())
    return out
