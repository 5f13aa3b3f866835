"""Objects nested in a segment (a chair pushed under its table) as extra proposals ranked last."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engines.core import EngineError

from engines.segmentation.export import export_scannet, labelled_cloud
from engines.segmentation.metrics import ScenePrediction, evaluate
from engines.segmentation.nested import NestedParams, nested_parts, ranked_below
from engines.segmentation.unclaimed import CONFIRMED, NESTED, UNCONFIRMED
from engines.segmentation.api import SegmentationResult, _segments
from engines.segmentation.pointio import PointCloud, read_cloud, write_cloud


def _box(lo: tuple[float, float, float], hi: tuple[float, float, float], n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(lo, hi, (n, 3))


def _table_with_chair(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A table (top at 0.75 m, four thin legs) and a chair (seat at 0.45 m, legs, back) pushed under
    it, as one segment; returns the points and which of them are the chair's."""
    rng = np.random.default_rng(seed)
    top = _box((0, 0, 0.74), (1.2, 0.8, 0.76), 600, rng)
    legs = [_box((x, y, 0), (x + 0.04, y + 0.04, 0.74), 40, rng) for x in (0.02, 1.14) for y in (0.02, 0.74)]
    seat = _box((0.4, 0.5, 0.44), (0.8, 0.9, 0.46), 120, rng)
    chair_legs = [_box((x, y, 0), (x + 0.03, y + 0.03, 0.44), 15, rng) for x in (0.4, 0.77) for y in (0.5, 0.87)]
    back = _box((0.4, 0.88, 0.46), (0.8, 0.9, 0.7), 60, rng)
    chair = np.concatenate([seat, *chair_legs, back])
    return np.concatenate([top, *legs, chair]), np.r_[np.zeros(760, bool), np.ones(len(chair), bool)]


def test_a_chair_beneath_a_table_top_is_proposed_and_the_legs_are_not() -> None:
    points, chair = _table_with_chair()
    instance = np.ones(len(points), np.int32)
    part = nested_parts(points, instance, (1,), NestedParams(), min_points=100)
    assert set(np.unique(part)) == {0, 2}  # one part, its id after the segment's
    found = part == 2
    assert (found & chair).sum() / (found | chair).sum() > 0.9
    assert (instance == 1).all()  # the segment keeps every point


def test_nothing_is_proposed_when_switched_off_too_small_or_not_below_the_surface() -> None:
    points, chair = _table_with_chair()
    instance = np.ones(len(points), np.int32)
    assert not nested_parts(points, instance, (1,), NestedParams(enabled=False), 100).any()
    assert not nested_parts(points, instance, (1,), NestedParams(), min_points=int(chair.sum()) + 1).any()
    assert not nested_parts(points, instance, (), NestedParams(), 100).any()  # only the segments asked for
    flipped = points * np.array([1, 1, -1])  # the chair now stands above the main surface
    assert not nested_parts(flipped, instance, (1,), NestedParams(), 100).any()
    lone = points[~chair]  # a table alone: its legs are below the top but too small
    assert not nested_parts(lone, np.ones(len(lone), np.int32), (1,), NestedParams(), 100).any()
    with pytest.raises(EngineError, match="band"):
        NestedParams(band=0.0)
    with pytest.raises(EngineError, match="share"):
        NestedParams(max_share=1.0)


def test_nested_parts_rank_below_every_segment_larger_first() -> None:
    part = np.zeros(300, np.int32)
    part[100:160], part[200:220] = 3, 4
    out = ranked_below(part)
    assert out[part == 0].max() == 0.0
    assert out[part == 3][0] == pytest.approx(NESTED[1]) and out[part == 4][0] == pytest.approx(NESTED[0] + (NESTED[1] - NESTED[0]) * 20 / 60)
    assert out.max() < UNCONFIRMED[0] and UNCONFIRMED[1] < CONFIRMED[0]  # below every segment, whatever its room
    assert not ranked_below(np.zeros(300, np.int32)).any()


def test_an_overlapping_proposal_ranked_last_adds_recall_and_a_wrong_one_costs_nothing() -> None:
    """The metric takes the nested masks beside the segments: the table's segment holds the chair,
    so without the proposal the chair is missed at IoU 0.25."""
    points, chair = _table_with_chair()
    gt = np.where(chair, 2, 1)
    instance = np.ones(len(points), np.int32)
    score = np.full(len(points), 0.8, np.float32)
    base = evaluate([ScenePrediction.from_labels(gt, instance, score)])
    right = np.where(chair, 2, 0).astype(np.int32)
    wrong = np.where(~chair & (points[:, 2] < 0.7), 2, 0).astype(np.int32)  # the table's legs
    with_right = evaluate([ScenePrediction.from_labels(gt, instance, score, right, np.where(right > 0, 0.4, 0).astype(np.float32))])
    with_wrong = evaluate([ScenePrediction.from_labels(gt, instance, score, wrong, np.where(wrong > 0, 0.4, 0).astype(np.float32))])
    assert base.n_pred == 1 and with_right.n_pred == 2
    assert with_right.ap25 == pytest.approx(1.0) and base.ap25 == pytest.approx(0.5)
    assert with_wrong.ap25 == pytest.approx(base.ap25) and with_wrong.ap50 == pytest.approx(base.ap50)


def test_nested_parts_travel_through_the_ply_the_json_and_the_scannet_layout(tmp_path) -> None:
    points, chair = _table_with_chair()
    n = len(points)
    instance = np.ones(n, np.int32)
    score = np.full(n, 0.8, np.float32)
    part = np.where(chair, 2, 0).astype(np.int32)
    part_score = np.where(chair, 0.4, 0).astype(np.float32)
    segments = _segments(points, instance, score, (), part, part_score)
    assert [(s.id, s.parent, s.confirmed) for s in segments] == [(1, 0, True), (2, 1, False)]
    result = SegmentationResult(
        "grabs", instance, score, np.full(n, np.nan, np.float32), segments, (), (), np.zeros((0, 3)), part=part, part_score=part_score
    )
    assert [s.get("inside") for s in result.summary()["segments"]] == [None, 1]
    cloud = PointCloud(points.astype(np.float32))
    back = read_cloud(write_cloud(tmp_path / "pred.ply", labelled_cloud(cloud, result)))
    assert np.array_equal(back.part, part) and np.allclose(back.part_score, part_score) and np.array_equal(back.instance, instance)
    npz = read_cloud(write_cloud(tmp_path / "pred.npz", labelled_cloud(cloud, result)))
    assert np.array_equal(npz.part, part)
    plain = labelled_cloud(cloud, replace(result, part=np.zeros(n, np.int32), part_score=np.zeros(n, np.float32)))
    assert plain.part is None  # no nested part: no extra fields in the file
    export_scannet(tmp_path / "scannet", result, "room")
    lines = (tmp_path / "scannet" / "room.txt").read_text().split("\n")
    assert lines[1].startswith("pred_mask/room_002.txt 1 0.4")
    mask = np.loadtxt(tmp_path / "scannet" / "pred_mask" / "room_002.txt")
    assert np.array_equal(mask.astype(bool), chair)
