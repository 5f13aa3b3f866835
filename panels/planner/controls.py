"""The planner panel's controls: the side column (scenario, planner, guidance, the actions with
progress, layers and camera), the timeline under the scene and the denoising bar.

Widgets only: the panel reads them and connects their signals.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QListWidget, QListWidgetItem,
    QPushButton, QSlider, QSpinBox, QStyle, QToolButton, QVBoxLayout, QWidget,
)

from engines.core import resource_path
from engines.planner.guidance_config import DEFAULT_WEIGHTS, SAFETY_TERMS, TERMS
from engines.planner.params import PLANNERS

from ..run_controls import RunControls
from .session import CAMERAS, COMPARE, LAYERS, SAMPLES_RANGE, SEED_RANGE, SPEEDS, STEPS_RANGE, WEIGHT_RANGE, PlannerSession

DEFAULTS = PlannerSession()
# engines.planner.procedural.TYPES, not imported from there: building the panel imports no simulator.
TYPES = ("straight", "curve", "merge", "intersection", "lead_braking", "cut_in", "stopped_vehicle", "dense_traffic")
EXAMPLE = "example_scenario.json"
PENDING_HINT = "Drag an agent in the view, then re-run from this frame."


class PlannerControls(QWidget):
    """Scenario (source, seed, reactive agents), Planner (planner, K, solver steps, A/B), Guidance
    (each term on, its weight), the action buttons with the progress bar, and Layers / camera."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.addWidget(self._scenario_box())
        lay.addWidget(self._planner_box())
        lay.addWidget(self._guidance_box())
        self.run = RunControls("Run", text_in_bar=True)
        self.run.run_button.setToolTip("Simulate the scenario with the planner (Ctrl+R)")
        self.rerun_btn = QPushButton("Re-run from this frame")
        self.rerun_btn.setToolTip("Keep everything up to the current frame, then drive on with the settings above (and a dragged agent)")
        self.cutin_btn = QPushButton("Inject a cut-in and re-run")
        self.denoise_btn = QPushButton("Show denoising of this replan")
        lay.addWidget(self.run)
        for b in (self.rerun_btn, self.cutin_btn, self.denoise_btn):
            lay.addWidget(b)
        self.pending_label = QLabel(PENDING_HINT)
        self.pending_label.setWordWrap(True)
        lay.addWidget(self.pending_label)
        lay.addWidget(self._layers_box())
        lay.addStretch(1)

    def _scenario_box(self) -> QGroupBox:
        box = QGroupBox("Scenario")
        f = QFormLayout(box)
        self.source = QComboBox()
        self.source.addItems([f"procedural: {t}" for t in TYPES])
        for path in sorted(resource_path("planner", "commonroad").glob("*.xml")):
            self.source.addItem(f"CommonRoad: {path.stem}", str(path))
        self.source.addItem("embedded example", str(resource_path("planner", EXAMPLE)))
        f.addRow("source", self.source)
        self.seed = QSpinBox()
        self.seed.setRange(*SEED_RANGE)
        self.seed.setValue(DEFAULTS.seed)
        f.addRow("seed", self.seed)
        self.reactive = QCheckBox("reactive agents (IDM)")
        self.reactive.setChecked(DEFAULTS.reactive)
        f.addRow(self.reactive)
        return box

    def _planner_box(self) -> QGroupBox:
        box = QGroupBox("Planner")
        g = QFormLayout(box)
        self.planner = QComboBox()
        self.planner.addItems(PLANNERS)
        self.planner.setCurrentText(DEFAULTS.planner)
        g.addRow("planner", self.planner)
        self.samples = QSpinBox()
        self.samples.setRange(*SAMPLES_RANGE)
        self.samples.setValue(DEFAULTS.samples)
        g.addRow("samples K", self.samples)
        self.steps = QSpinBox()
        self.steps.setRange(*STEPS_RANGE)
        self.steps.setValue(DEFAULTS.steps)
        g.addRow("solver steps", self.steps)
        self.compare = QComboBox()
        self.compare.addItems(COMPARE)
        self.compare.setCurrentText(DEFAULTS.compare)
        g.addRow("A/B with", self.compare)
        return box

    def _guidance_box(self) -> QGroupBox:
        box = QGroupBox("Guidance (diffusion)")
        gg = QGridLayout(box)
        self.term_box: dict[str, QCheckBox] = {}
        self.term_weight: dict[str, QDoubleSpinBox] = {}
        for i, term in enumerate(TERMS):
            cb = QCheckBox(term)
            cb.setChecked(term in SAFETY_TERMS)
            w = QDoubleSpinBox()
            w.setRange(*WEIGHT_RANGE)
            w.setSingleStep(0.1)
            w.setValue(DEFAULT_WEIGHTS[term])
            gg.addWidget(cb, i, 0)
            gg.addWidget(w, i, 1)
            self.term_box[term], self.term_weight[term] = cb, w
        return box

    def _layers_box(self) -> QGroupBox:
        box = QGroupBox("Layers")
        ll = QVBoxLayout(box)
        self.layers = QListWidget()
        for key, label in LAYERS.items():
            item = QListWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, key)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            self.layers.addItem(item)
        self.layers.setMaximumHeight(200)
        ll.addWidget(self.layers)
        self.camera = QComboBox()
        self.camera.addItems(CAMERAS)
        self.camera.setCurrentIndex(DEFAULTS.camera)
        ll.addWidget(QLabel("camera (wheel zooms)"))
        ll.addWidget(self.camera)
        return box


