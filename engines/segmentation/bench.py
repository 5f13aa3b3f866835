"""Benchmark: GrabS against the DBSCAN baseline on the same scenes, in the same run.

Benchmark scenes are PLY files with a ground-truth `instance` field (`workbench segmentation
scenes` writes them, with a JSON sidecar naming the touching objects). The methods get the points
only; the ground truth is read here, for scoring.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import numpy as np

from engines.core import CancelToken, EngineError, NEVER_CANCELLED, ProgressFn, no_progress, write_json
from engines.core.device import pool_worker_setup
from engines.core.executor import ExecutorSpec, current_cancel, run_tasks
from engines.core.intervals import Interval, statistic_interval

from .generators import GENERATORS
from .metrics import PooledAP, ScenePrediction, evaluate
from .api import SegmentParams, method_params, segment
from .pointio import PointCloud, read_cloud, write_cloud
from .scenes import SceneParams, generate_scene

# The issue-55 targets, per generator. On the training generator's rooms (today's benchmark): no
# drop of more than 0.02 from the published AP50 0.791 / AP25 0.885. On the evaluation
# generator's rooms: the headline targets, one of them with the prior's confirmed segments alone.
TARGETS: dict[str, dict[str, float]] = {
    "train": {"ap50": 0.791 - 0.02, "ap25": 0.885 - 0.02, "ap50_margin": 0.20, "seconds_per_scene": 10.0},
    "eval": {"ap50": 0.75, "ap25": 0.85, "ap25_confirmed": 0.80, "ap50_margin": 0.20, "seconds_per_scene": 10.0},
}


def write_scenes(
    folder: Path,
    n: int,
    seed: int,
    params: SceneParams = SceneParams(),
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    generator: str = "train",
    points: tuple[int, int] | None = None,
    executor: ExecutorSpec = ExecutorSpec(),
) -> list[Path]:
    """``n`` rooms of ``generator`` as `scene_NNN.ply` (points, colours, ground-truth `instance`) plus
    `scene_NNN.json`. ``points`` (low, high) draws each room's point count log-uniformly from that
    range (seeded by the room), in place of ``params.n_points``. Rooms are independent tasks on
    ``executor`` (each depends on its seed only): the same files for any executor and worker count."""
    if not 1 <= n <= 1000:
        raise EngineError("--n must be between 1 and 1000")
    if generator not in GENERATORS:
        raise EngineError(f"the generator must be one of {', '.join(GENERATORS)}")
    task = partial(write_room, Path(folder), seed=seed, params=params, generator=generator, points=points)
    paths = []
    for done, outcome in enumerate(run_tasks(task, range(n), executor, cancel, initializer=pool_worker_setup), start=1):
        if not outcome.ok:
            raise EngineError(f"scene {outcome.item:03d} could not be written: {outcome.error}")
        paths.append(outcome.value)
        progress(done / n, f"scene {done}/{n}")
    progress(1.0, f"{n} scenes written")
    return paths


def write_room(folder: Path, k: int, seed: int, params: SceneParams, generator: str, points: tuple[int, int] | None) -> Path:
    """Room ``k`` of a set: its generator's scene of seed ``seed + k``, as PLY and JSON sidecar."""
    from .evalgen import EvalSceneParams, generate_eval_scene

    n_points = params.n_points
    if points is not None:
        n_points = int(round(np.exp(np.random.default_rng([seed + k, 55]).uniform(np.log(points[0]), np.log(points[1])))))
    scene = (
        generate_scene(seed + k, replace(params, n_points=n_points)) if generator == "train" else generate_eval_scene(seed + k, EvalSceneParams(n_points))
    )
    path = folder / f"scene_{k:03d}.ply"
    write_cloud(path, PointCloud(scene.points, scene.colors, scene.instance))
    write_json(folder / f"scene_{k:03d}.json", {**scene.meta(), "generator": generator}, indent=1)
    return path


def generator_of(folder: Path) -> str:
    """Which generator wrote the scenes in ``folder`` (their JSON sidecars say; none: the training one)."""
    for meta in sorted(Path(folder).glob("*.json")):
        try:
            name = json.loads(meta.read_text()).get("generator", "train")
        except (json.JSONDecodeError, AttributeError, OSError):
            continue
        return name if name in GENERATORS else "train"
    return "train"


