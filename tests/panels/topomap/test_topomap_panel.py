"""The topomap panel with pytest-qt: example run, maps, scrubber, unit detail, training, errors, exports."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import wait_until


def finish(qapp, panel, runner=None, timeout: float = 240.0) -> list[str]:
    """Wait for the panel's current job; return what happened."""
    runner = runner or panel.runner
    outcome: list[str] = []
    runner.finished.connect(lambda r: outcome.append("finished"))
    runner.failed.connect(lambda text: outcome.append(f"failed: {text}"))
    runner.errored.connect(lambda text, tb: outcome.append(f"error: {text}\n{tb}"))
    assert wait_until(qapp, lambda: outcome and not runner.busy, timeout), "the job did not finish"
    return outcome


@pytest.fixture
def panel(qapp, qtbot, panel_ctx):
    from panels.topomap import create_panel

    widget = create_panel(panel_ctx)
    qtbot.addWidget(widget)
    widget.resize(1400, 900)
    widget.show()
    # a new panel opens on the shipped example run
    assert wait_until(qapp, lambda: widget.view is not None and not widget.runner.busy, 60)
    return widget


@pytest.fixture(scope="module")
def example():
    """The example run, computed once by the engine (the first test also loads it through the panel)."""
    from engines.topomap.api import load_example

    return load_example()


@pytest.fixture
def loaded(qtbot, panel, example):
    panel._on_loaded(example)
    qtbot.waitExposed(panel)
    return panel


def test_run_default_loads_the_example_in_the_background(qapp, panel) -> None:
    assert panel.run_default()
    assert panel.runner.busy
    assert finish(qapp, panel) == ["finished"]
    assert panel.view is not None and panel.view.params.method == "cbsom"


def test_the_example_run_shows_maps_curves_and_runs(loaded) -> None:
    panel = loaded
    view = panel.view
    assert view is not None and [panel.controls.layer.itemText(i) for i in range(panel.controls.layer.count())] == list(view.layer_names)
    assert panel.scrubber.maximum() == len(view.snapshots) - 1 == panel.scrubber.value()
    image = panel.map.image.image
    assert image is not None and image.shape[:2] == (panel.current_layer().side,) * 2
    assert image.std() > 0  # not one flat colour
    assert "accuracy" in panel.controls.summary.text()
    assert len(panel.smooth_plot.listDataItems()) >= 3  # band edges, shuffled mean, curve
    assert panel.scatter_plot.listDataItems()  # at least this run's star
    assert panel.kernels.pixmap() is not None and not panel.kernels.pixmap().isNull()


def test_scrubber_replays_map_formation(loaded) -> None:
    panel = loaded
    final = panel.map.image.image.copy()
    panel.scrubber.setValue(0)
    assert panel.epoch_label.text().startswith("epoch 0/")
    assert not np.array_equal(panel.map.image.image, final)
    panel.play.setChecked(True)
    assert panel.play_timer.isActive()
    panel.play.setChecked(False)


def test_orientation_map_draws_pinwheels_and_clicking_a_unit_shows_its_detail(qtbot, loaded) -> None:
    panel = loaded
    panel.controls.layer.setCurrentIndex(0)
    panel.controls.kind.setCurrentIndex(panel.controls.kind.findData("orientation"))
    layer = panel.current_layer()
    assert len(panel.map.pinwheels.data) == len(layer.pinwheels)
    assert "Pinwheels" in panel.legend.text()
    panel.map.unitClicked.emit(3)
    assert panel.selected == 3
    assert "unit 3" in panel.unit_title.text()
    assert len(panel.tuning_plot.listDataItems()) == len(panel.view.frequencies)
    assert panel.top.pixmap() is not None and not panel.top.pixmap().isNull()
    assert "Neighbours" in panel.neighbours.text()
    panel.controls.kind.setCurrentIndex(panel.controls.kind.findData("dprime"))
    panel.controls.klass.setCurrentIndex(2)
    assert panel.image_key() == "dprime/2" and "class 2" in panel.legend.text()


