"""Triangle meshes (a PLY with faces): the surface sampled to points, as a scanner would have seen it.

The number of points follows the surface area in square metres, so a room gets the density the
pipeline expects whatever its triangle count, and a millimetre mesh the same points as its metre
twin. Sampling is seeded: the same file always gives the same points.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, no_progress
from engines.core.imports import open3d

from .cloud import PointCloud
from .fields import to_bytes
from .quiet import caught

POINTS_PER_M2 = 400.0  # about one point every 5 cm, the benchmark rooms' density
MIN_POINTS = 2_000
MAX_POINTS = 2_000_000
SEED = 0


@dataclass
class Mesh:
    """An Open3D triangle mesh as read, with what the header promised (to catch a truncated file)."""

    path: Path
    mesh: object  # open3d.geometry.TriangleMesh

    @property
    def vertices(self) -> np.ndarray:
        return np.asarray(self.mesh.vertices)


def read_mesh(path: Path, vertices: int, faces: int) -> Mesh:
    o3d = open3d()
    with caught(path.name) as said:
        mesh = o3d.io.read_triangle_mesh(str(path))
    got_v, got_f = len(mesh.vertices), len(mesh.triangles)
    if got_v != vertices or got_f != faces:
        why = f" ({said.first()})" if said.first() else ""
        raise EngineError(f"{path.name} is corrupt or truncated: a mesh of {vertices:,} vertices and {faces:,} faces, "
                          f"of which {got_v:,} and {got_f:,} could be read{why}")
    return Mesh(path, mesh)


def sample(mesh: Mesh, scale: float, max_points: int, progress: ProgressFn = no_progress,
           cancel: CancelToken = NEVER_CANCELLED) -> PointCloud:
    """Points on the surface, ``POINTS_PER_M2`` a square metre (``scale``: file units per metre)."""
    o3d = open3d()
    area = float(mesh.mesh.get_surface_area()) / scale**2
    if not np.isfinite(area) or area <= 0:
        raise EngineError(f"{mesh.path.name} is a mesh with no surface area (its triangles are all degenerate)")
    n = int(np.clip(round(area * POINTS_PER_M2), MIN_POINTS, min(MAX_POINTS, max_points)))
    cancel.raise_if_cancelled()
    progress(0.0, f"sampling {n:,} points on {len(mesh.mesh.triangles):,} triangles ({area:,.1f} m²)")
    o3d.utility.random.seed(SEED)
    with caught(mesh.path.name):
        cloud = mesh.mesh.sample_points_uniformly(n, use_triangle_normal=True)
    progress(1.0, f"sampled {n:,} points")
    colors = to_bytes(np.asarray(cloud.colors)) if cloud.has_colors() else None
    return PointCloud(np.asarray(cloud.points), colors, normals=np.asarray(cloud.normals, dtype=np.float32),
                      sampled_from=len(mesh.mesh.triangles))
