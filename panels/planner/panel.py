"""The planner replay panel: run a scenario with a planner, then scrub, play, re-run, compare.

Every number shown comes from the engine (episodes, replay arrays, scores); the panel turns
widget state into ``RunParams`` and starts jobs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSignalBlocker, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QListWidget,
    QListWidgetItem, QProgressBar, QPushButton, QSlider, QSpinBox, QSplitter, QStyle, QTableWidget, QTableWidgetItem,
    QTabWidget, QToolButton, QVBoxLayout, QWidget,
)

from engines.core import EngineError, json_loads, resource_path
from engines.planner.guidance_config import DEFAULT_WEIGHTS, SAFETY_TERMS, TERMS
from engines.planner.params import GUIDED, PLANNERS

from ..base import MethodPanel, PanelContext, side_scroll
from ..session_checks import choice, flag, mapping, named, number, shown, text, whole
from .folder import FolderTab, suite_job
from .plots import MetricPlots
from .view import CAMERAS, LAYERS, SceneView

TYPES = ("straight", "curve", "merge", "intersection", "lead_braking", "cut_in", "stopped_vehicle", "dense_traffic")
PLANNER_NAMES = PLANNERS
COMPARE = ("none", "diffusion", GUIDED, *(p for p in PLANNERS if p != "diffusion"))
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)
EXAMPLE = "example_scenario.json"
PREVIEW = "planner: scene preview"


@dataclass
class Loaded:
    """A job's result: episode A (and B for A/B) with their replay arrays."""

    episode: Any
    replay: Any
    compare: Any = None
    compare_replay: Any = None
    rows: list = field(default_factory=list)
    trace: list | None = None
    note: str = ""


