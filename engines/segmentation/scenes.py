"""Procedural rooms: floor, some walls, 4-15 pieces of furniture, some of them touching.

Touching is deliberate (chairs pushed under tables, sofas and beds against walls, cabinets and
shelves side by side, things standing on tables): it is where Euclidean clustering fails and the
object prior must not. Scanning is partial (a few viewpoints inside the room, hidden-point
removal), with sensor noise. Ground-truth instance ids ride along for evaluation only.
"""
from __future__ import annotations

from engines.core import EngineError

from dataclasses import dataclass, field

import numpy as np

from .categories import make_shape
from .shapes import Pose, Shape, rotation_matrix
from .views import add_noise, visible_from

WALL_HEIGHT = 2.5
WALL_HUGGERS = ("sofa", "bed", "cabinet", "shelf")
FREE_STANDING = ("chair", "stool", "lamp", "bench", "chair", "stool")


@dataclass(frozen=True)
class SceneParams:
    """How a benchmark room is drawn."""

    n_points: int = 20000
    min_objects: int = 4
    max_objects: int = 15
    noise: float = 0.005
    cameras: tuple[int, int] = (3, 5)

    def __post_init__(self) -> None:
        if not 1000 <= self.n_points <= 2_000_000:
            raise EngineError("n_points must be between 1000 and 2,000,000")
        if not 1 <= self.min_objects <= self.max_objects <= 30:
            raise EngineError("object counts must satisfy 1 <= min <= max <= 30")


@dataclass(frozen=True)
class PlacedObject:
    instance: int
    category: str
    pose: Pose
    note: str = ""  # how it was placed: "under table", "against wall", "side by side", "on table", ""


@dataclass
class Scene:
    """A scanned room: points, colours, ground-truth instance per point (0 = floor, walls)."""

    points: np.ndarray
    colors: np.ndarray
    instance: np.ndarray
    objects: list[PlacedObject]
    touching: list[tuple[int, int]]
    room: tuple[float, float]
    seed: int
    shapes: dict[int, Shape] = field(default_factory=dict, repr=False)

    def meta(self) -> dict:
        return {
            "seed": self.seed,
            "room": list(self.room),
            "points": int(len(self.points)),
            "objects": [
                {"instance": o.instance, "category": o.category, "note": o.note, "points": int((self.instance == o.instance).sum()),
                 "yaw": round(o.pose.yaw, 4), "position": [round(v, 4) for v in o.pose.translation]}
                for o in self.objects
            ],
            "touching": [list(pair) for pair in self.touching],
        }


class _Layout:
    """Places footprints without overlaps, except the overlaps a placement asks for."""

    def __init__(self, width: float, depth: float) -> None:
        self.width, self.depth = width, depth
        self.items: list[tuple[Shape, Pose, str, object]] = []

    @staticmethod
    def footprint(shape: Shape, pose: Pose):
        from shapely.geometry import Polygon

        lo, hi = shape.bounds(1500)
        corners = np.array([[lo[0], lo[1], 0], [hi[0], lo[1], 0], [hi[0], hi[1], 0], [lo[0], hi[1], 0]])
        return Polygon((corners @ rotation_matrix(pose.yaw).T)[:, :2] + np.asarray(pose.translation[:2]))

    def fits(self, poly, allow: set[int] = frozenset()) -> bool:
        minx, miny, maxx, maxy = poly.bounds
        if minx < -1e-6 or miny < -1e-6 or maxx > self.width + 1e-6 or maxy > self.depth + 1e-6:
            return False
        return all(i in allow or poly.intersection(other).area < 1e-4 for i, (_, _, _, other) in enumerate(self.items))

    def add(self, shape: Shape, pose: Pose, note: str, allow: set[int] = frozenset(), check: bool = True) -> int | None:
        poly = self.footprint(shape, pose)
        if check and not self.fits(poly, allow):
            return None
        self.items.append((shape, pose, note, poly))
        return len(self.items) - 1


