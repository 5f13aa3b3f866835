"""The benchmark: every planner on the same procedural scenarios (reactive agents) and on the
CommonRoad files, in one run, with the spec's targets as measured differences and ratios."""
from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np

from engines.core import NEVER_CANCELLED, Cancelled, CancelToken, EngineError, ProgressFn, no_progress, pool_worker_setup, resource_path
from engines.core.executor import ExecutorSpec, TaskResult, run_tasks
from engines.core.intervals import Interval, mean_interval

from .procedural import TYPES, generate, suite_scenarios
from .guidance_config import SAFETY_TERMS, GuidanceConfig
from .params import GUIDED, PLANNERS
from .api import RunParams, episode_from_rollout, expert_rollout, load_scenario, make_planner
from .scene import Scene
from .simulation import run_episode

GUIDED_TERMS = ",".join(SAFETY_TERMS)
TARGETS = {"diffusion_minus_idm": 10.0, "pdm_minus_diffusion": 3.0, "guided_minus_pdm": 0.0, "at_fault_rate": 0.02,
           "replan_ms": 50.0, "episode_s": 10.0}
# On a folder of real scenario files (issue 54): guided >= PDM-like and >= IDM + 10, unguided >= IDM + 5,
# at-fault no more often than IDM, in log replay and reactive alike.
FILE_TARGETS = {"guided_minus_pdm": 0.0, "guided_minus_idm": 10.0, "diffusion_minus_idm": 5.0}

Case = tuple[str, str, int]  # (group, procedural type or CommonRoad path, seed): what one worker job runs


@dataclass(frozen=True)
class SuiteParams:
    n: int = 104
    seed: int = 0
    planners: tuple[str, ...] = ("diffusion", GUIDED, "idm", "pdm", "constant_velocity")
    commonroad: bool = True
    latency_replans: int = 60
    checkpoint: str | None = None
    reactive: bool = True
    workers: int = 1  # processes running scenarios side by side (one torch thread each)
    executor: str = "local"  # where they run: local processes or Ray (engines.core.executor)
    ray_address: str | None = None  # a Ray cluster ("auto" or HOST:PORT); None starts a Ray here
    guidance: str = GUIDED_TERMS  # the terms diffusion+guidance uses (the targets are measured with GUIDED_TERMS)
    scenarios: str | None = None  # a folder of scenario files (.xml, .json): benchmark those instead
    split: str | None = None  # only the folder's files of this part of the recorded-traffic split


def _params(name: str, seed: int, checkpoint: str | None, guidance: str = GUIDED_TERMS) -> RunParams:
    if name == GUIDED:
        return RunParams(planner="diffusion", guidance=guidance, seed=seed, checkpoint=checkpoint)
    return RunParams(planner=name, seed=seed, checkpoint=checkpoint)


def commonroad_files() -> list[Path]:
    return sorted(resource_path("planner", "commonroad").glob("*.xml"))


def run_suite(params: SuiteParams, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED) -> dict[str, Any]:
    if params.n < 1:
        raise EngineError("--n must be at least 1")
    if params.workers < 1:
        raise EngineError("--workers must be at least 1")
    ExecutorSpec(params.executor, params.workers, params.ray_address).check()
    if params.latency_replans < 0:
        raise EngineError("--latency-replans must be 0 (no latency figure) or more")
    known = {*PLANNERS, GUIDED}
    if not params.planners:
        raise EngineError(f"no planner to benchmark: list at least one with --planners ({', '.join(sorted(known))})")
    twice = sorted({p for p in params.planners if params.planners.count(p) > 1})
    if twice:
        raise EngineError(f"planner(s) {', '.join(twice)} listed more than once in --planners: each would be counted twice")
    unknown = [p for p in params.planners if p not in known]
    if unknown:
        raise EngineError(f"unknown planner(s) {', '.join(unknown)}; choose from {', '.join(sorted(known))}")
    if not GuidanceConfig.parse(params.guidance).active:  # unknown terms fail here too
        raise EngineError("--guidance needs at least one term for diffusion+guidance (collision, drivable, speed, comfort)")
    model = None
    if _needs_model(params):
        from .planners.diffusion_planner import load_model

        model, _ = load_model(params.checkpoint)  # a bad checkpoint fails here, before any worker starts
    if params.scenarios is not None:
        from .recorded import scenario_files

        cases: list[Case] = [("files", str(path), 0) for path in scenario_files(Path(params.scenarios), params.split)]
    else:
        cases = [("procedural", kind, seed) for kind, seed in suite_scenarios(params.n, params.seed)]
        if params.commonroad:
            cases += [("commonroad", str(path), 0) for path in commonroad_files()]
    # one step per episode (each mode's expert counts as one), plus the latency run
    steps = [len(_modes(group, params.reactive)) * (len(params.planners) + 1) for group, *_ in cases]
    total, done = sum(steps) + 2, 0
    rows: list[dict[str, Any]] = []
    for case_steps, case_rows in zip(steps, _case_results(cases, params, model, cancel)):
        rows.extend(case_rows)
        done += case_steps
        progress(done / total, _progress_text(case_rows[-1]))
    latency = _latency(params, model, cancel) if model is not None and params.latency_replans > 0 else {}
    progress(1.0, "done")
    return summarise(rows, params, latency)


