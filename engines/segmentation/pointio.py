"""Point clouds in and out: binary PLY / PCD through Open3D's tensor API, text rows and NPZ through NumPy.

Extra per-vertex fields (`instance`, `score`, and a result's `part`, `part_score`) travel through
Open3D's tensor point clouds. Headers are checked here before Open3D reads a file, because Open3D
silently returns garbage for a truncated binary PLY and prints to stderr for a file that is not
one. Text formats (ASCII PLY and PCD, XYZ, PTS) are parsed here, every row of them: Open3D reads a
word, a short row or a missing row as uninitialised memory. Every bad file gets one clear `EngineError`. Non-finite points are
dropped and counted.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from engines.core import EngineError, atomic_path, atomic_write
from engines.core.imports import open3d
from engines.core.budget import check_npz
from engines.core.capture import quiet_reader

SUFFIXES: tuple[str, ...] = (".ply", ".pcd", ".xyz", ".pts", ".npz")
MAX_POINTS = 20_000_000
MAX_BYTES = 2 * 1024**3

_LABELS = ("instance", "score", "part", "part_score")  # per-point fields kept beside points and colours
_PLY_TYPES = {"char": "i1", "uchar": "u1", "int8": "i1", "uint8": "u1", "short": "i2", "ushort": "u2", "int16": "i2", "uint16": "u2",
              "int": "i4", "uint": "u4", "int32": "i4", "uint32": "u4", "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}


@dataclass(frozen=True)
class PointCloud:
    """Points (N, 3) float32 with optional colours (uint8), instance ids (int32) and scores (float32).

    ``origin`` is where the points' (0, 0, 0) lies in the file's coordinates. It is not zero for
    georeferenced scans (UTM metres run to millions, where float32 keeps only half a metre): such
    a cloud is read relative to a whole-metre corner of its box and written back at its place.
    """

    points: np.ndarray
    colors: np.ndarray | None = None
    instance: np.ndarray | None = None
    score: np.ndarray | None = None
    part: np.ndarray | None = None  # a result's nested object per point (int32, 0 = none; `nested.py`)
    part_score: np.ndarray | None = None  # its confidence (float32)
    dropped: int = 0  # non-finite points removed when reading
    origin: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __len__(self) -> int:
        return len(self.points)

    def without_labels(self) -> "PointCloud":
        """The same cloud with no instance ids or scores: what a segmentation method may see."""
        return replace(self, instance=None, score=None, part=None, part_score=None)

    def subset(self, index: np.ndarray) -> "PointCloud":
        pick = lambda a: None if a is None else a[index]  # noqa: E731
        return replace(self, points=self.points[index], colors=pick(self.colors), instance=pick(self.instance), score=pick(self.score),
                       part=pick(self.part), part_score=pick(self.part_score))

    def file_points(self) -> np.ndarray:
        """The points in the file's coordinates: float64 when the cloud was moved to its origin."""
        if not any(self.origin):
            return self.points
        return self.points.astype(np.float64) + np.asarray(self.origin)


@quiet_reader
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
    elif suffix == ".ply":
        cloud = _read_ply(path, size, max_points)
    elif suffix == ".pcd":
        cloud = _read_pcd(path, size, max_points)
    else:
        _check_text(path)
        cloud = _read_pts(path, max_points) if suffix == ".pts" else _read_xyz(path, max_points)
    return _localised(_finite(cloud, path.name))


LOCAL_REACH = 1e4  # m: float32 keeps about a millimetre out to here; farther clouds are moved


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
    for field in ("score", "part_score"):  # not `name`: that is the file's, for the messages below
        if getattr(cloud, field) is not None:
            cloud = replace(cloud, **{field: np.nan_to_num(getattr(cloud, field), nan=0.0)})
    if ok.all():
        return cloud
    if not ok.any():
        raise EngineError(f"{name} has no finite points (all {len(ok)} contain NaN or infinity)")
    kept = cloud.subset(np.flatnonzero(ok))
    return replace(kept, dropped=int((~ok).sum()))


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


def _count(path: Path, text: str, max_points: int) -> int:
    """A header's point count: a whole number from 1 to ``max_points``."""
    try:
        count = int(text)
    except ValueError:
        raise EngineError(f"{path.name} is corrupt: its header gives {text!r} as the number of points") from None
    if count < 0:
        raise EngineError(f"{path.name} is corrupt: its header gives a negative number of points ({count})")
    if count == 0:
        raise EngineError(f"{path.name} contains no points")
    if count > max_points:
        raise EngineError(f"{path.name} is too large ({count:,} points; the limit is {max_points:,})")
    return count


