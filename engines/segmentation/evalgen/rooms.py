"""Room layouts for the evaluation generator: furnished corners, rows and groups, pressed together.

A room is a bedroom, an office or a living room. Its groups put objects where Euclidean
clustering cannot part them: chairs pushed under desks and tables, monitors standing on desks,
nightstands flush with the bed, bookshelves and wardrobes side by side against a wall, boxes
stacked on boxes, plants and lamps in corners. Footprints (shapely) keep everything else apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .furniture import (
    Item,
    bed,
    bin_,
    bookshelf,
    cardboard_box,
    desk,
    dining_table,
    floor_lamp,
    monitor,
    nightstand,
    office_chair,
    potted_plant,
    sled_chair,
    wardrobe,
)
from .mesh import Mesh, box, yaw_matrix

WALL_HEIGHT = 2.6
WALL_YAW = {0: np.pi, 1: -np.pi / 2, 2: 0.0, 3: np.pi / 2}  # turns an item's back (+y) towards wall 0: y=0, 1: x=W, 2: y=D, 3: x=0


@dataclass(frozen=True)
class Placed:
    """An item in the room: yaw about z, then a translation; how it was placed (``note``)."""

    item: Item
    yaw: float
    position: tuple[float, float, float]
    note: str = ""

    def meshes(self) -> list[Mesh]:
        return [m.moved(yaw_matrix(self.yaw), self.position) for m in self.item.parts]

    def local_to_world(self, local: tuple[float, float, float]) -> np.ndarray:
        return yaw_matrix(self.yaw) @ np.asarray(local, dtype=np.float64) + np.asarray(self.position)


def footprint(item: Item, yaw: float, position: tuple[float, float, float]):
    from shapely.geometry import Polygon

    lo, hi = item.bounds()
    corners = np.array([[lo[0], lo[1], 0], [hi[0], lo[1], 0], [hi[0], hi[1], 0], [lo[0], hi[1], 0]])
    return Polygon((corners @ yaw_matrix(yaw).T)[:, :2] + np.asarray(position[:2]))


class Room:
    """The placed items and their footprints (None for things standing on another item)."""

    def __init__(self, width: float, depth: float, rng: np.random.Generator) -> None:
        self.width, self.depth, self.rng = width, depth, rng
        self.placed: list[Placed] = []
        self.polys: list = []

    def add(self, placed: Placed, allow: set[int] = frozenset(), on_floor: bool = True) -> int | None:
        """Index of the new item, or None when its footprint leaves the room or overlaps another (except ``allow``)."""
        poly = footprint(placed.item, placed.yaw, placed.position) if on_floor else None
        if poly is not None:
            minx, miny, maxx, maxy = poly.bounds
            if minx < -1e-6 or miny < -1e-6 or maxx > self.width + 1e-6 or maxy > self.depth + 1e-6:
                return None
            if any(other is not None and k not in allow and poly.intersection(other).area > 1e-4 for k, other in enumerate(self.polys)):
                return None
        self.placed.append(placed)
        self.polys.append(poly)
        return len(self.placed) - 1

    def wall_length(self, wall: int) -> float:
        return self.width if wall in (0, 2) else self.depth

    def against_wall(self, item: Item, wall: int, along: float, gap: float, note: str) -> Placed:
        """``item`` with its back ``gap`` from ``wall`` and its origin at ``along`` on the wall's axis."""
        back = float(item.bounds()[1][1]) + gap
        x, y = {0: (along, back), 1: (self.width - back, along), 2: (along, self.depth - back), 3: (back, along)}[wall]
        return Placed(item, WALL_YAW[wall], (x, y, 0.0), note)

    def along_extent(self, item: Item, wall: int) -> tuple[float, float]:
        """Where the item's footprint starts and ends along the wall, relative to its origin."""
        poly = footprint(item, WALL_YAW[wall], (0.0, 0.0, 0.0))
        lo, hi = (poly.bounds[0], poly.bounds[2]) if wall in (0, 2) else (poly.bounds[1], poly.bounds[3])
        return lo, hi

    def place_on_wall(self, item: Item, wall: int, note: str = "against wall", corner: bool = False) -> int | None:
        lo, hi = self.along_extent(item, wall)
        length = self.wall_length(wall)
        for _ in range(12):
            gap = float(self.rng.uniform(0.0, 0.01))
            if corner:
                along = -lo + gap if self.rng.random() < 0.5 else length - hi - gap
            else:
                along = float(self.rng.uniform(-lo, max(-lo, length - hi)))
            idx = self.add(self.against_wall(item, wall, along, gap, "in corner" if corner else note))
            if idx is not None:
                return idx
        return None

    def beside(self, idx: int, item: Item, wall: int, note: str = "side by side") -> int | None:
        """``item`` against ``wall``, pressed against the side of item ``idx`` (already on that wall)."""
        minx, miny, maxx, maxy = self.polys[idx].bounds
        a_lo, a_hi = (minx, maxx) if wall in (0, 2) else (miny, maxy)
        lo, hi = self.along_extent(item, wall)
        gap = float(self.rng.uniform(0.0, 0.008))
        for along in [a_hi - lo + gap, a_lo - hi - gap][:: 1 if self.rng.random() < 0.5 else -1]:
            k = self.add(self.against_wall(item, wall, along, float(self.rng.uniform(0.0, 0.01)), note), allow={idx})
            if k is not None:
                return k
        return None

    def free(self, item: Item, note: str = "") -> int | None:
        lo, hi = item.bounds()
        r = float(np.hypot(*(hi - lo)[:2]) / 2)
        for _ in range(25):
            pos = (float(self.rng.uniform(r, self.width - r)), float(self.rng.uniform(r, self.depth - r)), 0.0)
            idx = self.add(Placed(item, float(self.rng.uniform(0, 2 * np.pi)), pos, note))
            if idx is not None:
                return idx
        return None

    def on_top(self, idx: int, item: Item, local_xy: tuple[float, float], yaw: float, note: str) -> int | None:
        """``item`` standing on the highest surface of item ``idx`` at ``local_xy`` (in that item's frame)."""
        base = self.placed[idx]
        pos = base.local_to_world((local_xy[0], local_xy[1], float(base.item.bounds()[1][2])))
        return self.add(Placed(item, base.yaw + yaw, (float(pos[0]), float(pos[1]), float(pos[2])), note), on_floor=False)

    def chair_at(self, idx: int, chair: Item, side: int, x: float, pushed: bool) -> int | None:
        """``chair`` facing item ``idx`` (a desk or table) from its front (side -1) or back (+1), at ``x``
        along it; pushed in until its parts above the top's underside meet the top's edge."""
        top = self.placed[idx]
        t_lo, t_hi = top.item.bounds()
        half = float(t_hi[1] if side > 0 else -t_lo[1])
        under = _underside(top.item)
        c_lo, c_hi = chair.bounds()
        verts = np.concatenate([p.vertices for p in chair.parts])
        high = verts[verts[:, 2] >= under - 0.02]
        knee = top.item.knee
        fits = knee is not None and knee[0] <= x + c_lo[0] and x + c_hi[0] <= knee[1]
        if pushed and fits and len(high):
            depth = min(float(high[:, 1].min() - c_lo[1]), top.item.reach)  # how far the chair's front goes under the top
            dist = half + 0.005 - float(high[:, 1].min()) + max(0.0, float(high[:, 1].min() - c_lo[1]) - depth)
            note = "under desk" if top.item.category == "desk" else "under table"
        else:
            dist = half - float(c_lo[1]) + float(self.rng.uniform(0.05, 0.3))
            note = "at desk" if top.item.category == "desk" else "at table"
        pos = top.local_to_world((x, side * dist, 0.0))
        yaw = top.yaw + (0.0 if side > 0 else np.pi) + float(self.rng.normal(0, 0.04))
        return self.add(Placed(chair, yaw, (float(pos[0]), float(pos[1]), 0.0), note), allow={idx} if note.startswith("under") else set())


