"""PCD (Point Cloud Library): ASCII rows parsed in `text.py`, binary records read in chunks with
NumPy, binary_compressed left to Open3D."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, no_progress

from .cloud import PointCloud
from .fields import binary_rows, count, from_columns, header_lines
from .text import all_there, rows_of_numbers

_KINDS = {"F": "f", "I": "i", "U": "u"}


def read_pcd(path: Path, size: int, max_points: int, progress: ProgressFn = no_progress,
             cancel: CancelToken = NEVER_CANCELLED) -> PointCloud | None:
    """The cloud, or None for binary_compressed data (Open3D reads it)."""
    lines, body = header_lines(path, b"DATA")
    fields = {line.split()[0]: line.split()[1:] for line in lines if line and not line.startswith("#") and line.split()}
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
    n = count(path, points, max_points)
    if len(counts) != len(names) or len(kinds) != len(names) or min(counts) < 1 or (data != "ascii" and len(sizes) != len(names)):
        raise EngineError(f"{path.name} is corrupt: its FIELDS, SIZE, TYPE and COUNT lines do not match")
    if data == "binary_compressed":
        return None
    if data == "binary":
        try:
            dtype = np.dtype([(name, f"<{_KINDS[k]}{s}", (c,) if c > 1 else ()) for name, k, s, c in zip(names, kinds, sizes, counts)])
        except (KeyError, TypeError):
            raise EngineError(f"{path.name} is corrupt: unknown PCD field types {' '.join(kinds)} of sizes {' '.join(map(str, sizes))}") from None
        if size - body < n * dtype.itemsize:
            raise EngineError(f"{path.name} is corrupt or truncated: less data than its header promises")
        records = binary_rows(path, body, dtype, n, progress, cancel)
        column = {name: (records[name], records.dtype[name]) for name, c in zip(names, counts) if c == 1}
        return _with_packed_colours(path, column)
    if data != "ascii":
        raise EngineError(f"{path.name} is corrupt: unknown PCD data kind {data!r}")
    rows = rows_of_numbers(path, len(lines), {sum(counts)}, n, progress, cancel)
    all_there(path, n, len(rows))
    starts = np.cumsum([0, *counts])
    column = {name: (rows[:, start], np.dtype(np.float32 if kind == "F" else np.int64))
              for name, start, kind, c in zip(names, starts, kinds, counts) if c == 1}
    return _with_packed_colours(path, column)


def _with_packed_colours(path: Path, column: dict[str, tuple[np.ndarray, np.dtype]]) -> PointCloud:
    if "rgb" not in column and "rgba" not in column:
        return from_columns(path, column)
    values, dtype = column.pop("rgb", None) or column.pop("rgba")
    # Packed 0x00RRGGBB, written as the bits of a float (TYPE F) or as an integer (TYPE U / I).
    packed = values.astype(np.float32).view(np.uint32) if dtype.kind == "f" else np.nan_to_num(values).astype(np.uint32)
    rgb = np.stack([(packed >> 16) & 255, (packed >> 8) & 255, packed & 255], axis=1).astype(np.uint8)
    return from_columns(path, column, rgb)
