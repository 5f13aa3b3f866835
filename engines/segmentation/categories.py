"""Procedural furniture: each category draws its proportions at random and returns a `Shape`.

Canonical frame (metres): z up from the floor (z = 0), centred in x and y, the back (chair
backrest, sofa back, headboard, closed side of a shelf) towards +y, the front towards -y.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .shapes import Box, Cone, Cylinder, Primitive, Shape


def _box(x0: float, x1: float, y0: float, y1: float, z0: float, z1: float) -> Box:
    return Box(((x0 + x1) / 2, (y0 + y1) / 2, (z0 + z1) / 2), ((x1 - x0) / 2, (y1 - y0) / 2, (z1 - z0) / 2))


def _cyl(x: float, y: float, z0: float, z1: float, r: float) -> Cylinder:
    return Cylinder((x, y, (z0 + z1) / 2), r, (z1 - z0) / 2)


def _cone(x: float, y: float, z0: float, z1: float, r_bottom: float, r_top: float) -> Cone:
    return Cone((x, y, (z0 + z1) / 2), r_bottom, r_top, (z1 - z0) / 2)


def _legs(w: float, d: float, inset: float, z1: float, t: float, round_legs: bool) -> list[Primitive]:
    xs, ys = w / 2 - inset, d / 2 - inset
    corners = [(sx * xs, sy * ys) for sx in (-1, 1) for sy in (-1, 1)]
    if round_legs:
        return [_cyl(x, y, 0.0, z1, t / 2) for x, y in corners]
    return [_box(x - t / 2, x + t / 2, y - t / 2, y + t / 2, 0.0, z1) for x, y in corners]


def chair(rng: np.random.Generator) -> Shape:
    w, d = rng.uniform(0.40, 0.55), rng.uniform(0.40, 0.52)
    seat_h, seat_t = rng.uniform(0.40, 0.50), rng.uniform(0.03, 0.07)
    back_h, back_t = rng.uniform(0.35, 0.55), rng.uniform(0.03, 0.06)
    leg = rng.uniform(0.03, 0.05)
    parts = _legs(w, d, leg / 2 + 0.01, seat_h - seat_t, leg, bool(rng.random() < 0.4))
    parts.append(_box(-w / 2, w / 2, -d / 2, d / 2, seat_h - seat_t, seat_h))
    parts.append(_box(-w / 2, w / 2, d / 2 - back_t, d / 2, seat_h, seat_h + back_h))
    if rng.random() < 0.4:  # armrests
        arm_h = rng.uniform(0.18, 0.25)
        for sx in (-1, 1):
            x = sx * (w / 2 - 0.02)
            parts.append(_box(x - 0.02, x + 0.02, -d / 2 + 0.04, d / 2, seat_h + arm_h - 0.03, seat_h + arm_h))
            parts.append(_box(x - 0.02, x + 0.02, -d / 2 + 0.04, -d / 2 + 0.08, seat_h, seat_h + arm_h))
    return Shape("chair", tuple(parts), 1)


def table(rng: np.random.Generator) -> Shape:
    h, t = rng.uniform(0.70, 0.78), rng.uniform(0.03, 0.06)
    if rng.random() < 0.25:  # round pedestal table
        r = rng.uniform(0.40, 0.65)
        parts: list[Primitive] = [
            _cyl(0, 0, h - t, h, r),
            _cyl(0, 0, 0.03, h - t, rng.uniform(0.04, 0.07)),
            _cone(0, 0, 0.0, 0.03 + rng.uniform(0.0, 0.05), rng.uniform(0.25, 0.35), 0.08),
        ]
        return Shape("table", tuple(parts), 0)
    w, d = rng.uniform(0.8, 1.8), rng.uniform(0.6, 1.0)
    leg = rng.uniform(0.04, 0.07)
    parts = _legs(w, d, rng.uniform(0.04, 0.10), h - t, leg, bool(rng.random() < 0.3))
    parts.append(_box(-w / 2, w / 2, -d / 2, d / 2, h - t, h))
    if rng.random() < 0.5:  # apron under the top
        a = rng.uniform(0.06, 0.12)
        parts.append(_box(-w / 2 + 0.05, w / 2 - 0.05, -d / 2 + 0.05, d / 2 - 0.05, h - t - a, h - t))
    return Shape("table", tuple(parts), 2)


def stool(rng: np.random.Generator) -> Shape:
    h, r, t = rng.uniform(0.45, 0.75), rng.uniform(0.15, 0.22), rng.uniform(0.03, 0.06)
    parts: list[Primitive] = [_cyl(0, 0, h - t, h, r)]
    if rng.random() < 0.5:
        parts.append(_cyl(0, 0, 0.02, h - t, rng.uniform(0.025, 0.04)))
        parts.append(_cone(0, 0, 0.0, 0.02 + rng.uniform(0.0, 0.04), r * rng.uniform(0.8, 1.1), 0.05))
        return Shape("stool", tuple(parts), 0)
    leg = rng.uniform(0.025, 0.04)
    s = r * 0.65
    parts += [_cyl(x, y, 0.0, h - t, leg / 2) for x, y in ((s, s), (-s, s), (s, -s), (-s, -s))]
    parts.append(_box(-s, s, -s, s, h * 0.35, h * 0.35 + 0.02) if rng.random() < 0.5 else _cyl(0, 0, h * 0.35, h * 0.35 + 0.02, s))
    return Shape("stool", tuple(parts), 4)


def sofa(rng: np.random.Generator) -> Shape:
    w, d = rng.uniform(1.4, 2.3), rng.uniform(0.80, 1.0)
    seat_h, back_h = rng.uniform(0.38, 0.48), rng.uniform(0.70, 0.90)
    back_t, arm_w, arm_h = rng.uniform(0.15, 0.25), rng.uniform(0.10, 0.22), rng.uniform(0.55, 0.68)
    foot = rng.uniform(0.0, 0.08)
    parts: list[Primitive] = [
        _box(-w / 2, w / 2, -d / 2, d / 2, foot, seat_h),
        _box(-w / 2, w / 2, d / 2 - back_t, d / 2, foot, back_h),
        _box(-w / 2, -w / 2 + arm_w, -d / 2, d / 2, foot, arm_h),
        _box(w / 2 - arm_w, w / 2, -d / 2, d / 2, foot, arm_h),
    ]
    if foot > 0.02:
        parts += _legs(w, d, 0.06, foot, 0.05, False)
    return Shape("sofa", tuple(parts), 1)


def cabinet(rng: np.random.Generator) -> Shape:
    w, d, h = rng.uniform(0.4, 1.2), rng.uniform(0.35, 0.6), rng.uniform(0.5, 1.9)
    plinth = rng.uniform(0.0, 0.1)
    parts: list[Primitive] = [_box(-w / 2, w / 2, -d / 2, d / 2, plinth, h)]
    if plinth > 0.03:
        parts.append(_box(-w / 2 + 0.03, w / 2 - 0.03, -d / 2 + 0.03, d / 2 - 0.03, 0.0, plinth))
    if rng.random() < 0.5:  # overhanging top
        o = rng.uniform(0.01, 0.04)
        parts.append(_box(-w / 2 - o, w / 2 + o, -d / 2 - o, d / 2, h, h + 0.03))
    if rng.random() < 0.6:  # handles on the front
        for x in (-w / 4, w / 4):
            parts.append(_box(x - 0.05, x + 0.05, -d / 2 - 0.025, -d / 2, h * 0.75, h * 0.75 + 0.02))
    return Shape("cabinet", tuple(parts), 1)


def lamp(rng: np.random.Generator) -> Shape:
    h = rng.uniform(1.2, 1.8)
    base_r, pole_r = rng.uniform(0.12, 0.2), rng.uniform(0.012, 0.025)
    shade_h, shade_rb, shade_rt = rng.uniform(0.2, 0.35), rng.uniform(0.15, 0.25), rng.uniform(0.08, 0.15)
    parts: list[Primitive] = [
        _cyl(0, 0, 0.0, 0.03, base_r),
        _cyl(0, 0, 0.03, h - shade_h * 0.5, pole_r),
        _cone(0, 0, h - shade_h, h, shade_rb, shade_rt),
    ]
    return Shape("lamp", tuple(parts), 0)


def bed(rng: np.random.Generator) -> Shape:
    w, l = rng.uniform(0.9, 1.8), rng.uniform(1.9, 2.2)
    frame_h, mattress = rng.uniform(0.2, 0.35), rng.uniform(0.15, 0.25)
    head_h, head_t = rng.uniform(0.8, 1.2), rng.uniform(0.05, 0.1)
    parts: list[Primitive] = [
        _box(-w / 2, w / 2, -l / 2, l / 2, 0.05, frame_h),
        _box(-w / 2 + 0.03, w / 2 - 0.03, -l / 2 + 0.03, l / 2 - head_t, frame_h, frame_h + mattress),
        _box(-w / 2, w / 2, l / 2 - head_t, l / 2, 0.0, head_h),
    ]
    parts += _legs(w, l - 2 * head_t, 0.05, 0.05, 0.06, False)
    if rng.random() < 0.4:  # pillow
        parts.append(_box(-w / 2 + 0.1, w / 2 - 0.1, l / 2 - head_t - 0.45, l / 2 - head_t - 0.05, frame_h + mattress, frame_h + mattress + 0.1))
    return Shape("bed", tuple(parts), 1)


def shelf(rng: np.random.Generator) -> Shape:
    w, d, h = rng.uniform(0.6, 1.2), rng.uniform(0.28, 0.42), rng.uniform(1.0, 2.0)
    t = rng.uniform(0.02, 0.04)
    n_boards = int(rng.integers(3, 6))
    parts: list[Primitive] = [
        _box(-w / 2, -w / 2 + t, -d / 2, d / 2, 0.0, h),
        _box(w / 2 - t, w / 2, -d / 2, d / 2, 0.0, h),
        _box(-w / 2, w / 2, d / 2 - t / 2, d / 2, 0.0, h),
    ]
    for z in np.linspace(0.05, h - t, n_boards):
        parts.append(_box(-w / 2 + t, w / 2 - t, -d / 2, d / 2 - t / 2, z, z + t))
    return Shape("shelf", tuple(parts), 1)


def bench(rng: np.random.Generator) -> Shape:
    w, d, h = rng.uniform(1.0, 1.6), rng.uniform(0.3, 0.45), rng.uniform(0.40, 0.50)
    t = rng.uniform(0.04, 0.07)
    if rng.random() < 0.5:  # slab legs
        parts: list[Primitive] = [
            _box(-w / 2 + 0.05, -w / 2 + 0.09, -d / 2, d / 2, 0.0, h - t),
            _box(w / 2 - 0.09, w / 2 - 0.05, -d / 2, d / 2, 0.0, h - t),
        ]
    else:
        parts = _legs(w, d, 0.06, h - t, 0.05, False)
    parts.append(_box(-w / 2, w / 2, -d / 2, d / 2, h - t, h))
    return Shape("bench", tuple(parts), 2)


def vase(rng: np.random.Generator) -> Shape:
    """A small tabletop object (vase, bottle or box) for 'things on a table'."""
    if rng.random() < 0.5:
        r, h = rng.uniform(0.05, 0.10), rng.uniform(0.15, 0.35)
        neck = rng.uniform(0.3, 0.6) * h
        parts: list[Primitive] = [_cyl(0, 0, 0.0, h - neck, r), _cone(0, 0, h - neck, h, r, r * rng.uniform(0.3, 0.7))]
        return Shape("vase", tuple(parts), 0)
    w, d, h = rng.uniform(0.15, 0.35), rng.uniform(0.12, 0.25), rng.uniform(0.08, 0.25)
    return Shape("vase", (_box(-w / 2, w / 2, -d / 2, d / 2, 0.0, h),), 2)


CATEGORIES: dict[str, Callable[[np.random.Generator], Shape]] = {
    "chair": chair,
    "table": table,
    "stool": stool,
    "sofa": sofa,
    "cabinet": cabinet,
    "lamp": lamp,
    "bed": bed,
    "shelf": shelf,
    "bench": bench,
    "vase": vase,
}

# Categories the object prior learns from (the tabletop vases are scene clutter too small to matter).
PRIOR_CATEGORIES: tuple[str, ...] = ("chair", "table", "stool", "sofa", "cabinet", "lamp", "bed", "shelf", "bench", "vase")


def make_shape(category: str, rng: np.random.Generator) -> Shape:
    try:
        return CATEGORIES[category](rng)
    except KeyError:
        raise ValueError(f"unknown category {category!r}") from None
