"""The panel's side tabs: input, segment list, view controls, agent replay, thresholds, metrics.

Widgets only: they show what the engine computed and emit what the user asked for.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QFormLayout, QGridLayout, QHBoxLayout, QHeaderView, QLabel, QPushButton, QSlider,
    QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from engines.segmentation.params import THRESHOLDS
from engines.segmentation.pointio.frame import UNIT_LABELS, UNITS, UP_AXES, UP_LABELS

COLOR_MODES = ("instance", "ground truth", "score", "prior residual", "rgb", "errors")


UNCONFIRMED_TIP = ("No search claimed these points: a connected part the prior never confirmed as an object, "
                   "ranked after every confirmed segment")


NESTED_TIP = ("A part beneath the main horizontal surface of segment #{parent} (a chair pushed under a table), proposed as "
              "an object of its own; its points stay in #{parent} too. Ranked after every other segment")


_CONFIRMED_ROLE = Qt.ItemDataRole.UserRole + 1


class SegmentList(QWidget):
    """Segments with a visibility box each, their sizes and scores; a row click selects one."""

    visibilityChanged = Signal(object)  # set of hidden ids
    selected = Signal(int)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        self.table = QTableWidget(0, 3)
        self.table.setObjectName("segmentTable")
        self.table.setHorizontalHeaderLabels(["Segment", "Points", "Score"])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)  # "#12 (unconfirmed)" on one line
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.itemChanged.connect(self._changed)
        self.table.itemSelectionChanged.connect(self._selected)
        layout.addWidget(self.table)
        row = QHBoxLayout()
        self.show_all = QPushButton("Show all")
        self.hide_all = QPushButton("Hide all")
        self.hide_unconfirmed = QPushButton("Hide unconfirmed")
        self.hide_unconfirmed.setToolTip("Hide the segments the prior did not confirm: unclaimed parts and nested proposals "
                                         "(a point inside a nested proposal is drawn as that proposal)")
        self.show_all.clicked.connect(lambda: self._set_all(True))
        self.hide_all.clicked.connect(lambda: self._set_all(False))
        self.hide_unconfirmed.clicked.connect(lambda: self._set_all(False, only_unconfirmed=True))
        row.addWidget(self.show_all)
        row.addWidget(self.hide_all)
        row.addWidget(self.hide_unconfirmed)
        layout.addLayout(row)
        self._filling = False

    def fill(self, rows: list[tuple[int, int, float, bool, int]]) -> None:
        self._filling = True
        self.table.setRowCount(len(rows))
        for r, (sid, points, score, confirmed, parent) in enumerate(rows):
            label = f"#{sid} (in #{parent})" if parent else f"#{sid}" if confirmed else f"#{sid} (unconfirmed)"
            item = QTableWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, sid)
            item.setData(_CONFIRMED_ROLE, confirmed)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            cells = (item, QTableWidgetItem(f"{points:,}"), QTableWidgetItem(f"{score:.3f}"))
            for c, cell in enumerate(cells):
                if not confirmed:
                    cell.setToolTip(NESTED_TIP.format(parent=parent) if parent else UNCONFIRMED_TIP)
                    cell.setForeground(self.palette().placeholderText())
                self.table.setItem(r, c, cell)
        self.hide_unconfirmed.setEnabled(not all(row[3] for row in rows))
        self._filling = False

    def hidden(self) -> set[int]:
        out = set()
        for r in range(self.table.rowCount()):
            item = self.table.item(r, 0)
            if item.checkState() != Qt.CheckState.Checked:
                out.add(int(item.data(Qt.ItemDataRole.UserRole)))
        return out

    def select_id(self, sid: int | None) -> None:
        if sid is None:
            self.table.clearSelection()
            return
        for r in range(self.table.rowCount()):
            if self.table.item(r, 0).data(Qt.ItemDataRole.UserRole) == sid:
                self.table.selectRow(r)
                return

    def selected_id(self) -> int | None:
        rows = self.table.selectionModel().selectedRows()
        return int(self.table.item(rows[0].row(), 0).data(Qt.ItemDataRole.UserRole)) if rows else None

    def _set_all(self, on: bool, only_unconfirmed: bool = False) -> None:
        self._filling = True
        for r in range(self.table.rowCount()):
            item = self.table.item(r, 0)
            if not (only_unconfirmed and item.data(_CONFIRMED_ROLE)):
                item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        self._filling = False
        self.visibilityChanged.emit(self.hidden())

    def _changed(self, item: QTableWidgetItem) -> None:
        if not self._filling and item.column() == 0:
            self.visibilityChanged.emit(self.hidden())

    def _selected(self) -> None:
        sid = self.selected_id()
        if sid is not None:
            self.selected.emit(sid)


class ViewControls(QWidget):
    """Colour mode, point size, camera presets, side-by-side ground truth and camera linking."""

    colorModeChanged = Signal(str)
    pointSizeChanged = Signal(float)
    preset = Signal(str)
    sideBySideChanged = Signal(bool)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        form = QFormLayout(self)
        self.color = QComboBox()
        self.color.setObjectName("colorMode")
        self.color.addItems(list(COLOR_MODES))
        self.color.currentTextChanged.connect(self.colorModeChanged)
        form.addRow("Colour by", self.color)
        self.size = QSlider(Qt.Orientation.Horizontal)
        self.size.setObjectName("pointSize")
        self.size.setRange(1, 12)
        self.size.setValue(3)
        self.size.valueChanged.connect(lambda v: self.pointSizeChanged.emit(float(v)))
        form.addRow("Point size", self.size)
        grid = QGridLayout()
        self.buttons = {}
        for i, (name, label) in enumerate((("top", "Top"), ("front", "Front"), ("iso", "Iso"), ("fit", "Fit selection"))):
            b = QPushButton(label)
            b.setObjectName(f"camera_{name}")
            b.clicked.connect(lambda checked=False, n=name: self.preset.emit(n))
            grid.addWidget(b, i // 2, i % 2)
            self.buttons[name] = b
        form.addRow("Camera", grid)
        self.side = QCheckBox("Ground truth side by side")
        self.side.setChecked(True)
        self.side.toggled.connect(self.sideBySideChanged)
        self.link = QCheckBox("Link the two cameras")
        self.link.setChecked(True)
        form.addRow(self.side)
        form.addRow(self.link)
        self.legend = QLabel("")
        self.legend.setWordWrap(True)
        form.addRow(self.legend)
        self.info = QLabel("Click a point to select its segment.")
        self.info.setObjectName("pickInfo")
        self.info.setWordWrap(True)
        form.addRow(self.info)


class AgentReplay(QWidget):
    """Pick a trajectory and step through it: the cylinder, the action and the reward."""

    stepChanged = Signal(int, int)  # trajectory, step

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        self.trajectory = QComboBox()
        self.trajectory.setObjectName("trajectoryBox")
        self.trajectory.currentIndexChanged.connect(self._emit)
        layout.addWidget(self.trajectory)
        row = QHBoxLayout()
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setObjectName("stepSlider")
        self.slider.valueChanged.connect(self._emit)
        self.play = QPushButton("Play")
        self.play.setCheckable(True)
        row.addWidget(self.slider, 1)
        row.addWidget(self.play)
        layout.addLayout(row)
        self.text = QLabel("Run GrabS to see its agent's trajectories.")
        self.text.setObjectName("stepText")
        self.text.setWordWrap(True)
        layout.addWidget(self.text)
        self.show_cylinder = QCheckBox("Show the cylinder")
        self.show_cylinder.setChecked(True)
        self.show_cylinder.toggled.connect(lambda _: self._emit())
        layout.addWidget(self.show_cylinder)
        layout.addStretch(1)

    def fill(self, labels: list[str], current: int = 0) -> None:
        self.trajectory.blockSignals(True)
        self.trajectory.clear()
        self.trajectory.addItems(labels)
        if labels:
            self.trajectory.setCurrentIndex(current)
        self.trajectory.blockSignals(False)
        self._emit()

    def set_steps(self, n: int) -> None:
        self.slider.blockSignals(True)
        self.slider.setRange(0, max(0, n - 1))
        self.slider.blockSignals(False)

    def _emit(self, *_) -> None:
        self.stepChanged.emit(self.trajectory.currentIndex(), self.slider.value())


class ThresholdControls(QWidget):
    """Sliders for the reward, deduplication and joining thresholds; changes re-score masks in the background."""

    changed = Signal()
    SPECS = THRESHOLDS  # the engine's names, ranges and defaults

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        form = QFormLayout(self)
        self.sliders: dict[str, QSlider] = {}
        self.labels: dict[str, QLabel] = {}
        for name, spec in self.SPECS.items():
            lo, hi, step = spec.low, spec.high, spec.step
            s = QSlider(Qt.Orientation.Horizontal)
            s.setObjectName(f"threshold_{name}")
            s.setRange(0, int(round((hi - lo) / step)))
            value_label = QLabel()
            s.valueChanged.connect(lambda _v, n=name: self._update_label(n))
            s.sliderReleased.connect(self.changed)
            s.valueChanged.connect(lambda _v, sl=s: None if sl.isSliderDown() else self.changed.emit())
            self.sliders[name] = s
            self.labels[name] = value_label
            row = QHBoxLayout()
            row.addWidget(s, 1)
            row.addWidget(value_label)
            form.addRow(spec.label, row)
            self.set_value(name, spec.default, emit=False)
        self.unclaimed = QCheckBox("Unclaimed parts as unconfirmed segments")
        self.unclaimed.setObjectName("threshold_unclaimed")
        self.unclaimed.setChecked(True)
        self.unclaimed.setToolTip("Object points no search claimed, in connected parts, kept as segments ranked after every confirmed one")
        self.unclaimed.toggled.connect(lambda _on: self.changed.emit())
        form.addRow(self.unclaimed)
        self.nested = QCheckBox("Nested proposals beneath a segment's top")
        self.nested.setObjectName("threshold_nested")
        self.nested.setChecked(True)
        self.nested.setToolTip("The parts beneath a segment's main horizontal surface (a chair under a table), proposed as objects "
                               "of their own inside it, ranked after every other segment")
        self.nested.toggled.connect(lambda _on: self.changed.emit())
        form.addRow(self.nested)
        self.note = QLabel("Changing a threshold re-scores the agent's final cylinders with the prior (no new search).")
        self.note.setWordWrap(True)
        form.addRow(self.note)

    def value(self, name: str) -> float:
        spec = self.SPECS[name]
        return spec.low + self.sliders[name].value() * spec.step

    def set_value(self, name: str, value: float, emit: bool = True) -> None:
        spec = self.SPECS[name]
        lo, hi, step = spec.low, spec.high, spec.step
        s = self.sliders[name]
        s.blockSignals(not emit)
        s.setValue(int(round((min(max(value, lo), hi) - lo) / step)))
        s.blockSignals(False)
        self._update_label(name)

    def values(self) -> dict[str, float]:
        return {name: self.value(name) for name in self.SPECS}

    def _update_label(self, name: str) -> None:
        self.labels[name].setText(self.SPECS[name].fmt.format(self.value(name)))


class MetricsView(QWidget):
    """ScanNet AP table and precision/recall curves (when the cloud carries ground truth)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        self.table = QTableWidget(0, 2)
        self.table.setObjectName("apTable")
        self.table.setHorizontalHeaderLabels(["Measure", "Value"])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        layout.addWidget(self.table, 1)
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("prPlot")
        self.plot.setLabel("bottom", "recall")
        self.plot.setLabel("left", "precision")
        self.plot.setXRange(0, 1)
        self.plot.setYRange(0, 1.05)
        self.plot.addLegend(offset=(-10, 10))
        layout.addWidget(self.plot, 1)
        self.note = QLabel("Open a cloud with an 'instance' field (ground truth) to score a segmentation.")
        self.note.setWordWrap(True)
        layout.addWidget(self.note)

    def show_rows(self, rows: list[tuple[str, str]], curves: dict[str, tuple[tuple[float, ...], tuple[float, ...]]]) -> None:
        self.table.setRowCount(len(rows))
        for r, (name, value) in enumerate(rows):
            self.table.setItem(r, 0, QTableWidgetItem(name))
            self.table.setItem(r, 1, QTableWidgetItem(value))
        self.plot.clear()
        pens = {"0.50": pg.mkPen("#f0a020", width=2), "0.25": pg.mkPen("#40a0f0", width=2)}
        for key, (precision, recall) in curves.items():
            order = sorted(range(len(recall)), key=lambda i: recall[i])
            self.plot.plot([recall[i] for i in order], [precision[i] for i in order], pen=pens.get(key), name=f"IoU {key}", stepMode=None)
        self.note.setVisible(not rows)