class PlannerPanel(MethodPanel):
    name = "planner"
    title = "Planner replay (Diffusion Planner)"

    def __init__(self, ctx: PanelContext, parent=None) -> None:
        super().__init__(ctx, parent)
        self.loaded: Loaded | None = None
        self.file_source: Path | None = None
        self.pending: tuple[int, float, float] | None = None
        self.denoise: list | None = None
        self.timer = QTimer(self)
        self.timer.timeout.connect(self._tick)
        self._build()
        self.runner.finished.connect(self._on_result)
        self.runner.progress.connect(lambda f, t: (self.progress.setValue(int(1000 * f)), self.progress.setFormat(t)))
        self.runner.started.connect(lambda *_: self._busy(True))
        self.runner.done.connect(lambda: self._busy(False))
        # exports and folder suites on slots of their own: neither cancels a simulation, nor it them
        self.exporter = self.add_runner("planner-export", finished=self.show_info)
        self.folder_runner = self.add_runner("planner-folder", finished=self.folder.show_scores, controls=self.folder.controls)
        self.folder.controls.run_button.clicked.connect(self.run_folder)
        self.folder.fileChosen.connect(lambda path: self.open_path(Path(path)))
        self.source.currentIndexChanged.connect(self.preview)
        self.seed.valueChanged.connect(self.preview)
        self.preview()  # open on the chosen scene at t = 0 rather than an empty view

    # UI ---------------------------------------------------------------------------------------
    def _build(self) -> None:
        outer = QHBoxLayout(self.body)
        outer.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Horizontal)
        outer.addWidget(split)
        split.addWidget(self._controls())
        right = QSplitter(Qt.Orientation.Vertical)
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        self.summary = QLabel("Run a scenario to see the planner drive it.")
        self.summary.setObjectName("plannerSummary")
        self.summary.setWordWrap(True)
        tl.addWidget(self.summary)
        scene_row = QSplitter(Qt.Orientation.Horizontal)
        self.view = SceneView()
        self.view.agentDropped.connect(self._agent_dropped)
        scene_row.addWidget(self.view)
        self.plots = MetricPlots()
        self.plots.seek.connect(lambda t: self.set_frame(int(round(t / self._dt()))))
        scene_row.addWidget(self.plots)
        scene_row.setSizes([700, 330])
        scene_row.setStretchFactor(0, 1)
        tl.addWidget(scene_row, 1)
        tl.addWidget(self._timeline())
        tl.addWidget(self._denoise_bar())
        right.addWidget(top)
        self.tabs = QTabWidget()
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["term", "weight", "value"])
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().setVisible(False)
        self.tabs.addTab(self.table, "Score breakdown")
        self.violations = QListWidget()
        self.violations.itemActivated.connect(self._violation_chosen)
        self.violations.itemClicked.connect(self._violation_chosen)
        self.tabs.addTab(self.violations, "Violations")
        self.folder = FolderTab()
        self.tabs.addTab(self.folder, "Folder")
        right.addWidget(self.tabs)
        right.setSizes([640, 170])
        right.setStretchFactor(0, 1)
        split.addWidget(right)
        split.setSizes([320, 1000])
        split.setStretchFactor(1, 1)
        self._shortcuts()
        self._set_enabled(False)

    def _controls(self) -> QWidget:
        box = QWidget()
        lay = QVBoxLayout(box)
        scen = QGroupBox("Scenario")
        f = QFormLayout(scen)
        self.source = QComboBox()
        self.source.addItems([f"procedural: {t}" for t in TYPES])
        for path in sorted(resource_path("planner", "commonroad").glob("*.xml")):
            self.source.addItem(f"CommonRoad: {path.stem}", str(path))
        self.source.addItem("embedded example", str(resource_path("planner", EXAMPLE)))
        f.addRow("source", self.source)
        self.seed = QSpinBox()
        self.seed.setRange(0, 1_000_000)
        f.addRow("seed", self.seed)
        self.reactive = QCheckBox("reactive agents (IDM)")
        self.reactive.setChecked(True)
        f.addRow(self.reactive)
        lay.addWidget(scen)

        plan = QGroupBox("Planner")
        g = QFormLayout(plan)
        self.planner = QComboBox()
        self.planner.addItems(PLANNER_NAMES)
        g.addRow("planner", self.planner)
        self.samples = QSpinBox()
        self.samples.setRange(1, 32)
        self.samples.setValue(8)
        g.addRow("samples K", self.samples)
        self.steps = QSpinBox()
        self.steps.setRange(1, 30)
        self.steps.setValue(10)
        g.addRow("solver steps", self.steps)
        self.compare = QComboBox()
        self.compare.addItems(COMPARE)
        g.addRow("A/B with", self.compare)
        lay.addWidget(plan)

        guide = QGroupBox("Guidance (diffusion)")
        gg = QGridLayout(guide)
        self.term_box: dict[str, QCheckBox] = {}
        self.term_weight: dict[str, QDoubleSpinBox] = {}
        for i, term in enumerate(TERMS):
            cb = QCheckBox(term)
            cb.setChecked(term in SAFETY_TERMS)
            w = QDoubleSpinBox()
            w.setRange(0.0, 10.0)
            w.setSingleStep(0.1)
            w.setValue(DEFAULT_WEIGHTS[term])
            gg.addWidget(cb, i, 0)
            gg.addWidget(w, i, 1)
            self.term_box[term], self.term_weight[term] = cb, w
        lay.addWidget(guide)

        self.run_btn = QPushButton("Run")
        self.run_btn.setToolTip("Simulate the scenario with the planner (Ctrl+R)")
        self.run_btn.clicked.connect(self.run_clicked)
        self.rerun_btn = QPushButton("Re-run from this frame")
        self.rerun_btn.setToolTip("Keep everything up to the current frame, then drive on with the settings above (and a dragged agent)")
        self.rerun_btn.clicked.connect(self.rerun_clicked)
        self.cutin_btn = QPushButton("Inject a cut-in and re-run")
        self.cutin_btn.clicked.connect(self.cut_in_clicked)
        self.denoise_btn = QPushButton("Show denoising of this replan")
        self.denoise_btn.clicked.connect(self.denoise_clicked)
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.clicked.connect(self.runner.cancel)
        for b in (self.run_btn, self.rerun_btn, self.cutin_btn, self.denoise_btn, self.cancel_btn):
            lay.addWidget(b)
        self.pending_label = QLabel("Drag an agent in the view, then re-run from this frame.")
        self.pending_label.setWordWrap(True)
        lay.addWidget(self.pending_label)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(True)
        lay.addWidget(self.progress)

        layers = QGroupBox("Layers")
        ll = QVBoxLayout(layers)
        self.layers = QListWidget()
        for key, label in LAYERS.items():
            item = QListWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, key)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            self.layers.addItem(item)
        self.layers.itemChanged.connect(self._layers_changed)
        self.layers.setMaximumHeight(200)
        ll.addWidget(self.layers)
        self.camera = QComboBox()
        self.camera.addItems(CAMERAS)
        ll.addWidget(QLabel("camera (wheel zooms)"))
        ll.addWidget(self.camera)
        lay.addWidget(layers)
        lay.addStretch(1)
        return side_scroll(box)

    def _timeline(self) -> QWidget:
        bar = QWidget()
        h = QHBoxLayout(bar)
        h.setContentsMargins(0, 0, 0, 0)

        style = self.style()

        def tool(icon, tip: str, slot) -> QToolButton:
            b = QToolButton()
            b.setIcon(style.standardIcon(icon))
            b.setToolTip(tip)
            b.clicked.connect(slot)
            h.addWidget(b)
            return b

        sp = QStyle.StandardPixmap
        self.first_btn = tool(sp.SP_MediaSkipBackward, "first frame (Home)", lambda: self.set_frame(0))
        self.prev_btn = tool(sp.SP_MediaSeekBackward, "previous frame (Left)", lambda: self.set_frame(self.frame - 1))
        self.play_btn = tool(sp.SP_MediaPlay, "play / pause (Space)", self.toggle_play)
        self.next_btn = tool(sp.SP_MediaSeekForward, "next frame (Right)", lambda: self.set_frame(self.frame + 1))
        self.last_btn = tool(sp.SP_MediaSkipForward, "last frame (End)", lambda: self.set_frame(self._n() - 1))
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.valueChanged.connect(self.set_frame)
        h.addWidget(self.slider, 1)
        self.time_label = QLabel("0.0 s")
        self.time_label.setMinimumWidth(110)
        h.addWidget(self.time_label)
        self.speed = QComboBox()
        self.speed.addItems([f"{s:g}x" for s in SPEEDS])
        self.speed.setCurrentIndex(2)
        self.speed.currentIndexChanged.connect(self._speed_changed)
        h.addWidget(self.speed)
        self.loop = QCheckBox("loop")
        h.addWidget(self.loop)
        self.violation_btn = QPushButton("first violation")
        self.violation_btn.setToolTip("jump to the first violation (V)")
        self.violation_btn.clicked.connect(self.jump_to_violation)
        h.addWidget(self.violation_btn)
        # Re-wire the camera combo now that the view exists.
        self.camera.currentIndexChanged.connect(self.view.set_camera)
        return bar

    def _denoise_bar(self) -> QWidget:
        bar = QWidget()
        h = QHBoxLayout(bar)
        h.setContentsMargins(0, 0, 0, 0)
        self.denoise_label = QLabel("denoising")
        h.addWidget(self.denoise_label)
        self.denoise_slider = QSlider(Qt.Orientation.Horizontal)
        self.denoise_slider.valueChanged.connect(self._denoise_step)
        h.addWidget(self.denoise_slider, 1)
        self.denoise_play = QToolButton()
        self.denoise_play.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_MediaPlay))
        self.denoise_play.setToolTip("animate x_t -> x0 over the solver steps")
        self.denoise_play.clicked.connect(self._denoise_animate)
        h.addWidget(self.denoise_play)
        close = QToolButton()
        close.setText("×")
        close.clicked.connect(self._close_denoise)
        h.addWidget(close)
        self.denoise_timer = QTimer(self)
        self.denoise_timer.setInterval(400)
        self.denoise_timer.timeout.connect(self._denoise_tick)
        self.denoise_bar = bar
        bar.hide()
        return bar

    def _shortcuts(self) -> None:
        """Space play/pause, Left/Right step, Home/End, V first violation, [ ] speed, Ctrl+R run."""
        self.keys = {
            Qt.Key.Key_Space: self.toggle_play, Qt.Key.Key_Left: lambda: self.set_frame(self.frame - 1),
            Qt.Key.Key_Right: lambda: self.set_frame(self.frame + 1), Qt.Key.Key_Home: lambda: self.set_frame(0),
            Qt.Key.Key_End: lambda: self.set_frame(self._n() - 1), Qt.Key.Key_V: self.jump_to_violation,
            Qt.Key.Key_BracketLeft: lambda: self.speed.setCurrentIndex(max(0, self.speed.currentIndex() - 1)),
            Qt.Key.Key_BracketRight: lambda: self.speed.setCurrentIndex(min(len(SPEEDS) - 1, self.speed.currentIndex() + 1)),
        }
        run = QShortcut(QKeySequence("Ctrl+R"), self)
        run.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        run.activated.connect(self.run_clicked)

    def keyPressEvent(self, ev) -> None:  # noqa: N802
        slot = self.keys.get(Qt.Key(ev.key())) if ev.modifiers() == Qt.KeyboardModifier.NoModifier else None
        if slot is None:
            return super().keyPressEvent(ev)
        slot()
        ev.accept()

    def _busy(self, busy: bool) -> None:
        self.run_btn.setEnabled(not busy)
        self.cancel_btn.setEnabled(busy)
        if not busy:
            self.progress.setValue(1000 if self.loaded else 0)

    def _set_enabled(self, has_episode: bool) -> None:
        for w in (self.rerun_btn, self.cutin_btn, self.denoise_btn, self.first_btn, self.prev_btn, self.play_btn, self.next_btn,
                  self.last_btn, self.slider, self.violation_btn):
            w.setEnabled(has_episode)
        self.cancel_btn.setEnabled(False)

    # Parameters ---------------------------------------------------------------------------------
    def params(self, planner: str | None = None, trace_step: int | None = None):
        from engines.planner.runner import RunParams

        name = planner or self.planner.currentText()
        if name == GUIDED:
            name, guidance = "diffusion", ",".join(SAFETY_TERMS)  # what the benchmark calls diffusion+guidance
        elif planner is None and name == "diffusion":  # the main planner follows the guidance toggles
            guidance = ",".join(t for t in TERMS if self.term_box[t].isChecked())
        else:
            guidance = ""
        path = self.source.currentData()
        return RunParams(
            scenario=path, type=None if path else self.source.currentText().split(": ", 1)[1], seed=self.seed.value(), planner=name,
            guidance=guidance, weights={t: self.term_weight[t].value() for t in TERMS}, samples=self.samples.value(),
            steps=self.steps.value(), reactive=self.reactive.isChecked(), trace_step=trace_step,
        )

    # Jobs ---------------------------------------------------------------------------------------
    def run_clicked(self) -> None:
        params = self.params()
        compare = self.compare.currentText()
        compare_params = None if compare == "none" else self.params(compare)
        self.pending = None
        self.view.clear_drag()
        self.runner.start(lambda job: _run_job(params, compare_params, job), f"planner: {params.planner}")

    def rerun_clicked(self) -> None:
        if self.loaded is None:
            return
        params = self.params()
        episode, frame, pending = self.loaded.episode, self.frame, self.pending
        self.runner.start(lambda job: _rerun_job(episode, frame, params, pending, False, job), f"planner: re-run from {frame}")

    def cut_in_clicked(self) -> None:
        if self.loaded is None:
            return
        params = self.params()
        episode, frame = self.loaded.episode, self.frame
        self.runner.start(lambda job: _rerun_job(episode, frame, params, None, True, job), f"planner: cut-in at {frame}")

    def denoise_clicked(self) -> None:
        if self.loaded is None:
            return
        params = self.params("diffusion")
        guidance = ",".join(t for t in TERMS if self.term_box[t].isChecked())
        from dataclasses import replace

        params = replace(params, guidance=guidance)
        episode, frame, loaded = self.loaded.episode, self.frame, self.loaded
        self.runner.start(lambda job: _denoise_job(episode, frame, params, loaded), f"planner: denoising at {frame}")

    def open_path(self, path: Path) -> None:
        if Path(path).is_dir():  # a folder of scenarios: the Folder tab
            self.open_folder(Path(path))
            return
        params = self.params()
        self.file_source = Path(path)
        label = f"file: {Path(path).name}"
        idx = self.source.findText(label)
        if idx < 0:
            self.source.addItem(label, str(path))
            idx = self.source.count() - 1
        with QSignalBlocker(self.source):  # a run follows: no preview
            self.source.setCurrentIndex(idx)
        from dataclasses import replace

        params = replace(params, scenario=str(path), type=None)
        self.runner.start(lambda job: _open_job(Path(path), params, job), f"planner: open {Path(path).name}")
        self.ctx.add_recent(str(path))

    def open_folder(self, folder: Path) -> None:
        """List a folder's scenario files in the Folder tab (the CLI's screenshot and tests call this too)."""
        try:
            self.folder.open_folder(folder)
        except EngineError as exc:
            self.show_error(str(exc))
            return
        self.tabs.setCurrentWidget(self.folder)

    def run_folder(self) -> None:
        """The suite over the open folder with the chosen planner (diffusion with guidance ticked: guided)."""
        if self.folder.folder is None:
            return
        params = self.params()
        planner = "diffusion+guidance" if params.planner == "diffusion" and params.guidance else params.planner
        folder, checkpoint = self.folder.folder, params.checkpoint
        self.folder_runner.start(lambda job: suite_job(folder, planner, params.guidance, checkpoint, job), f"planner: suite on {folder.name}")

    def preview(self, *_: Any) -> None:
        """Draw the chosen scenario at t = 0, until the first run (a result is never replaced by
        a preview: the controls may change while the user looks at it)."""
        if self.loaded is not None or (self.runner.busy and self.runner.current.label != PREVIEW):
            return
        params = self.params()
        self.runner.start(lambda job: _preview_job(params), PREVIEW)

    def run_default(self) -> bool:
        with QSignalBlocker(self.source):  # a run follows: no preview
            self.source.setCurrentIndex(self.source.findText("embedded example"))
        self.planner.setCurrentText("diffusion")
        self.compare.setCurrentText("none")
        self.run_clicked()
        return True

    def _on_result(self, result: Any) -> None:
        if isinstance(result, Preview):
            if self.loaded is None:
                self.view.set_replay(result.replay, None)
                self.summary.setText(result.replay.summary)
            return
        if not isinstance(result, Loaded):
            return
        if result.trace is not None and self.loaded is not None and result.episode is self.loaded.episode:
            self.denoise = result.trace
            self.denoise_slider.setRange(0, len(result.trace) - 1)
            self.denoise_bar.show()
            self.denoise_slider.setValue(0)
            self._denoise_step(0)
            self.show_info(result.note)
            return
        self.loaded = result
        self.denoise = None
        self.denoise_bar.hide()
        self.pending = None
        self.view.clear_drag()
        self.pending_label.setText("Drag an agent in the view, then re-run from this frame.")
        self.view.set_replay(result.replay, result.episode)
        if result.compare_replay is not None:
            self.view.set_compare(result.compare_replay.ego_path)
        else:
            self.view.set_compare(result.replay.ego_path[:0])
        self.plots.set_data(result.replay.time, result.replay.signals, result.compare_replay.signals if result.compare_replay else None)
        self._fill_table(result)
        self.violations.clear()
        for step, text in result.replay.violations:
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, step)
            self.violations.addItem(item)
        if not result.replay.violations:
            item = QListWidgetItem("No violation in this episode.")
            item.setFlags(Qt.ItemFlag.NoItemFlags)  # a note, not a frame to jump to
            self.violations.addItem(item)
        summary = result.replay.summary
        if result.compare is not None:
            summary += f"  |  B: {result.compare.planner} CLS {result.compare.score:.1f}"
        self.summary.setText(summary)
        self.slider.blockSignals(True)
        self.slider.setRange(0, self._n() - 1)
        self.slider.blockSignals(False)
        self._set_enabled(True)
        start = int(result.episode.extras.get("rerun_from", 0))
        self.set_frame(start)
        if result.note:
            self.show_info(result.note)

    def _fill_table(self, result: Loaded) -> None:
        rows = result.rows or result.replay.breakdown
        self.table.setHorizontalHeaderLabels(["term", "A", "B"] if result.rows else ["term", "weight", "value"])
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, v in enumerate(row):
                self.table.setItem(r, c, QTableWidgetItem(v))
        self.table.resizeColumnsToContents()

    # Timeline -----------------------------------------------------------------------------------
    @property
    def frame(self) -> int:
        return self.view.frame

    def _n(self) -> int:
        return len(self.loaded.replay.frames) if self.loaded else 1

    def _dt(self) -> float:
        return self.loaded.episode.dt if self.loaded else 0.1

    def set_frame(self, k: int) -> None:
        if self.loaded is None:
            return
        k = max(0, min(int(k), self._n() - 1))
        box = None
        if self.loaded.compare_replay is not None:
            frames = self.loaded.compare_replay.frames
            box = frames[min(k, len(frames) - 1)].ego_box
        self.view.set_frame(k, box)
        if self.slider.value() != k:
            self.slider.blockSignals(True)
            self.slider.setValue(k)
            self.slider.blockSignals(False)
        ep = self.loaded.episode
        self.time_label.setText(f"{k * ep.dt:5.1f} s  ({k}/{self._n() - 1})")
        self.plots.set_cursor(k * ep.dt)

    def toggle_play(self) -> None:
        sp = QStyle.StandardPixmap
        if self.timer.isActive():
            self.timer.stop()
            self.play_btn.setIcon(self.style().standardIcon(sp.SP_MediaPlay))
        elif self.loaded is not None:
            if self.frame >= self._n() - 1:
                self.set_frame(0)
            self._speed_changed()
            self.timer.start()
            self.play_btn.setIcon(self.style().standardIcon(sp.SP_MediaPause))

    def _speed_changed(self, *_: Any) -> None:
        self.timer.setInterval(max(1, int(1000 * self._dt() / SPEEDS[self.speed.currentIndex()])))

    def _tick(self) -> None:
        if self.frame >= self._n() - 1:
            if self.loop.isChecked():
                self.set_frame(0)
            else:
                self.toggle_play()
            return
        self.set_frame(self.frame + 1)

    def _violation_chosen(self, item: QListWidgetItem) -> None:
        step = item.data(Qt.ItemDataRole.UserRole)
        if step is not None:  # the "no violation" note has none
            self.set_frame(int(step))

    def jump_to_violation(self) -> None:
        if self.loaded is None:
            return
        first = self.loaded.replay.first_violation
        if first is None:
            self.show_info("No violation in this episode.")
            return
        self.set_frame(first)
        self.tabs.setCurrentIndex(1)

    def _layers_changed(self, item: QListWidgetItem) -> None:
        self.view.visible[item.data(Qt.ItemDataRole.UserRole)] = item.checkState() == Qt.CheckState.Checked
        self.view.apply_layers()

    def _agent_dropped(self, agent_id: int, x: float, y: float) -> None:
        self.pending = (agent_id, x, y)
        self.pending_label.setText(f"Agent {agent_id} moved to ({x:.1f}, {y:.1f}) at frame {self.frame}: press 'Re-run from this frame'.")

    # Denoising animation ---------------------------------------------------------------------------
    def _denoise_step(self, i: int) -> None:
        if not self.denoise:
            return
        st = self.denoise[max(0, min(i, len(self.denoise) - 1))]
        self.view.set_denoise(st)
        self.denoise_label.setText(f"solver step {i + 1}/{len(self.denoise)}  t = {st['t']:.3f}")

    def _denoise_animate(self) -> None:
        if self.denoise_timer.isActive():
            self.denoise_timer.stop()
        else:
            self.denoise_slider.setValue(0)
            self.denoise_timer.start()

    def _denoise_tick(self) -> None:
        i = self.denoise_slider.value() + 1
        if i >= len(self.denoise or []):
            self.denoise_timer.stop()
            return
        self.denoise_slider.setValue(i)

    def _close_denoise(self) -> None:
        self.denoise_timer.stop()
        self.denoise = None
        self.view.clear_denoise()
        self.denoise_bar.hide()

    # Replay speed measurement ---------------------------------------------------------------------
    def show_episode(self, episode, max_samples: int = 16) -> None:
        """Show an episode simulated elsewhere (the frame-rate benchmark, tests)."""
        from engines.planner.replay import build_replay

        self._on_result(Loaded(episode, build_replay(episode, max_samples=max_samples)))

    def measure_fps(self, frames: int = 90) -> float:
        """Frames per second of stepping the replay and repainting the view (on the UI thread)."""
        if self.loaded is None:
            return 0.0
        from PySide6.QtWidgets import QApplication

        t0 = time.perf_counter()
        for i in range(frames):
            self.set_frame(i % self._n())
            self.view.viewport().repaint()
            QApplication.processEvents()
        return frames / (time.perf_counter() - t0)

    # Session ------------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "source": self.source.currentText(), "file": str(self.file_source) if self.file_source else None, "seed": self.seed.value(),
            "reactive": self.reactive.isChecked(), "planner": self.planner.currentText(), "samples": self.samples.value(),
            "steps": self.steps.value(), "compare": self.compare.currentText(),
            "guidance": {t: [self.term_box[t].isChecked(), self.term_weight[t].value()] for t in TERMS},
            "layers": {key: self.view.visible[key] for key in LAYERS}, "camera": self.camera.currentIndex(),
            "speed": self.speed.currentIndex(), "loop": self.loop.isChecked(), "frame": self.frame,
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Apply a session's settings, all or nothing: a bad value is named in the panel's message
        and leaves the panel as it was (never half-applied, never blank combos)."""
        try:
            checked = _checked_state(state)
        except ValueError as exc:
            self.show_error(f"The session's planner settings are invalid: {exc}")
            return
        if checked.get("file"):
            self.file_source = Path(checked["file"])
            label = f"file: {self.file_source.name}"
            if self.source.findText(label) < 0:
                self.source.addItem(label, str(self.file_source))
        idx = self.source.findText(checked.get("source", ""))
        if idx >= 0:
            self.source.setCurrentIndex(idx)
        self.seed.setValue(checked.get("seed", 0))
        self.reactive.setChecked(checked.get("reactive", True))
        self.planner.setCurrentText(checked.get("planner", "diffusion"))
        self.samples.setValue(checked.get("samples", 8))
        self.steps.setValue(checked.get("steps", 10))
        self.compare.setCurrentText(checked.get("compare", "none"))
        for t, (on, w) in checked.get("guidance", {}).items():
            self.term_box[t].setChecked(on)
            self.term_weight[t].setValue(w)
        layers = checked.get("layers", {})
        for i in range(self.layers.count()):
            item = self.layers.item(i)
            key = item.data(Qt.ItemDataRole.UserRole)
            if key in layers:
                item.setCheckState(Qt.CheckState.Checked if layers[key] else Qt.CheckState.Unchecked)
        self.camera.setCurrentIndex(checked.get("camera", 0))
        self.speed.setCurrentIndex(checked.get("speed", 2))
        self.loop.setChecked(checked.get("loop", False))

    # Exports ------------------------------------------------------------------------------------
    def export_actions(self) -> list[QAction]:
        out = []
        for text, suffix, fn in (
            ("view as PNG…", "png", self.export_png), ("replay as GIF…", "gif", self.export_video), ("replay as MP4…", "mp4", self.export_video),
            ("episode as JSON…", "json", self.export_episode), ("episode as CSV…", "csv", self.export_csv),
        ):
            action = QAction(text, self)
            action.triggered.connect(lambda checked=False, s=suffix, f=fn: self._ask_path(s, f))
            out.append(action)
        return out

    def _ask_path(self, suffix: str, fn) -> None:
        if self.loaded is None and suffix != "png":
            self.show_error("Run or open an episode first.")
            return
        name = f"{self.loaded.episode.scenario.name if self.loaded else 'planner'}.{suffix}"
        dialog = QFileDialog(self, "Export", str(Path(self.ctx.settings.last_dir()) / name), f"*.{suffix}")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.fileSelected.connect(lambda p: fn(Path(p)))
        dialog.open()

    def export_png(self, path: Path) -> None:
        from workbench.screenshot import grab_to_png

        try:
            grab_to_png(self.view, path)
            self.show_info(f"Saved {path.name}")
        except EngineError as exc:
            self.show_error(str(exc))

    def export_video(self, path: Path) -> None:
        episode = self.loaded.episode if self.loaded else None
        if episode is None:
            return

        def job(j):
            from engines.planner.render import render_video

            render_video(episode, path, progress=j.progress, cancel=j.cancel)
            return f"Saved {path.name}"

        self._side_job(job, f"planner: export {path.suffix}")

    def export_episode(self, path: Path) -> None:
        episode = self.loaded.episode if self.loaded else None

        def job(j):
            from engines.planner.episode import save_episode

            save_episode(episode, path)
            return f"Saved {path.name}"

        self._side_job(job, "planner: export episode")

    def export_csv(self, path: Path) -> None:
        episode = self.loaded.episode if self.loaded else None

        def job(j):
            from engines.planner.episode import save_csv

            save_csv(episode, path)
            return f"Saved {path.name}"

        self._side_job(job, "planner: export CSV")

    def _side_job(self, work, label: str) -> None:
        """Exports run on their own slot; their result is a sentence for the message bar."""
        self.exporter.start(work, label)

    def shutdown(self) -> None:
        self.timer.stop()
        self.denoise_timer.stop()


# Session checks -----------------------------------------------------------------------------------
def _checked_state(state: Any) -> dict[str, Any]:
    """The session's settings with every type and range checked; ValueError names the first bad one.

    Only keys present are returned, so an older session keeps the defaults for what it lacks.
    """
    mapping(state, "they")
    out: dict[str, Any] = {}
    for key in ("file", "source"):
        if state.get(key) is not None:
            out[key] = text(state[key], key)
    for key, low, high in (("seed", 0, 1_000_000), ("samples", 1, 32), ("steps", 1, 30),
                           ("camera", 0, len(CAMERAS) - 1), ("speed", 0, len(SPEEDS) - 1)):
        if key in state:
            out[key] = whole(state[key], key, low, high)
    for key in ("reactive", "loop"):
        if key in state:
            out[key] = flag(state[key], key)
    for key, names in (("planner", PLANNER_NAMES), ("compare", COMPARE)):
        if key in state:
            out[key] = choice(state[key], key, names)
    if state.get("guidance") is not None:
        out["guidance"] = {t: _guidance_entry(t, v) for t, v in named(state["guidance"], "guidance", TERMS).items()}
    if state.get("layers") is not None:
        out["layers"] = {k: flag(v, f"layer {k!r}") for k, v in named(state["layers"], "layers", LAYERS).items()}
    return out


def _guidance_entry(term: str, value: Any) -> tuple[bool, float]:
    """A guidance term's ``[on, weight]`` pair, as the session writes it."""
    if not (isinstance(value, list) and len(value) == 2):
        raise ValueError(f"guidance {term!r} must be [on, weight], not {shown(value)}")
    return flag(value[0], f"guidance {term!r} on"), number(value[1], f"guidance {term!r} weight", 0, 10)


