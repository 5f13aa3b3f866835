"""The Frenet peer (commonroad-reactive-planner) behind the planner interface: it drives a real
recorded scene, stops behind a standing car it cannot pass, and runs from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from engines.core import resource_path
from engines.planner.commonroad_import import load_commonroad
from engines.planner.metrics import compute_cls
from engines.planner.planners.frenet import FrenetPlanner
from engines.planner.api import track_of
from engines.planner.scenario import Agent, scenario_to_dict
from engines.planner.scene import Scene
from engines.planner.simulation import run_episode
from engines.planner.vehicle import LENGTH

from .helpers import scenario


def test_frenet_drives_a_recorded_us101_scene_without_collision() -> None:
    sc = load_commonroad(resource_path("planner", "commonroad", "USA_US101-4_1_T-1.xml"), duration=3.0)
    scene = Scene(sc)
    planner = FrenetPlanner()
    rollout = run_episode(scene, planner, reactive=False)
    m = compute_cls(scene, rollout.ego, track_of(sc, rollout), sc.dt, None)
    assert not m.collisions and m.multipliers["drivable_area_compliance"] == 1.0
    assert m.ego_progress > 0.6 * sc.ego.speed * 3.0  # keeps going with the traffic
    assert planner.replans >= 10 and planner.fallbacks < planner.replans  # the sampler, not the fallback, drove


def test_frenet_stops_behind_a_standing_car_on_a_one_lane_road() -> None:
    standing = (120.0, 0.0, 0.0, 0.0)
    car = Agent(1, "vehicle", 4.5, 2.0, (standing,), trajectory=(standing,) * 100)
    sc = scenario(agents=(car,), ego_speed=10.0, ego_x=50.0, duration=9.0, lanes=1)
    scene = Scene(sc)
    rollout = run_episode(scene, FrenetPlanner(), reactive=False)
    m = compute_cls(scene, rollout.ego, track_of(sc, rollout), sc.dt, None)
    assert not m.collisions
    v = rollout.ego[:, 3]
    assert v[-1] < 1.5 and (np.diff(v[-10:]) <= 1e-6).all()  # all but stopped, still braking
    assert 120.0 - 2.25 - 15.0 < rollout.ego[-1, 0] + LENGTH / 2 < 120.0 - 2.25  # close behind the car, not short of it
    assert np.abs(rollout.ego[:, 1]).max() < 1.0  # and stayed in its lane


def test_cli_runs_the_frenet_planner(cli, tmp_path: Path) -> None:
    path = tmp_path / "short.json"
    path.write_text(json.dumps(scenario_to_dict(scenario(duration=2.0))))
    out = cli("planner", "run", "--scenario", str(path), "--planner", "frenet", "--json", timeout=600)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["planner"] == "frenet" and data["steps"] == 20 and data["ego_progress_m"] > 15.0 and not data["collisions"]


def test_a_route_of_one_straight_piece_gets_a_frenet_frame() -> None:
    """A route given by 2 or 3 points (one straight lanelet, e.g. CHN_Sha-4_3) is too short for the
    cubic smoothing spline ("m > k must hold" from scipy, "needs >= 3 points" from the CLCS): it is
    resampled first, and the frame still follows the route."""
    from engines.planner.planners.frenet import _frenet_frame

    for route in ([[0.0, 0.0], [30.0, 0.0]], [[0.0, 0.0], [10.0, 0.0], [20.0, 0.5]]):
        frame = _frenet_frame(np.array(route))
        assert np.allclose(frame.convert_to_cartesian_coords(5.0, 0.0), [5.0, 0.0], atol=0.1)
