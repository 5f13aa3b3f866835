"""Object points no search claimed, kept as unconfirmed segments ranked after every confirmed one.

The agent misses some small, sparse objects outright (a lamp's pole and shade, a stool whose
feet went with the floor plane): no cylinder around them holds a mask the prior finds, and
nothing else ever claims their points. Those points are still there once both searches are done,
in connected parts of their own. Each part becomes a segment marked unconfirmed, with a
confidence below every segment the prior confirmed, so AP sees them only after all of those:
a wrong one costs nothing there, a right one adds recall. The panel and the JSON say which
segments are unconfirmed. Only the points are read.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .neighbours import connected_parts

# Unconfirmed segments rank below every confirmed one: their ranking score (at least MIN_SHARE,
# so that they keep a score above zero) times half the lowest confirmed score.
RANK_SHARE = 0.5
MIN_SHARE = 0.01


@dataclass(frozen=True)
class UnclaimedParams:
    enabled: bool = True
    link: float = 0.2  # points of one part come this close (m)
    isolated: bool = True  # only parts touching no segment (within ``link``): a part beside one is a piece of it

    def __post_init__(self) -> None:
        if not 0 < self.link <= 1:
            raise ValueError("the link of the unclaimed parts must be in (0, 1] m")


def unclaimed_parts(points: np.ndarray, instance: np.ndarray, params: UnclaimedParams) -> tuple[np.ndarray, np.ndarray]:
    """``instance`` with each connected part of the unlabelled points as a new segment, and the
    mask of the points those new segments hold (their ids follow the existing ones)."""
    free = np.flatnonzero(instance == 0)
    added = np.zeros(len(points), bool)
    if not params.enabled or len(free) == 0:
        return instance, added
    labels = connected_parts(points[free], params.link)
    if params.isolated and (instance > 0).any():
        from scipy.spatial import cKDTree

        near, _ = cKDTree(points[instance > 0]).query(points[free], k=1, distance_upper_bound=params.link)
        touching = np.unique(labels[np.isfinite(near)])
        labels = np.where(np.isin(labels, touching), -1, labels)
    keep = labels >= 0
    _, dense = np.unique(labels[keep], return_inverse=True)
    out = instance.copy()
    out[free[keep]] = int(instance.max(initial=0)) + 1 + dense.astype(np.int32)
    added[free[keep]] = True
    return out, added


def ranked_after(instance: np.ndarray, score: np.ndarray, unconfirmed: tuple[int, ...]) -> np.ndarray:
    """Scores with the segments ``unconfirmed`` (ids) moved below every other segment, in their own order."""
    if not unconfirmed:
        return score
    low = np.isin(instance, list(unconfirmed))
    confirmed = (instance > 0) & ~low
    floor = RANK_SHARE * (float(score[confirmed].min()) if confirmed.any() else 1.0)
    out = score.copy()
    out[low] = np.maximum(score[low], MIN_SHARE) * floor
    return out
