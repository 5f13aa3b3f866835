"""CommonRoad XML (2018b and 2020a) to the project's scenario format, through commonroad-io.

What converts, and how:
- Lanelets become lanes (x, y of 3D points; same-direction adjacency becomes neighbours; speed
  limits from MAX_SPEED signs, else 29 m/s on highway/interstate lanelets and 13.9 m/s elsewhere).
- The planning problem (the lowest id when a file has several) gives the ego start and the goal.
  Its position may be a shape (its centre counts); a missing orientation is the lanelet's
  direction there, a missing velocity 0. The route is the cheapest lanelet path to the goal (goal
  shapes or goal lanelets); a goal given by time only, or one the lanelet graph cannot reach,
  leaves the route following successors from the start (the scenario's notes say which).
- Dynamic obstacles of every type become agents of the three simulator kinds (pedestrian,
  bicycle -> cyclist, everything else -> vehicle) with their real length and width (a
  non-rectangular shape: its bounding box in the obstacle's frame). Their logs (a trajectory, or the
  centres of an occupancy-set prediction) are resampled to 10 Hz; a position given as a shape is
  its centre, an interval its midpoint, and missing headings and speeds come from the motion
  between states. Logged states before the ego's start become the 2 s history; what the log lacks
  is extrapolated backwards at constant velocity. An obstacle with no prediction at all keeps its
  speed and heading if it stands or is no vehicle, and otherwise drives on with IDM along its lane.
- Static obstacles become static objects: one oriented box per shape, and a polygon that a box fits
  badly (a curved road boundary) is cut into pieces that boxes fit.

What is ignored (listed in ``Scenario.notes["commonroad"]``): traffic lights and their signal
states (lanelets with traffic lights and intersections load; nobody stops at red), traffic signs
other than speed limits, environment obstacles (buildings, vegetation) and phantom obstacles.

What is refused, with one EngineError sentence: files that are not XML or not CommonRoad, that
declare a DTD (entity bombs, external entities), versions commonroad-io cannot read, files it
fails on, scenes without lanelets or without a planning problem, impossible time steps, an ego
that starts far from every lanelet.

Only public attributes that commonroad-io 2023-2026 releases share are used (shapes and
occupancies expose ``length``/``width``, ``radius``, ``vertices``, ``shapes``/``occupancies``,
``center``, ``shapely_object``; predictions ``trajectory.state_list``, ``occupancy_set`` or
``occupancies``), since 2026 replaced the shape classes.
"""
from __future__ import annotations

import contextlib
import heapq
import io
import logging
import math
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator
from xml.parsers import expat

import numpy as np
import shapely
from shapely.geometry import GeometryCollection, LineString, Point, Polygon
from shapely.errors import GEOSException
from shapely.geometry.base import BaseGeometry

from engines.core import EngineError

from .planners.base import HISTORY_STEPS
from .scenario import MAX_START_OFFSET, MAX_STATIC_SIZE, Agent, EgoStart, Lane, Scenario, StaticObject, validate

STEP = 0.1  # s: the simulator's step; every log is resampled to it
HIGHWAY_LIMIT = 29.0  # m/s when a highway lanelet has no sign (65 mph)
URBAN_LIMIT = 13.9  # m/s otherwise (50 km/h)
HIGHWAY_TYPES = {"highway", "interstate"}  # lanelet types and scenario tags of a highway
LANE_CHANGE_COST = 25.0  # metres a route lane change "costs" in the search
ROUTE_EXTENSION = 350.0  # metres of successors appended after the goal
MAX_FILE_BYTES = 256 * 2**20  # the public benchmark files seen so far are at most 4 MB
MAX_ANGLE = 1000.0  # rad: commonroad-io brings angles into range one turn at a time (inf never ends)
MAX_RECORDING = 3600.0  # s: a log longer than this is a unit mistake, and its 10 Hz grid would be huge
READABLE_VERSIONS = ("2018b", "2020a")  # when commonroad-io does not say
AGENT_LENGTH = (0.2, 29.9)  # m: inside scenario.validate's agent limits
AGENT_WIDTH = (0.2, 5.9)
THIN = 0.1  # m: the thickness given to a shape with no area (a line)
STANDING = 0.1  # m/s: slower counts as standing
MOVING = 0.2  # m/s: faster motion between states gives a heading
BOX_FILL = 0.75  # a static shape covering less of its box than this is cut in two
MAX_CUTS = 5  # halvings of a static shape that fills its box badly (32 pieces); 11 for one that is too long


# Reading ------------------------------------------------------------------------------------
def load_commonroad(path: Path, duration: float = 15.0) -> Scenario:
    """A CommonRoad file as a simulator scenario, or one EngineError saying why not."""
    path = Path(path)
    given = _initial_fields(_parse(path))
    scenario, problems = _read(path)
    return _guarded(lambda: convert(scenario, problems, path.stem, duration, given), path.name)


def read_commonroad(path: Path) -> tuple[Any, Any]:
    """commonroad-io's scenario and planning-problem set, after the checks that keep hostile and
    foreign files away from it; its prints, warnings and log lines are swallowed."""
    path = Path(path)
    _parse(path)
    return _read(path)


