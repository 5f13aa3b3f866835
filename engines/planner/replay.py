"""Everything the replay panel draws, computed once per episode: per-frame outlines as NaN-separated
polylines (one plot item per layer stays fast with 30 agents and 16 samples), labels, highlights,
metric curves, the score breakdown and the violations. The panel only hands these arrays to Qt."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .episode import Episode
from .geometry import box_corners
from .metrics import MULTIPLIERS, TH, WEIGHTS
from .scenario import Scenario
from .scene import Scene
from .vehicle import LENGTH, WIDTH

NAN2 = np.array([[np.nan, np.nan]])


def _join(lines: list[np.ndarray]) -> np.ndarray:
    """Polylines joined into one (M, 2) array with NaN rows between them."""
    if not lines:
        return np.zeros((0, 2))
    parts = []
    for ln in lines:
        parts.append(np.asarray(ln, dtype=float).reshape(-1, 2))
        parts.append(NAN2)
    return np.concatenate(parts[:-1])


def _closed(box: np.ndarray) -> np.ndarray:
    return np.concatenate([box, box[:1]])


@dataclass
class Frame:
    agents: np.ndarray  # outlines + heading ticks
    labels: list[tuple[str, float, float]]
    ego_box: np.ndarray  # (5, 2)
    ego_heading: float
    ego_xy: np.ndarray
    samples: np.ndarray
    chosen: np.ndarray
    predictions: np.ndarray
    hot_agents: np.ndarray  # outlines of agents in a collision now
    ego_state: str  # "ok" | "ttc" | "collision"

    @property
    def sample_lines(self) -> int:
        """How many sampled plans (besides the chosen one) this frame draws: NaN rows part them."""
        return int(np.isnan(self.samples[:, 0]).sum()) + 1 if len(self.samples) else 0


@dataclass
class ReplayData:
    frames: list[Frame]
    lanes: list[np.ndarray]  # lane polygons (closed)
    boundaries: np.ndarray
    route: np.ndarray
    drivable: np.ndarray  # outline(s) of the drivable area
    statics: np.ndarray
    expert: np.ndarray
    ego_path: np.ndarray  # (S+1, 2)
    bounds: tuple[float, float, float, float]
    time: np.ndarray
    signals: dict[str, np.ndarray]
    breakdown: list[tuple[str, str, str]]  # (term, weight or 'x', value)
    violations: list[tuple[int, str]]
    first_violation: int | None
    summary: str
    compare: dict[str, Any] = field(default_factory=dict)

    def agent_at(self, k: int, episode: Episode, x: float, y: float) -> int | None:
        """Id of the agent whose box contains (x, y) at frame k (for dragging)."""
        for j in range(len(episode.agent_ids)):
            if not episode.valid[k, j]:
                continue
            a = episode.agents[k, j]
            c, s = np.cos(a[2]), np.sin(a[2])
            dx, dy = x - a[0], y - a[1]
            if abs(c * dx + s * dy) <= episode.agent_size[j, 0] / 2 + 0.5 and abs(-s * dx + c * dy) <= episode.agent_size[j, 1] / 2 + 0.5:
                return int(episode.agent_ids[j])
        return None


@dataclass(frozen=True)
class _Road:
    """The layers that do not move: lanes, drivable outline, boundaries, route, static objects."""

    lanes: list[np.ndarray]
    boundaries: np.ndarray
    route: np.ndarray
    drivable: np.ndarray
    statics: np.ndarray
    bounds: tuple[float, float, float, float]


def _road(scene: Scene) -> _Road:
    sc = scene.scenario
    lanes = [_closed(np.concatenate([np.asarray(l.left), np.asarray(l.right)[::-1]])) for l in sc.lanes]
    lanes += [_closed(np.asarray(a, dtype=float)) for a in sc.areas]
    boundaries = _join([np.asarray(l.left) for l in sc.lanes] + [np.asarray(l.right) for l in sc.lanes])
    geoms = getattr(scene.drivable, "geoms", [scene.drivable])
    drivable = _join([np.asarray(g.exterior.coords) for g in geoms if g.geom_type == "Polygon"] +
                     [np.asarray(r.coords) for g in geoms if g.geom_type == "Polygon" for r in g.interiors])
    statics = _join([_closed(box_corners(o.x, o.y, o.heading, o.length, o.width)) for o in sc.static_objects])
    return _Road(lanes, boundaries, scene.route_path.points, drivable, statics, tuple(scene.bounds))


def _agent_outline(x: float, y: float, heading: float, length: float, width: float) -> list[np.ndarray]:
    """Box and heading tick of one agent."""
    tip = np.array([[x, y], [x + 0.6 * length * np.cos(heading), y + 0.6 * length * np.sin(heading)]])
    return [_closed(box_corners(x, y, heading, length, width)), tip]


def preview_replay(scenario: Scenario) -> ReplayData:
    """The scene at t = 0, before any planner has driven it: road, agents present at the start and
    the ego, as a one-frame replay with no plans, metrics or violations."""
    road = _road(Scene(scenario))
    outlines: list[np.ndarray] = []
    labels = []
    for agent in scenario.agents:
        if agent.start_step != 0 or not agent.history:
            continue
        x, y, heading, _ = agent.history[-1]
        outlines += _agent_outline(x, y, heading, agent.length, agent.width)
        labels.append((str(agent.id), float(x), float(y)))
    e = scenario.ego
    empty = np.zeros((0, 2))
    frame = Frame(_join(outlines), labels, _closed(box_corners(e.x, e.y, e.heading, LENGTH, WIDTH)), float(e.heading), np.array([e.x, e.y]),
                  empty, empty, empty, empty, "ok")
    summary = f"{scenario.name} at t = 0 · {len(labels)} agents · {scenario.duration:.0f} s · press Run to let the planner drive it"
    return ReplayData(
        [frame], road.lanes, road.boundaries, road.route, road.drivable, road.statics, empty, np.array([[e.x, e.y]]), road.bounds,
        np.zeros(1), {}, [], [], None, summary,
    )


def build_replay(ep: Episode, max_samples: int | None = None) -> ReplayData:
    sc = ep.scenario
    scene = Scene(sc)
    road = _road(scene)
    sig = {k: np.asarray(v, dtype=float) for k, v in ep.metrics.signals.items()}
    ttc = sig.get("ttc", np.full(len(ep.ego), np.nan))
    collide_steps: dict[int, set[int]] = {}
    for c in ep.metrics.collisions:
        for k in range(c.step, min(c.step + 5, len(ep.ego))):
            collide_steps.setdefault(k, set()).add(c.agent_id)
    frames = []
    for k in range(len(ep.ego)):
        outlines, labels, hot = [], [], []
        for j in range(len(ep.agent_ids)):
            if not ep.valid[k, j]:
                continue
            a = ep.agents[k, j]
            box, tip = _agent_outline(a[0], a[1], a[2], ep.agent_size[j, 0], ep.agent_size[j, 1])
            outlines += [box, tip]
            labels.append((str(int(ep.agent_ids[j])), float(a[0]), float(a[1])))
            if int(ep.agent_ids[j]) in collide_steps.get(k, set()):
                hot.append(box)
        e = ep.ego[k]
        plan = ep.plans[min(k, len(ep.plans) - 1)] if ep.plans else None
        samples = chosen = preds = np.zeros((0, 2))
        if plan is not None:
            chosen = plan.trajectory[:, :2]
            if plan.samples is not None:
                idx = [i for i in range(len(plan.samples)) if i != plan.chosen][: (max_samples or len(plan.samples))]
                samples = _join([plan.samples[i] for i in idx])
            if plan.predictions is not None and len(plan.predictions):
                preds = _join(list(plan.predictions))
        state = "collision" if k in collide_steps else ("ttc" if np.isfinite(ttc[k]) and ttc[k] < TH.ttc_threshold else "ok")
        frames.append(Frame(_join(outlines), labels, _closed(box_corners(e[0], e[1], e[2], LENGTH, WIDTH)), float(e[2]), e[:2].copy(),
                            samples, chosen, preds, _join(hot), state))
    m = ep.metrics
    breakdown = [(name.replace("_", " "), "x", f"{m.multipliers[name]:.2f}") for name in MULTIPLIERS]
    breakdown += [(name.replace("_", " "), f"{WEIGHTS[name]:.0f}", f"{m.weighted[name]:.2f}") for name in WEIGHTS]
    breakdown.append(("CLS", "", f"{100 * m.score:.1f}"))
    violations = [(v.step, f"{v.step * ep.dt:4.1f} s  {v.text}") for v in m.violations]
    ms = [p.ms for p in ep.plans]
    summary = (f"{sc.name} · {ep.planner} · {'reactive' if ep.reactive else 'log replay'} · CLS {ep.score:.1f} · "
               f"progress {m.ego_progress:.0f} m (expert {m.expert_progress:.0f} m) · replan {np.median(ms) if ms else 0:.0f} ms median")
    return ReplayData(
        frames, road.lanes, road.boundaries, road.route, road.drivable, road.statics,
        ep.expert[:, :2] if ep.expert is not None else np.zeros((0, 2)), ep.ego[:, :2].copy(), road.bounds,
        np.arange(len(ep.ego)) * ep.dt, sig, breakdown, violations, m.first_violation.step if m.first_violation else None, summary,
    )


def compare_rows(a: Episode, b: Episode) -> list[tuple[str, str, str]]:
    """Score breakdown of two episodes side by side (A/B)."""
    rows = []
    for name in MULTIPLIERS:
        rows.append((name.replace("_", " "), f"{a.metrics.multipliers[name]:.2f}", f"{b.metrics.multipliers[name]:.2f}"))
    for name in WEIGHTS:
        rows.append((name.replace("_", " "), f"{a.metrics.weighted[name]:.2f}", f"{b.metrics.weighted[name]:.2f}"))
    rows.append(("CLS", f"{a.score:.1f}", f"{b.score:.1f}"))
    return rows


def denoise_frames(trace: dict[str, Any], arrow_scale: float = 3.0) -> list[dict[str, np.ndarray]]:
    """Per solver step: noisy samples x_t, denoised estimates x0 and guidance arrows (segments)."""
    out = []
    for st in trace["steps"]:
        x_t, x0, g = np.asarray(st["x_t"]), np.asarray(st["x0"]), np.asarray(st["guidance"])
        arrows = []
        for k in range(len(x0)):
            for i in range(1, x0.shape[1], 2):
                if np.hypot(*g[k, i]) > 1e-3:
                    arrows.append(np.array([x0[k, i] - arrow_scale * g[k, i], x0[k, i]]))
        out.append({"t": float(st["t"]), "x_t": _join(list(x_t)), "x0": _join(list(x0)), "arrows": _join(arrows)})
    return out
