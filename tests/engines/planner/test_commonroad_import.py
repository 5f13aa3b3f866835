"""CommonRoad import: every file commonroad-io reads converts and runs, or is one EngineError.

Fixtures in tests/data/commonroad/: hand-written files, one per variant of the format, and two of
commonroad-io's own test files (BSD-3, see LICENSE.txt there): DEU_A9-3_1_T-1.xml (2018b, 0.2 s
steps, positions given as rectangles, intervals for orientation and velocity; it once ended in a
traceback) and test_reading_all.xml (occupancy sets, environment and phantom obstacles).
"""
from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import shapely
from shapely.geometry import Point, Polygon, box

from engines.core import EngineError, resource_path
from engines.planner.commonroad_import import (
    RecordedTraffic,
    load_commonroad,
    load_recorded_traffic,
    read_commonroad,
    recorded_traffic,
)
from engines.planner.api import RunParams, run
from engines.planner.geometry import box_corners

DATA = Path(__file__).resolve().parents[2] / "data" / "commonroad"
A9 = DATA / "DEU_A9-3_1_T-1.xml"


def fixture(name: str) -> Path:
    return DATA / f"{name}.xml"


@pytest.fixture
def warm() -> None:
    """commonroad-io imported before a timing starts (its first import alone takes seconds)."""
    read_commonroad(fixture("goal_shape"))


def notes(sc) -> str:
    return " | ".join(sc.notes.get("commonroad", []))


def agent(sc, agent_id: int):
    return next(a for a in sc.agents if a.id == agent_id)


# Real files -----------------------------------------------------------------------------------
def test_positions_given_as_shapes_convert_the_file_that_once_crashed() -> None:
    """DEU_A9: rectangles as positions, orientation and velocity intervals, 0.2 s steps, 2018b."""
    sc = load_commonroad(A9)
    assert len(sc.agents) == 9 and all(a.kind == "vehicle" for a in sc.agents)
    a = agent(sc, 3536)
    assert (a.length, a.width) == (3.0024, 1.7945)
    x, y, h, v = a.history[-1]
    assert (x, y) == pytest.approx((351.6643758281, -5866.331045464546))  # the rectangle's centre
    assert h == pytest.approx((0.0011 + 0.0347) / 2) and v == pytest.approx((27.0104 + 27.4908) / 2)  # interval midpoints
    # 0.2 s steps resampled to 10 Hz: the first logged state (t = 0.2 s) is row 1, row 0 halfway.
    assert a.trajectory[1][:2] == pytest.approx((357.0545917691177, -5866.296812159101))
    assert a.trajectory[0][0] == pytest.approx((351.6643758281 + 357.0545917691177) / 2)
    assert all(len(ag.history) == 21 for ag in sc.agents)
    assert sc.route[0] == "442" and sc.ego.speed == pytest.approx(28.2656)
    assert {lane.speed_limit for lane in sc.lanes} == {27.78}  # 2018b <speedLimit>
    assert "time only" in notes(sc)


def test_the_file_that_once_crashed_runs_from_the_cli(cli) -> None:
    out = cli("planner", "run", "--scenario", str(A9), "--planner", "idm", "--json", "--quiet", timeout=600)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    data = json.loads(out.stdout)
    assert data["scenario"] == "DEU_A9-3_1_T-1" and 0.0 <= data["cls"] <= 100.0 and data["steps"] == 150


def test_commonroad_ios_own_test_file_with_occupancy_sets_environment_and_phantoms() -> None:
    sc = load_commonroad(DATA / "test_reading_all.xml")
    a = agent(sc, 1)  # occupancy set: a circle, a unit square, a circle
    assert [r[:2] for r in a.trajectory] == [pytest.approx((0.1, 0.5), abs=1e-3), pytest.approx((0.5, 0.5), abs=1e-3),
                                             pytest.approx((0.0, 0.0), abs=1e-3)]
    assert "environment obstacles" in notes(sc) and "phantom obstacles" in notes(sc)
    assert "obstacle 1 (unknown, 4.3 x 8.9 m) is simulated as 4.3 x 5.9 m" in notes(sc)
    assert [(o.id, o.kind) for o in sc.static_objects] == [(3, "unknown")]
    assert sc.static_objects[0].length == pytest.approx(4.0, abs=0.01)  # a circle of radius 2