def _read(path: Path) -> tuple[Any, Any]:
    try:
        with _quiet():
            from commonroad.common.file_reader import CommonRoadFileReader

            return CommonRoadFileReader(str(path)).open()
    except Exception as exc:  # commonroad-io raises many kinds on malformed content
        raise EngineError(f"{path.name} is not a readable CommonRoad scenario ({type(exc).__name__}: {str(exc)[:80]})") from None


def _parse(path: Path) -> ET.Element:
    try:
        if not path.is_file():
            raise EngineError(f"{path}: no such file" if not path.exists() else f"{path.name} is not a regular file")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise EngineError(f"{path.name} is {size / 2**20:.0f} MiB; CommonRoad files over {MAX_FILE_BYTES // 2**20} MiB are refused")
        _refuse_doctype(path)
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        line, col = exc.position
        raise EngineError(f"{path.name} is not valid XML (line {line}, column {col})") from None
    except OSError as exc:
        raise EngineError(f"cannot read {path}: {exc.strerror or exc}") from None
    if root.tag != "commonRoad":
        raise EngineError(f"{path.name} is not a CommonRoad scenario (its root element is <{root.tag}>)")
    readable = _readable_versions()
    version = root.get("commonRoadVersion")
    if version not in readable:
        raise EngineError(f"{path.name} is CommonRoad version {version or '(none given)'}; commonroad-io reads {' and '.join(readable)}")
    _check_goal_lanelets(root, path.name)
    _check_orientations(root, path.name)
    _check_adjacency(root, path.name)
    return root


class _PrologDone(Exception):
    pass


def _refuse_doctype(path: Path) -> None:
    """A DTD can define entities that expand without bound or read other files; CommonRoad has none.
    Only the prolog is read here (a DTD must come before the root element)."""
    parser = expat.ParserCreate()

    def doctype(*_: Any) -> None:
        raise EngineError(f"{path.name} declares a document type (<!DOCTYPE>); CommonRoad files have none, and such files are "
                          "refused because their entities can expand without bound or read other files")

    def root(*_: Any) -> None:
        raise _PrologDone

    parser.StartDoctypeDeclHandler = doctype
    parser.StartElementHandler = root
    try:
        with path.open("rb") as f:
            while chunk := f.read(1 << 16):
                parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except (_PrologDone, expat.ExpatError):
        return  # the full parse names a syntax error's position


def _readable_versions() -> tuple[str, ...]:
    try:
        from commonroad import SUPPORTED_COMMONROAD_VERSIONS

        return tuple(sorted(SUPPORTED_COMMONROAD_VERSIONS))
    except ImportError:
        return READABLE_VERSIONS


def _initial_fields(root: ET.Element) -> dict[str, frozenset[str]]:
    """The fields each initial state really has ("problem 100", "obstacle 12" -> {"position", ...}):
    commonroad-io fills a missing orientation or velocity with 0, which would point the ego east
    and stop a moving obstacle whatever the file's motion says."""
    out = {}
    for el in root:
        init = el.find("initialState")
        if init is not None and el.tag in ("planningProblem", "dynamicObstacle", "obstacle"):
            out[f"{'problem' if el.tag == 'planningProblem' else 'obstacle'} {el.get('id')}"] = frozenset(c.tag for c in init)
    return out


def _check_goal_lanelets(root: ET.Element, name: str) -> None:
    """A goal that names a missing lanelet crashes commonroad-io deep inside; say which id is missing."""
    known = {el.get("id") for el in root.iter("lanelet") if el.get("id") is not None}
    for problem in root.iter("planningProblem"):
        for goal in problem.iter("goalState"):
            for ref in goal.iter("lanelet"):
                if ref.get("ref") is not None and ref.get("ref") not in known:
                    raise EngineError(f"{name}: the goal names lanelet {ref.get('ref')}, which the scenario does not have")


def _check_orientations(root: ET.Element, name: str) -> None:
    """An infinite or huge orientation makes commonroad-io loop for ever."""
    for el in root.iter("orientation"):
        for node in el.iter():
            value = _value(node.text.strip()) if node.text and node.text.strip() else None
            if value is not None and not abs(value) <= MAX_ANGLE:
                raise EngineError(f"{name} has an orientation of {node.text.strip()} rad; orientations must be finite and within "
                                  f"{MAX_ANGLE:g} rad of 0")


def _check_adjacency(root: ET.Element, name: str) -> None:
    """commonroad-io walks same-direction neighbours to place signs and lights: a circle hangs it."""
    for side in ("adjacentLeft", "adjacentRight"):
        nxt = {}
        for ll in root.iter("lanelet"):
            ref = ll.find(side)
            if ref is not None and ref.get("drivingDir") == "same":
                nxt[ll.get("id")] = ref.get("ref")
        for start in nxt:
            seen, cur = {start}, nxt[start]
            while cur in nxt:
                if cur in seen:
                    raise EngineError(f"{name}: the {side[8:].lower()} neighbours of lanelet {start} lead back to lanelet {cur}; "
                                      "a lanelet cannot be its own neighbour")
                seen.add(cur)
                cur = nxt[cur]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """commonroad-io prints, warns and logs about files it reads anyway; none of it reaches the user."""
    loggers = [logging.getLogger(n) for n in ("commonroad", "shapely")]
    disabled = [lg.disabled for lg in loggers]
    try:
        for lg in loggers:
            lg.disabled = True
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, was in zip(loggers, disabled):
            lg.disabled = was


