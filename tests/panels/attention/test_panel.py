"""The attention panel with pytest-qt: analysis, live timing, edits, painting, bad input, exports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

from tests.conftest import wait_until


@pytest.fixture
def panel(qtbot, panel_ctx, qapp):
    from panels.attention import create_panel

    p = create_panel(panel_ctx)
    qtbot.addWidget(p)
    p.resize(1300, 850)
    p.show()
    p.controls.live.setChecked(False)  # tests start timings themselves
    assert wait_until(qapp, lambda: p.view is not None and not p.analysis.busy, 30)
    yield p
    p.shutdown()
    p.runner.cancel()
    wait_until(qapp, lambda: not p.runner.busy and not p.analysis.busy and not p.exporter.busy, 30)


def _analysed(qapp, panel, timeout: float = 30) -> bool:
    return wait_until(qapp, lambda: not panel.analysis_timer.isActive() and not panel.analysis.busy, timeout)


def test_default_view_readouts_and_heat_map(panel) -> None:
    view = panel.view
    assert view.name == "causal_document" and view.mask.n_q == 2048
    assert panel.controls.readouts["rho"].text().startswith(f"{view.stats.rho:.4f}")
    assert "KiB" in panel.controls.readouts["flashmask"].text() and "MiB" in panel.controls.readouts["dense"].text()
    assert panel.heatmap.image.image.shape == view.image.shape and panel.heatmap.overlay.isVisible()
    assert panel.vectors.rowCount() == 2048 and panel.vectors.columnCount() == 1


def test_run_default_times_and_sweeps(qapp, panel) -> None:
    done = []
    panel.runner.finished.connect(lambda r: done.append(r))
    assert panel.run_default()
    assert wait_until(qapp, lambda: done, 240), panel.message.text
    report, sweep = done[0]
    assert panel.timing_table.rowCount() == 2
    assert {panel.timing_table.item(i, 0).text() for i in range(2)} == {"sdpa_dense", "blocksparse"}
    assert float(panel.timing_table.item(0, 1).text()) > 0
    assert "Timings" in panel.noise_note.text() and ("noisy" in panel.noise_note.text() or "steady" in panel.noise_note.text())
    assert sweep is not None and len(sweep.points) >= 3 and panel.sweep_plot.listDataItems()


def test_preset_and_parameter_edits_update_the_view(qapp, panel) -> None:
    panel.controls.preset.setCurrentIndex(panel.controls.preset.findData("sliding_window"))
    assert _analysed(qapp, panel)
    assert panel.view.name == "sliding_window"
    rho_before = panel.view.stats.rho
    panel.controls.param_widgets["window"].setValue(64)
    assert _analysed(qapp, panel)
    assert panel.view.params["window"] == 64 and panel.view.stats.rho > rho_before


def test_bad_document_sizes_are_named(qapp, panel) -> None:
    w = panel.controls.param_widgets["docs"]
    w.setText("1, -2")
    w.editingFinished.emit()
    assert wait_until(qapp, lambda: "docs" in panel.message.text, 10)
    assert "positive sizes" in panel.message.text


def test_table_edit_with_an_inverted_interval_names_the_column_and_reverts(qapp, panel) -> None:
    panel.controls.preset.setCurrentIndex(panel.controls.preset.findData("qk_sparse"))
    assert _analysed(qapp, panel)
    before = panel.view.mask.indices.copy()
    index = panel.vectors.index(600, 0)  # LTS of a column inside the dropped range
    assert panel.vectors.setData(index, str(2047))  # LTS > LTE there
    assert wait_until(qapp, lambda: "column 600" in panel.message.text, 10), panel.message.text
    assert "LTS=2047 > LTE" in panel.message.text
    assert _analysed(qapp, panel)
    assert np.array_equal(panel.view.mask.indices, before) and panel.vectors.values[600, 0] == before[0, 0, 600, 0]


def test_table_edit_out_of_range_and_not_a_number(qapp, panel) -> None:
    assert panel.vectors.setData(panel.vectors.index(3, 0), "99999")
    assert wait_until(qapp, lambda: "outside the rows 0..2048" in panel.message.text, 10)
    assert not panel.vectors.setData(panel.vectors.index(3, 0), "abc")
    assert "not a row index" in panel.message.text


def test_valid_table_edit_becomes_a_custom_mask(qapp, panel) -> None:
    assert panel.vectors.setData(panel.vectors.index(0, 0), "100")
    assert wait_until(qapp, lambda: panel.view.name == "custom", 10)
    assert panel.view.mask.indices[0, 0, 0, 0] == 100 and panel.controls.preset.currentData() == "custom"


def test_painting_small_masks_and_refusing_three_gaps(qapp, qtbot, panel) -> None:
    panel.controls.n.setValue(16)
    panel.controls.preset.setCurrentIndex(panel.controls.preset.findData("full"))
    assert _analysed(qapp, panel)
    assert panel.controls.paint_mode.isEnabled()
    panel.controls.paint_mode.setCurrentIndex(panel.controls.paint_mode.findData("hide"))
    for row in (2, 6, 10):  # three separate hidden cells in column 5: not representable
        panel._on_paint(row, 5)
    assert wait_until(qapp, lambda: "column 5 has 3 masked gaps" in panel.message.text, 10), panel.message.text
    assert _analysed(qapp, panel)
    assert panel.view.name == "full" and panel.painted is not None and panel.painted.all()
    panel._on_paint(3, 7)
    assert wait_until(qapp, lambda: panel.view.name == "painted", 10)
    assert not panel.view.dense[3, 7] and panel.view.dense.sum() == 16 * 16 - 1


def test_painting_by_mouse_on_the_heat_map(qapp, qtbot, panel) -> None:
    panel.controls.n.setValue(8)
    panel.controls.preset.setCurrentIndex(panel.controls.preset.findData("full"))
    assert _analysed(qapp, panel)
    panel.controls.paint_mode.setCurrentIndex(panel.controls.paint_mode.findData("hide"))
    vb = panel.heatmap.plot.vb
    point = panel.heatmap.mapFromScene(vb.mapViewToScene(QPointF(2.5, 4.5)))  # column 2, row 4
    qtbot.mouseClick(panel.heatmap.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert wait_until(qapp, lambda: panel.view.name == "painted", 10), panel.message.text
    assert not panel.view.dense[4, 2]


def test_huge_n_is_drawn_downsampled_without_painting(qapp, panel) -> None:
    panel.controls.live.setChecked(True)
    panel.controls.n.setValue(1_000_000)
    panel.controls.preset.setCurrentIndex(panel.controls.preset.findData("causal"))
    assert _analysed(qapp, panel, 60)
    assert panel.view.mask.n_q == 1_000_000
    assert panel.view.image.shape == (512, 512) and panel.view.dense is None
    assert not panel.controls.paint_mode.isEnabled()
    assert "live timing stops at N=16384" in panel.controls.timing.status.text() and not panel.timing_timer.isActive()


def test_compose_intersection(qapp, panel) -> None:
    panel.controls.n.setValue(512)
    panel.controls.compose_with.setCurrentIndex(panel.controls.compose_with.findData("sliding_window"))
    panel.controls.compose_on.setChecked(True)
    assert _analysed(qapp, panel)
    assert "∩" in panel.view.name and panel.view.mask.causal


def test_exports_write_every_kind(qapp, panel, tmp_path: Path) -> None:
    panel.controls.n.setValue(256)
    assert _analysed(qapp, panel)
    done = []
    panel.runner.finished.connect(lambda r: done.append(r))
    panel.controls.repeats.setValue(1)
    panel.controls.with_sweep.setChecked(False)
    assert panel.start_timing()
    assert wait_until(qapp, lambda: done, 120)
    for kind, name in (
        ("npy", "m.flashmask.npy"),
        ("json", "m.flashmask.json"),
        ("png", "m.png"),
        ("csv", "t.csv"),
        ("paddle", "p.py"),
        ("flex", "f.py"),
    ):
        assert panel.export_to(kind, tmp_path / name)
        assert wait_until(qapp, lambda: not panel.exporter.busy, 30)
        assert (tmp_path / name).stat().st_size > 0, kind
    assert json.loads((tmp_path / "m.flashmask.json").read_text())["n_q"] == 256
    assert np.load(tmp_path / "m.flashmask.npy").shape == (1, 1, 256, 1)
    assert (tmp_path / "t.csv").read_text().startswith("mask,rho")


def test_csv_export_before_any_timing_says_so(panel, tmp_path: Path) -> None:
    assert not panel.export_to("csv", tmp_path / "t.csv")
    assert "Nothing timed yet" in panel.message.text


def test_open_vectors_and_a_bad_file(qapp, panel, tmp_path: Path) -> None:
    four = tmp_path / "four.flashmask.npy"
    np.save(four, np.array([[8, 8, 0, 0]] * 8, dtype=np.int32))
    panel.open_path(four)
    assert wait_until(qapp, lambda: panel.view.name == "custom" and panel.view.mask.c == 4, 10), panel.message.text


def test_state_round_trip(qapp, qtbot, panel_ctx, panel) -> None:
    panel.controls.preset.setCurrentIndex(panel.controls.preset.findData("global_sliding"))
    panel.controls.n.setValue(4096)
    panel.controls.tile.setValue(64)
    assert _analysed(qapp, panel)
    state = json.loads(json.dumps(panel.state()))
    from panels.attention import create_panel

    other = create_panel(panel_ctx)
    qtbot.addWidget(other)
    other.controls.live.setChecked(False)
    other.restore(state)
    assert wait_until(qapp, lambda: other.view is not None and other.view.name == "global_sliding" and not other.analysis.busy, 30)
    assert other.view.mask.n_q == 4096 and other.view.stats.block_q == 64
    assert other.state()["params"] == state["params"]
    other.shutdown()


def test_the_shipped_sample_opens(qapp, panel) -> None:
    from engines.core import resource_path

    panel.open_path(resource_path("attention", "samples", "prefix_document_512.flashmask.json"))
    assert wait_until(qapp, lambda: panel.view.name == "custom" and panel.view.mask.n_q == 512, 10), panel.message.text
    assert not panel.view.mask.causal and panel.view.mask.c == 2


def test_dragging_a_document_boundary_edits_the_sizes(qapp, panel) -> None:
    panel.controls.n.setValue(1000)
    assert _analysed(qapp, panel)
    assert panel.view.boundaries == (250, 500, 750) and len(panel.heatmap._lines) == 3
    line = panel.heatmap._lines[0]
    line.setValue(100)
    line.sigPositionChangeFinished.emit(line)
    assert _analysed(qapp, panel)
    assert panel.controls.param_widgets["docs"].text() == "100, 400, 250, 250"
    assert panel.view.boundaries == (100, 500, 750)


@pytest.mark.parametrize("preset, answer", [("causal_blockwise", "Causal"), ("document", "Bidirectional")])
def test_a_c2_npy_export_reopens_after_asking_its_mode(qapp, panel, tmp_path: Path, preset: str, answer: str) -> None:
    """C=2 vectors are [LTS, LTE] or [LTS, UTE]: the panel's own .npy export of a C=2 mask comes
    back once the user says which, and Cancel opens nothing."""
    panel.controls.preset.setCurrentIndex(panel.controls.preset.findData(preset))
    panel.controls.n.setValue(256)
    assert _analysed(qapp, panel)
    exported = panel.view.mask
    path = tmp_path / "doc.flashmask.npy"
    assert panel.export_to("npy", path)
    assert wait_until(qapp, lambda: not panel.exporter.busy and path.exists(), 30)
    panel.open_path(path)
    box = panel.mode_question
    assert box.isVisible() and "C=2" in box.text()
    next(b for b in box.buttons() if b.text() == answer).click()
    assert wait_until(qapp, lambda: panel.view.name == "custom" and not panel.analysis.busy, 10), panel.message.text
    assert exported.c == 2 and panel.view.mask.causal is exported.causal
    assert np.array_equal(panel.view.mask.indices, exported.indices)
    panel.open_path(path)
    view = panel.view
    next(b for b in panel.mode_question.buttons() if "Cancel" in b.text()).click()
    assert _analysed(qapp, panel) and panel.view is view


def test_an_edit_error_outlives_the_live_timing_it_does_not_start(qapp, panel) -> None:
    """Live timing of the last valid mask starts by itself after an edit; it must not wipe the
    sentence about the bad edit."""
    panel.controls.live.setChecked(True)
    panel.controls.preset.setCurrentIndex(panel.controls.preset.findData("sliding_window"))
    panel.controls.n.setValue(512)
    assert _analysed(qapp, panel)
    panel.controls.param_widgets["window"].setMaximum(100000)
    panel.controls.param_widgets["window"].setValue(5000)
    assert wait_until(qapp, lambda: "window" in panel.message.text, 10)
    started = []
    panel.runner.started.connect(lambda *a: started.append(a))
    assert wait_until(qapp, lambda: started and not panel.runner.busy, 120)
    assert "window" in panel.message.text


def test_a_failed_open_at_start_up_stays_readable(qapp, qtbot, panel_ctx, tmp_path: Path) -> None:
    """`workbench gui bad.flashmask.json`: the file is opened before the panel's first view is
    computed; the default mask then shows, and the sentence about the file stays."""
    from panels.attention import create_panel

    bad = tmp_path / "bad.flashmask.json"
    bad.write_text("{}")
    p = create_panel(panel_ctx)
    qtbot.addWidget(p)
    p.controls.live.setChecked(False)
    p.open_path(bad)
    p.show()
    assert wait_until(qapp, lambda: p.view is not None and not p.analysis.busy, 30)
    assert "not a FlashMask JSON file" in p.message.text
    p.shutdown()


def test_a_failing_first_view_is_tried_once(qapp, qtbot, panel_ctx, monkeypatch) -> None:
    """If the first view itself fails, its sentence stays and the panel does not retry every second."""
    import engines.attention.view as view_module
    from engines.core.errors import EngineError
    from panels.attention import create_panel

    calls = []

    def refuse(request, tile):
        calls.append(request)
        raise EngineError("the mask cannot be analysed")

    monkeypatch.setattr(view_module, "analyze", refuse)
    p = create_panel(panel_ctx)
    qtbot.addWidget(p)
    p.controls.live.setChecked(False)
    p.show()
    assert wait_until(qapp, lambda: len(calls) == 1 and not p.analysis.busy, 30)
    qtbot.wait(3000)  # three first-view delays
    assert len(calls) == 1
    assert "cannot be analysed" in p.message.text
    p.shutdown()


def test_a_session_error_is_not_wiped_by_the_analysis_restore_starts(qapp, panel) -> None:
    panel.restore({"n": "abc"})
    assert "Could not restore the attention panel" in panel.message.text
    assert _analysed(qapp, panel)
    assert "Could not restore the attention panel" in panel.message.text


VALID_SESSION = {
    "source": "preset",
    "preset": "sliding_window",
    "n": 1024,
    "params": {"window": 100},
    "compose": {"on": False, "with": "causal", "operation": "union"},
    "tile": 64,
    "overlay": False,
    "timing": {"backends": ["flex", "blocksparse"], "heads": 4, "dim": 32, "repeats": 5, "live": False, "sweep": False},
}


def test_a_session_applies_every_setting_or_none(qapp, panel) -> None:
    panel.restore(VALID_SESSION)
    assert _analysed(qapp, panel)
    assert panel.view.name == "sliding_window" and panel.view.params["window"] == 100 and panel.view.mask.n_q == 1024
    assert panel.view.stats.block_q == 64 and not panel.controls.overlay.isChecked()
    assert panel.controls.compose_with.currentData() == "causal" and panel.controls.compose_op.currentData() == "union"
    assert [n for n, cb in panel.controls.backend_boxes.items() if cb.isChecked()] == ["flex", "blocksparse"]
    assert (panel.controls.heads.value(), panel.controls.dim.value(), panel.controls.repeats.value()) == (4, 32, 5)
    assert not panel.controls.live.isChecked() and not panel.controls.with_sweep.isChecked()
    assert {k: v for k, v in panel.state().items() if k in VALID_SESSION} == VALID_SESSION
    before = panel.state()
    panel.restore({**before, "n": 512, "overlay": "false"})  # a good change, then a bad value
    assert panel.state() == before
    assert panel.message.text == "Could not restore the attention panel: overlay must be true or false, not 'false'"
    assert _analysed(qapp, panel) and panel.view.mask.n_q == 1024


@pytest.mark.parametrize(
    "bad, said",
    [
        ({"n": 12.7}, "n must be a whole number from 1 to 1048576, not 12.7"),
        ({"n": "12"}, "n must be a whole number from 1 to 1048576, not '12'"),
        ({"n": 10**30}, "n must be a whole number from 1 to 1048576, not 1"),
        ({"overlay": "false"}, "overlay must be true or false, not 'false'"),
        ({"tile": 5000}, "tile must be a whole number from 1 to 4096, not 5000"),
        ({"preset": "nonsense"}, "unknown preset 'nonsense'"),
        ({"source": "elsewhere"}, "unknown source 'elsewhere'"),
        ({"params": {"docs": 5}}, "parameter docs must be text, not 5"),
        ({"params": {"docs": "1, -2"}}, "docs"),
        ({"params": {"window": 3}}, "unknown causal_document parameter 'window'"),
        ({"params": "docs"}, "params must be an object"),
        ({"preset": "sliding_window", "params": {"window": 2.5}}, "parameter window must be a whole number"),
        ({"compose": {"on": "yes"}}, "compose on must be true or false, not 'yes'"),
        ({"compose": {"with": "nope"}}, "unknown compose with 'nope'"),
        ({"compose": {"operation": "xor"}}, "unknown compose operation 'xor' (choose intersection, union)"),
        ({"compose": [1]}, "compose must be an object"),
        ({"timing": {"heads": 0}}, "timing heads must be a whole number from 1 to 64, not 0"),
        ({"timing": {"repeats": 3.0}}, "timing repeats must be a whole number from 1 to 50, not 3.0"),
        ({"timing": {"backends": ["cuda"]}}, "unknown timing backend 'cuda'"),
        ({"timing": {"backends": "flex"}}, "timing backends must be a list"),
        ({"timing": {"live": "no"}}, "timing live must be true or false, not 'no'"),
        ({"source": "vectors", "vectors": {"indices": [[1, 2], [3]], "causal": False}}, "vectors"),
        ({"source": "vectors", "vectors": {"indices": [[0], [0]], "causal": "false"}}, "vectors causal must be true or false"),
        ({"source": "vectors", "vectors": {"indices": [[5], [5]], "causal": True}}, "vectors"),
        ({"source": "dense", "painted": [[1, 2], [0, 1]]}, "painted"),
    ],
)
def test_a_bad_session_value_is_one_sentence_and_changes_nothing(qapp, panel, bad: dict, said: str) -> None:
    """Each case also carries a good change (N or the tile size): it must not be applied either."""
    before = panel.state()
    good = {"tile": 64} if "n" in bad else {"n": 1024}
    panel.restore({**before, **good, **bad})
    assert panel.message.text.startswith("Could not restore the attention panel: "), panel.message.text
    assert said in panel.message.text, panel.message.text
    assert panel.state() == before
    assert _analysed(qapp, panel) and panel.view.mask.n_q == 2048 and panel.view.stats.block_q == 128


def test_a_session_that_is_not_an_object_is_one_sentence(qapp, panel) -> None:
    before = panel.state()
    panel.restore(["n", 1024])
    assert panel.message.text == "Could not restore the attention panel: its settings must be an object of name: value, not ['n', 1024]"
    assert panel.state() == before