@pytest.mark.parametrize("path", sorted(resource_path("planner", "commonroad").glob("*.xml")), ids=lambda p: p.stem)
def test_shipped_files_keep_converting(path: Path) -> None:
    sc = load_commonroad(path)
    assert sc.agents and sc.route and sc.type == "commonroad"


# Hand-written variants ------------------------------------------------------------------------
def test_shapes_circles_polygons_groups_and_intervals_count_by_their_centres() -> None:
    sc = load_commonroad(fixture("positions_as_shapes"))
    a = agent(sc, 11)
    assert a.history[-1] == pytest.approx((30.0, 0.0, 0.0, 10.0))
    # rectangle, circle, polygon, two rectangles (a shape group) at x = 31 .. 34
    assert [r[0] for r in a.trajectory] == pytest.approx([31.0, 32.0, 33.0, 34.0])
    assert all(r[1] == pytest.approx(0.0) and r[3] == pytest.approx(10.0) for r in a.trajectory)


def test_missing_orientation_and_velocity_come_from_the_motion() -> None:
    """Obstacle 12 has positions only (1.5 m per 0.1 s step): commonroad-io fills its initial
    velocity with 0, which must not stop it."""
    a = agent(load_commonroad(fixture("positions_as_shapes")), 12)
    assert a.history[-1] == pytest.approx((60.0, 3.5, 0.0, 15.0))
    assert a.history[0][0] == pytest.approx(60.0 - 15.0 * 2.0)  # 2 s extrapolated backwards
    assert len(a.trajectory) == 10 and a.trajectory[-1] == pytest.approx((75.0, 3.5, 0.0, 15.0))


def test_occupancy_sets_become_their_centres_and_obstacles_without_prediction_stay_simulated() -> None:
    sc = load_commonroad(fixture("occupancy_sets"))
    car = agent(sc, 21)
    assert len(car.trajectory) == 20
    assert [r[0] for r in car.trajectory] == pytest.approx([40.0 + 0.8 * k for k in range(1, 21)])
    assert all(r[2] == pytest.approx(0.0) and r[3] == pytest.approx(8.0) for r in car.trajectory)
    walker = agent(sc, 22)  # no prediction, standing: stays for the whole episode
    assert walker.kind == "pedestrian" and walker.length == pytest.approx(0.7)
    assert len(walker.trajectory) == sc.steps - 1 and all(r == pytest.approx((70.0, -3.0, 1.5708, 0.0)) for r in walker.trajectory)
    assert agent(sc, 23).trajectory == ()  # no prediction, moving vehicle: IDM drives it on


def test_every_obstacle_type_maps_to_a_kind_with_its_real_size() -> None:
    sc = load_commonroad(fixture("obstacle_types"))
    kinds = {a.id: a.kind for a in sc.agents}
    assert len(sc.agents) == 16
    assert kinds[306] == "cyclist" and kinds[307] == "pedestrian"
    assert {k for i, k in kinds.items() if i not in (306, 307)} == {"vehicle"}
    sizes = {a.id: (a.length, a.width) for a in sc.agents}
    assert sizes[301] == (9.0, 2.5) and sizes[302] == (12.0, 2.55) and sizes[305] == (2.2, 0.8) and sizes[308] == (15.0, 2.6)
    assert sizes[307] == pytest.approx((0.6, 0.6))  # circle of radius 0.3
    assert sizes[309] == pytest.approx((2.5, 1.0))  # the polygon's box in the obstacle's frame
    statics = {o.id: o for o in sc.static_objects}
    assert set(statics) == set(range(401, 408))
    parked = statics[401]
    assert parked.kind == "parkedVehicle" and (parked.x, parked.y, parked.heading, parked.length, parked.width) == pytest.approx((150, -3, 0, 4.5, 1.8))
    assert statics[404].kind == "building" and (statics[404].length, statics[404].width) == pytest.approx((20, 20))
    assert statics[407].heading == pytest.approx(1.5708) and statics[407].length == pytest.approx(4.0)


