"""The IDM speed profile along a path: the float stepper (one or two proposals) and the array
stepper (many) must give the same numbers to the bit, whichever the planner's call lands on."""

from __future__ import annotations

import numpy as np
import pytest

from engines.planner.agents import IDM
from engines.planner.planners.base import PLAN_DT
from engines.planner.planners.corridor import FLOAT_PROPOSALS, _idm_arrays, _idm_floats, idm_profile


def _case(rng: np.random.Generator, n: int, m: int, steps: int) -> tuple:
    """Leaders ahead, beside and behind the ego (some absent: inf), some standing, a stop line or none."""
    s_lead = rng.uniform(-10.0, 80.0, (n, m, steps + 1)).cumsum(axis=2) / 8.0 + rng.uniform(-5, 40, (n, m, 1))
    s_lead[rng.random((n, m, steps + 1)) < 0.1] = np.inf
    v_lead = rng.uniform(0.0, 15.0, (n, m)) * (rng.random((n, m)) > 0.2)
    s_stop = float(rng.uniform(20.0, 120.0)) if rng.random() < 0.5 else np.inf
    v_target = np.maximum(rng.uniform(-1.0, 20.0, n), 0.1)
    return float(rng.uniform(0, 5)), float(rng.uniform(0, 18)), v_target, s_lead, v_lead, steps, s_stop, IDM, PLAN_DT


@pytest.mark.parametrize("n, m", [(1, 0), (1, 1), (2, 6), (3, 2), (20, 0), (20, 8)])
def test_float_and_array_steppers_agree_to_the_bit(n: int, m: int) -> None:
    rng = np.random.default_rng(n * 100 + m)
    for _ in range(20):
        case = _case(rng, n, m, 40)
        floats, arrays = _idm_floats(*case), _idm_arrays(*case)
        np.testing.assert_array_equal(floats[0], arrays[0])
        np.testing.assert_array_equal(floats[1], arrays[1])
        assert (np.diff(arrays[0], axis=1) >= 0).all() and (arrays[1] >= 0).all()  # IDM never reverses


def test_a_standing_leader_stops_the_ego_behind_it_either_way() -> None:
    """A car standing 30 m ahead on a shared (M, Tf) lead: both steppers stop short of its rear."""
    s_lead, v_lead = np.full((1, 81), 30.0), np.zeros(1)
    few = idm_profile(0.0, 10.0, np.full(1, 12.0), s_lead, v_lead, 80)
    many = idm_profile(0.0, 10.0, np.full(FLOAT_PROPOSALS + 1, 12.0), s_lead, v_lead, 80)
    np.testing.assert_array_equal(few[0][0], many[0][0])
    assert few[1][0, -1] < 0.1 and 20.0 < few[0][0, -1] < 30.0