def _place_table_group(layout: _Layout, rng: np.random.Generator, budget: int) -> None:
    table = make_shape("table", rng)
    lo, hi = table.bounds(1500)
    half = max(hi[0] - lo[0], hi[1] - lo[1]) / 2
    for _ in range(20):
        pos = (rng.uniform(half + 0.6, layout.width - half - 0.6), rng.uniform(half + 0.6, layout.depth - half - 0.6), 0.0)
        yaw = rng.choice([0.0, np.pi / 2]) + rng.normal(0, 0.05)
        t_idx = layout.add(table, Pose(yaw=float(yaw), translation=pos), "")
        if t_idx is not None:
            break
    else:
        return
    budget -= 1
    top_z = hi[2]
    R = rotation_matrix(float(yaw))
    n_chairs = int(rng.integers(1, 5)) if budget > 1 else 0
    round_table = table.symmetry == 0
    underside = _underside(table)
    for k in range(min(n_chairs, budget - 1)):
        chair = make_shape("chair", rng)
        c_pts = chair.sample_surface(2000, rng)
        c_lo, c_hi = c_pts.min(0), c_pts.max(0)
        high = c_pts[c_pts[:, 2] >= underside - 0.02]
        pushed = rng.random() < 0.65 and len(high) > 0
        if round_table:
            ang = rng.uniform(0, 2 * np.pi)
            edge = half
            direction = np.array([np.cos(ang), np.sin(ang), 0.0])
            along = 0.0
        else:
            side = rng.choice([-1.0, 1.0])
            long_axis = 0 if (hi[0] - lo[0]) >= (hi[1] - lo[1]) else 1
            edge = (hi[1 - long_axis] - lo[1 - long_axis]) / 2
            direction = R @ (np.eye(3)[1 - long_axis] * side)
            span = (hi[long_axis] - lo[long_axis]) / 2 - (c_hi[0] - c_lo[0]) / 2 - 0.12
            along_vec = R @ np.eye(3)[long_axis]
            along = rng.uniform(-max(span, 0.0), max(span, 0.0))
        # The chair's back (+y) faces away from the table. Pushed in, everything lower than the
        # table top goes under it and the taller parts (backrest, armrests) stop at its edge.
        if pushed:
            dist = edge + 0.01 - float(high[:, 1].min())
            if round_table:  # keep the seat's front clear of the pedestal
                dist = max(dist, 0.1 - float(c_lo[1]))
        else:
            dist = edge - float(c_lo[1]) + rng.uniform(0.05, 0.3)
        center = np.asarray(pos) + direction * dist + (0 if round_table else along_vec * along)
        chair_yaw = float(np.arctan2(direction[1], direction[0]) - np.pi / 2)
        layout.add(chair, Pose(yaw=chair_yaw, translation=(float(center[0]), float(center[1]), 0.0)),
                   "under table" if pushed else "at table", allow={t_idx} if pushed else set())
    if rng.random() < 0.6:  # things on the table
        for _ in range(int(rng.integers(1, 3))):
            vase = make_shape("vase", rng)
            off = rng.uniform(-0.6, 0.6, 2) * (half * 0.6)
            p = np.asarray(pos[:2]) + off
            allow = {i for i, item in enumerate(layout.items)}  # it stands on the table, over its footprint
            layout.add(vase, Pose(yaw=float(rng.uniform(0, 2 * np.pi)), translation=(float(p[0]), float(p[1]), float(top_z))), "on table", allow=allow)


def _underside(table: Shape) -> float:
    """Height of the lowest part that does not reach the floor (the top or its apron)."""
    lows = []
    for part in table.parts:
        pts = part.sample(200, np.random.default_rng(0))
        if pts[:, 2].min() > 0.1:
            lows.append(pts[:, 2].min())
    return float(min(lows)) if lows else 0.6


