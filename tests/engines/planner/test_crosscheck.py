"""The cross-check against commonroad-drivability-checker: both verdicts on episodes that clearly
collide or leave the road, the agreement counts, and the command."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from engines.planner.crosscheck import DrivabilityChecker, agreement, verdicts
from engines.planner.planners.rules import ConstantVelocityPlanner
from engines.planner.api import episode_from_rollout
from engines.planner.scenario import Agent, EgoStart, scenario_to_dict
from engines.planner.scene import Scene
from engines.planner.simulation import run_episode

from .helpers import scenario


def _episode(sc):
    scene = Scene(sc)
    rollout = run_episode(scene, ConstantVelocityPlanner(), reactive=False)
    return episode_from_rollout(scene, rollout, "constant_velocity", {}, False, None), DrivabilityChecker(scene)


def test_both_flag_a_drive_into_a_standing_car_and_neither_a_clear_road() -> None:
    at = (75.0, 0.0, 0.0, 0.0)
    standing = Agent(1, "vehicle", 4.5, 2.0, (at,), trajectory=(at,) * 40)
    ep, checker = _episode(scenario(agents=(standing,), ego_speed=10.0, duration=3.0))
    v = verdicts(ep, checker)
    assert v["ours_at_fault"] and v["theirs_collision"] and not v["theirs_off_road"] and not v["ours_off_road"]
    assert 15 <= v["theirs_collision_step"] <= 25  # the boxes meet about 2 s in (20 m gap at 10 m/s)
    clear, checker = _episode(scenario(ego_speed=10.0, duration=3.0))
    v = verdicts(clear, checker)
    assert not (v["ours_collision"] or v["theirs_collision"] or v["ours_off_road"] or v["theirs_off_road"])


def test_both_flag_a_drive_off_the_road() -> None:
    sc = scenario(ego_speed=10.0, duration=3.0, lanes=1)
    sc = replace(sc, ego=EgoStart(50.0, 0.0, -0.4, 10.0))  # heading for the right edge
    ep, checker = _episode(sc)
    v = verdicts(ep, checker)
    assert v["ours_off_road"] and v["theirs_off_road"] and v["theirs_off_road_tolerant"]
    assert v["theirs_off_road_step"] < 10


def test_agreement_counts_each_way_of_agreeing_and_disagreeing() -> None:
    rows = [
        {
            "ours_at_fault": a,
            "ours_collision": a,
            "theirs_collision": b,
            "ours_off_road": False,
            "theirs_off_road": b,
            "theirs_off_road_tolerant": False,
        }
        for a, b in ((True, True), (True, False), (False, True), (False, False), (False, False))
    ]
    rows.append({"scenario": "broken", "error": "unreadable"})
    a = agreement(rows)
    assert a["at_fault_collision"] == {"both": 1, "only_ours": 1, "only_theirs": 1, "neither": 2, "agreement_pct": 60.0}
    assert a["drivable_area"] == {"both": 0, "only_ours": 0, "only_theirs": 2, "neither": 3, "agreement_pct": 60.0}
    assert a["drivable_area_tolerant"]["agreement_pct"] == 100.0


def test_cli_crosscheck_prints_the_agreement(cli, tmp_path: Path) -> None:
    (tmp_path / "short.json").write_text(json.dumps(scenario_to_dict(scenario(duration=2.0))))
    out = cli("planner", "crosscheck", "--scenarios", str(tmp_path), "--planners", "idm", "--workers", "1", "--json", timeout=600)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["files"] == 1 and data["episodes"] == 2  # log replay and reactive
    assert data["agreement"]["any_collision"]["neither"] == 2
    bad = cli("planner", "crosscheck", "--scenarios", str(tmp_path), "--planners", "diffusion")
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and "Traceback" not in bad.stderr
