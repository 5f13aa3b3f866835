"""The sketch-style renderer: the same programs drawn as if by hand, as targets for hand drawings.

The resolved outline of the shape (booleans applied with shapely) is drawn with jittered
parameters, wobbly strokes (resampled control points pushed sideways by smooth noise), pen-lift
gaps and a random stroke width, supersampled and thresholded to a binary image like a drawing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .render import CANVAS_UNITS, DEFAULT_SIZE, check_size
from .vocab import ADD, ANG0, CIRCLE, NUM0, SUB, Tokens, arity

_SUPERSAMPLE = 4


@dataclass(frozen=True)
class SketchStyle:
    """How shaky the hand is (units are the 32-unit canvas; widths are pixels at 64x64)."""

    centre_jitter: float = 0.35
    size_jitter: float = 0.04
    angle_jitter_deg: float = 2.5
    wobble: tuple[float, float] = (0.15, 0.55)
    spacing: tuple[float, float] = (0.6, 1.4)
    gap_chance: float = 0.6
    gap_length: tuple[float, float] = (1.0, 3.5)
    stroke_px: tuple[float, float] = (0.9, 2.4)


def _shape(tokens: Tokens, i: int, rng: np.random.Generator, style: SketchStyle):
    """The jittered shapely geometry of the node at ``i`` and the index after it."""
    from shapely import affinity
    from shapely.geometry import Point, Polygon

    tok = tokens[i]
    if tok in (ADD, SUB):
        left, j = _shape(tokens, i + 1, rng, style)
        right, j = _shape(tokens, j, rng, style)
        return (left.union(right) if tok == ADD else left.difference(right)), j
    args = [t - NUM0 for t in tokens[i + 1 : i + 1 + arity(tok)]]
    jitter = rng.normal(0.0, style.centre_jitter, 2)
    scale = 1.0 + rng.normal(0.0, style.size_jitter, 2)
    if tok == CIRCLE:
        r, x, y = args
        if r <= 0:
            return Polygon(), i + 4
        shape = Point(2 * x + jitter[0], 2 * y + jitter[1]).buffer(2 * r * scale[0], quad_segs=12)
        return affinity.scale(shape, 1.0, scale[1] / scale[0]), i + 4
    x, y, w, h = args[:4]
    if w <= 0 or h <= 0:
        return Polygon(), i + 6
    cx, cy = 2 * x + jitter[0], 2 * y + jitter[1]
    hw, hh = w * scale[0], h * scale[1]
    box = Polygon([(cx - hw, cy - hh), (cx + hw, cy - hh), (cx + hw, cy + hh), (cx - hw, cy + hh)])
    degrees = 45.0 * (tokens[i + 5] - ANG0) + rng.normal(0.0, style.angle_jitter_deg)
    return affinity.rotate(box, degrees, origin=(cx, cy)), i + 6


def _rings(geometry) -> list[np.ndarray]:
    rings: list[np.ndarray] = []
    for poly in getattr(geometry, "geoms", [geometry]):
        if poly.is_empty or poly.geom_type != "Polygon":
            continue
        rings.append(np.asarray(poly.exterior.coords))
        rings.extend(np.asarray(hole.coords) for hole in poly.interiors)
    return rings


def _wobbly_strokes(ring: np.ndarray, rng: np.random.Generator, style: SketchStyle) -> list[np.ndarray]:
    """Resample a closed ring, push points sideways by smooth noise, cut pen-lift gaps."""
    seg = np.diff(ring, axis=0)
    length = np.hypot(seg[:, 0], seg[:, 1])
    total = float(length.sum())
    if total < 1e-6:
        return []
    spacing = rng.uniform(*style.spacing)
    n = max(8, int(total / spacing))
    s = np.linspace(0.0, total, n + 1)
    cum = np.concatenate([[0.0], np.cumsum(length)])
    pts = np.stack([np.interp(s, cum, ring[:, 0]), np.interp(s, cum, ring[:, 1])], axis=1)
    tangent = np.gradient(pts, axis=0)
    normal = np.stack([-tangent[:, 1], tangent[:, 0]], axis=1)
    normal /= np.maximum(np.linalg.norm(normal, axis=1, keepdims=True), 1e-9)
    noise = rng.normal(0.0, 1.0, n + 5)
    smooth = np.convolve(noise, np.ones(5) / 5, mode="valid")[: n + 1]
    amplitude = rng.uniform(*style.wobble)
    pts = pts + normal * (amplitude * smooth / max(smooth.std(), 1e-6))[:, None] * 0.6
    pts = pts + rng.normal(0.0, amplitude * 0.25, pts.shape)
    keep = np.ones(len(pts), bool)
    gaps = rng.binomial(2, style.gap_chance / 2)
    for _ in range(gaps):
        gap = max(1, int(rng.uniform(*style.gap_length) / spacing))
        start = int(rng.integers(0, len(pts)))
        keep[start : start + gap] = False
    strokes, current = [], []
    for p, k in zip(pts, keep):
        if k:
            current.append(p)
        elif current:
            strokes.append(np.array(current))
            current = []
    if current:
        strokes.append(np.array(current))
    return [st for st in strokes if len(st) >= 2]


def sketch_render(tokens: Tokens, rng: np.random.Generator, size: int = DEFAULT_SIZE, style: SketchStyle = SketchStyle()) -> np.ndarray:
    """A hand-drawn-looking outline drawing of the program: (size, size) bool, True = ink."""
    from PIL import Image, ImageDraw

    size = check_size(size)
    from shapely.geometry import box

    geometry, _ = _shape(tokens, 0, rng, style)
    inset = 0.3  # what lies beyond the canvas is not drawn; its edge is, just inside
    geometry = geometry.intersection(box(inset, inset, CANVAS_UNITS - inset, CANVAS_UNITS - inset))
    big = size * _SUPERSAMPLE
    image = Image.new("L", (big, big), 0)
    draw = ImageDraw.Draw(image)
    scale = big / CANVAS_UNITS
    width = max(1, int(round(rng.uniform(*style.stroke_px) * size / DEFAULT_SIZE * _SUPERSAMPLE)))
    for ring in _rings(geometry):
        for stroke in _wobbly_strokes(ring, rng, style):
            draw.line([tuple(p) for p in stroke * scale], fill=255, width=width, joint="curve")
    small = np.asarray(image.reduce(_SUPERSAMPLE), dtype=np.uint8)
    return small > 80


def sketch_batch(programs: list[Tokens], rng: np.random.Generator, size: int = DEFAULT_SIZE) -> np.ndarray:
    return np.stack([sketch_render(p, rng, size) for p in programs]) if programs else np.zeros((0, size, size), bool)
