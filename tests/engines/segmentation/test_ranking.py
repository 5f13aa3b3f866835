"""Segment confidence from the prior: a whole object ranks above two objects in one segment and above half an object."""
from __future__ import annotations

import numpy as np
import pytest

from engines.core import EngineError

from engines.segmentation.objectness import RewardParams
from engines.segmentation.prior import load_prior
from engines.segmentation.ranking import RankParams, containment, coverage, ranked_scores
from engines.segmentation.scenes import generate_scene


@pytest.fixture(scope="module")
def room():
    scene = generate_scene(501)  # a sofa and a shelf that touch
    sofa = next(o.instance for o in scene.objects if o.category == "sofa")
    shelf = next(o.instance for o in scene.objects if o.category == "shelf")
    assert sorted((sofa, shelf)) in [sorted(p) for p in scene.touching]
    return scene, sofa, shelf


def test_the_prior_covers_a_whole_object_but_not_two_touching_ones(room) -> None:
    scene, sofa, shelf = room
    pts = scene.points.astype(np.float64)
    alone = coverage(load_prior(), pts, scene.instance, RewardParams(), np.random.default_rng(0))
    merged = scene.instance.copy()
    merged[merged == shelf] = sofa
    together = coverage(load_prior(), pts, merged, RewardParams(), np.random.default_rng(0))
    assert alone[sofa] > 0.95 and alone[shelf] > 0.95
    assert together[sofa] < 0.8
    assert shelf not in together


def test_ranked_scores_put_the_whole_object_first(room) -> None:
    scene, sofa, shelf = room
    pts = scene.points.astype(np.float64)
    inst = np.zeros(len(pts), np.int32)
    inst[scene.instance == sofa] = 1
    cabinet = next(o.instance for o in scene.objects if o.category == "cabinet")
    inst[np.isin(scene.instance, [shelf, cabinet])] = 2  # the shelf and a cabinet as one segment
    score = np.where(inst == 2, 0.9, np.where(inst == 1, 0.6, 0.0)).astype(np.float32)  # the objectness says the opposite
    objects, floor_z = scene.instance > 0, float(pts[:, 2].min())
    ranked = ranked_scores(load_prior(), pts, objects, floor_z, inst, score, RankParams(), RewardParams(), np.random.default_rng(0))
    assert ranked.dtype == score.dtype and ranked.shape == score.shape
    assert (ranked[inst == 0] == 0).all()
    for k in (1, 2):
        assert np.ptp(ranked[inst == k]) == 0  # one confidence per segment
        assert 0 <= ranked[inst == k][0] <= 1
    assert ranked[inst == 1][0] > ranked[inst == 2][0]
    unchanged = ranked_scores(load_prior(), pts, objects, floor_z, inst, score, RankParams(enabled=False), RewardParams(),
                              np.random.default_rng(0))
    assert unchanged is score


def test_half_an_object_is_not_contained_in_its_segment(room) -> None:
    scene, sofa, _ = room
    pts = scene.points.astype(np.float64)
    objects, floor_z = scene.instance > 0, float(pts[:, 2].min())
    whole = np.where(scene.instance == sofa, 1, 0).astype(np.int32)
    xy = pts[:, :2] - pts[whole == 1, :2].mean(0)
    along = np.linalg.svd(xy[whole == 1], full_matrices=False)[2][0]
    halves = np.where(whole == 1, np.where(xy @ along > 0, 1, 2), 0).astype(np.int32)

    def share(inst: np.ndarray) -> dict[int, float]:
        return containment(load_prior(), pts, objects, inst, floor_z, 2.2, 1.5, RankParams(), RewardParams(), np.random.default_rng(0))

    assert share(whole)[1] >= 0.95
    assert max(share(halves).values()) <= 0.9


def test_rank_params_refuse_impossible_values() -> None:
    with pytest.raises(EngineError, match="weight"):
        RankParams(objectness_weight=-1)
    with pytest.raises(EngineError, match="margin"):
        RankParams(context_margin=0)
