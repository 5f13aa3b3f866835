"""Learning from recorded traffic: every recorded car becomes the ego in turn, its logged future
is the target, its neighbours' logged futures the neighbour targets, its own path the route;
the observation is the one the simulator would build at that moment."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from engines.core import EngineError, resource_path
from engines.planner import features as F
from engines.planner.commonroad_import import load_commonroad
from engines.planner.geometry import to_local
from engines.planner.planners.base import HISTORY_STEPS
from engines.planner.planners.rules import ConstantVelocityPlanner
from engines.planner.recorded import (
    COMFORT_BRAKE,
    END_MARGIN,
    LOG_DURATION,
    driven_route,
    extended,
    generate_recorded_dataset,
    is_ego_candidate,
    map_id,
    recorded_samples,
    recorded_tracks,
    split_files,
)
from engines.planner.scene import Scene
from engines.planner.simulation import run_episode
from engines.planner.train import load_dataset
from tests.conftest import PROCESSES

US101 = resource_path("planner", "commonroad") / "USA_US101-4_1_T-1.xml"


@pytest.fixture(scope="module")
def us101():
    return load_commonroad(US101, duration=LOG_DURATION)


def test_tracks_are_what_log_replay_drives(us101) -> None:
    scenario = load_commonroad(US101)  # the 15 s episode
    tracks = recorded_tracks(scenario)
    rollout = run_episode(Scene(scenario), ConstantVelocityPlanner(), reactive=False, steps=30)
    for step in (0, 10, 30):
        live = rollout.valid[step]
        assert live.any()
        np.testing.assert_array_equal(tracks.valid[HISTORY_STEPS + step], live)
        np.testing.assert_allclose(tracks.states[HISTORY_STEPS + step][live], rollout.agents[step][live])


def test_recorded_cars_with_a_future_become_the_ego(us101) -> None:
    samples = recorded_samples(us101)
    tracks, scene = recorded_tracks(us101), Scene(us101)
    cars = []
    logged = slice(HISTORY_STEPS, None)  # not the extrapolated past before step 0
    for i, a in enumerate(us101.agents):
        track = tracks.states[logged][tracks.valid[logged, i], i]
        # 2 s of future on the part of its path that joins up through the lane graph
        if is_ego_candidate(a.kind, a.length, a.width) and (driven_route(scene, track)[1] == 0).sum() > 20:
            cars.append(i)
    used = set(samples.sources[:, 0].tolist())
    # every sample's ego is such a car; a car whose log starts too near the map's end gives none:
    # at its first logged state it could no longer stop (comfortably) before its route ends
    assert used <= set(cars) and samples.egos == len(used) > 10
    for i in set(cars) - used:
        track = tracks.states[logged][tracks.valid[logged, i], i]
        path = scene.with_route(extended(scene, driven_route(scene, track)[0])).route_path
        s, _ = path.project(track[:1, :2])
        v = track[0, 3]  # its 2 s of future at up to 1.5 m/s^2 more: 2v + 3 m further, at v + 3 m/s
        assert s[0] + 2 * v + 3 + (v + 3) ** 2 / (2 * COMFORT_BRAKE) + END_MARGIN > path.length
    assert len(samples.inputs) == len(samples.future) == len(samples.valid) > samples.egos
    # Row 0 of every ego target is the ego itself, in its own frame.
    np.testing.assert_allclose(samples.future[:, 0, 0], np.tile([0.0, 0.0, 1.0, 0.0], (len(samples.future), 1)), atol=1e-5)
    assert samples.valid[:, 0, :11].all()  # at least 2 s of logged future each


def test_the_ego_target_is_the_logged_future_in_the_ego_frame(us101) -> None:
    samples = recorded_samples(us101)
    tracks = recorded_tracks(us101)
    for n in (0, len(samples.inputs) // 2, len(samples.inputs) - 1):
        car, step = samples.sources[n]
        now = tracks.states[HISTORY_STEPS + step, car]
        later = tracks.states[HISTORY_STEPS + step + 10, car]  # 1 s later: waypoint 5 at 0.2 s
        expected = to_local(later[None, :2], now[:2], now[2])[0]
        np.testing.assert_allclose(samples.future[n, 0, 5, :2], expected, atol=1e-3)
        assert samples.inputs[n].ego[0] == pytest.approx(now[3] / F.VEL_SCALE, rel=1e-3)


def test_neighbour_targets_start_where_the_neighbours_are(us101) -> None:
    samples = recorded_samples(us101)
    checked = 0
    for inp, fut, ok in zip(samples.inputs, samples.future, samples.valid):
        for j in np.flatnonzero(inp.neighbor_index >= 0):
            assert ok[j + 1, 0]
            np.testing.assert_allclose(fut[j + 1, 0, :2], inp.neighbor_current[j, :2], atol=1e-3)
            checked += 1
    assert checked > 100


def test_the_route_is_the_lanes_the_car_drove(us101) -> None:
    scene = Scene(us101)
    tracks = recorded_tracks(us101)
    i = next(i for i, a in enumerate(us101.agents) if is_ego_candidate(a.kind, a.length, a.width))
    track = tracks.states[HISTORY_STEPS:][tracks.valid[HISTORY_STEPS:, i], i]
    route, owner = driven_route(scene, track)
    assert (owner == 0).all()
    assert scene.closest_lane(track[0, :2], track[0, 2]) == route[0]
    assert scene.closest_lane(track[-1, :2], track[-1, 2]) == route[-1]
    for a, b in zip(route, route[1:]):  # connected: successors or same-direction neighbours
        lane = scene.lanes[a]
        assert b in (*lane.successors, lane.left_neighbor, lane.right_neighbor)


@PROCESSES
def test_a_folder_becomes_one_data_file_with_every_file_named(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("USA_US101-4_1_T-1.xml", "ZAM_Tutorial-1_2_T-1.xml"):
        shutil.copy(resource_path("planner", "commonroad") / name, logs / name)
    (logs / "broken.xml").write_text("<commonRoad><lanelet")
    one = generate_recorded_dataset(tmp_path / "one.npz", logs, workers=1)
    two = generate_recorded_dataset(tmp_path / "two.npz", logs, workers=2)
    assert one["files"] == 2 and set(one["skipped"]) == {"broken.xml"} and "not valid XML" in one["skipped"]["broken.xml"]
    assert one["samples"] == two["samples"] > one["expert_samples"] > 50  # the expert drove both files' planning problems too
    data = load_dataset([tmp_path / "one.npz"])
    assert len(data["future"]) == one["samples"]
    with np.load(tmp_path / "one.npz") as a, np.load(tmp_path / "two.npz") as b:
        for key in ("agents", "lanes", "route", "future", "future_valid"):
            np.testing.assert_array_equal(a[key], b[key])
        assert "USA_US101-4_1_T-1.xml" in a["recorded_files"]


def test_a_folder_without_recordings_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="no scenario files"):
        generate_recorded_dataset(tmp_path / "x.npz", tmp_path)
    assert not (tmp_path / "x.npz").exists()


def test_the_split_holds_whole_maps_out() -> None:
    parts = {name: split_files(name) for name in ("train", "tune", "validation")}
    maps = {name: {map_id(f) for f in files} for name, files in parts.items()}
    assert not maps["train"] & maps["tune"] and not maps["train"] & maps["validation"] and not maps["tune"] & maps["validation"]
    assert len(parts["train"]) > 2 * len(parts["validation"]) > 2 * len(parts["tune"]) > 0
    assert map_id("USA_US101-3_3_T-1.xml") == "USA_US101-3"
    recorded = json.loads(resource_path("planner", "recorded_split.json").read_text())
    assert set(recorded["maps"]["validation"]) == maps["validation"]
    assert all(re.match(r"[A-Z]{3}_", f) for f in parts["train"])


def test_a_recording_that_ends_early_shows_a_whole_plan_but_teaches_only_its_log(us101) -> None:
    samples = recorded_samples(us101)
    short = np.flatnonzero(~samples.valid[:, 0, -1])
    assert len(short) > 0
    n = short[0]
    known = int(samples.valid[n, 0].sum())
    plan = samples.future[n, 0]
    step = plan[known - 1, :2] - plan[known - 2, :2]
    np.testing.assert_allclose(plan[-1, :2], plan[known - 1, :2] + (len(plan) - known) * step, atol=1e-3)
    np.testing.assert_allclose(plan[known:, 2:], np.tile(plan[known - 1, 2:], (len(plan) - known, 1)), atol=1e-6)


def test_no_sample_teaches_driving_past_the_end_of_the_mapped_road(us101) -> None:
    samples = recorded_samples(us101)
    tracks, scene = recorded_tracks(us101), Scene(us101)
    cut = 0
    for car in sorted(set(samples.sources[:, 0].tolist())):
        rows = np.flatnonzero(tracks.valid[HISTORY_STEPS:, car])
        logged = tracks.states[HISTORY_STEPS + rows, car]
        route = scene.with_route(extended(scene, driven_route(scene, logged)[0])).route_path
        for n in np.flatnonzero(samples.sources[:, 0] == car):
            future = logged[samples.sources[n, 1] - rows[0] :][::2][:41]
            taught = samples.valid[n, 0]
            s, _ = route.project(future[:, :2])
            reach = s + future[:, 3] ** 2 / (2 * COMFORT_BRAKE) + END_MARGIN
            assert (reach[: taught.sum()] <= route.length).all()
            cut += taught.sum() < len(future)
    assert cut > 0  # this 200 m stretch of US-101 ends within some cars' 8 s