def _guarded(make: Any, name: str) -> Any:
    """Content that commonroad-io accepted but this converter cannot handle is one sentence too."""
    try:
        with _quiet():
            return make()
    except EngineError:
        raise
    except Exception as exc:
        raise EngineError(f"{name} holds CommonRoad content this converter does not support ({type(exc).__name__}: {str(exc)[:100]})") from None


# Scene --------------------------------------------------------------------------------------
def convert(scenario: Any, problems: Any, name: str, duration: float = 15.0, given: dict[str, frozenset[str]] | None = None) -> Scenario:
    """commonroad-io objects to a simulator scenario (see the module docstring for the rules).
    ``given``: the fields each initial state has in the file (see _initial_fields)."""
    net = scenario.lanelet_network
    lanelets = {int(ll.lanelet_id): ll for ll in net.lanelets}
    if not lanelets:
        raise EngineError(f"the scene '{name}' is empty: it has no lanelets to drive on")
    dt = _value(scenario.dt)
    if dt is None or not (math.isfinite(dt) and dt > 0):
        raise EngineError(f"{name} has a time step size of {scenario.dt} s: it must be a positive number")
    notes: list[str] = []
    problem = _planning_problem(problems, name, notes)
    lanes = _lanes(net, lanelets, notes, _highway(scenario))
    fields = (given or {}).get(f"problem {getattr(problem, 'planning_problem_id', '')}")
    ego, start = _ego(net, lanelets, problem, dt, name, notes, fields)
    route = _route(net, lanelets, ego, problem, notes)
    traffic = recorded_traffic(scenario, given)
    agents = _agents(traffic, start, duration, notes)
    statics = tuple(s for o in scenario.static_obstacles for s in _statics(o))
    _note_ignored(scenario, net, notes)
    sc = Scenario(name=name, lanes=lanes, route=tuple(route), ego=ego, agents=agents, static_objects=statics,
                  duration=duration, type="commonroad", source=f"{name}.xml", notes={"commonroad": notes} if notes else {})
    validate(sc)
    return sc


def _planning_problem(problems: Any, name: str, notes: list[str]) -> Any:
    found = getattr(problems, "planning_problem_dict", None) or {}
    if not found:
        raise EngineError(f"{name} has no planning problem, so there is no ego vehicle to drive")
    first = min(found)
    if len(found) > 1:
        notes.append(f"the file has {len(found)} planning problems; the first (id {first}) is driven")
    return found[first]


def _note_ignored(scenario: Any, net: Any, notes: list[str]) -> None:
    for attr, what in (("environment_obstacle", "environment obstacles (buildings, vegetation) are"),
                       ("phantom_obstacle", "phantom obstacles are")):
        n = len(getattr(scenario, attr, None) or ())
        if n:
            notes.append(f"{n} {what} not converted")
    lights = len(getattr(net, "traffic_lights", None) or ())
    if lights:
        notes.append(f"{lights} traffic lights are ignored: agents replay their log and nobody stops at red")


# Lanes --------------------------------------------------------------------------------------
def _xy(vertices: Any) -> np.ndarray:
    return np.asarray(vertices, dtype=float).reshape(len(vertices), -1)[:, :2]


def _pts(vertices: Any) -> tuple[tuple[float, float], ...]:
    return tuple((float(x), float(y)) for x, y in _xy(vertices))


def _length(ll: Any) -> float:
    return float(np.linalg.norm(np.diff(_xy(ll.center_vertices), axis=0), axis=1).sum())


def _highway(scenario: Any) -> bool:
    """Whether the file tags its road a highway or interstate. NGSIM US-101's files do, and have no
    speed signs and no lanelet types, or 'urban' ones: 50 km/h would make every recorded driver a
    speeder, and the rule-based planners crawl."""
    tags = {str(getattr(t, "value", t)).lower() for t in getattr(scenario, "tags", None) or ()}
    return bool(tags & HIGHWAY_TYPES)


def _lanes(net: Any, lanelets: dict[int, Any], notes: list[str], highway: bool = False) -> tuple[Lane, ...]:
    limits = _speed_limits(net, lanelets, highway)
    dangling = 0

    def ref(lid: Any) -> str | None:
        nonlocal dangling
        if lid is None:
            return None
        if int(lid) not in lanelets:
            dangling += 1
            return None
        return str(lid)

    lanes = []
    for lid, ll in lanelets.items():
        left = ref(ll.adj_left) if ll.adj_left is not None and ll.adj_left_same_direction else None
        right = ref(ll.adj_right) if ll.adj_right is not None and ll.adj_right_same_direction else None
        succ = tuple(s for s in (ref(s) for s in ll.successor or ()) if s is not None)
        lanes.append(Lane(str(lid), _pts(ll.center_vertices), _pts(ll.left_vertices), _pts(ll.right_vertices),
                          limits[lid], succ, left, right))
    if dangling:
        notes.append(f"{dangling} references to lanelets the file does not have are dropped")
    return tuple(lanes)