def _touching_ids(ply: Path) -> set[int]:
    meta = ply.with_suffix(".json")
    if not meta.exists():
        return set()
    try:
        pairs = json.loads(meta.read_text()).get("touching", [])
    except (json.JSONDecodeError, AttributeError):
        return set()
    return {int(i) for pair in pairs for i in pair}


def _recall50(gt: np.ndarray, instance: np.ndarray, ids: set[int], min_points: int = 100) -> tuple[int, int]:
    """How many of the objects ``ids`` (with enough points) some predicted segment covers at IoU > 0.5."""
    found = total = 0
    for i in ids:
        g = gt == i
        if g.sum() < min_points:
            continue
        total += 1
        labels, counts = np.unique(instance[g], return_counts=True)
        for lab, inter in zip(labels, counts):
            if lab > 0 and inter / (g.sum() + (instance == lab).sum() - inter) > 0.5:
                found += 1
                break
    return found, total


@dataclass(frozen=True)
class RoomResult:
    """What every method made of one benchmark room (a task's result: it travels back from a worker)."""

    row: dict
    points: int
    preds: dict[str, ScenePrediction]
    confirmed: dict[str, ScenePrediction]  # the prior's confirmed segments only
    seconds: dict[str, float]
    touching: dict[str, tuple[int, int]]  # touching objects found at IoU > 0.5, of those with enough points


def measure_room(path: Path, params: SegmentParams, methods: tuple[str, ...]) -> RoomResult:
    """Every method on one room: a task of its own, so that rooms run on any executor."""
    cancel = current_cancel()
    cloud = read_cloud(path)
    if cloud.instance is None:
        raise EngineError(f"{path.name} has no ground-truth 'instance' field")
    gt = cloud.instance
    touching_ids = _touching_ids(path)
    row = {"scene": path.name, "points": len(cloud), "objects": int(len([i for i in np.unique(gt) if i > 0]))}
    preds, confirmed, seconds, touching = {}, {}, {}, {}
    for method in methods:
        cancel.raise_if_cancelled()
        t0 = time.perf_counter()
        result = segment(cloud.without_labels(), method_params(params, method), cancel=cancel)
        seconds[method] = time.perf_counter() - t0
        preds[method] = result.prediction(gt)
        confirmed[method] = result.prediction(gt, confirmed_only=True)
        touching[method] = _recall50(gt, result.instance, touching_ids)
        row[method] = {"ap50": evaluate([preds[method]]).ap50, "segments": len(result.segments), "seconds": round(seconds[method], 2)}
    return RoomResult(row, len(cloud), preds, confirmed, seconds, touching)