def test_a_road_boundary_polygon_becomes_boxes_that_cover_it_and_stay_off_the_road() -> None:
    """One box around the L-shaped boundary would lie across both lanes."""
    sc = load_commonroad(fixture("obstacle_types"))
    pieces = [o for o in sc.static_objects if o.id == 403]
    assert 2 <= len(pieces) <= 32
    boxes = [Polygon(box_corners(o.x, o.y, o.heading, o.length, o.width)) for o in pieces]
    boundary = Polygon([(0, -2), (0, -4), (96, -4), (96, -60), (100, -60), (100, -2)])
    assert shapely.union_all(boxes).buffer(1e-3).contains(boundary)
    assert max(b.bounds[3] for b in boxes) <= -1.75 + 1e-3  # the lanes start at y = -1.75


@pytest.mark.parametrize("name,route", [("goal_shape", None), ("goal_lanelet", None), ("goal_time_only", ("1", "2")), ("goal_off_road", ("1", "2"))])
def test_goals_as_shapes_lanelets_or_time_only(name: str, route) -> None:
    sc = load_commonroad(fixture(name))
    if route is None:  # the goal is on the left lane's second lanelet: one lane change
        assert sc.route[0] == "1" and sc.route[-1] == "4" and len(sc.route) == 3
        assert "route follows successors" not in notes(sc)
    else:
        assert sc.route == route and "route follows successors" in notes(sc)


def test_version_2018b_with_speed_limits_on_the_lanelets() -> None:
    sc = load_commonroad(fixture("version_2018b"))
    assert {lane.id: lane.speed_limit for lane in sc.lanes} == {"1": 20.0, "2": 20.0, "3": 13.9, "4": 13.9}
    assert [(o.id, o.kind, o.x, o.y) for o in sc.static_objects] == [(42, "parkedVehicle", pytest.approx(150.0), pytest.approx(0.0))]
    assert agent(sc, 41).history[-1] == pytest.approx((40.0, 0.0, 0.0, 8.0))


def test_speed_limits_from_signs_else_by_lanelet_type() -> None:
    sc = load_commonroad(fixture("speed_limits"))
    assert {lane.id: lane.speed_limit for lane in sc.lanes} == {"1": 22.22, "2": 29.0, "3": 13.9, "4": 29.0}


def test_intersections_and_traffic_lights_load_and_the_light_is_noted_as_ignored() -> None:
    sc = load_commonroad(fixture("intersection_traffic_light"))
    assert sc.lane("1").successors == ("2", "5") and sc.route == ("1", "2")
    assert "1 traffic lights are ignored" in notes(sc)


def test_a_time_step_of_0_2_s_is_resampled_to_10_hz() -> None:
    a = agent(load_commonroad(fixture("dt_0_2")), 61)
    assert len(a.trajectory) == 40  # 20 logged steps of 0.2 s
    assert [r[0] for r in a.trajectory] == pytest.approx([40.0 + k for k in range(1, 41)])
    assert {round(r[3], 6) for r in a.trajectory} == {10.0}


def test_an_ego_given_as_a_shape_without_orientation_and_velocity_faces_along_its_lane() -> None:
    """The road runs north; commonroad-io would fill orientation 0 (east)."""
    sc = load_commonroad(fixture("ego_missing_fields"))
    assert (sc.ego.x, sc.ego.y, sc.ego.heading, sc.ego.speed) == pytest.approx((-3.5, 12.0, math.pi / 2, 0.0))
    assert sc.route == ("3", "4")
    assert "orientation is missing" in notes(sc) and "velocity is missing" in notes(sc)


@pytest.mark.parametrize("name", ["obstacle_types", "occupancy_sets", "positions_as_shapes", "intersection_traffic_light", "dt_0_2",
                                  "version_2018b"])