class InputControls(QWidget):
    """The file's units and up axis: detected, or set by the user; changing one reads the file again."""

    changed = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        form = QFormLayout(self)
        self.units = QComboBox()
        self.units.setObjectName("inputUnits")
        for key in UNITS:
            self.units.addItem(UNIT_LABELS[key], key)
        self.units.setToolTip("Detect: millimetres when the scan is far too large for metres yet room-sized at 1/1000")
        self.up = QComboBox()
        self.up.setObjectName("inputUp")
        for key in UP_AXES:
            self.up.addItem(UP_LABELS[key], key)
        self.up.setToolTip("Detect: y up when the largest level plane (the floor) is square to y rather than z")
        for box in (self.units, self.up):
            box.currentIndexChanged.connect(lambda _i: self.changed.emit())
        form.addRow("Units", self.units)
        form.addRow("Up axis", self.up)
        self.assumed = QLabel("Open a point cloud to see what was assumed.")
        self.assumed.setObjectName("inputAssumed")
        self.assumed.setWordWrap(True)
        form.addRow(self.assumed)
        note = QLabel("The scan is converted to metres, z up, for segmentation; exports are written back in the file's own units and axes. "
                      "A PLY with faces is a mesh: its surface is sampled to points.")
        note.setWordWrap(True)
        form.addRow(note)

    def values(self) -> tuple[str, str]:
        return self.units.currentData(), self.up.currentData()

    def set_values(self, units: str, up: str) -> None:
        for box, value in ((self.units, units), (self.up, up)):
            box.blockSignals(True)
            box.setCurrentIndex(box.findData(value))
            box.blockSignals(False)