def _progress_text(row: dict[str, Any]) -> str:
    if "error" in row:
        return f"{row['scenario']}: {row['error']}"
    return f"{row['scenario']} {'reactive' if row['reactive'] else 'replay'} {row['planner']}: CLS {row['cls']:.1f}"


def _needs_model(params: SuiteParams) -> bool:
    return any(p.startswith("diffusion") for p in params.planners)


def _modes(group: str, reactive: bool) -> tuple[bool, ...]:
    return (reactive,) if group == "procedural" else (False, True)  # CommonRoad: replay and reactive


def _case_results(cases: list[Case], params: SuiteParams, model, cancel: CancelToken) -> Iterator[list[dict[str, Any]]]:
    """Each case's rows, in case order. Episodes are independent and every planner seeds its own
    sampler, so ``workers`` one-thread processes, here or on Ray, give the rows one process gives.
    A case whose task fails (a bug, a dead worker) becomes one error row."""
    spec = ExecutorSpec(params.executor, params.workers, params.ray_address)
    inline = partial(_case_rows, params=params, model=model, cancel=cancel)  # one worker: this process, its model
    for result in run_tasks(partial(_worker_case_rows, params=params), cases, spec, cancel, inline=inline, initializer=pool_worker_setup):
        yield result.value if result.ok else [_failed_case_row(result)]


def _failed_case_row(result: TaskResult) -> dict[str, Any]:
    group, kind, seed = result.item
    label = kind if group == "procedural" else Path(kind).stem
    return {"group": group, "type": label, "seed": seed, "scenario": label, "reactive": None, "planner": None,
            "error": result.error, "crash": result.crash}


@lru_cache(maxsize=1)
def _worker_model(checkpoint: str | None):
    from .planners.diffusion_planner import load_model

    return load_model(checkpoint)[0]


def _worker_case_rows(case: Case, params: SuiteParams) -> list[dict[str, Any]]:
    model = _worker_model(params.checkpoint) if _needs_model(params) else None
    return _case_rows(case, params, model, NEVER_CANCELLED)


def _case_rows(case: Case, params: SuiteParams, model, cancel: CancelToken) -> list[dict[str, Any]]:
    """Every planner on one scenario, in each of its modes, scored against the expert's progress.

    A user's file that cannot be read, or an episode that fails, becomes one row naming the
    error: the suite goes on and counts it (only a cancel stops it)."""
    group, kind, seed = case
    label = kind if group == "procedural" else Path(kind).stem
    try:
        if group == "procedural":
            sc = generate(kind, seed)
        else:
            sc = load_scenario(RunParams(scenario=kind))
        scene = Scene(sc)
    except Exception as exc:  # noqa: BLE001  (a user's file: any failure is reported, none stops the suite)
        return [_error_row(group, label, seed, None, None, exc)]
    rows = []
    for reactive in _modes(group, params.reactive):
        try:
            expert = expert_rollout(scene, reactive)
        except Cancelled:
            raise
        except Exception as exc:  # noqa: BLE001
            rows.append(_error_row(group, label, seed, reactive, "expert", exc))
            continue
        for name in params.planners:
            cancel.raise_if_cancelled()
            try:
                planner = make_planner(_params(name, seed, params.checkpoint, params.guidance), model)
                t0 = time.perf_counter()
                rollout = run_episode(scene, planner, reactive, cancel=cancel)
                seconds = time.perf_counter() - t0
                ep = episode_from_rollout(scene, rollout, name, {}, reactive, expert)
            except Cancelled:
                raise
            except Exception as exc:  # noqa: BLE001
                rows.append(_error_row(group, label, seed, reactive, name, exc))
                continue
            m = ep.metrics
            rows.append({
                "group": group, "type": label, "seed": seed, "scenario": sc.name, "reactive": reactive, "planner": name,
                "cls": 100.0 * m.score, "at_fault": m.at_fault, "multipliers": m.multipliers, "weighted": m.weighted,
                "episode_s": seconds, "replan_ms": float(np.median([p.ms for p in ep.plans])),
            })
    return rows


