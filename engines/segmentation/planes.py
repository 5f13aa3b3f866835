"""Floor and wall removal (Open3D RANSAC planes) and farthest-point anchors for the agent.

Only planes that look like a room's shell are removed: horizontal ones at the bottom of the
scene (the floor) and tall, wide vertical ones (walls). A table top or a cabinet's front is a
plane too, and must stay.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engines.core.imports import open3d


@dataclass(frozen=True)
class PlaneParams:
    distance: float = 0.02  # RANSAC inlier distance (m): four times the sensor noise
    min_inliers: float = 0.03  # smallest plane, as a fraction of the points
    max_planes: int = 8
    iterations: int = 600
    tilt_deg: float = 10.0  # how far from horizontal / vertical a plane may lean
    floor_band: float = 0.2  # floor: within this height of the lowest points (m)
    wall_extent: float = 1.5  # wall: at least this wide and this tall (m)
    reclaim: float = 0.03  # a removed point this close to a segment's point rejoins it (m); 0 = off
    reclaim_wall: float = 0.1  # ... or a hidden point (wall, base on the floor) this close, inside the segment's footprint (m)
    reclaim_margin: float = 0.03  # the footprint: the segment's convex hull seen from above, this much wider (m)
    reclaim_lift: float = 0.01  # ... or a floor point at least this high above the floor, inside the footprint (m); 0 = off


@dataclass(frozen=True)
class Plane:
    kind: str  # "floor" or "wall"
    normal: tuple[float, float, float]
    offset: float
    points: int


def remove_planes(points: np.ndarray, params: PlaneParams = PlaneParams(), seed: int = 0) -> tuple[np.ndarray, list[Plane], float]:
    """Mask of points that are not floor or wall, the planes removed, and the floor height.

    RANSAC runs on one Open3D thread: with several, the threads draw from the seeded generator
    in whatever order they are scheduled, and on a busy machine the same cloud then lost other
    planes (a different floor height, another segmentation) from one run to the next."""
    o3d = open3d()

    threads = o3d.utility.get_max_threads()
    o3d.utility.set_max_threads(1)
    try:
        return _remove_planes(o3d, points, params, seed)
    finally:
        o3d.utility.set_max_threads(threads)


def _remove_planes(o3d, points: np.ndarray, params: PlaneParams, seed: int) -> tuple[np.ndarray, list[Plane], float]:
    o3d.utility.random.seed(seed % 2**31)  # Open3D takes a 32-bit int; derived room seeds can exceed it
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


def reclaim_plane_points(points: np.ndarray, keep: np.ndarray, planes: list[Plane], instance: np.ndarray, score: np.ndarray,
                         params: PlaneParams = PlaneParams()) -> tuple[np.ndarray, np.ndarray]:
    """Give removed plane points back to the segments they belong to.

    The plane removal takes everything within its inlier distance of a floor or wall: the feet of
    a stool, the back of a shelf against a wall. A removed point rejoins a segment when it lies
    within ``reclaim`` of one of its points, or when it is a hidden point inside the segment's
    footprint (seen from above, within its height) connected to the segment through such points
    at most ``reclaim_wall`` apart. Hidden: a wall point (behind an object the scanner sees the
    object, not the wall) or a floor point at least ``reclaim_lift`` above the floor (a base
    flush with the floor: a lamp's disc, a pedestal's foot). Returns new (instance, score); only
    removed points change.
    """
    import shapely
    from scipy.spatial import cKDTree

    from .neighbours import connected_parts

    removed = np.flatnonzero(~keep)
    labelled = np.flatnonzero(instance > 0)
    if params.reclaim <= 0 or len(removed) == 0 or len(labelled) == 0:
        return instance, score
    instance, score = instance.copy(), score.copy()
    d, nn = cKDTree(points[labelled]).query(points[removed], k=1, distance_upper_bound=params.reclaim)
    near = np.isfinite(d)
    owner = labelled[nn[near]]
    instance[removed[near]], score[removed[near]] = instance[owner], score[owner]
    hidden = np.zeros(len(points), bool)
    for plane in planes:
        height = points @ np.asarray(plane.normal) + plane.offset
        if plane.kind == "wall":
            hidden |= np.abs(height) <= params.distance
        elif params.reclaim_lift > 0:  # inside the floor's band, above the floor's own noise
            up = height * np.sign(plane.normal[2])
            hidden |= (up >= params.reclaim_lift) & (up <= params.distance)
    free = removed[~near & hidden[removed]]
    for seg in np.unique(instance[labelled]):
        members = np.flatnonzero(instance == seg)
        low, high = points[members, 2].min() - params.reclaim_margin, points[members, 2].max() + params.reclaim_margin
        footprint = shapely.MultiPoint(points[members, :2]).convex_hull.buffer(params.reclaim_margin)
        free = free[instance[free] == 0]
        p = points[free]
        inside = free[shapely.contains_xy(footprint, p[:, 0], p[:, 1]) & (p[:, 2] >= low) & (p[:, 2] <= high)]
        if len(inside) == 0:
            continue
        part = connected_parts(points[np.concatenate([members, inside])], params.reclaim_wall)
        joined = inside[np.isin(part[len(members):], np.unique(part[: len(members)]))]
        instance[joined], score[joined] = seg, score[members[0]]
    return instance, score


def farthest_point_anchors(points: np.ndarray, k: int, voxel: float = 0.05) -> np.ndarray:
    """``k`` anchor positions spread over the points (voxel grid, then farthest-point sampling)."""
    o3d = open3d()

    if len(points) == 0 or k <= 0:
        return np.zeros((0, 3))
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points.astype(np.float64)))
    if voxel > 0:
        cloud = cloud.voxel_down_sample(voxel)
    if len(cloud.points) <= k:
        return np.asarray(cloud.points)
    return np.asarray(cloud.farthest_point_down_sample(k).points)
