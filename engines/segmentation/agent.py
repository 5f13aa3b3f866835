"""Stage 2 of GrabS: an agent moves a vertical cylinder until the prior says it holds an object.

Actions (GrabS's discrete set): stop, move ±x or ±y by 0.3 m, shrink the radius by 0.75 or
grow it by 1/0.75 within [0.15, 1.5] m; the cylinder starts at 1.5 m around an anchor and at most
8 steps are taken. Every state is scored by the objectness reward of `objectness.py` (+10 and
stop when found, -1 otherwise). Instead of a PPO policy the agent searches greedily: each step
it scores every successor state of every live trajectory in one batch and takes the best one
(never revisiting a state). No ground truth is involved anywhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engines.core import CancelToken, EngineError, NEVER_CANCELLED, ProgressFn, no_progress

from .objectness import CropScore, RewardParams, score_crops

ACTIONS: tuple[str, ...] = ("stop", "+x", "-x", "+y", "-y", "shrink", "grow")
MOVES: tuple[str, ...] = ACTIONS[1:]
POLICIES: tuple[str, ...] = ("search", "ppo")
FOUND_REWARD = 10.0
RING = 0.1  # width of the band outside a cylinder checked for a cut object (m)
STEP_REWARD = -1.0


MAX_ANCHORS = 1000  # each anchor is a search of up to 8 prior calls; more than this is a typo


@dataclass(frozen=True)
class AgentParams:
    anchors: int = 40
    start_radius: float = 1.5
    min_radius: float = 0.15
    max_radius: float = 1.5
    move: float = 0.3
    scale: float = 0.75
    max_steps: int = 8
    height: float = 2.2  # cylinder height above the floor
    anchor_range: float = 2.0  # how far the cylinder may wander from its anchor
    min_crop_points: int = 50
    refit_margin: float = 0.1  # final masks: one more crop around each found mask, this much wider (m); 0 = off
    second_round: float = 0.5  # a second search over the points no found mask holds, with this share of the anchors (0 = off)
    policy: str = "search"  # who picks the actions: "search" (score every successor) or "ppo" (the learned policy, `policy.py`)

    def __post_init__(self) -> None:
        if not 0 < self.min_radius <= self.start_radius <= self.max_radius:
            raise EngineError("radii must satisfy 0 < min <= start <= max")
        if not 1 <= self.anchors <= MAX_ANCHORS:
            raise EngineError(f"anchors must be 1 to {MAX_ANCHORS}, got {self.anchors}")
        if self.max_steps < 1:
            raise EngineError("at least one step")
        if not 0 <= self.second_round <= 1:
            raise EngineError("the second search's share of the anchors must be 0 to 1")
        if self.policy not in POLICIES:
            raise EngineError(f"agent policy must be one of {', '.join(POLICIES)}")

    @property
    def second_anchors(self) -> int:
        return int(round(self.anchors * self.second_round))


@dataclass(frozen=True)
class Step:
    """One state of a trajectory (what the panel replays): the cylinder and its reward."""

    action: str
    x: float
    y: float
    radius: float
    distance: float  # the objectness two-way distance (inf when the crop is not a valid object)
    reward: float


@dataclass
class Trajectory:
    anchor: tuple[float, float, float]
    steps: list[Step] = field(default_factory=list)
    found: bool = False

    @property
    def state(self) -> tuple[float, float, float]:
        s = self.steps[-1]
        return (s.x, s.y, s.radius)


class CylinderCrops:
    """Points inside vertical cylinders, answered by a 2-D KD-tree over the scene's points."""

    def __init__(self, points: np.ndarray, floor_z: float, height: float) -> None:
        from scipy.spatial import cKDTree

        self.points = points
        self.low = points[:, 2] <= floor_z + height
        self.tree = cKDTree(points[:, :2])

    def indices(self, x: float, y: float, r: float) -> np.ndarray:
        idx = np.asarray(self.tree.query_ball_point([x, y], r), dtype=np.int64)
        return np.sort(idx[self.low[idx]])

    def ring(self, x: float, y: float, r: float, width: float = RING) -> np.ndarray:
        """Indices of the points just outside the cylinder's wall (within ``width``)."""
        outer = self.indices(x, y, r + width)
        d = np.hypot(self.points[outer, 0] - x, self.points[outer, 1] - y)
        return outer[d > r]


def enclosing_cylinder(xy: np.ndarray, margin: float, low: float, high: float) -> tuple[float, float, float]:
    """A cylinder around points seen from above: their centroid, their farthest distance from it
    plus ``margin``, the radius clipped to [low, high]."""
    centre = xy.mean(0)
    radius = float(np.linalg.norm(xy - centre, axis=1).max()) + margin
    return (float(centre[0]), float(centre[1]), float(np.clip(radius, low, high)))