# Job functions (run in a worker thread) -----------------------------------------------------------
@dataclass
class Preview:
    """A scene at t = 0, before any run."""

    replay: Any


def _preview_job(params) -> Preview:
    from engines.planner.replay import preview_replay
    from engines.planner.runner import load_scenario

    return Preview(preview_replay(load_scenario(params)))


def _loaded(episode, compare=None, note: str = "") -> Loaded:
    from engines.planner.replay import build_replay, compare_rows

    replay = build_replay(episode)
    if compare is None:
        return Loaded(episode, replay, note=note)
    return Loaded(episode, replay, compare, build_replay(compare), compare_rows(episode, compare), note=note)


def _run_job(params, compare_params, job) -> Loaded:
    from engines.core import scaled
    from engines.planner.runner import load_scenario, run

    sc = load_scenario(params)
    split = 0.5 if compare_params else 0.95
    a = run(params, progress=scaled(job.progress, 0.0, split), cancel=job.cancel, scenario=sc).episode
    b = None
    if compare_params is not None:
        b = run(compare_params, progress=scaled(job.progress, split, 0.95), cancel=job.cancel, scenario=sc).episode
    return _loaded(a, b)


def _replan_time(episode, frame: int) -> str:
    """When the action at ``frame`` starts, said so that the end frame's mapping to the last replan
    is never a surprise (re-run, cut-in and denoising all use it)."""
    from engines.planner.runner import replan_frame

    k = replan_frame(episode, frame)
    when = f"{k * episode.dt:.1f} s"
    return when if k == frame else f"{when} (frame {k}, the last replan: frame {frame} is the episode's end)"


