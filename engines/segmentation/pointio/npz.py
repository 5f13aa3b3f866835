"""NumPy archives: ``points`` (or ``xyz``) N x 3, with optional ``colors``, ``normals`` and label arrays.

The points array's shape is read from its header inside the archive before it is loaded, so that a
file promising more points than the budget is refused without allocating them.
"""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from engines.core import EngineError

from .cloud import LABELS, PointCloud
from .fields import to_bytes, whole_ids

_KEYS = ("points", "xyz", "positions", "coords")


def read_npz(path: Path, max_points: int) -> PointCloud:
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
        if magic == b"\x93NUMPY":
            raise EngineError(f"{path.name} is a single NumPy array (.npy), not an .npz archive: save it with np.savez(path, points=array)")
        with np.load(path, allow_pickle=False) as data:
            key = next((k for k in _KEYS if k in data.files), None)
            if key is None:
                raise EngineError(f"{path.name} is not a point cloud: no 'points' (or 'xyz') array in it")
            shape = _shape(path, key)
            if shape and shape[0] > max_points:
                raise EngineError(f"{path.name} is too large ({shape[0]:,} points; the limit is {max_points:,})")
            pts = np.asarray(data[key])
            if pts.ndim != 2 or pts.shape[1] < 3 or pts.dtype.kind not in "fiu":
                raise EngineError(f"{path.name}: '{key}' must be a numeric N x 3 array, not {pts.dtype} {pts.shape}")
            n = len(pts)
            colors = next((k for k in ("colors", "rgb") if k in data.files), None)
            named = (("colors", colors), ("normals", "normals"), *((f, f) for f in LABELS))
            extra = {name: np.asarray(data[k]) for name, k in named if k in data.files}
    except EngineError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise EngineError(f"{path.name} is corrupt or not a NumPy .npz archive ({type(exc).__name__})") from None
    shapes = {"colors": ((n, 3),), "normals": ((n, 3),), **{f: ((n,), (n, 1)) for f in LABELS}}
    for name, arr in extra.items():
        if arr.ndim and arr.dtype.kind in "fiu" and len(arr) != n:
            raise EngineError(f"{path.name}: '{name}' has {len(arr)} rows but there are {n} points")
        if arr.dtype.kind not in "fiu" or arr.shape not in shapes[name]:
            want = "an N x 3" if name in ("colors", "normals") else "a length-N"
            raise EngineError(f"{path.name}: '{name}' must be {want} numeric array (N = {n} points), not {arr.dtype} {arr.shape}")
    ids = {k: whole_ids(path, extra[k], k) for k in ("instance", "part") if k in extra}
    scores = {k: extra[k].reshape(-1).astype(np.float32) for k in ("score", "part_score") if k in extra}
    normals = extra["normals"].astype(np.float32) if "normals" in extra else None
    return PointCloud(pts[:, :3], to_bytes(extra["colors"]) if "colors" in extra else None, **ids, **scores, normals=normals)


def _shape(path: Path, key: str) -> tuple[int, ...]:
    """The array's shape from its .npy header, without reading its data (() when it cannot be told)."""
    with zipfile.ZipFile(path) as archive, archive.open(f"{key}.npy") as fh:
        version = np.lib.format.read_magic(fh)
        reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, _ = reader(fh)
    return tuple(shape)
