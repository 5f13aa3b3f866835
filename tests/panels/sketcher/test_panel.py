"""The sketcher panel, driven like a user: draw with the mouse, convert, edit, export."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from tests.conftest import wait_until


@pytest.fixture
def panel(qapp, qtbot, panel_ctx):
    from panels.sketcher import create_panel

    widget = create_panel(panel_ctx)
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    widget.show()
    qtbot.waitExposed(widget)
    assert wait_until(qapp, lambda: not widget.curves_runner.busy, 30)
    yield widget
    widget.shutdown()
    assert wait_until(qapp, lambda: not panel_ctx.jobs.running, 60), "jobs did not stop"


def _drag(qtbot, canvas, a: tuple[float, float], b: tuple[float, float], steps: int = 8) -> None:
    """Press at a, move to b, release; a and b are fractions of the canvas frame."""
    frame = canvas._frame()

    def at(p):
        return QPoint(int(frame.x() + p[0] * frame.width()), int(frame.y() + p[1] * frame.height()))

    qtbot.mousePress(canvas, Qt.MouseButton.LeftButton, pos=at(a))
    for i in range(1, steps + 1):
        t = i / steps
        qtbot.mouseMove(canvas, at((a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]))))
    qtbot.mouseRelease(canvas, Qt.MouseButton.LeftButton, pos=at(b))


def _wait_job(qapp, runner, timeout: float = 120) -> None:
    assert wait_until(qapp, lambda: not runner.busy, timeout), "the job did not finish"


def _convert(qapp, panel, budget: int) -> list:
    """Convert the canvas with ``budget`` renders; the conversions the panel received."""
    results = []
    panel.runner.finished.connect(results.append)
    panel.budget.setValue(budget)
    assert panel.convert()
    _wait_job(qapp, panel.runner)
    return results


def test_drawn_rectangle_becomes_a_program(qapp, qtbot, panel) -> None:
    panel.tool_buttons["rectangle"].click()
    _drag(qtbot, panel.canvas, (0.25, 0.3), (0.75, 0.7))
    ink = panel.canvas.grey() < 0.5
    assert ink[256, 256] and not ink[30, 30]  # the rectangle is filled, the corner blank
    partials = []
    panel.runner.partial.connect(partials.append)
    results = _convert(qapp, panel, 1500)
    assert results, panel.message.text
    conversion = results[0]
    assert partials, "no live candidates streamed"
    assert conversion.result.iou > 0.9
    assert panel.editor.toPlainText() == conversion.result.program
    assert panel.gallery.count() >= 1 and panel.gallery.item(0).text().startswith("IoU ")
    assert panel.path_view.steps.count() == len(conversion.result.path)
    wait_until(qapp, lambda: panel.tree.topLevelItemCount() > 0, 20)
    assert panel.tree.topLevelItemCount() == 1


def test_a_line_drawing_is_scored_by_its_outline_match(qapp, qtbot, panel) -> None:
    panel.tool_buttons["ellipse"].click()
    panel.fill_box.setChecked(False)
    panel.brush.setValue(12)
    _drag(qtbot, panel.canvas, (0.2, 0.25), (0.8, 0.75))
    results = _convert(qapp, panel, 600)
    assert results and results[0].result.sketch, panel.message.text
    labels = [panel.gallery.item(i).text() for i in range(panel.gallery.count())]
    assert labels and all(label.startswith("match ") for label in labels), labels
    assert "outline match" in panel.progress.format()
    assert wait_until(qapp, lambda: "outline match with the drawing" in panel.program_status.text(), 20), panel.program_status.text()


def test_tools_undo_redo_and_clear(qtbot, panel) -> None:
    canvas = panel.canvas
    assert canvas.is_blank() and not panel.undo_button.isEnabled()
    _drag(qtbot, canvas, (0.2, 0.2), (0.8, 0.8))  # pen
    assert not canvas.is_blank()
    panel.tool_buttons["eraser"].click()
    panel.brush.setValue(60)
    _drag(qtbot, canvas, (0.2, 0.2), (0.8, 0.8))
    assert canvas.is_blank()  # the eraser took the stroke away
    panel.undo_button.click()
    assert not canvas.is_blank()
    panel.redo_button.click()
    assert canvas.is_blank()
    panel.tool_buttons["ellipse"].click()
    panel.fill_box.setChecked(False)
    panel.brush.setValue(6)
    _drag(qtbot, canvas, (0.2, 0.2), (0.8, 0.8))
    ink = canvas.grey() < 0.5
    assert ink[256, 103] and not ink[256, 256]  # an outline: the rim is inked, the middle is not
    panel.tool_buttons["line"].click()
    _drag(qtbot, canvas, (0.1, 0.9), (0.9, 0.9))
    assert (canvas.grey()[int(0.9 * 512)] < 0.5).sum() > 300
    panel.clear_button.click()
    assert canvas.is_blank()


def test_empty_canvas_is_a_clear_message(panel) -> None:
    assert not panel.convert()
    assert "empty" in panel.message.text


def test_editor_marks_syntax_errors_and_renders_valid_programs(qapp, panel) -> None:
    panel.editor.setPlainText("(Circle 5 8)")
    assert wait_until(qapp, lambda: panel.editor.error_position is not None, 20)
    assert panel.editor.error_position == 12
    assert "syntax error" in panel.program_status.text()
    panel.editor.setPlainText("(- (Circle 6 8 8) (Quad 8 8 3 3 H))")
    assert wait_until(qapp, lambda: panel.tree.topLevelItemCount() == 1 and panel.editor.error_position is None, 20)
    assert panel.tree.topLevelItem(0).text(0) == "- subtract"
    assert "2 primitives" in panel.program_status.text()
    assert panel.preview.pixmap() is not None and not panel.preview.pixmap().isNull()


def test_random_target_and_image_loading(qapp, tmp_path: Path, panel) -> None:
    panel.random_button.click()
    assert wait_until(qapp, lambda: not panel.canvas.is_blank(), 20)
    from PIL import Image

    picture = tmp_path / "drawing.jpg"
    image = Image.new("L", (300, 200), 255)
    image.paste(0, (100, 50, 200, 150))
    image.save(picture)
    panel.canvas.clear()
    panel.open_path(picture)
    assert wait_until(qapp, lambda: not panel.canvas.is_blank(), 20)
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"not an image")
    panel.open_path(junk)
    assert wait_until(qapp, lambda: "cannot read" in panel.message.text, 20)


def test_exports_write_text_svg_and_png(qapp, tmp_path: Path, panel) -> None:
    panel.editor.setPlainText("(- (Circle 6 8 8) (Quad 8 8 3 3 H))")
    panel.export_size.setValue(200)
    for name in ("p.txt", "p.svg", "p.png"):
        panel.export_to(tmp_path / name)
        assert wait_until(qapp, lambda n=name: (tmp_path / n).exists() and not panel.io_runner.busy, 20)
    assert (tmp_path / "p.txt").read_text().strip() == "(- (Circle 6 8 8) (Quad 8 8 3 3 H))"
    assert "<circle" in (tmp_path / "p.svg").read_text()
    from PIL import Image

    assert Image.open(tmp_path / "p.png").size == (200, 200)
    panel.editor.setPlainText("(Circle")
    panel.export_to(tmp_path / "bad.svg")
    assert wait_until(qapp, lambda: "syntax error" in panel.message.text, 20)
    assert not (tmp_path / "bad.svg").exists()


def test_state_round_trip(qapp, qtbot, panel_ctx, panel) -> None:
    from panels.sketcher import create_panel

    _drag(qtbot, panel.canvas, (0.3, 0.3), (0.6, 0.6))
    panel.budget.setValue(777)
    panel.style.setCurrentIndex(2)
    panel.editor.setPlainText("(Circle 3 4 5)")
    state = panel.state()
    other = create_panel(panel_ctx)
    qtbot.addWidget(other)
    assert wait_until(qapp, lambda: not other.curves_runner.busy, 30)
    other.restore(state)
    assert other.budget.value() == 777 and other.style.currentData() == "sketch"
    assert other.editor.toPlainText() == "(Circle 3 4 5)"
    assert np.array_equal(other.canvas.grey(), panel.canvas.grey())
    other.shutdown()


def test_cancel_stops_a_conversion(qapp, qtbot, panel) -> None:
    # A checkerboard of 4-pixel cells: no short CSG2D program matches it, so the search runs on.
    cells = (np.add.outer(np.arange(64) // 4, np.arange(64) // 4) % 2).astype(bool)
    panel.canvas.set_mask(cells)
    panel.budget.setValue(100000)
    cancelled = []
    panel.runner.cancelled.connect(lambda: cancelled.append(True))
    assert panel.convert()
    wait_until(qapp, lambda: panel.progress.value() > 0, 30)
    panel.cancel_button.click()
    assert cancelled and not panel.runner.busy
    assert panel.convert_button.isEnabled()
    assert wait_until(qapp, lambda: not panel.ctx.jobs.running, 60), "the search did not stop after cancel"


def test_solve_rate_plot_shows_the_shipped_curves_with_a_key(panel) -> None:
    rate = panel.rate_plot
    assert rate.plot is not None, "the shipped bench curves are plotted at start-up"
    curves = rate.plot.getPlotItem().listDataItems()
    assert len(curves) == 4  # edit model and random mutations, at 1-4 and at 5-8 primitives
    assert all(max(c.yData) <= 100 and c.xData[0] == 0 for c in curves)
    assert "edit model" in rate.key.text() and "random mutations" in rate.key.text()
    assert rate.plot.getPlotItem().legend is None  # the key is under the plot, not over the curves
    assert "workbench sketcher bench" in rate.note.text()


def test_ink_along_the_canvas_border_stays_ink(qapp, qtbot, panel) -> None:
    """A frame drawn corner to corner, or a filled shape over most of the canvas, must not turn
    into its own negative (the white paper counted as ink)."""
    panel.tool_buttons["rectangle"].click()
    panel.fill_box.setChecked(False)
    _drag(qtbot, panel.canvas, (0.0, 0.0), (0.999, 0.999))
    results = _convert(qapp, panel, 10)
    frame = results[-1].target
    assert frame[0, 32] and frame[32, 0] and not frame[32, 32] and frame.mean() < 0.2
    panel.canvas.clear()
    panel.fill_box.setChecked(True)
    _drag(qtbot, panel.canvas, (-0.1, -0.1), (1.1, 0.75))
    assert panel.convert()
    _wait_job(qapp, panel.runner)
    big = results[-1].target
    assert big[:40].all() and not big[52:].any()
    panel.editor.setPlainText("(Quad 8 6 F C G)")  # the top three quarters: the editor's IoU agrees
    assert wait_until(qapp, lambda: "IoU with the drawing" in panel.program_status.text(), 20)
    iou = float(panel.program_status.text().rsplit(" ", 1)[-1])
    assert iou > 0.9, panel.program_status.text()


@pytest.mark.parametrize(
    "key, value",
    [
        ("budget", 99999999999999999999),
        ("budget", 1e40),
        ("beam", -3),
        ("brush", "wide"),
        ("export_size", 1e9),
        ("budget", float("nan")),
        ("beam", 2.5),
        ("canvas_png", 7),
    ],
)
def test_a_session_value_out_of_range_is_one_message_and_changes_nothing(panel, key: str, value) -> None:
    before = panel.state()
    panel.restore({**before, key: value, "budget": before["budget"] + 1} if key != "budget" else {**before, key: value})
    assert panel.message.text.startswith("Could not restore the sketcher panel: "), panel.message.text
    if key != "canvas_png":
        assert f"{key} must be a whole number from " in panel.message.text and panel.message.text.endswith(f", not {value!r}")
    assert panel.state() == before


@pytest.mark.parametrize(
    "action_index, suffix, check", [(1, ".svg", lambda p: "<svg" in p.read_text()), (2, ".png", lambda p: p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n")]
)
def test_export_dialog_writes_the_chosen_format_for_a_bare_name(qapp, tmp_path: Path, panel, action_index: int, suffix: str, check) -> None:
    from PySide6.QtWidgets import QApplication, QFileDialog

    panel.editor.setPlainText("(- (Circle 6 8 8) (Quad 8 8 2 2 H))")
    panel.export_actions()[action_index].trigger()
    dialogs = []
    assert wait_until(
        qapp, lambda: dialogs.extend(w for w in QApplication.topLevelWidgets() if isinstance(w, QFileDialog) and w.isVisible()) or dialogs, 10
    )
    dialog = dialogs[0]
    dialog.selectFile(str(tmp_path / "drawing"))  # typed without an extension
    dialog.accept()
    written = tmp_path / f"drawing{suffix}"
    assert wait_until(qapp, lambda: written.exists() and not panel.io_runner.busy, 20), list(tmp_path.iterdir())
    assert check(written) and not (tmp_path / "drawing.txt").exists()
    assert panel.message.text == f"Wrote {written}"


def test_a_session_applies_every_setting_or_none(panel) -> None:
    valid = {
        "budget": 777,
        "beam": 4,
        "style": "filled",
        "proposer": "random",
        "tool": "line",
        "brush": 20,
        "fill": False,
        "export_size": 256,
        "program": "(Circle 3 4 5)",
    }
    before = panel.state()
    panel.restore(valid)
    assert panel.state() == {**before, **valid}
    assert panel.canvas.tool == "line" and not panel.canvas.fill and panel.canvas.brush == 20
    changed = panel.state()
    panel.restore({**changed, "budget": 999, "style": "watercolour"})  # a good change, then a bad value
    assert panel.state() == changed
    assert panel.message.text == "Could not restore the sketcher panel: unknown style 'watercolour' (choose auto, filled, sketch)"


def _png_base64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode("ascii")


@pytest.mark.parametrize(
    "key, value, said",
    [
        ("fill", "false", "fill must be true or false, not 'false'"),
        ("fill", 0, "fill must be true or false, not 0"),
        ("style", "watercolour", "unknown style 'watercolour' (choose auto, filled, sketch)"),
        ("style", None, "unknown style None (choose auto, filled, sketch)"),
        ("proposer", "oracle", "unknown proposer 'oracle' (choose model, random)"),
        ("tool", "spray", "unknown tool 'spray' (choose pen, eraser, line, rectangle, ellipse)"),
        ("tool", ["pen"], "unknown tool ['pen'] (choose pen, eraser, line, rectangle, ellipse)"),
        ("program", 42, "program must be text, not 42"),
        ("canvas_png", _png_base64(b"not a png"), "canvas_png is not a PNG image"),
        ("canvas_png", "@@@@", "canvas_png is not base64 text"),
    ],
)
def test_a_bad_session_choice_is_one_sentence_and_changes_nothing(panel, key: str, value, said: str) -> None:
    """Each case also carries a good change of the budget: it must not be applied either."""
    before = panel.state()
    panel.restore({**before, "budget": before["budget"] + 1, key: value})
    assert panel.message.text == f"Could not restore the sketcher panel: {said}", panel.message.text
    assert panel.state() == before


def test_a_session_that_is_not_an_object_is_one_sentence(panel) -> None:
    before = panel.state()
    panel.restore(["budget", 777])
    assert panel.message.text == "Could not restore the sketcher panel: its settings must be an object of name: value, not ['budget', 777]"
    assert panel.state() == before
