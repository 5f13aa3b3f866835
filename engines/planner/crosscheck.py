"""Cross-check of the closed-loop metric's multipliers against CommonRoad's drivability checker.

Every planner drives every scenario file (log replay and reactive, as ``suite`` does); each
episode's ego trajectory is then checked a second time with ``commonroad-drivability-checker``:
collisions with the other agents (as they moved in the episode) and the static obstacles through
its collision checker, and road compliance against the road boundary its solution checker uses
(the outside of the lanelet network, triangulated). The two verdicts are counted per check.

The checker has no notion of fault and no tolerance: it flags any contact and any corner off the
lanelets, where our metric forgives contacts the other party caused and corners up to
``TH.drivable_tolerance`` outside. The ``_tolerant`` road check shrinks the ego box by that
tolerance to show how much of the difference that accounts for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from engines.core import NEVER_CANCELLED, Cancelled, CancelToken, EngineError, ProgressFn, no_progress, pool_worker_setup
from engines.core.executor import ExecutorSpec, current_cancel, run_tasks

from .episode import Episode
from .metrics import TH
from .params import PLANNERS
from .api import RunParams, episode_from_rollout, load_scenario, make_planner
from .scene import Scene
from .simulation import run_episode
from .vehicle import LENGTH, WIDTH

# check name -> (our flag, the checker's flag) read from one episode's verdicts
CHECKS = {
    "at_fault_collision": ("ours_at_fault", "theirs_collision"),
    "any_collision": ("ours_collision", "theirs_collision"),
    "drivable_area": ("ours_off_road", "theirs_off_road"),
    "drivable_area_tolerant": ("ours_off_road", "theirs_off_road_tolerant"),
}


@dataclass(frozen=True)
class CrosscheckParams:
    scenarios: str
    split: str | None = None
    planners: tuple[str, ...] = ("idm", "pdm")
    limit: int | None = None  # only the first files of the folder (or split)
    workers: int = 1  # processes checking files side by side


def run_crosscheck(
    params: CrosscheckParams,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    partial: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """The verdicts of every episode and their agreement; ``partial`` gets the result so far after each file (long runs)."""
    from .recorded import scenario_files

    unknown = [p for p in params.planners if p not in PLANNERS or p == "diffusion"]
    if not params.planners or unknown:
        raise EngineError(f"--planners takes a comma-separated list of {', '.join(p for p in PLANNERS if p != 'diffusion')}")
    if params.limit is not None and params.limit < 1:
        raise EngineError("--limit must be at least 1")
    if params.workers < 1:
        raise EngineError("--workers must be at least 1")
    files = scenario_files(Path(params.scenarios), params.split)[: params.limit]
    rows: list[dict[str, Any]] = []
    for i, (path, file_rows) in enumerate(zip(files, _results(files, params.planners, params.workers, cancel))):
        rows.extend(file_rows)
        progress((i + 1) / len(files), f"{path.name}: {len(rows)} episodes checked")
        if partial is not None and i + 1 < len(files):
            partial(_result(i + 1, rows))
    return _result(len(files), rows)


def _result(files: int, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"files": files, "episodes": sum("error" not in r for r in rows), "agreement": agreement(rows), "rows": rows}


def _results(files: list[Path], planners: tuple[str, ...], workers: int, cancel: CancelToken) -> Iterator[list[dict[str, Any]]]:
    """Each file's rows in file order (files are independent: ``workers`` processes give what one gives)."""
    work = partial(_file_task, planners=planners)
    for task in run_tasks(work, files, ExecutorSpec("local", workers), cancel, initializer=pool_worker_setup):
        yield task.value if task.ok else [{"scenario": task.item.stem, "error": task.error}]


def _file_task(path: Path, planners: tuple[str, ...]) -> list[dict[str, Any]]:
    """One file as an executor task: stoppable mid-way when it runs in the caller's process."""
    return _file_rows(path, planners, current_cancel())


def _file_rows(path: Path, planners: tuple[str, ...], cancel: CancelToken) -> list[dict[str, Any]]:
    """Every planner on one file in both modes, each episode with both verdicts (a failure is a row naming it)."""
    try:
        sc = load_scenario(RunParams(scenario=str(path)))
        scene = Scene(sc)
        checker = DrivabilityChecker(scene, path)
    except Cancelled:
        raise
    except Exception as exc:  # noqa: BLE001  (a user's file: reported, the run goes on)
        return [{"scenario": path.stem, "error": str(exc) or type(exc).__name__}]
    rows = []
    for reactive in (False, True):
        for name in planners:
            cancel.raise_if_cancelled()
            t0 = time.perf_counter()
            rollout = run_episode(scene, make_planner(RunParams(planner=name)), reactive, cancel=cancel)
            # No expert run: the checks compared here do not depend on the expert's progress.
            ep = episode_from_rollout(scene, rollout, name, {}, reactive, None)
            row = {"scenario": path.stem, "planner": name, "reactive": reactive}
            row.update(verdicts(ep, checker))
            row["seconds"] = round(time.perf_counter() - t0, 2)
            rows.append(row)
    return rows