class Timeline(QWidget):
    """First / previous / play / next / last, the frame slider and time, speed, loop, first violation."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        h = QHBoxLayout(self)
        h.setContentsMargins(0, 0, 0, 0)
        sp = QStyle.StandardPixmap
        self.first_btn = self._tool(h, sp.SP_MediaSkipBackward, "first frame (Home)")
        self.prev_btn = self._tool(h, sp.SP_MediaSeekBackward, "previous frame (Left)")
        self.play_btn = self._tool(h, sp.SP_MediaPlay, "play / pause (Space)")
        self.next_btn = self._tool(h, sp.SP_MediaSeekForward, "next frame (Right)")
        self.last_btn = self._tool(h, sp.SP_MediaSkipForward, "last frame (End)")
        self.slider = QSlider(Qt.Orientation.Horizontal)
        h.addWidget(self.slider, 1)
        self.time_label = QLabel("0.0 s")
        self.time_label.setMinimumWidth(110)
        h.addWidget(self.time_label)
        self.speed = QComboBox()
        self.speed.addItems([f"{s:g}x" for s in SPEEDS])
        self.speed.setCurrentIndex(DEFAULTS.speed)
        h.addWidget(self.speed)
        self.loop = QCheckBox("loop")
        self.loop.setChecked(DEFAULTS.loop)
        h.addWidget(self.loop)
        self.violation_btn = QPushButton("first violation")
        self.violation_btn.setToolTip("jump to the first violation (V)")
        h.addWidget(self.violation_btn)

    def _tool(self, row: QHBoxLayout, icon: QStyle.StandardPixmap, tip: str) -> QToolButton:
        b = QToolButton()
        b.setIcon(self.style().standardIcon(icon))
        b.setToolTip(tip)
        row.addWidget(b)
        return b


class DenoiseBar(QWidget):
    """The solver steps of one replan: a step slider, play (x_t -> x0) and close; hidden until shown."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        h = QHBoxLayout(self)
        h.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel("denoising")
        h.addWidget(self.label)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        h.addWidget(self.slider, 1)
        self.play = QToolButton()
        self.play.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_MediaPlay))
        self.play.setToolTip("animate x_t -> x0 over the solver steps")
        h.addWidget(self.play)
        self.close_btn = QToolButton()
        self.close_btn.setText("×")
        h.addWidget(self.close_btn)
        self.hide()
