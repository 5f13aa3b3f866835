"""Text point clouds: XYZ (x y z [r g b]), PTS, and the rows of ASCII PLY and PCD files.

Every row is parsed here, a chunk at a time with progress and cancel: Open3D reads a word, a
short row or a missing row as uninitialised memory.
"""
from __future__ import annotations

import re
import warnings
from itertools import islice
from pathlib import Path

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, no_progress

from .cloud import PointCloud
from .fields import clipped, count, to_bytes

CHUNK_ROWS = 1 << 20


def read_xyz(path: Path, max_points: int, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED) -> PointCloud:
    """XYZ: rows of x y z, perhaps r g b (6 columns) or intensity r g b (7); other columns are ignored."""
    check_text(path)
    rows = rows_of_numbers(path, 0, range(3, 64), max_points + 1, progress, cancel)
    if len(rows) > max_points:
        raise EngineError(f"{path.name} is too large (more than {max_points:,} points; the limit is {max_points:,})")
    colors = _rgb(rows[:, -3:]) if rows.shape[1] in (6, 7) else None
    return PointCloud(rows[:, :3], colors)


def read_pts(path: Path, max_points: int, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED) -> PointCloud:
    """PTS: the number of points on the first line, then x y z [intensity] [r g b] per row."""
    check_text(path)
    with open(path, encoding="latin-1") as fh:
        first = fh.readline().split()
    if len(first) != 1:
        raise EngineError(f"{path.name} is not a PTS point cloud: its first line must be the number of points")
    n = count(path, first[0], max_points)
    rows = rows_of_numbers(path, 1, {3, 4, 6, 7}, n, progress, cancel)
    all_there(path, n, len(rows))
    colors = None if rows.shape[1] in (3, 4) else clipped(rows[:, -3:], np.dtype(np.uint8))
    return PointCloud(rows[:, :3], colors)


def _rgb(values: np.ndarray) -> np.ndarray:
    """Colour columns: whole numbers 0..255 (or 0..65535), or fractions 0..1."""
    whole = (values == np.rint(values)).all() and values.max(initial=0) > 1
    return to_bytes(clipped(values, np.dtype(np.uint16 if values.max(initial=0) > 255 else np.uint8)) if whole else values.astype(np.float32))


def rows_of_numbers(path: Path, skip: int, widths: range | set[int], max_rows: int, progress: ProgressFn = no_progress,
                    cancel: CancelToken = NEVER_CANCELLED) -> np.ndarray:
    """Rows of numbers after ``skip`` lines, each ``widths`` long (the same in every row); one sentence
    naming the first row that is not."""
    size = max(1, path.stat().st_size)
    chunks: list[np.ndarray] = []
    total = done = 0
    with open(path, encoding="latin-1") as fh:  # latin-1: one character per byte, for progress by bytes
        for _ in islice(fh, skip):
            pass
        while total < max_rows:
            cancel.raise_if_cancelled()
            lines = list(islice(fh, min(CHUNK_ROWS, max_rows - total)))
            if not lines:
                break
            done += sum(map(len, lines))
            lines = [line for line in lines if line.split("#")[0].strip()]
            if lines:
                rows = _parsed(lines)
                if rows is None or rows.shape[1] not in widths or (chunks and rows.shape[1] != chunks[0].shape[1]):
                    _name_the_bad_row(path, skip, widths)
                chunks.append(rows)
                total += len(rows)
            progress(done / size, f"reading {path.name}: {total:,} points")
    if not chunks:
        return np.zeros((0, 3))
    return np.concatenate(chunks) if len(chunks) > 1 else chunks[0]


def _parsed(lines: list[str]) -> np.ndarray | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a bad row is named by `_name_the_bad_row`, not by NumPy's warning
            return np.loadtxt(lines, dtype=np.float64, ndmin=2)
    except (ValueError, MemoryError):  # MemoryError: loadtxt sizes rows x columns up front, and a row may hold millions
        return None


def _name_the_bad_row(path: Path, skip: int, widths: range | set[int]) -> None:
    """Scan again for the message only: find the row that broke the parse."""
    with open(path, encoding="latin-1") as fh:
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


def all_there(path: Path, promised: int, rows: int) -> None:
    if rows < promised:
        raise EngineError(f"{path.name} is truncated or corrupt: its header promises {promised:,} points but it holds {rows:,}")


def check_text(path: Path) -> None:
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
    rows = [line for line in text.splitlines()[:20] if line.strip()]
    number = re.compile(r"^[\s,;]*([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[-+]?(nan|inf|infinity))([\s,;]+|$)", re.IGNORECASE)
    numeric = [r for r in rows if number.match(r) and len(r.replace(",", " ").split()) >= 3]
    if not numeric:
        raise EngineError(f"{path.name} is not a point cloud: no rows of x y z numbers")
