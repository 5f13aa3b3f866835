"""The closed-loop score on hand-made situations: who is at fault, drivable area, direction,
progress, time to collision, speed limit and comfort bounds."""
from __future__ import annotations

import numpy as np
import pytest

from engines.planner.metrics import TH, compute_cls, comfort_flags, comfort_signals, time_to_collision
from engines.planner.scenario import StaticObject

from .helpers import empty_track, line_trajectory, scene, track

DT = 0.1
STEPS = 151


def test_smooth_free_drive_scores_full_marks() -> None:
    sc = scene()
    ego = line_trajectory(50.0, np.full(STEPS, 10.0))
    res = compute_cls(sc, ego, empty_track(STEPS), DT, expert_progress=150.0)
    assert res.score == pytest.approx(1.0)
    assert not res.collisions and not res.violations


def test_rear_ended_ego_is_not_at_fault() -> None:
    sc = scene()
    ego = line_trajectory(50.0, np.full(STEPS, 5.0))
    other = line_trajectory(38.0, np.full(STEPS, 10.0))  # catches up from behind and runs into the ego
    res = compute_cls(sc, ego, track(other), DT, expert_progress=75.0)
    assert len(res.collisions) == 1
    c = res.collisions[0]
    assert c.type == "active_rear" and not c.at_fault
    assert res.multipliers["no_at_fault_collisions"] == 1.0
    assert res.score > 0.5


def test_hitting_a_slower_vehicle_with_the_front_is_at_fault_and_zeroes_the_score() -> None:
    sc = scene()
    ego = line_trajectory(50.0, np.full(STEPS, 12.0))
    other = line_trajectory(70.0, np.full(STEPS, 3.0))
    res = compute_cls(sc, ego, track(other), DT, expert_progress=100.0)
    assert [c.type for c in res.collisions] == ["active_front"]
    assert res.collisions[0].at_fault
    assert res.multipliers["no_at_fault_collisions"] == 0.0
    assert res.score == 0.0
    # The time-to-collision warning comes first, then the collision itself.
    assert res.first_violation is not None and res.first_violation.what == "ttc"
    assert res.first_violation.step < res.collisions[0].step
    assert "collision" in {v.what for v in res.violations}


def test_stopped_ego_hit_is_not_at_fault_but_hitting_a_stopped_vehicle_is() -> None:
    sc = scene()
    stopped_ego = line_trajectory(50.0, np.zeros(STEPS))
    other = line_trajectory(30.0, np.full(STEPS, 8.0))
    res = compute_cls(sc, stopped_ego, track(other), DT, expert_progress=1.0)
    assert [(c.type, c.at_fault) for c in res.collisions] == [("stopped_ego", False)]

    ego = line_trajectory(50.0, np.full(STEPS, 10.0))
    parked = line_trajectory(90.0, np.zeros(STEPS))
    res = compute_cls(sc, ego, track(parked), DT, expert_progress=100.0)
    assert [(c.type, c.at_fault) for c in res.collisions] == [("stopped_track", True)]
    assert res.score == 0.0


def test_lateral_hit_counts_against_the_ego_only_when_it_straddles_lanes() -> None:
    sc = scene()
    # The other vehicle drifts sideways into the ego from the left lane while the ego stays in lane.
    ego = line_trajectory(50.0, np.full(STEPS, 10.0))
    other = line_trajectory(50.0, np.full(STEPS, 10.0), y=3.5)
    other[:, 1] = np.clip(3.5 - 0.05 * np.arange(STEPS), 1.0, 3.5)
    res = compute_cls(sc, ego, track(other), DT, expert_progress=150.0)
    assert [(c.type, c.at_fault) for c in res.collisions] == [("active_lateral", False)]
    # Now the ego straddles both lanes when they touch.
    ego_mid = line_trajectory(50.0, np.full(STEPS, 10.0), y=1.75)
    other2 = line_trajectory(50.0, np.full(STEPS, 10.0), y=5.0)
    other2[:, 1] = np.clip(5.0 - 0.05 * np.arange(STEPS), 3.0, 5.0)
    res = compute_cls(sc, ego_mid, track(other2), DT, expert_progress=150.0)
    assert [(c.type, c.at_fault) for c in res.collisions] == [("active_lateral", True)]


def test_leaving_the_drivable_area_zeroes_the_score() -> None:
    sc = scene()
    ego = line_trajectory(50.0, np.full(STEPS, 10.0))
    ego[80:, 1] = np.linspace(0.0, -4.0, STEPS - 80)  # drifts off the right edge (y = -1.75)
    res = compute_cls(sc, ego, empty_track(STEPS), DT, expert_progress=150.0)
    assert res.multipliers["drivable_area_compliance"] == 0.0
    assert res.score == 0.0
    # A corner just 0.2 m over the edge is tolerated (nuPlan's 0.3 m).
    ego2 = line_trajectory(50.0, np.full(STEPS, 10.0), y=-(1.75 - 2.297 / 2) - 0.2)
    assert compute_cls(sc, ego2, empty_track(STEPS), DT, expert_progress=150.0).multipliers["drivable_area_compliance"] == 1.0


