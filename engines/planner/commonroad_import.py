"""CommonRoad XML (2018b and 2020a) to the project's scenario format, through commonroad-io.

Lanelets become lanes (same-direction adjacency becomes neighbours; speed limits from MAX_SPEED
signs, else a default by lanelet type); the planning problem gives the ego start and the goal;
the route is the cheapest lanelet path to the goal (lane changes cost extra), extended along
successors so a 15 s episode has road ahead. Recorded obstacles keep their trajectories for log
replay; they have no recorded past, so their 2 s history is extrapolated backwards at constant
velocity.
"""
from __future__ import annotations

import contextlib
import heapq
import io
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from engines.core import EngineError

from .planners.base import HISTORY_STEPS
from .scenario import Agent, EgoStart, Lane, Scenario, StaticObject, validate

HIGHWAY_LIMIT = 29.0  # m/s when a highway lanelet has no sign (65 mph)
URBAN_LIMIT = 13.9  # m/s otherwise (50 km/h)
LANE_CHANGE_COST = 25.0  # metres a route lane change "costs" in the search
ROUTE_EXTENSION = 350.0  # metres of successors appended after the goal


def load_commonroad(path: Path, duration: float = 15.0) -> Scenario:
    path = Path(path)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        line, col = exc.position
        raise EngineError(f"{path.name} is not valid XML (line {line}, column {col})") from None
    except OSError as exc:
        raise EngineError(f"cannot read {path}: {exc.strerror or exc}") from None
    if root.tag != "commonRoad":
        raise EngineError(f"{path.name} is not a CommonRoad scenario (its root element is <{root.tag}>)")
    _check_goal_lanelets(root, path.name)
    try:
        from commonroad.common.file_reader import CommonRoadFileReader

        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scenario, problems = CommonRoadFileReader(str(path)).open()
    except Exception as exc:  # commonroad-io raises many kinds on malformed content
        raise EngineError(f"{path.name} is not a readable CommonRoad scenario ({type(exc).__name__}: {str(exc)[:80]})") from None
    return convert(scenario, problems, path.stem, duration)


def _check_goal_lanelets(root: ET.Element, name: str) -> None:
    """A goal that names a missing lanelet crashes commonroad-io deep inside; say which id is missing."""
    known = {el.get("id") for el in root.iter("lanelet") if el.get("id") is not None}
    for problem in root.iter("planningProblem"):
        for goal in problem.iter("goalState"):
            for ref in goal.iter("lanelet"):
                if ref.get("ref") is not None and ref.get("ref") not in known:
                    raise EngineError(f"{name}: the goal names lanelet {ref.get('ref')}, which the scenario does not have")


def convert(scenario, problems, name: str, duration: float) -> Scenario:
    net = scenario.lanelet_network
    if not net.lanelets:
        raise EngineError(f"the scene '{name}' is empty: it has no lanelets to drive on")
    if not problems.planning_problem_dict:
        raise EngineError(f"{name} has no planning problem, so there is no ego vehicle to drive")
    dt = float(scenario.dt)
    if not (np.isfinite(dt) and dt > 0):
        raise EngineError(f"{name} has a time step size of {scenario.dt} s: it must be a positive number")
    problem = next(iter(problems.planning_problem_dict.values()))
    limits = _speed_limits(net)
    lanes = [_lane(ll, limits) for ll in net.lanelets]
    init = problem.initial_state
    pos = np.asarray(init.position, dtype=float)
    heading = float(getattr(init, "orientation", 0.0) or 0.0)
    speed = float(getattr(init, "velocity", 0.0) or 0.0)
    if pos.shape != (2,) or not np.isfinite([*pos, heading, speed]).all():
        raise EngineError(f"{name}: the planning problem's initial state needs a finite position, orientation and velocity")
    ego = EgoStart(float(pos[0]), float(pos[1]), heading, max(speed, 0.0), float(getattr(init, "acceleration", 0.0) or 0.0))
    route = _route(net, pos, heading, problem)
    agents = tuple(a for a in (_agent(o, dt, duration) for o in scenario.dynamic_obstacles) if a is not None)
    statics = tuple(_static(o) for o in scenario.static_obstacles)
    sc = Scenario(name=name, lanes=tuple(lanes), route=tuple(route), ego=ego, agents=agents, static_objects=statics,
                  duration=duration, type="commonroad", source=f"{name}.xml")
    validate(sc)
    return sc