def _speed_limits(net: Any, lanelets: dict[int, Any], highway: bool) -> dict[int, float]:
    """Per lanelet: the lowest MAX_SPEED sign on it, else the default of its lanelet type, else
    the default of the road the scenario's tags name."""
    signs: dict[Any, float] = {}
    for sign in getattr(net, "traffic_signs", None) or ():
        for el in sign.traffic_sign_elements:
            if "MAX_SPEED" not in str(getattr(el.traffic_sign_element_id, "name", "")):
                continue
            for value in el.additional_values or ():
                limit = _value(value)
                if limit is not None and 0.0 < limit < 70.0:
                    signs[sign.traffic_sign_id] = limit
                    break
    out = {}
    for lid, ll in lanelets.items():
        found = [signs[s] for s in getattr(ll, "traffic_signs", None) or () if s in signs]
        if found:
            out[lid] = min(found)
        else:
            types = {str(getattr(t, "value", t)) for t in getattr(ll, "lanelet_type", None) or ()}
            out[lid] = HIGHWAY_LIMIT if types & HIGHWAY_TYPES or highway else URBAN_LIMIT
    return out


# Ego and route ------------------------------------------------------------------------------
def _ego(net: Any, lanelets: dict[int, Any], problem: Any, dt: float, name: str, notes: list[str],
         fields: frozenset[str] | None) -> tuple[EgoStart, int]:
    init = problem.initial_state
    pos = _position(getattr(init, "position", None))
    if pos is None:
        raise EngineError(f"{name}: the planning problem's initial state has no usable position")
    heading, speed = _heading_speed(init)
    if fields is not None:
        heading = heading if "orientation" in fields else None
        speed = speed if "velocity" in fields else None
    if not np.isfinite(pos).all() or (heading is not None and not math.isfinite(heading)) or (speed is not None and not math.isfinite(speed)):
        raise EngineError(f"{name}: the planning problem's initial state needs a finite position, orientation and velocity")
    if heading is None:
        lid = _lanelets_at(net, lanelets, pos, None, [])[0]
        heading = _direction(lanelets[lid], pos)
        notes.append(f"the ego's initial orientation is missing: it faces along lanelet {lid}")
    if speed is None:
        speed = 0.0
        notes.append("the ego's initial velocity is missing: it starts at rest")
    accel = _value(getattr(init, "acceleration", None))
    t0 = _value(getattr(init, "time_step", None)) or 0.0
    if not 0.0 <= t0 * dt <= MAX_RECORDING:
        raise EngineError(f"{name}: the ego starts at time step {t0:g}; time steps run from 0 to {MAX_RECORDING:g} s")
    ego = EgoStart(float(pos[0]), float(pos[1]), float(heading), max(float(speed), 0.0),
                   accel if accel is not None and math.isfinite(accel) else 0.0)
    return ego, int(round(t0 * dt / STEP))


def _direction(ll: Any, pos: np.ndarray) -> float:
    c = _xy(ll.center_vertices)
    k = min(int(np.argmin(np.linalg.norm(c - pos, axis=1))), len(c) - 2)
    d = c[k + 1] - c[k]
    return float(np.arctan2(d[1], d[0]))


def _lanelets_at(net: Any, lanelets: dict[int, Any], pos: np.ndarray, heading: float | None, notes: list[str]) -> list[int]:
    """Lanelets under the ego that run roughly its way, best heading match first; the nearest
    lanelet when the ego stands just beside every lanelet."""
    ids = [int(i) for i in net.find_lanelet_by_position([pos])[0] if int(i) in lanelets]
    if not ids:
        p = Point(pos)
        gap, nearest = min((LineString(_xy(ll.center_vertices)).distance(p), lid) for lid, ll in lanelets.items())
        if gap > MAX_START_OFFSET:
            raise EngineError(f"the route is unreachable: the ego starts {gap:.1f} m from the nearest lanelet ({nearest})")
        notes.append(f"the ego starts beside the lanelets; its route begins on the nearest one ({nearest}, {gap:.1f} m away)")
        return [nearest]
    if heading is None:
        return sorted(ids)
    scored = sorted((abs(_wrap(_direction(lanelets[lid], pos) - heading)), lid) for lid in ids)
    return [lid for err, lid in scored if err < 1.2] or [scored[0][1]]


def _goal_lanelets(net: Any, lanelets: dict[int, Any], problem: Any) -> set[int]:
    goal = problem.goal
    out: set[int] = set()
    for ids in (getattr(goal, "lanelets_of_goal_position", None) or {}).values():
        out.update(int(i) for i in ids)
    for state in getattr(goal, "state_list", None) or ():
        position = getattr(state, "position", None)
        geom = _geometry(position)
        if geom is None:
            point = _position(position)
            if point is None:
                continue
            geom = Point(point)
        for part in _parts(geom):
            if not part.is_empty:
                c = part.centroid
                out.update(int(i) for i in net.find_lanelet_by_position([np.array([c.x, c.y])])[0])
    return out & set(lanelets)