def test_driving_backwards_halves_then_zeroes_the_score() -> None:
    sc = scene()
    for back, expected in ((1.0, 1.0), (4.0, 0.5), (8.0, 0.0)):
        ego = line_trajectory(80.0, np.zeros(STEPS))
        ego[50:60, 0] = 80.0 - np.linspace(0.0, back, 10)
        ego[60:, 0] = 80.0 - back
        res = compute_cls(sc, ego, empty_track(STEPS), DT, expert_progress=1.0)
        assert res.multipliers["driving_direction_compliance"] == expected, back


def test_progress_against_the_expert_and_making_progress() -> None:
    sc = scene()
    ego = line_trajectory(50.0, np.full(STEPS, 5.0))  # 75 m
    res = compute_cls(sc, ego, empty_track(STEPS), DT, expert_progress=150.0)
    assert res.weighted["progress"] == pytest.approx(0.5, abs=0.01)
    assert res.multipliers["making_progress"] == 1.0
    slow = line_trajectory(50.0, np.full(STEPS, 1.0))  # 15 m < 20 % of 150 m
    res = compute_cls(sc, slow, empty_track(STEPS), DT, expert_progress=150.0)
    assert res.multipliers["making_progress"] == 0.0 and res.score == 0.0


def test_speed_limit_term_falls_with_the_mean_overspeed() -> None:
    sc = scene()  # limit 15 m/s
    ok = compute_cls(sc, line_trajectory(20.0, np.full(STEPS, 15.0)), empty_track(STEPS), DT, 225.0)
    assert ok.weighted["speed_limit"] == 1.0
    over = compute_cls(sc, line_trajectory(20.0, np.full(STEPS, 15.0 + TH.max_overspeed / 2)), empty_track(STEPS), DT, 225.0)
    assert over.weighted["speed_limit"] == pytest.approx(0.5, abs=0.01)


def test_time_to_collision_with_constant_velocity() -> None:
    sc = scene()
    ego = line_trajectory(50.0, np.full(10, 10.0))
    # A stopped car whose rear is 6 m ahead of the ego's front bumper: contact after ~0.6 s.
    parked = line_trajectory(50.0 + 5.176 / 2 + 6.0 + 2.25, np.zeros(10))
    ttc = time_to_collision(ego, track(parked), sc, DT)
    assert ttc[0] == pytest.approx(0.6, abs=0.11)
    far = line_trajectory(50.0 + 60.0, np.zeros(10))
    assert np.isinf(time_to_collision(ego, track(far), sc, DT)[0])
    res = compute_cls(sc, ego, track(parked), DT, expert_progress=1.0)
    assert res.weighted["ttc"] == 0.0


def test_comfort_bounds() -> None:
    smooth = line_trajectory(0.0, np.linspace(5.0, 15.0, 60))  # +1.7 m/s^2
    sig = comfort_signals(smooth, DT)
    assert np.allclose(sig["lon_acc"][5:-5], 10.0 / 5.9, atol=0.05)
    assert not any(f.any() for f in comfort_flags(sig).values())
    harsh = line_trajectory(20.0, np.concatenate([np.full(30, 15.0), np.linspace(15.0, 0.0, 25), np.zeros(30)]))  # -6 m/s^2
    flags = comfort_flags(comfort_signals(harsh, DT))
    assert flags["lon_acc"].any()
    sc = scene()
    res = compute_cls(sc, np.pad(harsh, ((0, STEPS - len(harsh)), (0, 0)), mode="edge"), empty_track(STEPS), DT, expert_progress=1.0)
    assert res.weighted["comfort"] == 0.0
    assert res.score == pytest.approx(1.0 - 2.0 / 16.0)


def test_one_object_collision_halves_the_score_and_two_zero_it() -> None:
    cones = (StaticObject(1001, "cone", 70.0, 0.0, 0.0, 0.5, 0.5), StaticObject(1002, "cone", 90.0, 0.0, 0.0, 0.5, 0.5))
    ego = line_trajectory(50.0, np.full(STEPS, 10.0))
    one = compute_cls(scene(statics=cones[:1]), ego, empty_track(STEPS), DT, expert_progress=150.0)
    assert one.multipliers["no_at_fault_collisions"] == 0.5
    two = compute_cls(scene(statics=cones), ego, empty_track(STEPS), DT, expert_progress=150.0)
    assert two.multipliers["no_at_fault_collisions"] == 0.0
