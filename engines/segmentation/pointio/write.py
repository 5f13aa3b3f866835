"""`write_cloud`: atomically, in the file's own coordinates (`PointCloud.file_points`)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from engines.core import EngineError, atomic_path, atomic_write
from engines.core.imports import open3d

from .cloud import LABELS, PointCloud
from .quiet import caught
from .read import SUFFIXES


def write_cloud(path: str | os.PathLike[str], cloud: PointCloud) -> Path:
    """Write atomically; PLY/PCD/NPZ keep normals and labels, XYZ and PTS points and colours.

    Points are written in the file's coordinates (its units, axes and origin), as doubles when the
    cloud was moved, scaled or turned. The text formats are written here: Open3D's XYZ writer
    refuses doubles and its PTS writer reads them as floats.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise EngineError(f"cannot write {path.name}: use one of {', '.join(SUFFIXES)}")
    points, normals = cloud.file_points(), cloud.file_normals()
    if suffix in (".xyz", ".pts"):
        colored = cloud.colors is not None
        rows = np.column_stack([points, cloud.colors]) if colored else points
        with atomic_write(path, "w") as fh:
            if suffix == ".pts":
                fh.write(f"{len(rows)}\n")
            np.savetxt(fh, rows, fmt=["%.6f"] * 3 + ["%d"] * (3 if colored else 0))
        return path
    if suffix == ".npz":
        arrays = {"points": points}
        for name in ("colors", *LABELS):
            if getattr(cloud, name) is not None:
                arrays[name] = getattr(cloud, name)
        if normals is not None:
            arrays["normals"] = normals
        with atomic_write(path, "wb") as fh:
            np.savez_compressed(fh, **arrays)
        return path
    o3d = open3d()
    pc = o3d.t.geometry.PointCloud()
    pc.point.positions = o3d.core.Tensor(np.ascontiguousarray(points))
    if cloud.colors is not None:
        pc.point.colors = o3d.core.Tensor(np.ascontiguousarray(cloud.colors, dtype=np.uint8))
    if normals is not None:
        pc.point.normals = o3d.core.Tensor(np.ascontiguousarray(normals, dtype=np.float32))
    for name in LABELS:
        if getattr(cloud, name) is not None:
            dtype = np.int32 if name in ("instance", "part") else np.float32
            pc.point[name] = o3d.core.Tensor(np.ascontiguousarray(getattr(cloud, name), dtype=dtype).reshape(-1, 1))
    with atomic_path(path) as tmp, caught(path.name) as said:
        if not o3d.t.io.write_point_cloud(str(tmp), pc):
            raise EngineError(f"could not write {path}" + (f" ({said.first()})" if said.first() else ""))
    return path
