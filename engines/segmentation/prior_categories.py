"""Parametric object families for the prior's training data, with random part structure and proportions.

In the spirit of ShapeNet's variety rather than one generator's furniture: every family draws its
part count, part kinds (boxes, cylinders, cones, spheres, capsules, tori, tilted slabs), symmetry
and aspect at random, so that two draws of one family can look like different objects (a coffee
table and a bar table, a stool and an office chair). ``HELD_OUT`` families never enter training:
they measure whether the prior generalises to kinds of objects it has not seen
(`segmentation validate-prior`). Canonical frame as `categories.py`: z up from z = 0, centred in
x and y, the back towards +y. This module is training-side only; the evaluation rooms never use it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np

from .prior_shapes import Capsule, Sphere, Tilted, Torus
from .shapes import Box, Cone, Cylinder, Shape, rotation_matrix

Rng = np.random.Generator


def _box(x0: float, x1: float, y0: float, y1: float, z0: float, z1: float) -> Box:
    return Box(((x0 + x1) / 2, (y0 + y1) / 2, (z0 + z1) / 2), ((x1 - x0) / 2, (y1 - y0) / 2, (z1 - z0) / 2))


def _cyl(x: float, y: float, z0: float, z1: float, r: float) -> Cylinder:
    return Cylinder((x, y, (z0 + z1) / 2), r, (z1 - z0) / 2)


def _cone(x: float, y: float, z0: float, z1: float, rb: float, rt: float) -> Cone:
    return Cone((x, y, (z0 + z1) / 2), rb, rt, (z1 - z0) / 2)


def _rod(a, b, r: float) -> Capsule:
    return Capsule(tuple(map(float, a)), tuple(map(float, b)), float(r))


def _u(rng: Rng, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _legs(rng: Rng, w: float, d: float, z1: float, thick: float, count: int = 4) -> list:
    """Legs under a w x d top: straight boxes or cylinders, or splayed rods; 3, 4 or 6 of them."""
    style = rng.choice(["box", "cyl", "splay"])
    inset = _u(rng, 0.0, 0.15) * min(w, d) + thick
    if count == 3:
        ang = np.arange(3) * 2 * np.pi / 3 + np.pi / 2
        feet = [(0.5 * min(w, d) * np.cos(a) * 0.8, 0.5 * min(w, d) * np.sin(a) * 0.8) for a in ang]
    else:
        xs = [-w / 2 + inset, w / 2 - inset]
        if count == 6:
            xs.append(0.0)
        feet = [(x, y) for x in xs for y in (-d / 2 + inset, d / 2 - inset)]
    parts: list = []
    splay = _u(rng, 0.03, 0.12)
    for x, y in feet:
        if style == "box":
            parts.append(_box(x - thick / 2, x + thick / 2, y - thick / 2, y + thick / 2, 0.0, z1))
        elif style == "cyl":
            parts.append(_cyl(x, y, 0.0, z1, thick / 2))
        else:
            n = np.hypot(x, y) + 1e-9
            parts.append(_rod((x + splay * x / n, y + splay * y / n, thick / 2), (x, y, z1), thick / 2))
    return parts


def _star_base(rng: Rng, r: float, z: float, thick: float) -> list:
    """Four or five rods from a hub (office chairs, pedestal tables), casters at the tips sometimes."""
    arms = int(rng.integers(3, 6))
    wheels = rng.random() < 0.5
    zr = 0.05 if wheels else thick / 2
    parts: list = []
    for a in rng.uniform(0, 2 * np.pi) + np.arange(arms) * 2 * np.pi / arms:
        tip = (r * np.cos(a), r * np.sin(a), zr)
        parts.append(_rod((0.0, 0.0, z), tip, thick / 2))
        if wheels:
            parts.append(Sphere((tip[0], tip[1], 0.03), 0.03))
    return parts


def table_like(rng: Rng) -> Shape:
    h = _u(rng, 0.35, 1.1)
    t = _u(rng, 0.02, 0.07)
    round_top = rng.random() < 0.35
    w = _u(rng, 0.4, 2.2)
    d = w if round_top else _u(rng, 0.35, min(1.2, w))
    parts: list = [_cyl(0, 0, h - t, h, w / 2) if round_top else _box(-w / 2, w / 2, -d / 2, d / 2, h - t, h)]
    support = rng.choice(["legs", "pedestal", "panels", "trestle"], p=[0.55, 0.2, 0.15, 0.1])
    sym = 0 if round_top else 2
    if support == "legs":
        count = int(rng.choice([3, 4, 4, 4, 6])) if not round_top else int(rng.choice([3, 4]))
        parts += _legs(rng, w * (0.75 if round_top else 1), d * (0.75 if round_top else 1), h - t, _u(rng, 0.025, 0.08), count)
        sym = 1 if count != 4 else sym
    elif support == "pedestal":
        parts.append(_cyl(0, 0, 0.03, h - t, _u(rng, 0.03, 0.1)))
        if rng.random() < 0.5:
            parts.append(_cone(0, 0, 0.0, _u(rng, 0.03, 0.1), _u(rng, 0.15, 0.4) * max(w, 0.5), 0.06))
        else:
            parts += _star_base(rng, _u(rng, 0.2, 0.4), 0.1, 0.05)
            sym = 1
    elif support == "panels":  # a desk: two side panels, maybe a drawer block and a modesty board
        pt = _u(rng, 0.02, 0.05)
        parts += [_box(-w / 2, -w / 2 + pt, -d / 2, d / 2, 0, h - t), _box(w / 2 - pt, w / 2, -d / 2, d / 2, 0, h - t)]
        if rng.random() < 0.5:
            bw = _u(rng, 0.3, 0.45) * w
            parts.append(_box(w / 2 - bw, w / 2 - pt, -d / 2 + 0.02, d / 2, _u(rng, 0, 0.1), h - t))
        if rng.random() < 0.5:
            parts.append(_box(-w / 2, w / 2, d / 2 - pt, d / 2, h * _u(rng, 0.3, 0.6), h - t))
        sym = 1
    else:
        st = _u(rng, 0.04, 0.1)
        for sx in (-1, 1):
            x = sx * (w / 2 - st * 2)
            parts.append(_box(x - st / 2, x + st / 2, -d / 3, d / 3, 0.04, h - t))
            parts.append(_box(x - st, x + st, -d / 2 + 0.03, d / 2 - 0.03, 0, 0.04))
        parts.append(_rod((-w / 2 + st * 2, 0, h * 0.3), (w / 2 - st * 2, 0, h * 0.3), st / 2))
    if not round_top and support == "legs" and rng.random() < 0.35:  # lower shelf
        z = _u(rng, 0.1, 0.35) * h
        parts.append(_box(-w / 2 + 0.05, w / 2 - 0.05, -d / 2 + 0.05, d / 2 - 0.05, z, z + 0.02))
    return Shape("table_like", tuple(parts), sym)


def seat(rng: Rng) -> Shape:
    """Chairs, stools, armchairs, office chairs, benches: every part drawn independently."""
    w = _u(rng, 0.35, 0.7) if rng.random() < 0.8 else _u(rng, 0.8, 1.8)
    d = _u(rng, 0.35, 0.65)
    sh, st = _u(rng, 0.35, 0.8), _u(rng, 0.03, 0.15)
    round_seat = w < 0.7 and rng.random() < 0.25
    parts: list = [_cyl(0, 0, sh - st, sh, w / 2) if round_seat else _box(-w / 2, w / 2, -d / 2, d / 2, sh - st, sh)]
    base = rng.choice(["legs", "star", "pedestal", "sled", "block"], p=[0.5, 0.2, 0.1, 0.1, 0.1])
    if base == "legs":
        parts += _legs(rng, w, d, sh - st, _u(rng, 0.025, 0.06), 4)
        if rng.random() < 0.3:  # stretchers
            z = _u(rng, 0.1, 0.25)
            parts.append(_rod((-w / 2 + 0.04, -d / 2 + 0.04, z), (w / 2 - 0.04, -d / 2 + 0.04, z), 0.012))
            parts.append(_rod((-w / 2 + 0.04, d / 2 - 0.04, z), (w / 2 - 0.04, d / 2 - 0.04, z), 0.012))
    elif base == "star":
        parts.append(_cyl(0, 0, 0.1, sh - st, _u(rng, 0.02, 0.04)))
        parts += _star_base(rng, _u(rng, 0.25, 0.35), 0.1, 0.04)
    elif base == "pedestal":
        parts.append(_cyl(0, 0, 0.02, sh - st, _u(rng, 0.02, 0.05)))
        parts.append(_cone(0, 0, 0.0, 0.03, _u(rng, 0.15, 0.28), 0.05))
    elif base == "sled":
        for sx in (-1, 1):
            x = sx * (w / 2 - 0.03)
            parts.append(_rod((x, -d / 2, 0.015), (x, d / 2, 0.015), 0.015))
            parts.append(_rod((x, -d / 2 + 0.05, 0.015), (x, -d / 2 + 0.05, sh - st), 0.015))
            parts.append(_rod((x, d / 2 - 0.05, 0.015), (x, d / 2 - 0.05, sh - st), 0.015))
    else:
        parts.append(_box(-w / 2 + 0.02, w / 2 - 0.02, -d / 2 + 0.02, d / 2 - 0.02, 0.0, sh - st))
    back = rng.choice(["none", "slab", "tilted", "slats", "frame"], p=[0.2, 0.3, 0.2, 0.15, 0.15])
    bh, bt = _u(rng, 0.2, 0.6), _u(rng, 0.02, 0.12)
    y1 = w / 2 if round_seat else d / 2
    if back == "slab":
        parts.append(_box(-w / 2, w / 2, y1 - bt, y1, sh, sh + bh))
    elif back == "tilted":
        parts.append(Tilted(_box(-w / 2, w / 2, y1 - bt, y1, sh, sh + bh), (0.0, y1, sh), roll=-_u(rng, 0.1, 0.4)))
    elif back == "slats":
        n = int(rng.integers(2, 6))
        for x in np.linspace(-w / 2 + 0.03, w / 2 - 0.03, n):
            parts.append(_rod((x, y1 - 0.02, sh), (x, y1 - 0.02, sh + bh), _u(rng, 0.01, 0.025)))
        parts.append(_box(-w / 2, w / 2, y1 - 0.04, y1, sh + bh - 0.06, sh + bh))
    elif back == "frame":
        for sx in (-1, 1):
            parts.append(_rod((sx * (w / 2 - 0.02), y1 - 0.02, sh), (sx * (w / 2 - 0.02), y1 - 0.02, sh + bh), 0.02))
        parts.append(_box(-w / 2, w / 2, y1 - 0.05, y1, sh + bh * 0.4, sh + bh))
    if back != "none" and rng.random() < 0.35:  # armrests
        ah = _u(rng, 0.15, 0.3)
        for sx in (-1, 1):
            x = sx * (w / 2 - 0.02)
            if rng.random() < 0.5:
                parts.append(_box(x - 0.03, x + 0.03, -d / 2 + 0.03, y1, sh + ah - 0.04, sh + ah))
            else:
                parts.append(_rod((x, -d / 2 + 0.05, sh + ah), (x, y1 - 0.03, sh + ah), 0.02))
            parts.append(_rod((x, -d / 2 + 0.06, sh), (x, -d / 2 + 0.06, sh + ah), 0.015))
    sym = (
        0
        if round_seat and back == "none" and base in ("pedestal", "block")
        else (4 if back == "none" and base == "legs" and abs(w - d) < 0.05 else 1)
    )
    return Shape("seat", tuple(parts), sym)


def sofa_like(rng: Rng) -> Shape:
    w, d = _u(rng, 1.0, 2.8), _u(rng, 0.7, 1.1)
    foot, sh = _u(rng, 0.0, 0.15), _u(rng, 0.35, 0.5)
    parts: list = [_box(-w / 2, w / 2, -d / 2, d / 2, foot, sh - 0.1)]
    n = int(rng.integers(1, 5))
    edges = np.linspace(-w / 2 + 0.15, w / 2 - 0.15, n + 1)
    for a, b in zip(edges[:-1], edges[1:]):  # seat cushions
        parts.append(_box(a + 0.005, b - 0.005, -d / 2, d / 2 - 0.15, sh - 0.1, sh))
    bh = _u(rng, 0.6, 1.0)
    bt = _u(rng, 0.1, 0.25)
    if rng.random() < 0.5:
        parts.append(_box(-w / 2, w / 2, d / 2 - bt, d / 2, foot, bh))
    else:
        parts.append(Tilted(_box(-w / 2, w / 2, d / 2 - bt, d / 2, foot, bh), (0.0, d / 2, foot), roll=-_u(rng, 0.05, 0.25)))
    arms = rng.choice(["box", "roll", "none"], p=[0.5, 0.3, 0.2])
    ah = _u(rng, 0.5, 0.7)
    for sx in (-1, 1):
        if arms == "box":
            aw = _u(rng, 0.08, 0.25)
            parts.append(_box(sx * w / 2 - (aw if sx > 0 else 0), sx * w / 2 + (0 if sx > 0 else aw), -d / 2, d / 2, foot, ah))
        elif arms == "roll":
            r = _u(rng, 0.08, 0.14)
            x = sx * (w / 2 - r)
            parts.append(_rod((x, -d / 2 + r, ah - r), (x, d / 2 - r, ah - r), r))
            parts.append(_box(x - r, x + r, -d / 2, d / 2, foot, ah - r))
    if foot > 0.03:
        parts += _legs(rng, w, d, foot, 0.05, 4)
    if rng.random() < 0.3:  # a chaise
        parts.append(_box(w / 2 - _u(rng, 0.6, 0.9), w / 2, -d / 2 - _u(rng, 0.4, 0.8), -d / 2, foot, sh))
    return Shape("sofa_like", tuple(parts), 1)


def storage(rng: Rng) -> Shape:
    """Cabinets, dressers, bookcases, wardrobes, sideboards, hutches."""
    w, d, h = _u(rng, 0.3, 2.0), _u(rng, 0.25, 0.7), _u(rng, 0.4, 2.2)
    base = _u(rng, 0.0, 0.2) if rng.random() < 0.6 else 0.0
    parts: list = []
    open_front = rng.random() < 0.4
    t = _u(rng, 0.015, 0.04)
    if open_front:
        parts += [_box(-w / 2, -w / 2 + t, -d / 2, d / 2, base, h), _box(w / 2 - t, w / 2, -d / 2, d / 2, base, h)]
        parts.append(_box(-w / 2, w / 2, d / 2 - t, d / 2, base, h))
        for z in np.linspace(base, h - t, int(rng.integers(2, 7))):
            parts.append(_box(-w / 2 + t, w / 2 - t, -d / 2, d / 2 - t, z, z + t))
        if rng.random() < 0.3 and w > 0.8:  # a middle divider
            parts.append(_box(-t / 2, t / 2, -d / 2, d / 2, base, h))
    else:
        parts.append(_box(-w / 2, w / 2, -d / 2, d / 2, base, h))
        rows = int(rng.integers(1, 6))
        cols = int(rng.integers(1, 4))
        handle = rng.choice(["bar", "knob", "slot", "none"])
        zs = np.linspace(base, h, rows + 1)
        xs = np.linspace(-w / 2, w / 2, cols + 1)
        for i in range(rows):
            for j in range(cols):
                x, z = (xs[j] + xs[j + 1]) / 2, zs[i] + (zs[i + 1] - zs[i]) * 0.8
                if handle == "bar":
                    hw = min(0.08, (xs[j + 1] - xs[j]) * 0.3)
                    parts.append(_rod((x - hw, -d / 2 - 0.025, z), (x + hw, -d / 2 - 0.025, z), 0.008))
                elif handle == "knob":
                    parts.append(Sphere((x, -d / 2 - 0.015, z), 0.015))
                elif handle == "slot":
                    parts.append(_box(x - 0.06, x + 0.06, -d / 2 - 0.01, -d / 2, z - 0.01, z + 0.01))
    if base > 0.03:
        if rng.random() < 0.5:
            parts += _legs(rng, w, d, base, _u(rng, 0.03, 0.05), 4)
        else:
            parts.append(_box(-w / 2 + 0.03, w / 2 - 0.03, -d / 2 + 0.03, d / 2 - 0.03, 0.0, base))
    if rng.random() < 0.4:
        o = _u(rng, 0.0, 0.05)
        parts.append(_box(-w / 2 - o, w / 2 + o, -d / 2 - o, d / 2, h, h + _u(rng, 0.02, 0.05)))
    if not open_front and h < 1.2 and rng.random() < 0.25:  # a hutch on top
        hh = _u(rng, 0.4, 0.9)
        parts.append(_box(-w / 2, w / 2, d / 2 - d * 0.5, d / 2, h, h + hh))
    return Shape("storage", tuple(parts), 1)


def pole_lamp(rng: Rng) -> Shape:
    h = _u(rng, 0.4, 2.0)
    parts: list = []
    base = rng.choice(["disc", "cone", "star", "box"])
    br = _u(rng, 0.08, 0.25)
    if base == "disc":
        parts.append(_cyl(0, 0, 0, _u(rng, 0.015, 0.05), br))
    elif base == "cone":
        parts.append(_cone(0, 0, 0, _u(rng, 0.04, 0.2), br, br * 0.3))
    elif base == "star":
        parts += _star_base(rng, br * 1.5, 0.08, 0.025)
    else:
        parts.append(_box(-br, br, -br, br, 0, 0.04))
    r = _u(rng, 0.008, 0.03)
    # A pole bent into 1-3 straight pieces.
    pts = [np.array([0.0, 0.0, 0.02])]
    n_seg = int(rng.integers(1, 4))
    for k in range(n_seg):
        z = h * (k + 1) / n_seg
        drift = 0.0 if k == 0 else _u(rng, -0.3, 0.3)
        pts.append(np.array([pts[-1][0] + drift, pts[-1][1] + _u(rng, -0.1, 0.1) * (k > 0), z]))
    parts += [_rod(a, b, r) for a, b in zip(pts[:-1], pts[1:])]
    top = pts[-1]
    heads = int(rng.choice([1, 1, 1, 2, 3]))
    for k in range(heads):
        c = top if k == 0 else top + np.array([_u(rng, -0.35, 0.35), _u(rng, -0.35, 0.35), _u(rng, -0.3, 0.0)])
        if k > 0:
            parts.append(_rod(top, c, r * 0.7))
        kind = rng.choice(["shade", "sphere", "cylinder", "tilted"])
        sh = _u(rng, 0.1, 0.4)
        if kind == "shade":
            parts.append(_cone(c[0], c[1], c[2] - sh * 0.6, c[2] + sh * 0.4, _u(rng, 0.1, 0.3), _u(rng, 0.05, 0.15)))
        elif kind == "sphere":
            parts.append(Sphere(tuple(c + np.array([0, 0, sh * 0.4])), sh * 0.5))
        elif kind == "cylinder":
            parts.append(_cyl(c[0], c[1], c[2] - sh * 0.5, c[2] + sh * 0.5, _u(rng, 0.06, 0.2)))
        else:
            parts.append(Tilted(_cone(c[0], c[1], c[2] - sh, c[2], sh * 0.7, 0.03), tuple(c), roll=_u(rng, 0.4, 1.2)))
    return Shape("pole_lamp", tuple(parts), 0 if heads == 1 and n_seg == 1 and base != "star" else 1)


def bed_like(rng: Rng) -> Shape:
    w, length = _u(rng, 0.8, 2.0), _u(rng, 1.6, 2.3)
    fh, mt = _u(rng, 0.1, 0.45), _u(rng, 0.1, 0.3)
    parts: list = [_box(-w / 2, w / 2, -length / 2, length / 2, _u(rng, 0.0, 0.1), fh)]
    parts.append(_box(-w / 2 + 0.02, w / 2 - 0.02, -length / 2 + 0.02, length / 2 - 0.05, fh, fh + mt))
    head = rng.choice(["slab", "posts", "none"], p=[0.6, 0.2, 0.2])
    hh = _u(rng, 0.6, 1.4)
    if head == "slab":
        parts.append(_box(-w / 2, w / 2, length / 2 - 0.06, length / 2 + 0.02, 0.0, hh))
    elif head == "posts":
        for sx in (-1, 1):
            parts.append(_cyl(sx * (w / 2 - 0.03), length / 2, 0, hh, 0.03))
        parts.append(_box(-w / 2, w / 2, length / 2 - 0.02, length / 2 + 0.02, hh * 0.5, hh * 0.9))
    if rng.random() < 0.4:  # footboard
        parts.append(_box(-w / 2, w / 2, -length / 2 - 0.02, -length / 2 + 0.04, 0.0, fh + mt + _u(rng, 0.0, 0.3)))
    for x in np.linspace(-w / 4, w / 4, int(rng.integers(0, 3))) if w > 1.2 else ([0.0] if rng.random() < 0.5 else []):
        pw = min(0.6, w / 2.2)
        parts.append(_box(x - pw / 2, x + pw / 2, length / 2 - 0.5, length / 2 - 0.1, fh + mt, fh + mt + _u(rng, 0.06, 0.15)))
    return Shape("bed_like", tuple(parts), 1)


def vessel(rng: Rng) -> Shape:
    """Vases, bins, pots, buckets, barrels, bottles: a profile of stacked frustums, rims and handles."""
    h = _u(rng, 0.1, 1.0)
    n = int(rng.integers(1, 5))
    radii = rng.uniform(0.04, 0.35, n + 1) * (0.4 + h)
    zs = np.sort(np.concatenate([[0.0, h], rng.uniform(0.05, 0.95, n - 1) * h]))
    parts: list = [_cone(0, 0, zs[k], zs[k + 1], radii[k], radii[k + 1]) for k in range(n)]
    if rng.random() < 0.4:
        parts.append(Torus((0.0, 0.0, h), float(radii[-1]), _u(rng, 0.006, 0.025)))
    sym = 0
    if rng.random() < 0.3:
        hr = _u(rng, 0.03, 0.12) * (0.4 + h)
        for sx in (-1, 1) if rng.random() < 0.6 else (1,):
            parts.append(Torus((sx * float(radii[n // 2]), 0.0, float(zs[n // 2] + (zs[-1] - zs[0]) * 0.2)), hr, _u(rng, 0.006, 0.02), upright=True))
        sym = 1
    return Shape("vessel", tuple(parts), sym)


def box_stack(rng: Rng) -> Shape:
    """Crates, boxes and cases stacked (each turned a little), or one case standing on end."""
    parts: list = []
    z = 0.0
    w, d = _u(rng, 0.2, 0.9), _u(rng, 0.2, 0.7)
    for _ in range(int(rng.integers(1, 5))):
        h = _u(rng, 0.1, 0.6)
        w, d = w * _u(rng, 0.6, 1.1), d * _u(rng, 0.6, 1.1)
        ox, oy = _u(rng, -0.1, 0.1) * w, _u(rng, -0.1, 0.1) * d
        b = _box(ox - w / 2, ox + w / 2, oy - d / 2, oy + d / 2, z, z + h)
        parts.append(Tilted(b, (ox, oy, z), yaw=_u(rng, -0.3, 0.3)) if rng.random() < 0.5 else b)
        z += h
    return Shape("box_stack", tuple(parts), 1 if len(parts) > 1 else 2)


def appliance(rng: Rng) -> Shape:
    """Boxy machines with round doors, handles, feet and a control strip; monitors and TVs on stands."""
    if rng.random() < 0.4:  # a screen on a stand
        w, h = _u(rng, 0.4, 1.6), _u(rng, 0.25, 0.9)
        t, neck = _u(rng, 0.02, 0.08), _u(rng, 0.05, 0.3)
        parts: list = [_box(-w / 2, w / 2, -t / 2, t / 2, neck, neck + h), _rod((0, t, 0.01), (0, t, neck + h * 0.3), 0.02)]
        parts.append(_box(-w * 0.2, w * 0.2, -0.1, 0.15, 0, 0.015) if rng.random() < 0.5 else _cyl(0, 0.03, 0, 0.015, _u(rng, 0.08, 0.2)))
        return Shape("appliance", tuple(parts), 1)
    w, d, h = _u(rng, 0.4, 0.9), _u(rng, 0.4, 0.8), _u(rng, 0.4, 2.0)
    parts = [_box(-w / 2, w / 2, -d / 2, d / 2, 0.03, h)]
    parts += [_cyl(sx * (w / 2 - 0.05), sy * (d / 2 - 0.05), 0, 0.03, 0.02) for sx in (-1, 1) for sy in (-1, 1)]
    if rng.random() < 0.5:  # a round door
        r = _u(rng, 0.12, 0.3) * min(w, h)
        zc = _u(rng, 0.3, 0.6) * h
        parts.append(Torus((0.0, -d / 2 - 0.01, zc), r, 0.025, upright=True))
    else:
        zc = _u(rng, 0.4, 0.8) * h
        parts.append(_rod((w / 2 - 0.06, -d / 2 - 0.03, zc - 0.2), (w / 2 - 0.06, -d / 2 - 0.03, zc + 0.2), 0.012))
    if rng.random() < 0.4:
        parts.append(_box(-w / 2, w / 2, d / 2 - 0.08, d / 2, h, h + _u(rng, 0.05, 0.15)))
    return Shape("appliance", tuple(parts), 1)


def assembly(rng: Rng) -> Shape:
    """A random assembly of 2-7 primitives, each touching the last: odd objects of no named kind."""
    parts: list = []
    top = np.zeros(3)
    scale = _u(rng, 0.2, 1.2)
    for _ in range(int(rng.integers(2, 8))):
        kind = rng.choice(["box", "cyl", "cone", "sphere", "rod", "torus"])
        s = scale * rng.uniform(0.1, 0.6, 3)
        c = top + np.array([_u(rng, -0.5, 0.5) * scale, _u(rng, -0.5, 0.5) * scale, 0.0])
        if kind == "box":
            parts.append(_box(c[0] - s[0] / 2, c[0] + s[0] / 2, c[1] - s[1] / 2, c[1] + s[1] / 2, c[2], c[2] + s[2]))
        elif kind == "cyl":
            parts.append(_cyl(c[0], c[1], c[2], c[2] + s[2], s[0] / 2))
        elif kind == "cone":
            parts.append(_cone(c[0], c[1], c[2], c[2] + s[2], s[0] / 2, s[1] / 4))
        elif kind == "sphere":
            parts.append(Sphere((c[0], c[1], c[2] + s[0] / 2), s[0] / 2))
            s[2] = s[0]
        elif kind == "rod":
            tip = c + np.array([_u(rng, -1, 1) * s[0], _u(rng, -1, 1) * s[1], s[2]])
            parts.append(_rod(c, tip, max(0.01, s[0] * 0.1)))
        else:
            parts.append(Torus((c[0], c[1], c[2] + s[1] * 0.15), s[0] / 2, max(0.01, s[1] * 0.15)))
            s[2] = s[1] * 0.3
        top = np.array([c[0], c[1], c[2] + s[2]])
    return Shape("assembly", tuple(parts), 1)


# Held-out families (never trained on): they measure generalisation to unseen kinds of object.


def plant(rng: Rng) -> Shape:
    ph, pr = _u(rng, 0.1, 0.5), _u(rng, 0.08, 0.3)
    parts: list = [_cone(0, 0, 0, ph, pr * _u(rng, 0.6, 1.0), pr)]
    h = ph + _u(rng, 0.2, 1.5)
    parts.append(_rod((0, 0, ph), (_u(rng, -0.05, 0.05), _u(rng, -0.05, 0.05), h), _u(rng, 0.01, 0.03)))
    spread = _u(rng, 0.15, 0.5)
    for _ in range(int(rng.integers(2, 9))):
        c = (_u(rng, -spread, spread), _u(rng, -spread, spread), _u(rng, ph + 0.1, h + 0.1))
        parts.append(Sphere(c, _u(rng, 0.08, 0.3)))
        parts.append(_rod((0, 0, min(c[2], h) * 0.8), c, 0.01))
    return Shape("plant", tuple(parts), 1)


def rack(rng: Rng) -> Shape:
    """Coat stands and clothes rails: a frame of rods with hooks or a bar."""
    h = _u(rng, 1.2, 1.9)
    r = _u(rng, 0.01, 0.025)
    if rng.random() < 0.5:  # coat stand
        parts: list = [_rod((0, 0, 0.02), (0, 0, h), r * 1.5)]
        parts += _star_base(rng, _u(rng, 0.2, 0.35), 0.12, 0.03)
        for a in np.arange(int(rng.integers(3, 7))) * 2 * np.pi / 6:
            parts.append(_rod((0, 0, h - 0.15), (0.18 * np.cos(a), 0.18 * np.sin(a), h), r))
        return Shape("rack", tuple(parts), 1)
    w = _u(rng, 0.8, 1.6)
    parts = [_rod((sx * w / 2, 0, 0.02), (sx * w / 2, 0, h), r) for sx in (-1, 1)]
    parts.append(_rod((-w / 2, 0, h), (w / 2, 0, h), r))
    for sx in (-1, 1):
        parts.append(_rod((sx * w / 2, -0.25, 0.02), (sx * w / 2, 0.25, 0.02), r))
    if rng.random() < 0.5:
        parts.append(_box(-w / 2, w / 2, -0.2, 0.2, 0.15, 0.17))
    return Shape("rack", tuple(parts), 2)


def ladder_like(rng: Rng) -> Shape:
    """Step ladders and library steps: slanted rails with rungs or treads."""
    h, w = _u(rng, 0.5, 1.8), _u(rng, 0.35, 0.6)
    spread = _u(rng, 0.15, 0.4) * h
    r = _u(rng, 0.012, 0.03)
    parts: list = []
    for sx in (-1, 1):
        x = sx * w / 2
        parts.append(_rod((x, -spread, 0.02), (x, 0, h), r))
        parts.append(_rod((x, spread, 0.02), (x, 0, h), r))
    for z in np.linspace(0.2, h - 0.15, int(rng.integers(2, 6))):
        y = -spread * (1 - z / h)
        parts.append(_box(-w / 2, w / 2, y - 0.06, y + 0.06, z - 0.015, z + 0.015) if rng.random() < 0.6 else _rod((-w / 2, y, z), (w / 2, y, z), r))
    parts.append(_box(-w / 2, w / 2, -0.1, 0.1, h, h + 0.03))
    return Shape("ladder_like", tuple(parts), 1)


WIDE: dict[str, Callable[[Rng], Shape]] = {
    "table_like": table_like,
    "seat": seat,
    "sofa_like": sofa_like,
    "storage": storage,
    "pole_lamp": pole_lamp,
    "bed_like": bed_like,
    "vessel": vessel,
    "box_stack": box_stack,
    "appliance": appliance,
    "assembly": assembly,
}
HELD_OUT: dict[str, Callable[[Rng], Shape]] = {"plant": plant, "rack": rack, "ladder_like": ladder_like}


def _bounds(part) -> tuple[np.ndarray, np.ndarray]:
    """Axis-aligned bounds of one part (exact, or a tight cover for tilted round parts)."""
    if isinstance(part, Tilted):
        lo, hi = _bounds(part.part)
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        pv = np.asarray(part.pivot)
        moved = (corners - pv) @ rotation_matrix(part.yaw, part.pitch, part.roll).T + pv
        return moved.min(0), moved.max(0)
    if isinstance(part, Capsule):
        ends = np.array([part.a, part.b])
        return ends.min(0) - part.radius, ends.max(0) + part.radius
    if isinstance(part, Box):
        half = np.asarray(part.half)
    elif isinstance(part, Cylinder):
        half = np.array([part.radius, part.radius, part.half_height])
    elif isinstance(part, Cone):
        r = max(part.r_bottom, part.r_top)
        half = np.array([r, r, part.half_height])
    elif isinstance(part, Sphere):
        half = np.full(3, part.radius)
    else:  # Torus
        ring = part.major + part.minor
        half = np.array([ring, part.minor, ring]) if part.upright else np.array([ring, ring, part.minor])
    return np.asarray(part.center) - half, np.asarray(part.center) + half


def _moved(part, off: np.ndarray):
    add = lambda p: tuple(float(v) for v in np.add(p, off))  # noqa: E731
    if isinstance(part, Capsule):
        return replace(part, a=add(part.a), b=add(part.b))
    if isinstance(part, Tilted):
        return replace(part, part=_moved(part.part, off), pivot=add(part.pivot))
    return replace(part, center=add(part.center))


def make_wide(category: str, rng: Rng) -> Shape:
    """One object of a family, moved to the canonical frame (footprint centred, standing on z = 0)."""
    try:
        shape = {**WIDE, **HELD_OUT}[category](rng)
    except KeyError:
        raise ValueError(f"unknown category {category!r}") from None
    bounds = [_bounds(p) for p in shape.parts]
    lo, hi = np.min([b[0] for b in bounds], axis=0), np.max([b[1] for b in bounds], axis=0)
    off = -np.array([(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, lo[2]])
    return replace(shape, parts=tuple(_moved(p, off) for p in shape.parts))
