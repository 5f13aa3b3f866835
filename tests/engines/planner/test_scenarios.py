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
from engines.planner.scenario import load_scenario_json, scenario_from_dict, scenario_to_dict
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
