"""The local executor: results in item order for any worker count, a raising task is reported and
counted while the rest completes, a killed worker's task goes again once, then counts as failed.
(The same behaviour on Ray: tests/engines/test_ray.py.)"""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path

import pytest

from engines.core import Cancelled, CancelToken, EngineError
from engines.core.executor import ExecutorSpec, LocalExecutor, current_cancel, failure_count, run_tasks

from .executor_tasks import die, square_or_raise


def test_results_are_the_same_in_order_for_any_worker_count(caplog) -> None:
    items = list(range(7))
    runs = {w: list(run_tasks(square_or_raise, items, ExecutorSpec("local", w))) for w in (1, 2)}
    for results in runs.values():
        assert [r.index for r in results] == items
        assert [r.value for r in results if r.ok] == [0, 1, 4, 25, 36]
        assert failure_count(results) == 2
        bug, mistake = results[3], results[4]
        assert bug.error == "ValueError: three is refused" and bug.crash and "square_or_raise" in bug.traceback
        assert mistake.error == "four is a user's mistake" and not mistake.crash
    assert [(r.value, r.error) for r in runs[1]] == [(r.value, r.error) for r in runs[2]]
    assert "task 3 (3) failed: ValueError: three is refused" in caplog.text  # item and traceback in the log


def test_unordered_results_cover_every_item() -> None:
    results = list(run_tasks(square_or_raise, [5, 6, 7], ExecutorSpec("local", 2), ordered=False))
    assert sorted(r.value for r in results) == [25, 36, 49]


def test_a_killed_worker_is_retried_once_then_counted(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.WARNING)
    results = list(LocalExecutor(2).map(partial(die, str(tmp_path)), [0, 1, 2, 3]))
    assert [r.index for r in results] == [0, 1, 2, 3]
    assert [r.value for r in results] == [0, None, 20, 30]  # item 2 died once and went again
    assert results[1].died and results[1].crash and not results[2].died
    assert failure_count(results) == 1
    assert "running it again, alone" in caplog.text


def test_inline_runs_see_the_batch_cancel_token() -> None:
    cancel = CancelToken()
    seen = []

    def task(x: int) -> int:
        seen.append(current_cancel() is cancel)
        if x == 1:
            cancel.cancel()
        return x

    with pytest.raises(Cancelled):
        list(run_tasks(task, [0, 1, 2], ExecutorSpec("local", 1), cancel))
    assert seen == [True, True]  # the third item never started


def test_bad_specs_are_user_errors() -> None:
    with pytest.raises(EngineError, match="unknown executor"):
        ExecutorSpec("dask").check()
    with pytest.raises(EngineError, match="at least 1"):
        ExecutorSpec("local", 0).check()
    with pytest.raises(EngineError, match="goes with --executor ray"):
        ExecutorSpec("local", 2, "auto").check()
