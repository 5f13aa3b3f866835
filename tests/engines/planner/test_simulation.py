"""The closed loop: bicycle and tracker, IDM agents and log replay, the rule-based planners,
episodes (JSON, CSV, video) and re-runs from a frame."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from engines.core import EngineError
from engines.planner.episode import episode_csv, load_episode, save_episode
from engines.planner.planners.base import PLAN_DT, poses_with_speed
from engines.planner.planners.pdm import PDMPlanner
from engines.planner.planners.rules import ConstantVelocityPlanner, ExpertPlanner, IDMPlanner
from engines.planner.procedural import generate
from engines.planner.api import RunParams, move_agent, rerun, run, with_cut_in
from engines.planner.scene import Scene
from engines.planner.simulation import run_episode
from engines.planner.vehicle import EgoState, Tracker, step_bicycle

from .helpers import agent, scenario


def test_bicycle_drives_straight_and_turns_with_steering() -> None:
    s = EgoState(0.0, 0.0, 0.0, 10.0)
    for _ in range(10):
        s = step_bicycle(s, 0.0, 0.0, 0.1)
    assert s.x == pytest.approx(10.0, abs=1e-6) and s.y == pytest.approx(0.0, abs=1e-9)
    t = EgoState(0.0, 0.0, 0.0, 10.0, steering=0.1)
    t = step_bicycle(t, 0.0, 0.1, 0.1)
    assert t.yaw_rate == pytest.approx(10.0 * np.tan(0.1) / 3.089, rel=1e-3) and t.heading > 0


def test_tracker_reaches_the_plans_speed_and_line() -> None:
    tracker = Tracker()
    s = EgoState(0.0, 1.0, 0.0, 5.0)
    for _ in range(80):
        xs = s.x + np.arange(41) * 1.0  # 10 m/s along y = 0
        plan = poses_with_speed(np.column_stack([xs, np.zeros(41)]), np.zeros(41), PLAN_DT)
        a, d = tracker.control(s, plan)
        s = step_bicycle(s, a, d, 0.1)
    assert s.speed == pytest.approx(10.0, abs=0.3)
    assert abs(s.y) < 0.2


def test_idm_agent_stops_behind_a_stopped_car_and_replay_reproduces_the_log() -> None:
    from engines.planner.agents import AgentSim
    from engines.planner.scenario import Agent, Event

    parked = Agent(1, "vehicle", 4.5, 2.0, ((150.0, 0.0, 0.0, 0.0),), events=(Event(0.0, "brake", speed=0.0),))
    follower = agent(2, 100.0, 0.0, 12.0)
    sim = AgentSim(Scene(scenario(agents=(parked, follower))), reactive=True)
    for _ in range(150):
        sim.step(None, (0.0, 0.0))
    gap = sim.state[0, 0] - sim.state[1, 0] - 4.5
    assert sim.state[0, 0] == pytest.approx(150.0) and 0.8 < gap < 4.0 and sim.state[1, 3] < 0.1
    # Log replay: the recorded states come back exactly.
    log = tuple((100.0 + 1.2 * k, 3.5, 0.0, 12.0) for k in range(1, 30))
    replayed = Agent(3, "vehicle", 4.5, 2.0, ((100.0, 3.5, 0.0, 12.0),), trajectory=log)
    sim = AgentSim(Scene(scenario(agents=(replayed,))), reactive=False)
    for k in range(35):
        sim.step(None, (0.0, 0.0))
        if k < len(log):
            assert np.allclose(sim.state[0], log[k]) and sim.active[0]
    assert not sim.active[0]  # gone once its log ends


def test_rule_based_planners_on_a_stopped_vehicle() -> None:
    sc = generate("stopped_vehicle", 1)
    scene = Scene(sc)
    stopped = next(a for a in sc.agents if a.history[-1][3] == 0.0)
    idm = run_episode(scene, IDMPlanner(), reactive=True)
    expert = run_episode(scene, ExpertPlanner(), reactive=True)
    pdm = run_episode(scene, PDMPlanner(), reactive=True)
    x_stop = stopped.history[-1][0]
    assert idm.ego[-1, 0] < x_stop and idm.ego[-1, 3] < 0.5  # the lane follower waits behind it
    assert expert.ego[-1, 0] > x_stop + 10.0  # the expert changes lanes and passes
    assert pdm.ego[-1, 0] > x_stop + 10.0  # so does the PDM-like planner (lane offsets)
    cv = run_episode(scene, ConstantVelocityPlanner(), reactive=True, steps=20)
    assert np.allclose(cv.ego[:, 3], sc.ego.speed, atol=0.3)


def test_episode_round_trip_csv_and_video(tmp_path: Path) -> None:
    from engines.planner.render import render_video

    res = run(RunParams(type="cut_in", seed=2, planner="idm", reactive=True), out=tmp_path / "ep.json")
    ep = load_episode(tmp_path / "ep.json")
    assert ep.steps == 150 and len(ep.plans) == 150
    assert ep.score == pytest.approx(res.episode.score)
    assert np.allclose(ep.ego[:, :2], res.episode.ego[:, :2], atol=1e-3)
    csv = episode_csv(ep).splitlines()
    assert csv[0].startswith("step,time,x,y") and len(csv) == 152
    ep.ego, ep.agents, ep.valid, ep.plans = ep.ego[:6], ep.agents[:6], ep.valid[:6], ep.plans[:5]
    info = render_video(ep, tmp_path / "clip.gif", fps=5, size=(160, 120))
    assert info["frames"] == 6 and (tmp_path / "clip.gif").stat().st_size > 1000
    with pytest.raises(EngineError, match="mp4 or .gif"):
        render_video(ep, tmp_path / "clip.avi")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "workbench-planner-episode", "ego": [')
    with pytest.raises(EngineError, match="not valid JSON"):
        load_episode(bad)


def test_rerun_from_a_frame_keeps_the_past_and_applies_edits() -> None:
    base = run(RunParams(type="straight", seed=4, planner="idm", reactive=True)).episode
    frame = 40
    same = rerun(base, frame, RunParams(planner="idm"))
    assert np.allclose(same.ego[: frame + 1], base.ego[: frame + 1])
    assert np.allclose(same.ego[-1, :2], base.ego[-1, :2], atol=0.05)  # deterministic replay of the rest
    # Put a car right in front of the ego at the frame: the lane follower brakes for it.
    e = base.ego[frame]
    target = int(base.agent_ids[0])
    moved = rerun(base, frame, RunParams(planner="idm"), edit=move_agent(target, e[0] + 15.0, e[1], e[2], 0.0))
    assert moved.ego[-1, 0] < base.ego[-1, 0] - 20.0
    cut = with_cut_in(base, frame)
    assert len(cut.agents) == len(base.scenario.agents) + 1 and cut.agents[-1].start_step == frame
    with_cut = rerun(base, frame, RunParams(planner="idm"), scenario=cut)
    assert with_cut.valid[frame + 1, -1] and not with_cut.valid[frame - 1, -1]


@pytest.mark.parametrize("leader_speed, extra", [(0.0, (1.2, 1.5)), (1.0, (0.65, 0.85)), (3.0, (0.0, 0.0))])
def test_the_expert_keeps_a_larger_gap_only_behind_a_standing_leader(leader_speed: float, extra: tuple[float, float]) -> None:
    from engines.planner.agents import IDM
    from engines.planner.planners.corridor import idm_profile
    from engines.planner.planners.rules import EXPERT_IDM
    from engines.planner.vehicle import LENGTH

    steps = 400
    rear = 60.0 + leader_speed * PLAN_DT * np.arange(steps + 1)  # the leader's rear, along the path
    gaps = {}
    for name, p in (("idm", IDM), ("expert", EXPERT_IDM)):
        s, v = idm_profile(0.0, 10.0, np.array([15.0]), rear[None], np.array([leader_speed]), steps, p=p)
        gaps[name] = rear[-1] - (s[0, -1] + LENGTH / 2)
        if leader_speed == 0.0:
            assert v[0, -1] < 0.05  # stopped behind it
    # 1.5 m x (1 - speed / 2 m/s) more; braking from 10 m/s it comes to rest a little short of it
    assert extra[0] - 1e-6 <= gaps["expert"] - gaps["idm"] <= extra[1] + 1e-6
    if leader_speed == 0.0:
        assert gaps["idm"] == pytest.approx(IDM.min_gap, abs=0.15)


@pytest.mark.parametrize("x0, blocks", [(0.0, True), (30.0, False), (-40.0, False)])
def test_gap_acceptance_blocks_only_for_a_car_entering_beside_the_ego(x0: float, blocks: bool) -> None:
    """A car drifting from the next lane into the ego's (10 m/s, 1 m/s sideways) enters at about
    1.2 s. Beside the ego then, the ego waits behind its entry point; far ahead it is an ordinary
    leader, far behind it can brake for the ego: no block either way."""
    from engines.planner.geometry import Polyline, box_corners
    from engines.planner.planners.corridor import Obstacles, PathFrame, leaders_on_path

    frame = PathFrame.at(Polyline(np.column_stack([np.arange(0.0, 201.0, 5.0), np.zeros(41)])), np.array([20.0, 0.0]))
    times = np.arange(0.0, 4.01, 0.5)
    heading = float(np.arctan2(-1.0, 10.0))
    x, y = 20.0 + x0 + 10.0 * times, 3.5 - 1.0 * times
    obstacles = Obstacles(box_corners(x, y, np.full_like(x, heading), 4.8, 2.0)[None], np.array([np.hypot(10.0, 1.0)]),
                          np.array([heading]), times)
    tf = np.arange(0.0, 4.01, PLAN_DT)
    ego_s = frame.s0 + 10.0 * tf
    s_plain, _ = leaders_on_path(frame, obstacles, (0.0, 0.0), 120.0, True, 10.0)
    s_gap, v_gap = leaders_on_path(frame, obstacles, (0.0, 0.0), 120.0, True, 10.0, ego_s=ego_s)
    t_lead = tf[np.isfinite(s_plain[0])].min()  # a leader from half a second before it is in
    assert 0.5 <= t_lead <= 2.5  # on its way over (far behind: once it is in the window)
    assert np.array_equal(s_gap[0, tf >= t_lead], s_plain[0, tf >= t_lead])
    if blocks:
        entry = s_gap[0, 0]
        assert np.all(s_gap[0, tf < t_lead] == entry) and v_gap[0] == 0.0
        assert abs(entry - (frame.s0 + 10.0 * (t_lead + 0.5))) < 5.0  # beside where the ego would be
    else:
        assert np.array_equal(s_gap, s_plain)


def test_the_expert_merges_behind_a_car_it_would_meet_beside_it() -> None:
    """Training merge 100000: following the route's blend at a fixed place, the expert without gap
    acceptance drove into the side of a main-lane car."""
    episode = run(RunParams(type="merge", seed=100000, planner="expert", reactive=True))
    assert not episode.summary()["at_fault_collision"]


@pytest.fixture(scope="module")
def short_episode_json() -> dict:
    """A 2 s episode with one agent, as its JSON, for the damaged-file tests."""
    from engines.planner.episode import episode_to_dict

    sc = scenario(agents=(agent(1, 80.0, 3.5, 10.0),), duration=2.0)
    return json.loads(json.dumps(episode_to_dict(run(RunParams(planner="idm"), scenario=sc).episode)))


def _damage(data: dict, what: str) -> dict:
    data = copy.deepcopy(data)
    if what == "nan_ego":
        data["ego"][3][0] = float("nan")
    elif what == "ego_3_columns":
        data["ego"] = [row[:3] for row in data["ego"]]
    elif what == "short_signals":
        data["metrics"]["signals"] = {k: v[:3] for k, v in data["metrics"]["signals"].items()}
    elif what == "dt_zero":
        data["dt"] = 0
    elif what == "kinds_short":
        data["agents"]["kinds"] = []
    elif what == "plan_2_columns":
        data["plans"][3]["trajectory"] = [[1.0, 2.0]]
    elif what == "plan_nan":
        data["plans"][3]["trajectory"][0][0] = float("nan")
    elif what == "metrics_null":
        data["metrics"] = None
    return data


@pytest.mark.parametrize("what,needle", [
    ("nan_ego", "the ego track holds values that are not finite"),
    ("ego_3_columns", r"the ego track has shape 21 x 3, expected N x 7"),
    ("short_signals", r"the metric signal '\w+' has shape 3, expected 21"),
    ("dt_zero", "its time step 0 s is not positive"),
    ("kinds_short", "the agent kinds are not 1 names"),
    ("plan_2_columns", "the plan of step 3 has shape 1 x 2"),
    ("plan_nan", "the plan of step 3 holds values that are not finite"),
    ("metrics_null", "its metrics are missing"),
])
def test_a_damaged_episode_is_one_sentence_before_any_replay_or_video(short_episode_json: dict, what: str, needle: str) -> None:
    """A NaN row once rendered a video with exit 0 and crashed the panel's camera while scrubbing;
    3 columns crashed the video, and short signals crashed the replay."""
    from engines.planner.episode import episode_from_dict

    assert episode_from_dict(short_episode_json).steps == 20
    with pytest.raises(EngineError, match=f"ep.json is a damaged planner episode: {needle}"):
        episode_from_dict(_damage(short_episode_json, what), "ep.json")


def test_the_end_frame_means_the_last_replan_for_every_action() -> None:
    """The timeline shows frames 0..steps, the planner plans at 0..steps-1: re-run, cut-in and
    denoising at the end frame all start from the last replan, and beyond it is one sentence."""
    from engines.planner.api import replan_frame

    base = run(RunParams(planner="idm"), scenario=scenario(agents=(agent(1, 80.0, 3.5, 10.0),), duration=2.0)).episode
    assert replan_frame(base, base.steps) == base.steps - 1 and replan_frame(base, 5) == 5
    again = rerun(base, base.steps, RunParams(planner="idm"))
    assert again.extras["rerun_from"] == base.steps - 1 and again.steps == base.steps
    assert with_cut_in(base, base.steps).agents[-1].start_step == base.steps - 1
    with pytest.raises(EngineError, match=r"frame 21 is outside the episode \(0-20\)"):
        rerun(base, base.steps + 1, RunParams(planner="idm"))
