"""A virtual laser scanner: rays cast from a few stations, or along a hand-held path, at the room's meshes.

What a real scan has and surface sampling does not: occlusion (only the first surface along a
ray is seen), density falling with distance (rays leave at even angular steps), few points at
grazing angles, no undersides (the sensor is above them), range noise growing with distance,
and, along a hand-held path, a small registration error per pose. Open3D's `RaycastingScene`
(Embree) casts the rays; each object is one geometry, so every hit knows its object.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engines.core.imports import open3d

from .mesh import Mesh, join


@dataclass(frozen=True)
class Scanner:
    """Where the sensor stood and how noisy it is."""

    origins: np.ndarray  # (P, 3) sensor positions
    kind: str  # "tripod" (a few stations) or "handheld" (a path of poses)
    range_noise: tuple[float, float]  # sigma = a + b x range (m)
    pose_error: float  # per-pose registration error (m)
    max_range: float
    elevation: tuple[float, float] = (-70.0, 85.0)  # degrees; straight down is the tripod or the operator
    look_at: np.ndarray | None = None  # (P, 3): a hand-held sensor's target per pose (None: all round)
    fov: tuple[float, float] = (360.0, 0.0)  # a hand-held sensor's field of view (degrees, horizontal x vertical)


def place_scanner(width: float, depth: float, blocked: list, centres: np.ndarray, rng: np.random.Generator) -> Scanner:
    """Stations (3-5) or a hand-held path (10-24 poses) at free spots of the room; ``blocked``: footprints,
    ``centres``: the objects' centres (x, y, z), which a hand-held sensor is pointed at."""
    from shapely.geometry import Point

    polys = [poly for poly in blocked if poly is not None]

    def free_spot(near: float) -> tuple[float, float] | None:
        """A spot clear of every footprint, within ``near`` (m) of one when there are any."""
        for _ in range(300):
            p = Point(float(rng.uniform(0.4, width - 0.4)), float(rng.uniform(0.4, depth - 0.4)))
            if any(poly.buffer(0.15).contains(p) for poly in polys):
                continue
            if not polys or min(poly.distance(p) for poly in polys) <= near:
                return (p.x, p.y)
        return None

    if rng.random() < 0.35 or len(centres) == 0:
        spots = [s for s in (free_spot(1.5) for _ in range(int(rng.integers(3, 6)))) if s is not None] or [(width / 2, depth / 2)]
        origins = np.array([(x, y, rng.uniform(1.2, 1.7)) for x, y in spots])
        return Scanner(origins, "tripod", (0.002, 0.002), 0.0, 10.0)
    # A hand-held sensor is walked close past the furniture and looks at it, not at the ceiling.
    waypoints = [s for s in (free_spot(1.0) for _ in range(int(rng.integers(3, 6)))) if s is not None] or [(width / 2, depth / 2)]
    path = np.asarray(waypoints)
    if len(path) == 1:
        path = np.vstack([path, path + 0.01])
    n = int(rng.integers(10, 25))
    seg = np.linalg.norm(np.diff(path, axis=0), axis=1)
    s = np.linspace(0, seg.sum(), n)
    xy = np.column_stack([np.interp(s, np.r_[0, np.cumsum(seg)], path[:, k]) for k in range(2)])
    z = rng.uniform(1.3, 1.6) + 0.03 * np.sin(s * 3.0)
    near = np.argsort(np.linalg.norm(centres[None, :, :2] - xy[:, None, :], axis=2), axis=1)[:, : min(3, len(centres))]
    look = centres[near[np.arange(n), rng.integers(0, near.shape[1], n)]] + rng.normal(0, 0.15, (n, 3))
    return Scanner(np.column_stack([xy, z]), "handheld", (0.004, 0.004), 0.004, 4.0, (-65.0, 30.0), look, (75.0, 60.0))