def _route(net: Any, lanelets: dict[int, Any], ego: EgoStart, problem: Any, notes: list[str]) -> list[str]:
    pos = np.array([ego.x, ego.y])
    starts = _lanelets_at(net, lanelets, pos, ego.heading, notes)
    goals = _goal_lanelets(net, lanelets, problem)
    path = [starts[0]]
    if not goals:
        notes.append("the goal names no lanelet (time only, or off the road): the route follows successors from the start")
    elif not goals & set(starts):
        found = [r for r in (_search(lanelets, s, goals) for s in starts) if r is not None]
        if found:
            path = min(found)[1]
        else:
            notes.append(f"no lanelet path leads from lanelet {starts[0]} to the goal: the route follows successors from the start")
    # Extend along successors so the episode has road to drive on after the goal.
    total = 0.0
    while total < ROUTE_EXTENSION:
        nxt = [int(s) for s in lanelets[path[-1]].successor or () if int(s) in lanelets and int(s) not in path]
        if not nxt:
            break
        path.append(nxt[0])
        total += _length(lanelets[nxt[0]])
    return [str(p) for p in path]


def _search(lanelets: dict[int, Any], start: int, goals: set[int]) -> tuple[float, list[int]] | None:
    """Cheapest lanelet path (Dijkstra): successors cost their length, same-direction lane changes extra."""
    heap = [(0.0, start, [start])]
    seen: set[int] = set()
    while heap:
        cost, lid, path = heapq.heappop(heap)
        if lid in goals:
            return cost, path
        if lid in seen:
            continue
        seen.add(lid)
        ll = lanelets[lid]
        steps = [(int(s), _length(lanelets[int(s)])) for s in ll.successor or () if int(s) in lanelets]
        for adj, same in ((ll.adj_left, ll.adj_left_same_direction), (ll.adj_right, ll.adj_right_same_direction)):
            if adj is not None and same and int(adj) in lanelets:
                steps.append((int(adj), LANE_CHANGE_COST))
        for nxt, c in steps:
            if nxt not in seen:
                heapq.heappush(heap, (cost + c, nxt, path + [nxt]))
    return None


# Values, positions, shapes ------------------------------------------------------------------
def _value(v: Any) -> float | None:
    """A number, an interval's midpoint, or None when missing or not a number."""
    if v is None:
        return None
    start, end = getattr(v, "start", None), getattr(v, "end", None)
    try:
        if start is not None and end is not None:
            return (float(start) + float(end)) / 2.0
        return float(v)
    except (TypeError, ValueError):
        return None


def _position(p: Any) -> np.ndarray | None:
    """A point as is; a shape (uncertain position) by its centre."""
    if p is None:
        return None
    if not hasattr(p, "shapely_object") and not hasattr(p, "shapes") and not hasattr(p, "occupancies"):
        try:
            arr = np.asarray(p, dtype=float).reshape(-1)
            if arr.size >= 2:
                return arr[:2].copy()
        except (TypeError, ValueError):
            pass
    geom = _geometry(p)
    if geom is None or geom.is_empty:
        return None
    c = geom.centroid
    return np.array([c.x, c.y]) if not c.is_empty else None


def _point(c: Any) -> Point:
    """A centre as commonroad-io gives it: an array (up to 2024) or a shapely point (2026)."""
    return c if isinstance(c, Point) else Point(np.asarray(c, dtype=float).reshape(-1)[:2])


def _geometry(shape: Any) -> BaseGeometry | None:
    """Any commonroad-io shape or occupancy as a shapely geometry (groups as collections)."""
    if shape is None or isinstance(shape, BaseGeometry):
        return shape
    for attr in ("shapes", "occupancies"):
        members = getattr(shape, attr, None)
        if members is not None and not isinstance(members, dict):
            parts = [g for g in (_geometry(m) for m in members) if g is not None and not g.is_empty]
            return GeometryCollection(parts) if parts else None
    try:
        radius, center = _value(getattr(shape, "radius", None)), getattr(shape, "center", None)
        if radius is not None and center is not None:
            geom = _point(center).buffer(max(radius, THIN / 2))  # 2026's own circle polygon has half the radius
        elif getattr(shape, "shapely_object", None) is not None:
            geom = shape.shapely_object
        elif getattr(shape, "vertices", None) is not None:
            geom = Polygon(_xy(shape.vertices))
        else:
            return None
        if not np.isfinite(shapely.get_coordinates(geom)).all():
            return None
        return geom if geom.is_valid else shapely.make_valid(geom)
    except (GEOSException, ValueError, TypeError):  # a NaN size, too few points: no place to take
        return None


def _parts(geom: BaseGeometry) -> list[BaseGeometry]:
    if hasattr(geom, "geoms"):
        return [p for g in geom.geoms for p in _parts(g)]
    return [geom]


def _body_size(shape: Any) -> tuple[float, float] | None:
    """Length and width of an obstacle's shape in its own frame (x forward); None for an unknown shape."""
    length, width = _value(getattr(shape, "length", None)), _value(getattr(shape, "width", None))
    if length is not None and width is not None:
        return length, width
    radius = _value(getattr(shape, "radius", None))
    if radius is not None:
        return 2 * radius, 2 * radius
    geom = _geometry(shape) if not hasattr(shape, "compute_occupancy_for_state") else _footprint_at_origin(shape)
    if geom is None or geom.is_empty:
        return None
    minx, miny, maxx, maxy = geom.bounds
    return float(maxx - minx), float(maxy - miny)


