"""From candidate masks to final segments: GrabS's deduplication and one label per point."""
from __future__ import annotations

from engines.core import EngineError

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DedupParams:
    iou: float = 0.5  # two masks overlapping this much are one object: keep the better one
    inside: float = 0.8  # a mask this much inside a better one is a part of it: drop it
    min_points: int = 80  # masks and segments while searching (points not on a floor or wall)
    final_points: int = 100  # finished segments, floor and wall points given back included (GrabS, ScanNet)

    def __post_init__(self) -> None:
        if not 0 < self.iou <= 1 or not 0 < self.inside <= 1:
            raise EngineError("the duplicate IoU and the inside share must be in (0, 1]")
        if self.min_points < 1 or self.final_points < 1:
            raise EngineError("the minimum segment size must be at least 1 point")


def deduplicate(masks: list[np.ndarray], scores: list[float], params: DedupParams = DedupParams()) -> list[int]:
    """Indices of the masks to keep, best score first (masks are arrays of point indices)."""
    order = sorted(range(len(masks)), key=lambda i: -scores[i])
    kept: list[int] = []
    sets: list[set[int]] = []
    for i in order:
        m = masks[i]
        if len(m) < params.min_points:
            continue
        s = set(m.tolist())
        drop = False
        for other in sets:
            inter = len(s & other)
            if inter / len(s | other) >= params.iou or inter / len(s) >= params.inside:
                drop = True
                break
        if not drop:
            kept.append(i)
            sets.append(s)
    return kept


def labels_from_masks(n: int, masks: list[np.ndarray], scores: list[float], kept: list[int], min_points: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Per-point instance (1..K by score, 0 = none) and score; a point shared by masks goes to the better.

    Returns the labels, the scores and which input mask each label came from (masks that lost
    too many points to better ones are dropped).
    """
    instance = np.zeros(n, np.int32)
    score = np.zeros(n, np.float32)
    owner = np.full(n, -1, np.int64)
    for i in kept:  # best first: later masks only take free points
        free = masks[i][owner[masks[i]] < 0]
        owner[free] = i
    sources: list[int] = []
    for i in kept:
        pts = np.flatnonzero(owner == i)
        if len(pts) < min_points:
            continue
        sources.append(i)
        instance[pts] = len(sources)
        score[pts] = scores[i]
    return instance, score, sources


def drop_small_segments(instance: np.ndarray, score: np.ndarray, min_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Segments with fewer than ``min_points`` points removed, the rest renumbered 1..K in order."""
    ids, counts = np.unique(instance[instance > 0], return_counts=True)
    if (counts >= min_points).all():
        return instance, score
    lookup = np.zeros(int(instance.max()) + 1, np.int32)
    big = ids[counts >= min_points]
    lookup[big] = np.arange(1, len(big) + 1)
    out = lookup[instance]
    return out, np.where(out > 0, score, 0.0).astype(score.dtype)


def grow_segments(points: np.ndarray, instance: np.ndarray, score: np.ndarray, residual: np.ndarray, threshold: float,
                  link: float, max_hops: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Hysteresis on the finished segments: the unlabelled points the prior decodes near a surface
    (``residual`` <= ``threshold``) join the segment they connect to through such points, one
    ``link`` at a time, each taking the label (and score) of its nearest labelled point.

    Done after both searches, not per mask: grown inside each crop, a table's mask swallowed the
    chair pushed under it, and the second search, which only sees unclaimed points, never found it."""
    from scipy.spatial import cKDTree

    instance, score = instance.copy(), score.copy()
    loose = np.flatnonzero((instance == 0) & (np.nan_to_num(residual, nan=np.inf) <= threshold))
    for _ in range(max_hops):
        held = np.flatnonzero(instance > 0)
        if len(loose) == 0 or len(held) == 0:
            break
        d, nearest = cKDTree(points[held]).query(points[loose], k=1, distance_upper_bound=link, workers=1)
        hit = np.isfinite(d)
        if not hit.any():
            break
        instance[loose[hit]] = instance[held[nearest[hit]]]
        score[loose[hit]] = score[held[nearest[hit]]]
        loose = loose[~hit]
    return instance, score