def _rerun_job(episode, frame, params, pending, cut_in, job) -> Loaded:
    from engines.planner.runner import move_agent, rerun, with_cut_in

    edit = None
    scenario = None
    when = _replan_time(episode, frame)
    note = f"Re-ran from {when} with {params.planner}."
    if pending is not None:
        agent_id, x, y = pending
        edit = move_agent(agent_id, x, y)
        note = f"Re-ran from {when} with agent {agent_id} moved."
    if cut_in:
        scenario = with_cut_in(episode, frame)
        note = f"Re-ran from {when} with a cut-in by agent {scenario.agents[-1].id}."
    ep = rerun(episode, frame, params, edit=edit, scenario=scenario, progress=job.progress, cancel=job.cancel)
    return _loaded(ep, note=note)


def _denoise_job(episode, frame, params, loaded: Loaded) -> Loaded:
    from engines.planner.replay import denoise_frames
    from engines.planner.runner import denoise_at

    when = _replan_time(episode, frame)
    trace = denoise_at(episode, frame, params)
    frames = denoise_frames(trace)
    return Loaded(loaded.episode, loaded.replay, loaded.compare, loaded.compare_replay, loaded.rows, frames,
                  note=f"Denoising of the replan at {when}: {len(frames)} solver steps (magenta: guidance).")


def _open_job(path: Path, params, job) -> Loaded:
    from engines.planner.episode import FORMAT, episode_from_dict
    from engines.planner.runner import run

    if path.suffix.lower() == ".json":
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise EngineError(f"cannot read {path.name}: {exc}") from None
        data = json_loads(text, path.name)
        if isinstance(data, dict) and data.get("format") == FORMAT:
            return _loaded(episode_from_dict(data, path.name), note=f"Opened the episode {path.name}.")
    return _loaded(run(params, progress=job.progress, cancel=job.cancel).episode, note=f"Simulated {path.name}.")
