"""Exact signed distances of the primitives, unions, surface samples and the procedural categories."""
from __future__ import annotations

import numpy as np
import pytest

from engines.segmentation.categories import CATEGORIES, make_shape
from engines.segmentation.shapes import Box, Cone, Cylinder, Pose, Shape, posed_sdf


def brute_distance(part, queries: np.ndarray, n: int = 60000) -> np.ndarray:
    surface = part.sample(n, np.random.default_rng(0))
    from scipy.spatial import cKDTree

    return cKDTree(surface).query(queries)[0]


@pytest.mark.parametrize(
    "part",
    [Box((0.1, -0.2, 0.3), (0.3, 0.2, 0.5)), Cylinder((0.0, 0.1, 0.4), 0.25, 0.4), Cone((0.2, 0.0, 0.5), 0.4, 0.1, 0.3)],
)
def test_primitive_sdf_is_the_distance_to_its_surface(part) -> None:
    rng = np.random.default_rng(1)
    q = rng.uniform(-1.2, 1.2, (400, 3))
    exact = part.sdf(q)
    brute = brute_distance(part, q)
    # Magnitude matches the distance to the dense surface samples (up to their spacing).
    assert np.allclose(np.abs(exact), brute, atol=0.02)
    # Points sampled on the surface have (numerically) zero distance.
    assert np.abs(part.sdf(part.sample(500, rng))).max() < 1e-9


def test_sdf_signs_inside_and_outside() -> None:
    box = Box((0, 0, 0), (1, 1, 1))
    assert box.sdf(np.array([[0.0, 0.0, 0.0]]))[0] == pytest.approx(-1.0)
    assert box.sdf(np.array([[2.0, 0.0, 0.0]]))[0] == pytest.approx(1.0)
    assert box.sdf(np.array([[2.0, 2.0, 0.0]]))[0] == pytest.approx(np.sqrt(2))
    cone = Cone((0, 0, 0), 1.0, 0.0, 1.0)
    assert cone.sdf(np.array([[0.0, 0.0, -0.5]]))[0] < 0
    assert cone.sdf(np.array([[0.0, 0.0, 2.0]]))[0] == pytest.approx(1.0)


def test_union_is_the_minimum_and_samples_stay_on_the_outer_surface() -> None:
    a, b = Box((0, 0, 0.5), (0.5, 0.5, 0.5)), Box((0.6, 0, 0.5), (0.5, 0.5, 0.5))
    shape = Shape("test", (a, b))
    q = np.random.default_rng(2).uniform(-2, 2, (100, 3))
    assert np.allclose(shape.sdf(q), np.minimum(a.sdf(q), b.sdf(q)))
    pts = shape.sample_surface(2000, np.random.default_rng(3))
    assert np.abs(shape.sdf(pts)).max() < 1e-9  # nothing buried in the overlap


def test_posed_sdf_follows_the_pose() -> None:
    shape = Shape("box", (Box((0, 0, 0.5), (1.0, 0.2, 0.5)),))
    pose = Pose(yaw=np.pi / 2, translation=(3.0, 0.0, 0.0))
    # After a quarter turn the long side lies along y.
    assert posed_sdf(shape, pose, np.array([[3.0, 0.9, 0.5]]))[0] < 0
    assert posed_sdf(shape, pose, np.array([[3.9, 0.0, 0.5]]))[0] > 0


@pytest.mark.parametrize("category", sorted(CATEGORIES))
def test_every_category_stands_on_the_floor_and_is_centred(category: str) -> None:
    for seed in range(3):
        shape = make_shape(category, np.random.default_rng(seed))
        pts = shape.sample_surface(3000, np.random.default_rng(seed))
        assert len(pts) > 2000
        lo, hi = pts.min(0), pts.max(0)
        assert abs(lo[2]) < 0.02, "stands on z = 0"
        assert abs((lo[0] + hi[0]) / 2) < 0.1 and abs((lo[1] + hi[1]) / 2) < 0.15, "centred in x and y"
        assert 0.05 < hi[2] < 2.1, "furniture-sized"
        assert shape.symmetry in (0, 1, 2, 4)


def test_unknown_category_is_an_error() -> None:
    with pytest.raises(ValueError):
        make_shape("spaceship", np.random.default_rng(0))
