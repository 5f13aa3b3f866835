"""The topomap panel's left column: training parameters with Run/Cancel/progress, run files, and
what the map shows. Widgets only: the panel reads them and connects their signals."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engines.topomap.params import DATASETS, EPOCHS_RANGE, MAP_KINDS, METHOD_TITLES, METHODS, TrainParams
from panels.run_controls import RunControls

from .session import ALPHA0_RANGE, SEED_RANGE, TAU_RANGE

DEFAULTS = TrainParams()


class TopomapControls(QWidget):
    """Train (method, data, schedule; Train / Cancel), Runs (open a run or a comparison; the shown
    run's summary) and Show (layer, map kind, class, pinwheels)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # No fixed minimum width: the splitter then stops at what the layout needs (its widest row,
        # "Open run…" beside "Open comparison…"), so no button's text is clipped at the narrowest.
        self.setMaximumWidth(300)
        col = QVBoxLayout(self)
        col.setContentsMargins(2, 2, 2, 2)
        col.addWidget(self._train_box())
        col.addWidget(self._runs_box())
        col.addWidget(self._show_box())
        col.addStretch(1)
        # Long item names elide when the column is narrow instead of clipping the labels beside them.
        for combo in (self.method, self.data, self.layer, self.kind, self.klass):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(8)

    def _train_box(self) -> QGroupBox:
        train = QGroupBox("Train")
        form = QFormLayout(train)
        self.method = QComboBox()
        for m in METHODS:
            self.method.addItem(METHOD_TITLES[m], m)
        self.method.setCurrentIndex(METHODS.index(DEFAULTS.method))
        self.data = QComboBox()
        for d in DATASETS:
            self.data.addItem(d, d)
        self.data.setCurrentIndex(DATASETS.index(DEFAULTS.data))
        self.epochs = QSpinBox()
        self.epochs.setRange(*EPOCHS_RANGE)
        self.epochs.setValue(DEFAULTS.epochs)
        self.seed = QSpinBox()
        self.seed.setRange(*SEED_RANGE)
        self.seed.setValue(DEFAULTS.seed)
        self.widths = QLineEdit(",".join(map(str, DEFAULTS.widths)))
        self.widths.setToolTip("Units per conv layer; each must be a square number (its units sit on a square grid).")
        self.alpha0 = QDoubleSpinBox()
        self.alpha0.setDecimals(3)
        self.alpha0.setRange(*ALPHA0_RANGE)
        self.alpha0.setSingleStep(0.01)
        self.alpha0.setValue(DEFAULTS.alpha0)
        self.alpha0.setToolTip("SOM learning rate at the first step; it decays as e^(-3t/T), floored at 0.003.")
        self.tau = QDoubleSpinBox()
        self.tau.setRange(*TAU_RANGE)
        self.tau.setValue(DEFAULTS.tau)
        self.tau.setToolTip("TopoLoss weight (only for the TopoLoss method).")
        form.addRow("Method", self.method)
        form.addRow("Data", self.data)
        form.addRow("Epochs", self.epochs)
        form.addRow("Seed", self.seed)
        form.addRow("Widths", self.widths)
        form.addRow("α0", self.alpha0)
        form.addRow("τ", self.tau)
        self.run = RunControls("Train")
        self.run.status.setStyleSheet("color: #555;")
        form.addRow(self.run)
        return train

    def _runs_box(self) -> QGroupBox:
        runs = QGroupBox("Runs")
        rl = QVBoxLayout(runs)
        row = QHBoxLayout()
        self.open_run = QPushButton("Open run…")
        self.open_compare = QPushButton("Open comparison…")
        row.addWidget(self.open_run)
        row.addWidget(self.open_compare)
        rl.addLayout(row)
        self.summary = QLabel("No run loaded.")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        rl.addWidget(self.summary)
        return runs

    def _show_box(self) -> QGroupBox:
        show = QGroupBox("Show")
        sf = QFormLayout(show)
        self.layer = QComboBox()
        self.kind = QComboBox()
        for key, label in MAP_KINDS.items():
            self.kind.addItem(label, key)
        self.klass = QComboBox()
        self.show_pinwheels = QCheckBox("Pinwheel markers")
        self.show_pinwheels.setChecked(True)
        sf.addRow("Layer", self.layer)
        sf.addRow("Map", self.kind)
        sf.addRow("Class", self.klass)
        sf.addRow(self.show_pinwheels)
        return show