def run_bench(
    folder: Path,
    params: SegmentParams = SegmentParams(),
    methods: tuple[str, ...] = ("grabs", "dbscan"),
    limit: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    generator: str | None = None,
    executor: ExecutorSpec = ExecutorSpec(),
) -> dict:
    """Every method on the rooms in ``folder``: AP with every proposal and with the confirmed
    segments only, touching-object recall, seconds, the targets of the rooms' ``generator``
    (None: as their sidecars say). Rooms are independent tasks on ``executor``: the same numbers
    for any executor and worker count (seconds aside); a room that fails is named and left out."""
    generator = generator or generator_of(folder)
    files = sorted(Path(folder).glob("*.ply"))[:limit]
    if not files:
        raise EngineError(f"no .ply scenes in {folder} (write some with 'workbench segmentation scenes')")
    rooms: list[RoomResult] = []
    failed: list[dict] = []
    task = partial(measure_room, params=params, methods=methods)
    for done, outcome in enumerate(run_tasks(task, files, executor, cancel, initializer=pool_worker_setup), start=1):
        if outcome.ok:
            rooms.append(outcome.value)
        else:
            failed.append({"scene": outcome.item.name, "error": outcome.error})
        progress(done / len(files) * 0.98, f"{outcome.item.name} measured ({done}/{len(files)})")
    if not rooms:
        raise EngineError(f"no room of {folder} could be measured; the first: {failed[0]['scene']}: {failed[0]['error']}")
    preds = {m: [r.preds[m] for r in rooms] for m in methods}
    confirmed = {m: [r.confirmed[m] for r in rooms] for m in methods}
    seconds = {m: [r.seconds[m] for r in rooms] for m in methods}
    touch = {m: [sum(r.touching[m][0] for r in rooms), sum(r.touching[m][1] for r in rooms)] for m in methods}
    per_scene = [r.row for r in rooms]
    points = [r.points for r in rooms]
    progress(1.0, "scoring")
    out: dict = {"generator": generator, "scenes": len(rooms), "points_per_scene": float(np.mean(points)), "methods": {}, "per_scene": per_scene,
                 "failed": failed}
    for method in methods:
        res, conf = evaluate(preds[method]), evaluate(confirmed[method])
        out["methods"][method] = {
            "ap": res.ap,
            "ap50": res.ap50,
            "ap25": res.ap25,
            "confirmed_ap": conf.ap,
            "confirmed_ap50": conf.ap50,
            "confirmed_ap25": conf.ap25,
            "seconds_per_scene": float(np.mean(seconds[method])),
            "touching_recall50": touch[method][0] / touch[method][1] if touch[method][1] else float("nan"),
            "gt_objects": res.n_gt,
            "predictions": res.n_pred,
            "confirmed_predictions": conf.n_pred,
        }
    pooled = {method: PooledAP(preds[method]) for method in methods}
    for method in methods:  # how far the pooled AP could move on another draw of rooms
        for key, thr in (("ap50", 0.5), ("ap25", 0.25)):
            out["methods"][method][f"{key}_ci95"] = statistic_interval(len(rooms), lambda idx: pooled[method].at(thr, idx)).as_list()
    if "grabs" in out["methods"] and "dbscan" in out["methods"]:
        g, d = out["methods"]["grabs"], out["methods"]["dbscan"]
        margin = statistic_interval(len(rooms), lambda idx: pooled["grabs"].at(0.5, idx) - pooled["dbscan"].at(0.5, idx))
        out["comparison"] = {
            "ap50_minus_dbscan": g["ap50"] - d["ap50"],
            "ap50_minus_dbscan_ci95": margin.as_list(),
            "ap25_minus_dbscan": g["ap25"] - d["ap25"],
            "confirmed_ap50_minus_dbscan": g["confirmed_ap50"] - d["ap50"],
            "confirmed_ap25_minus_dbscan": g["confirmed_ap25"] - d["ap25"],
            "ap50_ratio_over_dbscan": g["ap50"] / d["ap50"] if d["ap50"] > 0 else float("nan"),
            "time_ratio_grabs_over_dbscan": g["seconds_per_scene"] / max(d["seconds_per_scene"], 1e-9),
        }
        out["targets"] = _targets(generator, g, d, out["points_per_scene"])
    if "grabs" in out["methods"] and "grabs_ppo" in out["methods"]:
        g, p = out["methods"]["grabs"], out["methods"]["grabs_ppo"]
        out.setdefault("comparison", {}).update(
            {
                "ppo_minus_search_ap50": p["ap50"] - g["ap50"],
                "time_ratio_ppo_over_search": p["seconds_per_scene"] / max(g["seconds_per_scene"], 1e-9),
            }
        )
    out["table"] = _table(out)
    return out


def _targets(generator: str, g: dict, d: dict, points_per_scene: float) -> dict[str, bool]:
    """PASS (True) or MISS per target of the rooms' generator, named as the table prints them."""
    t = TARGETS[generator]
    out = {f"AP50 >= {t['ap50']:.3f}": g["ap50"] >= t["ap50"], f"AP25 >= {t['ap25']:.3f}": g["ap25"] >= t["ap25"]}
    if "ap25_confirmed" in t:
        out[f"confirmed-only AP25 >= {t['ap25_confirmed']:.2f}"] = g["confirmed_ap25"] >= t["ap25_confirmed"]
    out[f"AP50 >= DBSCAN + {t['ap50_margin']:.2f}"] = g["ap50"] - d["ap50"] >= t["ap50_margin"]
    out[f"<= {t['seconds_per_scene']:.0f} s per 20k-point scene"] = (
        g["seconds_per_scene"] * 20000 / max(points_per_scene, 1) <= t["seconds_per_scene"]
    )
    return out


