"""Joining the pieces of one object, asked of the prior (and never joining two touching objects it tells apart)."""
from __future__ import annotations

import numpy as np
import pytest

from engines.core import EngineError
from scipy.spatial import cKDTree

from engines.segmentation.merging import MergeParams, merge_parts, stacked_share, touching_pairs
from engines.segmentation.objectness import RewardParams
from engines.segmentation.api import confidence
from engines.segmentation.prior import load_prior
from engines.segmentation.scenes import generate_scene


def _merge(points: np.ndarray, instance: np.ndarray, params: MergeParams = MergeParams()) -> np.ndarray:
    reward = RewardParams()
    merged, score = merge_parts(load_prior(), points, instance, np.full(len(points), 0.5, np.float32), params, reward,
                                np.random.default_rng(0), lambda d: confidence(d, reward))
    assert merged.shape == instance.shape and score.shape == instance.shape
    assert set(np.unique(merged[instance > 0])) == set(range(1, int(merged.max()) + 1))  # ids stay 1..K
    assert (merged[instance == 0] == 0).all()
    return merged


def test_touching_pairs_are_found_by_point_contact() -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform([0, 0, 0], [0.5, 0.5, 0.5], (400, 3))
    b = rng.uniform([0.52, 0, 0], [1.0, 0.5, 0.5], (400, 3))  # 2 cm from a
    c = rng.uniform([3, 3, 0], [3.5, 3.5, 0.5], (400, 3))  # far away
    pts = np.concatenate([a, b, c])
    inst = np.repeat(np.array([1, 2, 3], np.int32), 400)
    assert touching_pairs(pts, inst, MergeParams()) == [(1, 2)]
    assert touching_pairs(pts, np.zeros(len(pts), np.int32), MergeParams()) == []


@pytest.fixture(scope="module")
def room():
    return generate_scene(501)  # a sofa and a shelf that touch


def _object(room, category: str) -> int:
    return next(o.instance for o in room.objects if o.category == category and (room.instance == o.instance).sum() >= 300)


def test_two_halves_of_one_object_are_joined(room) -> None:
    sofa = room.instance == _object(room, "sofa")
    pts = room.points[sofa].astype(np.float64)
    xy = pts[:, :2] - pts[:, :2].mean(0)
    along = np.linalg.svd(xy, full_matrices=False)[2][0]
    halves = np.where(xy @ along > 0, 1, 2).astype(np.int32)
    assert _merge(pts, halves).max() == 1


def test_two_touching_objects_stay_apart(room) -> None:
    sofa, shelf = _object(room, "sofa"), _object(room, "shelf")
    assert sorted((sofa, shelf)) in [sorted(p) for p in room.touching]
    both = np.isin(room.instance, [sofa, shelf])
    inst = np.where(room.instance[both] == sofa, 1, 2).astype(np.int32)
    pts = room.points[both].astype(np.float64)
    assert touching_pairs(pts, inst, MergeParams()) == [(1, 2)]
    assert _merge(pts, inst).max() == 2


def test_two_shelves_side_by_side_stay_apart_because_each_is_an_object() -> None:
    # Room 15 has two shelves side by side: the prior takes their union for one wider shelf, so
    # only the rule that a join needs a piece the prior does not find alone keeps them apart.
    room = generate_scene(15)
    a, b = 9, 10
    assert {room.objects[i].category for i in range(len(room.objects)) if room.objects[i].instance in (a, b)} == {"shelf"}
    assert sorted((a, b)) in [sorted(p) for p in room.touching]
    both = np.isin(room.instance, [a, b])
    inst = np.where(room.instance[both] == a, 1, 2).astype(np.int32)
    pts = room.points[both].astype(np.float64)
    assert _merge(pts, inst).max() == 2
    assert _merge(pts, inst, MergeParams(join_found=True)).max() == 1


def test_a_piece_touching_two_objects_joins_only_one_of_them() -> None:
    # A strip across the seam of room 15's two shelves (not an object alone) touches both: each
    # union passes the join tests, but joining both would make the two shelves one segment.
    room = generate_scene(15)
    both = np.isin(room.instance, [9, 10])
    pts, gt = room.points[both].astype(np.float64), room.instance[both]
    gap = np.where(gt == 9, cKDTree(pts[gt == 10]).query(pts)[0], cKDTree(pts[gt == 9]).query(pts)[0])
    height = (pts[:, 2] - pts[:, 2].min()) / np.ptp(pts[:, 2])
    strip = (gap < 0.3) & (height > 0.3) & (height < 0.6)
    inst = np.where(strip, 3, np.where(gt == 9, 1, 2)).astype(np.int32)
    merged = _merge(pts, inst, MergeParams(stacked=1.0))  # the band lies between shelf above and below: the stacking rule alone keeps it
    assert merged.max() == 2
    assert len(np.unique(merged[inst == 3])) == 1 and merged[inst == 3][0] in (merged[inst == 1][0], merged[inst == 2][0])
    assert merged[inst == 1][0] != merged[inst == 2][0]
    assert _merge(pts, inst).max() == 3


def test_stacked_share_tells_a_piece_beneath_another_from_one_beside_it() -> None:
    rng = np.random.default_rng(0)
    top = rng.uniform([0, 0, 0.70], [1.0, 1.0, 0.74], (2000, 3))  # a table top
    seat = rng.uniform([0.3, 0.3, 0.40], [0.6, 0.6, 0.45], (300, 3))  # under it
    beside = rng.uniform([1.05, 0, 0.70], [2.0, 1.0, 0.74], (2000, 3))  # the next table top, 5 cm away
    assert stacked_share(top, seat, 0.06, 0.08) > 0.95
    assert stacked_share(seat, top, 0.06, 0.08) > 0.95  # symmetric: the larger of the two shares
    assert stacked_share(top, beside, 0.06, 0.08) == 0.0
    assert stacked_share(top, seat + [0, 0, 0.3], 0.06, 0.08) == 0.0  # level with the top: not stacked


def test_a_chair_piece_under_a_table_top_is_not_joined_to_the_table() -> None:
    # Room 36: the part of a chair pushed under the table that lies beneath its top, as the second
    # search finds it among the points the table's mask left. The prior takes the pair for one
    # table and does not find the chair piece alone, so only the stacking rule keeps them apart.
    room = generate_scene(36)
    table = next(o.instance for o in room.objects if o.category == "table")
    chair = next(o.instance for o in room.objects if o.note == "under table" and o.instance == 2)
    tp, cp = room.points[room.instance == table], room.points[room.instance == chair]
    under = cKDTree(tp[:, :2]).query(cp[:, :2])[0] < 0.1
    assert 100 <= under.sum() < len(cp)
    pts = np.concatenate([tp, cp[under]]).astype(np.float64)
    inst = np.repeat(np.array([1, 2], np.int32), [len(tp), under.sum()])
    assert _merge(pts, inst, MergeParams(stacked=1.0)).max() == 1  # the rule off: joined
    assert _merge(pts, inst).max() == 2


def test_merge_params_refuse_impossible_values() -> None:
    for bad in ({"link": 0.0}, {"contacts": 0}, {"coverage": 1.5}, {"stacked": 0.0}, {"stacked": 1.5}, {"column": 0.0}, {"rise": -1.0}):
        with pytest.raises(EngineError):
            MergeParams(**bad)
