"""Timing, sweep and benchmark plumbing on tiny shapes (the numbers themselves are the bench's job)."""
from __future__ import annotations

import pytest

from engines.attention import build
from engines.attention.bench import check_goals, format_table, run_bench
from engines.attention.exports import timing_csv
from engines.attention.timing import TimingSettings, time_cases, time_sweep
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
    result = run_bench(["causal_document", "causal"], 512, None, TINY)
    goals = result.goals
    assert set(goals["masks"]) == {"causal_document", "causal"}
    sparse = [name for name, g in goals["masks"].items() if g["rho"] >= 0.5]
    assert sparse == ["causal_document"]
    assert goals["ideal_on_sparse"] == all(goals["masks"][n]["ideal_ok"] for n in sparse)
    assert "goals:" in result.table and "% ideal" in result.table
    assert check_goals(result.report) == goals and format_table(result.report, goals) == result.table
