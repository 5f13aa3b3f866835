"""Training-set sampling and loss weights: which expert samples count as hard braking, how the
plan's first seconds and a stopping plan's far waypoints are weighed, and impossible weights."""
from __future__ import annotations

import pytest
import torch

from engines.core import EngineError
from engines.planner.features import FUTURE_DT, FUTURE_STEPS
from engines.planner.diffusion import diffusion_loss
from engines.planner.train import EARLY_S, TRAVEL_FLOOR, TrainParams, early_weights, hard_braking, travel_weights


def _ego_futures(speeds: list[list[float]]) -> dict[str, torch.Tensor]:
    """Ego futures driving straight at the given speed per waypoint interval (m/s)."""
    n, t1 = len(speeds), FUTURE_STEPS + 1
    future = torch.zeros(n, 2, t1, 4)
    for i, profile in enumerate(speeds):
        v = torch.tensor(profile + [profile[-1]] * (t1 - 1 - len(profile)))
        future[i, 0, 1:, 0] = torch.cumsum(v * FUTURE_DT, 0)
    return {"future": future, "future_valid": torch.ones(n, 2, t1, dtype=torch.bool)}


def test_hard_braking_is_a_drop_of_more_than_2_m_s2_within_2_s() -> None:
    cruise = [10.0] * 12
    gentle = [10.0 - 0.3 * k for k in range(12)]  # 1.5 m/s^2
    hard = [10.0, 10.0, 9.0, 8.0, 7.0]  # 5 m/s^2 from 0.4 s on
    late = [10.0] * 12 + [9.0, 8.0]  # hard, but after 2 s
    data = _ego_futures([cruise, gentle, hard, late])
    assert hard_braking(data).tolist() == [False, False, True, False]
    data["future_valid"][2, 0, 3:] = False  # a label that ends early is not counted
    assert hard_braking(data).tolist() == [False, False, False, False]


def test_the_braking_weight_must_be_positive() -> None:
    with pytest.raises(EngineError, match="brake-weight"):
        TrainParams(brake_weight=0.0).check()


def test_the_plans_first_seconds_weigh_more_and_the_mean_weight_stays_one() -> None:
    assert early_weights(FUTURE_STEPS, 1.0) is None
    w = early_weights(FUTURE_STEPS, 4.0)
    early = int(round(EARLY_S / FUTURE_DT))
    assert w.shape == (FUTURE_STEPS,) and torch.isclose(w.mean(), torch.tensor(1.0))
    assert torch.allclose(w[:early], w[0]) and torch.allclose(w[early:], w[-1])
    assert torch.isclose(w[0] / w[-1], torch.tensor(4.0))


def test_the_ego_loss_counts_an_early_error_by_its_weight() -> None:
    x0 = torch.zeros(1, 2, FUTURE_STEPS + 1, 4)
    valid = torch.ones(1, 2, FUTURE_STEPS + 1, dtype=torch.bool)
    early_miss = x0.clone()
    early_miss[0, 0, 1, 0] = 1.0  # one unit off at the first waypoint
    late_miss = x0.clone()
    late_miss[0, 0, -1, 0] = 1.0  # one unit off at the last one
    w = early_weights(FUTURE_STEPS, 4.0)
    _, plain, _ = diffusion_loss(lambda x_t, t: early_miss, x0, valid)
    _, early, _ = diffusion_loss(lambda x_t, t: early_miss, x0, valid, w)
    _, late, _ = diffusion_loss(lambda x_t, t: late_miss, x0, valid, w)
    assert torch.isclose(plain, torch.tensor(1.0 / FUTURE_STEPS))
    assert torch.isclose(early, w[0] / FUTURE_STEPS) and torch.isclose(late, w[-1] / FUTURE_STEPS)


def test_the_early_weight_must_be_positive() -> None:
    with pytest.raises(EngineError, match="early-weight"):
        TrainParams(early_weight=-1.0).check()


def test_a_stopping_plans_far_waypoints_weigh_up_to_the_cap_and_a_cruising_plans_stay_at_one() -> None:
    std = torch.tensor([4.0, 17.0, 35.0])  # the along-track spread at 1, 4 and 8 s
    stopping = torch.tensor([1.0, 1.4, 1.5])  # m travelled by then: the expert stops within 1.5 m
    rolling = torch.tensor([3.0, 10.0, 17.5])
    cruise = torch.tensor([12.0, 48.0, 96.0])
    assert travel_weights(stopping[None], std, 1.0) is None
    w = travel_weights(torch.stack([stopping, rolling, cruise]), std, 16.0)
    assert torch.allclose(w[0], torch.tensor([1.0, (17.0 / TRAVEL_FLOOR) ** 2, 16.0]))  # under the floor: counted as 5 m
    assert torch.allclose(w[1], torch.tensor([1.0, (17.0 / 10.0) ** 2, 4.0]))
    assert torch.equal(w[2], torch.ones(3))


def test_the_slow_weight_must_be_at_least_one() -> None:
    with pytest.raises(EngineError, match="slow-weight"):
        TrainParams(slow_weight=0.5).check()
