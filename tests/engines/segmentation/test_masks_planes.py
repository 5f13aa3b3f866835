"""Deduplication, per-point labels, floor/wall removal and anchors."""
from __future__ import annotations

import numpy as np

from engines.segmentation.masks import DedupParams, deduplicate, grow_segments, labels_from_masks
from engines.segmentation.planes import PlaneParams, farthest_point_anchors, reclaim_plane_points, remove_planes
from engines.segmentation.scenes import generate_scene


def test_overlapping_masks_keep_the_better_one() -> None:
    a = np.arange(0, 200)
    b = np.arange(20, 220)  # IoU 0.82 with a
    c = np.arange(500, 700)
    kept = deduplicate([a, b, c], [0.6, 0.9, 0.5])
    assert kept == [1, 2]


def test_a_mask_mostly_inside_another_is_dropped() -> None:
    big = np.arange(0, 1000)
    part = np.arange(0, 150)  # entirely inside, IoU only 0.15
    assert deduplicate([big, part], [0.9, 0.8]) == [0]
    assert deduplicate([np.arange(0, 150), np.arange(100, 400)], [0.9, 0.8]) == [0, 1]  # 1/6 inside: kept


def test_small_masks_are_dropped() -> None:
    assert deduplicate([np.arange(50), np.arange(100, 300)], [0.9, 0.1], DedupParams(min_points=100)) == [1]


def test_labels_give_shared_points_to_the_better_mask() -> None:
    masks = [np.arange(0, 300), np.arange(250, 600), np.arange(590, 640)]
    instance, score, sources = labels_from_masks(700, masks, [0.9, 0.7, 0.95], [2, 0, 1], min_points=40)
    # Best first: mask 2 (50 points) -> label 1, mask 0 -> label 2, mask 1 keeps 300..589 -> label 3.
    assert sources == [2, 0, 1]
    assert (instance[590:640] == 1).all() and (instance[250:300] == 2).all() and (instance[300:590] == 3).all()
    assert score[0] == np.float32(0.9) and instance[650] == 0 and score[650] == 0