def _directions(n: int, azimuth: tuple[float, float], elevation: tuple[float, float], rng: np.random.Generator) -> np.ndarray:
    """About ``n`` unit rays on an even azimuth-elevation grid (a scanner's lines) over the given
    ranges (radians), randomly shifted."""
    az_span, el_span = azimuth[1] - azimuth[0], elevation[1] - elevation[0]
    step = np.sqrt(az_span * el_span / max(n, 1))
    az = azimuth[0] + np.arange(0, az_span, step) + rng.uniform(0, step)
    el = elevation[0] + np.arange(0, el_span, step) + rng.uniform(0, step)
    a, e = np.meshgrid(az, el, indexing="ij")
    return np.column_stack([(np.cos(e) * np.cos(a)).ravel(), (np.cos(e) * np.sin(a)).ravel(), np.sin(e).ravel()])


def scan(
    objects: list[tuple[int, list[Mesh]]], scanner: Scanner, n_points: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points, colours (uint8) and labels of ``n_points`` hits on ``objects`` (label, meshes): the
    scan is cast denser than asked, then thinned at random, which keeps its density pattern."""
    o3d = open3d()
    scene = o3d.t.geometry.RaycastingScene()
    labels, tri_colors = [], []
    for label, meshes in objects:
        verts, tris, colors = join(meshes)
        scene.add_triangles(o3d.core.Tensor(verts.astype(np.float32)), o3d.core.Tensor(tris.astype(np.uint32)))
        labels.append(label)
        tri_colors.append(colors)
    labels_arr = np.asarray(labels, np.int32)
    rays_per_pose = max(2000, 3 * n_points // len(scanner.origins))
    for _ in range(5):
        pts, col, lab = _cast(scene, labels_arr, tri_colors, scanner, rays_per_pose, rng)
        if len(pts) >= n_points:
            keep = np.sort(rng.choice(len(pts), n_points, replace=False))
            return pts[keep], col[keep], lab[keep]
        rays_per_pose = int(rays_per_pose * 1.3 * n_points / max(len(pts), 1)) + 1000
    return pts, col, lab


def _cast(
    scene, labels: np.ndarray, tri_colors: list[np.ndarray], scanner: Scanner, rays_per_pose: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    o3d = open3d()
    colors = np.concatenate(tri_colors).astype(np.float64)
    offsets = np.r_[0, np.cumsum([len(c) for c in tri_colors])[:-1]].astype(np.int64)
    pts, cols, labs = [], [], []
    lowest, highest = np.radians(scanner.elevation)
    for k, origin in enumerate(scanner.origins):
        if scanner.look_at is None:
            dirs = _directions(rays_per_pose, (0.0, 2 * np.pi), (lowest, highest), rng)
        else:  # a camera-like frustum around the direction to its target
            d = scanner.look_at[k] - origin
            yaw, pitch = np.arctan2(d[1], d[0]), np.arctan2(d[2], np.hypot(d[0], d[1]))
            h, v = np.radians(scanner.fov) / 2
            dirs = _directions(rays_per_pose, (yaw - h, yaw + h), (max(pitch - v, lowest), min(pitch + v, highest)), rng)
        rays = np.hstack([np.broadcast_to(origin, dirs.shape), dirs]).astype(np.float32)
        hit = scene.cast_rays(o3d.core.Tensor(rays))
        t = hit["t_hit"].numpy()
        geom = hit["geometry_ids"].numpy()
        ok = np.isfinite(t) & (t < scanner.max_range)
        normals = hit["primitive_normals"].numpy()[ok]
        cos = np.abs((normals * dirs[ok]).sum(1))
        ok_idx = np.flatnonzero(ok)
        seen = rng.random(len(ok_idx)) < np.clip(cos / 0.3, 0.05, 1.0)  # grazing hits mostly return nothing
        ok_idx, cos = ok_idx[seen], cos[seen]
        r = t[ok_idx]
        r = r + rng.normal(0, 1, len(r)) * (scanner.range_noise[0] + scanner.range_noise[1] * r)
        p = origin + dirs[ok_idx] * r[:, None] + rng.normal(0, scanner.pose_error, 3)
        g = geom[ok_idx]
        base = colors[offsets[g] + hit["primitive_ids"].numpy()[ok_idx].astype(np.int64)]
        shade = (0.55 + 0.45 * cos)[:, None]
        pts.append(p)
        cols.append(np.clip(base * shade + rng.normal(0, 5, base.shape), 0, 255))
        labs.append(labels[g])
    return np.concatenate(pts).astype(np.float32), np.concatenate(cols).astype(np.uint8), np.concatenate(labs).astype(np.int32)