def _footprint_at_origin(shape: Any) -> BaseGeometry | None:
    """2026's obstacle shapes (trucks, semi-trailers, ...) compute their own footprint for a state."""
    from commonroad.scenario.state import InitialState

    state = InitialState(time_step=0, position=np.zeros(2), orientation=0.0, velocity=0.0)
    return _geometry(shape.compute_occupancy_for_state(state))


def _corners(cx: float, cy: float, h: float, length: float, width: float) -> Polygon:
    u, n = np.array([np.cos(h), np.sin(h)]) * length / 2, np.array([-np.sin(h), np.cos(h)]) * width / 2
    c = np.array([cx, cy])
    return Polygon([c + u + n, c - u + n, c - u - n, c + u - n])


def _box(geom: BaseGeometry, hint: float) -> tuple[float, float, float, float, float]:
    """The oriented bounding box (x, y, heading, length, width); heading along the long side, the
    way closer to ``hint``."""
    rect = shapely.oriented_envelope(geom)
    c = rect.centroid
    if isinstance(rect, Polygon):
        p = np.asarray(rect.exterior.coords)[:4]
        a, b = p[1] - p[0], p[2] - p[1]
        la, lb = np.linalg.norm(a), np.linalg.norm(b)
        square = abs(la - lb) <= 1e-3 * max(la, lb)  # then the side nearer the hint leads
        if (lb > la and not square) or (square and abs(np.cos(np.arctan2(b[1], b[0]) - hint)) > abs(np.cos(np.arctan2(a[1], a[0]) - hint))):
            a, b = b, a
        length, width = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    elif isinstance(rect, LineString):
        p = np.asarray(rect.coords)
        a = p[-1] - p[0]
        length, width = float(np.linalg.norm(a)), 0.0
    else:
        a, length, width = np.array([1.0, 0.0]), 0.0, 0.0
    h = float(np.arctan2(a[1], a[0]))
    if abs(_wrap(h - hint)) > np.pi / 2:
        h = _wrap(h + np.pi)
    return float(c.x), float(c.y), h, max(length, THIN), max(width, THIN)


def _boxes(geom: BaseGeometry, hint: float, cuts: int = MAX_CUTS) -> list[tuple[float, float, float, float, float]]:
    """Boxes covering a static shape: one per part, cut in two (across or along, whichever leaves
    less box outside the shape) while the part fills its box badly or the box is too long."""
    out = []
    for part in _parts(geom if geom.is_valid else shapely.make_valid(geom)):
        if part.is_empty or (cuts < MAX_CUTS and part.area <= 1e-6):
            continue
        box = _box(part, hint)
        snug = part.area >= BOX_FILL * box[3] * box[4] or box[3] < 2.0
        if (snug or cuts <= 0) and (box[3] < MAX_STATIC_SIZE / 2 or cuts <= MAX_CUTS - 11):
            out.append(box)
            continue
        cuts_tried = [_halves(part, box, across) for across in ((True,) if snug else (True, False))]
        best = min(cuts_tried, key=lambda pieces: sum(shapely.oriented_envelope(p).area for p in pieces if not p.is_empty))
        for piece in best:
            out += _boxes(piece, hint, cuts - 1)
    return out


def _halves(part: BaseGeometry, box: tuple[float, float, float, float, float], across: bool) -> list[BaseGeometry]:
    """The part cut through its box's centre, across the long side or along it."""
    x, y, h, length, width = box
    if not across:
        h, length, width = h + np.pi / 2, width, length
    u = np.array([np.cos(h), np.sin(h)]) * length / 4
    try:
        return [part.intersection(_corners(x + s * u[0], y + s * u[1], h, length / 2 + 1e-6, width + 1e-6)) for s in (1, -1)]
    except GEOSException:  # a shape GEOS cannot cut stays whole
        return [part]


def _wrap(a: float) -> float:
    return float((a + np.pi) % (2 * np.pi) - np.pi)


# Recorded traffic ---------------------------------------------------------------------------
@dataclass(frozen=True)
class RecordedTraffic:
    """Every dynamic obstacle's logged track on one 10 Hz grid: step k is t = k * 0.1 s of the
    recording (CommonRoad time step k * 0.1 / dt). ``states[i, k]`` is x, y (m), heading (rad),
    speed (m/s), meaningful only where ``valid[i, k]`` (zeros elsewhere). For learning from
    recorded driving: the same tracks the converter turns into agents."""

    ids: np.ndarray  # (N,) obstacle ids
    kinds: tuple[str, ...]  # vehicle | pedestrian | cyclist
    types: tuple[str, ...]  # the CommonRoad obstacle type: car, bus, parkedVehicle, ...
    length: np.ndarray  # (N,) m
    width: np.ndarray  # (N,) m
    states: np.ndarray  # (N, T, 4)
    valid: np.ndarray  # (N, T) bool
    dt: float = STEP

    @property
    def steps(self) -> int:
        return int(self.valid.shape[1])


def load_recorded_traffic(path: Path) -> RecordedTraffic:
    """The recorded traffic of a CommonRoad file (no planning problem needed)."""
    path = Path(path)
    given = _initial_fields(_parse(path))
    scenario, _ = _read(path)
    return _guarded(lambda: recorded_traffic(scenario, given), path.name)