def _error_row(group: str, label: str, seed: int, reactive: bool | None, planner: str | None, exc: Exception) -> dict[str, Any]:
    text = str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}"
    return {"group": group, "type": label, "seed": seed, "scenario": label, "reactive": reactive, "planner": planner,
            "error": text, "crash": not isinstance(exc, EngineError)}


def _latency(params: SuiteParams, model, cancel: CancelToken) -> dict[str, Any]:
    """Replan latency on a fixed busy scene (dense traffic), K = 8, 10 solver steps, with and without guidance."""
    from .simulation import Simulator

    sc = generate("dense_traffic", 12345)
    scene = Scene(sc)
    sim = Simulator(scene, True)
    out = {}
    for name in ("diffusion", GUIDED):
        planner = make_planner(_params(name, 0, params.checkpoint, params.guidance), model)
        planner.reset(scene)
        obs = sim.observation()
        planner.plan(obs)  # warm-up
        times = []
        for _ in range(params.latency_replans):
            cancel.raise_if_cancelled()
            t0 = time.perf_counter()
            planner.plan(obs)
            times.append(1e3 * (time.perf_counter() - t0))
        out[name] = {"median_ms": statistics.median(times), "p90_ms": float(np.percentile(times, 90)), "replans": len(times),
                     "agents": int(obs.valid_now.sum())}
    return out


def summarise(rows: list[dict[str, Any]], params: SuiteParams, latency: dict[str, Any]) -> dict[str, Any]:
    def table_for(selected: list[dict[str, Any]]) -> dict[str, Any]:
        out = {}
        for name in params.planners:
            r = [x for x in selected if x["planner"] == name]
            if not r:
                continue
            out[name] = {
                "cls": float(np.mean([x["cls"] for x in r])),
                "at_fault_rate": float(np.mean([x["at_fault"] for x in r])),
                "scenarios": len(r),
                "episode_s_median": float(np.median([x["episode_s"] for x in r])),
                "replan_ms_median": float(np.median([x["replan_ms"] for x in r])),
                "multipliers": {k: float(np.mean([x["multipliers"][k] for x in r])) for k in r[0]["multipliers"]},
                "weighted": {k: float(np.mean([x["weighted"][k] for x in r])) for k in r[0]["weighted"]},
                "by_type": {t: float(np.mean([x["cls"] for x in r if x["type"] == t])) for t in sorted({x["type"] for x in r})},
                "ci95": mean_interval([x["cls"] for x in r]).as_list(2),
            }
        return out

    failures = [r for r in rows if "error" in r]
    scored = [r for r in rows if "error" not in r]
    params_out = {"n": params.n, "seed": params.seed, "planners": list(params.planners), "guidance": params.guidance,
                  "scenarios": params.scenarios, "split": params.split}
    if params.scenarios is not None:
        modes = {"replay": [r for r in scored if not r["reactive"]], "reactive": [r for r in scored if r["reactive"]]}
        result = {"files_replay": table_for(modes["replay"]), "files_reactive": table_for(modes["reactive"]),
                  "per_file": _per_file(scored), "failures": failures, "latency": latency,
                  "checks": _file_checks({m: table_for(r) for m, r in modes.items()}, modes, failures),
                  "targets": FILE_TARGETS, "params": params_out, "rows": rows}
        result["table"] = format_file_table(result, params)
        return result
    proc = table_for([r for r in scored if r["group"] == "procedural"])
    cr_replay = table_for([r for r in scored if r["group"] == "commonroad" and not r["reactive"]])
    cr_reactive = table_for([r for r in scored if r["group"] == "commonroad" and r["reactive"]])
    checks = _checks(proc, latency, [r for r in scored if r["group"] == "procedural"])
    result = {
        "procedural": proc, "commonroad_replay": cr_replay, "commonroad_reactive": cr_reactive, "latency": latency,
        "checks": checks, "targets": TARGETS, "params": params_out, "failures": failures, "rows": rows,
    }
    result["table"] = format_table(result, params)
    return result


