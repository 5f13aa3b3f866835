"""Floor and wall removal (Open3D RANSAC planes) and farthest-point anchors for the agent.

Only planes that look like a room's shell are removed: horizontal ones at the bottom of the
scene (the floor) and tall, wide vertical ones (walls). A table top or a cabinet's front is a
plane too, and must stay.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PlaneParams:
    distance: float = 0.02  # RANSAC inlier distance (m): four times the sensor noise
    min_inliers: float = 0.03  # smallest plane, as a fraction of the points
    max_planes: int = 8
    iterations: int = 600
    tilt_deg: float = 10.0  # how far from horizontal / vertical a plane may lean
    floor_band: float = 0.2  # floor: within this height of the lowest points (m)
    wall_extent: float = 1.5  # wall: at least this wide and this tall (m)


@dataclass(frozen=True)
class Plane:
    kind: str  # "floor" or "wall"
    normal: tuple[float, float, float]
    offset: float
    points: int


def remove_planes(points: np.ndarray, params: PlaneParams = PlaneParams(), seed: int = 0) -> tuple[np.ndarray, list[Plane], float]:
    """Mask of points that are not floor or wall, the planes removed, and the floor height."""
    import open3d as o3d

    o3d.utility.random.seed(seed)
    n = len(points)
    keep = np.ones(n, dtype=bool)
    floor_z = float(np.quantile(points[:, 2], 0.02)) if n else 0.0
    if n < 50:
        return keep, [], floor_z
    work = np.arange(n)
    planes: list[Plane] = []
    cos_tol = np.cos(np.radians(params.tilt_deg))
    sin_tol = np.sin(np.radians(params.tilt_deg))
    min_count = max(50, int(params.min_inliers * n))
    for _ in range(params.max_planes * 2):
        if len(work) < min_count or len(planes) >= params.max_planes:
            break
        cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points[work].astype(np.float64)))
        model, inliers = cloud.segment_plane(params.distance, 3, params.iterations)
        inliers = np.asarray(inliers, dtype=np.int64)
        if len(inliers) < min_count:
            break
        normal = np.asarray(model[:3]) / (np.linalg.norm(model[:3]) + 1e-12)
        idx = work[inliers]
        pts = points[idx]
        kind = ""
        if abs(normal[2]) >= cos_tol and np.median(pts[:, 2]) <= floor_z + params.floor_band:
            kind = "floor"
        elif abs(normal[2]) <= sin_tol:
            along = np.cross(normal, [0.0, 0.0, 1.0])
            along /= np.linalg.norm(along) + 1e-12
            s = pts @ along
            width = np.quantile(s, 0.98) - np.quantile(s, 0.02)
            height = np.quantile(pts[:, 2], 0.98) - np.quantile(pts[:, 2], 0.02)
            if width >= params.wall_extent and height >= params.wall_extent:
                kind = "wall"
        if kind:
            # Take every point near the plane (not only this round's inliers) within its extent.
            dist = np.abs(points @ normal + model[3] / (np.linalg.norm(model[:3]) + 1e-12))
            near = dist <= params.distance
            if kind == "floor":
                floor_z = float(np.median(pts[:, 2]))
            keep &= ~near
            planes.append(Plane(kind, tuple(float(v) for v in normal), float(model[3]), int(near.sum())))
        work = work[~np.isin(work, idx)]
        if kind:
            work = work[keep[work]]
    return keep, planes, floor_z


def farthest_point_anchors(points: np.ndarray, k: int, voxel: float = 0.05) -> np.ndarray:
    """``k`` anchor positions spread over the points (voxel grid, then farthest-point sampling)."""
    import open3d as o3d

    if len(points) == 0 or k <= 0:
        return np.zeros((0, 3))
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points.astype(np.float64)))
    if voxel > 0:
        cloud = cloud.voxel_down_sample(voxel)
    if len(cloud.points) <= k:
        return np.asarray(cloud.points)
    return np.asarray(cloud.farthest_point_down_sample(k).points)