def recorded_traffic(scenario: Any, given: dict[str, frozenset[str]] | None = None) -> RecordedTraffic:
    """Every dynamic obstacle of a commonroad-io scenario, resampled to 10 Hz (see RecordedTraffic).
    ``given``: the fields each initial state has in the file (without it, commonroad-io's 0 for a
    missing orientation or velocity is taken as logged)."""
    dt = _value(scenario.dt)
    if dt is None or not (math.isfinite(dt) and dt > 0):
        raise EngineError(f"a time step size of {scenario.dt} s is impossible: it must be a positive number")
    tracks = []
    for o in scenario.dynamic_obstacles:
        track = _track(o, dt, (given or {}).get(f"obstacle {o.obstacle_id}"))
        if track is not None:
            tracks.append((o, *track))
    steps = max((k0 + len(rows) for _, k0, rows, _ in tracks), default=0)
    n = len(tracks)
    states, valid = np.zeros((n, steps, 4)), np.zeros((n, steps), dtype=bool)
    sizes = np.zeros((n, 2))
    for i, (o, k0, rows, ok) in enumerate(tracks):
        states[i, k0:k0 + len(rows)] = np.where(ok[:, None], rows, 0.0)
        valid[i, k0:k0 + len(rows)] = ok
        size = _body_size(o.obstacle_shape)
        if size is None:
            raise EngineError(f"obstacle {o.obstacle_id} has a shape this converter does not know ({type(o.obstacle_shape).__name__})")
        sizes[i] = size
    types = tuple(_type(o) for o, *_ in tracks)
    return RecordedTraffic(np.array([int(o.obstacle_id) for o, *_ in tracks], dtype=int), tuple(_kind(t) for t in types), types,
                           sizes[:, 0].copy(), sizes[:, 1].copy(), states, valid)


def _type(o: Any) -> str:
    return str(getattr(o.obstacle_type, "value", o.obstacle_type))


def _kind(obstacle_type: str) -> str:
    name = obstacle_type.lower()
    if "pedestrian" in name:
        return "pedestrian"
    if "bicycle" in name:
        return "cyclist"
    return "vehicle"


def _samples(o: Any, fields: frozenset[str] | None) -> np.ndarray:
    """Rows t (time steps), x, y, heading, speed (NaN where the file has none) of an obstacle's log."""
    t, x, y, h, v = _state_sample(o.initial_state)
    if fields is not None:
        h, v = (h if "orientation" in fields else np.nan), (v if "velocity" in fields else np.nan)
    rows = [(t, x, y, h, v)]
    pred = getattr(o, "prediction", None)
    trajectory = getattr(pred, "trajectory", None)
    if trajectory is not None:
        rows += [_state_sample(s) for s in trajectory.state_list]
    elif pred is not None:
        for t, occ in _occupancies(pred):
            p = _position(occ)
            rows.append((_nan(_value(t)), *(p if p is not None else (np.nan, np.nan)), np.nan, np.nan))
    return np.array(rows, dtype=float).reshape(-1, 5)


def _occupancies(pred: Any) -> list[tuple[Any, Any]]:
    """(time step, shape) of an occupancy-set prediction: a list up to 2024, a dict from 2026."""
    occ = getattr(pred, "occupancies", None)
    if isinstance(occ, dict):
        return list(occ.items())
    return [(o.time_step, getattr(o, "shape", None)) for o in getattr(pred, "occupancy_set", None) or ()]


def _nan(v: float | None) -> float:
    return np.nan if v is None else v


def _heading_speed(state: Any) -> tuple[float | None, float | None]:
    """Heading and speed of a state; a point-mass state's velocity is split into x and y parts."""
    h = _value(getattr(state, "orientation", None))
    v, vy = _value(getattr(state, "velocity", None)), _value(getattr(state, "velocity_y", None))
    if v is not None and vy is not None:
        if h is None:
            h = math.atan2(vy, v)
        v = math.hypot(v, vy)
    return h, v


def _state_sample(state: Any) -> tuple[float, ...]:
    p = _position(getattr(state, "position", None))
    h, v = _heading_speed(state)
    x, y = (p[0], p[1]) if p is not None else (np.nan, np.nan)
    return _nan(_value(getattr(state, "time_step", None))), x, y, _nan(h), _nan(v)