def _speed_limits(net) -> dict[int, float]:
    signs = {}
    for sign in net.traffic_signs:
        for el in sign.traffic_sign_elements:
            if "MAX_SPEED" in str(el.traffic_sign_element_id.name) and el.additional_values:
                try:
                    signs[sign.traffic_sign_id] = float(el.additional_values[0])
                except ValueError:
                    continue
    out = {}
    for ll in net.lanelets:
        found = [signs[s] for s in getattr(ll, "traffic_signs", set()) if s in signs]
        if found:
            out[ll.lanelet_id] = min(found)
        else:
            types = {str(t.value) for t in getattr(ll, "lanelet_type", set()) or set()}
            out[ll.lanelet_id] = HIGHWAY_LIMIT if types & {"highway", "interstate"} else URBAN_LIMIT
    return out


def _pts(a) -> tuple[tuple[float, float], ...]:
    return tuple((float(x), float(y)) for x, y in np.asarray(a, dtype=float))


def _lane(ll, limits: dict[int, float]) -> Lane:
    left = str(ll.adj_left) if ll.adj_left is not None and ll.adj_left_same_direction else None
    right = str(ll.adj_right) if ll.adj_right is not None and ll.adj_right_same_direction else None
    return Lane(str(ll.lanelet_id), _pts(ll.center_vertices), _pts(ll.left_vertices), _pts(ll.right_vertices),
                float(limits[ll.lanelet_id]), tuple(str(s) for s in ll.successor), left, right)


def _start_lanelets(net, pos: np.ndarray, heading: float) -> list[int]:
    """Lanelets under the ego that run roughly its way, best heading match first."""
    ids = net.find_lanelet_by_position([pos])[0]
    if not ids:
        raise EngineError("the route is unreachable: the ego does not start on any lanelet")
    scored = []
    for lid in ids:
        c = net.find_lanelet_by_id(lid).center_vertices
        k = min(int(np.argmin(np.linalg.norm(c - pos, axis=1))), len(c) - 2)
        d = c[k + 1] - c[k]
        scored.append((abs((np.arctan2(d[1], d[0]) - heading + np.pi) % (2 * np.pi) - np.pi), lid))
    scored.sort()
    return [lid for err, lid in scored if err < 1.2] or [scored[0][1]]


def _goal_lanelets(net, problem) -> set[int]:
    goal = problem.goal
    out: set[int] = set()
    if getattr(goal, "lanelets_of_goal_position", None):
        for ids in goal.lanelets_of_goal_position.values():
            out.update(ids)
    for state in goal.state_list:
        shape = getattr(state, "position", None)
        if shape is None:
            continue
        shapes = getattr(shape, "shapes", None) or [shape]
        for sh in shapes:
            c = getattr(sh, "center", None)
            if c is None or hasattr(c, "x"):
                c = (c or sh.shapely_object.centroid).coords[0]
            center = np.asarray(c, dtype=float)
            found = net.find_lanelet_by_position([center])[0]
            out.update(found)
    return out


def _route(net, pos: np.ndarray, heading: float, problem) -> list[str]:
    starts = _start_lanelets(net, pos, heading)
    goals = _goal_lanelets(net, problem)
    path = [starts[0]]
    if goals and not goals & set(starts):
        found = [r for r in (_search(net, s, goals) for s in starts) if r is not None]
        if not found:
            raise EngineError(f"the route is unreachable: no lanelet path leads from lanelet {starts[0]} to the goal")
        path = min(found)[1]
    # Extend along successors so the episode has road to drive on after the goal.
    total = 0.0
    while total < ROUTE_EXTENSION:
        ll = net.find_lanelet_by_id(path[-1])
        nxt = [s for s in ll.successor if s not in path]
        if not nxt:
            break
        path.append(nxt[0])
        total += float(np.linalg.norm(np.diff(net.find_lanelet_by_id(nxt[0]).center_vertices, axis=0), axis=1).sum())
    return [str(p) for p in path]