def _room(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    floor = np.column_stack([rng.uniform(0, 5, 6000), rng.uniform(0, 4, 6000), rng.normal(0, 0.004, 6000)])
    wall = np.column_stack([rng.uniform(0, 5, 3000), rng.normal(0, 0.004, 3000), rng.uniform(0, 2.5, 3000)])
    wall2 = np.column_stack([rng.normal(5, 0.004, 2500), rng.uniform(0, 4, 2500), rng.uniform(0, 2.5, 2500)])
    top = np.column_stack([rng.uniform(1.5, 3.0, 1500), rng.uniform(1.5, 2.5, 1500), rng.normal(0.75, 0.004, 1500)])
    box = np.column_stack([rng.uniform(3.5, 4.0, 800), rng.uniform(2.5, 3.0, 800), rng.uniform(0.05, 0.9, 800)])
    pts = np.concatenate([floor, wall, wall2, top, box])
    kind = np.concatenate([np.zeros(6000), np.ones(3000), np.ones(2500), np.full(1500, 2), np.full(800, 3)])
    return pts, kind


def test_floor_and_walls_go_table_tops_stay() -> None:
    pts, kind = _room()
    keep, planes, floor_z = remove_planes(pts, PlaneParams())
    assert sorted(p.kind for p in planes) == ["floor", "wall", "wall"]
    assert abs(floor_z) < 0.01
    assert keep[kind <= 1].mean() < 0.01, "floor and walls removed"
    assert keep[kind == 2].mean() > 0.99, "the table top is not the floor"
    assert keep[kind == 3].mean() > 0.9


def test_ransac_runs_on_one_open3d_thread_and_repeats(monkeypatch) -> None:
    """Several Open3D threads draw from the seeded generator in scheduling order: other planes on a busy machine."""
    import open3d as o3d

    import engines.segmentation.planes as planes

    seen = []
    inner = planes._remove_planes

    def spy(*args):
        seen.append(o3d.utility.get_max_threads())
        return inner(*args)

    monkeypatch.setattr(planes, "_remove_planes", spy)
    before = o3d.utility.get_max_threads()
    pts = generate_scene(3).points.astype(np.float64)
    first, second = remove_planes(pts, PlaneParams(), 0), remove_planes(pts, PlaneParams(), 0)
    assert seen == [1, 1]
    assert o3d.utility.get_max_threads() == before
    assert (first[0] == second[0]).all() and first[2] == second[2]


def test_removed_points_of_an_object_against_a_wall_are_given_back() -> None:
    # An open shelf (1.0 x 0.4 x 1.0 m) on the floor with its back against the wall y = 0: its back
    # panel and its lowest centimetres go with the planes, and must come back to its segment.
    pts, kind = _room()
    rng = np.random.default_rng(1)
    front = np.column_stack([rng.uniform(1.0, 2.0, 1200), np.full(1200, 0.4), rng.uniform(0.0, 1.0, 1200)])
    sides = np.column_stack([rng.choice([1.0, 2.0], 600), rng.uniform(0.0, 0.4, 600), rng.uniform(0.0, 1.0, 600)])
    back = np.column_stack([rng.uniform(1.0, 2.0, 800), np.full(800, 0.005), rng.uniform(0.0, 1.0, 800)])  # seen through the open front
    shelf = np.concatenate([front, sides, back]) + rng.normal(0, 0.003, (2600, 3))
    wall_behind = (kind == 1) & (pts[:, 1] < 0.05) & (pts[:, 0] > 0.95) & (pts[:, 0] < 2.05) & (pts[:, 2] < 1.05)
    pts, kind = pts[~wall_behind], kind[~wall_behind]  # the scanner sees the shelf there, not the wall
    pts = np.concatenate([pts, shelf])
    kind = np.concatenate([kind, np.full(len(shelf), 4)])
    keep, planes, _ = remove_planes(pts, PlaneParams())
    assert keep[kind == 4].mean() < 0.8, "the plane removal takes part of the shelf"
    instance = np.where(keep & (kind == 4), 1, np.where(keep & (kind == 3), 2, 0)).astype(np.int32)
    score = np.where(instance == 1, 0.7, np.where(instance == 2, 0.6, 0.0)).astype(np.float32)
    new, new_score = reclaim_plane_points(pts, keep, planes, instance, score, PlaneParams())
    assert (new[kind == 4] == 1).mean() > 0.98 and (new_score[kind == 4] == np.float32(0.7)).mean() > 0.98
    assert (new[keep] == instance[keep]).all(), "only removed points change"
    walls_and_floor = np.flatnonzero(kind <= 1)
    assert (new[walls_and_floor] > 0).mean() < 0.01, "the rest of the floor and walls stay unlabelled"
    beside = (kind == 1) & (pts[:, 1] < 0.05) & ((pts[:, 0] < 0.9) | (pts[:, 0] > 2.1))
    assert (new[beside] == 0).all(), "wall points beside the shelf are not its"
    off, _ = reclaim_plane_points(pts, keep, planes, instance, score, PlaneParams(reclaim=0.0))
    assert (off == instance).all()


def test_a_base_flush_with_the_floor_is_given_back() -> None:
    # A floor lamp: a 1.6 cm disc of radius 0.18 m on the floor (its top is what the scanner sees)
    # and a pole. The disc lies in the floor's 2 cm band; it is above the floor's own noise.
    pts, kind = _room()
    rng = np.random.default_rng(2)
    r, a = 0.18 * np.sqrt(rng.uniform(0, 1, 300)), rng.uniform(0, 2 * np.pi, 300)
    disc = np.column_stack([4.0 + r * np.cos(a), 1.0 + r * np.sin(a), np.full(300, 0.016)])
    a = rng.uniform(0, 2 * np.pi, 300)
    pole = np.column_stack([4.0 + 0.02 * np.cos(a), 1.0 + 0.02 * np.sin(a), rng.uniform(0.04, 1.5, 300)])
    lamp = np.concatenate([disc, pole]) + rng.normal(0, 0.004, (600, 3))
    under = (kind == 0) & (np.hypot(pts[:, 0] - 4.0, pts[:, 1] - 1.0) < 0.19)
    pts, kind = pts[~under], kind[~under]  # the scanner sees the disc there, not the floor
    pts = np.concatenate([pts, lamp])
    kind = np.concatenate([kind, np.full(300, 5), np.full(300, 6)])
    keep, planes, _ = remove_planes(pts, PlaneParams())
    assert keep[kind == 5].mean() < 0.5, "the plane removal takes most of the disc"
    instance = np.where(keep & (kind >= 5), 1, 0).astype(np.int32)
    score = np.where(instance == 1, 0.8, 0.0).astype(np.float32)
    new, _ = reclaim_plane_points(pts, keep, planes, instance, score, PlaneParams())
    assert (new[kind == 5] == 1).mean() > 0.8  # all but those within the floor's noise
    assert (new[kind == 0] > 0).sum() < 10, "the floor around it stays the floor's"
    flat, _ = reclaim_plane_points(pts, keep, planes, instance, score, PlaneParams(reclaim_lift=0.0))
    assert (flat[kind == 5] == 1).mean() < 0.5, "without the lift rule only the disc's points next to the pole come back"


def test_small_segments_are_dropped_and_the_rest_renumbered() -> None:
    from engines.segmentation.masks import drop_small_segments

    instance = np.array([0] + [1] * 150 + [2] * 99 + [3] * 100, np.int32)
    score = np.array([0.0] + [0.9] * 150 + [0.8] * 99 + [0.7] * 100, np.float32)
    new, new_score = drop_small_segments(instance, score, 100)
    assert sorted(np.unique(new).tolist()) == [0, 1, 2]
    assert (new[instance == 2] == 0).all() and (new_score[instance == 2] == 0).all()
    assert (new[instance == 3] == 2).all() and (new_score[instance == 3] == np.float32(0.7)).all()
    same, _ = drop_small_segments(instance, score, 99)
    assert same is instance


def test_anchors_spread_over_the_points() -> None:
    pts, kind = _room()
    objects = pts[kind >= 2]
    anchors = farthest_point_anchors(objects, 6)
    assert anchors.shape == (6, 3)
    # Both clusters (table top and box) get anchors.
    assert (anchors[:, 0] > 3.4).any() and (anchors[:, 0] < 3.1).any()
    assert farthest_point_anchors(objects[:3], 10).shape[0] <= 3


def test_final_masks_grow_through_near_surface_points_only() -> None:
    from engines.segmentation.objectness import RewardParams, _grown

    # A row of points 5 cm apart: the mask is 0-9; 10-19 lie a little off the decoded surface
    # (within 3 x the threshold), 20-29 far from it, and 30-39 are near it but 1 m away.
    pts = np.zeros((40, 3))
    pts[:30, 0] = np.arange(30) * 0.05
    pts[30:, 0] = 3.0 + np.arange(10) * 0.05
    residual = np.full(40, 0.01)
    residual[10:20] = 0.05
    residual[20:30] = 0.5
    params = RewardParams(mask_threshold=0.02, grow=3.0)
    grown = _grown(pts, np.arange(10), residual, params, link=0.1)
    np.testing.assert_array_equal(grown, np.arange(20))
    off = _grown(pts, np.arange(10), residual, RewardParams(mask_threshold=0.02, grow=2.0), link=0.1)
    np.testing.assert_array_equal(off, np.arange(10))  # 0.05 > 2 x 0.02: nothing to add


def test_segments_grow_through_near_surface_points_to_their_own_side() -> None:
    """Two segments on a row of points 5 cm apart with unlabelled points between and beyond them:
    near-surface points join the segment they connect to (the nearer one where both reach), never
    across far-from-surface points, never a labelled point of another segment."""
    pts = np.zeros((60, 3))
    pts[:, 0] = np.arange(60) * 0.05
    instance = np.zeros(60, np.int32)
    instance[0:10], instance[30:40] = 1, 2
    score = np.where(instance == 1, 0.9, np.where(instance == 2, 0.4, 0.0)).astype(np.float32)
    residual = np.full(60, 0.01)
    residual[instance > 0] = np.nan  # labelled points keep their label whatever their residual
    residual[24] = 0.5  # a point far from any decoded surface: a gap the growth does not cross
    residual[50:] = 0.2  # beyond segment 2: off the surface
    grown, grown_score = grow_segments(pts, instance, score, residual, threshold=0.06, link=0.06)
    np.testing.assert_array_equal(grown[10:24], 1)  # reached from segment 1 (one link at a time)
    assert grown[24] == 0 and (grown[25:30] == 2).all() and (grown[40:50] == 2).all() and (grown[50:] == 0).all()
    np.testing.assert_array_equal(grown[instance > 0], instance[instance > 0])
    assert grown_score[12] == np.float32(0.9) and grown_score[45] == np.float32(0.4)
    unchanged, _ = grow_segments(pts, instance, score, residual, threshold=0.005, link=0.06)
    np.testing.assert_array_equal(unchanged, instance)


def test_the_mask_part_kept_is_the_one_at_the_cylinder_axis() -> None:
    from engines.segmentation.objectness import _main_part

    def grid(lo, hi, step):
        axes = [np.arange(a, b + 1e-9, step) for a, b in zip(lo, hi)]
        return np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)

    big = grid([1.0, -0.5, 0.0], [2.0, 0.5, 0.8], 0.1)  # a large object off the axis (1,089 points)
    small = grid([-0.1, -0.1, 0.0], [0.1, 0.1, 0.5], 0.05)  # a stool at the axis (275 points)
    pts = np.concatenate([big, small])
    central = _main_part(pts, 0.15, axis=(0.0, 0.0), min_points=100)
    np.testing.assert_array_equal(central, np.arange(len(big), len(pts)))
    assert len(_main_part(pts, 0.15)) == len(big)  # no axis: the largest part
    assert len(_main_part(pts, 0.15, axis=(0.0, 0.0), min_points=500)) == len(big)  # the stool is too small to count
