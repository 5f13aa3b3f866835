"""The project's scenario format: lanes, route, ego start, agents, static objects, duration.

Procedural scenes and CommonRoad files both convert to a ``Scenario``; it round-trips through
JSON (documented in docs/planner.md). Validation turns every malformed or impossible scene into one
``EngineError`` sentence, so the CLI and the panel can show it as is.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from engines.core import EngineError, from_dict, json_loads, to_jsonable

FORMAT = "workbench-planner-scenario"
VERSION = 1
AGENT_KINDS = ("vehicle", "pedestrian", "cyclist")
EVENT_ACTIONS = ("brake", "lane_change")
Point = tuple[float, float]
State = tuple[float, float, float, float]  # x, y, heading, speed


@dataclass(frozen=True)
class Lane:
    """One lane: centerline and boundaries (polylines, metres), speed limit (m/s) and topology."""

    id: str
    centerline: tuple[Point, ...]
    left: tuple[Point, ...]
    right: tuple[Point, ...]
    speed_limit: float
    successors: tuple[str, ...] = ()
    left_neighbor: str | None = None
    right_neighbor: str | None = None


@dataclass(frozen=True)
class Event:
    """A scripted manoeuvre of an agent: hard braking or a lane change, starting at ``time`` (s)."""

    time: float
    action: str
    decel: float = 6.0  # brake: deceleration (m/s^2)
    speed: float = 0.0  # brake: speed to brake down to and keep (m/s)
    lane: str = ""  # lane_change: target lane id
    duration: float = 3.0  # lane_change: seconds to move across


@dataclass(frozen=True)
class Agent:
    """A traffic participant: box, past states (the last is t = 0) and, for log replay, its future.

    ``route`` is the lane sequence it follows when it drives reactively (IDM); empty means
    "the lane it is on, then the first successor of each lane".
    """

    id: int
    kind: str
    length: float
    width: float
    history: tuple[State, ...]
    trajectory: tuple[State, ...] = ()
    route: tuple[str, ...] = ()
    events: tuple[Event, ...] = ()
    start_step: int = 0


@dataclass(frozen=True)
class StaticObject:
    id: int
    kind: str
    x: float
    y: float
    heading: float
    length: float
    width: float


@dataclass(frozen=True)
class EgoStart:
    x: float
    y: float
    heading: float
    speed: float
    acceleration: float = 0.0


@dataclass(frozen=True)
class Scenario:
    name: str
    lanes: tuple[Lane, ...]
    route: tuple[str, ...]
    ego: EgoStart
    agents: tuple[Agent, ...] = ()
    static_objects: tuple[StaticObject, ...] = ()
    areas: tuple[tuple[Point, ...], ...] = ()  # drivable surface that is no lane (junction boxes)
    duration: float = 15.0
    dt: float = 0.1
    type: str = "custom"
    seed: int = 0
    source: str = "procedural"
    format: str = FORMAT
    version: int = VERSION
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return int(round(self.duration / self.dt))

    def lane(self, lane_id: str) -> Lane:
        for lane in self.lanes:
            if lane.id == lane_id:
                return lane
        raise KeyError(lane_id)

    def with_agents(self, agents: tuple[Agent, ...]) -> "Scenario":
        return replace(self, agents=agents)


# JSON ---------------------------------------------------------------------------------------
def scenario_to_dict(scenario: Scenario) -> dict[str, Any]:
    data = to_jsonable(scenario)
    return _round_floats(data)


def _round_floats(obj: Any, ndigits: int = 4) -> Any:
    if isinstance(obj, float):
        return round(obj, ndigits)
    if isinstance(obj, list):
        return [_round_floats(v, ndigits) for v in obj]
    if isinstance(obj, dict):
        return {k: _round_floats(v, ndigits) for k, v in obj.items()}
    return obj


def scenario_from_dict(data: Any, origin: str = "the scenario") -> Scenario:
    if not isinstance(data, dict):
        raise EngineError(f"{origin} is not a planner scenario: expected a JSON object")
    if data.get("format", FORMAT) != FORMAT:
        raise EngineError(f"{origin} is not a planner scenario (format {data.get('format')!r})")
    missing = [k for k in ("name", "lanes", "route", "ego") if k not in data]
    if missing:
        raise EngineError(f"{origin} is not a planner scenario: it lacks {', '.join(repr(m) for m in missing)}")
    version = data.get("version", VERSION)
    if not isinstance(version, int) or isinstance(version, bool):
        raise EngineError(f"{origin} has an invalid format version {version!r}: it must be a whole number like {VERSION}")
    if version > VERSION:
        raise EngineError(f"{origin} has format version {version}, newer than this program reads ({VERSION})")
    scenario = from_dict(Scenario, data)
    validate(scenario)
    return scenario


def load_scenario_json(path: Path) -> Scenario:
    return scenario_from_dict(json_loads(_read_text(path), path.name), path.name)


def _read_text(path: Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EngineError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise EngineError(f"{Path(path).name} is not a text file") from None
    except OSError as exc:
        raise EngineError(f"cannot read {path}: {exc.strerror or exc}") from None


# Validation ---------------------------------------------------------------------------------
MAX_START_OFFSET = 8.0  # metres between the ego start and its route before the route is "unreachable"
MAX_SPEED = 70.0  # m/s (252 km/h): faster speeds are typos, and they blow up the path look-ups
MAX_DECEL = 15.0  # m/s^2: 1.5 g, beyond any tyre
MAX_LANE_CHANGE = 30.0  # seconds across one lane
MAX_STATIC_SIZE = 500.0  # metres: a static box longer than that is a unit mistake


def validate(scenario: Scenario) -> None:
    """Raise one clear EngineError for a scene that cannot be simulated."""
    if not scenario.lanes:
        raise EngineError(f"the scene '{scenario.name}' is empty: it has no lanes to drive on")
    ids = [lane.id for lane in scenario.lanes]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[0]
        raise EngineError(f"lane id '{dup}' is used twice")
    known = set(ids)
    for lane in scenario.lanes:
        for name, pts in (("centerline", lane.centerline), ("left boundary", lane.left), ("right boundary", lane.right)):
            arr = np.asarray(pts, dtype=float)
            if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] != 2 or not np.isfinite(arr).all():
                raise EngineError(f"lane '{lane.id}' needs a {name} of at least two finite [x, y] points")
        if not (0.0 < lane.speed_limit < MAX_SPEED):
            raise EngineError(f"lane '{lane.id}' has an impossible speed limit {lane.speed_limit} m/s")
        for ref in (*lane.successors, lane.left_neighbor, lane.right_neighbor):
            if ref is not None and ref not in known:
                raise EngineError(f"lane '{lane.id}' refers to lane '{ref}', which the scene does not have")
    if not scenario.route:
        raise EngineError("the scene has no route: list at least one lane id under 'route'")
    for lane_id in scenario.route:
        if lane_id not in known:
            raise EngineError(f"the route is unreachable: it names lane '{lane_id}', which the scene does not have")
    for a, b in zip(scenario.route, scenario.route[1:]):
        la = scenario.lane(a)
        if b not in la.successors and b not in (la.left_neighbor, la.right_neighbor):
            raise EngineError(f"the route is unreachable: lane '{b}' neither follows nor neighbours lane '{a}'")
    if not (0.5 <= scenario.duration <= 120.0) or not (0.01 <= scenario.dt <= 1.0):
        raise EngineError("duration must be 0.5-120 s and dt 0.01-1 s")
    ego = scenario.ego
    if not all(np.isfinite([ego.x, ego.y, ego.heading, ego.speed, ego.acceleration])) or ego.speed < 0:
        raise EngineError("the ego start state must be finite with a non-negative speed")
    if ego.speed >= MAX_SPEED:
        raise EngineError(f"the ego starts at an impossible speed {ego.speed:g} m/s (at most {MAX_SPEED:g})")
    first = np.asarray(scenario.lane(scenario.route[0]).centerline, dtype=float)
    gap = _distance_to_polyline(np.array([ego.x, ego.y]), first)
    if gap > MAX_START_OFFSET:
        raise EngineError(
            f"the route is unreachable: the ego starts {gap:.1f} m from its first route lane '{scenario.route[0]}'"
        )
    for i, area in enumerate(scenario.areas):
        arr = np.asarray(area, dtype=float)
        if arr.ndim != 2 or arr.shape[0] < 3 or arr.shape[1] != 2 or not np.isfinite(arr).all():
            raise EngineError(f"drivable area {i} needs at least three finite [x, y] points")
    agent_ids = [a.id for a in scenario.agents]
    if len(set(agent_ids)) != len(agent_ids):
        raise EngineError("two agents share one id")
    for agent in scenario.agents:
        if agent.kind not in AGENT_KINDS:
            raise EngineError(f"agent {agent.id} has an unknown kind '{agent.kind}' (use {', '.join(AGENT_KINDS)})")
        if not agent.history:
            raise EngineError(f"agent {agent.id} has no state: give at least its current [x, y, heading, speed]")
        if not (0.1 < agent.length < 30 and 0.1 < agent.width < 6):
            raise EngineError(f"agent {agent.id} has an impossible size {agent.length} x {agent.width} m")
        for states in (agent.history, agent.trajectory):
            arr = np.asarray(states, dtype=float).reshape(-1, 4) if states else np.zeros((0, 4))
            if arr.shape[1:] != (4,) or not np.isfinite(arr).all():
                raise EngineError(f"agent {agent.id} has states that are not finite [x, y, heading, speed] rows")
            if len(arr) and np.abs(arr[:, 3]).max() >= MAX_SPEED:
                raise EngineError(f"agent {agent.id} has an impossible speed {np.abs(arr[:, 3]).max():g} m/s (at most {MAX_SPEED:g})")
        for lane_id in agent.route:
            if lane_id not in known:
                raise EngineError(f"agent {agent.id} follows lane '{lane_id}', which the scene does not have")
        if not (0 <= agent.start_step < scenario.steps):
            raise EngineError(f"agent {agent.id} starts at step {agent.start_step}, outside the scene's steps 0-{scenario.steps - 1}")
        for event in agent.events:
            _validate_event(agent.id, event, known)
    for obj in scenario.static_objects:
        if not np.isfinite([obj.x, obj.y, obj.heading]).all():
            raise EngineError(f"static object {obj.id} needs a finite position and heading")
        if not (0.0 < obj.length < MAX_STATIC_SIZE and 0.0 < obj.width < MAX_STATIC_SIZE):
            raise EngineError(f"static object {obj.id} has an impossible size {obj.length} x {obj.width} m")


def _validate_event(agent_id: int, event: Event, known: set[str]) -> None:
    """Every field is checked, not only the action's own: a NaN anywhere would reach the simulator."""
    if event.action not in EVENT_ACTIONS:
        raise EngineError(f"agent {agent_id} has an unknown event '{event.action}' (use {', '.join(EVENT_ACTIONS)})")
    if not np.isfinite(event.time):
        raise EngineError(f"agent {agent_id} has a {event.action} event at a time that is not a finite number of seconds")
    if not (0.0 < event.decel <= MAX_DECEL):
        raise EngineError(f"agent {agent_id} has a brake deceleration of {event.decel} m/s^2 (it must be above 0 and at most {MAX_DECEL:g})")
    if not (0.0 <= event.speed < MAX_SPEED):
        raise EngineError(f"agent {agent_id} brakes down to an impossible speed {event.speed} m/s")
    if not (0.0 < event.duration <= MAX_LANE_CHANGE):
        raise EngineError(f"agent {agent_id} has a lane change lasting {event.duration} s (it must be above 0 and at most {MAX_LANE_CHANGE:g})")
    if event.action == "lane_change" and event.lane not in known:
        raise EngineError(f"agent {agent_id} changes to lane '{event.lane}', which the scene does not have")


def _distance_to_polyline(p: np.ndarray, pts: np.ndarray) -> float:
    a, b = pts[:-1], pts[1:]
    ab = b - a
    t = np.clip(((p - a) * ab).sum(1) / np.maximum((ab * ab).sum(1), 1e-12), 0, 1)
    closest = a + t[:, None] * ab
    return float(np.min(np.linalg.norm(closest - p, axis=1)))
