"""Scenes: every procedural type, the JSON format, CommonRoad import, and one clear error for
each kind of bad input (malformed file, unknown type, unreachable route, empty scene)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from engines.core import EngineError, resource_path
from engines.planner.procedural import TYPES, generate, suite_scenarios
from engines.planner.scenario import StaticObject, load_scenario_json, scenario_from_dict, scenario_to_dict
from engines.planner.scene import Scene

from .helpers import agent, scenario

CR = resource_path("planner", "commonroad")


@pytest.mark.parametrize("kind", TYPES)
def test_every_procedural_type_builds_a_valid_scene(kind: str) -> None:
    sc = generate(kind, 3)
    assert sc.type == kind and sc.lanes and sc.route and sc.steps == 150
    scene = Scene(sc)
    assert scene.route_path.length > 100.0
    # The ego starts on the drivable area, clear of every agent.
    assert scene.distance_outside(np.array([[sc.ego.x, sc.ego.y]]))[0] == 0.0
    for a in sc.agents:
        x, y = a.history[-1][:2]
        assert np.hypot(x - sc.ego.x, y - sc.ego.y) > 3.0
        assert len(a.history) == 21


def test_scenario_types_have_their_defining_traffic() -> None:
    stopped = generate("stopped_vehicle", 0)
    assert any(a.history[-1][3] == 0.0 for a in stopped.agents) and stopped.static_objects
    braking = generate("lead_braking", 0)
    assert any(e.action == "brake" for a in braking.agents for e in a.events)
    cut = generate("cut_in", 0)
    assert any(e.action == "lane_change" and e.lane == cut.route[0] for a in cut.agents for e in a.events)
    assert len(generate("dense_traffic", 0).agents) >= 15
    assert generate("merge", 0).route[0] == "R"


def test_same_seed_same_scene_and_json_round_trip(tmp_path: Path) -> None:
    a = scenario_to_dict(generate("intersection", 5))
    b = scenario_to_dict(generate("intersection", 5))
    assert a == b
    assert a != scenario_to_dict(generate("intersection", 6))
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(a))
    back = load_scenario_json(path)
    assert scenario_to_dict(back) == a


def test_suite_cycles_through_every_type() -> None:
    cases = suite_scenarios(16, 0)
    assert [k for k, _ in cases[:8]] == list(TYPES) and len(set(cases)) == 16


def test_unknown_type_is_one_clear_error() -> None:
    with pytest.raises(EngineError, match="unknown scenario type 'roundabout'"):
        generate("roundabout", 0)


def test_malformed_json_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", "lanes": [')
    with pytest.raises(EngineError, match="not valid JSON"):
        load_scenario_json(bad)
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(EngineError, match="not a planner scenario"):
        load_scenario_json(other)


def test_empty_scene_is_one_clear_error() -> None:
    data = scenario_to_dict(scenario())
    data["lanes"] = []
    with pytest.raises(EngineError, match="empty"):
        scenario_from_dict(data)


def test_impossible_speeds_are_one_clear_error() -> None:
    """A typo like 1e9 m/s once ran the simulator out of memory (the path look-ups grow with speed)."""
    data = scenario_to_dict(scenario())
    data["ego"]["speed"] = 1e9
    with pytest.raises(EngineError, match="ego starts at an impossible speed"):
        scenario_from_dict(data)
    data = scenario_to_dict(scenario(agents=(agent(1, 80.0, 0.0, 10.0),)))
    data["agents"][0]["history"][-1][3] = -500.0
    with pytest.raises(EngineError, match=r"agent \S+ has an impossible speed 500"):
        scenario_from_dict(data)


def test_unreachable_routes_are_one_clear_error() -> None:
    data = scenario_to_dict(scenario())
    data["route"] = ["L0", "nowhere"]
    with pytest.raises(EngineError, match="unreachable.*'nowhere'"):
        scenario_from_dict(data)
    # Two lanes that neither follow nor neighbour each other.
    sc = scenario(lanes=1)
    far = replace(sc.lanes[0], id="far", centerline=tuple((x, y + 50.0) for x, y in sc.lanes[0].centerline),
                  left=tuple((x, y + 50.0) for x, y in sc.lanes[0].left), right=tuple((x, y + 50.0) for x, y in sc.lanes[0].right))
    data = scenario_to_dict(replace(sc, lanes=(*sc.lanes, far)))
    data["route"] = ["L0", "far"]
    with pytest.raises(EngineError, match="unreachable"):
        scenario_from_dict(data)
    # The ego far from its route.
    data = scenario_to_dict(scenario())
    data["ego"]["y"] = 40.0
    with pytest.raises(EngineError, match="unreachable: the ego starts 40.0 m"):
        scenario_from_dict(data)


@pytest.mark.parametrize("name,version", [("USA_Lanker-1_1_T-1.xml", "2018b"), ("USA_US101-4_1_T-1.xml", "2020a"), ("ZAM_Tutorial-1_2_T-1.xml", "2020a")])
def test_commonroad_files_import(name: str, version: str) -> None:
    from engines.planner.commonroad_import import load_commonroad

    path = CR / name
    assert f'commonRoadVersion="{version}"' in path.read_text()[:600]
    sc = load_commonroad(path)
    assert sc.type == "commonroad" and sc.agents and sc.route
    assert all(len(a.history) == 21 for a in sc.agents)
    assert any(len(a.trajectory) > 5 for a in sc.agents)  # recorded futures for log replay
    scene = Scene(sc)
    assert scene.route_path.length > 20.0


def test_commonroad_bad_input_is_one_clear_error(tmp_path: Path) -> None:
    from engines.planner.commonroad_import import load_commonroad

    broken = tmp_path / "broken.xml"
    broken.write_text("<commonRoad><lanelet id='1'>")
    with pytest.raises(EngineError, match="not valid XML"):
        load_commonroad(broken)
    other = tmp_path / "other.xml"
    other.write_text("<svg></svg>")
    with pytest.raises(EngineError, match="not a CommonRoad scenario"):
        load_commonroad(other)
    empty = tmp_path / "empty.xml"
    empty.write_text('<?xml version="1.0"?><commonRoad commonRoadVersion="2020a" benchmarkID="X" date="2020-01-01" author="a" '
                     'affiliation="a" source="a" timeStepSize="0.1"></commonRoad>')
    with pytest.raises(EngineError, match="empty|planning problem|readable"):
        load_commonroad(empty)


def _set(data: dict, path: str, value) -> dict:
    """Replace one value in scenario JSON by a dotted path with list indices ("agents.0.history.0")."""
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[int(last) if isinstance(node, list) else last] = value
    return data


def _scene_json() -> dict:
    from engines.planner.scenario import Event

    a = agent(1, 80.0, 3.5, 10.0)
    a = replace(a, events=(Event(1.0, "brake"),))
    return scenario_to_dict(scenario(agents=(a,), statics=(StaticObject(7, "cone", 120.0, 3.5, 0.0, 0.5, 0.5),)))


@pytest.mark.parametrize("path,value,needle", [
    ("ego", None, r"field 'ego' must be an object .*None"),
    ("ego", [1, 2, 3], r"field 'ego' must be an object .*\[1, 2, 3\]"),
    ("ego.x", "abc", r"field 'ego.x' must be a number, got 'abc'"),
    ("lanes", "abc", r"field 'lanes' must be a list, got 'abc'"),
    ("dt", "0.1", r"field 'dt' must be a number, got '0.1'"),
    ("version", "2", r"invalid format version '2'"),
    ("agents.0.history.0", [1, 2], r"field 'agents\[0\].history\[0\]' must be a list of 4 values"),
    ("route", "L0", r"field 'route' must be a list, got 'L0'"),
    ("agents.0.route", "L0", r"field 'agents\[0\].route' must be a list, got 'L0'"),
])
def test_wrong_typed_fields_are_one_sentence_naming_the_field(path: str, value, needle: str) -> None:
    """They once crashed deep in the simulator (a string route was even iterated char by char)."""
    with pytest.raises(EngineError, match=needle):
        scenario_from_dict(_set(_scene_json(), path, value))


@pytest.mark.parametrize("path,value,needle", [
    ("static_objects.0.x", float("nan"), "static object 7 needs a finite position"),
    ("static_objects.0.length", -5.0, "static object 7 has an impossible size -5.0"),
    ("agents.0.events.0.time", float("nan"), "brake event at a time that is not a finite"),
    ("agents.0.events.0.decel", float("nan"), "brake deceleration of nan"),
    ("agents.0.events.0.decel", -5.0, "brake deceleration of -5.0"),
    ("agents.0.events.0", {"time": 1.0, "action": "lane_change", "lane": "L0", "duration": 0}, "lane change lasting 0.0 s"),
    ("agents.0.start_step", -5, "agent 1 starts at step -5, outside the scene's steps 0-149"),
    ("agents.0.start_step", 10**9, "agent 1 starts at step 1000000000"),
    ("ego.acceleration", None, "ego start state must be finite"),
])
def test_impossible_values_are_refused_not_simulated(path: str, value, needle: str) -> None:
    """A NaN cone once gave a nonsense collision with exit 0, and a GEOSException in the panel."""
    with pytest.raises(EngineError, match=needle):
        scenario_from_dict(_set(_scene_json(), path, value))


def test_the_scene_used_above_is_valid() -> None:
    assert scenario_from_dict(_scene_json()).static_objects[0].id == 7


@pytest.mark.parametrize("old,new,needle", [
    ('timeStepSize="0.1"', 'timeStepSize="nan"', "time step size of nan s"),
    ('timeStepSize="0.1"', 'timeStepSize="-0.1"', "time step size of -0.1 s"),
    ('timeStepSize="0.1"', 'timeStepSize="0"', "time step size of 0.0 s"),
    ('<planningProblem id="100">\n    <initialState>\n      <position>\n        <point>\n          <x>15.0</x>',
     '<planningProblem id="100">\n    <initialState>\n      <position>\n        <point>\n          <x>nan</x>', "initial state needs a finite position"),
    ('<lanelet ref="1"/>\n      </position>', '<lanelet ref="999"/>\n      </position>', "the goal names lanelet 999, which the scenario does not have"),
])
def test_commonroad_impossible_values_are_one_clear_error(tmp_path: Path, old: str, new: str, needle: str) -> None:
    """NaN or negative time steps and a NaN start raised tracebacks, 0 made every agent vanish,
    and a missing goal lanelet gave a cryptic AttributeError from commonroad-io."""
    from engines.planner.commonroad_import import load_commonroad

    text = (CR / "ZAM_Tutorial-1_2_T-1.xml").read_text()
    assert old in text
    bad = tmp_path / "bad.xml"
    bad.write_text(text.replace(old, new, 1))
    with pytest.raises(EngineError, match=needle):
        load_commonroad(bad)
