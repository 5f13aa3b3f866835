"""Join segments that are parts of one object, asked of the prior.

The agent's cylinders sometimes stop on a piece of a large object (half a bed, one bay of a
shelf), and the second search then finds the rest as objects of their own: pieces that touch.
For every touching pair the prior scores each piece and their union, each as a crop of its own
points. The union replaces the pieces when the prior takes it as one object: its mask keeps
nearly all of the union's points, it is found, and its objectness distance is no worse than the
worse piece's; and at least one piece is not an object on its own (the prior does not find it
alone). Two touching objects fail that test (the union's mask drops one of them, the prior fits
the pair worse than either alone, or it finds each of them): two shelves side by side look to
it like one wider shelf, so that last rule is what keeps them apart. The rule holds for whole
groups too: the unions the prior fits best are joined first, and no join makes one segment of
two pieces the prior finds alone (a strip across the seam of two shelves would otherwise chain
them). Nor is a piece joined to one that lies straight above or below most of it: the agent's
cylinders are vertical, so the pieces it finds of one object stand side by side, while a chair
pushed under a table is a piece beneath the table's top (the prior takes the pair for one
table). Only the points and the prior are read.
"""
from __future__ import annotations

from engines.core import EngineError

from dataclasses import dataclass

import numpy as np

from .objectness import RewardParams, score_crops


@dataclass(frozen=True)
class MergeParams:
    enabled: bool = True
    link: float = 0.1  # two segments touch where their points come this close (m)
    contacts: int = 5  # ... at this many points of one of them
    coverage: float = 0.85  # the union's mask must keep this share of the union's points
    join_found: bool = False  # also join (directly or through other pieces) two pieces the prior finds alone
    stacked: float = 0.7  # no join when this share of one piece's points lies above or below the other's (1 = off)
    column: float = 0.06  # ... within this horizontal distance (m)
    rise: float = 0.08  # ... and at least this much higher or lower (m)

    def __post_init__(self) -> None:
        if self.link <= 0 or self.contacts < 1 or not 0 < self.coverage <= 1:
            raise EngineError("merge link must be positive, contacts at least 1 and coverage in (0, 1]")
        if not 0 < self.stacked <= 1 or self.column <= 0 or self.rise <= 0:
            raise EngineError("merge stacked share must be in (0, 1], column and rise positive")


def touching_pairs(points: np.ndarray, instance: np.ndarray, params: MergeParams) -> list[tuple[int, int]]:
    """Pairs (a < b) of segment ids whose points touch."""
    from scipy.spatial import cKDTree

    labelled = np.flatnonzero(instance > 0)
    if len(labelled) == 0:
        return []
    labels = instance[labelled]
    tree = cKDTree(points[labelled])
    pairs = set()
    for k in np.unique(labels):
        near = tree.query_ball_point(points[labelled[labels == k]], params.link)
        hits = np.concatenate([labels[np.asarray(n, dtype=np.int64)] for n in near])
        counts = np.bincount(hits, minlength=int(labels.max()) + 1)
        pairs.update((int(k), int(j)) for j in np.flatnonzero(counts >= params.contacts) if j > k)
    return sorted(pairs)


def stacked_share(a: np.ndarray, b: np.ndarray, column: float, rise: float, neighbours: int = 32) -> float:
    """The larger share, over the two pieces, of a piece's points that have a point of the other
    within ``column`` horizontally and ``rise`` or more above or below: 1 for a seat under a table
    top (whether or not a pedestal's foot lies under it too), near 0 for two pieces side by side."""
    from scipy.spatial import cKDTree

    share = 0.0
    for p, q in ((a, b), (b, a)):
        k = min(neighbours, len(q))
        dist, idx = cKDTree(q[:, :2]).query(p[:, :2], k=k, distance_upper_bound=column)
        dist, idx = dist.reshape(len(p), k), idx.reshape(len(p), k)
        near = np.isfinite(dist)
        dz = np.abs(q[np.where(near, idx, 0), 2] - p[:, 2:3])
        share = max(share, float(np.mean((near & (dz >= rise)).any(axis=1))))
    return share


def merge_parts(prior, points: np.ndarray, instance: np.ndarray, score: np.ndarray, params: MergeParams, reward: RewardParams,
                rng: np.random.Generator, confidence) -> tuple[np.ndarray, np.ndarray]:
    """New (instance, score) with the pieces the prior takes as one object joined under the
    smallest of their ids, ids then renumbered 1..K in order. ``confidence`` maps an objectness
    distance to a segment score."""
    if not params.enabled:
        return instance, score
    pairs = touching_pairs(points, instance, params)
    if not pairs:
        return instance, score
    ids = sorted({i for p in pairs for i in p})
    crops = [points[instance == k] for k in ids] + [points[(instance == a) | (instance == b)] for a, b in pairs]
    scores = score_crops(prior, crops, reward, rng, full=True)
    alone = {k: s.distance for k, s in zip(ids, scores)}
    parent = {k: k for k in ids}

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    found_in = {k: int(s.found(reward)) for k, s in zip(ids, scores)}  # per group root: how many pieces the prior finds alone
    joins = [(s.distance, a, b) for (a, b), s in zip(pairs, scores[len(ids):])
             if len(s.mask) >= params.coverage * len(s.scored) and s.found(reward) and s.distance <= max(alone[a], alone[b])
             and (params.stacked >= 1 or stacked_share(points[instance == a], points[instance == b], params.column, params.rise) < params.stacked)]
    for _, a, b in sorted(joins):  # the unions the prior fits best first
        ra, rb = root(a), root(b)
        if ra == rb or (not params.join_found and found_in[ra] + found_in[rb] > 1):
            continue
        parent[rb] = ra
        found_in[ra] += found_in[rb]
    groups: dict[int, list[int]] = {}
    for k in ids:
        groups.setdefault(root(k), []).append(k)
    joined = [g for g in groups.values() if len(g) > 1]
    if not joined:
        return instance, score
    instance, score = instance.copy(), score.copy()
    rescored = score_crops(prior, [points[np.isin(instance, g)] for g in joined], reward, rng, full=True)
    for g, s in zip(joined, rescored):
        m = np.isin(instance, g)
        instance[m] = g[0]
        score[m] = confidence(s.distance) if s.found(reward) else float(score[m].max())
    lookup = np.zeros(int(instance.max()) + 1, np.int32)
    kept = np.unique(instance[instance > 0])
    lookup[kept] = np.arange(1, len(kept) + 1)
    return lookup[instance], score