def _read_ply(path: Path, size: int, max_points: int) -> PointCloud:
    lines, body = _header_lines(path, b"end_header")
    if not lines or lines[0] != "ply":
        raise EngineError(f"{path.name} is not a PLY point cloud (it does not start with a 'ply' header)")
    if body < 0:
        raise EngineError(f"{path.name} is corrupt: its PLY header never ends ('end_header' missing)")
    fmt = next((l.split()[1] for l in lines if l.startswith("format ") and len(l.split()) > 1), "")
    if fmt not in ("ascii", "binary_little_endian", "binary_big_endian"):
        raise EngineError(f"{path.name} is corrupt: unknown PLY format {fmt!r}")
    elements: list[tuple[str, int, list[list[str]]]] = []
    for line in lines:
        parts = line.split()
        if parts[:1] == ["element"] and len(parts) == 3:
            try:
                n = int(parts[2])
            except ValueError:
                n = -1
            if n < 0:
                raise EngineError(f"{path.name} is corrupt: bad element line {line!r}")
            elements.append((parts[1], n, []))
        elif parts[:1] == ["property"] and len(parts) >= 3 and elements:
            elements[-1][2].append(parts[1:])
    vertex = next((e for e in elements if e[0] == "vertex"), None)
    if vertex is None:
        raise EngineError(f"{path.name} has no vertices, so it is not a point cloud")
    names = [p[-1] for p in vertex[2]]
    if not {"x", "y", "z"} <= set(names):
        raise EngineError(f"{path.name} is not a point cloud: its vertices have no x, y, z coordinates")
    count = _count(path, str(vertex[1]), max_points)
    if any(p[0] == "list" for p in vertex[2]):
        raise EngineError(f"{path.name} is not a point cloud: its vertices hold lists")
    try:
        types = [np.dtype(_PLY_TYPES[p[0]]) for p in vertex[2]]
    except KeyError as exc:
        raise EngineError(f"{path.name} is corrupt: unknown PLY type {exc.args[0]!r}") from None
    if fmt == "ascii":
        # One line per element instance, in header order: the vertex rows follow those of earlier elements.
        skip = len(lines) + sum(e[1] for e in elements[: elements.index(vertex)])
        rows = _rows(path, skip, {len(names)}, count)
        _all_there(path, count, len(rows))
        column = {name: (rows[:, i], types[i]) for i, name in enumerate(names)}
        return _from_columns(path, column)
    needed = 0
    for _, n, props in elements:
        if any(p[0] == "list" for p in props):
            break  # variable-size elements follow: only the part before them can be checked
        try:
            needed += n * sum(np.dtype(_PLY_TYPES[p[0]]).itemsize for p in props)
        except KeyError as exc:
            raise EngineError(f"{path.name} is corrupt: unknown PLY type {exc.args[0]!r}") from None
    if size - body < needed:
        raise EngineError(f"{path.name} is corrupt or truncated: {size - body:,} bytes of data, {needed:,} expected")
    return _read_open3d(path)


def _read_pcd(path: Path, size: int, max_points: int) -> PointCloud:
    lines, body = _header_lines(path, b"DATA")
    fields = {l.split()[0]: l.split()[1:] for l in lines if l and not l.startswith("#") and l.split()}
    if "FIELDS" not in fields or "POINTS" not in fields or "DATA" not in fields or body < 0:
        raise EngineError(f"{path.name} is not a PCD point cloud (its header lacks FIELDS, POINTS or DATA)")
    names = fields["FIELDS"]
    if not {"x", "y", "z"} <= set(names):
        raise EngineError(f"{path.name} is not a point cloud: it has no x, y, z fields")
    try:
        sizes = [int(s) for s in fields.get("SIZE", [])]
        counts = [int(c) for c in fields.get("COUNT", ["1"] * len(names))]
        kinds = fields.get("TYPE", ["F"] * len(names))
        data = fields["DATA"][0]
        points = fields["POINTS"][0]
    except (ValueError, IndexError):
        raise EngineError(f"{path.name} is corrupt: unreadable PCD header") from None
    count = _count(path, points, max_points)
    if data == "binary" and size - body < count * sum(s * c for s, c in zip(sizes, counts)):
        raise EngineError(f"{path.name} is corrupt or truncated: less data than its header promises")
    if data != "ascii":
        return _read_open3d(path)
    if len(counts) != len(names) or len(kinds) != len(names) or min(counts) < 1:
        raise EngineError(f"{path.name} is corrupt: its FIELDS, TYPE and COUNT lines do not match")
    rows = _rows(path, len(lines), {sum(counts)}, count)
    _all_there(path, count, len(rows))
    starts = np.cumsum([0, *counts])
    column = {}
    for name, start, kind, n in zip(names, starts, kinds, counts):
        if n == 1:
            column[name] = (rows[:, start], np.dtype(np.float32 if kind == "F" else np.int64))
    if "rgb" in column or "rgba" in column:
        values, dtype = column.pop("rgb", None) or column.pop("rgba")
        # Packed 0x00RRGGBB, written as the bits of a float (TYPE F) or as an integer (TYPE U / I).
        packed = values.astype(np.float32).view(np.uint32) if dtype.kind == "f" else np.nan_to_num(values).astype(np.uint32)
        rgb = np.stack([(packed >> 16) & 255, (packed >> 8) & 255, packed & 255], axis=1).astype(np.uint8)
        return _from_columns(path, column, rgb)
    return _from_columns(path, column)


