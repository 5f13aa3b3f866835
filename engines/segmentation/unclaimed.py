"""Object points no search claimed, kept as unconfirmed segments ranked after every confirmed one.

The agent misses some small, sparse objects outright (a lamp's pole and shade, a stool whose
feet went with the floor plane): no cylinder around them holds a mask the prior finds, and
nothing else ever claims their points. Those points are still there once both searches are done,
in connected parts of their own. Each part becomes a segment marked unconfirmed, with a
confidence below every segment the prior confirmed, in any room (one score band for the whole
benchmark), so AP sees them only after all of those: a wrong one costs nothing there, a right one
adds recall. The panel and the JSON say which
segments are unconfirmed. Only the points are read.
"""

from __future__ import annotations

from engines.core import EngineError

from dataclasses import dataclass

import numpy as np

from .neighbours import connected_parts

# One score band for every room: AP pools the rooms of a benchmark, so a floor set per room would
# let a wrong proposal of one room outrank a confirmed segment of another. Confirmed segments score
# in CONFIRMED, unconfirmed ones in UNCONFIRMED and nested proposals (`nested.py`) in NESTED,
# each band wholly below the one before it, whatever the room.
CONFIRMED = (0.5, 1.0)
UNCONFIRMED = (0.26, 0.49)
NESTED = (0.01, 0.24)


def in_band(score: np.ndarray | float, band: tuple[float, float]) -> np.ndarray:
    """A score in [0, 1] placed in ``band``, keeping its order."""
    return band[0] + (band[1] - band[0]) * np.clip(score, 0.0, 1.0)


@dataclass(frozen=True)
class UnclaimedParams:
    enabled: bool = True
    link: float = 0.2  # points of one part come this close (m)
    isolated: bool = True  # only parts touching no segment (within ``link``): a part beside one is a piece of it

    def __post_init__(self) -> None:
        if not 0 < self.link <= 1:
            raise EngineError("the link of the unclaimed parts must be in (0, 1] m")


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
    """Scores with the confirmed segments in the CONFIRMED band and the segments ``unconfirmed`` (ids)
    in the UNCONFIRMED band below it, each in their own order."""
    low = np.isin(instance, list(unconfirmed))
    confirmed = (instance > 0) & ~low
    out = score.astype(np.float32, copy=True)
    out[confirmed] = in_band(score[confirmed], CONFIRMED)
    out[low] = in_band(score[low], UNCONFIRMED)
    return out
