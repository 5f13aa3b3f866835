"""The planner panel's folder suite on a local Ray (Preferences ▸ Batch runs: Ray cluster, no
address): the per-file CLS of a run on this machine, each file's progress in the folder row, where
it ran in its status line, and Cancel ending the run and the Ray task under way (a 30 s task gives
its CPU back within seconds). One test, one Ray (starting it takes 30-90 s on a busy machine)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import ray

from engines.core import Cancelled, CancelToken
from engines.core.executor import ExecutorSpec, run_tasks
from engines.planner.suite import SuiteParams, run_suite
from tests.conftest import PROCESSES, wait_until

from .test_panel import make_panel, shipped_folder

pytestmark = PROCESSES

FILES = ("FRA_Anglet-1_1_T-1.xml", "ZAM_Tutorial-1_2_T-1.xml")


def free_cpus_become(n: float, timeout: float) -> bool:
    """Ray's free CPUs reach ``n`` within ``timeout`` seconds (polled gently: each look asks Ray's GCS)."""
    deadline = time.monotonic() + timeout
    while ray.available_resources().get("CPU", 0.0) != n:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_the_folder_suite_on_a_local_ray_scores_as_locally_and_cancels(qapp, qtbot, panel_ctx, tmp_path: Path) -> None:
    folder = shipped_folder(tmp_path, *FILES)
    here = run_suite(SuiteParams(planners=("idm",), latency_replans=0, scenarios=str(folder)))  # this process
    panel = make_panel(qtbot, replace(panel_ctx, executor=lambda: ExecutorSpec("ray", 1)))
    panel.open_folder_in(panel.folder, folder)
    panel.controls.planner.setCurrentText("idm")
    controls = panel.folder.controls
    texts: list[str] = []
    results: list[dict] = []
    panel.folder_runner.progress.connect(lambda fraction, text: texts.append(controls.status.text()))  # what the row shows
    panel.folder_runner.finished.connect(results.append)
    try:
        panel.run_folder()
        assert wait_until(qapp, lambda: not panel.ctx.jobs.running, 240), "the Ray run did not finish"
        assert not panel.message.text, panel.message.text
        assert results[0]["per_file"] == here["per_file"] and not results[0]["failures"]
        assert [panel.folder.table.item(1, c).text() for c in (1, 2)] == ["100.0", "87.5"]
        assert texts[0] == "starting on a Ray started here, 1 worker…"
        assert [t.split(" ")[0] for t in texts if ": CLS " in t] == [Path(name).stem for name in FILES]  # each file as it came back
        assert controls.status.text() == "idm: mean CLS 78.1 / 87.5 (log replay / reactive), on a Ray started here, 1 worker"
        # Cancel while the first file's task runs on Ray: the job ends at once, reported as cancelled
        started = len(texts)
        panel.run_folder()
        assert wait_until(qapp, lambda: len(texts) > started, 30)
        controls.cancel_button.click()
        assert wait_until(qapp, lambda: not panel.ctx.jobs.running, 10), "the cancelled Ray run went on"
        assert controls.status.text() == "cancelled" and len(results) == 1 and controls.run_button.isEnabled()
        assert free_cpus_become(1.0, 30)
        # What that Cancel relies on: a cancelled batch stops its remote task, not only its wait for it
        cancel, outcome = CancelToken(), []

        def batch() -> None:
            try:
                list(run_tasks(time.sleep, [30.0], ExecutorSpec("ray", 1), cancel))
            except Cancelled:
                outcome.append("cancelled")

        thread = threading.Thread(target=batch)
        thread.start()
        assert free_cpus_become(0.0, 60), "the 30 s task did not start"
        cancel.cancel()
        thread.join(5)
        assert outcome == ["cancelled"]
        assert free_cpus_become(1.0, 10), "the cancelled task still holds its CPU"
    finally:
        ray.shutdown()
