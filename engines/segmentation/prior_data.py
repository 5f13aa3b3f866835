"""Training samples for the object prior, built the way the agent will later crop scenes.

Each sample is one procedural object, posed (any yaw, pitch/roll within ±15°), seen partially
from 1-4 viewpoints, with sensor noise, then cluttered as GrabS augments its object data:
fragments of neighbouring objects inside a cylinder crop, leftover floor and wall patches,
ball-shaped holes. The target is always the clean signed distance of the one object.
Objects come from two sources: the room generator's furniture (`categories.py`), a share
``room_share`` of the draws (half by default), and the wide parametric families of
`prior_categories.py`; ``HELD_OUT_CATEGORIES`` never enter training. Densities span 60-5000
points per square metre; the encoder's input is voxel down-sampled (`prior.encoder_inputs`) so
that this spread does not reach it.
Queries: 90% near surfaces (the object's surface jittered at three widths, and the observed
points), 10% uniform in the normalised cube.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .categories import CATEGORIES, PRIOR_CATEGORIES, make_shape
from .prior import MAX_TILT, encoder_inputs, normalise
from .prior_categories import HELD_OUT, WIDE, make_wide
from .shapes import Pose, Shape, posed_sdf
from .views import add_noise, orbit_cameras, punch_holes, visible_from

CROP_HEIGHT = 2.2
CLUTTER_MARGIN = 0.04  # an observed point this far (normalised) from the object is clutter
TRAIN_CATEGORIES: tuple[str, ...] = PRIOR_CATEGORIES + tuple(WIDE)
HELD_OUT_CATEGORIES: tuple[str, ...] = tuple(HELD_OUT)


def make_object(category: str, rng: np.random.Generator) -> Shape:
    """One object of a room-generator category or of a wide parametric family."""
    return make_shape(category, rng) if category in CATEGORIES else make_wide(category, rng)


@dataclass
class PoolEntry:
    shape: Shape
    surface: np.ndarray  # clean surface samples, canonical frame
    views: list[np.ndarray]  # index sets of partial views (cameras at random azimuths)
    radius: float  # footprint half-diagonal
    area: float


def category_weights(categories: tuple[str, ...], room_share: float) -> np.ndarray:
    """Draw probabilities: ``room_share`` spread over the room generator's categories, the rest over
    the others (uniform when the categories are all of one source)."""
    room = np.array([c in CATEGORIES for c in categories])
    if room.all() or not room.any():
        return np.full(len(categories), 1.0 / len(categories))
    return np.where(room, room_share / room.sum(), (1.0 - room_share) / (~room).sum())


def make_entry(
    rng: np.random.Generator,
    category: str | None = None,
    n_surface: int = 2000,
    categories: tuple[str, ...] = TRAIN_CATEGORIES,
    room_share: float = 0.5,
) -> PoolEntry:
    weights = category_weights(categories, room_share)
    uniform = bool(np.allclose(weights, weights[0]))  # drawn as before room_share existed: the same objects for the same seed
    shape = make_object(category or str(rng.choice(categories) if uniform else rng.choice(categories, p=weights)), rng)
    surface = shape.sample_surface(n_surface, rng)
    lo, hi = surface.min(0), surface.max(0)
    center = (lo + hi) / 2
    size = float(np.linalg.norm(hi - lo))
    views = []
    for _ in range(3):
        n_cams = int(rng.integers(1, 5))
        cams = orbit_cameras(center, size * rng.uniform(1.2, 2.5), n_cams, rng, elevation=(0.05, 0.9))
        views.append(np.flatnonzero(visible_from(surface, cams)))
    return PoolEntry(shape, surface, views, float(np.hypot(*(hi - lo)[:2]) / 2), shape.area())


class ObjectPool:
    """A rolling pool of objects with precomputed partial views; a few are replaced each step."""

    def __init__(self, size: int, rng: np.random.Generator, categories: tuple[str, ...] = TRAIN_CATEGORIES, room_share: float = 0.5) -> None:
        self.rng = rng
        self.categories = categories
        self.room_share = room_share
        self.entries = [self._new() for _ in range(size)]

    def _new(self) -> PoolEntry:
        return make_entry(self.rng, categories=self.categories, room_share=self.room_share)

    def refresh(self, n: int) -> None:
        for _ in range(n):
            self.entries[int(self.rng.integers(len(self.entries)))] = self._new()

    def pick(self) -> PoolEntry:
        return self.entries[int(self.rng.integers(len(self.entries)))]


@dataclass
class Sample:
    inputs: np.ndarray  # (n_in, 3) normalised
    queries: np.ndarray  # (n_q, 3) normalised
    sdf: np.ndarray  # (n_q,) normalised clean distance of the object
    clutter: np.ndarray  # (n_q,) bool: an observed point away from the object (the rejection lesson)
    observed_sdf: np.ndarray  # (n_obs,) distance at observed points (for mask metrics)
    observed: np.ndarray  # (n_obs, 3) normalised observed points, object and clutter
    yaw: float
    pitch: float
    roll: float
    symmetry: int


def _view(entry: PoolEntry, pose: Pose, density: float, rng: np.random.Generator) -> np.ndarray:
    idx = entry.views[int(rng.integers(len(entry.views)))]
    n = max(8, int(min(len(idx), density * entry.area * 0.6)))
    idx = rng.choice(idx, size=min(n, len(idx)), replace=False)
    return pose.to_world(entry.surface[idx])


def make_sample(pool: ObjectPool, rng: np.random.Generator, n_in: int = 512, n_q: int = 1024, clutter: bool = True, voxel: float = 0.0) -> Sample:
    entry = pool.pick()
    tilt = rng.random() < 0.5
    pose = Pose(
        yaw=float(rng.uniform(-np.pi, np.pi)),
        pitch=float(rng.uniform(-MAX_TILT, MAX_TILT)) if tilt else 0.0,
        roll=float(rng.uniform(-MAX_TILT, MAX_TILT)) if tilt else 0.0,
    )
    density = float(np.exp(rng.uniform(np.log(60), np.log(5000))))  # points per square metre
    obj = _view(entry, pose, density, rng)
    if rng.random() < 0.4:
        obj = punch_holes(obj, int(rng.integers(1, 3)), entry.radius * rng.uniform(0.1, 0.35), rng)
    parts = [obj]
    center = np.array([0.0, 0.0])
    crop_c = center + rng.normal(0, 0.15, 2) * entry.radius  # the cylinder axis is near the object
    if clutter:
        n_nb = int(rng.choice(4, p=[0.25, 0.35, 0.25, 0.15]))
        for _ in range(n_nb):
            nb = pool.pick()
            ang = rng.uniform(0, 2 * np.pi)
            dist = (entry.radius + nb.radius) * rng.uniform(0.5, 1.15)
            nb_pose = Pose(yaw=float(rng.uniform(-np.pi, np.pi)), translation=(dist * np.cos(ang), dist * np.sin(ang), 0.0))
            parts.append(_view(nb, nb_pose, density, rng))
        crop_r = entry.radius * rng.uniform(1.0, 1.9)
        if rng.random() < 0.3:  # floor left over by the plane removal
            n = int(density * np.pi * crop_r**2 * rng.uniform(0.02, 0.3))
            r, a = crop_r * np.sqrt(rng.uniform(0, 1, n)), rng.uniform(0, 2 * np.pi, n)
            parts.append(np.column_stack([crop_c[0] + r * np.cos(a), crop_c[1] + r * np.sin(a), rng.normal(0, 0.01, n)]))
        if rng.random() < 0.15:  # a wall patch behind the object
            lo, hi = entry.surface.min(0), entry.surface.max(0)
            n = int(density * 2 * crop_r * CROP_HEIGHT * rng.uniform(0.02, 0.3))
            local = np.column_stack([rng.uniform(-crop_r, crop_r, n), np.full(n, hi[1] + rng.uniform(0.0, 0.05)), rng.uniform(0, CROP_HEIGHT, n)])
            parts.append(Pose(yaw=pose.yaw).to_world(local))
        pts = np.concatenate(parts)
        inside = (np.hypot(pts[:, 0] - crop_c[0], pts[:, 1] - crop_c[1]) <= crop_r) & (pts[:, 2] <= CROP_HEIGHT)
        if inside[: len(obj)].sum() >= 16:
            pts = pts[inside]
    else:
        pts = obj
    pts = add_noise(pts, float(rng.uniform(0.002, 0.01)), rng)

    c, scale = normalise(pts, crop_c)
    inputs = encoder_inputs((pts - c) / scale, n_in, voxel, rng)
    n_uniform = n_q // 10
    n_obs = min(len(pts), (n_q - n_uniform) // 2)
    n_surf = n_q - n_uniform - n_obs
    surf_world = pose.to_world(entry.surface[rng.integers(len(entry.surface), size=n_surf)])
    # Jitter: tight (the mask's precision), medium, and wide enough to pin the field down
    # between the object and its clutter (no spurious zero level away from the surface).
    sigma = rng.choice([0.01, 0.04, 0.12], size=n_surf)[:, None] * scale
    near = surf_world + rng.normal(size=(n_surf, 3)) * sigma
    obs = pts[rng.choice(len(pts), n_obs, replace=False)]
    uniform = rng.uniform(-0.55, 0.55, (n_uniform, 3)) * scale + c
    q_world = np.concatenate([near, obs, uniform])
    sdf = posed_sdf(entry.shape, pose, q_world) / scale
    clutter_q = np.zeros(len(q_world), bool)
    clutter_q[n_surf : n_surf + n_obs] = np.abs(sdf[n_surf : n_surf + n_obs]) > CLUTTER_MARGIN
    obs_sdf = posed_sdf(entry.shape, pose, pts) / scale
    return Sample(
        inputs.astype(np.float32),
        ((q_world - c) / scale).astype(np.float32),
        sdf.astype(np.float32),
        clutter_q,
        obs_sdf.astype(np.float32),
        ((pts - c) / scale).astype(np.float32),
        pose.yaw,
        pose.pitch,
        pose.roll,
        entry.shape.symmetry,
    )