def _search(net, start: int, goals: set[int]) -> tuple[float, list[int]] | None:
    """Cheapest lanelet path (Dijkstra): successors cost their length, same-direction lane changes extra."""
    def length(lid: int) -> float:
        c = net.find_lanelet_by_id(lid).center_vertices
        return float(np.linalg.norm(np.diff(c, axis=0), axis=1).sum())

    heap = [(0.0, start, [start])]
    seen: set[int] = set()
    while heap:
        cost, lid, path = heapq.heappop(heap)
        if lid in goals:
            return cost, path
        if lid in seen:
            continue
        seen.add(lid)
        ll = net.find_lanelet_by_id(lid)
        steps = [(s, length(s)) for s in ll.successor]
        if ll.adj_left is not None and ll.adj_left_same_direction:
            steps.append((ll.adj_left, LANE_CHANGE_COST))
        if ll.adj_right is not None and ll.adj_right_same_direction:
            steps.append((ll.adj_right, LANE_CHANGE_COST))
        for nxt, c in steps:
            if nxt not in seen:
                heapq.heappush(heap, (cost + c, nxt, path + [nxt]))
    return None


def _kind(obstacle_type) -> str:
    name = str(getattr(obstacle_type, "value", obstacle_type)).lower()
    if "pedestrian" in name:
        return "pedestrian"
    if "bicycle" in name:
        return "cyclist"
    return "vehicle"


def _size(shape) -> tuple[float, float]:
    if hasattr(shape, "length") and hasattr(shape, "width"):
        return float(shape.length), float(shape.width)
    if hasattr(shape, "radius"):
        return 2 * float(shape.radius), 2 * float(shape.radius)
    minx, miny, maxx, maxy = shape.shapely_object.bounds
    return float(max(maxx - minx, 0.5)), float(max(maxy - miny, 0.5))


def _state_row(state, fallback_speed: float = 0.0) -> tuple[float, float, float, float]:
    p = np.asarray(state.position, dtype=float)
    v = getattr(state, "velocity", None)
    return (float(p[0]), float(p[1]), float(getattr(state, "orientation", 0.0) or 0.0), float(v) if v is not None else fallback_speed)


def _agent(o, dt: float, duration: float) -> Agent | None:
    shape = o.obstacle_shape
    length, width = _size(shape)
    init = o.initial_state
    current = _state_row(init)
    traj = []
    pred = getattr(o, "prediction", None)
    if pred is not None and hasattr(pred, "trajectory"):
        traj = [_state_row(s, current[3]) for s in pred.trajectory.state_list]
    rows = np.array([current, *traj], dtype=float)
    if abs(dt - 0.1) > 1e-6 and len(rows) > 1:  # resample to the simulator's 10 Hz
        t_src = np.arange(len(rows)) * dt
        t_dst = np.arange(0.0, t_src[-1] + 1e-9, 0.1)
        rows = np.column_stack([np.interp(t_dst, t_src, rows[:, i]) if i != 2 else np.interp(t_dst, t_src, np.unwrap(rows[:, 2])) for i in range(4)])
    x, y, h, v = rows[0]
    back = np.arange(-HISTORY_STEPS, 1) * 0.1
    history = tuple((float(x + np.cos(h) * v * t), float(y + np.sin(h) * v * t), float(h), float(v)) for t in back)
    start = int(round(getattr(init, "time_step", 0) * dt / 0.1))
    if start * 0.1 >= duration:
        return None
    return Agent(int(o.obstacle_id), _kind(o.obstacle_type), length, width, history, tuple(tuple(float(c) for c in r) for r in rows[1:]),
                 start_step=start)


def _static(o) -> StaticObject:
    length, width = _size(o.obstacle_shape)
    x, y, h, _ = _state_row(o.initial_state)
    return StaticObject(int(o.obstacle_id), str(getattr(o.obstacle_type, "value", "object")), x, y, h, length, width)
