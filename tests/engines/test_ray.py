"""Batch work on Ray gives what local processes give: one small planner suite and one small
segmentation benchmark both ways (the panels' two batch runs), a raising task counted while the
rest completes, a killed worker's task retried once, then counted.
One Ray for the module (starting it takes seconds)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from engines.core.executor import ExecutorSpec, connect, failure_count, run_tasks
from tests.conftest import PROCESSES

from .core.executor_tasks import die, square_or_raise

pytestmark = PROCESSES

ray = pytest.importorskip("ray")
TIMING = ("episode_s", "replan_ms")  # wall-clock fields: the only ones that may differ between runs


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    connect(None, workers=2)  # what --executor ray without --ray-address does
    yield
    ray.shutdown()


def test_suite_rows_are_the_same_on_ray_and_locally() -> None:
    from engines.planner.suite import SuiteParams, run_suite

    small = SuiteParams(n=1, planners=("idm", "constant_velocity"), commonroad=False, latency_replans=0)
    local = run_suite(small)  # one local worker: this process
    remote = run_suite(SuiteParams(**{**small.__dict__, "executor": "ray", "workers": 2}))
    assert len(local["rows"]) == 2 and not local["failures"]
    strip = [[{k: v for k, v in row.items() if k not in TIMING} for row in result["rows"]] for result in (local, remote)]
    assert strip[0] == strip[1]
    assert remote["procedural"]["idm"]["cls"] == local["procedural"]["idm"]["cls"]


def test_segmentation_bench_numbers_are_the_same_on_ray_and_locally(tmp_path: Path) -> None:
    from engines.segmentation.api import SegmentParams
    from engines.segmentation.bench import run_bench, write_scenes

    write_scenes(tmp_path, 2, 3, points=(4000, 4000))
    local = run_bench(tmp_path, SegmentParams(), methods=("dbscan",))
    remote = run_bench(tmp_path, SegmentParams(), methods=("dbscan",), executor=ExecutorSpec("ray", 2))
    assert local["scenes"] == remote["scenes"] == 2 and local["failed"] == remote["failed"] == []
    keys = ("ap", "ap50", "ap25", "confirmed_ap50", "gt_objects", "predictions")
    assert [remote["methods"]["dbscan"][k] for k in keys] == [local["methods"]["dbscan"][k] for k in keys]
    assert local["methods"]["dbscan"]["gt_objects"] > 0


def test_a_raising_task_is_counted_and_the_rest_completes() -> None:
    results = list(run_tasks(square_or_raise, list(range(6)), ExecutorSpec("ray", 2)))
    assert [r.value for r in results if r.ok] == [0, 1, 4, 25]
    assert failure_count(results) == 2
    assert results[3].error == "ValueError: three is refused" and "square_or_raise" in results[3].traceback


def test_a_killed_worker_is_retried_once_then_counted(tmp_path: Path) -> None:
    results = list(run_tasks(partial(die, str(tmp_path)), [0, 1, 2, 3], ExecutorSpec("ray", 2)))
    assert [r.value for r in results] == [0, None, 20, 30]  # item 2 died once and went again
    assert results[1].died and failure_count(results) == 1


def test_a_real_ray_head_passes_the_address_check() -> None:
    from engines.core import executor

    executor._check_reachable(ray.get_runtime_context().gcs_address)  # its GCS answers HTTP/2, as a cluster's head does
