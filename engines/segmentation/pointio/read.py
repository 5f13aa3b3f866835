"""`read_cloud`: any supported file to a `PointCloud`, every bad file one `EngineError` naming it.

Budgets come first: the file's size, then the point (and face) count its header promises, before
anything is allocated. Non-finite points are dropped and counted; clouds far from zero are moved
near it (`PointCloud.origin`); with an `InputFrame` the cloud is converted to metres and z up.
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, no_progress, scaled
from engines.core.imports import open3d

from . import mesh as meshes
from . import ply
from .cloud import PointCloud
from .fields import to_bytes
from .frame import SCALES, InputFrame, detect_units, mesh_units, placed
from .npz import read_npz
from .pcd import read_pcd
from .quiet import caught
from .text import read_pts, read_xyz

SUFFIXES: tuple[str, ...] = (".ply", ".pcd", ".xyz", ".pts", ".npz")
MAX_POINTS = 20_000_000
MAX_BYTES = 2 * 1024**3
LOCAL_REACH = 1e4  # m: float32 keeps about a millimetre out to here; farther clouds are moved


def read_cloud(path: str | os.PathLike[str], *, max_points: int = MAX_POINTS, max_bytes: int = MAX_BYTES, frame: InputFrame | None = None,
               progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED) -> PointCloud:
    """Read any supported file; raise `EngineError` with one sentence for anything wrong with it.

    Without ``frame`` the points keep the file's units and axes; with one they are in metres, z up,
    and ``cloud.placement.note`` says what was assumed. A mesh's surface is sampled to points."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise EngineError(f"{path.name}: unsupported file type {suffix or '(none)'}; use {', '.join(SUFFIXES)}")
    if not path.exists():
        raise EngineError(f"{path}: no such file")
    if path.is_dir():
        raise EngineError(f"{path} is a folder, not a point cloud file")
    size = path.stat().st_size
    if size == 0:
        raise EngineError(f"{path.name} is empty (0 bytes)")
    if size > max_bytes:
        raise EngineError(f"{path.name} is too large ({size / 1024**3:.1f} GiB; the limit is {max_bytes / 1024**3:.1f} GiB)")
    reading = scaled(progress, 0.0, 0.85 if frame else 1.0)  # first told after a chunk: a file refused at once says only why
    units = None
    if suffix == ".npz":
        with caught(path.name):
            cloud = read_npz(path, max_points)
    elif suffix == ".ply":
        cloud, units = _read_ply(path, size, max_points, frame, reading, cancel)
    elif suffix == ".pcd":
        cloud = read_pcd(path, size, max_points, reading, cancel) or _read_open3d(path)
    elif suffix == ".pts":
        cloud = read_pts(path, max_points, reading, cancel)
    else:
        cloud = read_xyz(path, max_points, reading, cancel)
    cancel.raise_if_cancelled()
    cloud = _localised(_finite(cloud, path.name))
    if frame is None:
        return cloud
    progress(0.9, f"{path.name}: checking units and up axis")
    out = placed(cloud, frame, units)
    progress(1.0, f"read {len(out):,} points from {path.name}")
    return out


def _read_ply(path: Path, size: int, max_points: int, frame: InputFrame | None, progress: ProgressFn,
              cancel: CancelToken) -> tuple[PointCloud, tuple[str, str] | None]:
    """A PLY's vertices, or its surface sampled when it has faces (with the units that decided how densely)."""
    head = ply.header(path, max_points)
    ply.check_size(path, head, size)
    if not head.faces:
        return ply.read_vertices(path, head, progress, cancel) or _read_open3d(path), None
    progress(0.1, f"reading the mesh {path.name}")
    mesh = meshes.read_mesh(path, head.vertex.n, head.faces)
    cancel.raise_if_cancelled()
    units = mesh_units(mesh.vertices, frame) if frame else None
    scale = SCALES[(units or detect_units(mesh.vertices))[0]]
    return meshes.sample(mesh, scale, max_points, scaled(progress, 0.5, 1.0), cancel), units


def _localised(cloud: PointCloud) -> PointCloud:
    """The cloud in float32, moved to a whole-metre corner of its box when it lies far from zero."""
    points = np.asarray(cloud.points, dtype=np.float64)
    if np.abs(points).max() <= LOCAL_REACH:
        return replace(cloud, points=points.astype(np.float32))
    origin = np.floor(points.min(axis=0))
    return replace(cloud, points=(points - origin).astype(np.float32), origin=tuple(float(v) for v in origin))


def _finite(cloud: PointCloud, name: str) -> PointCloud:
    if len(cloud.points) == 0:
        raise EngineError(f"{name} contains no points")
    ok = np.isfinite(cloud.points).all(axis=1)
    for field in ("score", "part_score"):
        if getattr(cloud, field) is not None:
            cloud = replace(cloud, **{field: np.nan_to_num(getattr(cloud, field), nan=0.0)})
    if ok.all():
        return cloud
    if not ok.any():
        raise EngineError(f"{name} has no finite points (all {len(ok)} contain NaN or infinity)")
    kept = cloud.subset(np.flatnonzero(ok))
    return replace(kept, dropped=int((~ok).sum()))


def _read_open3d(path: Path) -> PointCloud:
    """What NumPy does not read here: binary_compressed PCD, PLY vertices after an element of lists."""
    o3d = open3d()
    with caught(path.name) as said:
        try:
            pc = o3d.t.io.read_point_cloud(str(path))
        except (RuntimeError, ValueError) as exc:
            said.lines.append(str(exc))
            pc = None
    if pc is None or "positions" not in pc.point or pc.point.positions.shape[0] == 0:
        why = f" ({said.first()})" if said.first() else ""
        raise EngineError(f"{path.name} could not be read{why}")
    pts = pc.point.positions.numpy().reshape(-1, 3)  # a file's doubles stay doubles until `_localised`
    colors = to_bytes(pc.point.colors.numpy()) if "colors" in pc.point else None
    normals = pc.point.normals.numpy().reshape(-1, 3).astype(np.float32) if "normals" in pc.point else None
    ids = {k: pc.point[k].numpy().reshape(-1).astype(np.int32) for k in ("instance", "part") if k in pc.point}
    scores = {k: pc.point[k].numpy().reshape(-1).astype(np.float32) for k in ("score", "part_score") if k in pc.point}
    return PointCloud(pts, colors, **ids, **scores, normals=normals)
