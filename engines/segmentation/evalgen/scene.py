"""One evaluation room: a furnished room (`rooms.py`) scanned (`scanner.py`), ground truth per point.

Written in the training scenes' format (`bench.write_scenes`: a PLY with an `instance` field,
0 = floor and walls, and a JSON sidecar with the objects and the touching pairs), so that
`segmentation run`, `eval` and `bench` read both kinds of room alike.
"""

from __future__ import annotations

from engines.core import EngineError

from dataclasses import dataclass

import numpy as np

from .rooms import Room, furnish, shell
from .scanner import place_scanner, scan

KINDS = ("bedroom", "office", "living room")


@dataclass(frozen=True)
class EvalSceneParams:
    """How an evaluation room is drawn."""

    n_points: int = 20000

    def __post_init__(self) -> None:
        if not 1000 <= self.n_points <= 2_000_000:
            raise EngineError("n_points must be between 1000 and 2,000,000")


@dataclass
class EvalScene:
    """A scanned room: points, colours, ground-truth instance per point (0 = floor, walls)."""

    points: np.ndarray
    colors: np.ndarray
    instance: np.ndarray
    objects: list[dict]
    touching: list[tuple[int, int]]
    room: tuple[float, float]
    seed: int
    kind: str
    scanner: str

    def meta(self) -> dict:
        return {
            "generator": "eval",
            "seed": self.seed,
            "kind": self.kind,
            "scanner": self.scanner,
            "room": [round(v, 4) for v in self.room],
            "points": int(len(self.points)),
            "objects": [{**o, "points": int((self.instance == o["instance"]).sum())} for o in self.objects],
            "touching": [list(pair) for pair in self.touching],
        }


def generate_eval_scene(seed: int, params: EvalSceneParams = EvalSceneParams()) -> EvalScene:
    """One scanned evaluation room; the same seed and parameters always give the same room."""
    rng = np.random.default_rng(seed)
    kind = KINDS[int(rng.integers(len(KINDS)))]
    room = Room(float(rng.uniform(3.5, 7.0)), float(rng.uniform(3.5, 7.0)), rng)
    furnish(room, rng, kind)
    objects = [(k, p.meshes()) for k, p in enumerate(room.placed, start=1)]
    centres = np.array([np.mean([m.vertices.mean(0) for m in meshes], axis=0) for _, meshes in objects]).reshape(-1, 3)
    scanner = place_scanner(room.width, room.depth, room.polys, centres, rng)
    points, colors, instance = scan([(0, shell(room, rng)), *objects], scanner, params.n_points, rng)
    meta = [
        {
            "instance": k,
            "category": p.item.category,
            "note": p.note,
            "yaw": round(float(p.yaw), 4),
            "position": [round(float(v), 4) for v in p.position],
        }
        for k, p in enumerate(room.placed, start=1)
    ]
    return EvalScene(points, colors, instance, meta, _touching(objects, rng), (room.width, room.depth), seed, kind, scanner.kind)


def _touching(objects: list[tuple[int, list]], rng: np.random.Generator, tol: float = 0.03) -> list[tuple[int, int]]:
    """Pairs of objects whose surfaces come within ``tol`` (m) of each other."""
    from scipy.spatial import cKDTree

    from .mesh import Mesh

    samples = {}
    for k, meshes in objects:
        whole = Mesh(*_stacked(meshes))
        samples[k] = whole.sample(int(np.clip(whole.triangle_areas().sum() * 3000, 500, 6000)), rng)
    trees = {k: cKDTree(s) for k, s in samples.items()}
    pairs = []
    ids = sorted(samples)
    for pos, a in enumerate(ids):
        lo_a, hi_a = samples[a].min(0) - tol, samples[a].max(0) + tol
        for b in ids[pos + 1 :]:
            if (samples[b].max(0) < lo_a).any() or (samples[b].min(0) > hi_a).any():
                continue
            d, _ = trees[b].query(samples[a], k=1, distance_upper_bound=tol)
            if np.isfinite(d).any():
                pairs.append((a, b))
    return pairs


def _stacked(meshes: list) -> tuple[np.ndarray, np.ndarray]:
    from .mesh import join

    verts, tris, _ = join(meshes)
    return verts, tris
