"""Point clouds in and out: PLY / PCD / XYZ / PTS through Open3D's tensor API, NPZ through NumPy.

Extra per-vertex fields (`instance`, `score`) travel through Open3D's tensor point clouds. Headers
are checked here before Open3D reads a file, because Open3D silently returns garbage for a
truncated binary PLY and prints to stderr for a file that is not one: every bad file gets one
clear `EngineError` instead. Non-finite points are dropped and counted.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.core import EngineError, atomic_path, atomic_write

SUFFIXES: tuple[str, ...] = (".ply", ".pcd", ".xyz", ".pts", ".npz")
MAX_POINTS = 20_000_000
MAX_BYTES = 2 * 1024**3

_PLY_SIZES = {"char": 1, "uchar": 1, "int8": 1, "uint8": 1, "short": 2, "ushort": 2, "int16": 2, "uint16": 2,
              "int": 4, "uint": 4, "int32": 4, "uint32": 4, "float": 4, "float32": 4, "double": 8, "float64": 8}


@dataclass(frozen=True)
class PointCloud:
    """Points (N, 3) float32 with optional colours (uint8), instance ids (int32) and scores (float32)."""

    points: np.ndarray
    colors: np.ndarray | None = None
    instance: np.ndarray | None = None
    score: np.ndarray | None = None
    dropped: int = 0  # non-finite points removed when reading

    def __len__(self) -> int:
        return len(self.points)

    def without_labels(self) -> "PointCloud":
        """The same cloud with no instance ids or scores: what a segmentation method may see."""
        return PointCloud(self.points, self.colors, None, None, self.dropped)

    def subset(self, index: np.ndarray) -> "PointCloud":
        pick = lambda a: None if a is None else a[index]  # noqa: E731
        return PointCloud(self.points[index], pick(self.colors), pick(self.instance), pick(self.score), self.dropped)


def read_cloud(path: str | os.PathLike[str], *, max_points: int = MAX_POINTS, max_bytes: int = MAX_BYTES) -> PointCloud:
    """Read any supported file; raise `EngineError` with one sentence for anything wrong with it."""
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
    if suffix == ".npz":
        cloud = _read_npz(path, max_points)
    else:
        if suffix == ".ply":
            _check_ply(path, size, max_points)
        elif suffix == ".pcd":
            _check_pcd(path, size, max_points)
        else:
            _check_text(path)
        cloud = _read_open3d(path)
    return _finite(cloud, path.name)


def _finite(cloud: PointCloud, name: str) -> PointCloud:
    if len(cloud.points) == 0:
        raise EngineError(f"{name} contains no points")
    ok = np.isfinite(cloud.points).all(axis=1)
    if cloud.score is not None:
        cloud = PointCloud(cloud.points, cloud.colors, cloud.instance, np.nan_to_num(cloud.score, nan=0.0), cloud.dropped)
    if ok.all():
        return cloud
    if not ok.any():
        raise EngineError(f"{name} has no finite points (all {len(ok)} contain NaN or infinity)")
    kept = cloud.subset(np.flatnonzero(ok))
    return PointCloud(kept.points, kept.colors, kept.instance, kept.score, int((~ok).sum()))


def _header_lines(path: Path, end_marker: bytes, limit: int = 65536) -> tuple[list[str], int]:
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


def _check_ply(path: Path, size: int, max_points: int) -> None:
    lines, body = _header_lines(path, b"end_header")
    if not lines or lines[0] != "ply":
        raise EngineError(f"{path.name} is not a PLY point cloud (it does not start with a 'ply' header)")
    if body < 0:
        raise EngineError(f"{path.name} is corrupt: its PLY header never ends ('end_header' missing)")
    fmt = next((l.split()[1] for l in lines if l.startswith("format ")), "")
    if fmt not in ("ascii", "binary_little_endian", "binary_big_endian"):
        raise EngineError(f"{path.name} is corrupt: unknown PLY format {fmt!r}")
    elements: list[tuple[str, int, list[list[str]]]] = []
    for line in lines:
        parts = line.split()
        if parts[:1] == ["element"] and len(parts) == 3:
            try:
                elements.append((parts[1], int(parts[2]), []))
            except ValueError:
                raise EngineError(f"{path.name} is corrupt: bad element line {line!r}") from None
        elif parts[:1] == ["property"] and elements:
            elements[-1][2].append(parts[1:])
    vertex = next((e for e in elements if e[0] == "vertex"), None)
    if vertex is None:
        raise EngineError(f"{path.name} has no vertices, so it is not a point cloud")
    names = {p[-1] for p in vertex[2]}
    if not {"x", "y", "z"} <= names:
        raise EngineError(f"{path.name} is not a point cloud: its vertices have no x, y, z coordinates")
    count = vertex[1]
    if count > max_points:
        raise EngineError(f"{path.name} is too large ({count:,} points; the limit is {max_points:,})")
    if count == 0:
        raise EngineError(f"{path.name} contains no points")
    if fmt == "ascii":
        with open(path, "rb") as fh:
            fh.seek(body)
            rows = sum(1 for line in fh if line.strip())
        if rows < count:
            raise EngineError(f"{path.name} is corrupt: the header promises {count:,} points but the file holds {rows:,} rows")
        return
    needed = 0
    for name, n, props in elements:
        if any(p[0] == "list" for p in props):
            if name == "vertex":
                raise EngineError(f"{path.name} is not a point cloud: its vertices hold lists")
            break  # variable-size elements follow: only the part before them can be checked
        try:
            needed += n * sum(_PLY_SIZES[p[0]] for p in props)
        except KeyError as exc:
            raise EngineError(f"{path.name} is corrupt: unknown PLY type {exc.args[0]!r}") from None
    if size - body < needed:
        raise EngineError(f"{path.name} is corrupt or truncated: {size - body:,} bytes of data, {needed:,} expected")


def _check_pcd(path: Path, size: int, max_points: int) -> None:
    lines, body = _header_lines(path, b"DATA")
    fields = {l.split()[0]: l.split()[1:] for l in lines if l and not l.startswith("#") and l.split()}
    if "FIELDS" not in fields or "POINTS" not in fields or "DATA" not in fields or body < 0:
        raise EngineError(f"{path.name} is not a PCD point cloud (its header lacks FIELDS, POINTS or DATA)")
    if not {"x", "y", "z"} <= set(fields["FIELDS"]):
        raise EngineError(f"{path.name} is not a point cloud: it has no x, y, z fields")
    try:
        count = int(fields["POINTS"][0])
        sizes = [int(s) for s in fields.get("SIZE", [])]
        counts = [int(c) for c in fields.get("COUNT", ["1"] * len(sizes))]
    except (ValueError, IndexError):
        raise EngineError(f"{path.name} is corrupt: unreadable PCD header") from None
    if count > max_points:
        raise EngineError(f"{path.name} is too large ({count:,} points; the limit is {max_points:,})")
    if count == 0:
        raise EngineError(f"{path.name} contains no points")
    if fields["DATA"][0] == "binary" and size - body < count * sum(s * c for s, c in zip(sizes, counts)):
        raise EngineError(f"{path.name} is corrupt or truncated: less data than its header promises")


def _check_text(path: Path) -> None:
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if b"\0" in head:
        raise EngineError(f"{path.name} is not a text point cloud (it contains binary data)")
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = head[:-4].decode("utf-8", errors="strict") if len(head) == 4096 else ""
        if not text:
            raise EngineError(f"{path.name} is not a text point cloud (it is not readable as text)") from None
    rows = [l for l in text.splitlines()[:20] if l.strip()]
    number = re.compile(r"^[\s,;]*([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[-+]?(nan|inf|infinity))([\s,;]+|$)", re.IGNORECASE)
    numeric = [r for r in rows if number.match(r) and len(r.replace(",", " ").split()) >= 3]
    if not numeric:
        raise EngineError(f"{path.name} is not a point cloud: no rows of x y z numbers")


def _read_open3d(path: Path) -> PointCloud:
    import open3d as o3d

    o3d.utility.set_verbosity_level(o3d.utility.VerbosityLevel.Error)
    try:
        pc = o3d.t.io.read_point_cloud(str(path))
    except (RuntimeError, ValueError) as exc:
        raise EngineError(f"{path.name} could not be read: {exc}") from None
    if "positions" not in pc.point or pc.point.positions.shape[0] == 0:
        raise EngineError(f"{path.name} contains no points that could be read")
    pts = pc.point.positions.numpy().astype(np.float32).reshape(-1, 3)
    colors = _colors(pc.point.colors.numpy()) if "colors" in pc.point else None
    instance = pc.point["instance"].numpy().reshape(-1).astype(np.int32) if "instance" in pc.point else None
    score = pc.point["score"].numpy().reshape(-1).astype(np.float32) if "score" in pc.point else None
    return PointCloud(pts, colors, instance, score)


def _colors(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values).reshape(-1, 3)
    if values.dtype.kind == "f":
        scale = 255.0 if np.nanmax(values, initial=0.0) <= 1.0 else 1.0
        return np.clip(np.nan_to_num(values) * scale, 0, 255).astype(np.uint8)
    if values.dtype.itemsize > 1:  # 16-bit colours
        return (np.clip(values, 0, 65535) // 257).astype(np.uint8)
    return values.astype(np.uint8)


def _read_npz(path: Path, max_points: int) -> PointCloud:
    import zipfile

    try:
        with np.load(path, allow_pickle=False) as data:
            key = next((k for k in ("points", "xyz", "positions", "coords") if k in data.files), None)
            if key is None:
                raise EngineError(f"{path.name} is not a point cloud: no 'points' (or 'xyz') array in it")
            pts = np.asarray(data[key])
            if pts.ndim != 2 or pts.shape[1] < 3 or pts.dtype.kind not in "fiu":
                raise EngineError(f"{path.name}: '{key}' must be a numeric N x 3 array, not {pts.dtype} {pts.shape}")
            if len(pts) > max_points:
                raise EngineError(f"{path.name} is too large ({len(pts):,} points; the limit is {max_points:,})")
            n = len(pts)
            colors = next((data[k] for k in ("colors", "rgb") if k in data.files), None)
            instance = data["instance"] if "instance" in data.files else None
            score = data["score"] if "score" in data.files else None
    except EngineError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise EngineError(f"{path.name} is corrupt or not a NumPy .npz archive ({type(exc).__name__})") from None
    for name, arr in (("colors", colors), ("instance", instance), ("score", score)):
        if arr is not None and len(arr) != n:
            raise EngineError(f"{path.name}: '{name}' has {len(arr)} rows but there are {n} points")
    return PointCloud(
        pts[:, :3].astype(np.float32),
        None if colors is None else _colors(colors),
        None if instance is None else np.asarray(instance).reshape(-1).astype(np.int32),
        None if score is None else np.asarray(score).reshape(-1).astype(np.float32),
    )


def write_cloud(path: str | os.PathLike[str], cloud: PointCloud) -> Path:
    """Write atomically; PLY/PCD keep `instance` and `score`, XYZ only points, PTS points and colours."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise EngineError(f"cannot write {path.name}: use one of {', '.join(SUFFIXES)}")
    if suffix == ".npz":
        arrays = {"points": cloud.points.astype(np.float32)}
        for name in ("colors", "instance", "score"):
            if getattr(cloud, name) is not None:
                arrays[name] = getattr(cloud, name)
        with atomic_write(path, "wb") as fh:
            np.savez_compressed(fh, **arrays)
        return path
    import open3d as o3d

    o3d.utility.set_verbosity_level(o3d.utility.VerbosityLevel.Error)
    pc = o3d.t.geometry.PointCloud()
    pc.point.positions = o3d.core.Tensor(np.ascontiguousarray(cloud.points, dtype=np.float32))
    if cloud.colors is not None and suffix != ".xyz":
        pc.point.colors = o3d.core.Tensor(np.ascontiguousarray(cloud.colors, dtype=np.uint8))
    if suffix in (".ply", ".pcd"):
        if cloud.instance is not None:
            pc.point["instance"] = o3d.core.Tensor(np.ascontiguousarray(cloud.instance, dtype=np.int32).reshape(-1, 1))
        if cloud.score is not None:
            pc.point["score"] = o3d.core.Tensor(np.ascontiguousarray(cloud.score, dtype=np.float32).reshape(-1, 1))
    with atomic_path(path) as tmp:
        if not o3d.t.io.write_point_cloud(str(tmp), pc, write_ascii=suffix in (".xyz", ".pts")):
            raise EngineError(f"could not write {path}")
    return path