def test_converted_variants_run_an_idm_episode(name: str) -> None:
    ep = run(RunParams(scenario=str(fixture(name)), planner="idm")).episode
    assert 0.0 <= ep.score <= 100.0 and len(ep.ego) == 151


# Refusals -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,needle", [
    ("billion_laughs", r"declares a document type \(<!DOCTYPE>\)"),
    ("external_entity", r"declares a document type"),
    ("external_entity_utf16", r"declares a document type"),
    ("empty", r"empty.xml is not valid XML \(line 1, column 0\)"),
    ("truncated", r"truncated.xml is not valid XML \(line 42"),
    ("binary", r"binary.xml is not valid XML"),
    ("wrong_root", r"not a CommonRoad scenario \(its root element is <\{http://www.w3.org/2000/svg\}svg>\)"),
    ("version_2017a", r"CommonRoad version 2017a; commonroad-io reads 2018b and 2020a"),
    ("no_lanelets", r"not a readable CommonRoad scenario|has no lanelets"),
    ("nonsense_values", r"not a readable CommonRoad scenario \(ValueError"),
])
def test_hostile_and_broken_files_are_one_sentence_quickly_and_silently(warm, capfd, name: str, needle: str) -> None:
    capfd.readouterr()
    start = time.perf_counter()
    with pytest.raises(EngineError, match=needle) as info:
        load_commonroad(DATA / "hostile" / f"{name}.xml")
    assert time.perf_counter() - start < 10.0
    assert "\n" not in str(info.value) and "root:" not in str(info.value)  # no /etc/passwd content
    assert capfd.readouterr() == ("", "")


def test_a_scene_without_planning_problem_is_refused_but_its_traffic_reads() -> None:
    with pytest.raises(EngineError, match="no_planning_problem has no planning problem, so there is no ego vehicle to drive"):
        load_commonroad(fixture("no_planning_problem"))
    traffic = load_recorded_traffic(fixture("no_planning_problem"))
    assert list(traffic.ids) == [71] and traffic.valid.sum() == 11


def test_missing_files_and_folders_are_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="no such file"):
        load_commonroad(tmp_path / "absent.xml")
    with pytest.raises(EngineError, match="is not a regular file"):
        load_commonroad(tmp_path)


def test_nothing_is_printed_while_converting(capfd) -> None:
    for path in sorted(DATA.glob("*.xml")):
        try:
            load_commonroad(path)
        except EngineError:
            pass
    assert capfd.readouterr() == ("", "")


def _mutations(text: str, rng: np.random.Generator, n: int) -> list[str]:
    """Numbers replaced by hostile values, elements dropped or duplicated, the text cut short."""
    numbers = [m.span() for m in re.finditer(r"(?<=>)-?[0-9.]+(?=<)", text)]
    elements = [m.span() for m in re.finditer(r"<(state|occupancy|point|initialState|position|shape|orientation|velocity|time)>.*?</\1>", text, re.S)]
    out = []
    for _ in range(n):
        kind = rng.integers(4)
        if kind == 0:
            a, b = numbers[rng.integers(len(numbers))]
            out.append(text[:a] + str(rng.choice(["nan", "inf", "-inf", "1e308", "-1e308", "0", "-5", "", "1e-320", "x"])) + text[b:])
        elif kind == 1:
            a, b = elements[rng.integers(len(elements))]
            out.append(text[:a] + text[b:])
        elif kind == 2:
            a, b = elements[rng.integers(len(elements))]
            out.append(text[:b] + text[a:b] + text[b:])
        else:
            out.append(text[: rng.integers(len(text))])
    return out