def moved(state: tuple[float, float, float], action: str, anchor: np.ndarray, p: AgentParams) -> tuple[float, float, float] | None:
    """The state a move leads to, or None when it leaves the radius range or the anchor's reach."""
    x, y, r = state
    if action == "shrink":
        return (x, y, r * p.scale) if r * p.scale >= p.min_radius - 1e-9 else None
    if action == "grow":
        return (x, y, r / p.scale) if r / p.scale <= p.max_radius + 1e-9 else None
    dx, dy = {"+x": (p.move, 0.0), "-x": (-p.move, 0.0), "+y": (0.0, p.move), "-y": (0.0, -p.move)}[action]
    nx, ny = x + dx, y + dy
    return (nx, ny, r) if np.hypot(nx - anchor[0], ny - anchor[1]) <= p.anchor_range + 1e-9 else None


def _successors(state: tuple[float, float, float], anchor: np.ndarray, p: AgentParams) -> list[tuple[str, tuple[float, float, float]]]:
    return [(name, s) for name in MOVES if (s := moved(state, name, anchor, p)) is not None]


def state_key(state: tuple[float, float, float]) -> tuple[int, int, int]:
    return (round(state[0] * 1000), round(state[1] * 1000), round(state[2] * 10000))


def run_agent(prior, points: np.ndarray, floor_z: float, anchors: np.ndarray, params: AgentParams, reward: RewardParams,
              rng: np.random.Generator, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED) -> tuple[list[Trajectory], dict]:
    """Run one trajectory per anchor; returns them and the cache of scored states (key -> (indices, score))."""
    crops = CylinderCrops(points, floor_z, params.height)
    cache: dict[tuple[int, int, int], tuple[np.ndarray, CropScore | None]] = {}

    def evaluate(states: list[tuple[float, float, float]]) -> None:
        todo, seen = [], set()
        for s in states:
            k = state_key(s)
            if k in cache or k in seen:
                continue
            seen.add(k)
            idx = crops.indices(*s)
            if len(idx) < params.min_crop_points:
                cache[k] = (idx, None)
            else:
                todo.append((k, s, idx))
        if todo:
            rings = [points[crops.ring(*s)] for _, s, _ in todo]
            scores = score_crops(prior, [points[idx] for _, _, idx in todo], reward, rng, axes=[s[:2] for _, s, _ in todo], rings=rings)
            for (k, _, idx), sc in zip(todo, scores):
                cache[k] = (idx, sc)

    def distance(state) -> float:
        sc = cache[state_key(state)][1]
        return sc.distance if sc is not None and sc.valid else float("inf")

    trajs = [Trajectory(tuple(float(v) for v in a)) for a in anchors]
    start = [(float(a[0]), float(a[1]), params.start_radius) for a in anchors]
    evaluate(start)
    for t, s in zip(trajs, start):
        d = distance(s)
        t.found = cache[state_key(s)][1] is not None and cache[state_key(s)][1].found(reward)
        t.steps.append(Step("start", s[0], s[1], s[2], d, FOUND_REWARD if t.found else STEP_REWARD))
    for step in range(params.max_steps):
        cancel.raise_if_cancelled()
        progress(step / params.max_steps, f"agent step {step + 1}/{params.max_steps}: {sum(t.found for t in trajs)} found")
        live = [t for t in trajs if not t.found and not (t.steps[-1].action == "stop")]
        if not live:
            break
        options = {id(t): _successors(t.state, np.asarray(t.anchor), params) for t in live}
        evaluate([s for opts in options.values() for _, s in opts])
        for t in live:
            visited = {state_key((s.x, s.y, s.radius)) for s in t.steps}
            opts = [(name, s) for name, s in options[id(t)] if state_key(s) not in visited and cache[state_key(s)][1] is not None]
            if not opts:
                t.steps.append(Step("stop", *t.state, t.steps[-1].distance, STEP_REWARD))
                continue
            name, best = min(opts, key=lambda o: (distance(o[1]), o[0] != "shrink"))  # none valid yet: shrink
            sc = cache[state_key(best)][1]
            t.found = sc is not None and sc.found(reward)
            t.steps.append(Step(name, *best, distance(best), FOUND_REWARD if t.found else STEP_REWARD))
    for t in trajs:
        if t.found:
            t.steps.append(Step("stop", *t.state, t.steps[-1].distance, 0.0))
    progress(1.0, f"agent: {sum(t.found for t in trajs)} of {len(trajs)} trajectories found an object")
    return trajs, cache
