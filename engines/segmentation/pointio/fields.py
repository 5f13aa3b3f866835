"""What every reader shares: header counts checked against the budget, binary rows read in chunks
with progress and cancel, and per-point fields turned into a `PointCloud`."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, no_progress

from .cloud import PointCloud

CHUNK_BYTES = 8 * 1024**2  # one read between progress reports and cancel checks (a few hundred thousand points)
NORMALS = (("nx", "ny", "nz"), ("normal_x", "normal_y", "normal_z"))


def header_lines(path: Path, end_marker: bytes, limit: int = 65536) -> tuple[list[str], int]:
    """A text header's lines up to ``end_marker`` and the byte offset after it (-1: it never ends)."""
    with open(path, "rb") as fh:
        head = fh.read(limit)
    lines, offset = [], 0
    for raw in head.split(b"\n"):
        offset += len(raw) + 1
        try:
            line = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            return lines, -1
        lines.append(line)
        if raw.strip().startswith(end_marker):
            return lines, offset
    return lines, -1


def count(path: Path, text: str, max_points: int) -> int:
    """A header's point count: a whole number from 1 to ``max_points``, refused before anything is allocated."""
    try:
        n = int(text)
    except ValueError:
        raise EngineError(f"{path.name} is corrupt: its header gives {text!r} as the number of points") from None
    if n < 0:
        raise EngineError(f"{path.name} is corrupt: its header gives a negative number of points ({n})")
    if n == 0:
        raise EngineError(f"{path.name} contains no points")
    if n > max_points:
        raise EngineError(f"{path.name} is too large ({n:,} points; the limit is {max_points:,})")
    return n


def binary_rows(path: Path, offset: int, dtype: np.dtype, n: int, progress: ProgressFn = no_progress,
                cancel: CancelToken = NEVER_CANCELLED) -> np.ndarray:
    """``n`` packed records of ``dtype`` from ``offset``, read straight into their array a chunk at a time."""
    out = np.empty(n, dtype)
    raw = memoryview(out.view(np.uint8).reshape(-1))
    step = max(1, CHUNK_BYTES // dtype.itemsize)
    with open(path, "rb") as fh:
        fh.seek(offset)
        for start in range(0, n, step):
            cancel.raise_if_cancelled()
            stop = min(n, start + step)
            want = (stop - start) * dtype.itemsize
            if fh.readinto(raw[start * dtype.itemsize: stop * dtype.itemsize]) != want:
                raise EngineError(f"{path.name} is corrupt or truncated: it ends after {start:,} of the {n:,} points its header promises")
            progress(stop / n, f"reading {path.name}: {stop:,} of {n:,} points")
    return out


def from_columns(path: Path, column: dict[str, tuple[np.ndarray, np.dtype]], colors: np.ndarray | None = None) -> PointCloud:
    """A cloud from per-point columns, each with the type its header declares."""
    points = np.stack([column[k][0] for k in "xyz"], axis=1)  # float64 until `read._localised`
    if colors is None and {"red", "green", "blue"} <= column.keys():
        colors = to_bytes(np.stack([clipped(*column[k]) for k in ("red", "green", "blue")], axis=1))
    normals = next((np.stack([column[k][0] for k in names], axis=1).astype(np.float32) for names in NORMALS if set(names) <= column.keys()), None)
    ids = {k: whole_ids(path, column[k][0], k) for k in ("instance", "part") if k in column}
    scores = {k: column[k][0].astype(np.float32) for k in ("score", "part_score") if k in column}
    return PointCloud(points, colors, **ids, **scores, normals=normals)


def clipped(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Numbers as ``dtype``; integers clipped to its range rather than wrapped around."""
    if dtype.kind == "f":
        return values.astype(dtype)
    if values.dtype == dtype:
        return values
    info = np.iinfo(dtype)
    return np.clip(np.nan_to_num(np.rint(values)), info.min, info.max).astype(dtype)


def whole_ids(path: Path, values: np.ndarray, name: str = "instance") -> np.ndarray:
    """Instance (or part) ids: whole numbers that fit an int32 (0 is no object)."""
    values = np.asarray(values).reshape(-1)
    if values.dtype.kind not in "iu":
        if values.dtype.kind != "f" or not np.isfinite(values).all() or (values != np.rint(values)).any():
            raise EngineError(f"{path.name}: '{name}' must hold whole numbers (one object id per point)")
    if len(values) and (values.min() < -(2**31) or values.max() >= 2**31):
        raise EngineError(f"{path.name}: '{name}' ids must fit in 32 bits")
    return values.astype(np.int32)


def to_bytes(values: np.ndarray) -> np.ndarray:
    """Colours as uint8: floats in 0..1 scaled, 16-bit colours divided down."""
    values = np.asarray(values).reshape(-1, 3)
    if values.dtype.kind == "f":
        scale = 255.0 if np.nanmax(values, initial=0.0) <= 1.001 else 1.0  # fractions (a hair over 1 after interpolation)
        return np.clip(np.nan_to_num(values) * scale, 0, 255).astype(np.uint8)
    if values.dtype.itemsize > 1:  # 16-bit colours
        return (np.clip(values, 0, 65535) // 257).astype(np.uint8)
    return values.astype(np.uint8)