def _track(o: Any, dt: float, fields: frozenset[str] | None) -> tuple[int, np.ndarray, np.ndarray] | None:
    """First 10 Hz step, rows (x, y, heading, speed) from there, and which rows the log covers."""
    s = _samples(o, fields)
    s = s[np.isfinite(s[:, :3]).all(axis=1)]
    if not len(s):
        return None
    s = s[np.argsort(s[:, 0], kind="stable")]
    s = s[np.concatenate([[True], np.diff(s[:, 0]) > 1e-9])]
    t = s[:, 0] * dt
    if t[0] < 0 or t[-1] > MAX_RECORDING:
        raise EngineError(f"obstacle {o.obstacle_id} is logged at time step {s[0, 0] if t[0] < 0 else s[-1, 0]:g}; "
                          f"time steps run from 0 to {MAX_RECORDING:g} s")
    xy, h, v = s[:, 1:3], s[:, 3].copy(), s[:, 4].copy()
    if len(s) > 1:  # missing headings and speeds from the motion between states
        vel = np.gradient(xy, t, axis=0)
        moved = np.linalg.norm(vel, axis=1)
        v = np.where(np.isnan(v), moved, v)
        h = np.where(np.isnan(h) & (moved > MOVING), np.arctan2(vel[:, 1], vel[:, 0]), h)
    h = _fill(h)
    v = np.where(np.isfinite(v), v, 0.0)
    k0 = int(math.ceil(t[0] / STEP - 1e-6))
    k1 = int(math.floor(t[-1] / STEP + 1e-6))
    if k1 < k0:  # one state between two grid steps
        k0 = k1 = int(round(t[0] / STEP))
        return k0, np.array([[xy[0, 0], xy[0, 1], _wrap(h[0]), v[0]]]), np.ones(1, dtype=bool)
    grid = np.arange(k0, k1 + 1) * STEP
    hu = np.unwrap(h)
    rows = np.column_stack([np.interp(grid, t, xy[:, 0]), np.interp(grid, t, xy[:, 1]),
                            (np.interp(grid, t, hu) + np.pi) % (2 * np.pi) - np.pi, np.interp(grid, t, v)])
    seg = np.clip(np.searchsorted(t, grid, side="right") - 1, 0, len(t) - 1)
    nxt = np.minimum(seg + 1, len(t) - 1)
    ok = (np.abs(grid - t[seg]) < 1e-6) | (t[nxt] - t[seg] <= 1.5 * dt + 1e-9)
    return k0, rows, ok


def _fill(h: np.ndarray) -> np.ndarray:
    """Headings the file and the motion leave open: the nearest known one, else 0."""
    known = np.flatnonzero(np.isfinite(h))
    if not len(known):
        return np.zeros_like(h)
    idx = np.arange(len(h))
    nearest = known[np.clip(np.searchsorted(known, idx), 0, len(known) - 1)]
    before = known[np.clip(np.searchsorted(known, idx) - 1, 0, len(known) - 1)]
    pick = np.where(np.abs(before - idx) <= np.abs(nearest - idx), before, nearest)
    return np.where(np.isfinite(h), h, h[pick])


# Agents and static objects ------------------------------------------------------------------
def _agents(traffic: RecordedTraffic, start: int, duration: float, notes: list[str]) -> tuple[Agent, ...]:
    """Agents seen from the ego's start step on: the log before it is their history, after it their
    replayed future (up to the first gap in the log)."""
    steps = int(round(duration / STEP))
    out = []
    for i in range(len(traffic.ids)):
        valid, states = traffic.valid[i], traffic.states[i]
        live = np.flatnonzero(valid[start:]) + start if start < traffic.steps else np.array([], dtype=int)
        if not len(live) or live[0] - start >= steps:
            continue
        first = int(live[0])
        gaps = np.flatnonzero(~valid[first:])
        end = first + (int(gaps[0]) if len(gaps) else len(valid) - first)  # exclusive
        back = first
        while back > 0 and valid[back - 1] and first - back < HISTORY_STEPS:
            back -= 1
        x, y, h, v = states[back]
        extrapolated = [(x + np.cos(h) * v * (j - back) * STEP, y + np.sin(h) * v * (j - back) * STEP, h, v)
                        for j in range(first - HISTORY_STEPS, back)]
        history = [*extrapolated, *map(tuple, states[back:first + 1])]
        future = states[first + 1:end]
        kind = traffic.kinds[i]
        if end - back == 1 and (abs(v) < STANDING or kind != "vehicle"):
            # No prediction: keep the speed and heading (a standing one stays where it is).
            k = np.arange(1, steps - (first - start))[:, None] * STEP
            x, y, h, v = states[first]
            future = np.column_stack([x + np.cos(h) * v * k[:, 0], y + np.sin(h) * v * k[:, 0], np.full(len(k), h), np.full(len(k), v)])
        length, width = _agent_size(traffic, i, notes)
        out.append(Agent(int(traffic.ids[i]), kind, length, width, tuple(tuple(float(c) for c in r) for r in history),
                         tuple(tuple(float(c) for c in r) for r in future), start_step=first - start))
    return tuple(out)


def _agent_size(traffic: RecordedTraffic, i: int, notes: list[str]) -> tuple[float, float]:
    length, width = float(traffic.length[i]), float(traffic.width[i])
    fit = float(np.clip(length, *AGENT_LENGTH)), float(np.clip(width, *AGENT_WIDTH))
    if fit != (length, width):
        notes.append(f"obstacle {traffic.ids[i]} ({traffic.types[i]}, {length:.1f} x {width:.1f} m) is simulated as {fit[0]:.1f} x {fit[1]:.1f} m")
    return fit


def _statics(o: Any) -> list[StaticObject]:
    occupancy = o.occupancy_at_time(o.initial_state.time_step)
    geom = _geometry(getattr(occupancy, "shape", occupancy))
    if geom is None or geom.is_empty:
        raise EngineError(f"static obstacle {o.obstacle_id} has a shape this converter does not know ({type(o.obstacle_shape).__name__})")
    hint = _value(getattr(o.initial_state, "orientation", None)) or 0.0
    return [StaticObject(int(o.obstacle_id), _type(o), *box) for box in _boxes(geom, hint)]
