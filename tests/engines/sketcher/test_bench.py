"""`sketcher bench` on the executor: the filled and the hand-drawn targets' searches are independent
tasks, so two worker processes give the numbers one process gives, and a failing search is counted
while the rest of the benchmark goes on."""

from __future__ import annotations

from typing import Any

import pytest

from engines.core.executor import ExecutorSpec
from engines.sketcher import bench
from engines.sketcher.bench import BenchParams, run_bench, table
from tests.conftest import PROCESSES

SMALL = BenchParams(targets=2, primitives=(1, 2), budget=60, beam=4, proposals=4, sketch_targets=2, seed=7)


def _without_clocks(value: Any) -> Any:
    """The result without its wall-clock fields (the only ones a worker count may change)."""
    if isinstance(value, dict):
        return {k: _without_clocks(v) for k, v in value.items() if "seconds" not in k}
    if isinstance(value, list):
        return [_without_clocks(v) for v in value]
    return value


@PROCESSES
def test_two_workers_give_the_numbers_one_gives_sketches_included() -> None:
    one = run_bench(SMALL, executor=ExecutorSpec("local", 1))
    two = run_bench(SMALL, executor=ExecutorSpec("local", 2))
    assert one["failures"] == two["failures"] == 0
    assert set(one["sketch"]) == {"model", "random"} and sum(one["sketch"][m]["targets"] for m in ("model", "random")) > 0
    assert _without_clocks(two) == _without_clocks(one)


def test_a_failing_sketch_search_is_counted_and_the_rest_is_scored(monkeypatch: pytest.MonkeyPatch) -> None:
    search = bench._sketch_search

    def fails_for_target_0(task, **kwargs):
        if task[1] == 0:
            raise RuntimeError("a search that breaks")
        return search(task, **kwargs)

    monkeypatch.setattr(bench, "_sketch_search", fails_for_target_0)
    result = run_bench(SMALL, executor=ExecutorSpec("local", 1))
    assert result["failures"] == 2  # target 0 of the sketches, for each proposer
    assert all(result["sketch"][m]["targets"] <= 1 for m in ("model", "random"))
    assert result["overall"]["model"]["targets"] == 4  # the filled targets all scored
    assert "2 search(es) failed" in table(result)