class DrivabilityChecker:
    """The drivability checker's road boundary of one scene: from the CommonRoad file itself when
    there is one (an independent reading of the map), else from the scene's lanes."""

    def __init__(self, scene: Scene, path: Path | None = None) -> None:
        import commonroad_dc.pycrcc as pycrcc
        from commonroad_dc.boundary import construction

        from .commonroad_export import commonroad_scenario

        if path is not None and path.suffix.lower() == ".xml":
            from .commonroad_import import read_commonroad

            cr, _ = read_commonroad(path)
        else:
            cr = commonroad_scenario(scene)
        # The boundary CommonRoad's solution checker uses: the road's outside, triangulated.
        boundary = construction.construct(cr, ["section_triangles", "triangulation"])["triangulation"]
        self.road = pycrcc.CollisionChecker()
        self.road.add_collision_object(boundary)

    def off_road(self, ego: np.ndarray, shrink: float = 0.0) -> int:
        """First step (or -1) at which the ego box (shrunk by ``shrink`` m each side) touches the road boundary."""
        import commonroad_dc.pycrcc as pycrcc

        hl, hw = LENGTH / 2 - shrink, WIDTH / 2 - shrink
        for k, (x, y, h) in enumerate(ego[:, :3]):
            if self.road.collide(pycrcc.RectOBB(hl, hw, float(h), float(x), float(y))):
                return k
        return -1


def collision_step(ep: Episode) -> int:
    """First step (or -1) at which the ego box collides with an agent or a static obstacle, by the checker's own test."""
    import commonroad_dc.pycrcc as pycrcc

    cc = pycrcc.CollisionChecker()
    for j in range(ep.agents.shape[1]):
        valid = np.flatnonzero(ep.valid[:, j])
        if not len(valid):
            continue
        # A time-variant object covers consecutive steps: one per stretch the agent is present.
        for run in np.split(valid, np.flatnonzero(np.diff(valid) > 1) + 1):
            tvo = pycrcc.TimeVariantCollisionObject(int(run[0]))
            for k in run:
                x, y, h, _ = ep.agents[k, j]
                tvo.append_obstacle(pycrcc.RectOBB(ep.agent_size[j, 0] / 2, ep.agent_size[j, 1] / 2, float(h), float(x), float(y)))
            cc.add_collision_object(tvo)
    for o in ep.scenario.static_objects:
        cc.add_collision_object(pycrcc.RectOBB(o.length / 2, o.width / 2, o.heading, o.x, o.y))
    for k, (x, y, h) in enumerate(ep.ego[:, :3]):
        if cc.time_slice(k).collide(pycrcc.RectOBB(LENGTH / 2, WIDTH / 2, float(h), float(x), float(y))):
            return k
    return -1


def verdicts(ep: Episode, checker: DrivabilityChecker) -> dict[str, Any]:
    """Our multipliers' verdicts and the drivability checker's on one episode (first steps where flagged)."""
    m = ep.metrics
    hit = collision_step(ep)
    road = checker.off_road(ep.ego)
    road_tol = checker.off_road(ep.ego, TH.drivable_tolerance)
    return {
        "ours_at_fault": m.multipliers["no_at_fault_collisions"] < 1.0,
        "ours_collision": bool(m.collisions),
        "ours_off_road": m.multipliers["drivable_area_compliance"] < 1.0,
        "theirs_collision": hit >= 0,
        "theirs_collision_step": hit,
        "theirs_off_road": road >= 0,
        "theirs_off_road_step": road,
        "theirs_off_road_tolerant": road_tol >= 0,
    }


def agreement(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per check: episodes both flag, only ours flags, only the checker flags, neither, and the agreement in %."""
    done = [r for r in rows if "error" not in r]
    out = {}
    for check, (ours, theirs) in CHECKS.items():
        both = sum(r[ours] and r[theirs] for r in done)
        only_ours = sum(r[ours] and not r[theirs] for r in done)
        only_theirs = sum(r[theirs] and not r[ours] for r in done)
        neither = len(done) - both - only_ours - only_theirs
        pct = 100.0 * (both + neither) / len(done) if done else None
        out[check] = {
            "both": both,
            "only_ours": only_ours,
            "only_theirs": only_theirs,
            "neither": neither,
            "agreement_pct": None if pct is None else round(pct, 1),
        }
    return out


def table(result: dict[str, Any]) -> str:
    lines = [
        f"{result['episodes']} episodes on {result['files']} files: our multipliers against commonroad-drivability-checker",
        f"{'check':24} {'both':>5} {'only ours':>10} {'only theirs':>12} {'neither':>8} {'agree %':>8}",
    ]
    for check, a in result["agreement"].items():
        pct = "-" if a["agreement_pct"] is None else f"{a['agreement_pct']:.1f}"
        lines.append(f"{check:24} {a['both']:>5} {a['only_ours']:>10} {a['only_theirs']:>12} {a['neither']:>8} {pct:>8}")
    errors = [r for r in result["rows"] if "error" in r]
    lines += [f"  {r['scenario']}: {r['error']}" for r in errors]
    return "\n".join(lines)
