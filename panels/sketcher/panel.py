"""The sketcher panel: draw, convert to a CSG2D program by tree diffusion + search, inspect, edit,
export. Every number and picture it shows comes from ``engines.sketcher.interactive``."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt, QTimer
from PySide6.QtGui import QAction, QImage, QKeySequence
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QToolButton,
    QTreeWidget,
    QVBoxLayout,
    QWidget,
)

from engines.core import resource_path
from engines.sketcher.params import BEAM_RANGE, BUDGET_RANGE, EXAMPLE_BUDGET, IMAGE_SUFFIXES, PROPOSERS, STYLES, SearchParams
from panels.base import MethodPanel, PanelContext
from panels.run_controls import RunControls
from panels.session_checks import choice, flag, mapping, text, whole

from .canvas import TOOLS, DrawingCanvas
from .views import Gallery, PathView, ProgramEditor, RatePlot, fill_tree, mask_pixmap

EXAMPLE = "example.png"
BENCH_CURVES = "bench_curves.json"
DEFAULTS = SearchParams()
STYLE_LABELS = {"auto": "Detect", "filled": "Filled shapes", "sketch": "Sketch (outlines)"}
PROPOSER_LABELS = {"model": "Edit model (tree diffusion)", "random": "Random mutations (baseline)"}
# suffix: (export action, file-dialog filter)
_FORMATS = {".txt": ("Program text…", "Program text"), ".svg": ("SVG…", "SVG image"), ".png": ("PNG…", "PNG image")}


class SketcherPanel(MethodPanel):
    name = "sketcher"
    title = "Sketcher (tree diffusion)"

    def __init__(self, ctx: PanelContext, parent: QWidget | None = None) -> None:
        super().__init__(ctx, parent)
        self._io_done = None
        self.random_seed = 0
        self.last_result = None
        self._build()
        self.preview_runner = self.add_runner("sketcher-preview", finished=self._on_preview)
        self.io_runner = self.add_runner("sketcher-files", finished=self._on_io_finished)
        self.curves_runner = self.add_runner("sketcher-curves")
        self.run_controls.follow(self.runner)
        self._connect()
        self._load_curves()

    # layout ------------------------------------------------------------------------------------
    def _build(self) -> None:
        outer = QHBoxLayout(self.body)
        outer.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Horizontal)
        outer.addWidget(split)

        left = QWidget()
        lv = QVBoxLayout(left)
        tools = QHBoxLayout()
        self.tool_group = QButtonGroup(self)
        self.tool_buttons: dict[str, QToolButton] = {}
        for tool in TOOLS:
            button = QToolButton()
            button.setText(tool.capitalize())
            button.setCheckable(True)
            button.setObjectName(f"sketcherTool_{tool}")
            self.tool_group.addButton(button)
            self.tool_buttons[tool] = button
            tools.addWidget(button)
        self.tool_buttons["pen"].setChecked(True)
        self.fill_box = QCheckBox("Fill shapes")
        self.fill_box.setChecked(True)
        tools.addWidget(self.fill_box)
        tools.addStretch(1)
        lv.addLayout(tools)

        edit_row = QHBoxLayout()
        self.brush = QSpinBox()
        self.brush.setRange(1, 80)
        self.brush.setValue(14)
        self.brush.setPrefix("brush ")
        self.brush.setSuffix(" px")
        self.undo_button = QPushButton("Undo")
        self.redo_button = QPushButton("Redo")
        self.clear_button = QPushButton("Clear")
        self.load_button = QPushButton("Load image…")
        self.random_button = QPushButton("Random target")
        for w in (self.brush, self.undo_button, self.redo_button, self.clear_button, self.load_button, self.random_button):
            edit_row.addWidget(w)
        edit_row.addStretch(1)
        lv.addLayout(edit_row)

        self.canvas = DrawingCanvas()
        lv.addWidget(self.canvas, 1)

        form = QFormLayout()
        self.budget = QSpinBox()
        self.budget.setRange(*BUDGET_RANGE)
        self.budget.setSingleStep(500)
        self.budget.setValue(DEFAULTS.budget)
        self.beam = QSpinBox()
        self.beam.setRange(*BEAM_RANGE)
        self.beam.setValue(DEFAULTS.beam)
        self.style = QComboBox()
        for value in STYLES:
            self.style.addItem(STYLE_LABELS[value], value)
        self.style.setCurrentIndex(STYLES.index(DEFAULTS.style))
        self.proposer = QComboBox()
        for value in PROPOSERS:
            self.proposer.addItem(PROPOSER_LABELS[value], value)
        form.addRow("Renderer calls", self.budget)
        form.addRow("Beam width", self.beam)
        form.addRow("Drawing is", self.style)
        form.addRow("Edits from", self.proposer)
        lv.addLayout(form)

        self.run_controls = RunControls("Convert to program", text_in_bar=True)
        self.convert_button = self.run_controls.run_button
        self.convert_button.setObjectName("sketcherConvert")
        self.convert_button.setDefault(True)
        self.cancel_button = self.run_controls.cancel_button
        self.progress = self.run_controls.progress
        lv.addWidget(self.run_controls)
        split.addWidget(left)

        right = QSplitter(Qt.Orientation.Vertical)
        gallery_box = QWidget()
        gv = QVBoxLayout(gallery_box)
        gv.setContentsMargins(0, 0, 0, 0)
        self.gallery_label = QLabel("Best candidates")
        self.gallery = Gallery()
        gv.addWidget(self.gallery_label)
        gv.addWidget(self.gallery, 1)
        right.addWidget(gallery_box)

        self.tabs = QTabWidget()
        program_tab = QWidget()
        pv = QVBoxLayout(program_tab)
        top = QHBoxLayout()
        self.editor = ProgramEditor()
        self.editor.setMaximumHeight(90)
        self.preview = QLabel()
        self.preview.setObjectName("sketcherPreview")
        self.preview.setFixedSize(128, 128)
        self.preview.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.preview.setStyleSheet("border: 1px solid #999; background: white;")
        top.addWidget(self.editor, 1)
        top.addWidget(self.preview)
        pv.addLayout(top)
        self.program_status = QLabel("Type a program, or convert a drawing.")
        self.program_status.setWordWrap(True)
        pv.addWidget(self.program_status)
        buttons = QHBoxLayout()
        self.continue_button = QPushButton("Continue search from here")
        self.export_size = QSpinBox()
        self.export_size.setRange(8, 4096)
        self.export_size.setValue(512)
        self.export_size.setPrefix("export ")
        self.export_size.setSuffix(" px")
        buttons.addWidget(self.continue_button)
        buttons.addStretch(1)
        buttons.addWidget(self.export_size)
        pv.addLayout(buttons)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Syntax tree"])
        self.tree.setObjectName("sketcherTree")
        pv.addWidget(self.tree, 1)
        self.tabs.addTab(program_tab, "Program")
        self.path_view = PathView()
        self.tabs.addTab(self.path_view, "Edit path")
        self.rate_plot = RatePlot()
        self.tabs.addTab(self.rate_plot, "Solve rate")
        right.addWidget(self.tabs)
        right.setSizes([260, 440])
        split.addWidget(right)
        split.setSizes([520, 560])

        self.preview_timer = QTimer(self)
        self.preview_timer.setSingleShot(True)
        self.preview_timer.setInterval(150)

    def _connect(self) -> None:
        for tool, button in self.tool_buttons.items():
            button.toggled.connect(lambda on, t=tool: on and setattr(self.canvas, "tool", t))
        self.fill_box.toggled.connect(lambda on: setattr(self.canvas, "fill", on))
        self.brush.valueChanged.connect(lambda v: setattr(self.canvas, "brush", v))
        self.undo_button.clicked.connect(self.canvas.undo)
        self.redo_button.clicked.connect(self.canvas.redo)
        self.clear_button.clicked.connect(self.canvas.clear)
        self.load_button.clicked.connect(self._choose_image)
        self.random_button.clicked.connect(self.random_target)
        self.canvas.changed.connect(self._canvas_changed)
        self.convert_button.clicked.connect(lambda: self.convert())
        self.continue_button.clicked.connect(self.continue_from_editor)
        self.gallery.picked.connect(self.editor.setPlainText)
        self.editor.textChanged.connect(self.preview_timer.start)
        self.preview_timer.timeout.connect(self._start_preview)
        self.runner.partial.connect(self._on_partial)
        self.runner.finished.connect(self._on_finished)
        for key, slot in ((QKeySequence.StandardKey.Undo, self.canvas.undo), (QKeySequence.StandardKey.Redo, self.canvas.redo)):
            action = QAction(self)
            action.setShortcut(key)
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.triggered.connect(slot)
            self.canvas.addAction(action)
        self._canvas_changed()

    # canvas and targets ------------------------------------------------------------------------
    def _canvas_changed(self) -> None:
        self.undo_button.setEnabled(self.canvas.can_undo())
        self.redo_button.setEnabled(self.canvas.can_redo())
        if self.editor.toPlainText().strip():
            self.preview_timer.start()

    def _choose_image(self) -> None:
        patterns = " ".join(f"*{s}" for s in IMAGE_SUFFIXES)
        path, _ = QFileDialog.getOpenFileName(self, "Load a target image", "", f"Images ({patterns})")
        if path:
            self.open_path(Path(path))

    def open_path(self, path: Path) -> None:
        """Load a picture of any size as the drawing (thresholded and resized by the engine)."""
        from engines.sketcher import interactive

        self.ctx.add_recent(str(path))

        def done(mask) -> None:
            self.canvas.set_mask(mask)
            self.show_info(f"Loaded {path.name} as the target.")

        self._io(lambda job: interactive.target_from_file(path), f"Load {path.name}", done)

    def random_target(self) -> None:
        from engines.sketcher import interactive

        self.random_seed += 1
        seed = self.random_seed

        def done(result) -> None:
            program, mask = result
            self.canvas.set_mask(mask)
            self.show_info(f"Random target from the generator (its program was {program}).")

        self._io(lambda job: interactive.random_target(seed), "Random target", done)

    def _io(self, work, label: str, on_done) -> None:
        """Small background jobs (files, targets, exports); only the latest one reports back."""
        self._io_done = on_done
        self.io_runner.start(work, label)

    def _on_io_finished(self, result) -> None:
        if self._io_done is not None:
            self._io_done(result)

    # converting --------------------------------------------------------------------------------
    def search_params(self, start: str = "") -> SearchParams:
        return SearchParams(budget=self.budget.value(), beam=self.beam.value(), style=self.style.currentData(), start=start)

    def convert(self, start: str = "") -> bool:
        """Convert the drawing to a program in the background; False when there is nothing drawn."""
        if self.canvas.is_blank():
            self.show_error("The canvas is empty: draw something, load an image or pick a random target first.")
            return False
        from engines.sketcher.api import SolveRequest

        grey = self.canvas.grey().copy()
        request = SolveRequest(self.search_params(start), self.proposer.currentData())

        def work(job):
            from engines.sketcher import interactive

            target = interactive.target_from_canvas(grey)
            return interactive.convert(target, request, job.progress, job.cancel, job.partial)

        self.runner.start(work, "Convert drawing to program")
        return True

    def continue_from_editor(self) -> None:
        text = self.editor.toPlainText().strip()
        if not text or self.editor.error_position is not None:
            self.show_error("Continue needs a valid program in the editor.")
            return
        self.convert(start=text)

    def _on_partial(self, update) -> None:
        self.gallery.show_candidates(update.candidates, update.masks, update.sketch)
        self.gallery_label.setText(f"Best candidates after {update.renders} renders")

    def _on_finished(self, conversion) -> None:
        result = conversion.result
        self.last_result = conversion
        self.gallery.show_candidates(result.best, conversion.best_masks, result.sketch)
        what = "outline match" if result.sketch else "IoU"
        self.gallery_label.setText(f"Best candidates: {result.renders} renders in {result.seconds:.1f} s ({result.proposer} edits)")
        self.editor.setPlainText(result.program)
        self.path_view.set_path(result.path, conversion.path_masks)
        verdict = "solved" if result.solved else "best found"
        self.run_controls.say(f"{verdict}: {what} {result.score:.3f}")

    # editor preview ----------------------------------------------------------------------------
    def _start_preview(self) -> None:
        text = self.editor.toPlainText()
        if not text.strip():
            self.editor.mark_error(None)
            self.preview.clear()
            self.tree.clear()
            self.program_status.setText("Type a program, or convert a drawing.")
            return
        grey = None if self.canvas.is_blank() else self.canvas.grey().copy()
        style = self.style.currentData()

        def work(job):
            from engines.core import EngineError
            from engines.sketcher import interactive

            target = None
            if grey is not None:
                try:
                    target = interactive.target_from_canvas(grey)
                except EngineError:
                    target = None
            return interactive.preview(text, target, style=style)

        self.preview_runner.start(work, "Render program")

    def _on_preview(self, preview) -> None:
        if preview.text != self.editor.toPlainText():
            return  # typed on since
        self.editor.mark_error(preview.error_position)
        if not preview.ok:
            self.program_status.setText(f"<span style='color:#c62828'>{preview.error}</span>")
            return
        self.preview.setPixmap(mask_pixmap(preview.mask, 128))
        fill_tree(self.tree, preview.tree)
        what = "outline match with the drawing" if preview.sketch else "IoU with the drawing"
        score = "" if preview.score is None else f", {what} {preview.score:.3f}"
        self.program_status.setText(f"{preview.primitives} primitive{'s' if preview.primitives != 1 else ''}{score}")

    # benchmark curves --------------------------------------------------------------------------
    def _load_curves(self) -> None:
        path = resource_path("sketcher", BENCH_CURVES)

        def work(job):
            if not path.is_file():
                return {"runs": {}, "caption": "No benchmark results are shipped yet (run `workbench sketcher bench`)."}
            return json.loads(path.read_text(encoding="utf-8"))

        self.curves_runner.finished.connect(self.rate_plot.show_results)  # once: only the panel's first job loads them
        self.curves_runner.start(work, "Load benchmark curves")

    # shell hooks -------------------------------------------------------------------------------
    def run_default(self) -> bool:
        image = QImage(str(resource_path("sketcher", EXAMPLE)))
        if image.isNull():
            return False
        self.canvas.set_image(image)
        self.budget.setValue(min(self.budget.value(), EXAMPLE_BUDGET))
        return self.convert()

    def export_actions(self) -> list[QAction]:
        actions = []
        for suffix, (label, _) in _FORMATS.items():
            action = QAction(f"Sketcher program as {label}", self)
            action.triggered.connect(lambda _=False, s=suffix: self._choose_export(s))
            actions.append(action)
        return actions

    def _choose_export(self, suffix: str) -> None:
        """A save dialog for one format: a name typed without an extension gets this one, so the
        SVG action writes SVG and the PNG action PNG (the engine goes by the file's suffix)."""
        dialog = QFileDialog(self, "Export the program", f"program{suffix}", f"{_FORMATS[suffix][1]} (*{suffix})")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setDefaultSuffix(suffix.lstrip("."))
        dialog.fileSelected.connect(lambda p: self.export_to(Path(p)))
        dialog.open()

    def export_to(self, path: Path) -> None:
        from engines.sketcher import interactive

        text, size = self.editor.toPlainText(), self.export_size.value()
        self._io(lambda job: interactive.export(text, path, size), f"Export {path.name}", lambda p: self.show_info(f"Wrote {p}"))

    def state(self) -> dict[str, Any]:
        buffer = QBuffer()
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        self.canvas.image.save(buffer, "PNG")
        return {
            "program": self.editor.toPlainText(),
            "budget": self.budget.value(),
            "beam": self.beam.value(),
            "style": self.style.currentData(),
            "proposer": self.proposer.currentData(),
            "tool": self.canvas.tool,
            "brush": self.brush.value(),
            "fill": self.fill_box.isChecked(),
            "export_size": self.export_size.value(),
            "canvas_png": base64.b64encode(bytes(buffer.data())).decode("ascii"),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Take a session's values, all or none: every value is checked before any widget changes,
        so a bad one is one sentence and leaves the panel as it was (a spin box cannot hold an
        out-of-range number, and a huge one overflows Qt's int)."""
        try:
            checked = self._checked(state)
        except ValueError as exc:
            self.show_error(f"Could not restore the sketcher panel: {exc}")
            return
        for box, value in checked["numbers"].items():
            box.setValue(value)
        self.fill_box.setChecked(checked["fill"])
        for combo, key in ((self.style, "style"), (self.proposer, "proposer")):
            if key in checked:
                combo.setCurrentIndex(combo.findData(checked[key]))
        if "tool" in checked:
            self.tool_buttons[checked["tool"]].setChecked(True)
        if checked["image"] is not None:
            self.canvas.set_image(checked["image"])
        self.editor.setPlainText(checked["program"])

    def _checked(self, state: Any) -> dict[str, Any]:
        """The session's values checked against the widgets' own ranges and choices; ValueError
        names the first bad one. A missing number, style, proposer, tool or drawing keeps the
        panel's; a missing fill or program takes the default, as it always has."""
        mapping(state, "its settings")
        checked: dict[str, Any] = {
            "numbers": {
                box: whole(state.get(key, box.value()), key, box.minimum(), box.maximum())
                for box, key in ((self.budget, "budget"), (self.beam, "beam"), (self.brush, "brush"), (self.export_size, "export_size"))
            },
            "fill": flag(state.get("fill", True), "fill"),
            "program": text(state.get("program", ""), "program"),
            "image": None,
        }
        for combo, key in ((self.style, "style"), (self.proposer, "proposer")):
            if key in state:
                checked[key] = choice(state[key], key, [combo.itemData(i) for i in range(combo.count())])
        if "tool" in state:
            checked["tool"] = choice(state["tool"], "tool", list(self.tool_buttons))
        if state.get("canvas_png"):
            checked["image"] = _session_image(text(state["canvas_png"], "canvas_png"))
        return checked

    def shutdown(self) -> None:
        self.preview_timer.stop()
        super().shutdown()


def _session_image(encoded: str) -> QImage:
    """The drawing a session keeps as base64 PNG text; ValueError when it is not one."""
    try:
        data = base64.b64decode(encoded, validate=True)
    except ValueError:  # binascii.Error
        raise ValueError("canvas_png is not base64 text") from None
    image = QImage.fromData(QByteArray(data), "PNG")
    if image.isNull():
        raise ValueError("canvas_png is not a PNG image")
    return image