def _read_xyz(path: Path, max_points: int) -> PointCloud:
    """XYZ: rows of x y z and perhaps more columns (ignored), the same number in every row."""
    rows = _rows(path, 0, range(3, 64), max_points + 1)
    if len(rows) > max_points:
        raise EngineError(f"{path.name} is too large (more than {max_points:,} points)")
    return PointCloud(rows[:, :3])


def _read_pts(path: Path, max_points: int) -> PointCloud:
    """PTS: the number of points on the first line, then x y z [intensity] [r g b] per row."""
    with open(path, encoding="latin-1") as fh:
        first = fh.readline().split()
    if len(first) != 1:
        raise EngineError(f"{path.name} is not a PTS point cloud: its first line must be the number of points")
    count = _count(path, first[0], max_points)
    rows = _rows(path, 1, {3, 4, 6, 7}, count)
    _all_there(path, count, len(rows))
    colors = None if rows.shape[1] in (3, 4) else _clipped(rows[:, -3:], np.dtype(np.uint8))
    return PointCloud(rows[:, :3], colors)


def _rows(path: Path, skip: int, widths: range | set[int], max_rows: int) -> np.ndarray:
    """Rows of numbers after ``skip`` lines, each ``widths`` long (the same in every row); one sentence
    naming the first row that is not."""
    try:
        rows = np.loadtxt(path, dtype=np.float64, skiprows=skip, max_rows=max_rows, ndmin=2, encoding="latin-1")
    except (ValueError, MemoryError):  # MemoryError: loadtxt sizes max_rows x columns up front, and a row may hold millions
        rows = None
    if rows is not None and (len(rows) == 0 or rows.shape[1] in widths):
        return rows
    with open(path, encoding="latin-1") as fh:  # only for the message: find the row that broke it
        for number, line in enumerate(fh, 1):
            parts = line.split("#")[0].split()
            if number <= skip or not parts:
                continue
            if len(parts) not in widths or not all(_is_number(p) for p in parts):
                want = f"{widths[0]} or more" if isinstance(widths, range) else " or ".join(map(str, sorted(widths)))
                raise EngineError(f"line {number} of {path.name} is not a row of {want} numbers: {line.strip()[:40]!r}")
            widths = {len(parts)}
    raise EngineError(f"{path.name} is corrupt: its rows are not all numbers")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _all_there(path: Path, promised: int, rows: int) -> None:
    if rows < promised:
        raise EngineError(f"{path.name} is truncated or corrupt: its header promises {promised:,} points but it holds {rows:,}")


def _from_columns(path: Path, column: dict[str, tuple[np.ndarray, np.dtype]], colors: np.ndarray | None = None) -> PointCloud:
    """A cloud from parsed text columns, each with the type its header declares."""
    points = np.stack([column[k][0] for k in "xyz"], axis=1)  # float64 until `_localised`
    if colors is None and {"red", "green", "blue"} <= column.keys():
        colors = _colors(np.stack([_clipped(*column[k]) for k in ("red", "green", "blue")], axis=1))
    ids = {k: _instance(path, column[k][0], k) for k in ("instance", "part") if k in column}
    scores = {k: column[k][0].astype(np.float32) for k in ("score", "part_score") if k in column}
    return PointCloud(points, colors, **ids, **scores)


