"""The suite's target checks: each CLS difference comes with a paired interval over the scenarios."""
from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np
import pytest

from engines.core import CancelToken, Cancelled, EngineError
from engines.planner.suite import GUIDED, SuiteParams, run_suite, summarise
from tests.conftest import PROCESSES

MULTIPLIERS = {"no_at_fault_collisions": 1.0, "drivable_area_compliance": 1.0}
WEIGHTED = {"progress": 1.0, "ttc": 1.0, "speed_limit": 1.0, "comfort": 1.0}


def _rows(scores: dict[str, np.ndarray]) -> list[dict]:
    return [
        {"group": "procedural", "type": "straight", "seed": k, "scenario": f"straight-{k}", "reactive": True, "planner": name,
         "cls": float(cls[k]), "at_fault": False, "multipliers": MULTIPLIERS, "weighted": WEIGHTED, "episode_s": 1.0, "replan_ms": 1.0}
        for name, cls in scores.items() for k in range(len(cls))
    ]


def test_differences_carry_a_paired_interval_that_brackets_them() -> None:
    rng = np.random.default_rng(1)
    idm = rng.uniform(30, 100, 40)  # scenes of very different difficulty
    diffusion = np.minimum(idm + 9.0 + rng.normal(0, 2, 40), 100)
    pdm = np.minimum(diffusion + 1.0, 100)
    guided = np.minimum(pdm + 0.5, 100)
    scores = {"diffusion": diffusion, GUIDED: guided, "idm": idm, "pdm": pdm}
    result = summarise(_rows(scores), SuiteParams(planners=tuple(scores), commonroad=False), {})
    checks = result["checks"]
    for name, (a, b) in {"diffusion_minus_idm": ("diffusion", "idm"), "pdm_minus_diffusion": ("pdm", "diffusion"),
                         "guided_minus_pdm": (GUIDED, "pdm")}.items():
        low, high = checks[name]["ci95"]
        assert abs(checks[name]["value"] - float(np.mean(scores[a] - scores[b]))) < 1e-9
        assert low <= checks[name]["value"] <= high
    low, high = checks["diffusion_minus_idm"]["ci95"]
    assert 6.0 < low and high < 12.0  # paired: the scenes' spread of 70 points cancels
    assert "at_fault_rate[diffusion]" in checks and "ci95" not in checks["at_fault_rate[diffusion]"]
    assert f"[{low:+.1f}, {high:+.1f}]" in result["table"]


@PROCESSES
def test_workers_give_the_rows_one_process_gives_and_stop_on_cancel() -> None:
    """Scenarios run in one-thread worker processes: every score must match the serial run (each
    planner seeds its own sampler), and a cancel must stop the pool instead of draining it."""
    params = SuiteParams(n=2, seed=3, planners=("diffusion", "idm"), commonroad=False, latency_replans=0)
    serial = run_suite(params)["rows"]
    parallel = run_suite(replace(params, workers=2))["rows"]
    key = [(r["scenario"], r["planner"], r["cls"], r["at_fault"], r["multipliers"]) for r in serial]
    assert len(key) == 4
    assert key == [(r["scenario"], r["planner"], r["cls"], r["at_fault"], r["multipliers"]) for r in parallel]

    cancel = CancelToken()
    timer = threading.Timer(2.0, cancel.cancel)  # the workers are starting or on their first scenario
    t0 = time.perf_counter()
    timer.start()
    with pytest.raises(Cancelled):
        run_suite(replace(params, n=40, workers=2), cancel=cancel)
    assert time.perf_counter() - t0 < 15  # draining 40 scenarios would take about 100 s; one scenario about 6 s


def test_impossible_worker_counts_are_refused() -> None:
    with pytest.raises(EngineError, match="--workers must be at least 1"):
        run_suite(SuiteParams(n=1, planners=("idm",), commonroad=False, latency_replans=0, workers=0))
