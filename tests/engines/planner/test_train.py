"""Training-set sampling: which expert samples count as hard braking, and impossible weights."""
from __future__ import annotations

import pytest
import torch

from engines.core import EngineError
from engines.planner.features import FUTURE_DT, FUTURE_STEPS
from engines.planner.train import TrainParams, hard_braking


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