@pytest.mark.parametrize("name", ["positions_as_shapes", "occupancy_sets", "obstacle_types", "goal_shape", "dt_0_2", "version_2018b"])
def test_mutated_files_convert_or_are_one_sentence(tmp_path: Path, capfd, name: str) -> None:
    """Never another exception, never a print: a small fixed-seed fuzz over each variant."""
    rng = np.random.default_rng(sum(map(ord, name)))
    results = {"converted": 0, "refused": 0}
    for i, text in enumerate(_mutations(fixture(name).read_text(), rng, 25)):
        path = tmp_path / f"m{i}.xml"
        path.write_text(text)
        try:
            load_commonroad(path)
            results["converted"] += 1
        except EngineError as exc:
            assert "\n" not in str(exc)
            results["refused"] += 1
    assert results["converted"] > 0 and results["refused"] > 0, results
    assert capfd.readouterr() == ("", "")


# Recorded traffic -------------------------------------------------------------------------------
def test_recorded_traffic_is_every_track_at_10_hz_with_a_validity_mask() -> None:
    traffic = load_recorded_traffic(A9)
    assert isinstance(traffic, RecordedTraffic) and traffic.dt == 0.1
    n, steps = len(traffic.ids), traffic.steps
    assert n == 9 and traffic.states.shape == (n, steps, 4) and traffic.valid.shape == (n, steps)
    i = list(traffic.ids).index(3536)
    assert traffic.types[i] == "car" and traffic.kinds[i] == "vehicle" and (traffic.length[i], traffic.width[i]) == (3.0024, 1.7945)
    assert traffic.valid[i, 0] and traffic.states[i, 0, :2] == pytest.approx((351.6643758281, -5866.331045464546))
    assert traffic.states[i, 2, :2] == pytest.approx((357.0545917691177, -5866.296812159101))
    assert not traffic.states[~traffic.valid].any()  # zeros where nothing was logged
    # The same tracks drive the agents of the converted scene.
    a = agent(load_commonroad(A9), 3536)
    logged = np.flatnonzero(traffic.valid[i])
    assert np.allclose(traffic.states[i, logged[1:]], np.array(a.trajectory)[: len(logged) - 1])


def test_recorded_traffic_marks_gaps_and_late_starts() -> None:
    sc, _ = read_commonroad(fixture("dt_0_2"))
    obstacle = sc.dynamic_obstacles[0]
    states = obstacle.prediction.trajectory.state_list
    for s in [obstacle.initial_state, *states]:  # start the log 1 s late, and drop 1.2 s in the middle
        s.time_step += 5
    del states[8:14]
    traffic = recorded_traffic(sc)
    valid = traffic.valid[0]
    assert not valid[1:10].any() and valid[10]  # nothing between t = 0 and the late first state (t = 1.0 s)
    first_gap = np.flatnonzero(~valid[10:])[0] + 10
    assert 0.1 * first_gap == pytest.approx(2.7)  # the state at t = 2.6 s is the last before the gap
    assert not valid[first_gap:40].any() and valid[40:].all()  # logged again from t = 4.0 s


# What commonroad-io must keep offering -----------------------------------------------------------
def test_commonroad_io_still_offers_what_the_converter_reads() -> None:
    """The converter touches only these public attributes (shared by the 2023-2026 releases)."""
    sc, problems = read_commonroad(fixture("positions_as_shapes"))
    net = sc.lanelet_network
    ll = net.lanelets[0]
    for attr in ("lanelet_id", "center_vertices", "left_vertices", "right_vertices", "successor", "adj_left", "adj_right",
                 "adj_left_same_direction", "adj_right_same_direction", "lanelet_type", "traffic_signs"):
        assert hasattr(ll, attr), attr
    assert net.find_lanelet_by_position([np.array([10.0, 0.0])]) == [[1]]
    problem = problems.planning_problem_dict[100]
    assert problem.planning_problem_id == 100 and hasattr(problem.goal, "state_list") and hasattr(problem.goal, "lanelets_of_goal_position")
    obstacle = sc.obstacle_by_id(11)
    assert obstacle.obstacle_type.value == "car" and obstacle.prediction.trajectory.state_list
    shape_position = obstacle.prediction.trajectory.state_list[0].position
    assert hasattr(shape_position, "shapely_object")
    group = obstacle.prediction.trajectory.state_list[3].position
    assert hasattr(group, "shapes") or hasattr(group, "occupancies")
    interval = obstacle.initial_state.orientation
    assert (interval.start, interval.end) == (-0.02, 0.02)
    sets, _ = read_commonroad(fixture("occupancy_sets"))
    prediction = sets.obstacle_by_id(21).prediction
    assert hasattr(prediction, "occupancy_set") or isinstance(getattr(prediction, "occupancies", None), dict)
    statics, _ = read_commonroad(fixture("obstacle_types"))
    assert statics.obstacle_by_id(401).occupancy_at_time(0) is not None


