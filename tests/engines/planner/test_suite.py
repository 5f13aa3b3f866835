"""The suite's target checks: each CLS difference comes with a paired interval over the scenarios."""
from __future__ import annotations

import numpy as np

from engines.planner.suite import GUIDED, SuiteParams, summarise

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
