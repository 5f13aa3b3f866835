"""Timing, sweep and benchmark plumbing on tiny shapes (the numbers themselves are the bench's job)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engines.attention import build
from engines.attention.bench import check_goals, format_table, run_bench
from engines.attention.export import timing_csv
from engines.attention.timing import CaseTiming, TimingSettings, time_cases, time_sweep
from engines.core import Cancelled, CancelToken, EngineError

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


def test_a_timing_run_builds_each_plan_once(monkeypatch) -> None:
    """Every library mask timed in rotation: the plan cache must hold the whole rotation (an
    8-entry LRU rebuilt every plan on every call of the benchmark)."""
    from engines.attention import MASKS
    from engines.attention.backends import blocksparse
    from engines.attention.mask_cache import MaskCache

    shipped = blocksparse.PLANS  # the same settings, empty
    monkeypatch.setattr(blocksparse, "PLANS", MaskCache(shipped.size, shipped.budget_bytes, shipped.weigh))
    built: list[int] = []
    make_plan = blocksparse.make_plan
    monkeypatch.setattr(blocksparse, "make_plan", lambda *a, **kw: built.append(1) or make_plan(*a, **kw))
    settings = replace(TINY, backends=("blocksparse",), repeats=3)
    time_cases([(name, {}, build(name, 64)) for name in MASKS], settings)
    assert len(built) == len(MASKS)


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


def test_a_cancel_during_a_timed_call_reaches_the_kernel(monkeypatch) -> None:
    from engines.attention.backends import blocksparse

    token, calls = CancelToken(), []
    run = blocksparse.flash_forward
    monkeypatch.setattr(blocksparse, "flash_forward", lambda *a: calls.append(1) or run(*a))
    settings = replace(TINY, backends=("blocksparse",), warmup=0, repeats=1)
    progress = lambda fraction, text: token.cancel() if "causal" in text else None  # noqa: E731
    with pytest.raises(Cancelled):
        time_cases([("causal", {}, build("causal", 512))], settings, progress=progress, cancel=token)
    assert calls == []  # cancelled after the check before the call: the call itself stopped


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

    report = replace(
        result.report,
        cases=(
            made("all_met", 0.75, 81.0, 81.0, 1.1, 1.1),
            made("median_missed", 0.75, 79.0, 81.0, 0.9, 1.1),
            made("not_sparse", 0.25, 79.0, 85.0, None, None),
        ),
    )
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


def _hidden_mask(n: int = 128):
    """A mask where no query sees any key: every tile is skipped, rho == 1, the ideal is infinite."""
    import numpy as np

    from engines.attention import make_mask

    return make_mask(np.stack([np.zeros(n), np.full(n, n)], axis=1), False, n)


def test_share_of_an_infinite_ideal_is_none_not_zero() -> None:
    """rho = 1 once read "0% of ideal"; the share of an infinite ideal is undefined."""
    report = time_cases([("hidden", {}, _hidden_mask())], TINY)
    (case,) = report.cases
    assert case.stats.rho == 1.0
    for row in case.rows:
        assert row.pct_of_ideal is None and row.pct_of_ideal_best is None
        assert row.ms > 0 and row.full_ms > 0 and row.speedup_vs_dense is not None


def test_timing_csv_leaves_the_share_of_an_infinite_ideal_empty() -> None:
    import csv
    import io

    report = time_cases([("causal", {}, build("causal", 128)), ("hidden", {}, _hidden_mask())], TINY)
    rows = list(csv.DictReader(io.StringIO(timing_csv(report))))
    assert [r["mask"] for r in rows] == ["causal", "causal", "hidden", "hidden"]
    assert all(r["pct_of_ideal"] == "" for r in rows if r["mask"] == "hidden")
    assert all(float(r["pct_of_ideal"]) > 0 for r in rows if r["mask"] == "causal")


def test_goals_skip_a_mask_with_every_tile_skipped() -> None:
    """A rho = 1 mask neither meets nor misses the ideal goal: check_goals and the table cope, and
    adding it to a report leaves every verdict as it was."""
    report = time_cases([("causal", {}, build("causal", 128)), ("hidden", {}, _hidden_mask())], TINY)
    case, hidden = report.cases
    bs = case.row("blocksparse")

    def made(name: str, pct: float, pct_best: float) -> CaseTiming:
        row = replace(bs, pct_of_ideal=pct, pct_of_ideal_best=pct_best, speedup_vs_flex=1.1, speedup_vs_flex_best=1.1)
        return replace(case, name=name, stats=replace(case.stats, rho=0.75), rows=(case.row("sdpa_dense"), row))

    hidden = replace(hidden, rows=tuple(replace(r, speedup_vs_flex=1.1, speedup_vs_flex_best=1.1) for r in hidden.rows))
    for cases in ((made("met", 81.0, 81.0),), (made("met", 81.0, 81.0), made("missed", 79.0, 81.0))):
        without = check_goals(replace(report, cases=cases))
        with_hidden = check_goals(replace(report, cases=(*cases, hidden)))
        assert {k: v for k, v in with_hidden.items() if k != "masks"} == {k: v for k, v in without.items() if k != "masks"}
        entry = with_hidden["masks"]["hidden"]
        assert entry["rho"] == 1.0 and entry["pct_of_ideal"] is None and entry["pct_of_ideal_best"] is None
        assert entry["ideal_ok"] is None and entry["ideal_ok_best"] is None and entry["faster_than_flex"] is True
        table = format_table(replace(report, cases=(*cases, hidden)), with_hidden)
        (line,) = [line for line in table.splitlines() if line.startswith("  hidden ")]
        assert "all tiles skipped" in line and "MISSED" not in line
    assert without["ideal_on_sparse"] is False and without["ideal_on_sparse_best"] is True

    alone = check_goals(replace(report, cases=(hidden,)))
    assert alone["ideal_on_sparse"] is None and alone["ideal_on_all"] is None and alone["faster_than_flex_on_sparse"] is True