def _clipped(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Text numbers as ``dtype``; integers clipped to its range rather than wrapped around."""
    if dtype.kind == "f":
        return values.astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(np.nan_to_num(np.rint(values)), info.min, info.max).astype(dtype)


def _instance(path: Path, values: np.ndarray, name: str = "instance") -> np.ndarray:
    """Instance (or part) ids: whole numbers that fit an int32 (0 is no object)."""
    values = np.asarray(values).reshape(-1)
    if values.dtype.kind not in "iu":
        if values.dtype.kind != "f" or not np.isfinite(values).all() or (values != np.rint(values)).any():
            raise EngineError(f"{path.name}: '{name}' must hold whole numbers (one object id per point)")
    if len(values) and (values.min() < -(2**31) or values.max() >= 2**31):
        raise EngineError(f"{path.name}: '{name}' ids must fit in 32 bits")
    return values.astype(np.int32)


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
    o3d = open3d()

    o3d.utility.set_verbosity_level(o3d.utility.VerbosityLevel.Error)
    try:
        pc = o3d.t.io.read_point_cloud(str(path))
    except (RuntimeError, ValueError) as exc:
        raise EngineError(f"{path.name} could not be read: {exc}") from None
    if "positions" not in pc.point or pc.point.positions.shape[0] == 0:
        raise EngineError(f"{path.name} contains no points that could be read")
    pts = pc.point.positions.numpy().reshape(-1, 3)  # a file's doubles stay doubles until `_localised`
    colors = _colors(pc.point.colors.numpy()) if "colors" in pc.point else None
    ids = {k: pc.point[k].numpy().reshape(-1).astype(np.int32) for k in ("instance", "part") if k in pc.point}
    scores = {k: pc.point[k].numpy().reshape(-1).astype(np.float32) for k in ("score", "part_score") if k in pc.point}
    return PointCloud(pts, colors, **ids, **scores)


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
        with open(path, "rb") as fh:
            magic = fh.read(6)
        if magic == b"\x93NUMPY":
            raise EngineError(f"{path.name} is a single NumPy array (.npy), not an .npz archive: save it with np.savez(path, points=array)")
        check_npz(path)  # headers may promise more memory than there is
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
            colors = next((k for k in ("colors", "rgb") if k in data.files), None)
            extra = {name: np.asarray(data[k]) for name, k in (("colors", colors), *((f, f) for f in _LABELS)) if k in data.files}
    except EngineError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise EngineError(f"{path.name} is corrupt or not a NumPy .npz archive ({type(exc).__name__})") from None
    shapes = {"colors": ((n, 3),), **{f: ((n,), (n, 1)) for f in _LABELS}}
    for name, arr in extra.items():
        if arr.ndim and arr.dtype.kind in "fiu" and len(arr) != n:
            raise EngineError(f"{path.name}: '{name}' has {len(arr)} rows but there are {n} points")
        if arr.dtype.kind not in "fiu" or arr.shape not in shapes[name]:
            want = "an N x 3" if name == "colors" else "a length-N"
            raise EngineError(f"{path.name}: '{name}' must be {want} numeric array (N = {n} points), not {arr.dtype} {arr.shape}")
    ids = {k: _instance(path, extra[k], k) for k in ("instance", "part") if k in extra}
    scores = {k: extra[k].reshape(-1).astype(np.float32) for k in ("score", "part_score") if k in extra}
    return PointCloud(pts[:, :3], _colors(extra["colors"]) if "colors" in extra else None, **ids, **scores)


def write_cloud(path: str | os.PathLike[str], cloud: PointCloud) -> Path:
    """Write atomically; PLY/PCD keep `instance` and `score`, XYZ only points, PTS points and colours.

    Points are written in the file's coordinates (see `PointCloud.origin`), as doubles when the
    cloud was moved. The text formats are written here: Open3D's XYZ writer refuses doubles and
    its PTS writer reads them as floats.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise EngineError(f"cannot write {path.name}: use one of {', '.join(SUFFIXES)}")
    if suffix in (".xyz", ".pts"):
        colored = suffix == ".pts" and cloud.colors is not None
        rows = np.column_stack([cloud.file_points(), cloud.colors]) if colored else cloud.file_points()
        with atomic_write(path, "w") as fh:
            if suffix == ".pts":
                fh.write(f"{len(rows)}\n")
            np.savetxt(fh, rows, fmt=["%.6f"] * 3 + ["%d"] * (3 if colored else 0))
        return path
    if suffix == ".npz":
        arrays = {"points": cloud.file_points()}
        for name in ("colors", *_LABELS):
            if getattr(cloud, name) is not None:
                arrays[name] = getattr(cloud, name)
        with atomic_write(path, "wb") as fh:
            np.savez_compressed(fh, **arrays)
        return path
    o3d = open3d()

    o3d.utility.set_verbosity_level(o3d.utility.VerbosityLevel.Error)
    pc = o3d.t.geometry.PointCloud()
    pc.point.positions = o3d.core.Tensor(np.ascontiguousarray(cloud.file_points()))
    if cloud.colors is not None:
        pc.point.colors = o3d.core.Tensor(np.ascontiguousarray(cloud.colors, dtype=np.uint8))
    for name in _LABELS:
        if getattr(cloud, name) is not None:
            dtype = np.int32 if name in ("instance", "part") else np.float32
            pc.point[name] = o3d.core.Tensor(np.ascontiguousarray(getattr(cloud, name), dtype=dtype).reshape(-1, 1))
    with atomic_path(path) as tmp:
        if not o3d.t.io.write_point_cloud(str(tmp), pc):
            raise EngineError(f"could not write {path}")
    return path
