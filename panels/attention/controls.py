"""The attention panel's side column: the mask (preset, N, its parameters, composition), the view
(tile size, overlay, painting), live timing (backends, shapes, Run/Cancel/progress) and readouts.
Widgets only: the panel reads them and connects their signals; the preset's parameter widgets are
built here from the engine's library (``build_params``), and ``paramEdited`` says one changed."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engines.attention import library
from engines.attention.params import CPU_BACKENDS, DIM_RANGE, HEADS_RANGE, MAX_N, OPERATIONS, TILE_RANGE, TimingSettings
from panels.run_controls import RunControls

from .session import LIVE_REPEATS_RANGE, AttentionSession

DEFAULTS = AttentionSession()
TIMING = TimingSettings()
OPERATION_LABELS = {"intersection": "∩ intersection", "union": "∪ union"}
READOUTS = (
    ("description", "mask"),
    ("rho", "rho"),
    ("ideal", "ideal speed-up"),
    ("density", "density"),
    ("tiles", "tiles"),
    ("flashmask", "FlashMask bytes"),
    ("dense", "dense mask bytes"),
    ("blockmask", "Flex BlockMask bytes"),
)


class AttentionControls(QWidget):
    paramEdited = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.param_widgets: dict[str, QWidget] = {}
        side = QVBoxLayout(self)
        side.addWidget(self._mask_box())
        side.addWidget(self._view_box())
        side.addWidget(self._timing_box())
        side.addWidget(self._readout_box())
        side.addStretch(1)

    def _mask_box(self) -> QGroupBox:
        box = QGroupBox("Mask")
        form = QFormLayout(box)
        self.preset = QComboBox()
        for name, spec in library.MASKS.items():
            self.preset.addItem(spec.title, name)
        self.preset.addItem("(custom vectors)", "custom")
        form.addRow("Preset", self.preset)
        self.n = QSpinBox()
        self.n.setRange(1, MAX_N)
        self.n.setValue(DEFAULTS.n)
        self.n.setSingleStep(256)
        self.n.setToolTip("Sequence length N (queries = keys). Large N is drawn downsampled, never as an N x N array.")
        form.addRow("N", self.n)
        self.param_box = QWidget()
        self.param_form = QFormLayout(self.param_box)
        self.param_form.setContentsMargins(0, 0, 0, 0)
        form.addRow(self.param_box)
        self.compose_on = QCheckBox("Compose with")
        self.compose_op = QComboBox()
        for name in OPERATIONS:
            self.compose_op.addItem(OPERATION_LABELS[name], name)
        self.compose_with = QComboBox()
        for name, spec in library.MASKS.items():
            self.compose_with.addItem(spec.title, name)
        self.compose_with.setCurrentIndex(list(library.MASKS).index("sliding_window"))
        row = QHBoxLayout()
        row.addWidget(self.compose_on)
        row.addWidget(self.compose_op)
        form.addRow(row)
        form.addRow("   second mask", self.compose_with)
        self.open_button = QPushButton("Open vectors…")
        form.addRow(self.open_button)
        return box

    def _view_box(self) -> QGroupBox:
        box = QGroupBox("View")
        form = QFormLayout(box)
        self.tile = QSpinBox()
        self.tile.setRange(*TILE_RANGE)
        self.tile.setValue(DEFAULTS.tile)
        self.tile.setToolTip("Tile size (rows = columns) for the overlay, rho and the ideal speed-up")
        form.addRow("Tile size", self.tile)
        self.overlay = QCheckBox("Tile overlay: green unmasked, amber partial, red skipped")
        self.overlay.setChecked(DEFAULTS.overlay)
        form.addRow(self.overlay)
        self.paint_mode = QComboBox()
        self.paint_mode.addItem("off", "off")
        self.paint_mode.addItem("hide cells (drag)", "hide")
        self.paint_mode.addItem("show cells (drag)", "show")
        self.paint_mode.setToolTip("Paint on the heat map, for N up to 256")
        form.addRow("Paint", self.paint_mode)
        return box

    def _timing_box(self) -> QGroupBox:
        box = QGroupBox("Live timing (B=1, fp32)")
        form = QFormLayout(box)
        row = QHBoxLayout()
        self.backend_boxes: dict[str, QCheckBox] = {}
        for name in CPU_BACKENDS:
            cb = QCheckBox(name)
            cb.setChecked(name in DEFAULTS.timing.backends)
            if name == "flex":
                cb.setToolTip("Compiled FlexAttention: the first run at a new shape compiles for ~10-40 s")
            self.backend_boxes[name] = cb
            row.addWidget(cb)
        form.addRow(row)
        self.heads = QSpinBox()
        self.heads.setRange(*HEADS_RANGE)
        self.heads.setValue(TIMING.heads)
        self.dim = QSpinBox()
        self.dim.setRange(*DIM_RANGE)
        self.dim.setValue(TIMING.dim)
        self.repeats = QSpinBox()
        self.repeats.setRange(*LIVE_REPEATS_RANGE)
        self.repeats.setValue(DEFAULTS.timing.repeats)
        shape = QHBoxLayout()
        shape.addWidget(QLabel("heads"))
        shape.addWidget(self.heads)
        shape.addWidget(QLabel("dim"))
        shape.addWidget(self.dim)
        form.addRow(shape)
        form.addRow("Repeats", self.repeats)
        self.live = QCheckBox("Time on every edit (debounced)")
        self.live.setChecked(DEFAULTS.timing.live)
        self.with_sweep = QCheckBox("Sweep rho (latency vs sparsity)")
        self.with_sweep.setChecked(DEFAULTS.timing.sweep)
        form.addRow(self.live)
        form.addRow(self.with_sweep)
        self.timing = RunControls("Time now")
        form.addRow(self.timing)
        return box

    def _readout_box(self) -> QGroupBox:
        box = QGroupBox("Readouts")
        grid = QGridLayout(box)
        self.readouts: dict[str, QLabel] = {}
        for row, (key, label) in enumerate(READOUTS):
            grid.addWidget(QLabel(label), row, 0)
            value = QLabel("…")
            value.setWordWrap(True)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            grid.addWidget(value, row, 1)
            self.readouts[key] = value
        return box

    # The preset's parameters ----------------------------------------------------------------
    def build_params(self, name: str, values: dict[str, Any] | None = None) -> None:
        """One widget per parameter of the library mask ``name``, with its range, at N's defaults."""
        while self.param_form.rowCount():
            self.param_form.removeRow(0)
        self.param_widgets = {}
        if name not in library.MASKS:
            return
        spec = library.MASKS[name]
        values = {**spec.defaults(self.n.value()), **(values or {})}
        for p in spec.params:
            value = values[p.name]
            if p.kind == "int":
                w = QSpinBox()
                w.setRange(int(p.minimum), int(p.maximum) if p.maximum is not None else MAX_N)
                w.setValue(int(value))
                w.valueChanged.connect(self.paramEdited)
            elif p.kind == "float":
                w = QDoubleSpinBox()
                w.setDecimals(3)
                w.setSingleStep(0.05)
                w.setRange(float(p.minimum), float(p.maximum) if p.maximum is not None else 1e9)
                w.setValue(float(value))
                w.valueChanged.connect(self.paramEdited)
            else:
                w = QLineEdit(", ".join(f"{x:g}" for x in value) if not isinstance(value, str) else value)
                w.editingFinished.connect(self.paramEdited)
            w.setToolTip(p.help)
            w.setObjectName(f"param_{p.name}")
            self.param_widgets[p.name] = w
            self.param_form.addRow(p.name, w)

    def params(self) -> dict[str, Any]:
        return {name: w.text() if isinstance(w, QLineEdit) else w.value() for name, w in self.param_widgets.items()}
