"""The GrabS panel's Bench tab: a folder of labelled rooms measured where Preferences ▸ Batch runs
says (here: two local worker processes), the engine's numbers in the table, a room without ground
truth named and left out, an empty folder or no ticked method as one sentence, Cancel ending it."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from engines.core.executor import ExecutorSpec
from engines.segmentation.bench import run_bench, write_scenes
from engines.segmentation.pointio import read_cloud, write_cloud
from tests.conftest import wait_until

pytestmark = pytest.mark.gl

TWO = ExecutorSpec("local", 2)


@pytest.fixture
def panel(qapp, qtbot, panel_ctx):
    from panels.segmentation import create_panel

    p = create_panel(replace(panel_ctx, executor=lambda: TWO))
    qtbot.addWidget(p)
    p.resize(1300, 800)
    p.show()
    qtbot.waitExposed(p)
    assert wait_until(qapp, lambda: p.scene is not None and not p.runner.busy, 60)
    yield p
    p.bench_runner.cancel()


def bench(qapp, p, timeout: float = 240) -> list:
    outcome: list = []
    p.bench_runner.finished.connect(outcome.append)
    p.bench_runner.failed.connect(lambda t: outcome.append(f"failed: {t}"))
    p.bench_runner.cancelled.connect(lambda: outcome.append("cancelled"))
    p.run_bench()
    assert wait_until(qapp, lambda: outcome and not p.bench_runner.busy, timeout), "the benchmark did not finish"
    return outcome


def test_the_bench_tab_measures_a_folder_on_the_preferred_executor(qapp, panel, tmp_path: Path) -> None:
    rooms = tmp_path / "rooms"
    write_scenes(rooms, 2, 3, points=(4000, 4000))
    cloud = read_cloud(rooms / "scene_000.ply")
    write_cloud(rooms / "unlabelled.ply", cloud.without_labels())  # a room without ground truth
    panel.open_folder_in(panel.bench, rooms)
    assert panel.tabs.currentWidget() is panel.bench and panel.bench.label.text() == "rooms: 3 rooms."
    panel.bench.methods["grabs"].setChecked(False)  # DBSCAN alone keeps the test short
    (result,) = bench(qapp, panel)
    here = run_bench(rooms, panel.params("grabs"), ("dbscan",))  # the engine in this process, the same thresholds
    assert result["methods"]["dbscan"]["ap50"] == here["methods"]["dbscan"]["ap50"] and result["scenes"] == 2
    table = panel.bench.table
    assert table.rowCount() == 1 and table.item(0, 0).text() == "DBSCAN"
    assert table.item(0, 1).text() == f"{here['methods']['dbscan']['ap50']:.3f}"
    assert panel.bench.failures.text() == "1 room left out: unlabelled.ply: unlabelled.ply has no ground-truth 'instance' field"
    assert panel.bench.controls.status.text() == "2 rooms measured on this machine, 2 workers"
    assert not panel.message.text


def test_bad_folders_and_choices_are_one_sentence_and_cancel_ends_it(qapp, panel, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    panel.bench.folderChosen.emit(str(tmp_path / "empty"))  # what the tab's folder dialog sends
    assert panel.message.text == "empty holds no .ply rooms (write some with 'workbench segmentation scenes')"
    assert panel.bench.folder is None and not panel.bench.controls.run_button.isEnabled()
    rooms = tmp_path / "rooms"
    write_scenes(rooms, 2, 3, points=(4000, 4000))
    panel.open_folder_in(panel.bench, rooms)
    for box in panel.bench.methods.values():
        box.setChecked(False)
    assert bench(qapp, panel) == ["failed: tick at least one method to benchmark"]
    panel.bench.methods["grabs"].setChecked(True)
    shutil.copy(rooms / "scene_000.ply", rooms / "scene_002.ply")  # more rooms than workers: one waits its turn
    panel.run_bench()
    assert wait_until(qapp, lambda: panel.bench_runner.busy, 10)
    panel.bench.controls.cancel_button.click()
    assert wait_until(qapp, lambda: not panel.ctx.jobs.running, 30), "the cancelled benchmark went on"
    assert panel.bench.controls.status.text() == "cancelled" and panel.bench.controls.run_button.isEnabled()
