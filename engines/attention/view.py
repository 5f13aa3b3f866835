"""Everything the attention panel draws, computed in one engine call from one request.

A request says where the mask comes from (a library preset, edited vectors, a painted dense mask,
or a composition of two presets); the view holds the mask, its readouts, a heat map sampled at
screen resolution (never N²), the tile kinds for the overlay and the vectors for the plots.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engines.core import EngineError

from . import library
from .blocks import MaskStats, classify, mask_stats
from .compose import compose
from .dense import density_image, from_dense
from .params import TILE_RANGE
from .representation import FlashMask, make_mask

PAINT_MAX = 256  # largest N for which the exact dense mask travels to the panel for painting
VIEW_PIXELS = 512
MAX_TILE_CELLS = 1 << 20  # largest tile overlay (tiles per side squared) sent to the panel


@dataclass(frozen=True)
class MaskRequest:
    """Where the mask comes from. ``kind``: preset | vectors | dense | compose."""

    kind: str = "preset"
    name: str = "causal_document"
    n: int = 2048
    params: dict[str, Any] = field(default_factory=dict)
    vectors: Any = None  # int array [B, H, N_k, C] (kind=vectors)
    causal: bool = False  # mode of ``vectors``
    n_q: int | None = None
    dense: Any = None  # bool [N_q, N_k] (kind=dense)
    other: str = "sliding_window"  # second preset (kind=compose)
    other_params: dict[str, Any] = field(default_factory=dict)
    operation: str = "intersection"
    boundaries: tuple[float, ...] | None = None  # dragged segment edges, replacing the sizes parameter


@dataclass(frozen=True, eq=False)
class MaskView:
    name: str
    params: dict[str, Any]
    mask: FlashMask
    stats: MaskStats
    image: np.ndarray  # visible fraction per pixel, [rows, cols]
    tiles: np.ndarray | None  # tile kinds of batch 0 / head 0, or None when too many to draw
    tile: int
    dense: np.ndarray | None  # exact mask for painting (small N only)
    description: str
    boundaries: tuple[int, ...] = ()  # interior segment edges of a preset's sizes parameter (draggable)
    sizes_param: str | None = None  # which parameter the boundaries edit


def resolve(request: MaskRequest) -> tuple[str, dict[str, Any], FlashMask]:
    """(label, params, mask) for a request; EngineError for anything the user can fix."""
    if request.kind == "preset":
        given = dict(request.params)
        sizes = [p.name for p in library.mask_spec(request.name).params if p.kind == "sizes"]
        if request.boundaries is not None and sizes:
            given[sizes[0]] = sizes_from_boundaries(list(request.boundaries), request.n)
        params = library.resolve_params(request.name, request.n, given)
        return request.name, params, library.mask_spec(request.name).builder(request.n, **params)
    if request.kind == "vectors":
        if request.vectors is None:
            raise EngineError("no vectors to use")
        return "custom", {}, make_mask(np.asarray(request.vectors), request.causal, request.n_q)
    if request.kind == "dense":
        if request.dense is None:
            raise EngineError("nothing painted")
        return "painted", {}, from_dense(np.asarray(request.dense))
    if request.kind == "compose":
        a_params = library.resolve_params(request.name, request.n, request.params)
        b_params = library.resolve_params(request.other, request.n, request.other_params)
        a = library.mask_spec(request.name).builder(request.n, **a_params)
        b = library.mask_spec(request.other).builder(request.n, **b_params)
        label = f"{request.name} {'∩' if request.operation == 'intersection' else '∪'} {request.other}"
        return label, {"a": a_params, "b": b_params, "operation": request.operation}, compose(a, b, request.operation)
    raise EngineError(f"unknown mask source {request.kind!r}")


def analyze(request: MaskRequest, tile: int = 128, pixels: int = VIEW_PIXELS) -> MaskView:
    if not TILE_RANGE[0] <= tile <= TILE_RANGE[1]:
        raise EngineError(f"tile size {tile} must be between {TILE_RANGE[0]} and {TILE_RANGE[1]}")
    name, params, mask = resolve(request)
    stats = mask_stats(mask, tile, tile)
    t_q, t_k = -(-mask.n_q // tile), -(-mask.n_k // tile)
    tiles = classify(mask, tile, tile).kinds[0, 0] if t_q * t_k <= MAX_TILE_CELLS else None
    dense = None
    if mask.n_q <= PAINT_MAX and mask.n_k <= PAINT_MAX:
        from .dense import to_dense

        dense = to_dense(mask)[0, 0]
    image = density_image(mask, pixels, pixels)
    boundaries, sizes_param = (), None
    if request.kind == "preset":
        sizes = [p.name for p in library.mask_spec(name).params if p.kind == "sizes"]
        if sizes:
            sizes_param = sizes[0]
            boundaries = tuple(int(e) for e in library.segment_edges(mask.n_k, params[sizes_param])[1:-1])
    return MaskView(name, params, mask, stats, image, tiles, tile, dense, mask.describe(), boundaries, sizes_param)


def sizes_from_boundaries(boundaries: list[float], n: int) -> tuple[float, ...]:
    """A dragged set of segment edges back to the sizes parameter (empty segments are dropped)."""
    edges = np.unique(np.clip(np.round(np.asarray(boundaries, dtype=float)), 1, n - 1).astype(int))
    sizes = np.diff(np.concatenate([[0], edges, [n]]))
    return tuple(float(x) for x in sizes if x > 0)
