"""PLY: the header checked here, binary vertices read in chunks with NumPy, ASCII rows parsed in `text.py`.

Open3D silently returns garbage for a truncated binary PLY and prints to stderr for a file that is
not one, so it reads only what NumPy cannot: vertices after an element of lists. A PLY with faces
is a mesh, whose surface is sampled (`mesh.py`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, no_progress

from .fields import binary_rows, count, from_columns, header_lines
from .text import all_there, rows_of_numbers

TYPES = {"char": "i1", "uchar": "u1", "int8": "i1", "uint8": "u1", "short": "i2", "ushort": "u2", "int16": "i2", "uint16": "u2",
         "int": "i4", "uint": "u4", "int32": "i4", "uint32": "u4", "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}


@dataclass(frozen=True)
class Element:
    name: str
    n: int
    props: tuple[tuple[str, ...], ...]  # ("float", "x") or ("list", "uchar", "int", "vertex_indices")

    @property
    def fixed(self) -> bool:
        return not any(p[0] == "list" for p in self.props)


@dataclass(frozen=True)
class Header:
    fmt: str  # ascii, binary_little_endian, binary_big_endian
    elements: tuple[Element, ...]
    lines: int  # header lines
    body: int  # byte offset of the data

    @property
    def vertex(self) -> Element:
        return next(e for e in self.elements if e.name == "vertex")

    @property
    def faces(self) -> int:
        return sum(e.n for e in self.elements if e.name == "face")


def header(path: Path, max_points: int) -> Header:
    """The PLY header, checked: a vertex element with x, y, z and a count within ``max_points``."""
    lines, body = header_lines(path, b"end_header")
    if not lines or lines[0] != "ply":
        raise EngineError(f"{path.name} is not a PLY point cloud (it does not start with a 'ply' header)")
    if body < 0:
        raise EngineError(f"{path.name} is corrupt: its PLY header never ends ('end_header' missing)")
    fmt = next((line.split()[1] for line in lines if line.startswith("format ") and len(line.split()) > 1), "")
    if fmt not in ("ascii", "binary_little_endian", "binary_big_endian"):
        raise EngineError(f"{path.name} is corrupt: unknown PLY format {fmt!r}")
    elements: list[tuple[str, int, list[tuple[str, ...]]]] = []
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
            elements[-1][2].append(tuple(parts[1:]))
    for _, _, props in elements:
        for p in props:
            for kind in (p[1:3] if p[0] == "list" else p[:1]):
                if kind not in TYPES:
                    raise EngineError(f"{path.name} is corrupt: unknown PLY type {kind!r}")
    out = Header(fmt, tuple(Element(name, n, tuple(props)) for name, n, props in elements), len(lines), body)
    if not any(e.name == "vertex" for e in out.elements):
        raise EngineError(f"{path.name} has no vertices, so it is not a point cloud")
    vertex = out.vertex
    if not {"x", "y", "z"} <= {p[-1] for p in vertex.props}:
        raise EngineError(f"{path.name} is not a point cloud: its vertices have no x, y, z coordinates")
    count(path, str(vertex.n), max_points)
    if not vertex.fixed:
        raise EngineError(f"{path.name} is not a point cloud: its vertices hold lists")
    if out.faces > max_points:
        raise EngineError(f"{path.name} is too large ({out.faces:,} faces; the limit is {max_points:,})")
    return out


def vertex_dtype(head: Header, element: Element, path: Path | None = None) -> np.dtype:
    order = ">" if head.fmt == "binary_big_endian" else "<"
    names = [p[-1] for p in element.props]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise EngineError(f"{path.name if path else 'the file'} is not a point cloud: its vertices name the field(s) {', '.join(twice)} twice")
    return np.dtype([(p[-1], order + TYPES[p[0]]) for p in element.props])


def check_size(path: Path, head: Header, size: int) -> None:
    """Enough bytes for every fixed-size element before the first element of lists."""
    if head.fmt == "ascii":
        return
    needed = 0
    for element in head.elements:
        if not element.fixed:
            needed += element.n  # at least each list's length byte
            break
        needed += element.n * vertex_dtype(head, element, path).itemsize
    if size - head.body < needed:
        raise EngineError(f"{path.name} is corrupt or truncated: {size - head.body:,} bytes of data, {needed:,} expected")


def read_vertices(path: Path, head: Header, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED):
    """The vertex element as a cloud; None when an element of lists comes first (Open3D then reads it)."""
    vertex = head.vertex
    before = head.elements[: head.elements.index(vertex)]
    names = [p[-1] for p in vertex.props]
    if head.fmt == "ascii":
        # One line per element instance, in header order: the vertex rows follow those of earlier elements.
        rows = rows_of_numbers(path, head.lines + sum(e.n for e in before), {len(names)}, vertex.n, progress, cancel)
        all_there(path, vertex.n, len(rows))
        return from_columns(path, {name: (rows[:, i], np.dtype(TYPES[p[0]])) for i, (name, p) in enumerate(zip(names, vertex.props))})
    if not all(e.fixed for e in before):
        return None
    offset = head.body + sum(e.n * vertex_dtype(head, e, path).itemsize for e in before)
    records = binary_rows(path, offset, vertex_dtype(head, vertex, path), vertex.n, progress, cancel)
    return from_columns(path, {name: (records[name].astype(records.dtype[name].newbyteorder("=")), records.dtype[name].newbyteorder("="))
                               for name in names})