def _underside(item: Item) -> float:
    """Height of the lowest part not standing on the floor: the top, its apron or panel."""
    lows = [float(m.vertices[:, 2].min()) for m in item.parts if m.vertices[:, 2].min() > 0.1]
    return min(lows) if lows else 0.6


def work_corner(room: Room, rng: np.random.Generator, wall: int) -> None:
    idx = room.place_on_wall(desk(rng), wall, corner=rng.random() < 0.4)
    if idx is None:
        return
    d = room.placed[idx].item
    lo, hi = d.bounds()
    n_mon = int(rng.integers(1, 3))
    for k in range(n_mon):
        x = (k - (n_mon - 1) / 2) * 0.6 + rng.normal(0, 0.05)
        room.on_top(idx, monitor(rng), (float(np.clip(x, lo[0] + 0.3, hi[0] - 0.3)), float(hi[1] - 0.2)), float(rng.normal(0, 0.1)), "on desk")
    knee = d.knee or (0.0, 0.0)
    room.chair_at(idx, office_chair(rng), -1, float((knee[0] + knee[1]) / 2 + rng.normal(0, 0.05)), rng.random() < 0.7)
    if rng.random() < 0.5:
        room.beside(idx, bin_(rng), wall, "pressed against desk")


def dining_group(room: Room, rng: np.random.Generator) -> None:
    table = dining_table(rng)
    lo, hi = table.bounds()
    r = float(np.hypot(*(hi - lo)[:2]) / 2) + 0.5
    if room.width < 2 * r or room.depth < 2 * r:
        return
    for _ in range(20):
        pos = (float(rng.uniform(r, room.width - r)), float(rng.uniform(r, room.depth - r)), 0.0)
        idx = room.add(Placed(table, float(rng.choice([0.0, np.pi / 2]) + rng.normal(0, 0.05)), pos))
        if idx is not None:
            break
    else:
        return
    knee = table.knee or (lo[0] + 0.3, hi[0] - 0.3)
    for side in (-1, 1):
        n = int(rng.integers(0, 4))
        for x in np.linspace(knee[0] + 0.3, knee[1] - 0.3, n) if n else []:
            room.chair_at(idx, sled_chair(rng), side, float(x + rng.normal(0, 0.03)), rng.random() < 0.6)


