"""Procedural scenarios: eight types, each reproducible from a seed.

Every scene is built as map + route + ego start + agents placed 2 s before the start; the agents
are then simulated on their own (IDM with their scripted events, no ego) to give them a 2 s
history and a recorded future, so the same scene serves log replay and reactive simulation.
"""
from __future__ import annotations

import numpy as np

from engines.core import EngineError

from .agents import AgentSim
from .geometry import Polyline, to_local
from .scenario import Agent, EgoStart, Event, Lane, Scenario, StaticObject, validate
from .scene import Scene

TYPES = ("straight", "curve", "merge", "intersection", "lead_braking", "cut_in", "stopped_vehicle", "dense_traffic")
LANE_W = 3.5
PRE_STEPS = 20  # 2 s of history


def generate(kind: str, seed: int, duration: float = 15.0) -> Scenario:
    """The scenario of type ``kind`` for ``seed``; an unknown type is a user error."""
    if kind not in TYPES:
        raise EngineError(f"unknown scenario type '{kind}'; choose from {', '.join(TYPES)}")
    if seed < 0:
        raise EngineError("the seed must be a non-negative integer")
    rng = np.random.default_rng([seed, TYPES.index(kind)])
    builder = _BUILDERS[kind]
    lanes, route, ego, agents, statics, notes = builder(rng)
    areas = tuple(tuple(tuple(p) for p in area) for area in notes.pop("areas", ()))
    sc = Scenario(
        name=f"{kind}-{seed}", lanes=tuple(lanes), route=tuple(route), ego=ego, agents=(), static_objects=tuple(statics),
        areas=areas, duration=duration, type=kind, seed=seed, source="procedural", notes=notes,
    )
    sc = _presimulate(sc, agents)
    validate(sc)
    return sc


