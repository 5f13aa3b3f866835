"""Object families the training generator never draws, as triangle meshes with random proportions.

Local frame (metres): z up from the floor, centred in x and y, the back (a desk's far edge, a
bookshelf's back panel, a bed's headboard, a chair's backrest) towards +y. What a person would
move as one thing is one object: a bookshelf with its books, a bed with its pillows, a pot with
its plant; a monitor on a desk and each box of a stack are objects of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .mesh import Mesh, box, ellipsoid, frustum, tilt_matrix, yaw_matrix

Color = tuple[int, int, int]
WOODS: tuple[Color, ...] = ((150, 111, 72), (186, 150, 105), (96, 70, 48), (205, 185, 150))
PAINTS: tuple[Color, ...] = ((235, 235, 230), (60, 60, 65), (140, 145, 150), (200, 60, 50), (70, 110, 160), (95, 140, 90))
FABRICS: tuple[Color, ...] = ((40, 40, 45), (120, 30, 40), (50, 80, 130), (170, 160, 140), (90, 110, 80))


@dataclass(frozen=True)
class Item:
    """One object in its local frame."""

    category: str
    parts: tuple[Mesh, ...]
    knee: tuple[float, float] | None = None  # x span under a top where a chair can be pushed in
    reach: float = 0.0  # how far (m) under the top's front edge a pushed-in chair's front may go

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        verts = np.concatenate([p.vertices for p in self.parts])
        return verts.min(0), verts.max(0)


def _pick(rng: np.random.Generator, colors: tuple[Color, ...]) -> Color:
    return colors[int(rng.integers(len(colors)))]


def _drawers(x0: float, x1: float, y: float, z0: float, z1: float, n: int, color: Color, handle: Color) -> list[Mesh]:
    """``n`` drawer fronts stacked between ``z0`` and ``z1`` on the face at ``y`` (front: -y), with handles."""
    parts = []
    step = (z1 - z0) / n
    for k in range(n):
        lo, hi = z0 + k * step + 0.004, z0 + (k + 1) * step - 0.004
        parts.append(box((x0 + 0.004, y - 0.015, lo), (x1 - 0.004, y, hi), color))
        mid, cz = (x0 + x1) / 2, (lo + hi) / 2
        parts.append(box((mid - 0.05, y - 0.035, cz - 0.01), (mid + 0.05, y - 0.015, cz + 0.01), handle))
    return parts


def desk(rng: np.random.Generator) -> Item:
    w, d, h, t = rng.uniform(1.1, 1.8), rng.uniform(0.6, 0.8), rng.uniform(0.71, 0.76), rng.uniform(0.025, 0.04)
    wood, body = _pick(rng, WOODS), _pick(rng, PAINTS)
    parts = [box((-w / 2, -d / 2, h - t), (w / 2, d / 2, h), wood)]
    ped_w = rng.uniform(0.38, 0.45)
    sides = [-1, 1] if rng.random() < 0.35 else [int(rng.choice([-1, 1]))]
    for s in (-1, 1):
        outer = s * w / 2
        inner = outer - s * ped_w
        if s in sides:  # a pedestal of drawers
            x0, x1 = min(outer, inner), max(outer, inner)
            parts.append(box((x0, -d / 2 + 0.02, 0.0), (x1, d / 2 - 0.02, h - t), body))
            parts += _drawers(x0, x1, -d / 2 + 0.02, 0.05, h - t - 0.01, int(rng.integers(2, 5)), body, (90, 90, 95))
        else:  # a panel leg
            x = outer - s * 0.03
            parts.append(box((min(x, outer), -d / 2 + 0.03, 0.0), (max(x, outer), d / 2 - 0.03, h - t), body))
    if rng.random() < 0.6:  # modesty panel at the back
        parts.append(box((-w / 2 + 0.03, d / 2 - 0.04, h - t - rng.uniform(0.3, 0.45)), (w / 2 - 0.03, d / 2 - 0.02, h - t), body))
    knee = (-w / 2 + (ped_w if -1 in sides else 0.03) + 0.02, w / 2 - (ped_w if 1 in sides else 0.03) - 0.02)
    return Item("desk", tuple(parts), knee, d - 0.12)


def monitor(rng: np.random.Generator) -> Item:
    sw, sh, st = rng.uniform(0.48, 0.72), rng.uniform(0.30, 0.42), rng.uniform(0.015, 0.05)
    neck = rng.uniform(0.10, 0.22)
    dark = (30, 30, 35)
    parts = [
        box((-0.11, -0.09, 0.0), (0.11, 0.09, 0.015), dark),
        box((-0.025, 0.02, 0.015), (0.025, 0.05, neck + 0.05), dark),
        box((-sw / 2, -st / 2, neck), (sw / 2, st / 2, neck + sh), dark),
    ]
    return Item("monitor", tuple(parts))


def office_chair(rng: np.random.Generator) -> Item:
    """Five-star base on casters, gas column, seat, tilted backrest, sometimes armrests."""
    fabric, metal = _pick(rng, FABRICS), (50, 50, 55)
    seat_h, seat_w, seat_d = rng.uniform(0.42, 0.52), rng.uniform(0.45, 0.52), rng.uniform(0.42, 0.5)
    arm = rng.uniform(0.28, 0.34)
    spin = rng.uniform(0, 2 * np.pi)
    parts = []
    for k in range(5):
        rot = yaw_matrix(spin + k * 2 * np.pi / 5)
        parts.append(box((0.0, -0.02, 0.05), (arm, 0.02, 0.08), metal).moved(rot, (0, 0, 0)))
        parts.append(ellipsoid(tuple(rot @ np.array([arm - 0.02, 0.0, 0.03])), (0.03, 0.02, 0.03), metal, 5, 8))
    parts.append(frustum(0, 0, 0.06, seat_h - 0.08, 0.04, 0.025, metal, 12))
    parts.append(box((-seat_w / 2, -seat_d / 2, seat_h - 0.08), (seat_w / 2, seat_d / 2, seat_h), fabric))
    back_h, lean = rng.uniform(0.45, 0.75), rng.uniform(0.08, 0.25)
    back = box((-seat_w / 2 + 0.02, -0.03, 0.0), (seat_w / 2 - 0.02, 0.03, back_h), fabric).moved(
        tilt_matrix(-lean, 0), (0, seat_d / 2 - 0.02, seat_h + 0.06)
    )
    parts += [back, box((-0.03, seat_d / 2 - 0.08, seat_h - 0.06), (0.03, seat_d / 2, seat_h + 0.1), metal)]
    if rng.random() < 0.6:
        for s in (-1, 1):
            x = s * (seat_w / 2 + 0.01)
            parts.append(box((x - 0.02, -0.02, seat_h), (x + 0.02, 0.02, seat_h + 0.2), metal))
            parts.append(box((x - 0.035, -0.15, seat_h + 0.2), (x + 0.035, 0.12, seat_h + 0.23), (30, 30, 30)))
    return Item("office chair", tuple(parts))


def bookshelf(rng: np.random.Generator) -> Item:
    w, d, h = rng.uniform(0.6, 1.2), rng.uniform(0.25, 0.4), rng.uniform(1.2, 2.1)
    board, wood = rng.uniform(0.018, 0.03), _pick(rng, WOODS + PAINTS[:2])
    parts = [
        box((-w / 2, -d / 2, 0), (-w / 2 + board, d / 2, h), wood),
        box((w / 2 - board, -d / 2, 0), (w / 2, d / 2, h), wood),
        box((-w / 2, d / 2 - 0.01, 0), (w / 2, d / 2, h), wood),
        box((-w / 2, -d / 2, h - board), (w / 2, d / 2, h), wood),
        box((-w / 2, -d / 2, 0), (w / 2, d / 2, 0.06), wood),
    ]
    n = int(np.clip(round(h / rng.uniform(0.3, 0.4)), 3, 7))
    levels = np.linspace(0.06, h - board, n + 1)
    for z0, z1 in zip(levels[:-1], levels[1:]):
        parts.append(box((-w / 2, -d / 2, z0 - board), (w / 2, d / 2 - 0.01, z0), wood))
        parts += _books(-w / 2 + board, w / 2 - board, d, z0, z1 - board, rng)
    return Item("bookshelf", tuple(parts))


def _books(x0: float, x1: float, d: float, z0: float, z1: float, rng: np.random.Generator) -> list[Mesh]:
    """Books standing on one shelf between ``x0`` and ``x1``, filling part of it, maybe one lying stack."""
    parts, x = [], x0 + rng.uniform(0.0, 0.1)
    end = x0 + (x1 - x0) * rng.uniform(0.3, 1.0)
    gap = z1 - z0
    while x < end:
        t, bh, bd = rng.uniform(0.015, 0.05), gap * rng.uniform(0.55, 0.9), min(d - 0.03, rng.uniform(0.15, 0.26))
        color = (int(rng.integers(30, 230)), int(rng.integers(30, 230)), int(rng.integers(30, 230)))
        parts.append(box((x, d / 2 - 0.01 - bd, z0), (min(x + t, x1), d / 2 - 0.01, z0 + bh), color))
        x += t + rng.uniform(0.0, 0.004)
    if end < x1 - 0.25 and rng.random() < 0.5:  # a lying stack in the free space
        z = z0
        for _ in range(int(rng.integers(2, 5))):
            t = rng.uniform(0.02, 0.05)
            parts.append(box((end + 0.03, d / 2 - 0.23, z), (end + 0.24, d / 2 - 0.02, z + t), (int(rng.integers(30, 230)), 60, 60)))
            z += t
    return parts


def bed(rng: np.random.Generator) -> Item:
    w, length = rng.choice([rng.uniform(0.9, 1.0), rng.uniform(1.4, 1.8)]), rng.uniform(1.95, 2.1)
    frame, cloth = _pick(rng, WOODS), _pick(rng, ((240, 240, 235), (200, 210, 225), (225, 205, 190)))
    legs, base = rng.uniform(0.05, 0.15), rng.uniform(0.15, 0.25)
    mat = rng.uniform(0.15, 0.25)
    top = legs + base + mat
    parts = [
        box((-w / 2, -length / 2, legs), (w / 2, length / 2, legs + base), frame),
        box((-w / 2 + 0.02, -length / 2 + 0.02, legs + base), (w / 2 - 0.02, length / 2 - 0.02, top), cloth),
        box((-w / 2, length / 2 - 0.05, 0.0), (w / 2, length / 2, top + rng.uniform(0.3, 0.6)), frame),
    ]
    for sx in (-1, 1):
        for sy in (-1, 1):
            x, y = sx * (w / 2 - 0.04), sy * (length / 2 - 0.04)
            parts.append(box((x - 0.03, y - 0.03, 0.0), (x + 0.03, y + 0.03, legs), frame))
    if rng.random() < 0.6:  # a duvet hanging over the sides
        parts.append(box((-w / 2 - 0.03, -length / 2 - 0.02, top - 0.15), (w / 2 + 0.03, length / 2 - 0.5, top + 0.04), _pick(rng, FABRICS)))
    n_pillows = 1 if w < 1.2 else 2
    for k in range(n_pillows):
        cx = 0.0 if n_pillows == 1 else (k - 0.5) * w / 2
        parts.append(ellipsoid((cx, length / 2 - 0.3, top + 0.06), (min(0.32, w / 2 / n_pillows + 0.05), 0.2, 0.08), (245, 245, 245)))
    return Item("bed", tuple(parts))


def nightstand(rng: np.random.Generator) -> Item:
    w, d, h = rng.uniform(0.4, 0.55), rng.uniform(0.35, 0.45), rng.uniform(0.45, 0.6)
    wood = _pick(rng, WOODS + PAINTS[:1])
    parts = [box((-w / 2, -d / 2 + 0.015, 0.0), (w / 2, d / 2, h), wood)]
    parts += _drawers(-w / 2, w / 2, -d / 2 + 0.015, 0.04, h - 0.02, int(rng.integers(1, 4)), wood, (180, 170, 120))
    return Item("nightstand", tuple(parts))


def floor_lamp(rng: np.random.Generator) -> Item:
    metal, shade = _pick(rng, ((40, 40, 40), (200, 190, 160), (180, 180, 185))), _pick(rng, ((245, 235, 210), (230, 230, 230), (60, 60, 60)))
    pole = rng.uniform(1.3, 1.8)
    parts = [
        frustum(0, 0, 0.0, rng.uniform(0.02, 0.04), rng.uniform(0.13, 0.18), rng.uniform(0.1, 0.16), metal),
        frustum(0, 0, 0.02, pole, 0.013, 0.013, metal, 8),
    ]
    sh = rng.uniform(0.2, 0.32)
    if rng.random() < 0.35:  # an arm carrying the shade off the pole
        reach = rng.uniform(0.25, 0.45)
        parts.append(box((0.0, -0.01, pole - 0.02), (reach, 0.01, pole), metal))
        parts.append(frustum(reach, 0, pole - sh, pole - 0.02, rng.uniform(0.15, 0.22), rng.uniform(0.06, 0.1), shade))
    else:
        parts.append(frustum(0, 0, pole - 0.05, pole - 0.05 + sh, rng.uniform(0.16, 0.24), rng.uniform(0.1, 0.16), shade))
    return Item("floor lamp", tuple(parts))


def potted_plant(rng: np.random.Generator) -> Item:
    r0, r1, ph = rng.uniform(0.09, 0.15), rng.uniform(0.13, 0.22), rng.uniform(0.2, 0.45)
    parts = [frustum(0, 0, 0.0, ph, r0, r1, _pick(rng, ((170, 90, 60), (230, 230, 225), (60, 60, 60))))]
    green = (int(rng.integers(40, 80)), int(rng.integers(100, 150)), int(rng.integers(40, 80)))
    tall = rng.uniform(0.3, 1.2)
    parts.append(frustum(0, 0, ph - 0.02, ph + tall * 0.6, 0.015, 0.01, (90, 70, 40), 6))
    for _ in range(int(rng.integers(4, 9))):
        c = (rng.normal(0, r1 * 0.8), rng.normal(0, r1 * 0.8), ph + rng.uniform(0.3, 1.0) * tall)
        parts.append(ellipsoid(c, tuple(rng.uniform([0.08, 0.08, 0.05], [0.22, 0.22, 0.15])), green, 6, 10))
    return Item("plant", tuple(parts))


def cardboard_box(rng: np.random.Generator) -> Item:
    w, d, h = rng.uniform(0.3, 0.6), rng.uniform(0.25, 0.5), rng.uniform(0.2, 0.45)
    tone = int(rng.integers(-20, 20))
    parts = [box((-w / 2, -d / 2, 0.0), (w / 2, d / 2, h), (190 + tone, 150 + tone, 100 + tone))]
    if rng.random() < 0.5:  # tape along the top
        parts.append(box((-0.025, -d / 2, h), (0.025, d / 2, h + 0.002), (210, 200, 170)))
    return Item("box", tuple(parts))


def wardrobe(rng: np.random.Generator) -> Item:
    w, d, h = rng.uniform(0.8, 1.6), rng.uniform(0.55, 0.65), rng.uniform(1.8, 2.2)
    color = _pick(rng, WOODS + PAINTS[:3])
    doors = 2 if w < 1.1 else 3
    parts = [
        box((-w / 2, -d / 2 + 0.02, 0.0), (w / 2, d / 2, h), color),
        box((-w / 2 + 0.02, -d / 2 + 0.01, 0.0), (w / 2 - 0.02, -d / 2 + 0.02, 0.08), color),
    ]
    for k in range(doors):
        x0 = -w / 2 + k * w / doors + 0.003
        x1 = x0 + w / doors - 0.006
        parts.append(box((x0, -d / 2, 0.09), (x1, -d / 2 + 0.02, h - 0.01), color))
        hx = x1 - 0.05 if k % 2 == 0 else x0 + 0.05
        parts.append(box((hx - 0.01, -d / 2 - 0.03, h / 2 - 0.15), (hx + 0.01, -d / 2, h / 2 + 0.15), (150, 150, 150)))
    return Item("wardrobe", tuple(parts))


def dining_table(rng: np.random.Generator) -> Item:
    wood = _pick(rng, WOODS + PAINTS[:1])
    h, t = rng.uniform(0.72, 0.77), rng.uniform(0.02, 0.05)
    w, d = rng.uniform(1.2, 2.0), rng.uniform(0.8, 1.0)
    parts = [box((-w / 2, -d / 2, h - t), (w / 2, d / 2, h), wood)]
    inset = rng.uniform(0.15, 0.3)
    if rng.random() < 0.5:  # trestles: two slabs with a foot each and a stretcher between them
        knee = (-(w / 2 - inset - 0.06), w / 2 - inset - 0.06)
        for s in (-1, 1):
            x = s * (w / 2 - inset)
            parts += [
                box((x - 0.04, -0.08, 0.04), (x + 0.04, 0.08, h - t), wood),
                box((x - 0.05, -d / 2 + 0.08, 0.0), (x + 0.05, d / 2 - 0.08, 0.05), wood),
            ]
        parts.append(box((-w / 2 + 0.3, -0.03, 0.25), (w / 2 - 0.3, 0.03, 0.32), wood))
    else:  # four tapered legs and an apron
        knee = (-w / 2 + 0.1, w / 2 - 0.1)
        for sx in (-1, 1):
            for sy in (-1, 1):
                x, y = sx * (w / 2 - 0.07), sy * (d / 2 - 0.07)
                parts.append(frustum(x, y, 0.0, h - t, 0.018, 0.03, wood, 8))
        parts += [
            box((-w / 2 + 0.05, -d / 2 + 0.05, h - t - 0.08), (w / 2 - 0.05, -d / 2 + 0.07, h - t), wood),
            box((-w / 2 + 0.05, d / 2 - 0.07, h - t - 0.08), (w / 2 - 0.05, d / 2 - 0.05, h - t), wood),
        ]
    return Item("dining table", tuple(parts), knee, d / 2 - 0.08)


def sled_chair(rng: np.random.Generator) -> Item:
    """A chair on two tubular runners (no legs at the corners), or one with splayed round legs and a slatted back."""
    w, d, seat = rng.uniform(0.42, 0.5), rng.uniform(0.42, 0.5), rng.uniform(0.44, 0.48)
    frame, shell = _pick(rng, ((40, 40, 40), (190, 190, 195))), _pick(rng, FABRICS + WOODS)
    parts = [box((-w / 2, -d / 2, seat - 0.03), (w / 2, d / 2, seat), shell)]
    if rng.random() < 0.5:
        for s in (-1, 1):
            x = s * (w / 2 - 0.02)
            parts += [
                box((x - 0.012, -d / 2, 0.0), (x + 0.012, d / 2, 0.02), frame),
                box((x - 0.012, -d / 2 + 0.02, 0.0), (x + 0.012, -d / 2 + 0.045, seat - 0.03), frame),
                box((x - 0.012, d / 2 - 0.045, 0.0), (x + 0.012, d / 2 - 0.02, seat + 0.4), frame),
            ]
        parts.append(box((-w / 2, d / 2 - 0.04, seat + 0.15), (w / 2, d / 2 - 0.01, seat + 0.42), shell))
    else:
        for sx in (-1, 1):
            for sy in (-1, 1):
                x, y = sx * (w / 2 - 0.04), sy * (d / 2 - 0.04)
                parts.append(frustum(x, y, 0.0, seat - 0.03, 0.02, 0.015, frame, 8).moved(tilt_matrix(0.06 * sx, 1), (0, 0, 0)))
        for k in range(int(rng.integers(2, 4))):
            z = seat + 0.12 + k * 0.11
            parts.append(box((-w / 2 + 0.02, d / 2 - 0.03, z), (w / 2 - 0.02, d / 2, z + 0.06), shell))
        for s in (-1, 1):
            x = s * (w / 2 - 0.04)
            parts.append(box((x - 0.015, d / 2 - 0.03, seat), (x + 0.015, d / 2, seat + 0.42), frame))
    return Item("chair", tuple(parts))


def bin_(rng: np.random.Generator) -> Item:
    r, h = rng.uniform(0.12, 0.18), rng.uniform(0.3, 0.45)
    return Item("bin", (frustum(0, 0, 0.0, h, r * 0.85, r, _pick(rng, PAINTS), 14),))