def bed_group(room: Room, rng: np.random.Generator, wall: int) -> None:
    idx = room.place_on_wall(bed(rng), wall, corner=rng.random() < 0.3)
    if idx is None:
        return
    for _ in range(int(rng.integers(1, 3))):
        room.beside(idx, nightstand(rng), wall, "pressed against bed")


def storage_row(room: Room, rng: np.random.Generator, wall: int) -> None:
    idx = room.place_on_wall(bookshelf(rng) if rng.random() < 0.6 else wardrobe(rng), wall, corner=rng.random() < 0.5)
    for _ in range(int(rng.integers(0, 3))):
        if idx is None:
            return
        idx = room.beside(idx, bookshelf(rng) if rng.random() < 0.6 else wardrobe(rng), wall)


def box_stack(room: Room, rng: np.random.Generator, wall: int) -> None:
    first = cardboard_box(rng)
    idx = room.place_on_wall(first, wall, corner=rng.random() < 0.5) if rng.random() < 0.7 else room.free(first)
    for _ in range(int(rng.integers(1, 4))):
        if idx is None:
            return
        below = room.placed[idx].item.bounds()
        jitter = (float(rng.uniform(-0.05, 0.05)), float(rng.uniform(-0.05, 0.05)))
        nxt = cardboard_box(rng)
        if nxt.bounds()[1][0] > below[1][0] + 0.1:  # a box much larger than the one below goes beside it on the floor
            idx = room.free(nxt, "")
        else:
            idx = room.on_top(idx, nxt, jitter, float(rng.normal(0, 0.08)), "stacked")


def furnish(room: Room, rng: np.random.Generator, kind: str) -> None:
    """Groups for the room's ``kind``, then single objects until the room holds 5-18 objects."""
    walls = [int(w) for w in rng.permutation(4)]
    if kind == "bedroom":
        bed_group(room, rng, walls[0])
        storage_row(room, rng, walls[1])
        if rng.random() < 0.6:
            work_corner(room, rng, walls[2])
    elif kind == "office":
        for w in walls[: int(rng.integers(1, 4))]:
            work_corner(room, rng, w)
        storage_row(room, rng, walls[-1])
    else:
        dining_group(room, rng)
        storage_row(room, rng, walls[0])
    target = int(rng.integers(5, 19))
    extras = (floor_lamp, potted_plant, office_chair, bin_, box_stack, potted_plant, floor_lamp)
    for _ in range(40):
        if len(room.placed) >= target:
            break
        make = extras[int(rng.integers(len(extras)))]
        if make is box_stack:
            box_stack(room, rng, walls[int(rng.integers(4))])
        elif rng.random() < 0.5 and make in (floor_lamp, potted_plant):
            room.place_on_wall(make(rng), walls[int(rng.integers(4))], corner=True)
        else:
            room.free(make(rng))


def shell(room: Room, rng: np.random.Generator) -> list[Mesh]:
    """Floor and four walls (one with a door), as slabs outside the room's box."""
    w, d, t = room.width, room.depth, 0.1
    floor_c = tuple(int(c) for c in rng.integers([110, 90, 60], [200, 170, 140]))
    wall_c = tuple(int(c) for c in rng.integers([200, 195, 185], [245, 240, 235]))
    meshes = [box((-t, -t, -0.05), (w + t, d + t, 0.0), floor_c)]
    door_wall = int(rng.integers(4))
    for wall in range(4):
        length = room.wall_length(wall)
        if wall != door_wall:
            meshes.append(_wall_slab(wall, 0.0, length, 0.0, WALL_HEIGHT, w, d, t, wall_c))
            continue
        a = float(rng.uniform(0.2, length - 1.1))  # a door 0.9 m wide, 2.1 m high
        meshes += [
            _wall_slab(wall, 0.0, a, 0.0, WALL_HEIGHT, w, d, t, wall_c),
            _wall_slab(wall, a + 0.9, length, 0.0, WALL_HEIGHT, w, d, t, wall_c),
            _wall_slab(wall, a, a + 0.9, 2.1, WALL_HEIGHT, w, d, t, wall_c),
        ]
    return meshes


def _wall_slab(wall: int, s0: float, s1: float, z0: float, z1: float, w: float, d: float, t: float, color) -> Mesh:
    if wall == 0:
        return box((s0, -t, z0), (s1, 0.0, z1), color)
    if wall == 2:
        return box((s0, d, z0), (s1, d + t, z1), color)
    if wall == 1:
        return box((w, s0, z0), (w + t, s1, z1), color)
    return box((-t, s0, z0), (0.0, s1, z1), color)
