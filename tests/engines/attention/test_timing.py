"""Timing, sweep and benchmark plumbing on tiny shapes (the numbers themselves are the bench's job)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from engines.attention import build
from engines.attention.bench import check_goals, format_table, run_bench
from engines.attention.exports import timing_csv
from engines.attention.timing import CaseTiming, TimingSettings, time_cases, time_sweep
from engines.core import CancelToken, Cancelled, EngineError

TINY = TimingSettings(heads=2, dim=16, repeats=2, warmup=1, backends=("sdpa_dense", "blocksparse"))


def test_time_cases_reports_every_backend_with_its_full_mask_time() -> None:
    report = time_cases([("causal_document", {}, build("causal_document", 256))], TINY)
    (case,) = report.cases
    assert [r.backend for r in case.rows] == ["sdpa_dense", "blocksparse"]
    for row in case.rows:
        assert len(row.samples) == 2 and row.ms_min <= row.ms <= row.ms_max
        assert row.max_error < 1e-5 and row.full_ms > 0
        assert row.tflops_dense > row.tflops_block > row.tflops_element > 0
        assert row.pct_of_ideal == pytest.approx(100 * (row.full_ms / row.ms) / case.stats.ideal_speedup)
    dense, bs = case.rows
    assert bs.speedup_vs_dense == pytest.approx(dense.ms / bs.ms) and bs.speedup_vs_flex is None
    assert bs.mask_bytes < dense.mask_bytes
    assert report.note.startswith(("noisy", "steady"))
    assert timing_csv(report).count("\n") == 3


def test_settings_and_sizes_are_checked() -> None:
    with pytest.raises(EngineError, match="unknown backend"):
        time_cases([("causal", {}, build("causal", 64))], TimingSettings(backends=("turbo",)))
    with pytest.raises(EngineError, match="heads=0 is out of range"):
        time_cases([("causal", {}, build("causal", 64))], TimingSettings(heads=0))
    with pytest.raises(EngineError, match="GiB of q/k/v/out"):
        time_cases([("causal", {}, build("causal", 1 << 20))], TimingSettings(heads=64, dim=128))
    with pytest.raises(EngineError, match="same N_q and N_k"):
        time_cases([("causal", {}, build("causal", 64)), ("full", {}, build("full", 65))], TINY)


def test_timing_can_be_cancelled() -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        time_cases([("causal", {}, build("causal", 128))], TINY, cancel=token)


def test_sweep_spans_a_range_of_rho() -> None:
    sweep = time_sweep("causal_document", 512, None, TimingSettings(heads=2, dim=16, repeats=1, backends=("blocksparse",)))
    rhos = [p.rho for p in sweep.points]
    assert sweep.family == "causal_document" and len(rhos) == 5 and rhos == sorted(rhos) and rhos[-1] > rhos[0]
    assert sweep.full_ms["blocksparse"] > 0 and all(p.ms["blocksparse"] > 0 for p in sweep.points)


def test_bench_checks_the_goals_it_prints() -> None:
    """Goals are met or missed right at their thresholds (80% of ideal, faster than flex) and the table says which."""
    result = run_bench(["causal_document", "causal"], 512, None, TINY)
    goals = result.goals
    assert set(goals["masks"]) == {"causal_document", "causal"}
    sparse = [name for name, g in goals["masks"].items() if g["rho"] >= 0.5]
    assert sparse == ["causal_document"]
    assert "goals:" in result.table and "% ideal" in result.table

    # Hand-set numbers on either side of the thresholds, in a real report's cases.
    case = result.report.cases[0]
    bs = case.row("blocksparse")

    def made(name: str, rho: float, pct: float, pct_best: float, flex: float | None, flex_best: float | None) -> CaseTiming:
        row = replace(bs, pct_of_ideal=pct, pct_of_ideal_best=pct_best, speedup_vs_flex=flex, speedup_vs_flex_best=flex_best)
        return replace(case, name=name, stats=replace(case.stats, rho=rho), rows=(case.row("sdpa_dense"), row))

    report = replace(result.report, cases=(
        made("all_met", 0.75, 81.0, 81.0, 1.1, 1.1),
        made("median_missed", 0.75, 79.0, 81.0, 0.9, 1.1),
        made("not_sparse", 0.25, 79.0, 85.0, None, None),
    ))
    goals = check_goals(report)
    masks = goals["masks"]
    assert all(masks["all_met"][k] for k in ("ideal_ok", "ideal_ok_best", "faster_than_flex", "faster_than_flex_best"))
    assert (masks["median_missed"]["ideal_ok"], masks["median_missed"]["ideal_ok_best"]) == (False, True)
    assert (masks["median_missed"]["faster_than_flex"], masks["median_missed"]["faster_than_flex_best"]) == (False, True)
    assert "faster_than_flex" not in masks["not_sparse"] and not masks["not_sparse"]["ideal_ok"]
    assert {k: v for k, v in goals.items() if k != "masks"} == {
        "rho_threshold": 0.5,
        "faster_than_flex_on_sparse": False,
        "faster_than_flex_on_sparse_best": True,
        "ideal_on_sparse": False,
        "ideal_on_sparse_best": True,
        "ideal_on_all": False,
        "ideal_on_all_best": True,
    }
    lines = {line.split()[0]: line for line in format_table(report, goals).splitlines() if line.startswith("  ") and "of ideal" in line}
    assert "vs flex (ok [ok])" in lines["all_met"] and lines["all_met"].endswith("81% [  81%] of ideal (ok [ok])")
    assert "x0.90 [x1.10] vs flex (MISSED [ok])" in lines["median_missed"]
    assert lines["median_missed"].endswith("79% [  81%] of ideal (MISSED [ok])")
    assert "flex not timed" in lines["not_sparse"] and lines["not_sparse"].endswith("(MISSED [ok])")
