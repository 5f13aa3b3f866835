"""The speed benchmark: library masks x CPU backends in one interleaved run, with the goals checked.

Default suite (``make bench``): B=1 H=8 D=64 fp32 N=8192, every library mask, ``sdpa_dense``,
``flex`` and ``blocksparse``. Goals: ``blocksparse`` faster than compiled Flex on every mask
with rho >= 0.5, and its speed-up over its own full-mask time >= 80% of 1/(1-rho) (a mask with
rho = 1 has an infinite ideal and is not judged on that goal; see ``check_goals``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, no_progress, scaled

from . import library
from .params import TimingSettings
from .timing import TimingReport, time_cases

GOAL_RHO = 0.5
GOAL_PCT_IDEAL = 80.0


@dataclass(frozen=True)
class BenchResult:
    report: TimingReport
    goals: dict[str, Any]
    table: str


def run_bench(
    masks: list[str] | None = None,
    n: int = 8192,
    params: dict[str, Any] | None = None,
    settings: TimingSettings = TimingSettings(),
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> BenchResult:
    """Time ``masks`` (default: the whole library) at length ``n``; ``params`` apply to a single mask."""
    names = list(masks or library.MASKS)
    if params and len(names) != 1:
        raise EngineError("--param needs exactly one --mask")
    progress(0.0, "building masks")
    cases = []
    for name in names:
        resolved = library.resolve_params(name, n, params if len(names) == 1 else None)
        cases.append((name, resolved, library.mask_spec(name).builder(n, **resolved)))
    report = time_cases(cases, settings, scaled(progress, 0.02, 1.0), cancel)
    goals = check_goals(report)
    return BenchResult(report, goals, format_table(report, goals))


def check_goals(report: TimingReport) -> dict[str, Any]:
    """Per mask with rho >= 0.5: blocksparse vs flex, and blocksparse's share of the ideal speed-up.

    A mask with rho == 1 (every tile skipped) has an infinite ideal, so its share of the ideal is
    None and it can neither meet nor miss the ideal goal: its ``ideal_ok`` / ``ideal_ok_best`` are
    None and the ``ideal_on_*`` verdicts skip it (None when no mask of the group can be judged).
    It still counts for the faster-than-flex goal.
    """
    per_mask: dict[str, Any] = {}
    for case in report.cases:
        bs = case.row("blocksparse")
        if bs is None:
            continue
        entry: dict[str, Any] = {"rho": case.stats.rho, "pct_of_ideal": bs.pct_of_ideal, "pct_of_ideal_best": bs.pct_of_ideal_best}
        entry["ideal_ok"] = None if bs.pct_of_ideal is None else bs.pct_of_ideal >= GOAL_PCT_IDEAL
        entry["ideal_ok_best"] = None if bs.pct_of_ideal_best is None else bs.pct_of_ideal_best >= GOAL_PCT_IDEAL
        if bs.speedup_vs_flex is not None:
            entry["speedup_vs_flex"] = bs.speedup_vs_flex
            entry["speedup_vs_flex_best"] = bs.speedup_vs_flex_best
            entry["faster_than_flex"] = bs.speedup_vs_flex > 1.0
            entry["faster_than_flex_best"] = bs.speedup_vs_flex_best > 1.0
        per_mask[case.name] = entry
    sparse = {k: v for k, v in per_mask.items() if v["rho"] >= GOAL_RHO}

    def every(key: str, group: dict[str, Any]) -> bool | None:
        """All of the group meet the goal; a missing verdict counts as missed, a None one (nothing
        to judge) is skipped; None when nothing in the group can be judged."""
        verdicts = [v.get(key, False) for v in group.values()]
        judged = [ok for ok in verdicts if ok is not None]
        return all(judged) if judged else None

    return {
        "masks": per_mask,
        "rho_threshold": GOAL_RHO,
        "faster_than_flex_on_sparse": every("faster_than_flex", sparse),
        "faster_than_flex_on_sparse_best": every("faster_than_flex_best", sparse),
        "ideal_on_sparse": every("ideal_ok", sparse),
        "ideal_on_sparse_best": every("ideal_ok_best", sparse),
        "ideal_on_all": every("ideal_ok", per_mask),
        "ideal_on_all_best": every("ideal_ok_best", per_mask),
    }


def format_table(report: TimingReport, goals: dict[str, Any]) -> str:
    s = report.settings
    lines = [
        f"FlashMask CPU benchmark: B={s.batch} H={s.heads} D={s.dim} fp32 N_q={report.n_q} N_k={report.n_k}, "
        f"{report.threads} torch thread(s), {s.repeats} interleaved repeats (+{s.warmup} warm-up), tiles {s.block}x{s.block}",
        report.note,
        "",
        f"{'mask':17} {'rho':>5} {'backend':11} {'ms med':>9} {'ms min':>9} {'spread':>7} {'TF/s dense':>10} {'block':>7} {'elem':>7} "
        f"{'max err':>8} {'mask bytes':>11} {'vs dense':>8} {'vs flex':>8} {'% ideal':>8}",
    ]
    for case in report.cases:
        for i, row in enumerate(case.rows):
            lines.append(
                f"{case.name if i == 0 else '':17} {case.stats.rho if i == 0 else float('nan'):5.3f} {row.backend:11} "
                f"{row.ms:9.1f} {row.ms_min:9.1f} {100 * row.spread:6.0f}% {row.tflops_dense:10.3f} {row.tflops_block:7.3f} {row.tflops_element:7.3f} "
                f"{_num(row.max_error, '.1e'):>8} {_bytes(row.mask_bytes):>11} {_num(row.speedup_vs_dense, '.2f'):>8} "
                f"{_num(row.speedup_vs_flex, '.2f'):>8} {_num(row.pct_of_ideal, '.0f'):>8}"
            )
    lines = [line.replace("  nan", "     ") for line in lines]
    lines.append("")
    lines.append("ratios from medians, and in [brackets] from each backend's fastest repeat (least disturbed by other processes)")
    lines.append(
        f"goals: blocksparse faster than flex where rho >= {GOAL_RHO}; speed-up over its own full-mask time >= {GOAL_PCT_IDEAL:.0f}% of 1/(1-rho)"
    )
    for name, g in goals["masks"].items():
        flex = (
            f"x{g['speedup_vs_flex']:.2f} [x{g['speedup_vs_flex_best']:.2f}] vs flex"
            + (
                ""
                if g["rho"] < GOAL_RHO
                else f" ({'ok' if g['faster_than_flex'] else 'MISSED'} [{'ok' if g['faster_than_flex_best'] else 'MISSED'}])"
            )
            if "speedup_vs_flex" in g
            else "flex not timed"
        )
        if g["pct_of_ideal"] is None and g["pct_of_ideal_best"] is None:
            ideal = "all tiles skipped: no share of an infinite ideal (not judged)"
        else:
            ideal = (
                f"{_pct(g['pct_of_ideal'])} [{_pct(g['pct_of_ideal_best'])}] of ideal ({_verdict(g['ideal_ok'])} [{_verdict(g['ideal_ok_best'])}])"
            )
        lines.append(f"  {name:17} rho {g['rho']:.3f}  {flex:40}  {ideal}")
    return "\n".join(lines)


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _pct(value: float | None) -> str:
    return "    -" if value is None else f"{value:4.0f}%"


def _verdict(ok: bool | None) -> str:
    return "-" if ok is None else "ok" if ok else "MISSED"


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