def test_shapes_in_the_2026_style_are_read_by_their_public_attributes() -> None:
    """commonroad-io 2026 replaced the shape classes: occupancies with shapely centres, groups as
    ``occupancies``, set predictions as a dict. Stand-ins with exactly those attributes."""
    from engines.planner import commonroad_import as ci

    rect = SimpleNamespace(rect_center=Point(5, 6), length=4.0, width=2.0, orientation=0.0, center=Point(5, 6),
                           shapely_object=box(3, 5, 7, 7))
    assert ci._position(rect) == pytest.approx((5.0, 6.0))
    # 2026's own circle polygon has half the radius: the converter builds the circle itself.
    circle = SimpleNamespace(radius=2.0, circle_center=Point(1, 1), center=Point(1, 1), shapely_object=Point(1, 1).buffer(1.0))
    assert ci._geometry(circle).bounds == pytest.approx((-1, -1, 3, 3), abs=0.01)
    group = SimpleNamespace(occupancies=(rect, SimpleNamespace(shapely_object=box(9, 5, 11, 7))), shapely_object=None)
    assert ci._position(group) == pytest.approx((20 / 3, 6.0))  # area-weighted: 8 m^2 at x = 5, 4 m^2 at x = 10
    prediction = SimpleNamespace(occupancies={1: rect, 2: circle})
    assert [t for t, _ in ci._occupancies(prediction)] == [1, 2]
    rect_shape = SimpleNamespace(width=1.8, length=4.5, origin_x_shift=0.0)
    assert ci._body_size(rect_shape) == (4.5, 1.8)


@pytest.mark.parametrize("old,new,needle", [
    ("<orientation>\n    <exact>0.0</exact>", "<orientation>\n    <exact>inf</exact>", r"has an orientation of inf rad"),
    ("<orientation>\n    <exact>0.0</exact>", "<orientation>\n    <exact>1e300</exact>", r"has an orientation of 1e300 rad"),
    ('<adjacentLeft ref="3" drivingDir="same" />', '<adjacentRight ref="3" drivingDir="same" />', r"the right neighbours of lanelet 1 lead back"),
    ("<time>\n     <exact>1</exact>", "<time>\n     <exact>99999999</exact>", r"obstacle 31 is logged at time step 1e\+08; time steps run from 0 to 3600 s"),
    ('<planningProblem id="100">\n  <initialState>', '<planningProblem id="100">\n  <initialState>\n   <time><exact>-5</exact></time>',
     r"ego starts at time step -5|not a readable"),
])
def test_values_that_would_hang_commonroad_io_or_blow_up_the_grid_are_refused(warm, tmp_path: Path, old: str, new: str, needle: str) -> None:
    """An infinite orientation or circular neighbours made commonroad-io loop for ever; a time step
    of 10^8 would have made a 10 Hz grid of 10^9 rows."""
    text = fixture("goal_time_only").read_text()
    assert old in text
    bad = tmp_path / "bad.xml"
    bad.write_text(text.replace(old, new, 1))
    start = time.perf_counter()
    with pytest.raises(EngineError, match=needle):
        load_commonroad(bad)
    assert time.perf_counter() - start < 10.0


def test_a_road_tagged_highway_defaults_to_the_highway_limit() -> None:
    # the same lanelets as above, the scenario tagged highway (NGSIM US-101's files are, with urban lanelet types)
    sc = load_commonroad(fixture("speed_limits_highway"))
    assert {lane.id: lane.speed_limit for lane in sc.lanes} == {"1": 22.22, "2": 29.0, "3": 29.0, "4": 29.0}
