"""Segment confidence from the prior's self-consistency: is the segment one whole object?

AP ranks every prediction by its confidence. The objectness distance of the cylinder a segment
came from barely tells right segments from wrong ones (on the benchmark rooms its ROC AUC is
0.47: a merged pair of shelves or half a table scores as well as a lone chair). Two questions to
the prior tell them apart, and the confidence is the product of their answers:

* coverage: shown only the segment's points, how many does the prior keep as the object? It
  keeps all of a whole object and drops part of a pair, a piece with a neighbour's edge or a wall
  remnant (plus a tenth of the objectness confidence, which breaks ties);
* containment: shown a cylinder around the segment (its footprint plus a margin, the scene's
  object points), how much of what the prior takes as the object there lies in the segment? Half
  a table, a piece of a bed or one side of a cabinet leaves the rest outside the segment.

Only the points and the prior are read.
"""
from __future__ import annotations

from engines.core import EngineError

from dataclasses import dataclass

import numpy as np

from .objectness import RewardParams, score_crops


@dataclass(frozen=True)
class RankParams:
    enabled: bool = True
    objectness_weight: float = 0.1  # share of the objectness confidence next to the coverage
    context_margin: float = 0.2  # the containment cylinder reaches this far past the segment's footprint (m)

    def __post_init__(self) -> None:
        if not 0 <= self.objectness_weight <= 10:
            raise EngineError("the objectness weight of the ranking must be 0 to 10")
        if not 0 < self.context_margin <= 1:
            raise EngineError("the ranking's context margin must be in (0, 1] m")


def coverage(prior, points: np.ndarray, instance: np.ndarray, reward: RewardParams, rng: np.random.Generator) -> dict[int, float]:
    """For every segment id: the share of its points the prior keeps as the object when shown the segment alone."""
    ids = [int(i) for i in np.unique(instance) if i > 0]
    scores = score_crops(prior, [points[instance == i] for i in ids], reward, rng, full=True)
    return {i: len(s.mask) / max(len(s.scored), 1) for i, s in zip(ids, scores)}


def containment(prior, points: np.ndarray, objects: np.ndarray, instance: np.ndarray, floor_z: float, height: float,
                max_radius: float, params: RankParams, reward: RewardParams, rng: np.random.Generator) -> dict[int, float]:
    """For every segment id: the share of the prior's object mask, in a cylinder around the segment
    over the scene's object points (``objects``: not floor or wall), that lies in the segment."""
    from .agent import CylinderCrops, enclosing_cylinder

    ids = [int(i) for i in np.unique(instance) if i > 0]
    obj = np.flatnonzero(objects)
    if not ids or len(obj) == 0:
        return {i: 1.0 for i in ids}
    crops = CylinderCrops(points[obj], floor_z, height)
    cylinders, crop_idx = [], []
    for i in ids:
        cylinders.append(enclosing_cylinder(points[instance == i, :2], params.context_margin, 0.0, max_radius + params.context_margin))
        crop_idx.append(obj[crops.indices(*cylinders[-1])])
    live = [k for k, idx in enumerate(crop_idx) if len(idx) > 0]
    scores = score_crops(prior, [points[crop_idx[k]] for k in live], reward, rng, full=True, axes=[cylinders[k][:2] for k in live])
    out = {i: 1.0 for i in ids}
    for k, s in zip(live, scores):
        mask = crop_idx[k][s.mask]
        out[ids[k]] = float((instance[mask] == ids[k]).mean()) if len(mask) else 0.0
    return out


def ranked_scores(prior, points: np.ndarray, objects: np.ndarray, floor_z: float, instance: np.ndarray, score: np.ndarray,
                  params: RankParams, reward: RewardParams, rng: np.random.Generator, height: float = 2.2,
                  max_radius: float = 1.5) -> np.ndarray:
    """Per-point confidence in [0, 1], one value per segment:
    (coverage + w x objectness confidence) / (1 + w) x containment."""
    if not params.enabled or not (instance > 0).any():
        return score
    out = score.copy()
    w = params.objectness_weight
    inside = containment(prior, points, objects, instance, floor_z, height, max_radius, params, reward, rng)
    for i, share in coverage(prior, points, instance, reward, rng).items():
        m = instance == i
        out[m] = (share + w * float(score[m].mean())) / (1.0 + w) * inside[i]
    return out
