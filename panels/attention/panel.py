"""The attention panel: design a FlashMask, see its tiles, and time real kernels on it live.

Every number comes from the engine in a background job: mask analysis (its own job slot, so
edits stay quick), timing and the rho sweep (the panel's main slot: ``run_default`` uses it),
and exports (a third slot).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from engines.attention import library
from engines.core import EngineError
from panels.base import MethodPanel, PanelContext, side_scroll
from panels.session_checks import choice, flag, mapping, named, number, shown, text, whole

from .vectors_model import VectorsModel
from .views import TILE_NAMES, HeatMap, SweepPlot, VectorPlot

BACKEND_CHOICES = ("sdpa_dense", "flex", "blocksparse")
MAX_SESSION_INTS = 1 << 18  # custom vectors larger than this are not written into session files
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
        self.analysis = ctx.jobs.runner("attention-mask")
        self.exporter = ctx.jobs.runner("attention-export")
        for runner in (self.analysis, self.exporter):
            runner.failed.connect(self.show_error)
            runner.errored.connect(lambda text, tb: self.show_error(f"Unexpected error ({text}); the log has the details."))
        self.analysis.started.connect(self._on_analysis_started)
        self._keep_message = False  # set while a job starts that the user did not ask for
        self.analysis.finished.connect(self._on_view)
        self.analysis.failed.connect(self._revert_edits)
        self.runner.partial.connect(self._on_timing)
        self.runner.finished.connect(self._on_timing_done)
        self.runner.progress.connect(lambda f, text: self.timing_status.setText(f"{100 * f:.0f}% {text}"))
        self.exporter.finished.connect(lambda path: self.show_info(f"Saved {Path(path).name}"))

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
        self._param_widgets: dict[str, QWidget] = {}
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
        controls = QWidget()
        side = QVBoxLayout(controls)
        side.addWidget(self._mask_box())
        side.addWidget(self._view_box())
        side.addWidget(self._timing_box())
        side.addWidget(self._readout_box())
        side.addStretch(1)
        outer.addWidget(side_scroll(controls, max_width=430))

        self.heatmap = HeatMap()
        self.heatmap.painted.connect(self._on_paint)
        self.heatmap.boundariesMoved.connect(self._on_boundaries)
        self.vector_plot = VectorPlot()
        self.vectors = VectorsModel(self)
        self.vectors.edited.connect(self._on_vectors_edited)
        self.vectors.rejected.connect(self.show_error)
        self.table_view = QTableView()
        self.table_view.setModel(self.vectors)
        self.table_view.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked | QAbstractItemView.EditTrigger.EditKeyPressed | QAbstractItemView.EditTrigger.AnyKeyPressed)
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

    def _mask_box(self) -> QGroupBox:
        box = QGroupBox("Mask")
        form = QFormLayout(box)
        self.preset = QComboBox()
        for name, spec in library.MASKS.items():
            self.preset.addItem(spec.title, name)
        self.preset.addItem("(custom vectors)", "custom")
        self.preset.currentIndexChanged.connect(self._on_preset_changed)
        form.addRow("Preset", self.preset)
        self.n = QSpinBox()
        self.n.setRange(1, library.MAX_N)
        self.n.setValue(2048)
        self.n.setSingleStep(256)
        self.n.setToolTip("Sequence length N (queries = keys). Large N is drawn downsampled, never as an N x N array.")
        self.n.valueChanged.connect(self._on_edit)
        form.addRow("N", self.n)
        self.param_box = QWidget()
        self.param_form = QFormLayout(self.param_box)
        self.param_form.setContentsMargins(0, 0, 0, 0)
        form.addRow(self.param_box)
        self.compose_on = QCheckBox("Compose with")
        self.compose_on.toggled.connect(self._on_edit)
        self.compose_op = QComboBox()
        self.compose_op.addItem("∩ intersection", "intersection")
        self.compose_op.addItem("∪ union", "union")
        self.compose_op.currentIndexChanged.connect(self._on_edit)
        self.compose_with = QComboBox()
        for name, spec in library.MASKS.items():
            self.compose_with.addItem(spec.title, name)
        self.compose_with.setCurrentIndex(list(library.MASKS).index("sliding_window"))
        self.compose_with.currentIndexChanged.connect(self._on_edit)
        row = QHBoxLayout()
        row.addWidget(self.compose_on)
        row.addWidget(self.compose_op)
        form.addRow(row)
        form.addRow("   second mask", self.compose_with)
        open_button = QPushButton("Open vectors…")
        open_button.clicked.connect(self._open_dialog)
        form.addRow(open_button)
        return box

    def _view_box(self) -> QGroupBox:
        box = QGroupBox("View")
        form = QFormLayout(box)
        self.tile = QSpinBox()
        self.tile.setRange(1, 4096)
        self.tile.setValue(128)
        self.tile.setToolTip("Tile size (rows = columns) for the overlay, rho and the ideal speed-up")
        self.tile.valueChanged.connect(self._on_edit)
        form.addRow("Tile size", self.tile)
        self.overlay = QCheckBox("Tile overlay: green unmasked, amber partial, red skipped")
        self.overlay.setChecked(True)
        self.overlay.toggled.connect(self._redraw)
        form.addRow(self.overlay)
        self.paint_mode = QComboBox()
        self.paint_mode.addItem("off", "off")
        self.paint_mode.addItem("hide cells (drag)", "hide")
        self.paint_mode.addItem("show cells (drag)", "show")
        self.paint_mode.currentIndexChanged.connect(self._on_paint_mode)
        self.paint_mode.setToolTip("Paint on the heat map, for N up to 256")
        form.addRow("Paint", self.paint_mode)
        return box

    def _timing_box(self) -> QGroupBox:
        box = QGroupBox("Live timing (B=1, fp32)")
        form = QFormLayout(box)
        row = QHBoxLayout()
        self.backend_boxes = {}
        for name in BACKEND_CHOICES:
            cb = QCheckBox(name)
            cb.setChecked(name != "flex")
            cb.toggled.connect(self._on_timing_edit)
            if name == "flex":
                cb.setToolTip("Compiled FlexAttention: the first run at a new shape compiles for ~10-40 s")
            self.backend_boxes[name] = cb
            row.addWidget(cb)
        form.addRow(row)
        self.heads = QSpinBox()
        self.heads.setRange(1, 64)
        self.heads.setValue(8)
        self.dim = QSpinBox()
        self.dim.setRange(8, 256)
        self.dim.setValue(64)
        self.repeats = QSpinBox()
        self.repeats.setRange(1, 50)
        self.repeats.setValue(3)
        for w in (self.heads, self.dim, self.repeats):
            w.valueChanged.connect(self._on_timing_edit)
        shape = QHBoxLayout()
        shape.addWidget(QLabel("heads"))
        shape.addWidget(self.heads)
        shape.addWidget(QLabel("dim"))
        shape.addWidget(self.dim)
        form.addRow(shape)
        form.addRow("Repeats", self.repeats)
        self.live = QCheckBox("Time on every edit (debounced)")
        self.live.setChecked(True)
        self.with_sweep = QCheckBox("Sweep rho (latency vs sparsity)")
        self.with_sweep.setChecked(True)
        form.addRow(self.live)
        form.addRow(self.with_sweep)
        self.time_button = QPushButton("Time now")
        self.time_button.clicked.connect(self.start_timing)
        form.addRow(self.time_button)
        self.timing_status = QLabel("")
        form.addRow(self.timing_status)
        return box

    def _readout_box(self) -> QGroupBox:
        box = QGroupBox("Readouts")
        grid = QGridLayout(box)
        self.readouts: dict[str, QLabel] = {}
        for row, (key, label) in enumerate(
            (("description", "mask"), ("rho", "rho"), ("ideal", "ideal speed-up"), ("density", "density"), ("tiles", "tiles"),
             ("flashmask", "FlashMask bytes"), ("dense", "dense mask bytes"), ("blockmask", "Flex BlockMask bytes"))
        ):
            grid.addWidget(QLabel(label), row, 0)
            value = QLabel("…")
            value.setWordWrap(True)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            grid.addWidget(value, row, 1)
            self.readouts[key] = value
        return box

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
        index = self.preset.findData(name)
        self.preset.setCurrentIndex(max(index, 0))
        self._build_params(name)
        self._building = False

    def _build_params(self, name: str, values: dict[str, Any] | None = None) -> None:
        while self.param_form.rowCount():
            self.param_form.removeRow(0)
        self._param_widgets = {}
        if name not in library.MASKS:
            return
        spec = library.MASKS[name]
        defaults = spec.defaults(self.n.value())
        values = {**defaults, **(values or {})}
        for p in spec.params:
            value = values[p.name]
            if p.kind == "int":
                w = QSpinBox()
                w.setRange(int(p.minimum), int(p.maximum) if p.maximum is not None else library.MAX_N)
                w.setValue(int(value))
                w.valueChanged.connect(self._on_edit)
            elif p.kind == "float":
                w = QDoubleSpinBox()
                w.setDecimals(3)
                w.setSingleStep(0.05)
                w.setRange(float(p.minimum), float(p.maximum) if p.maximum is not None else 1e9)
                w.setValue(float(value))
                w.valueChanged.connect(self._on_edit)
            else:
                w = QLineEdit(", ".join(f"{x:g}" for x in value) if not isinstance(value, str) else value)
                w.editingFinished.connect(self._on_edit)
            w.setToolTip(p.help)
            w.setObjectName(f"param_{p.name}")
            self._param_widgets[p.name] = w
            self.param_form.addRow(p.name, w)

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, w in self._param_widgets.items():
            out[name] = w.text() if isinstance(w, QLineEdit) else w.value()
        return out

    def _on_preset_changed(self) -> None:
        if self._building:
            return
        name = self.preset.currentData()
        if name == "custom":
            return
        self.source = "preset"
        self._build_params(name)
        self._on_edit()

    # Requests ----------------------------------------------------------------------------------
    def _on_edit(self, *_) -> None:
        if self._building:
            return
        if self.source in ("vectors", "dense") and self.sender() in (self.n,):
            self.source = "preset"
        if self.source == "preset" and self.compose_on.isChecked():
            self.source = "compose"
        elif self.source == "compose" and not self.compose_on.isChecked():
            self.source = "preset"
        self.analysis_timer.start()

    def current_request(self):
        from engines.attention.view import MaskRequest

        name = self.preset.currentData()
        if self.source == "vectors" and self.custom_vectors is not None:
            return MaskRequest(kind="vectors", vectors=self.custom_vectors, causal=self.custom_causal, n_q=self._custom_n_q)
        if self.source == "dense" and self.painted is not None:
            return MaskRequest(kind="dense", dense=self.painted)
        if name == "custom":
            name = "causal_document"
        if self.compose_on.isChecked():
            return MaskRequest(kind="compose", name=name, n=self.n.value(), params=self.params(), other=self.compose_with.currentData(), operation=self.compose_op.currentData())
        dragged, self._dragged = self._dragged, None
        return MaskRequest(kind="preset", name=name, n=self.n.value(), params=self.params(), boundaries=dragged)

    def request_analysis(self, keep_message: bool = False) -> None:
        """Analyse the current request; ``keep_message`` when the panel starts it on its own."""
        from engines.attention.view import analyze  # numpy only; it runs in the job

        request = self.current_request()
        tile = self.tile.value()
        self._keep_message = keep_message
        try:
            self.analysis.start(lambda job: (request, analyze(request, tile)), "Analysing the mask")
        finally:
            self._keep_message = False

    def _on_view(self, result) -> None:
        request, view = result
        self.view = view
        self.last_request = request
        self.source = request.kind
        if request.kind == "vectors":
            self.custom_vectors, self.custom_causal, self._custom_n_q = view.mask.indices, view.mask.causal, view.mask.n_q
        if view.sizes_param in self._param_widgets:  # the engine's sizes (after a drag, say)
            self._param_widgets[view.sizes_param].setText(", ".join(f"{x:g}" for x in view.params[view.sizes_param]))
        if request.kind in ("vectors", "dense"):
            self._building = True
            self.preset.setCurrentIndex(self.preset.findData("custom"))
            self._building = False
        self._redraw()
        s = view.stats
        self.readouts["description"].setText(f"{view.name}: {view.description}")
        self.readouts["rho"].setText(f"{s.rho:.4f}  ({s.tiles_masked} of {s.tiles} tiles of {s.block_q}x{s.block_k} skipped)")
        self.readouts["ideal"].setText(f"{s.ideal_speedup_text}  (1 / (1 - rho))")
        self.readouts["density"].setText(f"{s.density:.4f} of elements visible")
        self.readouts["tiles"].setText(f"{s.tiles_unmasked} {TILE_NAMES[0]}, {s.tiles_partial} {TILE_NAMES[1]}, {s.tiles_masked} skipped")
        self.readouts["flashmask"].setText(f"{_bytes(s.flashmask_bytes)} + {_bytes(s.minmax_bytes)} min/max")
        self.readouts["dense"].setText(_bytes(s.dense_bytes))
        self.readouts["blockmask"].setText(_bytes(s.blockmask_bytes))
        self.vectors.set_vectors(view.mask.indices[0, 0], view.mask.column_names)
        self.vector_plot.show_vectors(view.mask.indices[0, 0], view.mask.column_names)
        self._on_paint_mode()
        if view.mask.batch * view.mask.heads > 1:
            self.show_info("This mask has several batches/heads: the table, plots and painting show batch 0, head 0.")
        if self.live.isChecked():
            if max(view.mask.n_q, view.mask.n_k) <= LIVE_TIMING_MAX_N:
                self.timing_timer.start()
            else:
                self.timing_status.setText(f"live timing stops at N={LIVE_TIMING_MAX_N}: press Time now")
        self.stateChanged.emit()

    def _redraw(self) -> None:
        if self.view is None:
            return
        m = self.view.mask
        self.heatmap.show_mask(self.view.image, m.n_q, m.n_k, self.view.tiles, self.overlay.isChecked())
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
        self.preset.setCurrentIndex(self.preset.findData("custom"))
        self.compose_on.setChecked(False)
        self._building = False
        self.analysis_timer.start()

    def _on_boundaries(self, positions: list[float]) -> None:
        """Dragged document boundaries go to the engine, which turns them into the sizes parameter."""
        if self.view is None or self.view.sizes_param not in self._param_widgets:
            return
        self._dragged = tuple(positions)
        self.analysis_timer.stop()
        self.request_analysis()

    def _on_paint_mode(self) -> None:
        small = self.view is not None and self.view.dense is not None
        self.paint_mode.setEnabled(small)
        self.heatmap.paint_enabled = small and self.paint_mode.currentData() != "off"
        if not small and self.paint_mode.currentData() != "off":
            self.paint_mode.setCurrentIndex(0)
            self.show_info("Painting works for N up to 256; use the vectors table for larger masks.")

    def _on_paint(self, row: int, col: int) -> None:
        if self.view is None or self.view.dense is None:
            return
        if self.painted is None or self.painted.shape != self.view.dense.shape:
            self.painted = self.view.dense.copy()
        visible = self.paint_mode.currentData() == "show"
        if self.painted[row, col] == visible:
            return
        self.painted[row, col] = visible
        self.heatmap.show_mask(self.painted.astype(float), *self.painted.shape, None, False)
        self._to_custom("dense")

    # Timing ------------------------------------------------------------------------------------
    def _on_timing_edit(self, *_) -> None:
        if self.live.isChecked() and self.view is not None:
            self.timing_timer.start()

    def timing_settings(self):
        from engines.attention.timing import TimingSettings

        backends = tuple(name for name, cb in self.backend_boxes.items() if cb.isChecked())
        return TimingSettings(heads=self.heads.value(), dim=self.dim.value(), backends=backends, repeats=self.repeats.value(), block=self.tile.value() if self.tile.value() >= 16 else 128)

    def start_timing(self) -> bool:
        if self.view is None:
            self.show_error("No mask yet: wait for the mask to be analysed.")
            return False
        settings = self.timing_settings()
        if not settings.backends:
            self.show_error("Choose at least one backend to time.")
            return False
        view = self.view
        sweep_from = (view.name, view.params) if self.with_sweep.isChecked() and view.name in library.MASKS else None
        if self.with_sweep.isChecked() and sweep_from is None:
            sweep_from = ("sliding_window", {})

        def work(job):
            from engines.attention.timing import TimingSettings, time_cases, time_sweep
            from engines.core import scaled

            report = time_cases([(view.name, view.params, view.mask)], settings, scaled(job.progress, 0.0, 0.5 if sweep_from else 1.0), job.cancel)
            job.partial(report)
            sweep = None
            if sweep_from is not None:
                sweep_settings = TimingSettings(heads=settings.heads, dim=settings.dim, backends=tuple(b for b in settings.backends if b != "sdpa_dense") or settings.backends, repeats=max(1, settings.repeats - 1), warmup=1, block=settings.block)
                sweep = time_sweep(sweep_from[0], view.mask.n_k, sweep_from[1], sweep_settings, scaled(job.progress, 0.5, 1.0), job.cancel)
            return report, sweep

        self.runner.start(work, "Timing attention backends")
        return True

    def _on_timing(self, report) -> None:
        self.report = report
        case = report.cases[0]
        self.timing_table.setRowCount(len(case.rows))
        for i, r in enumerate(case.rows):
            cells = (
                r.backend, f"{r.ms:.2f}", f"{100 * r.spread:.0f}%", f"{r.tflops_dense:.3f}", f"{r.tflops_block:.3f}", f"{r.tflops_element:.3f}",
                "-" if r.max_error is None else f"{r.max_error:.1e}", _bytes(r.mask_bytes), _opt(r.speedup_vs_dense, "x"),
                _opt(r.speedup_vs_flex, "x"), _opt(r.pct_of_ideal, "%"),
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
        self.timing_status.setText("done")
        if sweep is not None:
            self.sweep = sweep
            self.sweep_plot.show_sweep(sweep)
            self.sweep_plot.setTitle(f"sweep: {sweep.family}", size="9pt")

    def run_default(self) -> bool:
        """A quick timing of the default mask: 4-document causal mask, N=1024, SDPA vs blocksparse."""
        self._building = True
        self.source = "preset"
        self.compose_on.setChecked(False)
        self.n.setValue(1024)
        self._set_preset("causal_document")
        self.backend_boxes["flex"].setChecked(False)
        self.repeats.setValue(3)
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
        tile = self.tile.value()

        def work(job):
            from engines.attention.export import load_vectors
            from engines.attention.view import MaskRequest, analyze

            mask = load_vectors(path, causal)
            request = MaskRequest(kind="vectors", vectors=mask.indices, causal=mask.causal, n_q=mask.n_q)
            return request, analyze(request, tile)

        self.ctx.add_recent(str(path))
        self.analysis.start(work, f"Opening {path.name}")

    def _ask_mode(self, path: Path) -> None:
        """Ask (without blocking the window) whether C=2 vectors are [LTS, LTE] or [LTS, UTE]."""
        box = QMessageBox(QMessageBox.Icon.Question, "Open vectors",
                          f"{path.name} holds C=2 vectors: [LTS, LTE] of a causal mask or [LTS, UTE] of a "
                          "bidirectional one. Which is it?", parent=self)
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

        def work(job):
            from engines.attention.export import export_mask, timing_csv
            from engines.core import write_text

            if kind == "csv":
                return str(write_text(path, timing_csv(report)))
            return str(export_mask(view.mask, path, kind, view.name, view.params))

        self.exporter.start(work, f"Exporting {path.name}")
        return True

    # Sessions ---------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "source": self.source,
            "preset": self.preset.currentData(),
            "n": self.n.value(),
            "params": {k: v for k, v in self.params().items()},
            "compose": {"on": self.compose_on.isChecked(), "with": self.compose_with.currentData(), "operation": self.compose_op.currentData()},
            "tile": self.tile.value(),
            "overlay": self.overlay.isChecked(),
            "timing": {
                "backends": [n for n, cb in self.backend_boxes.items() if cb.isChecked()],
                "heads": self.heads.value(), "dim": self.dim.value(), "repeats": self.repeats.value(),
                "live": self.live.isChecked(), "sweep": self.with_sweep.isChecked(),
            },
        }
        if self.source == "vectors" and self.custom_vectors is not None and np.asarray(self.custom_vectors).size <= MAX_SESSION_INTS:
            state["vectors"] = {"indices": np.asarray(self.custom_vectors).tolist(), "causal": self.custom_causal, "n_q": self._custom_n_q}
        if self.source == "dense" and self.painted is not None:
            state["painted"] = self.painted.astype(int).tolist()
        return state

    def restore(self, state: dict[str, Any]) -> None:
        """Take a session's settings, all or none: every value is checked before any widget
        changes, so a bad one is one sentence and leaves the panel as it was."""
        try:
            checked = self._checked(state)
        except ValueError as exc:
            self.show_error(f"Could not restore the attention panel: {exc}")
            return
        self._building = True
        try:
            self.n.setValue(checked["n"])
            preset = checked["preset"]
            if preset in library.MASKS:
                self.preset.setCurrentIndex(self.preset.findData(preset))
                self._build_params(preset, checked["params"])
            self.compose_on.setChecked(checked["compose_on"])
            if checked["compose_with"] is not None:
                self.compose_with.setCurrentIndex(self.compose_with.findData(checked["compose_with"]))
            self.compose_op.setCurrentIndex(self.compose_op.findData(checked["compose_operation"]))
            self.tile.setValue(checked["tile"])
            self.overlay.setChecked(checked["overlay"])
            for name, cb in self.backend_boxes.items():
                cb.setChecked(name in checked["backends"])
            self.heads.setValue(checked["heads"])
            self.dim.setValue(checked["dim"])
            self.repeats.setValue(checked["repeats"])
            self.live.setChecked(checked["live"])
            self.with_sweep.setChecked(checked["sweep"])
            self.source = checked["source"]
            if self.source == "vectors" and checked["vectors"] is not None:
                self.custom_vectors, self.custom_causal, self._custom_n_q = checked["vectors"]
                self.preset.setCurrentIndex(self.preset.findData("custom"))
            elif self.source == "dense" and checked["painted"] is not None:
                self.painted = checked["painted"]
                self.preset.setCurrentIndex(self.preset.findData("custom"))
            elif self.source not in ("preset", "compose"):  # its vectors or painting were too large to save
                self.source = "preset"
        finally:
            self._building = False
        self.request_analysis(keep_message=True)

    def _checked(self, state: Any) -> dict[str, Any]:
        """Every setting of a session checked against the widgets' own ranges and choices (and the
        mask's parameters, vectors and painting against the engine's rules) before any is applied;
        ValueError names the first bad one. A missing key takes its default, as it always has."""
        mapping(state, "its settings")
        n = whole(state.get("n", 2048), "n", self.n.minimum(), self.n.maximum())
        preset = choice(state.get("preset", "causal_document"), "preset", [*library.MASKS, "custom"])
        params = mapping(state.get("params", {}), "params")
        if preset in library.MASKS:
            params = _checked_params(preset, n, params)
        compose = named(state.get("compose", {}), "compose", ("on", "with", "operation"))
        timing = named(state.get("timing", {}), "timing", ("backends", "heads", "dim", "repeats", "live", "sweep"))
        backends = timing.get("backends", [b for b in BACKEND_CHOICES if b != "flex"])
        if not isinstance(backends, list):
            raise ValueError(f"timing backends must be a list of {', '.join(BACKEND_CHOICES)}, not {shown(backends)}")
        checked = {
            "n": n,
            "preset": preset,
            "params": params,
            "compose_on": flag(compose.get("on", False), "compose on"),
            "compose_with": None if compose.get("with") is None else choice(compose["with"], "compose with", library.MASKS),
            "compose_operation": choice(compose.get("operation", "intersection"), "compose operation",
                                        [self.compose_op.itemData(i) for i in range(self.compose_op.count())]),
            "tile": whole(state.get("tile", 128), "tile", self.tile.minimum(), self.tile.maximum()),
            "overlay": flag(state.get("overlay", True), "overlay"),
            "backends": [choice(b, "timing backend", BACKEND_CHOICES) for b in backends],
            "live": flag(timing.get("live", True), "timing live"),
            "sweep": flag(timing.get("sweep", True), "timing sweep"),
            "source": choice(state.get("source", "preset"), "source", ("preset", "compose", "vectors", "dense")),
            "vectors": None if "vectors" not in state else _checked_vectors(state["vectors"]),
            "painted": None if "painted" not in state else _checked_painting(state["painted"]),
        }
        for box, key, default in ((self.heads, "heads", 8), (self.dim, "dim", 64), (self.repeats, "repeats", 3)):
            checked[key] = whole(timing.get(key, default), f"timing {key}", box.minimum(), box.maximum())
        return checked

    def shutdown(self) -> None:
        for timer in (self.first_view_timer, self.analysis_timer, self.timing_timer):
            timer.stop()
        self.analysis.cancel()
        self.exporter.cancel()


def _checked_params(preset: str, n: int, params: dict[str, Any]) -> dict[str, Any]:
    """A preset's parameters from a session: each known to the preset and of its widget's kind and
    range, then checked together by the engine (a token count within N, sizes that parse)."""
    spec = library.MASKS[preset]
    kinds = {p.name: p for p in spec.params}
    out: dict[str, Any] = {}
    for name, value in params.items():
        p = kinds[choice(name, f"{preset} parameter", kinds)]
        key = f"parameter {name}"
        if p.kind == "int":
            out[name] = whole(value, key, int(p.minimum), int(p.maximum) if p.maximum is not None else library.MAX_N)
        elif p.kind == "float":
            out[name] = number(value, key, float(p.minimum), float(p.maximum) if p.maximum is not None else 1e9)
        else:
            out[name] = text(value, key)
    try:
        library.resolve_params(preset, n, out)
    except EngineError as exc:
        raise ValueError(str(exc)) from None
    return out


def _checked_vectors(value: Any) -> tuple[np.ndarray, bool, int | None]:
    """Custom vectors from a session, as ``(indices, causal, n_q)``, validated as the engine does."""
    from engines.attention.representation import make_mask

    vectors = named(value, "vectors", ("indices", "causal", "n_q"))
    if "indices" not in vectors or "causal" not in vectors:
        raise ValueError(f"vectors must give indices and causal, not {shown(value)}")
    causal = flag(vectors["causal"], "vectors causal")
    n_q = vectors.get("n_q")
    if n_q is not None:
        n_q = whole(n_q, "vectors n_q", 1, library.MAX_N)
    try:
        indices = np.asarray(vectors["indices"])
        make_mask(indices, causal, n_q)
        return indices.astype(np.int64), causal, n_q
    except (EngineError, ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"vectors are not FlashMask vectors: {exc}") from None


def _checked_painting(value: Any) -> np.ndarray:
    """A painted mask from a session (rows of 0/1), validated as the engine does."""
    from engines.attention.dense import from_dense

    try:
        painted = np.asarray(value)
        if painted.ndim != 2:
            raise EngineError(f"it must be rows of 0/1, not an array of shape {list(painted.shape)}")
        from_dense(painted)
        return painted.astype(bool)
    except (EngineError, ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"painted is not a mask: {exc}") from None


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
