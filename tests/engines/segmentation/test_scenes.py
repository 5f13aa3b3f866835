"""Procedural rooms: repeatable, 4-15 objects, touching configurations, partial noisy scans, views."""
from __future__ import annotations

import numpy as np
import pytest

from engines.core import EngineError

from engines.segmentation.scenes import SceneParams, generate_scene
from engines.segmentation.views import orbit_cameras, visible_from


@pytest.fixture(scope="module")
def scenes():
    return [generate_scene(seed, SceneParams(n_points=12000)) for seed in range(6)]


def test_same_seed_same_scene() -> None:
    a, b = generate_scene(7, SceneParams(n_points=5000)), generate_scene(7, SceneParams(n_points=5000))
    assert np.array_equal(a.points, b.points) and np.array_equal(a.instance, b.instance)
    c = generate_scene(8, SceneParams(n_points=5000))
    assert not np.array_equal(a.points[:100], c.points[:100])


def test_rooms_hold_4_to_15_objects_with_ids(scenes) -> None:
    for scene in scenes:
        assert len(scene.points) == 12000 and scene.points.dtype == np.float32
        assert 4 <= len(scene.objects) <= 15
        ids = set(np.unique(scene.instance).tolist())
        assert 0 in ids, "floor and walls are instance 0"
        assert ids - {0} <= {o.instance for o in scene.objects}
        width, depth = scene.room
        assert scene.points[:, 0].min() > -0.05 and scene.points[:, 0].max() < width + 0.05
        assert scene.points[:, 2].min() > -0.05


def test_scenes_contain_touching_objects(scenes) -> None:
    notes = [o.note for scene in scenes for o in scene.objects]
    assert "under table" in notes and "against wall" in notes
    assert sum(len(scene.touching) for scene in scenes) >= 4
    for scene in scenes:
        for a, b in scene.touching:
            assert a != b and {a, b} <= {o.instance for o in scene.objects}


def test_chair_under_table_overlaps_its_footprint_without_intersecting() -> None:
    for seed in range(40):
        scene = generate_scene(seed, SceneParams(n_points=5000))
        under = [o for o in scene.objects if o.note == "under table"]
        if under:
            break
    else:
        pytest.fail("no chair pushed under a table in 40 rooms")
    chair = under[0]
    table = next(o for o in scene.objects if o.category == "table")
    seat = scene.shapes[chair.instance].sample_surface(3000, np.random.default_rng(0))
    seat_world = chair.pose.to_world(seat)
    table_sdf = scene.shapes[table.instance].sdf(table.pose.to_local(seat_world))
    assert table_sdf.min() > -0.02, "the chair does not pass through the table"
    assert (scene.instance == chair.instance).any()


def test_scan_is_partial_and_noisy() -> None:
    scene = generate_scene(3, SceneParams(n_points=8000, noise=0.01))
    assert (scene.points[scene.instance == 0][:, 2] < 0.05).mean() > 0.2  # floor
    floor = scene.points[(scene.instance == 0) & (scene.points[:, 2] < 0.1)]
    assert 0.004 < floor[:, 2].std() < 0.03  # sensor noise on a flat floor


def test_hidden_point_removal_hides_the_far_side() -> None:
    rng = np.random.default_rng(0)
    d = rng.normal(size=(3000, 3))
    sphere = d / np.linalg.norm(d, axis=1, keepdims=True)
    seen = visible_from(sphere, np.array([[5.0, 0.0, 0.0]]))
    assert seen[sphere[:, 0] > 0.3].mean() > 0.9
    assert seen[sphere[:, 0] < -0.3].mean() < 0.05
    cams = orbit_cameras(np.zeros(3), 3.0, 4, rng)
    assert cams.shape == (4, 3) and (cams[:, 2] > 0).all()


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(EngineError):
        SceneParams(n_points=10)
    with pytest.raises(EngineError):
        SceneParams(min_objects=9, max_objects=4)
