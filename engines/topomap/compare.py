"""The paper's claim, measured: every method over several seeds in one run, mean +- std.

Goals (from the spec): CB-SOM's accuracy within 1 point of the non-topographic network while
AB-SOM loses clearly more (here: at least 1 point more than CB-SOM); CB-SOM smoothness >= 0.5 on
its deeper layers (all but conv1) where the non-topographic network stays <= 0.25. The goals are
reported as measured, never asserted.

With ``out_dir`` every run is kept as a run file; finished runs are reused and interrupted ones
resume from their checkpoints, so a cancelled comparison picks up where it stopped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, json_loads, no_progress, pool_worker_setup, scaled
from engines.core.executor import ExecutorSpec, current_cancel, run_tasks

from .params import METHOD_TITLES, CompareParams
from .train import TrainResult, summarise, train

ACCURACY_GAP = 1.0  # points
CLEARLY_MORE = 1.0  # points more than CB-SOM's gap
DEEP_SMOOTH = 0.5
BASELINE_SMOOTH = 0.25


@dataclass(frozen=True)
class MethodSummary:
    method: str
    runs: int
    accuracy_mean: float
    accuracy_std: float
    smoothness_mean: dict[str, float]
    smoothness_std: dict[str, float]
    shuffled_smoothness_mean: dict[str, float]
    relu_smoothness_mean: dict[str, float]
    orientation_smoothness_mean: dict[str, float]
    seconds_mean: float


@dataclass(frozen=True)
class Goal:
    target: str
    measured: str
    met: bool


@dataclass(frozen=True)
class CompareResult:
    params: CompareParams
    runs: tuple[TrainResult, ...]
    methods: tuple[MethodSummary, ...]
    goals: dict[str, Goal]
    seconds: float
    table: str
    failures: tuple[str, ...] = ()  # the runs whose task failed (a bug, a dead worker): left out of the means


def run_file_name(method: str, seed: int) -> str:
    return f"{method}-seed{seed}.topomap.pt"


def compare(
    params: CompareParams,
    *,
    out_dir: Path | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    executor: ExecutorSpec = ExecutorSpec(),
) -> CompareResult:
    """Every (method, seed) run, as independent tasks where ``executor`` says (one worker: here,
    with each run's progress; elsewhere, ``out_dir`` must be a folder every worker can write)."""
    t0 = time.perf_counter()
    seeds = range(params.first_seed, params.first_seed + params.seeds)
    jobs = [(i, method, seed) for i, (method, seed) in enumerate((m, s) for s in seeds for m in params.methods)]
    runs: list[TrainResult] = []
    failures: list[str] = []
    inline = partial(_run, params=params, out_dir=out_dir, progress=progress, count=len(jobs))
    for k, task in enumerate(
        run_tasks(partial(_run, params=params, out_dir=out_dir), jobs, executor, cancel, inline=inline, initializer=pool_worker_setup), start=1
    ):
        _, method, seed = task.item
        if task.ok:
            runs.append(task.value)
        else:
            failures.append(f"{method} seed {seed}: {task.error}")
        progress(k / len(jobs), f"{method} seed {seed} done")
    summaries = tuple(_summarise_method(m, [r for r in runs if r.method == m]) for m in params.methods if any(r.method == m for r in runs))
    goals = evaluate_goals(summaries)
    seconds = time.perf_counter() - t0
    result = CompareResult(params, tuple(runs), summaries, goals, seconds, "", tuple(failures))
    return CompareResult(params, tuple(runs), summaries, goals, seconds, format_table(result), tuple(failures))


def _run(job: tuple[int, str, int], params: CompareParams, out_dir: Path | None, progress: ProgressFn = no_progress, count: int = 1) -> TrainResult:
    """One (method, seed) run: reused from ``out_dir`` when finished there, else trained (resuming its checkpoint)."""
    i, method, seed = job
    run_params = params.run_params(method, seed)
    sub = scaled(progress, i / count, (i + 1) / count)
    out = Path(out_dir) / run_file_name(method, seed) if out_dir is not None else None
    done = _finished(out, run_params) if out is not None else None
    if done is not None:
        sub(1.0, f"{method} seed {seed}: reused {out.name}")
        return done
    tag = f"[{i + 1}/{count}] "
    return train(run_params, out=out, progress=lambda f, t: sub(f, tag + t), cancel=current_cancel())


def _finished(out: Path, params) -> TrainResult | None:
    """A run file already written for exactly these parameters."""
    from .runfile import load_run

    if not out.exists():
        return None
    try:
        record = load_run(out)
    except EngineError:
        return None
    return summarise(record, out=out) if record.params == params else None


def _mean_std(values: list[float]) -> tuple[float, float]:
    arr = np.asarray(values, np.float64)
    return float(arr.mean()), float(arr.std(ddof=1)) if len(arr) > 1 else 0.0


def _summarise_method(method: str, runs: list[TrainResult]) -> MethodSummary:
    layers = list(runs[0].smoothness)
    acc = _mean_std([r.accuracy for r in runs])
    smooth = {layer: _mean_std([r.smoothness[layer] for r in runs]) for layer in layers}
    return MethodSummary(
        method=method,
        runs=len(runs),
        accuracy_mean=acc[0],
        accuracy_std=acc[1],
        smoothness_mean={k: v[0] for k, v in smooth.items()},
        smoothness_std={k: v[1] for k, v in smooth.items()},
        shuffled_smoothness_mean={layer: _mean_std([r.shuffled_smoothness[layer] for r in runs])[0] for layer in layers},
        relu_smoothness_mean={layer: _mean_std([r.relu_smoothness[layer] for r in runs])[0] for layer in layers},
        orientation_smoothness_mean={layer: _mean_std([r.orientation_smoothness[layer] for r in runs])[0] for layer in layers},
        seconds_mean=_mean_std([r.seconds for r in runs])[0],
    )


def evaluate_goals(summaries: tuple[MethodSummary, ...]) -> dict[str, Goal]:
    by = {s.method: s for s in summaries}
    goals: dict[str, Goal] = {}
    if "none" in by and "cbsom" in by:
        gap = by["none"].accuracy_mean - by["cbsom"].accuracy_mean
        goals["cbsom_accuracy"] = Goal(f"CB-SOM accuracy within {ACCURACY_GAP:g} point of none", f"gap {gap:+.2f} points", gap <= ACCURACY_GAP)
        if "absom" in by:
            ab_gap = by["none"].accuracy_mean - by["absom"].accuracy_mean
            goals["absom_loses_more"] = Goal(
                f"AB-SOM loses at least {CLEARLY_MORE:g} point more than CB-SOM",
                f"AB-SOM gap {ab_gap:+.2f} vs CB-SOM gap {gap:+.2f} points",
                ab_gap - gap >= CLEARLY_MORE,
            )
    if "cbsom" in by:
        deep = _deep_layers(by["cbsom"])
        if deep:
            low = min(by["cbsom"].smoothness_mean[layer] for layer in deep)
            goals["cbsom_smoothness"] = Goal(f"CB-SOM smoothness >= {DEEP_SMOOTH:g} on {', '.join(deep)}", f"lowest {low:.2f}", low >= DEEP_SMOOTH)
    if "none" in by:
        deep = _deep_layers(by["none"])
        if deep:
            high = max(by["none"].smoothness_mean[layer] for layer in deep)
            goals["none_smoothness"] = Goal(
                f"none smoothness <= {BASELINE_SMOOTH:g} on {', '.join(deep)}", f"highest {high:.2f}", high <= BASELINE_SMOOTH
            )
    return goals


def _deep_layers(summary: MethodSummary) -> list[str]:
    return list(summary.smoothness_mean)[1:]


def format_table(result: CompareResult) -> str:
    layers: list[str] = []
    for s in result.methods:
        layers += [layer for layer in s.smoothness_mean if layer not in layers]
    p = result.params
    head = f"topomap compare: {p.base.data}, {p.base.epochs} epochs, {p.seeds} seed(s); smoothness = |delta d'| score (shuffled control in brackets)"
    lines = [head, f"{'method':10} {'accuracy %':>14} " + " ".join(f"{layer:>20}" for layer in layers) + f" {'s/run':>7}"]
    for s in result.methods:
        cells = []
        for layer in layers:
            if layer in s.smoothness_mean:
                cells.append(f"{s.smoothness_mean[layer]:.2f} ± {s.smoothness_std[layer]:.2f} [{s.shuffled_smoothness_mean[layer]:.2f}]")
            else:
                cells.append("-")
        lines.append(
            f"{s.method:10} {s.accuracy_mean:7.2f} ± {s.accuracy_std:4.2f} " + " ".join(f"{c:>20}" for c in cells) + f" {s.seconds_mean:7.1f}"
        )
    lines.append("")
    lines.append("check: the same score on d' of the rectified output (after batch norm and ReLU), mean over seeds")
    for s in result.methods:
        cells = [f"{s.relu_smoothness_mean[layer]:.2f}" if layer in s.relu_smoothness_mean else "-" for layer in layers]
        lines.append(f"{s.method:10} {'':>14} " + " ".join(f"{c:>20}" for c in cells))
    if result.goals:
        lines.append("")
        for goal in result.goals.values():
            lines.append(f"{'met' if goal.met else 'NOT met':8} {goal.target}: {goal.measured}")
    lines += [f"FAILED {failure}" for failure in result.failures]
    lines.append(f"total {result.seconds:.0f} s; methods: " + "; ".join(f"{m} = {METHOD_TITLES[m]}" for m in p.methods))
    return "\n".join(lines)


@dataclass(frozen=True)
class ScatterPoint:
    """One run in the accuracy-vs-smoothness plot; smoothness = mean over the deeper layers."""

    method: str
    seed: int
    accuracy: float
    smoothness: float


def scatter_point(method: str, seed: int, accuracy: float, smoothness: dict[str, float]) -> ScatterPoint:
    values = list(smoothness.values())
    deep = values[1:] or values
    return ScatterPoint(method, seed, float(accuracy), float(np.mean(deep)) if deep else 0.0)


@dataclass(frozen=True)
class CompareTable:
    """A saved comparison, read back for the panel's scatter plot."""

    points: tuple[ScatterPoint, ...]
    table: str


COMPARE_FORMAT = "workbench-topomap-compare"


def load_compare(path: Path) -> CompareTable:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EngineError(f"{path}: no such comparison file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EngineError(f"{path.name} is not a readable comparison file (JSON): {exc}") from None
    data = json_loads(text, path.name)
    if not isinstance(data, dict) or data.get("format") != COMPARE_FORMAT:
        raise EngineError(f"{path.name} is not a topomap comparison (run `workbench topomap bench --save FILE`)")
    try:
        points = tuple(
            scatter_point(str(r["method"]), int(r["seed"]), float(r["accuracy"]), {str(k): float(v) for k, v in r["smoothness"].items()})
            for r in data["runs"]
        )
        table = str(data.get("table", ""))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise EngineError(f"{path.name} is damaged: a run entry is missing or malformed") from exc
    if not points:
        raise EngineError(f"{path.name} holds no runs")
    return CompareTable(points, table)
