"""What a depth sensor sees: visible points from a few viewpoints, noise, holes.

Visibility uses Open3D's hidden-point removal (Katz et al.), which needs no mesh: the object is
only ever a set of surface samples.
"""
from __future__ import annotations

import numpy as np

from engines.core.imports import open3d


def visible_from(points: np.ndarray, cameras: np.ndarray, radius_factor: float = 100.0) -> np.ndarray:
    """Boolean mask of points visible from at least one camera position (hidden-point removal)."""
    o3d = open3d()

    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(np.asarray(points, dtype=np.float64)))
    visible = np.zeros(len(points), dtype=bool)
    if len(points) < 4:
        visible[:] = True
        return visible
    for cam in np.atleast_2d(cameras):
        diameter = float(np.linalg.norm(points.max(0) - points.min(0))) + float(np.linalg.norm(points.mean(0) - cam))
        try:
            _, idx = cloud.hidden_point_removal(np.asarray(cam, dtype=np.float64), diameter * radius_factor)
        except RuntimeError:  # degenerate hull (flat or tiny input): treat all as seen
            idx = np.arange(len(points))
        visible[np.asarray(idx, dtype=np.int64)] = True
    return visible


def orbit_cameras(center: np.ndarray, distance: float, n: int, rng: np.random.Generator, elevation: tuple[float, float] = (0.1, 1.0)) -> np.ndarray:
    """``n`` viewpoints around ``center`` at random azimuths and elevations (radians), above it."""
    az = rng.uniform(0, 2 * np.pi) + np.arange(n) * 2 * np.pi / n + rng.uniform(-0.5, 0.5, n)
    el = rng.uniform(*elevation, n)
    offs = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=-1) * distance
    return np.asarray(center) + offs


def add_noise(points: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    return points + rng.normal(0.0, sigma, size=points.shape) if sigma > 0 else points


def punch_holes(points: np.ndarray, n_holes: int, radius: float, rng: np.random.Generator) -> np.ndarray:
    """Drop the points inside ``n_holes`` balls centred on random points (GrabS's hole augmentation)."""
    keep = np.ones(len(points), dtype=bool)
    for _ in range(n_holes):
        if len(points) == 0:
            break
        c = points[rng.integers(len(points))]
        keep &= np.linalg.norm(points - c, axis=1) > radius
    return points[keep] if keep.sum() >= max(16, len(points) // 4) else points
