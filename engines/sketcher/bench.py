"""The benchmark: the edit model against the random-mutation baseline, same search, same targets.

Targets are fresh seeded random programs (blank renders rejected) with a given primitive count.
Both proposers run the identical beam search with the same budget; a target counts as solved
when the foreground IoU reaches 0.98 at 64x64 (the paper's mean of foreground and background IoU
is reported too). Sketch-style targets are the same kind of programs drawn by hand; there the
found program's clean render is compared with the clean target (IoU >= 0.9 counts).
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, check_seed, no_progress, pool_worker_setup
from engines.core.executor import ExecutorSpec, current_cancel, run_tasks
from engines.core.intervals import Interval, proportion_interval

from .edits import random_program
from .language import parse
from .params import PROPOSERS, SearchParams
from .render import foreground_iou, render
from .search import SearchResult, solve
from .sketch import sketch_render
from .vocab import Tokens

SOLVED_IOU = 0.98
SKETCH_OK_IOU = 0.9
METHODS = PROPOSERS  # the edit model against the random-mutation baseline
_SEARCH = SearchParams()  # the defaults of one search


@dataclass(frozen=True)
class BenchParams:
    targets: int = 20  # per primitive count
    primitives: tuple[int, int] = (1, 4)
    budget: int = _SEARCH.budget
    beam: int = _SEARCH.beam
    proposals: int = _SEARCH.proposals
    sketch_targets: int = 0
    seed: int = 2025
    checkpoint: str = ""
    polish_after: int = _SEARCH.polish_after
    residual: bool = True

    def search(self, style: str) -> SearchParams:
        """The search every target of one style gets (its seed is set per target)."""
        return SearchParams(
            budget=self.budget, beam=self.beam, proposals=self.proposals, style=style, polish_after=self.polish_after, residual=self.residual
        )

    def __post_init__(self) -> None:
        lo, hi = self.primitives
        if not 1 <= lo <= hi <= 12:
            raise EngineError("primitives must be a range within 1-12, e.g. 1-4")
        if not 1 <= self.targets <= 10000 or not 0 <= self.sketch_targets <= 10000:
            raise EngineError("targets must be 1 to 10000 (sketch targets 0 to 10000)")
        check_seed(self.seed)
        self.search("auto")  # the search's own ranges, before any target is drawn


def bench_targets(n_primitives: int, count: int, seed: int) -> list[Tokens]:
    """Seeded random targets with exactly ``n_primitives`` primitives and a non-blank render."""
    out = []
    for i in range(count):
        rng = random.Random(f"sketcher-bench/{seed}/{n_primitives}/{i}")
        while True:
            program = random_program(rng, n_primitives)
            if render(program).any():
                out.append(program)
                break
    return out


def _row(results: list[SearchResult], budget: int) -> dict:
    solved = [r for r in results if r.iou >= SOLVED_IOU]
    return {
        "targets": len(results),
        "solved": len(solved),
        "solve_rate": round(len(solved) / max(len(results), 1), 4),
        "solve_rate_ci95": proportion_interval(len(solved), len(results)).as_list(),
        "solve_rate_paper_metric": round(sum(r.mean_iou > SOLVED_IOU for r in results) / max(len(results), 1), 4),
        "mean_iou": round(float(np.mean([r.iou for r in results])), 4),
        "mean_paper_iou": round(float(np.mean([r.mean_iou for r in results])), 4),
        "median_seconds": round(statistics.median(r.seconds for r in results), 3) if results else None,
        "median_renders_when_solved": statistics.median(r.renders for r in solved) if solved else None,
        "renders_at_solve": [r.renders if r.iou >= SOLVED_IOU else None for r in results],
    }


def curve(renders_at_solve: list[int | None], budget: int, points: int = 20) -> list[tuple[int, float]]:
    """Solve rate as a function of renderer calls (a target counts once its search reached it)."""
    n = max(len(renders_at_solve), 1)
    marks = sorted({max(1, round(budget * (k + 1) / points)) for k in range(points)})
    return [(m, round(sum(1 for r in renders_at_solve if r is not None and r <= m) / n, 4)) for m in marks]


def _search(task: tuple[int, str, int, Tokens], checkpoint: str, search: SearchParams) -> SearchResult:
    """One target's search by one proposer: an independent task (its seed is the target's index)."""
    from .api import make_proposer

    _, method, i, program = task
    proposer = make_proposer(method, seed=i, checkpoint=checkpoint or None)
    return solve(render(program), proposer, replace(search, seed=i), no_progress, current_cancel())


def run_bench(
    params: BenchParams, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED, executor: ExecutorSpec = ExecutorSpec()
) -> dict:
    """Every target searched by both proposers; the searches are independent tasks, run where
    ``executor`` says (the results do not depend on it: each search is bounded by renders, not time).
    A search whose task fails is logged and counted in "failures"."""
    if params.checkpoint:  # a bad checkpoint is one sentence now, not a failure in every task
        from .api import load_model

        load_model(params.checkpoint)
    lo, hi = params.primitives
    counts = list(range(lo, hi + 1))
    search = params.search("filled")
    total = len(counts) * params.targets * 2 + params.sketch_targets * 2
    targets = {n: bench_targets(n, params.targets, params.seed) for n in counts}
    tasks = [(n, method, i, program) for n in counts for method in METHODS for i, program in enumerate(targets[n])]
    found: dict[tuple[int, str], list[SearchResult]] = {}
    failures = 0
    work = partial(_search, checkpoint=params.checkpoint, search=search)
    for done, task in enumerate(run_tasks(work, tasks, executor, cancel, initializer=pool_worker_setup), start=1):
        n, method, i, _ = task.item
        if task.ok:
            found.setdefault((n, method), []).append(task.value)
        else:
            failures += 1
        progress(done / total, f"{n} primitives, {method}: {i + 1}/{params.targets}")
    done = len(tasks)
    per_count: dict[str, dict] = {}
    all_results: dict[str, list[SearchResult]] = {m: [] for m in METHODS}
    for n in counts:
        per_count[str(n)] = {}
        for method in METHODS:
            results = found.get((n, method), [])
            per_count[str(n)][method] = _row(results, params.budget)
            all_results[method].extend(results)
        m, b = per_count[str(n)]["model"]["solve_rate"], per_count[str(n)]["random"]["solve_rate"]
        per_count[str(n)]["ratio"] = round(m / b, 3) if b > 0 else None
    overall = {method: _row(all_results[method], params.budget) for method in METHODS}
    for row in overall.values():
        row.pop("renders_at_solve")
    curves = {method: curve([r.renders if r.iou >= SOLVED_IOU else None for r in all_results[method]], params.budget) for method in METHODS}
    result = {
        "params": {**params.__dict__, "primitives": f"{lo}-{hi}"},
        "per_primitives": per_count,
        "overall": overall,
        "curves": curves,
        "failures": failures,
    }
    if params.sketch_targets:
        result["sketch"], sketch_failures = _sketch_bench(params, progress, cancel, executor, done, total)
        result["failures"] += sketch_failures
    return result


def _sketch_search(task: tuple[str, int, Tokens], checkpoint: str, search: SearchParams, seed: int) -> tuple[float, float] | None:
    """One hand-drawn target's search by one proposer, an independent task: the found program's
    clean IoU against the clean target, and the search's seconds (None: the drawing came out blank)."""
    from .api import make_proposer

    method, i, program = task
    drawing = sketch_render(program, np.random.default_rng(seed * 31 + i))
    if not drawing.any():
        return None
    found = solve(drawing, make_proposer(method, seed=i, checkpoint=checkpoint or None), replace(search, seed=i), no_progress, current_cancel())
    return float(foreground_iou(render(parse(found.program)), render(program))), found.seconds


