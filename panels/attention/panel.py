"""The attention panel: design a FlashMask, see its tiles, and time real kernels on it live.

Every number comes from the engine in a background job (``work.py``): mask analysis (its own job
slot, so edits stay quick), timing and the rho sweep (the panel's main slot: ``run_default`` uses
it), and exports (a third slot). The side column is ``controls.py``, the saved state ``session.py``;
this module wires them and draws.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from engines.attention import library
from engines.attention.params import TimingSettings
from engines.core import EngineError, to_jsonable
from panels.base import MethodPanel, PanelContext, side_scroll

from . import work
from .controls import AttentionControls
from .session import MAX_SESSION_INTS, AttentionSession, Compose, Timing, Vectors, read_session
from .vectors_model import VectorsModel
from .views import TILE_NAMES, HeatMap, SweepPlot, VectorPlot

FIRST_VIEW_DELAY_MS = 1000
LIVE_TIMING_MAX_N = 16384  # beyond this an edit does not start a timing by itself (use Time now)
TIMING_COLUMNS = (
    ("backend", "the attention backend"),
    ("ms", "median time of the repeats (forward, including mask preparation)"),
    ("spread", "(max - min) / median over the repeats"),
    ("TF/s", "TFLOP/s counting the dense N_q x N_k work"),
    ("TF/s blk", "TFLOP/s counting the tiles that are not skipped"),
    ("TF/s elem", "TFLOP/s counting visible elements only"),
    ("max err", "max abs error against float64, on sampled query rows"),
    ("mask mem", "memory of this backend's mask: dense bool, Flex BlockMask, or FlashMask vectors + min/max"),
    ("×dense", "speed-up over SDPA with a dense mask"),
    ("×flex", "speed-up over compiled FlexAttention"),
    ("% ideal", "speed-up over this backend's own full-mask time, as % of 1 / (1 - rho)"),
)
EXPORTS = (
    ("npy", "Vectors (.npy)…", "mask.flashmask.npy", "NumPy array (*.npy)"),
    ("json", "Vectors (.json)…", "mask.flashmask.json", "JSON (*.json)"),
    ("png", "Mask picture (.png)…", "mask.png", "PNG image (*.png)"),
    ("csv", "Timing table (.csv)…", "timing.csv", "CSV (*.csv)"),
    ("paddle", "Paddle flashmask_attention snippet (.py)…", "flashmask_paddle.py", "Python (*.py)"),
    ("flex", "FlexAttention mask_mod snippet (.py)…", "flashmask_flex.py", "Python (*.py)"),
)


class AttentionPanel(MethodPanel):
    name = "attention"
    title = "Attention masks (FlashMask)"

    def __init__(self, ctx: PanelContext, parent: QWidget | None = None) -> None:
        super().__init__(ctx, parent)
        self.controls = AttentionControls()
        self.analysis = self.add_runner("attention-mask", finished=self._on_view)
        self.exporter = self.add_runner("attention-export", finished=lambda path: self.show_info(f"Saved {Path(path).name}"))
        self.analysis.started.connect(self._on_analysis_started)
        self._keep_message = False  # set while a job starts that the user did not ask for
        self.analysis.failed.connect(self._revert_edits)
        self.controls.timing.follow(self.runner)
        self.runner.partial.connect(self._on_timing)
        self.runner.finished.connect(self._on_timing_done)

        self.view = None  # the engine's MaskView of the current mask
        self.report = None  # the last timing report
        self.sweep = None
        self.source = "preset"  # preset | vectors | dense | compose
        self.custom_vectors: np.ndarray | None = None
        self.custom_causal = False
        self._custom_n_q: int | None = None
        self.painted: np.ndarray | None = None
        self.last_request = None  # the request behind ``self.view``
        self._dragged: tuple[float, ...] | None = None  # boundary positions for the next request
        self._building = False
        self._first_view_tried = False  # a first view that failed is not retried on its own

        self.analysis_timer = _single_shot(self, 250, self.request_analysis)
        self.timing_timer = _single_shot(self, 800, self.start_timing)
        self._build_ui()
        self._set_preset("causal_document")
        # The first view is computed a moment after the panel is first shown, not when it is built:
        # building every dock (session restore, tests) then starts no work.
        self.first_view_timer = _single_shot(self, FIRST_VIEW_DELAY_MS, self._first_view)

    # UI --------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        outer = QHBoxLayout(self.body)
        outer.setContentsMargins(0, 0, 0, 0)
        c = self.controls
        c.preset.currentIndexChanged.connect(self._on_preset_changed)
        for signal in (
            c.n.valueChanged,
            c.paramEdited,
            c.compose_on.toggled,
            c.compose_op.currentIndexChanged,
            c.compose_with.currentIndexChanged,
            c.tile.valueChanged,
        ):
            signal.connect(self._on_edit)
        c.open_button.clicked.connect(self._open_dialog)
        c.overlay.toggled.connect(self._redraw)
        c.paint_mode.currentIndexChanged.connect(self._on_paint_mode)
        for signal in (*(cb.toggled for cb in c.backend_boxes.values()), c.heads.valueChanged, c.dim.valueChanged, c.repeats.valueChanged):
            signal.connect(self._on_timing_edit)
        c.timing.run_button.clicked.connect(self.start_timing)
        outer.addWidget(side_scroll(c, max_width=430))

        self.heatmap = HeatMap()
        self.heatmap.painted.connect(self._on_paint)
        self.heatmap.boundariesMoved.connect(self._on_boundaries)
        self.vector_plot = VectorPlot()
        self.vectors = VectorsModel(self)
        self.vectors.edited.connect(self._on_vectors_edited)
        self.vectors.rejected.connect(self.show_error)
        self.table_view = QTableView()
        self.table_view.setModel(self.vectors)
        self.table_view.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked | QAbstractItemView.EditTrigger.EditKeyPressed | QAbstractItemView.EditTrigger.AnyKeyPressed
        )
        self.vector_tabs = QTabWidget()
        self.vector_tabs.addTab(self.vector_plot, "Vectors (plot)")
        self.vector_tabs.addTab(self.table_view, "Vectors (table)")
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.heatmap)
        top.addWidget(self.vector_tabs)
        top.setSizes([520, 420])

        self.timing_table = QTableWidget(0, len(TIMING_COLUMNS))
        for i, (label, tip) in enumerate(TIMING_COLUMNS):
            header = QTableWidgetItem(label)
            header.setToolTip(tip)
            self.timing_table.setHorizontalHeaderItem(i, header)
        self.timing_table.verticalHeader().hide()
        self.timing_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.timing_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.noise_note = QLabel("")
        self.noise_note.setWordWrap(True)
        self.noise_note.setObjectName("noiseNote")
        timing = QWidget()
        tl = QVBoxLayout(timing)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.timing_table, 1)
        tl.addWidget(self.noise_note)
        self.sweep_plot = SweepPlot()
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(timing)
        bottom.addWidget(self.sweep_plot)
        bottom.setSizes([640, 300])
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(top)
        right.addWidget(bottom)
        right.setSizes([520, 300])
        outer.addWidget(right, 1)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.view is None and self.last_request is None and not self.analysis.busy:
            self.first_view_timer.start()

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self.first_view_timer.stop()

    def _first_view(self) -> None:
        if self.isVisible() and self.view is None and not self.analysis.busy:
            self._first_view_tried = True
            self.request_analysis(keep_message=True)  # a failed open at start-up stays readable

    def _on_analysis_started(self, *_) -> None:
        if not self._keep_message:
            self.message.clear()

    def _on_job_started(self, *_) -> None:
        """Live timing starts by itself after every edit: it must not wipe the sentence about that
        edit (an out-of-range parameter, a file that could not be read)."""

    # Parameters ------------------------------------------------------------------------------
    def _set_preset(self, name: str) -> None:
        self._building = True
        index = self.controls.preset.findData(name)
        self.controls.preset.setCurrentIndex(max(index, 0))
        self.controls.build_params(name)
        self._building = False

    def _on_preset_changed(self) -> None:
        if self._building:
            return
        name = self.controls.preset.currentData()
        if name == "custom":
            return
        self.source = "preset"
        self.controls.build_params(name)
        self._on_edit()

    # Requests ----------------------------------------------------------------------------------
    def _on_edit(self, *_) -> None:
        if self._building:
            return
        if self.source in ("vectors", "dense") and self.sender() in (self.controls.n,):
            self.source = "preset"
        if self.source == "preset" and self.controls.compose_on.isChecked():
            self.source = "compose"
        elif self.source == "compose" and not self.controls.compose_on.isChecked():
            self.source = "preset"
        self.analysis_timer.start()

    def current_request(self):
        from engines.attention.view import MaskRequest

        name = self.controls.preset.currentData()
        if self.source == "vectors" and self.custom_vectors is not None:
            return MaskRequest(kind="vectors", vectors=self.custom_vectors, causal=self.custom_causal, n_q=self._custom_n_q)
        if self.source == "dense" and self.painted is not None:
            return MaskRequest(kind="dense", dense=self.painted)
        if name == "custom":
            name = "causal_document"
        if self.controls.compose_on.isChecked():
            return MaskRequest(
                kind="compose",
                name=name,
                n=self.controls.n.value(),
                params=self.controls.params(),
                other=self.controls.compose_with.currentData(),
                operation=self.controls.compose_op.currentData(),
            )
        dragged, self._dragged = self._dragged, None
        return MaskRequest(kind="preset", name=name, n=self.controls.n.value(), params=self.controls.params(), boundaries=dragged)

    def request_analysis(self, keep_message: bool = False) -> None:
        """Analyse the current request; ``keep_message`` when the panel starts it on its own."""
        request = self.current_request()
        tile = self.controls.tile.value()
        self._keep_message = keep_message
        try:
            self.analysis.start(lambda job: work.analyse(request, tile, job), "Analysing the mask")
        finally:
            self._keep_message = False

    def _on_view(self, result) -> None:
        request, view = result
        self.view = view
        self.last_request = request
        self.source = request.kind
        if request.kind == "vectors":
            self.custom_vectors, self.custom_causal, self._custom_n_q = view.mask.indices, view.mask.causal, view.mask.n_q
        if view.sizes_param in self.controls.param_widgets:  # the engine's sizes (after a drag, say)
            self.controls.param_widgets[view.sizes_param].setText(", ".join(f"{x:g}" for x in view.params[view.sizes_param]))
        if request.kind in ("vectors", "dense"):
            self._building = True
            self.controls.preset.setCurrentIndex(self.controls.preset.findData("custom"))
            self._building = False
        self._redraw()
        s = view.stats
        self.controls.readouts["description"].setText(f"{view.name}: {view.description}")
        self.controls.readouts["rho"].setText(f"{s.rho:.4f}  ({s.tiles_masked} of {s.tiles} tiles of {s.block_q}x{s.block_k} skipped)")
        self.controls.readouts["ideal"].setText(f"{s.ideal_speedup_text}  (1 / (1 - rho))")
        self.controls.readouts["density"].setText(f"{s.density:.4f} of elements visible")
        self.controls.readouts["tiles"].setText(f"{s.tiles_unmasked} {TILE_NAMES[0]}, {s.tiles_partial} {TILE_NAMES[1]}, {s.tiles_masked} skipped")
        self.controls.readouts["flashmask"].setText(f"{_bytes(s.flashmask_bytes)} + {_bytes(s.minmax_bytes)} min/max")
        self.controls.readouts["dense"].setText(_bytes(s.dense_bytes))
        self.controls.readouts["blockmask"].setText(_bytes(s.blockmask_bytes))
        self.vectors.set_vectors(view.mask.indices[0, 0], view.mask.column_names)
        self.vector_plot.show_vectors(view.mask.indices[0, 0], view.mask.column_names)
        self._on_paint_mode()
        if view.mask.batch * view.mask.heads > 1:
            self.show_info("This mask has several batches/heads: the table, plots and painting show batch 0, head 0.")
        if self.controls.live.isChecked():
            if max(view.mask.n_q, view.mask.n_k) <= LIVE_TIMING_MAX_N:
                self.timing_timer.start()
            else:
                self.controls.timing.status.setText(f"live timing stops at N={LIVE_TIMING_MAX_N}: press Time now")
        self.stateChanged.emit()

    def _redraw(self) -> None:
        if self.view is None:
            return
        m = self.view.mask
        self.heatmap.show_mask(self.view.image, m.n_q, m.n_k, self.view.tiles, self.controls.overlay.isChecked())
        self.heatmap.set_boundaries(self.view.boundaries, m.n_k)

    def _revert_edits(self, *_) -> None:
        """After a rejected edit, the source, table and painting go back to the last valid mask
        (with none yet, as after a bad file opened at start-up, the first view is shown instead,
        unless it is the first view that failed: its sentence stays, and no retry loop starts)."""
        if self.view is None or self.last_request is None:
            if not self._first_view_tried:
                self.first_view_timer.start()
            return
        self.source = self.last_request.kind
        if self.source == "vectors":
            self.custom_vectors = self.view.mask.indices
        self.painted = None if self.view.dense is None else self.view.dense.copy()
        self.vectors.set_vectors(self.view.mask.indices[0, 0], self.view.mask.column_names)
        self._redraw()

    # Direct edits ------------------------------------------------------------------------------
    def _on_vectors_edited(self, values: np.ndarray) -> None:
        if self.view is None:
            return
        full = np.array(self.view.mask.indices, dtype=np.int64)
        full[0, 0] = values
        self.custom_vectors = full
        self.custom_causal = self.view.mask.causal
        self._custom_n_q = self.view.mask.n_q
        self._to_custom("vectors")

    def _to_custom(self, source: str) -> None:
        self.source = source
        self._building = True
        self.controls.preset.setCurrentIndex(self.controls.preset.findData("custom"))
        self.controls.compose_on.setChecked(False)
        self._building = False
        self.analysis_timer.start()

    def _on_boundaries(self, positions: list[float]) -> None:
        """Dragged document boundaries go to the engine, which turns them into the sizes parameter."""
        if self.view is None or self.view.sizes_param not in self.controls.param_widgets:
            return
        self._dragged = tuple(positions)
        self.analysis_timer.stop()
        self.request_analysis()

    def _on_paint_mode(self) -> None:
        small = self.view is not None and self.view.dense is not None
        self.controls.paint_mode.setEnabled(small)
        self.heatmap.paint_enabled = small and self.controls.paint_mode.currentData() != "off"
        if not small and self.controls.paint_mode.currentData() != "off":
            self.controls.paint_mode.setCurrentIndex(0)
            self.show_info("Painting works for N up to 256; use the vectors table for larger masks.")

    def _on_paint(self, row: int, col: int) -> None:
        if self.view is None or self.view.dense is None:
            return
        if self.painted is None or self.painted.shape != self.view.dense.shape:
            self.painted = self.view.dense.copy()
        visible = self.controls.paint_mode.currentData() == "show"
        if self.painted[row, col] == visible:
            return
        self.painted[row, col] = visible
        self.heatmap.show_mask(self.painted.astype(float), *self.painted.shape, None, False)
        self._to_custom("dense")

    # Timing ------------------------------------------------------------------------------------
    def _on_timing_edit(self, *_) -> None:
        if self.controls.live.isChecked() and self.view is not None:
            self.timing_timer.start()

    def timing_settings(self) -> TimingSettings | None:
        """The timing the controls ask for; None (and a sentence) when no backend is chosen."""
        c = self.controls
        backends = tuple(name for name, cb in c.backend_boxes.items() if cb.isChecked())
        if not backends:
            self.show_error("Choose at least one backend to time.")
            return None
        tile = c.tile.value()
        return TimingSettings(
            heads=c.heads.value(), dim=c.dim.value(), backends=backends, repeats=c.repeats.value(), block=tile if tile >= 16 else 128
        )

    def start_timing(self) -> bool:
        if self.view is None:
            self.show_error("No mask yet: wait for the mask to be analysed.")
            return False
        settings = self.timing_settings()
        if settings is None:
            return False
        view = self.view
        sweep_from = (view.name, view.params) if self.controls.with_sweep.isChecked() and view.name in library.MASKS else None
        if self.controls.with_sweep.isChecked() and sweep_from is None:
            sweep_from = ("sliding_window", {})
        self.runner.start(lambda job: work.time_mask(view, settings, sweep_from, job), "Timing attention backends")
        return True

    def _on_timing(self, report) -> None:
        self.report = report
        case = report.cases[0]
        self.timing_table.setRowCount(len(case.rows))
        for i, r in enumerate(case.rows):
            cells = (
                r.backend,
                f"{r.ms:.2f}",
                f"{100 * r.spread:.0f}%",
                f"{r.tflops_dense:.3f}",
                f"{r.tflops_block:.3f}",
                f"{r.tflops_element:.3f}",
                "-" if r.max_error is None else f"{r.max_error:.1e}",
                _bytes(r.mask_bytes),
                _opt(r.speedup_vs_dense, "x"),
                _opt(r.speedup_vs_flex, "x"),
                _opt(r.pct_of_ideal, "%"),
            )
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setTextAlignment((Qt.AlignmentFlag.AlignRight if j else Qt.AlignmentFlag.AlignLeft) | Qt.AlignmentFlag.AlignVCenter)
                self.timing_table.setItem(i, j, item)
        self.noise_note.setText(
            f"N={report.n_q}, heads={report.settings.heads}, dim={report.settings.dim}, {report.threads} thread(s), "
            f"{report.settings.repeats} repeats. {'⚠ ' if report.noisy else ''}Timings {report.note}."
        )
        self.noise_note.setStyleSheet("color: #8a6d00;" if report.noisy else "color: #2e7d32;")

    def _on_timing_done(self, result) -> None:
        report, sweep = result
        self._on_timing(report)
        self.controls.timing.status.setText("done")
        if sweep is not None:
            self.sweep = sweep
            self.sweep_plot.show_sweep(sweep)
            self.sweep_plot.setTitle(f"sweep: {sweep.family}", size="9pt")

    def run_default(self) -> bool:
        """A quick timing of the default mask: 4-document causal mask, N=1024, SDPA vs blocksparse."""
        self._building = True
        self.source = "preset"
        self.controls.compose_on.setChecked(False)
        self.controls.n.setValue(1024)
        self._set_preset("causal_document")
        self.controls.backend_boxes["flex"].setChecked(False)
        self.controls.repeats.setValue(3)
        self._building = False

        def then_time(result) -> None:
            self.analysis.finished.disconnect(then_time)
            self.timing_timer.stop()
            self.start_timing()

        self.analysis.finished.connect(then_time)
        self.request_analysis()
        return True

    # Files ------------------------------------------------------------------------------------
    def _open_dialog(self) -> None:
        dialog = QFileDialog(self, "Open FlashMask vectors", self.ctx.settings.last_dir(), "FlashMask vectors (*.json *.npy)")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(lambda p: self.open_path(Path(p)))
        dialog.open()

    def open_path(self, path: Path, causal: bool | None = None) -> None:
        """Load vectors (.json, or .npy whose C tells the mode) and show them as a custom mask; a
        .npy with C=2 columns could be either mode, so the user is asked which."""
        from engines.attention.export import npy_needs_mode

        if causal is None and npy_needs_mode(path):
            self._ask_mode(path)
            return
        tile = self.controls.tile.value()
        self.ctx.add_recent(str(path))
        self.analysis.start(lambda job: work.open_vectors(path, causal, tile, job), f"Opening {path.name}")

    def _ask_mode(self, path: Path) -> None:
        """Ask (without blocking the window) whether C=2 vectors are [LTS, LTE] or [LTS, UTE]."""
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Open vectors",
            f"{path.name} holds C=2 vectors: [LTS, LTE] of a causal mask or [LTS, UTE] of a bidirectional one. Which is it?",
            parent=self,
        )
        causal = box.addButton("Causal", QMessageBox.ButtonRole.AcceptRole)
        bidirectional = box.addButton("Bidirectional", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)

        def chosen(_: int) -> None:
            clicked = box.clickedButton()
            if clicked in (causal, bidirectional):
                self.open_path(path, clicked == causal)

        box.finished.connect(chosen)
        self.mode_question = box  # kept for tests and so that it is not collected while open
        box.open()

    def export_actions(self) -> list[QAction]:
        actions = []
        for kind, label, default, filt in EXPORTS:
            action = QAction(label, self)
            action.triggered.connect(lambda checked=False, k=kind, d=default, f=filt: self._export_dialog(k, d, f))
            actions.append(action)
        return actions

    def _export_dialog(self, kind: str, default: str, filt: str) -> None:
        base = self.ctx.settings.last_dir()
        dialog = QFileDialog(self, "Export", str(Path(base) / default), filt)
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.fileSelected.connect(lambda p: self.export_to(kind, Path(p)))
        dialog.open()

    def export_to(self, kind: str, path: Path) -> bool:
        """Write the current mask (or the last timing) as ``kind`` in the background."""
        if self.view is None:
            self.show_error("Nothing to export yet: wait for the mask to be analysed.")
            return False
        if kind == "csv" and self.report is None:
            self.show_error("Nothing timed yet: run a timing first, then export the table.")
            return False
        view, report = self.view, self.report
        self.exporter.start(lambda job: work.export(kind, path, view, report, job), f"Exporting {path.name}")
        return True

    # Sessions ---------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        c = self.controls
        vectors = painted = None
        if self.source == "vectors" and self.custom_vectors is not None and np.asarray(self.custom_vectors).size <= MAX_SESSION_INTS:
            vectors = Vectors(np.asarray(self.custom_vectors), self.custom_causal, self._custom_n_q)
        if self.source == "dense" and self.painted is not None:
            painted = self.painted.astype(int)
        session = AttentionSession(
            source=self.source,
            preset=c.preset.currentData(),
            n=c.n.value(),
            params=c.params(),
            compose=Compose(c.compose_on.isChecked(), c.compose_with.currentData(), c.compose_op.currentData()),
            tile=c.tile.value(),
            overlay=c.overlay.isChecked(),
            timing=Timing(
                tuple(n for n, cb in c.backend_boxes.items() if cb.isChecked()),
                c.heads.value(),
                c.dim.value(),
                c.repeats.value(),
                c.live.isChecked(),
                c.with_sweep.isChecked(),
            ),
            vectors=vectors,
            painted=painted,
        )
        return {key: value for key, value in to_jsonable(session).items() if value is not None or key not in ("vectors", "painted")}

    def restore(self, state: dict[str, Any]) -> None:
        """Take a session's settings, all or none: every value is checked before any widget
        changes, so a bad one is one sentence and leaves the panel as it was."""
        try:
            session = read_session(state)
        except (ValueError, EngineError) as exc:
            self.show_error(f"Could not restore the attention panel: {exc}")
            return
        c, timing = self.controls, session.timing
        self._building = True
        try:
            c.n.setValue(session.n)
            if session.preset in library.MASKS:
                c.preset.setCurrentIndex(c.preset.findData(session.preset))
                c.build_params(session.preset, session.params)
            c.compose_on.setChecked(session.compose.on)
            if session.compose.with_ is not None:
                c.compose_with.setCurrentIndex(c.compose_with.findData(session.compose.with_))
            c.compose_op.setCurrentIndex(c.compose_op.findData(session.compose.operation))
            c.tile.setValue(session.tile)
            c.overlay.setChecked(session.overlay)
            for name, cb in c.backend_boxes.items():
                cb.setChecked(name in timing.backends)
            c.heads.setValue(timing.heads)
            c.dim.setValue(timing.dim)
            c.repeats.setValue(timing.repeats)
            c.live.setChecked(timing.live)
            c.with_sweep.setChecked(timing.sweep)
            self.source = session.source
            if self.source == "vectors" and session.vectors is not None:
                self.custom_vectors, self.custom_causal, self._custom_n_q = session.vectors.indices, session.vectors.causal, session.vectors.n_q
                c.preset.setCurrentIndex(c.preset.findData("custom"))
            elif self.source == "dense" and session.painted is not None:
                self.painted = session.painted
                c.preset.setCurrentIndex(c.preset.findData("custom"))
            elif self.source not in ("preset", "compose"):  # its vectors or painting were too large to save
                self.source = "preset"
        finally:
            self._building = False
        self.request_analysis(keep_message=True)

    def shutdown(self) -> None:
        for timer in (self.first_view_timer, self.analysis_timer, self.timing_timer):
            timer.stop()
        super().shutdown()


def _single_shot(parent, ms: int, slot) -> QTimer:
    timer = QTimer(parent)
    timer.setSingleShot(True)
    timer.setInterval(ms)
    timer.timeout.connect(slot)
    return timer


def _bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(n)


def _opt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}%" if unit == "%" else f"{value:.2f}{unit}"