def _wall_pose(shape: Shape, layout: _Layout, wall: int, along: float) -> Pose:
    """Pose that puts the shape's back (+y) flat against a wall (0: y=0, 1: x=W, 2: y=D, 3: x=0)."""
    lo, hi = shape.bounds(1500)
    back = hi[1]
    yaw = {0: np.pi, 1: -np.pi / 2, 2: 0.0, 3: np.pi / 2}[wall]
    # After the rotation the local +y axis points into the wall; the back face touches it.
    if wall == 0:
        t = (along, back)
    elif wall == 1:
        t = (layout.width - back, along)
    elif wall == 2:
        t = (along, layout.depth - back)
    else:
        t = (back, along)
    return Pose(yaw=float(yaw), translation=(float(t[0]), float(t[1]), 0.0))


def _place_against_wall(layout: _Layout, rng: np.random.Generator, category: str, walls: list[int]) -> int | None:
    shape = make_shape(category, rng)
    lo, hi = shape.bounds(1500)
    halfw = (hi[0] - lo[0]) / 2
    for _ in range(15):
        wall = int(rng.choice(walls))
        length = layout.width if wall in (0, 2) else layout.depth
        if length < 2 * halfw + 0.1:
            continue
        pose = _wall_pose(shape, layout, wall, float(rng.uniform(halfw + 0.05, length - halfw - 0.05)))
        idx = layout.add(shape, pose, "against wall")
        if idx is not None:
            if rng.random() < 0.5:  # a neighbour flush against its side, along the same wall
                _place_side_by_side(layout, rng, idx, wall)
            return idx
    return None


def _place_side_by_side(layout: _Layout, rng: np.random.Generator, idx: int, wall: int) -> None:
    shape, pose, _, _ = layout.items[idx]
    lo, hi = shape.bounds(1500)
    other = make_shape(str(rng.choice(["cabinet", "shelf"])), rng)
    o_lo, o_hi = other.bounds(1500)
    side = rng.choice([-1.0, 1.0])
    # Offset along the object's local x axis so the two footprints touch.
    offset = (hi[0] if side > 0 else -lo[0]) + (-o_lo[0] if side > 0 else o_hi[0]) + rng.uniform(0.0, 0.01)
    local = np.array([side * offset, 0.0, 0.0])
    world = rotation_matrix(pose.yaw) @ local
    new = _wall_pose(other, layout, wall, 0.0)
    along_axis = 0 if wall in (0, 2) else 1
    t = list(new.translation)
    t[along_axis] = float(np.asarray(pose.translation)[along_axis] + world[along_axis])
    layout.add(other, Pose(yaw=new.yaw, translation=(t[0], t[1], 0.0)), "side by side", allow={idx})


def _place_free(layout: _Layout, rng: np.random.Generator, category: str) -> None:
    shape = make_shape(category, rng)
    lo, hi = shape.bounds(1500)
    r = float(np.hypot(*(hi - lo)[:2]) / 2)
    for _ in range(25):
        pos = (rng.uniform(r, layout.width - r), rng.uniform(r, layout.depth - r), 0.0)
        if layout.add(shape, Pose(yaw=float(rng.uniform(0, 2 * np.pi)), translation=pos), "") is not None:
            return


def _touching_pairs(samples: dict[int, np.ndarray], tol: float = 0.03) -> list[tuple[int, int]]:
    from scipy.spatial import cKDTree

    ids = sorted(samples)
    trees = {i: cKDTree(samples[i]) for i in ids}
    pairs = []
    for a_pos, a in enumerate(ids):
        for b in ids[a_pos + 1:]:
            d, _ = trees[b].query(samples[a], k=1, distance_upper_bound=tol)
            if np.isfinite(d).any():
                pairs.append((a, b))
    return pairs