def suite_scenarios(n: int, seed: int) -> list[tuple[str, int]]:
    """(type, seed) pairs for a benchmark of n scenarios, cycling through every type."""
    return [(TYPES[i % len(TYPES)], seed * 1000 + i // len(TYPES)) for i in range(n)]


# Roads --------------------------------------------------------------------------------------
def _lanes_from_reference(ref: np.ndarray, n: int, limit: float, prefix: str, width: float = LANE_W) -> list[Lane]:
    """n parallel lanes to the left of the reference line (lane 0 on it), right to left."""
    line = Polyline(ref)
    lanes = []
    for i in range(n):
        c = line.offset(i * width)
        left = line.offset(i * width + width / 2)
        right = line.offset(i * width - width / 2)
        lanes.append(Lane(
            f"{prefix}{i}", _pts(c), _pts(left), _pts(right), float(limit),
            left_neighbor=f"{prefix}{i + 1}" if i + 1 < n else None,
            right_neighbor=f"{prefix}{i - 1}" if i > 0 else None,
        ))
    return lanes


def _pts(a: np.ndarray) -> tuple[tuple[float, float], ...]:
    return tuple((float(x), float(y)) for x, y in np.round(a, 3))


def _straight(length: float, step: float = 2.0) -> np.ndarray:
    x = np.arange(0.0, length + 1e-9, step)
    return np.column_stack([x, np.zeros_like(x)])


def _curve_ref(rng: np.random.Generator) -> np.ndarray:
    radius = float(rng.uniform(45.0, 150.0))
    angle = float(rng.uniform(np.pi / 3, np.pi * 0.9)) * (1 if rng.random() < 0.5 else -1)
    lead = _straight(90.0)
    arc_len = abs(angle) * radius
    t = np.arange(0.0, arc_len + 1e-9, 2.0) / radius
    sign = np.sign(angle)
    arc = np.column_stack([90.0 + radius * np.sin(t), sign * radius * (1 - np.cos(t))])
    end_h = sign * t[-1]
    tail_s = np.arange(2.0, 250.0, 2.0)
    tail = arc[-1] + np.column_stack([np.cos(end_h) * tail_s, np.sin(end_h) * tail_s])
    return np.concatenate([lead, arc[1:], tail])


def _vehicle(rng: np.random.Generator, truck_p: float = 0.1) -> tuple[float, float]:
    if rng.random() < truck_p:
        return float(rng.uniform(8.0, 12.0)), float(rng.uniform(2.4, 2.6))
    return float(rng.uniform(4.2, 5.2)), float(rng.uniform(1.8, 2.1))


class _Placer:
    """Places agents on lanes 2 s before the start with a safe headway to one another."""

    def __init__(self, lanes: list[Lane], rng: np.random.Generator) -> None:
        self.lines = {lane.id: Polyline(np.asarray(lane.centerline)) for lane in lanes}
        self.limits = {lane.id: lane.speed_limit for lane in lanes}
        self.rng = rng
        self.taken: dict[str, list[tuple[float, float]]] = {lid: [] for lid in self.lines}
        self.agents: list[Agent] = []

    def free(self, lane: str, s: float, length: float, speed: float) -> bool:
        need = length / 2 + 6.0 + 1.0 * speed
        return all(abs(s - s2) > need + l2 / 2 for s2, l2 in self.taken[lane])

    def add(self, lane: str, s: float, speed: float, route: tuple[str, ...] = (), events: tuple[Event, ...] = (),
            size: tuple[float, float] | None = None, force: bool = False) -> bool:
        length, width = size or _vehicle(self.rng)
        line = self.lines[lane]
        if not (length / 2 < s < line.length - length / 2):
            return False
        if not force and not self.free(lane, s, length, speed):
            return False
        xy, h = line.interpolate(np.array([s]))
        self.taken[lane].append((s, length))
        state = (float(xy[0, 0]), float(xy[0, 1]), float(h[0]), float(max(speed, 0.0)))
        self.agents.append(Agent(len(self.agents) + 1, "vehicle", length, width, (state,), route=route or (lane,), events=events))
        return True

    def traffic(self, lanes: list[str], count: int, s_range: tuple[float, float], speed_frac: tuple[float, float],
                routes: dict[str, tuple[str, ...]] | None = None) -> None:
        tries = 0
        placed = 0
        while placed < count and tries < count * 30:
            tries += 1
            lane = lanes[int(self.rng.integers(len(lanes)))]
            s = float(self.rng.uniform(*s_range))
            v = float(self.rng.uniform(*speed_frac)) * self.limits[lane]
            if self.add(lane, s, v, route=(routes or {}).get(lane, ())):
                placed += 1


def _ego_on(lane: Lane, s: float, speed: float) -> EgoStart:
    line = Polyline(np.asarray(lane.centerline))
    xy, h = line.interpolate(np.array([s]))
    return EgoStart(float(xy[0, 0]), float(xy[0, 1]), float(h[0]), float(speed))


def _shift_events(events: tuple[Event, ...]) -> tuple[Event, ...]:
    """Scripted times are given from the scene's start; the pre-simulation starts 2 s earlier."""
    return tuple(Event(e.time + PRE_STEPS * 0.1, e.action, e.decel, e.speed, e.lane, e.duration) for e in events)


# Scenario types -----------------------------------------------------------------------------
def _straight_scene(rng):
    n = int(rng.integers(2, 4))
    limit = float(rng.choice([13.9, 16.7, 19.4]))
    lanes = _lanes_from_reference(_straight(520.0), n, limit, "L")
    k = int(rng.integers(n))
    ego = _ego_on(lanes[k], 80.0, limit * float(rng.uniform(0.6, 0.95)))
    placer = _Placer(lanes, rng)
    placer.taken[lanes[k].id].append((80.0 - ego.speed * PRE_STEPS * 0.1, 5.2))
    if rng.random() < 0.7:  # a slow truck or car ahead in the ego's lane that keeps its speed: worth overtaking
        slow = float(rng.uniform(0.35, 0.6)) * limit
        keep = (Event(0.0, "brake", decel=1.0, speed=slow),)
        placer.add(lanes[k].id, 80.0 + float(rng.uniform(25.0, 70.0)) - slow * PRE_STEPS * 0.1, slow, events=keep, size=_vehicle(rng, 0.5), force=True)
    placer.traffic([lane.id for lane in lanes], int(rng.integers(4, 10)), (20.0, 300.0), (0.55, 0.95))
    return lanes, [lanes[k].id], ego, placer.agents, [], {"ego_lane": lanes[k].id}


def _curve_scene(rng):
    limit = float(rng.choice([13.9, 16.7]))
    lanes = _lanes_from_reference(_curve_ref(rng), 2, limit, "C")
    k = int(rng.integers(2))
    ego = _ego_on(lanes[k], 60.0, limit * float(rng.uniform(0.6, 0.95)))
    placer = _Placer(lanes, rng)
    placer.taken[lanes[k].id].append((60.0 + ego.speed, 5.2))
    placer.traffic([lane.id for lane in lanes], int(rng.integers(3, 8)), (20.0, 280.0), (0.55, 0.95))
    return lanes, [lanes[k].id], ego, placer.agents, [], {"ego_lane": lanes[k].id}


def _merge_scene(rng):
    """An on-ramp: ramp R joins an acceleration lane A beside main lane M0, which ends at 260 m."""
    limit = float(rng.choice([16.7, 19.4]))
    a0, a1, end = 150.0, 260.0, 560.0
    main_pieces = {"a": (0.0, a0), "b": (a0, a1), "c": (a1, end)}
    lanes: list[Lane] = []
    for name, (s0, s1) in main_pieces.items():
        ref = _straight(s1 - s0) + np.array([s0, 0.0])
        for i in range(2):
            c = ref + [0.0, i * LANE_W]
            lanes.append(Lane(
                f"M{i}{name}", _pts(c), _pts(c + [0, LANE_W / 2]), _pts(c - [0, LANE_W / 2]), limit,
                successors=(f"M{i}{chr(ord(name) + 1)}",) if name != "c" else (),
                left_neighbor=f"M1{name}" if i == 0 else None,
                right_neighbor=("A" if name == "b" else None) if i == 0 else f"M0{name}",
            ))
    accel = _straight(a1 - a0) + np.array([a0, -LANE_W])
    lanes.append(Lane("A", _pts(accel), _pts(accel + [0, LANE_W / 2]), _pts(accel - [0, LANE_W / 2]), limit, left_neighbor="M0b"))
    angle = np.deg2rad(float(rng.uniform(8.0, 14.0)))
    # A smooth ramp (cubic Hermite) from 130 m back, at `angle`, into the acceleration lane.
    p0 = np.array([a0 - 128.0, -LANE_W - 128.0 * np.tan(angle)])
    p1 = np.array([a0, -LANE_W])
    u = np.linspace(0.0, 1.0, 66)[:, None]
    chord = np.linalg.norm(p1 - p0)
    m0 = chord * np.array([np.cos(angle), np.sin(angle)])
    m1 = chord * np.array([1.0, 0.0])
    ramp = (2 * u**3 - 3 * u**2 + 1) * p0 + (u**3 - 2 * u**2 + u) * m0 + (-2 * u**3 + 3 * u**2) * p1 + (u**3 - u**2) * m1
    ramp_line = Polyline(ramp)
    lanes.append(Lane("R", _pts(ramp), _pts(ramp_line.offset(LANE_W / 2)), _pts(ramp_line.offset(-LANE_W / 2)), limit * 0.8, successors=("A",)))
    route = ["R", "A", "M0b", "M0c"]
    ego = _ego_on(lanes[-1], 40.0, float(rng.uniform(9.0, 13.0)))
    placer = _Placer(lanes, rng)
    for i in range(2):
        placer.traffic([f"M{i}a"], int(rng.integers(3, 7)), (5.0, 145.0), (0.55, 0.9), routes={f"M{i}a": (f"M{i}a", f"M{i}b", f"M{i}c")})
        placer.traffic([f"M{i}b"], int(rng.integers(1, 4)), (5.0, 105.0), (0.55, 0.9), routes={f"M{i}b": (f"M{i}b", f"M{i}c")})
    return lanes, route, ego, placer.agents, [], {"merge_end": a1}


def _intersection_scene(rng):
    """A four-way crossing without signals: ego crosses or turns; crossing traffic has the way."""
    limit = float(rng.choice([11.1, 13.9]))
    half = 8.0  # half size of the junction box
    arm = 180.0
    lanes: list[Lane] = []

    def straight_lane(lid, p0, p1, succ=()):
        n = max(2, int(np.linalg.norm(np.subtract(p1, p0)) / 2.0) + 1)
        c = np.linspace(p0, p1, n)
        line = Polyline(c)
        lanes.append(Lane(lid, _pts(c), _pts(line.offset(LANE_W / 2)), _pts(line.offset(-LANE_W / 2)), limit, successors=tuple(succ)))

    o = LANE_W / 2  # right-hand traffic: each direction's lane is offset to the right of the road axis
    # Eastbound (ego's road), westbound, northbound, southbound: in, through, out.
    straight_lane("E_in", (-arm, -o), (-half, -o), ["E_thru", "E_right", "E_left"])
    straight_lane("E_thru", (-half, -o), (half, -o), ["E_out"])
    straight_lane("E_out", (half, -o), (arm + 120, -o))
    straight_lane("W_in", (arm, o), (half, o), ["W_thru"])
    straight_lane("W_thru", (half, o), (-half, o), ["W_out"])
    straight_lane("W_out", (-half, o), (-arm - 120, o))
    straight_lane("N_in", (o, -arm), (o, -half), ["N_thru"])
    straight_lane("N_thru", (o, -half), (o, half), ["N_out"])
    straight_lane("N_out", (o, half), (o, arm + 120))
    straight_lane("S_in", (-o, arm), (-o, half), ["S_thru"])
    straight_lane("S_thru", (-o, half), (-o, -half), ["S_out"])
    straight_lane("S_out", (-o, -half), (-o, -arm - 120))

    def arc_lane(lid, center, r, a0, a1, succ):
        t = np.linspace(a0, a1, 16)
        c = np.column_stack([center[0] + r * np.cos(t), center[1] + r * np.sin(t)])
        line = Polyline(c)
        lanes.append(Lane(lid, _pts(c), _pts(line.offset(LANE_W / 2)), _pts(line.offset(-LANE_W / 2)), limit, successors=(succ,)))

    arc_lane("E_right", (-half, -half), half - o, np.pi / 2, 0.0, "S_out")  # eastbound turning right: southbound
    arc_lane("E_left", (-half, half), half + o, -np.pi / 2, 0.0, "N_out")  # eastbound turning left: northbound
    turn = str(rng.choice(["straight", "straight", "left", "right"]))
    route = {"straight": ["E_in", "E_thru", "E_out"], "left": ["E_in", "E_left", "N_out"], "right": ["E_in", "E_right", "S_out"]}[turn]
    ego_s = float(rng.uniform(100.0, 140.0))
    ego_v = limit * float(rng.uniform(0.7, 0.95))
    ego = _ego_on(lanes[0], ego_s, ego_v)
    placer = _Placer(lanes, rng)
    placer.taken["E_in"].append((ego_s, 5.2))
    # Crossing traffic timed to reach the junction around when the ego does.
    t_ego = (arm - half - ego_s) / max(ego_v, 1.0)
    for lid, route_ids in (("N_in", ("N_in", "N_thru", "N_out")), ("S_in", ("S_in", "S_thru", "S_out"))):
        for _ in range(int(rng.integers(1, 3))):
            v = limit * float(rng.uniform(0.7, 1.0))
            t_arrive = t_ego + float(rng.uniform(-2.5, 3.0))
            s = arm - half - v * (t_arrive + PRE_STEPS * 0.1)
            placer.add(lid, s, v, route=route_ids)
    for _ in range(int(rng.integers(1, 4))):
        placer.add("W_in", float(rng.uniform(10.0, 170.0)), limit * float(rng.uniform(0.6, 0.95)), route=("W_in", "W_thru", "W_out"))
    placer.traffic(["E_in"], int(rng.integers(0, 3)), (150.0, 175.0), (0.5, 0.8), routes={"E_in": ("E_in", "E_thru", "E_out")})
    box = [(-half - 1.0, -half - 1.0), (half + 1.0, -half - 1.0), (half + 1.0, half + 1.0), (-half - 1.0, half + 1.0)]
    return lanes, route, ego, placer.agents, [], {"turn": turn, "areas": [box]}


def _lead_braking_scene(rng):
    limit = float(rng.choice([13.9, 16.7]))
    ref = _straight(520.0) if rng.random() < 0.6 else _curve_ref(rng)
    lanes = _lanes_from_reference(ref, 2, limit, "L")
    k = int(rng.integers(2))
    v = limit * float(rng.uniform(0.75, 0.95))
    ego = _ego_on(lanes[k], 70.0, v)
    placer = _Placer(lanes, rng)
    gap = float(rng.uniform(15.0, 30.0))
    brake = Event(float(rng.uniform(1.5, 5.0)), "brake", decel=float(rng.uniform(4.0, 7.0)), speed=float(rng.choice([0.0, 0.0, 3.0])))
    # Both drive at v during the 2 s of history, so the gap at the start is `gap`.
    placer.add(lanes[k].id, 70.0 + gap - v * PRE_STEPS * 0.1, v, events=_shift_events((brake,)), force=True)
    placer.taken[lanes[k].id].append((70.0 - v * PRE_STEPS * 0.1, 5.2))
    other = lanes[1 - k].id
    placer.traffic([other], int(rng.integers(2, 6)), (10.0, 260.0), (0.6, 0.95))
    return lanes, [lanes[k].id], ego, placer.agents, [], {"brake_time": brake.time}


def _cut_in_scene(rng):
    limit = float(rng.choice([13.9, 16.7, 19.4]))
    n = int(rng.integers(2, 4))
    lanes = _lanes_from_reference(_straight(520.0), n, limit, "L")
    k = int(rng.integers(n))
    v = limit * float(rng.uniform(0.7, 0.95))
    ego = _ego_on(lanes[k], 70.0, v)
    side = [j for j in (k - 1, k + 1) if 0 <= j < n]
    j = int(rng.choice(side))
    v_cut = v - float(rng.uniform(1.0, 5.0))
    ahead = float(rng.uniform(4.0, 12.0))
    t_cut = float(rng.uniform(1.0, 3.5))
    # Place it so that it is `ahead` metres in front of the ego when it starts to cut in.
    s_cut = 70.0 + ahead + (v - v_cut) * t_cut - v_cut * PRE_STEPS * 0.1
    placer = _Placer(lanes, rng)
    ev = Event(t_cut, "lane_change", lane=lanes[k].id, duration=float(rng.uniform(1.5, 2.5)))
    placer.add(lanes[j].id, s_cut, v_cut, events=_shift_events((ev,)), force=True)
    placer.taken[lanes[k].id].append((70.0 - v * PRE_STEPS * 0.1, 5.2))
    placer.traffic([lane.id for lane in lanes], int(rng.integers(2, 7)), (10.0, 300.0), (0.6, 0.95))
    return lanes, [lanes[k].id], ego, placer.agents, [], {"cut_in_time": t_cut}


def _stopped_vehicle_scene(rng):
    limit = float(rng.choice([11.1, 13.9]))
    lanes = _lanes_from_reference(_straight(520.0), 2, limit, "L")
    k = int(rng.integers(2))
    ego = _ego_on(lanes[k], 60.0, limit * float(rng.uniform(0.6, 0.9)))
    placer = _Placer(lanes, rng)
    s_stop = 60.0 + float(rng.uniform(45.0, 90.0))
    placer.add(lanes[k].id, s_stop, 0.0, events=(Event(0.0, "brake", decel=6.0, speed=0.0),), force=True)
    placer.taken[lanes[k].id].append((60.0 - ego.speed * PRE_STEPS * 0.1, 5.2))
    line = Polyline(np.asarray(lanes[k].centerline))
    cone_xy, cone_h = line.interpolate(np.array([s_stop - 9.0]))
    statics = [StaticObject(1001, "cone", float(cone_xy[0, 0]), float(cone_xy[0, 1]), float(cone_h[0]), 0.5, 0.5)]
    other = lanes[1 - k].id
    placer.traffic([other], int(rng.integers(1, 5)), (0.0, 300.0), (0.6, 0.95))
    return lanes, [lanes[k].id], ego, placer.agents, statics, {"stopped_at": s_stop}


def _dense_traffic_scene(rng):
    limit = 13.9
    lanes = _lanes_from_reference(_straight(520.0), 3, limit, "L")
    k = int(rng.integers(3))
    ego_v = float(rng.uniform(5.0, 9.0))
    ego = _ego_on(lanes[k], 80.0, ego_v)
    placer = _Placer(lanes, rng)
    placer.taken[lanes[k].id].append((80.0 - ego_v * PRE_STEPS * 0.1, 5.2))
    for lane in lanes:
        s = float(rng.uniform(0.0, 10.0))
        while s < 300.0:
            v = float(rng.uniform(5.0, 9.0))
            events: tuple[Event, ...] = ()
            if rng.random() < 0.15:
                events = _shift_events((Event(float(rng.uniform(1.0, 10.0)), "brake", decel=float(rng.uniform(3.0, 5.0)), speed=float(rng.uniform(0.0, 3.0))),))
            elif rng.random() < 0.15:
                side = [lanes[i].id for i in (lanes.index(lane) - 1, lanes.index(lane) + 1) if 0 <= i < 3]
                events = _shift_events((Event(float(rng.uniform(1.0, 10.0)), "lane_change", lane=str(rng.choice(side)), duration=3.0),))
            placer.add(lane.id, s, v, events=events)
            s += float(rng.uniform(11.0, 22.0)) + v * 0.6
    return lanes, [lanes[k].id], ego, placer.agents, [], {}


_BUILDERS = {
    "straight": _straight_scene,
    "curve": _curve_scene,
    "merge": _merge_scene,
    "intersection": _intersection_scene,
    "lead_braking": _lead_braking_scene,
    "cut_in": _cut_in_scene,
    "stopped_vehicle": _stopped_vehicle_scene,
    "dense_traffic": _dense_traffic_scene,
}


# Pre-simulation -----------------------------------------------------------------------------
def _presimulate(sc: Scenario, agents: list[Agent]) -> Scenario:
    """Run the agents alone from 2 s before the start: their history, then a recorded future.

    Agents that would sit on top of (or right behind) the ego at the start are dropped and the
    run repeated, so every scene starts collision-free.
    """
    for _ in range(4):
        scene = Scene(sc.with_agents(tuple(agents)))
        sim = AgentSim(scene, reactive=True)
        states = [sim.state.copy()]
        active = [sim.active.copy()]
        for _ in range(PRE_STEPS + sc.steps):
            sim.step(None, (0.0, 0.0))
            states.append(sim.state.copy())
            active.append(sim.active.copy())
        states_a = np.array(states)
        active_a = np.array(active)
        bad = _too_close_to_ego(sc, states_a[PRE_STEPS], active_a[PRE_STEPS], agents)
        if not bad:
            break
        agents = [a for i, a in enumerate(agents) if i not in bad]
    out = []
    for i, agent in enumerate(agents):
        if not active_a[PRE_STEPS, i]:
            continue
        hist = tuple(tuple(float(v) for v in np.round(states_a[k, i], 3)) for k in range(PRE_STEPS + 1) if active_a[k, i])
        fut = []
        for k in range(PRE_STEPS + 1, len(states_a)):
            if not active_a[k, i]:
                break
            fut.append(tuple(float(v) for v in np.round(states_a[k, i], 3)))
        events = tuple(Event(e.time - PRE_STEPS * 0.1, e.action, e.decel, e.speed, e.lane, e.duration) for e in agent.events)
        out.append(Agent(len(out) + 1, agent.kind, agent.length, agent.width, hist, tuple(fut), agent.route, events))
    return sc.with_agents(tuple(out))


def _too_close_to_ego(sc: Scenario, states: np.ndarray, active: np.ndarray, agents: list[Agent]) -> set[int]:
    e = sc.ego
    rel = to_local(states[:, :2], np.array([e.x, e.y]), e.heading) if len(states) else np.zeros((0, 2))
    bad = set()
    for i in range(len(agents)):
        if not active[i]:
            continue
        lon, lat = rel[i]
        same_lane = abs(lat) < 2.5
        behind_fast = -(12.0 + 1.5 * states[i, 3]) < lon < 0 and same_lane and states[i, 3] > e.speed - 1.0
        overlap = abs(lon) < (5.2 + agents[i].length) / 2 + 2.0 and abs(lat) < 2.6
        if overlap or behind_fast:
            bad.add(i)
    return bad
