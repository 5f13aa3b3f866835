"""nuPlan-style closed-loop score (CLS) of one episode.

score = prod(multipliers) x sum(w_i s_i) / sum(w_i), x100 when averaged over scenarios.
Multipliers: no at-fault collision, drivable-area compliance, driving-direction compliance,
making progress. Weighted terms: progress vs the expert (5), time to collision (5), speed-limit
compliance (4), comfort (2). Thresholds are nuPlan's (see ``Thresholds``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import shapely
from scipy.signal import savgol_filter

from .geometry import box_corners, boxes_overlap, to_local
from .scene import Scene
from .vehicle import LENGTH, REAR_TO_CENTER, WIDTH

WEIGHTS = {"progress": 5.0, "ttc": 5.0, "speed_limit": 4.0, "comfort": 2.0}
MULTIPLIERS = ("no_at_fault_collisions", "drivable_area_compliance", "driving_direction_compliance", "making_progress")


@dataclass(frozen=True)
class Thresholds:
    stopped_speed: float = 0.05  # m/s
    drivable_tolerance: float = 0.3  # m a corner may be outside the drivable area
    direction_ok: float = 2.0  # m backwards in any 1 s window: full score below
    direction_bad: float = 6.0  # m: half score below, zero above
    direction_window: float = 1.0  # s
    making_progress_ratio: float = 0.2
    min_expert_progress: float = 5.0  # m; below it the progress terms count as met
    ttc_threshold: float = 0.95  # s
    ttc_horizon: float = 3.0  # s
    ttc_step: float = 0.1  # s
    max_overspeed: float = 2.23  # m/s, speed-limit term reaches 0 at this mean violation
    lon_acc: tuple[float, float] = (-4.05, 2.40)
    lat_acc: float = 4.89
    jerk: float = 8.37
    lon_jerk: float = 4.13
    yaw_rate: float = 0.95
    yaw_acc: float = 1.93


TH = Thresholds()


@dataclass(frozen=True)
class Collision:
    step: int
    agent_id: int
    kind: str  # vehicle | pedestrian | cyclist | object
    type: str  # stopped_ego | stopped_track | active_rear | active_front | active_lateral
    at_fault: bool


@dataclass(frozen=True)
class Violation:
    step: int
    what: str
    text: str


@dataclass(frozen=True)
class CLSResult:
    score: float  # 0..1 for one episode
    multipliers: dict[str, float]
    weighted: dict[str, float]
    collisions: tuple[Collision, ...]
    violations: tuple[Violation, ...]
    ego_progress: float
    expert_progress: float
    signals: dict[str, list[float]] = field(default_factory=dict)  # per step, for plots

    @property
    def at_fault(self) -> bool:
        return any(c.at_fault for c in self.collisions)

    @property
    def first_violation(self) -> Violation | None:
        return min(self.violations, key=lambda v: v.step) if self.violations else None


@dataclass
class Track:
    """What the metric needs of the agents over an episode."""

    states: np.ndarray  # (S, N, 4) x, y, heading, speed
    valid: np.ndarray  # (S, N) bool
    ids: np.ndarray  # (N,)
    size: np.ndarray  # (N, 2) length, width
    kinds: list[str]


def comfort_signals(ego: np.ndarray, dt: float) -> dict[str, np.ndarray]:
    """Speed, accelerations, jerks and yaw derivatives of an ego trajectory ((S, >=4): x, y, heading, speed).

    Derivatives use a Savitzky-Golay filter (window 1.5 s, quadratic), as nuPlan does.
    """
    n = len(ego)
    v = ego[:, 3].astype(float)
    heading = np.unwrap(ego[:, 2].astype(float))
    if n < 5:
        zeros = np.zeros(n)
        return {"speed": v, "lon_acc": zeros, "lat_acc": zeros, "jerk": zeros, "lon_jerk": zeros, "yaw_rate": zeros, "yaw_acc": zeros}
    win = min(15, n if n % 2 == 1 else n - 1)
    poly = min(2, win - 1)

    def d(x: np.ndarray, k: int) -> np.ndarray:
        return savgol_filter(x, win, poly, deriv=k, delta=dt, mode="interp")

    lon_acc = d(v, 1)
    yaw_rate = d(heading, 1)
    yaw_acc = d(heading, 2)
    lat_acc = d(v, 0) * yaw_rate
    lon_jerk = d(lon_acc, 1)
    lat_jerk = d(lat_acc, 1)
    jerk = np.hypot(lon_jerk, lat_jerk)
    return {"speed": v, "lon_acc": lon_acc, "lat_acc": lat_acc, "jerk": jerk, "lon_jerk": lon_jerk, "yaw_rate": yaw_rate, "yaw_acc": yaw_acc}


def comfort_flags(sig: dict[str, np.ndarray], th: Thresholds = TH) -> dict[str, np.ndarray]:
    """Per step: which comfort bound is exceeded."""
    return {
        "lon_acc": (sig["lon_acc"] < th.lon_acc[0]) | (sig["lon_acc"] > th.lon_acc[1]),
        "lat_acc": np.abs(sig["lat_acc"]) > th.lat_acc,
        "jerk": np.abs(sig["jerk"]) > th.jerk,
        "lon_jerk": np.abs(sig["lon_jerk"]) > th.lon_jerk,
        "yaw_rate": np.abs(sig["yaw_rate"]) > th.yaw_rate,
        "yaw_acc": np.abs(sig["yaw_acc"]) > th.yaw_acc,
    }


def classify_collision(ego: np.ndarray, agent: np.ndarray, agent_size: np.ndarray, ego_multi_lane: bool, ego_off_road: bool,
                       th: Thresholds = TH) -> tuple[str, bool]:
    """nuPlan's collision types and who is at fault.

    ego, agent: (x, y, heading, speed). Not at fault: ego stopped, or the agent hits it from behind.
    At fault: a stopped agent, the ego's front bumper touching the agent, or a lateral hit while
    the ego straddles lanes or is off the road.
    """
    if ego[3] <= th.stopped_speed:
        return "stopped_ego", False
    if agent[3] <= th.stopped_speed:
        return "stopped_track", True
    rel = to_local(agent[:2], ego[:2], ego[2])
    if rel[0] < -REAR_TO_CENTER:
        return "active_rear", False
    ego_box = box_corners(ego[0], ego[1], ego[2], LENGTH, WIDTH)
    other = shapely.Polygon(box_corners(agent[0], agent[1], agent[2], agent_size[0], agent_size[1]))
    bumper = shapely.LineString([ego_box[0], ego_box[1]])
    if bumper.intersects(other):
        return "active_front", True
    return "active_lateral", bool(ego_multi_lane or ego_off_road)


def route_progress(scene: Scene, xy: np.ndarray) -> np.ndarray:
    s, _ = scene.route_path.project(xy)
    return s


def compute_cls(
    scene: Scene,
    ego: np.ndarray,
    agents: Track,
    dt: float,
    expert_progress: float | None,
    th: Thresholds = TH,
) -> CLSResult:
    """Score one episode. ``ego``: (S, >=4) x, y, heading, speed per step (row 0 = start)."""
    steps = len(ego)
    violations: list[Violation] = []
    ego_boxes = box_corners(ego[:, 0], ego[:, 1], ego[:, 2], LENGTH, WIDTH)  # (S, 4, 2)

    # Drivable area: exact distance of every corner outside the union of lanes.
    outside = scene.distance_outside(ego_boxes.reshape(-1, 2)).reshape(steps, 4).max(axis=1)
    off_road = outside > th.drivable_tolerance
    drivable = 0.0 if off_road.any() else 1.0
    if off_road.any():
        k = int(np.argmax(off_road))
        violations.append(Violation(k, "drivable_area", f"a corner is {outside[k]:.2f} m outside the drivable area"))

    # Collisions: first contact with each agent or object.
    collisions: list[Collision] = []
    n = agents.states.shape[1] if agents.states.ndim == 3 else 0
    if n:
        ab = box_corners(agents.states[..., 0], agents.states[..., 1], agents.states[..., 2], agents.size[None, :, 0], agents.size[None, :, 1])
        hit = boxes_overlap(ego_boxes[:, None], ab) & agents.valid
        for j in range(n):
            if not hit[:, j].any():
                continue
            k = int(np.argmax(hit[:, j]))
            multi = _straddles(scene, ego_boxes[k])
            ctype, fault = classify_collision(ego[k, :4], agents.states[k, j], agents.size[j], multi, bool(outside[k] > th.drivable_tolerance), th)
            collisions.append(Collision(k, int(agents.ids[j]), agents.kinds[j], ctype, fault))
    statics = scene.scenario.static_objects
    if statics:
        sb = box_corners([o.x for o in statics], [o.y for o in statics], [o.heading for o in statics], [o.length for o in statics], [o.width for o in statics])
        shit = boxes_overlap(ego_boxes[:, None], sb[None])
        for j, obj in enumerate(statics):
            if shit[:, j].any():
                k = int(np.argmax(shit[:, j]))
                moving = ego[k, 3] > th.stopped_speed
                collisions.append(Collision(k, int(obj.id), "object", "stopped_track" if moving else "stopped_ego", moving))
    fault_vehicle = [c for c in collisions if c.at_fault and c.kind != "object"]
    fault_object = [c for c in collisions if c.at_fault and c.kind == "object"]
    no_collision = 0.0 if fault_vehicle else max(0.0, 1.0 - 0.5 * len(fault_object))
    for c in collisions:
        if c.at_fault:
            violations.append(Violation(c.step, "collision", f"at-fault {c.type.replace('_', ' ')} collision with {c.kind} {c.agent_id}"))

    # Progress along the route, driving direction, making progress.
    prog = route_progress(scene, ego[:, :2])
    ego_progress = float(prog[-1] - prog[0])
    win = max(1, int(round(th.direction_window / dt)))
    back = 0.0
    if steps > win:
        delta = prog[win:] - prog[:-win]
        back = float(max(0.0, -delta.min()))
        if back >= th.direction_ok:
            violations.append(Violation(int(np.argmin(delta)) + win, "driving_direction", f"drove {back:.1f} m backwards within 1 s"))
    direction = 1.0 if back < th.direction_ok else (0.5 if back < th.direction_bad else 0.0)
    expert = expert_progress if expert_progress is not None else ego_progress
    if expert < th.min_expert_progress:
        ratio = 1.0
    else:
        ratio = max(0.0, ego_progress) / expert
    making_progress = 1.0 if ratio >= th.making_progress_ratio else 0.0
    if not making_progress:
        violations.append(Violation(steps - 1, "making_progress", f"progress {ego_progress:.1f} m is under 20% of the expert's {expert:.1f} m"))
    progress_score = float(min(1.0, ratio))

    # Time to collision with constant-velocity extrapolation.
    ttc = time_to_collision(ego, agents, scene, dt, th, exclude=collisions)
    ttc_bad = ttc < th.ttc_threshold
    ttc_score = 0.0 if ttc_bad.any() else 1.0
    if ttc_bad.any():
        k = int(np.argmax(ttc_bad))
        violations.append(Violation(k, "ttc", f"time to collision {ttc[k]:.1f} s is under {th.ttc_threshold} s"))

    # Speed limit.
    limits = np.array([scene.speed_limit_at(ego[k, :2], ego[k, 2]) for k in range(steps)])
    over = np.maximum(0.0, ego[:, 3] - limits)
    speed_score = float(max(0.0, 1.0 - over.mean() / th.max_overspeed))
    if (over > 0.5).any():
        k = int(np.argmax(over > 0.5))
        violations.append(Violation(k, "speed_limit", f"{over[k]:.1f} m/s over the {limits[k]:.1f} m/s limit"))

    # Comfort.
    sig = comfort_signals(ego, dt)
    flags = comfort_flags(sig, th)
    any_flag = np.zeros(steps, dtype=bool)
    for name, f in flags.items():
        any_flag |= f
    comfort = 0.0 if any_flag.any() else 1.0
    if any_flag.any():
        k = int(np.argmax(any_flag))
        names = [name for name, f in flags.items() if f[k]]
        violations.append(Violation(k, "comfort", f"uncomfortable: {', '.join(names)} out of bounds"))

    multipliers = {
        "no_at_fault_collisions": no_collision,
        "drivable_area_compliance": drivable,
        "driving_direction_compliance": direction,
        "making_progress": making_progress,
    }
    weighted = {"progress": progress_score, "ttc": ttc_score, "speed_limit": speed_score, "comfort": comfort}
    total = float(np.prod(list(multipliers.values())) * sum(WEIGHTS[k] * weighted[k] for k in WEIGHTS) / sum(WEIGHTS.values()))
    signals = {
        "speed": sig["speed"], "acceleration": sig["lon_acc"], "lateral_acceleration": sig["lat_acc"], "jerk": sig["jerk"],
        "ttc": np.where(np.isfinite(ttc), ttc, np.nan), "progress": prog - prog[0], "speed_limit": limits,
        "off_road": outside,
    }
    return CLSResult(
        total, multipliers, weighted, tuple(collisions), tuple(sorted(violations, key=lambda v: v.step)),
        ego_progress, float(expert), {k: [float(x) for x in np.asarray(v)] for k, v in signals.items()},
    )


def _straddles(scene: Scene, box: np.ndarray) -> bool:
    """True when the ego box lies substantially (> 15 % of its area) in two or more lanes."""
    poly = shapely.Polygon(box)
    share = [scene.lanes[lid].polygon.intersection(poly).area / poly.area for lid in scene.lanes_touching(poly)]
    return sum(a > 0.15 for a in share) > 1


def time_to_collision(ego: np.ndarray, agents: Track, scene: Scene, dt: float, th: Thresholds = TH,
                      exclude: list[Collision] | tuple[Collision, ...] = ()) -> np.ndarray:
    """Per step: time (s) until the ego box meets an agent ahead when both keep their velocity; inf if none.

    Skipped: steps where the ego is stopped, agents behind the ego's rear axle, and an agent
    from the step it is already in contact onwards (that is a collision, counted above).
    """
    steps = len(ego)
    out = np.full(steps, np.inf)
    if agents.states.ndim != 3 or agents.states.shape[1] == 0:
        return out
    taus = np.arange(th.ttc_step, th.ttc_horizon + 1e-9, th.ttc_step)
    contact_from = {c.agent_id: c.step for c in exclude if c.kind != "object"}
    for k in range(steps):
        if ego[k, 3] <= th.stopped_speed:
            continue
        valid = agents.valid[k].copy()
        for j, aid in enumerate(agents.ids):
            if int(aid) in contact_from and k >= contact_from[int(aid)]:
                valid[j] = False
        if not valid.any():
            continue
        a = agents.states[k, valid]
        rel = to_local(a[:, :2], ego[k, :2], ego[k, 2])
        ahead = rel[:, 0] > -REAR_TO_CENTER
        near = np.linalg.norm(rel, axis=1) < (ego[k, 3] + a[:, 3]) * th.ttc_horizon + 10.0
        sel = ahead & near
        if not sel.any():
            continue
        a = a[sel]
        size = agents.size[valid][sel]
        e = ego[k]
        ex = e[0] + np.cos(e[2]) * e[3] * taus
        ey = e[1] + np.sin(e[2]) * e[3] * taus
        eb = box_corners(ex, ey, np.full_like(taus, e[2]), LENGTH, WIDTH)  # (T, 4, 2)
        ax = a[None, :, 0] + np.cos(a[None, :, 2]) * a[None, :, 3] * taus[:, None]
        ay = a[None, :, 1] + np.sin(a[None, :, 2]) * a[None, :, 3] * taus[:, None]
        ab = box_corners(ax, ay, np.broadcast_to(a[None, :, 2], ax.shape), size[None, :, 0], size[None, :, 1])
        hit = boxes_overlap(eb[:, None], ab).any(axis=1)
        if hit.any():
            out[k] = float(taus[np.argmax(hit)])
    return out