def run_benches(
    folders: dict[str, Path],
    params: SegmentParams = SegmentParams(),
    methods: tuple[str, ...] = ("grabs", "dbscan"),
    limit: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    executor: ExecutorSpec = ExecutorSpec(),
) -> dict:
    """`run_bench` on the rooms of each generator (``folders``: generator -> folder), one table each."""
    from engines.core import scaled

    sets = {}
    for k, (generator, folder) in enumerate(folders.items()):
        sets[generator] = run_bench(folder, params, methods, limit, scaled(progress, k / len(folders), (k + 1) / len(folders)), cancel, generator, executor)
    targets = {f"{gen}: {name}": ok for gen, res in sets.items() for name, ok in res.get("targets", {}).items()}
    table = "\n\n".join(res.pop("table") for res in sets.values())
    if targets:
        table += f"\n\nall targets: {sum(targets.values())} of {len(targets)} PASS"
    return {"sets": sets, "targets": targets, "table": table}


def _ratio(value: float) -> str:
    return f"{value:.2f}x" if np.isfinite(value) else "n/a (DBSCAN's AP50 is 0)"


def _table(out: dict) -> str:
    title = {"train": "training generator (today's benchmark)", "eval": "evaluation generator (objects and arrangements training never sees)"}
    lines = [
        f"{title.get(out['generator'], out['generator'])}: {out['scenes']} scenes, {out['points_per_scene']:.0f} points each (mean)",
        "",
        f"{'':9} {'with proposals':^20}   {'confirmed only':^20}",
        f"{'method':9} {'AP':>6} {'AP50':>6} {'AP25':>6}   {'AP':>6} {'AP50':>6} {'AP25':>6} {'touch R50':>9} {'s/scene':>8}",
    ]
    for m, r in out["methods"].items():
        lines.append(
            f"{m:9} {r['ap']:6.3f} {r['ap50']:6.3f} {r['ap25']:6.3f}   {r['confirmed_ap']:6.3f} {r['confirmed_ap50']:6.3f} {r['confirmed_ap25']:6.3f} "
            f"{r['touching_recall50']:9.3f} {r['seconds_per_scene']:8.2f}"
        )
    lines += [
        "",
        "with proposals: every segment, the unconfirmed ones and the nested proposals ranked after all confirmed ones;",
        "confirmed only: the segments the prior confirmed (what GrabS finds itself; DBSCAN's are all 'confirmed')",
        "",
        f"95% intervals, bootstrap over the {out['scenes']} scenes:",
    ]
    for m, r in out["methods"].items():
        lines.append(f"{m:9} AP50 {Interval(*r['ap50_ci95']).text()}  AP25 {Interval(*r['ap25_ci95']).text()}")
    c = out.get("comparison", {})
    if "ppo_minus_search_ap50" in c:
        lines += ["", f"PPO policy - search: AP50 {c['ppo_minus_search_ap50']:+.3f}; time ratio {c['time_ratio_ppo_over_search']:.2f}x"]
    if "targets" in out:
        lines += [
            "",
            f"GrabS - DBSCAN: AP50 {c['ap50_minus_dbscan']:+.3f} {Interval(*c['ap50_minus_dbscan_ci95']).text('+.3f')}, AP25 {c['ap25_minus_dbscan']:+.3f}; "
            f"confirmed only: AP50 {c['confirmed_ap50_minus_dbscan']:+.3f}, AP25 {c['confirmed_ap25_minus_dbscan']:+.3f}; "
            f"AP50 ratio {_ratio(c['ap50_ratio_over_dbscan'])}; time ratio {c['time_ratio_grabs_over_dbscan']:.1f}x",
            "",
        ]
        lines += [f"  {'PASS' if ok else 'MISS'} {name}" for name, ok in out["targets"].items()]
    if out["failed"]:
        lines += ["", f"{len(out['failed'])} room(s) failed and are left out of every number above:"]
        lines += [f"  {f['scene']}: {f['error']}" for f in out["failed"]]
    return "\n".join(lines)