def test_a_real_click_on_the_map_selects_the_unit_under_the_mouse(qtbot, loaded) -> None:
    from PySide6.QtCore import QPoint, QPointF, Qt

    panel = loaded
    panel.controls.layer.setCurrentIndex(0)
    side = panel.current_layer().side
    row, col = side - 1, 0  # bottom-left unit: row 0 is drawn on top
    target = panel.map.mapFromScene(panel.map.image.mapToScene(QPointF(col + 0.5, row + 0.5)))
    qtbot.mouseClick(panel.map.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(target.x(), target.y()))
    assert panel.selected == row * side + col


def test_training_streams_live_updates_then_shows_the_new_run(qapp, panel, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(panel.ctx.settings, "data_folder", lambda name: tmp_path)
    partials: list = []
    panel.runner.partial.connect(partials.append)
    panel.controls.method.setCurrentIndex(panel.controls.method.findData("absom"))
    panel.controls.epochs.setValue(2)
    panel.controls.widths.setText("4,9")
    panel.controls.run.run_button.click()
    assert panel.controls.run.cancel_button.isEnabled()
    assert finish(qapp, panel) == ["finished"]
    assert len(partials) == 2 and partials[-1].snapshot is not None
    assert panel.view.params.method == "absom" and panel.view.params.widths == (4, 9)
    assert (tmp_path / "absom-digits-seed0-e2.topomap.pt").exists()
    assert "AB-SOM" in panel.controls.summary.text()


def test_non_square_widths_are_a_panel_message(qapp, panel) -> None:
    panel.controls.widths.setText("16,30")
    panel.controls.run.run_button.click()
    outcome = finish(qapp, panel)
    assert outcome[0].startswith("failed") and "not a square number" in panel.message.text


def test_corrupt_run_and_comparison_files_are_panel_messages(qapp, panel, tmp_path: Path) -> None:
    bad = tmp_path / "bad.topomap.pt"
    bad.write_bytes(b"not a run at all")
    panel.open_path(bad)
    assert finish(qapp, panel)[0].startswith("failed")
    assert "not a topomap run file" in panel.message.text
    cmp = tmp_path / "bad.topomap.json"
    cmp.write_text("{ nope")
    panel.open_path(cmp)
    assert finish(qapp, panel)[0].startswith("failed")
    assert "bad.topomap.json is not valid JSON" in panel.message.text


def test_exports_write_every_file(qapp, loaded, tmp_path: Path) -> None:
    panel = loaded
    for what, name in (("npz", "maps.npz"), ("csv", "units.csv"), ("weights", "weights.npz"), ("run", "copy.topomap.pt"), ("png", "pngs")):
        panel.export(what, tmp_path / name)
        assert finish(qapp, panel, panel.exporter) == ["finished"], what
    assert (tmp_path / "maps.npz").stat().st_size > 0 and (tmp_path / "units.csv").read_text().startswith("layer,unit")
    assert any(p.name.endswith("orientation.png") for p in (tmp_path / "pngs").iterdir())
    assert "Wrote" in panel.message.text
    assert len(panel.export_actions()) == 5


def test_state_round_trip(qapp, panel, panel_ctx) -> None:
    from panels.topomap import create_panel

    panel.controls.method.setCurrentIndex(panel.controls.method.findData("topoloss"))
    panel.controls.epochs.setValue(12)
    panel.controls.widths.setText("16,36")
    panel.controls.tau.setValue(2.5)
    panel.controls.kind.setCurrentIndex(panel.controls.kind.findData("frequency"))
    state = panel.state()
    assert state["run"]  # the example run the panel opened on
    other = create_panel(panel_ctx)
    other.restore(state)  # replaces its own start-up load with the session's run
    assert wait_until(qapp, lambda: other.view is not None and not other.runner.busy, 60)
    assert other.state() == state
    other.restore({"method": "magic"})
    assert "invalid" in other.message.text


def test_the_window_routes_run_and_comparison_files_to_this_panel(main_window) -> None:
    assert main_window.panel_for(Path("some/run.topomap.pt")) == "topomap"
    assert main_window.panel_for(Path("cmp.topomap.json")) == "topomap"


def test_widths_with_an_empty_item_are_a_panel_message(qapp, panel, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(panel.ctx.settings, "data_folder", lambda name: tmp_path)
    panel.controls.epochs.setValue(1)  # were "16,,36" taken for 16,36, the wrong run would at least be short
    panel.controls.widths.setText("16,,36")
    panel.controls.run.run_button.click()
    assert finish(qapp, panel)[0].startswith("failed")
    assert "must be comma-separated integers" in panel.message.text
    assert not list(tmp_path.iterdir())  # nothing trained


def test_a_run_whose_weights_do_not_fit_is_a_panel_message(qapp, panel, tmp_path: Path) -> None:
    import torch

    from engines.core import resource_path

    payload = torch.load(resource_path("topomap", "cbsom.topomap.pt"), weights_only=True)
    bad = tmp_path / "nostate.topomap.pt"
    torch.save({**payload, "state": {}}, bad)
    panel.open_path(bad)
    assert finish(qapp, panel)[0].startswith("failed")
    assert "nostate.topomap.pt is damaged: its weights do not fit the network it describes" in panel.message.text
    assert "Unexpected" not in panel.message.text


@pytest.mark.parametrize("controls_width", [None, 1])  # as opened, and dragged to its narrowest (0 collapses it out of sight)
def test_train_and_show_labels_are_never_clipped(qapp, panel, controls_width) -> None:
    from PySide6.QtWidgets import QFormLayout, QLabel, QSplitter

    if controls_width is not None:
        split = panel.findChild(QSplitter)
        split.setSizes([controls_width, *split.sizes()[1:]])
        qapp.processEvents()
    forms = [box.layout() for box in (panel.controls.method.parentWidget(), panel.controls.layer.parentWidget())]
    items = [form.itemAt(r, QFormLayout.ItemRole.LabelRole) for form in forms for r in range(form.rowCount())]
    labels = [item.widget() for item in items if item is not None and isinstance(item.widget(), QLabel)]
    assert {label.text() for label in labels} >= {"Method", "Data", "Widths", "Layer", "Map"}
    clipped = [label.text() for label in labels if label.width() < label.sizeHint().width()]
    assert not clipped, clipped


@pytest.mark.parametrize("controls_width", [None, 1])  # as opened, and dragged to its narrowest (0 collapses it out of sight)
def test_control_buttons_are_never_clipped(qapp, panel, controls_width) -> None:
    """ "Open comparison…" once lost its ends when the controls column was at its narrowest."""
    from PySide6.QtWidgets import QPushButton, QSplitter

    split = panel.findChild(QSplitter)
    if controls_width is not None:
        split.setSizes([controls_width, *split.sizes()[1:]])  # Qt raises it to the column's minimum
        qapp.processEvents()
        assert split.sizes()[0] == split.widget(0).width() > 1  # on screen, not collapsed
    buttons = [b for b in split.widget(0).findChildren(QPushButton) if b.isVisible()]
    assert {b.text() for b in buttons} >= {"Train", "Cancel", "Open run…", "Open comparison…"}
    clipped = [b.text() for b in buttons if b.width() < b.sizeHint().width()]
    assert not clipped, clipped


def test_every_class_name_of_the_unit_bar_chart_has_a_row_of_its_own(qapp, panel) -> None:
    import pyqtgraph as pg
    from PySide6.QtCore import QPointF
    from PySide6.QtGui import QFontMetrics

    from engines.core import resource_path

    panel.open_path(resource_path("topomap", "cbsom-gratings.topomap.pt"))
    assert finish(qapp, panel) == ["finished"]
    panel.select_unit(5)
    qapp.processEvents()
    classes = list(panel.view.classes)
    assert max(len(c) for c in classes) > 3  # "112.5°": longer than a bar is wide when written under it
    ticks = panel.class_plot.getAxis("left")._tickLevels
    assert ticks and [name for _, name in ticks[0]] == classes
    box = panel.class_plot.getViewBox()
    rows = [box.mapViewToScene(QPointF(0, i)).y() for i in range(len(classes))]
    pitch = min(b - a for a, b in zip(rows, rows[1:]))
    assert pitch >= QFontMetrics(panel.class_plot.getAxis("left").font()).height() * 0.8  # the axis draws at 0.8 line height
    assert any(isinstance(item, pg.BarGraphItem) for item in panel.class_plot.getPlotItem().items)


VALID_SESSION = {
    "method": "topoloss",
    "data": "shapes",
    "epochs": 12,
    "seed": 7,
    "widths": "16,36",
    "alpha0": 0.2,
    "tau": 2.5,
    "kind": "dprime",
    "class": 3,
    "pinwheels": False,
}


def test_a_session_applies_every_setting_or_none(qapp, panel) -> None:
    assert panel.controls.klass.count() > 3  # the example run's classes
    before = panel.state()
    panel.restore(VALID_SESSION)
    assert panel.state() == {**before, **VALID_SESSION}
    assert not panel.runner.busy  # no run named: nothing to open
    changed = {k: v for k, v in panel.state().items() if k != "run"}
    panel.restore({**changed, "method": "som", "kind": "bogus"})  # a good change, then a bad value
    assert panel.state() == {**changed, "run": before["run"]}
    assert panel.message.text.startswith("The session's topomap settings are invalid: unknown kind 'bogus'"), panel.message.text


@pytest.mark.parametrize(
    "bad, said",
    [
        ({"epochs": 12.7}, "epochs must be a whole number from 1 to 500, not 12.7"),
        ({"epochs": "12"}, "epochs must be a whole number from 1 to 500, not '12'"),
        ({"epochs": 10**30}, "epochs must be a whole number from 1 to 500, not 1"),
        ({"seed": "7"}, "seed must be a whole number from 0 to 1000000, not '7'"),
        ({"seed": True}, "seed must be a whole number from 0 to 1000000, not True"),
        ({"alpha0": "0.2"}, "alpha0 must be a number from 0.001 to 1.0, not '0.2'"),
        ({"tau": float("inf")}, "tau must be a number from 0.0 to 100.0, not inf"),
        ({"pinwheels": "false"}, "pinwheels must be true or false, not 'false'"),
        ({"class": 99}, "class must be a whole number from 0 to 9, not 99"),
        ({"class": "3"}, "class must be a whole number from 0 to 9, not '3'"),
        ({"widths": 1636}, "widths must be text, not 1636"),
        ({"layer": 3}, "layer must be text, not 3"),
        ({"run": 5}, "run must be text, not 5"),
    ],
)
def test_a_bad_session_value_is_one_sentence_and_changes_nothing(panel, bad: dict, said: str) -> None:
    """Each case also carries a good change of method (applied first until now): it must not be applied either."""
    before = panel.state()
    panel.restore({**{k: v for k, v in before.items() if k != "run"}, "method": "som", **bad})
    assert panel.message.text.startswith(f"The session's topomap settings are invalid: {said}"), panel.message.text
    assert panel.state() == before
    assert not panel.runner.busy


def test_a_session_that_is_not_an_object_is_one_sentence(panel) -> None:
    before = panel.state()
    panel.restore(["epochs", 12])
    assert panel.message.text == "The session's topomap settings are invalid: they must be an object of name: value, not ['epochs', 12]"
    assert panel.state() == before


def test_a_session_that_opens_a_run_shows_its_class(qapp, panel) -> None:
    """The class list is filled only once the session's run has loaded: the saved class must still win."""
    from engines.core import resource_path

    run = str(resource_path("topomap", "cbsom-gratings.topomap.pt"))
    panel.restore({"run": run, "kind": "dprime", "class": 5})
    assert finish(qapp, panel) == ["finished"]
    assert panel.controls.klass.count() > 5
    assert panel.controls.klass.currentIndex() == 5
    assert panel.state()["class"] == 5