def generate_scene(seed: int, params: SceneParams = SceneParams()) -> Scene:
    """One scanned room; the same seed and parameters always give the same scene."""
    rng = np.random.default_rng(seed)
    width, depth = float(rng.uniform(4.0, 7.0)), float(rng.uniform(4.0, 7.0))
    layout = _Layout(width, depth)
    walls = sorted(int(w) for w in rng.choice(4, size=int(rng.integers(2, 5)), replace=False))
    target = int(rng.integers(params.min_objects, params.max_objects + 1))

    if rng.random() < 0.8:
        _place_table_group(layout, rng, target)
    attempts = 0
    while len(layout.items) < target and attempts < 60:
        attempts += 1
        if rng.random() < 0.45:
            _place_against_wall(layout, rng, str(rng.choice(WALL_HUGGERS)), walls)
        else:
            _place_free(layout, rng, str(rng.choice(FREE_STANDING)))
    items = layout.items[: params.max_objects]

    # Dense surface samples of everything, then what the cameras see.
    area = width * depth + sum(WALL_HEIGHT * (width if w in (0, 2) else depth) for w in walls)
    area += sum(shape.area() for shape, *_ in items)
    density = 3.0 * params.n_points / area
    chunks, labels, colors = [], [], []
    floor_n = int(density * width * depth)
    floor = np.column_stack([rng.uniform(0, width, floor_n), rng.uniform(0, depth, floor_n), np.zeros(floor_n)])
    chunks.append(floor)
    labels.append(np.zeros(floor_n, np.int32))
    colors.append(np.tile([150, 140, 125], (floor_n, 1)))
    for w in walls:
        length = width if w in (0, 2) else depth
        n = int(density * length * WALL_HEIGHT)
        s, z = rng.uniform(0, length, n), rng.uniform(0, WALL_HEIGHT, n)
        xy = {0: (s, np.zeros(n)), 1: (np.full(n, width), s), 2: (s, np.full(n, depth)), 3: (np.zeros(n), s)}[w]
        chunks.append(np.column_stack([xy[0], xy[1], z]))
        labels.append(np.zeros(n, np.int32))
        colors.append(np.tile([215, 210, 195], (n, 1)))
    objects: list[PlacedObject] = []
    shapes: dict[int, Shape] = {}
    samples: dict[int, np.ndarray] = {}
    for k, (shape, pose, note, _) in enumerate(items, start=1):
        pts = pose.to_world(shape.sample_surface(max(50, int(density * shape.area())), rng))
        chunks.append(pts)
        labels.append(np.full(len(pts), k, np.int32))
        hue = rng.uniform(0, 1)
        colors.append(np.tile((np.array(_hsv(hue, 0.55, 0.8)) * 255), (len(pts), 1)))
        objects.append(PlacedObject(k, shape.category, pose, note))
        shapes[k] = shape
        samples[k] = pts
    points = np.concatenate(chunks)
    label = np.concatenate(labels)
    color = np.concatenate(colors).astype(np.float64)

    cameras = _cameras(layout, rng, int(rng.integers(params.cameras[0], params.cameras[1] + 1)))
    seen = visible_from(points, cameras)
    points, label, color = points[seen], label[seen], color[seen]
    if len(points) > params.n_points:
        keep = np.sort(rng.choice(len(points), params.n_points, replace=False))
        points, label, color = points[keep], label[keep], color[keep]
    points = add_noise(points, params.noise, rng)
    color = np.clip(color + rng.normal(0, 6, color.shape), 0, 255).astype(np.uint8)
    return Scene(points.astype(np.float32), color, label, objects, _touching_pairs(samples), (width, depth), seed, shapes)


def _cameras(layout: _Layout, rng: np.random.Generator, n: int) -> np.ndarray:
    from shapely.geometry import Point

    cams = []
    for _ in range(200):
        if len(cams) == n:
            break
        p = (rng.uniform(0.3, layout.width - 0.3), rng.uniform(0.3, layout.depth - 0.3))
        if any(poly.contains(Point(p)) for *_, poly in layout.items):
            continue
        cams.append((p[0], p[1], rng.uniform(1.3, 1.9)))
    if not cams:
        cams.append((layout.width / 2, layout.depth / 2, 2.4))
    return np.asarray(cams)


def _hsv(h: float, s: float, v: float) -> tuple[float, float, float]:
    import colorsys

    return colorsys.hsv_to_rgb(h, s, v)
