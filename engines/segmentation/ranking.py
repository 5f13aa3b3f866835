"""Segment confidence from the prior's self-consistency: does it take the segment as one whole object?

AP ranks every prediction by its confidence. The objectness distance of the cylinder a segment
came from barely tells right segments from wrong ones (on the benchmark rooms its ROC AUC is
0.47: a merged pair of shelves or a table with a chair pushed under it scores as well as a lone
chair). Shown only the segment's own points, the prior keeps all of a whole object and drops part
of a pair, a piece with a neighbour's edge or a wall remnant. So the final confidence is that
share (its coverage), with the objectness confidence as a small second term that breaks ties.
Only the points and the prior are read.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .objectness import RewardParams, score_crops


@dataclass(frozen=True)
class RankParams:
    enabled: bool = True
    objectness_weight: float = 0.1  # share of the objectness confidence next to the coverage

    def __post_init__(self) -> None:
        if not 0 <= self.objectness_weight <= 10:
            raise ValueError("the objectness weight of the ranking must be 0 to 10")


def coverage(prior, points: np.ndarray, instance: np.ndarray, reward: RewardParams, rng: np.random.Generator) -> dict[int, float]:
    """For every segment id: the share of its points the prior keeps as the object when shown the segment alone."""
    ids = [int(i) for i in np.unique(instance) if i > 0]
    scores = score_crops(prior, [points[instance == i] for i in ids], reward, rng, full=True)
    return {i: len(s.mask) / max(len(s.scored), 1) for i, s in zip(ids, scores)}


def ranked_scores(prior, points: np.ndarray, instance: np.ndarray, score: np.ndarray, params: RankParams, reward: RewardParams,
                  rng: np.random.Generator) -> np.ndarray:
    """Per-point confidence in [0, 1]: (coverage + w x objectness confidence) / (1 + w), one value per segment."""
    if not params.enabled or not (instance > 0).any():
        return score
    out = score.copy()
    w = params.objectness_weight
    for i, share in coverage(prior, points, instance, reward, rng).items():
        m = instance == i
        out[m] = (share + w * float(score[m].mean())) / (1.0 + w)
    return out