def _sketch_bench(
    params: BenchParams, progress: ProgressFn, cancel: CancelToken, executor: ExecutorSpec, before: int, total: int
) -> tuple[dict, int]:
    """Both proposers on hand-drawn versions of fresh targets, each search a task on ``executor``;
    the scores per proposer and the count of failed tasks (``before``: tasks done before these, for progress)."""
    lo, hi = params.primitives
    rng = random.Random(f"sketcher-bench-sketch/{params.seed}")
    programs = [bench_targets(rng.randint(lo, hi), 1, params.seed * 7919 + i)[0] for i in range(params.sketch_targets)]
    tasks = [(method, i, program) for method in METHODS for i, program in enumerate(programs)]
    work = partial(_sketch_search, checkpoint=params.checkpoint, search=params.search("sketch"), seed=params.seed)
    found: dict[str, list[tuple[float, float]]] = {method: [] for method in METHODS}
    failures = 0
    for done, task in enumerate(run_tasks(work, tasks, executor, cancel, initializer=pool_worker_setup), start=before + 1):
        method, i, _ = task.item
        if not task.ok:
            failures += 1
        elif task.value is not None:
            found[method].append(task.value)
        progress(done / total, f"sketches, {method}: {i + 1}/{len(programs)}")
    out: dict[str, dict] = {}
    for method, results in found.items():
        ious, seconds = [iou for iou, _ in results], [s for _, s in results]
        ok = sum(v >= SKETCH_OK_IOU for v in ious)
        out[method] = {
            "targets": len(ious),
            "clean_iou_at_least_0.9": round(ok / max(len(ious), 1), 4),
            "clean_iou_at_least_0.9_ci95": proportion_interval(ok, len(ious)).as_list(),
            "mean_clean_iou": round(float(np.mean(ious)), 4) if ious else None,
            "median_seconds": round(statistics.median(seconds), 3) if seconds else None,
        }
    return out, failures


