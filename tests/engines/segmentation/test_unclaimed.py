"""Unclaimed object points as unconfirmed segments, ranked after every confirmed one."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engines.core import EngineError

from engines.segmentation.agent import AgentParams
from engines.segmentation.example import example_cloud
from engines.segmentation.metrics import ScenePrediction, evaluate
from engines.segmentation.nested import ranked_below
from engines.segmentation.api import SegmentParams, segment
from engines.segmentation.unclaimed import CONFIRMED, UNCONFIRMED, UnclaimedParams, in_band, ranked_after, unclaimed_parts


def _blob(centre: tuple[float, float, float], n: int, seed: int) -> np.ndarray:
    return np.asarray(centre) + np.random.default_rng(seed).normal(0, 0.05, (n, 3))


def _scene() -> tuple[np.ndarray, np.ndarray]:
    """A labelled segment, a free blob touching it, and two free blobs far from everything."""
    points = np.concatenate([_blob((0, 0, 0.5), 150, 0), _blob((0.25, 0, 0.5), 120, 1), _blob((3, 0, 0.5), 130, 2), _blob((0, 3, 0.5), 110, 3)])
    instance = np.zeros(len(points), np.int32)
    instance[:150] = 1
    return points, instance


def test_isolated_free_parts_become_new_segments_and_labelled_points_keep_theirs() -> None:
    points, instance = _scene()
    out, added = unclaimed_parts(points, instance, UnclaimedParams(link=0.2))
    assert (out[:150] == 1).all() and not added[:150].any()
    assert (out[150:270] == 0).all()  # touches segment 1: a piece of it, not an object of its own
    assert len(np.unique(out[270:400])) == 1 and len(np.unique(out[400:])) == 1
    assert set(np.unique(out[270:])) == {2, 3} and added[270:].all() and added.sum() == 240


def test_touching_parts_too_when_asked_and_nothing_when_off() -> None:
    points, instance = _scene()
    out, added = unclaimed_parts(points, instance, UnclaimedParams(link=0.2, isolated=False))
    assert set(np.unique(out)) == {1, 2, 3, 4} and added.sum() == 120 + 130 + 110
    same, none = unclaimed_parts(points, instance, UnclaimedParams(enabled=False))
    assert (same == instance).all() and not none.any()
    with pytest.raises(EngineError, match="link"):
        UnclaimedParams(link=0.0)


def test_unconfirmed_segments_rank_after_every_confirmed_one_in_their_own_order() -> None:
    instance = np.repeat([0, 1, 2, 3, 4], 10)
    score = np.repeat([0.0, 0.9, 0.4, 0.8, 0.0], 10).astype(np.float32)
    out = ranked_after(instance, score, (3, 4))
    assert out[instance == 1][0] == pytest.approx(in_band(0.9, CONFIRMED)) and out[instance == 2][0] == pytest.approx(in_band(0.4, CONFIRMED))
    assert out[instance == 3][0] == pytest.approx(in_band(0.8, UNCONFIRMED))
    assert out[instance == 4][0] == pytest.approx(UNCONFIRMED[0]) and UNCONFIRMED[0] > 0  # never zero
    assert out[instance == 1][0] > out[instance == 2][0] > out[instance == 3][0] > out[instance == 4][0]
    assert (out[instance == 0] == 0).all()
    lowest = ranked_after(instance, np.where(instance == 3, 1.0, np.where(instance == 2, 0.0, score)).astype(np.float32), (3, 4))
    assert lowest[instance == 3].max() < lowest[instance == 2].min()  # never above a confirmed segment, even one scored 0


def test_one_score_band_for_every_room() -> None:
    """AP pools the rooms: an unconfirmed segment or nested part of a room whose confirmed segments
    all score high must still rank below a low-scored confirmed segment of another room. With a
    floor set per room (half room A's lowest confirmed score) room A's wrong proposals would
    outrank room B's right segments and cost AP; in one band they cost nothing."""
    gt_a = np.repeat([1, 2, 3], [200, 200, 500])
    inst_a = np.repeat([1, 2, 0, 3], [200, 200, 390, 110])  # 3: unconfirmed, a fifth of object 3 (IoU 0.22: wrong at 0.25 and up)
    score_a = ranked_after(inst_a, np.repeat([0.9, 0.95, 0.0, 1.0], [200, 200, 390, 110]).astype(np.float32), (3,))
    part_a = np.repeat([0, 4, 0], [250, 150, 500]).astype(np.int32)  # a nested part of segment 2, half of it: wrong too
    gt_b = np.repeat([1, 2], 200)
    score_b = ranked_after(gt_b, np.repeat([0.2, 0.0], 200).astype(np.float32), ())
    nested_a = ranked_below(part_a)
    assert max(score_a[inst_a == 3].max(), nested_a.max()) < score_b.min(), "room A's proposals rank below room B's confirmed segments"
    room_b = ScenePrediction.from_labels(gt_b, gt_b, score_b)
    with_proposals = evaluate([ScenePrediction.from_labels(gt_a, inst_a, score_a, part_a, nested_a), room_b])
    confirmed_only = evaluate([ScenePrediction.from_labels(gt_a, np.where(inst_a == 3, 0, inst_a), score_a), room_b])
    assert with_proposals.n_pred == confirmed_only.n_pred + 2
    assert with_proposals.ap50 == pytest.approx(confirmed_only.ap50) and with_proposals.ap25 == pytest.approx(confirmed_only.ap25)
    assert with_proposals.ap25 == pytest.approx(0.8)  # 4 of 5 objects, every false positive ranked after them


def test_predictions_ranked_last_never_lower_ap() -> None:
    """Why unconfirmed segments cost nothing: a wrong prediction ranked after all others leaves
    ScanNet's AP as it was, a right one raises it."""
    gt = np.repeat([0, 1, 2, 3], 200)
    masks = [gt == 1, gt == 2]
    base = evaluate([ScenePrediction(gt, tuple(masks), (0.9, 0.8))])
    wrong = evaluate([ScenePrediction(gt, (*masks, gt == 0), (0.9, 0.8, 0.01))])
    right = evaluate([ScenePrediction(gt, (*masks, gt == 3), (0.9, 0.8, 0.01))])
    assert wrong.ap50 == pytest.approx(base.ap50) and wrong.ap25 == pytest.approx(base.ap25)
    assert right.ap50 > base.ap50 + 0.2


def test_the_pipeline_marks_and_ranks_the_unclaimed_parts() -> None:
    """A search too short to find every object of the example room leaves parts the last step
    takes as unconfirmed segments; switched off, the confirmed segments are the same."""
    cloud = example_cloud()
    short = SegmentParams(agent=AgentParams(anchors=2, max_steps=3))
    res = segment(cloud, short)
    unconfirmed = [s for s in res.segments if not s.confirmed and not s.parent]
    confirmed = [s for s in res.segments if s.confirmed]
    assert unconfirmed and confirmed
    assert max(s.score for s in unconfirmed) < min(s.score for s in confirmed)
    assert all(s["confirmed"] == (s["id"] not in {u.id for u in unconfirmed}) for s in res.summary()["segments"] if "inside" not in s)
    off = segment(cloud, replace(short, unclaimed=UnclaimedParams(enabled=False)))
    assert all(s.confirmed for s in off.segments if not s.parent)
    masks = {tuple(np.flatnonzero(res.instance == s.id)) for s in confirmed}
    assert masks == {tuple(np.flatnonzero(off.instance == s.id)) for s in off.segments if not s.parent}
