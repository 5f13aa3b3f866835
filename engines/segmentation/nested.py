"""Objects nested in a segment: the parts beneath its main horizontal surface, as extra proposals.

The agent's cylinders are vertical, so a chair pushed under a table sits in every cylinder that
holds the table: the prior explains the two as one table and the table's mask takes the chair
whole (on the benchmark rooms, most of the objects no segment reaches at IoU 0.25 are such
chairs, and vases standing on their table). Per-point labels cannot hold both, but ScanNet's
evaluation takes overlapping masks. So every confirmed segment is looked at without its main
horizontal surface (the densest 2 cm height bin, give or take ``band``): what stays connected
below it, with enough points and not most of the segment, is proposed as an object of its own
inside that segment, ranked after every segment of any room (the NESTED band of `unclaimed.py`).
The segment keeps all its points. A wrong proposal (a bed's base, a table's legs) then costs AP
nothing, a right one adds recall. Only the points and the prior are read.
"""

from __future__ import annotations

from engines.core import EngineError

from dataclasses import dataclass

import numpy as np

from .neighbours import connected_parts
from .unclaimed import NESTED, in_band

BIN = 0.02  # height bins (m) in which the main horizontal surface is the densest one


@dataclass(frozen=True)
class NestedParams:
    enabled: bool = True
    band: float = 0.05  # points this close in height (m) to the main surface belong to it (a top with its noise)
    link: float = 0.1  # points of one nested part come this close (m)
    max_share: float = 0.8  # a part holding more of the segment is the segment itself

    def __post_init__(self) -> None:
        if not 0 < self.band <= 0.2:
            raise EngineError("the nested parts' surface band must be in (0, 0.2] m")
        if not 0 < self.link <= 1:
            raise EngineError("the nested parts' link must be in (0, 1] m")
        if not 0 < self.max_share < 1:
            raise EngineError("the nested parts' largest share of a segment must be in (0, 1)")


def _beneath_surface(points: np.ndarray, params: NestedParams, min_points: int) -> list[np.ndarray]:
    """Indices (into ``points``, one segment) of each connected part below its main horizontal surface."""
    z = points[:, 2]
    bins = np.floor((z - z.min()) / BIN).astype(np.int64)
    top = z.min() + (np.bincount(bins).argmax() + 0.5) * BIN
    rest = np.flatnonzero(np.abs(z - top) > params.band)
    if len(rest) < min_points:
        return []
    labels = connected_parts(points[rest], params.link)
    parts = []
    for label in np.unique(labels):
        idx = rest[labels == label]
        if min_points <= len(idx) <= params.max_share * len(points) and points[idx, 2].mean() < top:
            parts.append(idx)
    return parts


def nested_parts(points: np.ndarray, instance: np.ndarray, segments: tuple[int, ...], params: NestedParams, min_points: int) -> np.ndarray:
    """Per point, the id of the nested part it lies in (0 = none). Ids follow the largest in
    ``instance``, so that a segment and a part never share one; a part's points keep their segment."""
    part = np.zeros(len(points), np.int32)
    if not params.enabled:
        return part
    next_id = int(instance.max(initial=0)) + 1
    for sid in segments:
        seg = np.flatnonzero(instance == sid)
        for idx in _beneath_surface(points[seg], params, min_points):
            part[seg[idx]] = next_id
            next_id += 1
    return part


def ranked_below(part: np.ndarray) -> np.ndarray:
    """Per-point confidence of the nested parts: in the NESTED band, below every segment of any room, larger parts first."""
    out = np.zeros(len(part), np.float32)
    ids, sizes = np.unique(part[part > 0], return_counts=True)
    for i, size in zip(ids, sizes):
        out[part == i] = in_band(size / sizes.max(), NESTED)
    return out