def table(result: dict) -> str:
    """The human-readable summary the CLI prints."""
    lines = [f"{'primitives':>10} {'model':>8} {'random':>8} {'ratio':>7} {'model IoU':>10} {'paper IoU':>10} {'model s':>8}"]
    for n, row in result["per_primitives"].items():
        m, b = row["model"], row["random"]
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
        lines.append(
            f"{n:>10} {m['solve_rate']:>8.2%} {b['solve_rate']:>8.2%} {ratio:>7} {m['mean_iou']:>10.3f} {m['mean_paper_iou']:>10.3f} {m['median_seconds']:>8.2f}"
        )
    o = result["overall"]
    lines.append(f"{'all':>10} {o['model']['solve_rate']:>8.2%} {o['random']['solve_rate']:>8.2%}")
    lines.append("95% intervals (Wilson): " + ", ".join(f"{m} {Interval(*o[m]['solve_rate_ci95']).text('.1%')}" for m in METHODS))
    lines.append("solve rate vs renders (model / random):")
    for (r, m), (_, b) in zip(result["curves"]["model"][::4], result["curves"]["random"][::4]):
        lines.append(f"  {r:>6} renders: {m:6.2%} / {b:6.2%}")
    if "sketch" in result:
        s = result["sketch"]
        lines.append(
            f"sketch targets, clean IoU >= 0.9: model {s['model']['clean_iou_at_least_0.9']:.2%} "
            f"{Interval(*s['model']['clean_iou_at_least_0.9_ci95']).text('.1%')}, random {s['random']['clean_iou_at_least_0.9']:.2%} "
            f"{Interval(*s['random']['clean_iou_at_least_0.9_ci95']).text('.1%')}"
        )
    if result["failures"]:
        lines.append(f"{result['failures']} search(es) failed and are left out (the log has each one's target and traceback)")
    return "\n".join(lines)


def merge_curves(path, result: dict) -> None:
    """Add this run's curves to the small JSON the panel plots (one entry per primitive range)."""
    import json
    from pathlib import Path

    from engines.core import write_json

    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"runs": {}}
    p = result["params"]
    data["runs"][p["primitives"]] = {
        "curves": result["curves"],
        "targets_per_count": p["targets"],
        "budget": p["budget"],
        "solve_rate": {m: result["overall"][m]["solve_rate"] for m in METHODS},
    }
    lines = [
        f"{name} primitives ({run['targets_per_count']} targets each, budget {run['budget']}): "
        f"edit model {run['solve_rate']['model']:.0%}, random mutations {run['solve_rate']['random']:.0%} solved"
        for name, run in sorted(data["runs"].items())
    ]
    data["caption"] = "Measured by `workbench sketcher bench`. " + "; ".join(lines) + "."
    write_json(path, data)
