"""Linking points by distance, and the thinning that keeps it affordable on dense scans."""
from __future__ import annotations

import numpy as np

from engines.segmentation.example import example_cloud
from engines.segmentation.neighbours import connected_parts, mean_neighbours, thinned


def _dense_ball_scan(n: int = 120_000, seed: int = 0) -> np.ndarray:
    """A scan of one 0.4 m ball standing on a floor patch, far denser than the procedural rooms."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n // 2, 3))
    ball = 0.4 * d / np.linalg.norm(d, axis=1, keepdims=True) + [0.0, 0.0, 0.4]
    floor = np.column_stack([rng.uniform(-1, 1, (n // 2, 2)), rng.normal(0, 0.003, n // 2)])
    return np.concatenate([ball, floor])


def test_connected_parts_link_by_distance() -> None:
    pts = np.array([[0, 0, 0], [0.1, 0, 0], [0.2, 0, 0], [1.0, 0, 0], [1.05, 0, 0]], float)
    labels = connected_parts(pts, 0.15)
    assert labels[0] == labels[1] == labels[2] and labels[3] == labels[4] and labels[0] != labels[3]


def test_rooms_as_sparse_as_the_procedural_ones_are_not_thinned() -> None:
    points = example_cloud().points.astype(np.float64)
    assert mean_neighbours(points, 0.15) < 100
    assert np.array_equal(thinned(points, 0.15, 100), np.arange(len(points)))


def test_a_dense_scan_is_thinned_to_the_bound_keeping_order() -> None:
    points = _dense_ball_scan()
    assert mean_neighbours(points, 0.15) > 1000
    keep = thinned(points, 0.15, 100)
    assert mean_neighbours(points[keep], 0.15) <= 100
    assert np.all(np.diff(keep) > 0) and 1000 < len(keep) < len(points) // 10
    # Thinning keeps the shape: the ball's top and the floor's far corners are still there.
    kept = points[keep]
    assert kept[:, 2].max() > 0.78 and np.abs(kept[:, :2]).max() > 0.95
