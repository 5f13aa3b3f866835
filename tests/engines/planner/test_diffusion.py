"""The diffusion planner's parts: noise schedule, DPM-Solver++, guidance energies, features,
and the shipped checkpoint planning in a scene."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engines.planner.diffusion import alpha_sigma, dpm_solver_pp, lam, t_of_lambda
from engines.planner.features import N_AGENTS, FeatureBuilder
from engines.planner.guidance import (
    TURN_RADIUS, GuidanceConfig, GuidanceContext, energies, guide_step, path_headings, reach_capped, rect_corners,
    sideways_reach, signed_distance,
)
from engines.planner.procedural import generate
from engines.planner.scene import Scene
from engines.planner.simulation import Simulator

from .helpers import agent, scene


def test_schedule_is_the_linear_vp_sde_and_lambda_inverts() -> None:
    t = torch.linspace(1e-3, 1.0, 50)
    a, s = alpha_sigma(t)
    assert torch.allclose(a**2 + s**2, torch.ones_like(t), atol=1e-6)
    assert float(a[-1]) == pytest.approx(np.exp(-0.25 * (20 - 0.1) - 0.5 * 0.1), rel=1e-5)
    assert torch.allclose(t_of_lambda(lam(t)), t, atol=1e-5)


def test_dpm_solver_reaches_the_predicted_x0_and_keeps_the_first_waypoint_pinned() -> None:
    target = torch.randn(4, 3, 11, 4)
    current = torch.randn(4, 3, 4)
    seen = []

    def oracle(x_t, t):
        seen.append(float(t[0]))
        return target.clone()

    x = dpm_solver_pp(oracle, torch.randn(4, 3, 11, 4), current, steps=10)
    assert len(seen) == 10 and seen[0] == pytest.approx(1.0) and seen == sorted(seen, reverse=True)
    assert torch.allclose(x[:, :, 0], current)
    assert torch.allclose(x[:, :, 1:], target[:, :, 1:], atol=0.05)


def test_signed_distance_of_boxes() -> None:
    a = rect_corners(torch.tensor([0.0, 0.0]), torch.tensor([1.0, 0.0]), 4.0, 2.0)
    apart = rect_corners(torch.tensor([7.0, 0.0]), torch.tensor([1.0, 0.0]), 4.0, 2.0)
    overlap = rect_corners(torch.tensor([3.0, 0.0]), torch.tensor([1.0, 0.0]), 4.0, 2.0)
    assert float(signed_distance(a, apart)) == pytest.approx(3.0)
    assert float(signed_distance(a, overlap)) == pytest.approx(-1.0)


def _context(neighbor_xy=None, sdf=None, origin=(0.0, 0.0), res=1.0) -> GuidanceContext:
    return GuidanceContext(
        neighbor_size=torch.tensor([[4.5, 2.0]]), neighbor_valid=torch.tensor([neighbor_xy is not None]),
        static_boxes=torch.zeros(0, 4, 2), forecast_boxes=torch.zeros(0, 20, 4, 2), sdf=sdf,
        sdf_origin=torch.tensor(origin), sdf_res=res, ego_origin=torch.tensor([0.0, 0.0]), ego_heading=0.0, speed_limit=10.0, dt=0.2,
    )


def _straight_plan(speed: float, k: int = 2) -> torch.Tensor:
    t = torch.arange(41) * 0.2
    plan = torch.zeros(k, 41, 4)
    plan[..., 0] = speed * t
    plan[..., 2] = 1.0
    return plan


def test_collision_guidance_moves_the_plan_away_from_a_predicted_collision() -> None:
    ego = _straight_plan(10.0)
    nb = torch.zeros(2, 1, 41, 4)
    nb[..., 0] = 30.0  # a stopped car 30 m ahead, in the way
    nb[..., 2] = 1.0
    cfg = GuidanceConfig({"collision": 1.0})
    ctx = _context(neighbor_xy=True)
    before = energies(ego, nb, ctx, cfg)["collision"]
    assert (before > 0).all()
    moved = ego.clone()
    for _ in range(5):
        moved[..., :2] += guide_step(moved, nb, ctx, cfg)
    after = energies(moved, nb, ctx, cfg)["collision"]
    assert (after < 0.8 * before).all()
    assert torch.allclose(moved[:, 0], ego[:, 0])  # the first waypoint never moves


def test_drivable_guidance_pulls_the_plan_back_onto_the_road() -> None:
    grid = torch.full((1, 1, 40, 200), 5.0)
    grid[..., 15:25, :] = -2.0  # a 10 m wide road along y = 15..25 (origin y = -20)
    ego = _straight_plan(5.0, 1)
    ego[..., 1] = torch.linspace(0.0, 6.0, 41)  # drifting left, off the road
    cfg = GuidanceConfig({"drivable": 1.0})
    ctx = _context(sdf=grid, origin=(-10.0, -20.0))
    before = energies(ego, torch.zeros(1, 0, 41, 4), ctx, cfg)["drivable"]
    step = guide_step(ego, torch.zeros(1, 0, 41, 4), ctx, cfg)
    assert float(before) > 0 and float(step[0, -1, 1]) < 0  # pushed back to the right


def test_guidance_moves_a_plan_sideways_no_further_than_the_car_can_steer() -> None:
    assert float(sideways_reach(torch.tensor(0.0))) == 0.0
    assert float(sideways_reach(torch.tensor(TURN_RADIUS * torch.pi / 2))) == pytest.approx(TURN_RADIUS)
    standing = _straight_plan(0.0, 1)
    push = torch.zeros(1, 41, 2)
    push[..., 1] = 1.0  # a metre to the left everywhere
    push[..., 0] = 0.5  # and half a metre ahead
    push[:, 0] = 0.0  # the first waypoint is pinned
    capped = reach_capped(push, standing)
    assert float(capped[..., 1].abs().max()) == 0.0  # a standing car cannot start sideways
    assert torch.allclose(capped[:, 1:, 0], push[:, 1:, 0])  # but may start forwards
    moving = _straight_plan(2.0, 1)  # 0.4 m per waypoint
    capped = reach_capped(push, moving)
    travel = 0.4 * torch.arange(41)
    assert torch.allclose(capped[0, :, 1], torch.minimum(push[0, :, 1], sideways_reach(travel)), atol=1e-6)
    assert float(capped[0, -1, 1]) == 1.0  # after 16 m the whole metre is reachable


def test_comfort_signals_are_the_metrics_on_the_plan_grid() -> None:
    from engines.planner.guidance import comfort_signals
    from engines.planner.metrics import comfort_signals as metric_signals

    # Braking at 2 m/s^2 from 12 m/s round a 60 m radius bend, every 0.1 s (what the metric sees) and every 0.2 s (a plan).
    t = np.arange(51) * 0.1
    v = 12.0 - 2.0 * t
    s = 12.0 * t - t**2
    xy = np.column_stack([60.0 * np.sin(s / 60.0), 60.0 - 60.0 * np.cos(s / 60.0)])
    metric = metric_signals(np.column_stack([xy, s / 60.0, v]), 0.1)
    plan = comfort_signals(torch.from_numpy(xy[None, ::2]).float(), 0.2)
    inner = slice(4, -4)
    assert np.allclose(plan["speed"][0].numpy(), v[::2], atol=0.05)
    assert np.allclose(plan["lon_acc"][0, inner].numpy(), metric["lon_acc"][::2][inner], atol=0.1)
    assert np.allclose(plan["lat_acc"][0, inner].numpy(), metric["lat_acc"][::2][inner], atol=0.1)
    assert np.allclose(plan["lon_acc"][0, inner].numpy(), -2.0, atol=0.1) and np.allclose(plan["lon_jerk"][0, inner].numpy(), 0.0, atol=0.2)


def test_comfort_guidance_leaves_a_smooth_plan_alone_and_softens_hard_braking_without_overshooting() -> None:
    from engines.planner.guidance import comfort_energy

    cfg = GuidanceConfig.parse("comfort")
    ctx = _context()
    none = torch.zeros(1, 0, 41, 4)
    # The sampled waypoints of a steady plan jitter by centimetres: not discomfort (it used to push them by metres).
    jittered = _straight_plan(12.0, 1)
    jittered[..., :2] += 0.05 * torch.randn(jittered[..., :2].shape, generator=torch.Generator().manual_seed(0))
    jittered[:, 0, :2] = 0.0
    assert float(energies(jittered, none, ctx, cfg)["comfort"]) == 0.0
    assert float(guide_step(jittered, none, ctx, cfg).abs().max()) == 0.0
    # Braking from 12 m/s to a stop at 6 m/s^2 after 1 s: the guided plan brakes more gently, and every step helps.
    t = torch.arange(41) * 0.2
    tb = (t - 1.0).clamp(0.0, 2.0)
    hard = _straight_plan(0.0, 1)
    hard[..., 0] = 12.0 * t.clamp(max=1.0) + 12.0 * tb - 3.0 * tb**2
    moved, energy = hard.clone(), [float(comfort_energy(hard[..., :2], 0.2))]
    for _ in range(3):
        step = guide_step(moved, none, ctx, cfg)
        assert float(step.norm(dim=-1).max()) <= 6.0 and float(step[:, 0].abs().max()) == 0.0
        moved[..., :2] += step
        energy.append(float(comfort_energy(moved[..., :2], 0.2)))
    assert energy[0] > 20.0 and all(b < a for a, b in zip(energy, energy[1:])) and energy[-1] < 0.5 * energy[0]


def test_the_driven_sample_is_the_safest_and_comfort_does_not_pick_it() -> None:
    from engines.planner.guidance import choose

    cfg = GuidanceConfig.parse("collision,drivable,speed,comfort")
    terms = {"collision": torch.tensor([0.5, 0.0, 0.0, 0.0]), "drivable": torch.tensor([0.0, 0.0, 0.0, 0.2]),
             "speed": torch.tensor([0.0, 3.0, 1.0, 0.0]), "comfort": torch.tensor([0.0, 0.0, 500.0, 0.0])}
    assert choose(terms, cfg) == 2  # 0 and 3 are less safe whatever their other terms; 2's discomfort does not count
    assert choose({"comfort": torch.tensor([3.0, 1.0])}, GuidanceConfig.parse("comfort")) is None  # the medoid drives


def test_guidance_terms_parse_and_reject_unknown_names() -> None:
    from engines.core import EngineError

    cfg = GuidanceConfig.parse("collision,speed", {"speed": 0.5})
    assert cfg.weights == {"collision": 1.0, "speed": 0.5} and cfg.active
    assert not GuidanceConfig.parse("").active
    with pytest.raises(EngineError, match="unknown guidance term"):
        GuidanceConfig.parse("collision,teleport")


def test_features_are_ego_centric() -> None:
    sc = scene(agents=(agent(1, 70.0, 0.0, 8.0), agent(2, 30.0, 3.5, 8.0)))
    sim = Simulator(sc, reactive=True)
    inp = FeatureBuilder(sc).build(sim.observation())
    assert inp.agents.shape[0] == N_AGENTS and inp.agents_mask.sum() == 2
    first = inp.neighbor_index[0]
    assert first == 0  # the nearest agent (20 m ahead) comes first
    assert inp.neighbor_current[0, 0] == pytest.approx(20.0) and abs(inp.neighbor_current[0, 1]) < 1e-6
    assert inp.lanes_mask.any() and inp.route_mask[0] and inp.ego[0] == pytest.approx(1.0)


def test_shipped_checkpoint_plans_k_samples_with_and_without_guidance() -> None:
    from engines.planner.model import count_parameters
    from engines.planner.planners.diffusion_planner import DiffusionPlanner, DiffusionSettings, load_model

    model, meta = load_model()
    assert 1_000_000 <= count_parameters(model) <= 2_000_000
    trained = meta.get("averaged", [meta])  # a trained checkpoint, or a weight average of trained ones
    assert trained and all(source["steps"] > 1000 for source in trained)
    sc = Scene(generate("cut_in", 11))
    sim = Simulator(sc, reactive=True)
    for guidance in ("", "collision,drivable,speed,comfort"):
        planner = DiffusionPlanner(DiffusionSettings(samples=8, steps=10, guidance=GuidanceConfig.parse(guidance)), model=model)
        planner.reset(sc)
        planner.record_trace = True
        plan = planner.plan(sim.observation())
        assert plan.samples.shape == (8, 41, 2) and 0 <= plan.chosen < 8
        assert np.allclose(plan.trajectory[0, :2], [sc.scenario.ego.x, sc.scenario.ego.y], atol=1e-3)
        assert plan.predictions is not None and len(plan.predictions) == len(plan.prediction_ids) > 0
        assert len(plan.trace["steps"]) == 10
        guided = [float(np.abs(s["guidance"]).max()) for s in plan.trace["steps"]]
        assert (max(guided) > 0) if guidance else (max(guided) == 0)
        # The plan goes forward along the lane at a plausible speed.
        travel = np.hypot(*(plan.trajectory[20, :2] - plan.trajectory[0, :2]))
        assert 0.5 * sc.scenario.ego.speed * 2.0 < travel < 1.6 * sc.scenario.ego.speed * 2.0


def test_the_route_end_is_a_wall_across_the_road_only_when_near() -> None:
    from engines.planner.geometry import Polyline
    from engines.planner.planners.diffusion_planner import route_end_box

    route = Polyline(np.column_stack([np.linspace(0.0, 100.0, 51), np.zeros(51)]))
    wall = route_end_box(route, 0.0)
    assert wall.shape == (4, 2)
    assert wall[:, 0].min() == pytest.approx(98.5) and wall[:, 0].max() == pytest.approx(100.5)
    assert wall[:, 1].min() == pytest.approx(-6.0) and wall[:, 1].max() == pytest.approx(6.0)
    long_route = Polyline(np.column_stack([np.linspace(0.0, 500.0, 51), np.zeros(51)]))
    assert route_end_box(long_route, 0.0) is None and route_end_box(long_route, 400.0) is not None


def test_collision_guidance_leaves_out_only_the_car_right_behind_in_the_ego_lane() -> None:
    from engines.planner.planners.diffusion_planner import following

    current = np.array([[-7.0, 0.3, 1, 0], [-7.0, 3.5, 1, 0], [12.0, 0.0, 1, 0], [-1.0, 0.2, 1, 0], [0.0, 0.0, 0, 0]])
    assert following(current).tolist() == [True, False, False, False, False]


def test_guided_plan_stops_before_the_end_of_a_mapped_road() -> None:
    """The CommonRoad tutorial road ends 199 m along the route: guided, the ego stops on it
    (it used to creep past the end, 1.3 m off the map)."""
    from engines.core import resource_path
    from engines.planner.commonroad_import import load_commonroad
    from engines.planner.api import RunParams, run

    path = resource_path("planner", "commonroad") / "ZAM_Tutorial-1_2_T-1.xml"
    result = run(RunParams(scenario=str(path), planner="diffusion", guidance="collision,drivable", reactive=True))
    metrics = result.episode.metrics
    assert metrics.multipliers["drivable_area_compliance"] == 1.0
    route = Scene(load_commonroad(path)).route_path
    s_end, _ = route.project(np.array(result.episode.ego)[-1:, :2])
    assert route.length - 6.0 < s_end[0] < route.length - 2.0  # stopped just before the end, centre a car length back


def test_drivable_corners_point_where_the_path_goes() -> None:
    # waypoints moving along +y (0.5 m a step) while the plan's own headings say +x; then standing still
    ego = torch.zeros(1, 5, 4)
    ego[0, :3, 1] = torch.tensor([0.0, 0.5, 1.0])
    ego[0, 3:, 1] = 1.0
    ego[0, :, 2] = 1.0  # cos 1, sin 0: heading +x
    cs = ego[:, 1:, 2:4]
    got = path_headings(ego, cs)
    assert torch.allclose(got[0, :2], torch.tensor([[0.0, 1.0], [0.0, 1.0]]))
    assert torch.allclose(got[0, 2:], torch.tensor([[1.0, 0.0], [1.0, 0.0]]))  # no motion: the plan's heading


def test_guided_plan_stays_on_the_road_after_swerving_round_a_stopped_leader() -> None:
    from engines.planner.api import RunParams, run

    # lead_braking-8: the ego swerves left round the braking leader and stops at an angle; with
    # corners taken from the plan's own headings its front corner crept 0.35 m off the road
    result = run(RunParams(type="lead_braking", seed=8, planner="diffusion", guidance="collision,drivable", reactive=True))
    assert result.episode.metrics.multipliers["drivable_area_compliance"] == 1.0