def _per_file(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """CLS of every planner on every file: {file: {"replay"|"reactive": {planner: CLS}}}."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for r in rows:
        out.setdefault(r["type"], {}).setdefault("reactive" if r["reactive"] else "replay", {})[r["planner"]] = r["cls"]
    return out


def _file_checks(tables: dict[str, dict[str, Any]], modes: dict[str, list[dict[str, Any]]],
                 failures: list[dict[str, Any]]) -> dict[str, Any]:
    """The real-traffic targets (FILE_TARGETS) in each mode, each CLS difference with its paired interval."""
    c: dict[str, Any] = {}
    for mode, table in tables.items():
        rows = modes[mode]
        cls = {k: table.get(k, {}).get("cls") for k in ("diffusion", GUIDED, "idm", "pdm")}
        for name, (a, b) in {"guided_minus_pdm": (GUIDED, "pdm"), "guided_minus_idm": (GUIDED, "idm"),
                             "diffusion_minus_idm": ("diffusion", "idm")}.items():
            if cls[a] is not None and cls[b] is not None:
                target = FILE_TARGETS[name]
                c[f"{name}[{mode}]"] = {"value": cls[a] - cls[b], "target": f">= {target:g}", "ok": cls[a] - cls[b] >= target,
                                        "ci95": _paired_cls_interval(rows, a, b)}
        if "idm" in table:
            for name in ("diffusion", GUIDED):
                if name in table:
                    v, limit = table[name]["at_fault_rate"], table["idm"]["at_fault_rate"]
                    c[f"at_fault_rate[{name}, {mode}]"] = {"value": v, "target": f"<= {limit:.3f} (idm)", "ok": v <= limit}
    crashes = sum(bool(f.get("crash")) for f in failures)
    c["crashes"] = {"value": crashes, "target": "0", "ok": crashes == 0}
    return c


def _paired_cls_interval(rows: list[dict[str, Any]], a: str, b: str) -> list[float]:
    """95% interval of CLS(a) - CLS(b), bootstrapped over the scenarios both planners drove."""
    cls = {(r["planner"], r["type"], r["scenario"]): r["cls"] for r in rows}
    both = [key for (p, *key) in cls if p == a and (b, *key) in cls]
    return mean_interval([cls[(a, *key)] - cls[(b, *key)] for key in both]).as_list(2)


def _checks(proc: dict[str, Any], latency: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The spec's targets on the procedural scenarios; each CLS difference with its paired interval."""
    c: dict[str, Any] = {}
    d, g, i, p = (proc.get(k, {}).get("cls") for k in ("diffusion", GUIDED, "idm", "pdm"))
    if d is not None and i is not None:
        c["diffusion_minus_idm"] = {"value": d - i, "target": ">= 10", "ok": d - i >= 10.0, "ci95": _paired_cls_interval(rows, "diffusion", "idm")}
    if d is not None and p is not None:
        c["pdm_minus_diffusion"] = {"value": p - d, "target": "<= 3", "ok": p - d <= 3.0, "ci95": _paired_cls_interval(rows, "pdm", "diffusion")}
    if g is not None and p is not None:
        c["guided_minus_pdm"] = {"value": g - p, "target": ">= 0", "ok": g - p >= 0.0, "ci95": _paired_cls_interval(rows, GUIDED, "pdm")}
    for name in ("diffusion", GUIDED):
        if name in proc:
            c[f"at_fault_rate[{name}]"] = {"value": proc[name]["at_fault_rate"], "target": "<= 0.02", "ok": proc[name]["at_fault_rate"] <= 0.02}
            c[f"episode_s[{name}]"] = {"value": proc[name]["episode_s_median"], "target": "<= 10", "ok": proc[name]["episode_s_median"] <= 10.0}
    if GUIDED in latency:
        v = latency[GUIDED]["median_ms"]
        c["replan_ms[K=8, 10 steps, guidance]"] = {"value": v, "target": "<= 50", "ok": v <= 50.0}
    return c


def _planner_lines(title: str, table: dict[str, Any]) -> list[str]:
    n = next(iter(table.values()))["scenarios"]
    lines = [f"{title} ({n} scenarios)",
             f"  {'planner':20} {'CLS':>6} {'95% interval':>14} {'at-fault':>9} {'no-coll':>8} {'drivable':>8} {'progress':>8} {'TTC':>6} {'speed':>6} {'comfort':>7} {'episode s':>9} {'replan ms':>9}"]
    for name, r in table.items():
        m, w = r["multipliers"], r["weighted"]
        lines.append(
            f"  {name:20} {r['cls']:6.1f} {Interval(*r['ci95']).text('.1f'):>14} {100 * r['at_fault_rate']:8.1f}% {m['no_at_fault_collisions']:8.2f}"
            f" {m['drivable_area_compliance']:8.2f} {w['progress']:8.2f} {w['ttc']:6.2f} {w['speed_limit']:6.2f} {w['comfort']:7.2f}"
            f" {r['episode_s_median']:9.2f} {r['replan_ms_median']:9.1f}"
        )
    return lines


def _latency_lines(latency: dict[str, Any]) -> list[str]:
    if not latency:
        return []
    lines = ["Replan latency (K = 8 samples, 10 DPM-Solver++ steps), dense-traffic scene"]
    for name, r in latency.items():
        lines.append(f"  {name:20} median {r['median_ms']:6.1f} ms   p90 {r['p90_ms']:6.1f} ms   ({r['replans']} replans, {r['agents']} agents)")
    return lines + [""]


def _target_lines(checks: dict[str, Any]) -> list[str]:
    lines = ["Targets (CLS differences with a 95% interval, bootstrap over the scenarios, paired)"]
    for name, c in checks.items():
        interval = "  " + Interval(*c["ci95"]).text("+.1f") if "ci95" in c else ""
        lines.append(f"  {name:40} {c['value']:8.2f}   target {c['target']:8}  {'yes' if c['ok'] else 'NO ':3}{interval}")
    return lines


def _failure_lines(failures: list[dict[str, Any]]) -> list[str]:
    if not failures:
        return []
    lines = [f"Failures ({len(failures)}: {sum(bool(f.get('crash')) for f in failures)} crashes, the rest files or episodes the program refused)"]
    for f in failures:
        where = f["type"] + ("" if f["reactive"] is None else f" {'reactive' if f['reactive'] else 'replay'}") + (f" {f['planner']}" if f["planner"] else "")
        lines.append(f"  {where}: {f['error']}")
    return lines + [""]


def format_table(result: dict[str, Any], params: SuiteParams) -> str:
    lines = []
    for title, key in (("Procedural scenarios, reactive agents", "procedural"), ("CommonRoad, log replay", "commonroad_replay"),
                       ("CommonRoad, reactive", "commonroad_reactive")):
        table = result[key]
        if not table:
            continue
        lines += _planner_lines(title, table)
        if key == "procedural":
            types = [t for t in TYPES if any(t in r["by_type"] for r in table.values())]
            lines.append("  CLS by type: " + " ".join(f"{t[:8]:>8}" for t in types))
            for name, r in table.items():
                lines.append(f"  {name:20} " + " ".join(f"{r['by_type'].get(t, float('nan')):8.1f}" for t in types))
        lines.append("")
    lines += _failure_lines(result["failures"]) + _latency_lines(result["latency"]) + _target_lines(result["checks"])
    return "\n".join(lines)


def format_file_table(result: dict[str, Any], params: SuiteParams) -> str:
    """Per-file CLS first (replay | reactive, one column per planner), then means, failures, targets."""
    names = list(params.planners)
    short = [n.replace("diffusion+guidance", "guided")[:9] for n in names]
    lines = [f"Scenario files in {params.scenarios}" + (f" ({params.split} split)" if params.split else ""),
             f"  {'file':32} " + " ".join(f"{s:>9}" for s in short) + " | " + " ".join(f"{s:>9}" for s in short),
             f"  {'':32} {'log replay':^{10 * len(names) - 1}} | {'reactive':^{10 * len(names) - 1}}"]
    for file, modes in result["per_file"].items():
        cells = [" ".join(f"{modes.get(m, {}).get(n, float('nan')):9.1f}" for n in names) for m in ("replay", "reactive")]
        lines.append(f"  {file[:32]:32} {cells[0]} | {cells[1]}")
    lines.append("")
    for title, key in (("Log replay", "files_replay"), ("Reactive agents", "files_reactive")):
        if result[key]:
            lines += _planner_lines(title, result[key]) + [""]
    lines += _failure_lines(result["failures"]) + _latency_lines(result["latency"]) + _target_lines(result["checks"])
    return "\n".join(lines)
