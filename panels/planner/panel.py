"""The planner replay panel: run a scenario with a planner, then scrub, play, re-run, compare.

Every number shown comes from the engine in a background job (``work.py``: episodes, replay
arrays, scores); the controls are ``controls.py``, the saved state ``session.py``. This module
turns widget state into ``RunParams``, starts jobs, plays the replay and draws what comes back.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSignalBlocker, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFileDialog, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QSplitter, QStyle, QTableWidget, QTableWidgetItem, QTabWidget,
    QVBoxLayout, QWidget,
)

from engines.core import EngineError, to_jsonable
from engines.planner.guidance_config import SAFETY_TERMS, TERMS
from engines.planner.params import GUIDED

from ..base import MethodPanel, PanelContext, side_scroll
from . import work
from .controls import PENDING_HINT, DenoiseBar, PlannerControls, Timeline
from .folder import ScenarioFolderTab, suite_job
from .plots import MetricPlots
from .session import LAYERS, SPEEDS, PlannerSession, read_session
from .view import SceneView
from .work import Loaded, Preview

PREVIEW = "planner: scene preview"


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
        self.denoise_timer = QTimer(self)
        self.denoise_timer.setInterval(400)
        self.denoise_timer.timeout.connect(self._denoise_tick)
        self._build()
        self.runner.finished.connect(self._on_result)
        self.controls.run.follow(self.runner)
        # exports and folder suites on slots of their own: neither cancels a simulation, nor it them
        self.exporter = self.add_runner("planner-export", finished=self.show_info)
        self.folder_runner = self.add_folder_tab("planner-folder", self.folder, run=self.run_folder, finished=self.folder.show_scores)
        self.folder.fileChosen.connect(lambda path: self.open_path(Path(path)))
        self.controls.source.currentIndexChanged.connect(self.preview)
        self.controls.seed.valueChanged.connect(self.preview)
        self.preview()  # open on the chosen scene at t = 0 rather than an empty view

    # UI ---------------------------------------------------------------------------------------
    def _build(self) -> None:
        outer = QHBoxLayout(self.body)
        outer.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Horizontal)
        outer.addWidget(split)
        self.controls = c = PlannerControls()
        split.addWidget(side_scroll(c))
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
        scene_row.addWidget(self.view)
        self.plots = MetricPlots()
        scene_row.addWidget(self.plots)
        scene_row.setSizes([700, 330])
        scene_row.setStretchFactor(0, 1)
        tl.addWidget(scene_row, 1)
        self.timeline = Timeline()
        tl.addWidget(self.timeline)
        self.denoise_bar = DenoiseBar()
        tl.addWidget(self.denoise_bar)
        right.addWidget(top)
        self.tabs = QTabWidget()
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["term", "weight", "value"])
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().setVisible(False)
        self.tabs.addTab(self.table, "Score breakdown")
        self.violations = QListWidget()
        self.tabs.addTab(self.violations, "Violations")
        self.folder = ScenarioFolderTab()
        self.tabs.addTab(self.folder, "Folder")
        right.addWidget(self.tabs)
        right.setSizes([640, 170])
        right.setStretchFactor(0, 1)
        split.addWidget(right)
        split.setSizes([320, 1000])
        split.setStretchFactor(1, 1)
        self._wire()
        self._shortcuts()
        self._set_enabled(False)

    def _wire(self) -> None:
        c, t, d = self.controls, self.timeline, self.denoise_bar
        c.run.run_button.clicked.connect(self.run_clicked)
        c.rerun_btn.clicked.connect(self.rerun_clicked)
        c.cutin_btn.clicked.connect(self.cut_in_clicked)
        c.denoise_btn.clicked.connect(self.denoise_clicked)
        c.layers.itemChanged.connect(self._layers_changed)
        c.camera.currentIndexChanged.connect(self.view.set_camera)
        self.view.agentDropped.connect(self._agent_dropped)
        self.plots.seek.connect(lambda s: self.set_frame(int(round(s / self._dt()))))
        t.first_btn.clicked.connect(lambda: self.set_frame(0))
        t.prev_btn.clicked.connect(lambda: self.set_frame(self.frame - 1))
        t.play_btn.clicked.connect(self.toggle_play)
        t.next_btn.clicked.connect(lambda: self.set_frame(self.frame + 1))
        t.last_btn.clicked.connect(lambda: self.set_frame(self._n() - 1))
        t.slider.valueChanged.connect(self.set_frame)
        t.speed.currentIndexChanged.connect(self._speed_changed)
        t.violation_btn.clicked.connect(self.jump_to_violation)
        d.slider.valueChanged.connect(self._denoise_step)
        d.play.clicked.connect(self._denoise_animate)
        d.close_btn.clicked.connect(self._close_denoise)
        self.violations.itemActivated.connect(self._violation_chosen)
        self.violations.itemClicked.connect(self._violation_chosen)

    def _shortcuts(self) -> None:
        """Space play/pause, Left/Right step, Home/End, V first violation, [ ] speed, Ctrl+R run."""
        speed = self.timeline.speed
        self.keys = {
            Qt.Key.Key_Space: self.toggle_play, Qt.Key.Key_Left: lambda: self.set_frame(self.frame - 1),
            Qt.Key.Key_Right: lambda: self.set_frame(self.frame + 1), Qt.Key.Key_Home: lambda: self.set_frame(0),
            Qt.Key.Key_End: lambda: self.set_frame(self._n() - 1), Qt.Key.Key_V: self.jump_to_violation,
            Qt.Key.Key_BracketLeft: lambda: speed.setCurrentIndex(max(0, speed.currentIndex() - 1)),
            Qt.Key.Key_BracketRight: lambda: speed.setCurrentIndex(min(len(SPEEDS) - 1, speed.currentIndex() + 1)),
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

    def _set_enabled(self, has_episode: bool) -> None:
        c, t = self.controls, self.timeline
        for w in (c.rerun_btn, c.cutin_btn, c.denoise_btn, t.first_btn, t.prev_btn, t.play_btn, t.next_btn, t.last_btn, t.slider, t.violation_btn):
            w.setEnabled(has_episode)

    # Parameters ---------------------------------------------------------------------------------
    def params(self, planner: str | None = None, trace_step: int | None = None):
        from engines.planner.api import RunParams

        c = self.controls
        name = planner or c.planner.currentText()
        if name == GUIDED:
            name, guidance = "diffusion", ",".join(SAFETY_TERMS)  # what the benchmark calls diffusion+guidance
        elif planner is None and name == "diffusion":  # the main planner follows the guidance toggles
            guidance = self._guidance()
        else:
            guidance = ""
        path = c.source.currentData()
        return RunParams(
            scenario=path, type=None if path else c.source.currentText().split(": ", 1)[1], seed=c.seed.value(), planner=name,
            guidance=guidance, weights={t: c.term_weight[t].value() for t in TERMS}, samples=c.samples.value(),
            steps=c.steps.value(), reactive=c.reactive.isChecked(), trace_step=trace_step,
        )

    def _guidance(self) -> str:
        """The guidance terms ticked, as ``RunParams.guidance`` takes them."""
        return ",".join(t for t in TERMS if self.controls.term_box[t].isChecked())

    # Jobs ---------------------------------------------------------------------------------------
    def run_clicked(self) -> None:
        params = self.params()
        compare = self.controls.compare.currentText()
        compare_params = None if compare == "none" else self.params(compare)
        self.pending = None
        self.view.clear_drag()
        self.runner.start(lambda job: work.simulate(params, compare_params, job), f"planner: {params.planner}")

    def rerun_clicked(self) -> None:
        if self.loaded is None:
            return
        params = self.params()
        episode, frame, pending = self.loaded.episode, self.frame, self.pending
        self.runner.start(lambda job: work.rerun_from(episode, frame, params, pending, False, job), f"planner: re-run from {frame}")

    def cut_in_clicked(self) -> None:
        if self.loaded is None:
            return
        params = self.params()
        episode, frame = self.loaded.episode, self.frame
        self.runner.start(lambda job: work.rerun_from(episode, frame, params, None, True, job), f"planner: cut-in at {frame}")

    def denoise_clicked(self) -> None:
        if self.loaded is None:
            return
        params = replace(self.params("diffusion"), guidance=self._guidance())
        episode, frame, shown = self.loaded.episode, self.frame, self.loaded
        self.runner.start(lambda job: work.denoise(episode, frame, params, shown), f"planner: denoising at {frame}")

    def open_path(self, path: Path) -> None:
        if Path(path).is_dir():  # a folder of scenarios: the Folder tab
            self.open_folder_in(self.folder, Path(path))
            return
        params = self.params()
        self._add_file_source(Path(path))
        with QSignalBlocker(self.controls.source):  # a run follows: no preview
            self.controls.source.setCurrentIndex(self.controls.source.findText(f"file: {Path(path).name}"))
        params = replace(params, scenario=str(path), type=None)
        self.runner.start(lambda job: work.open_file(Path(path), params, job), f"planner: open {Path(path).name}")
        self.ctx.add_recent(str(path))

    def _add_file_source(self, path: Path) -> None:
        """Remember an opened scenario file and offer it among the sources (once)."""
        self.file_source = path
        label = f"file: {path.name}"
        if self.controls.source.findText(label) < 0:
            self.controls.source.addItem(label, str(path))

    def run_folder(self) -> None:
        """The suite over the open folder with the chosen planner (diffusion with guidance ticked: guided),
        where the preferences say batch runs go now."""
        if self.folder.folder is None:
            return
        params = self.params()
        planner = GUIDED if params.planner == "diffusion" and params.guidance else params.planner
        folder, checkpoint, executor = self.folder.folder, params.checkpoint, self.ctx.executor()
        self.folder_runner.start(lambda job: suite_job(folder, planner, params.guidance, checkpoint, executor, job),
                                 f"planner: suite on {folder.name}")

    def preview(self, *_: Any) -> None:
        """Draw the chosen scenario at t = 0, until the first run (a result is never replaced by
        a preview: the controls may change while the user looks at it)."""
        if self.loaded is not None or (self.runner.busy and self.runner.current.label != PREVIEW):
            return
        params = self.params()
        self.runner.start(lambda job: work.preview(params), PREVIEW)

    def run_default(self) -> bool:
        c = self.controls
        with QSignalBlocker(c.source):  # a run follows: no preview
            c.source.setCurrentIndex(c.source.findText("embedded example"))
        c.planner.setCurrentText("diffusion")
        c.compare.setCurrentText("none")
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
            self.denoise_bar.slider.setRange(0, len(result.trace) - 1)
            self.denoise_bar.show()
            self.denoise_bar.slider.setValue(0)
            self._denoise_step(0)
            self.show_info(result.note)
            return
        self.loaded = result
        self.denoise = None
        self.denoise_bar.hide()
        self.pending = None
        self.view.clear_drag()
        self.controls.pending_label.setText(PENDING_HINT)
        self.view.set_replay(result.replay, result.episode)
        if result.compare_replay is not None:
            self.view.set_compare(result.compare_replay.ego_path)
        else:
            self.view.set_compare(result.replay.ego_path[:0])
        self.plots.set_data(result.replay.time, result.replay.signals, result.compare_replay.signals if result.compare_replay else None)
        self._fill_table(result)
        self._fill_violations(result.replay.violations)
        summary = result.replay.summary
        if result.compare is not None:
            summary += f"  |  B: {result.compare.planner} CLS {result.compare.score:.1f}"
        self.summary.setText(summary)
        with QSignalBlocker(self.timeline.slider):
            self.timeline.slider.setRange(0, self._n() - 1)
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

    def _fill_violations(self, violations: list) -> None:
        """One row per violation (a click jumps to its frame), or a note that there is none."""
        self.violations.clear()
        for step, text in violations:
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, step)
            self.violations.addItem(item)
        if not violations:
            item = QListWidgetItem("No violation in this episode.")
            item.setFlags(Qt.ItemFlag.NoItemFlags)  # a note, not a frame to jump to
            self.violations.addItem(item)

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
        slider = self.timeline.slider
        if slider.value() != k:
            with QSignalBlocker(slider):
                slider.setValue(k)
        ep = self.loaded.episode
        self.timeline.time_label.setText(f"{k * ep.dt:5.1f} s  ({k}/{self._n() - 1})")
        self.plots.set_cursor(k * ep.dt)

    def toggle_play(self) -> None:
        sp = QStyle.StandardPixmap
        if self.timer.isActive():
            self.timer.stop()
            self.timeline.play_btn.setIcon(self.style().standardIcon(sp.SP_MediaPlay))
        elif self.loaded is not None:
            if self.frame >= self._n() - 1:
                self.set_frame(0)
            self._speed_changed()
            self.timer.start()
            self.timeline.play_btn.setIcon(self.style().standardIcon(sp.SP_MediaPause))

    def _speed_changed(self, *_: Any) -> None:
        self.timer.setInterval(max(1, int(1000 * self._dt() / SPEEDS[self.timeline.speed.currentIndex()])))

    def _tick(self) -> None:
        if self.frame >= self._n() - 1:
            if self.timeline.loop.isChecked():
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
        self.controls.pending_label.setText(f"Agent {agent_id} moved to ({x:.1f}, {y:.1f}) at frame {self.frame}: press 'Re-run from this frame'.")

    # Denoising animation ---------------------------------------------------------------------------
    def _denoise_step(self, i: int) -> None:
        if not self.denoise:
            return
        st = self.denoise[max(0, min(i, len(self.denoise) - 1))]
        self.view.set_denoise(st)
        self.denoise_bar.label.setText(f"solver step {i + 1}/{len(self.denoise)}  t = {st['t']:.3f}")

    def _denoise_animate(self) -> None:
        if self.denoise_timer.isActive():
            self.denoise_timer.stop()
        else:
            self.denoise_bar.slider.setValue(0)
            self.denoise_timer.start()

    def _denoise_tick(self) -> None:
        i = self.denoise_bar.slider.value() + 1
        if i >= len(self.denoise or []):
            self.denoise_timer.stop()
            return
        self.denoise_bar.slider.setValue(i)

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
        c, t = self.controls, self.timeline
        return to_jsonable(PlannerSession(
            source=c.source.currentText(), file=str(self.file_source) if self.file_source else None, seed=c.seed.value(),
            reactive=c.reactive.isChecked(), planner=c.planner.currentText(), samples=c.samples.value(), steps=c.steps.value(),
            compare=c.compare.currentText(), guidance={term: (c.term_box[term].isChecked(), c.term_weight[term].value()) for term in TERMS},
            layers={key: self.view.visible[key] for key in LAYERS}, camera=c.camera.currentIndex(), speed=t.speed.currentIndex(),
            loop=t.loop.isChecked(), frame=self.frame,
        ))

    def restore(self, state: dict[str, Any]) -> None:
        """Apply a session's settings, all or nothing: a bad value is named in the panel's message
        and leaves the panel as it was (never half-applied, never blank combos)."""
        try:
            session = read_session(state)
        except (ValueError, EngineError) as exc:
            self.show_error(f"The session's planner settings are invalid: {exc}")
            return
        c = self.controls
        if session.file:
            self._add_file_source(Path(session.file))
        idx = c.source.findText(session.source) if session.source is not None else -1
        if idx >= 0:
            c.source.setCurrentIndex(idx)
        c.seed.setValue(session.seed)
        c.reactive.setChecked(session.reactive)
        c.planner.setCurrentText(session.planner)
        c.samples.setValue(session.samples)
        c.steps.setValue(session.steps)
        c.compare.setCurrentText(session.compare)
        for term, (on, weight) in (session.guidance or {}).items():
            c.term_box[term].setChecked(on)
            c.term_weight[term].setValue(weight)
        layers = session.layers or {}
        for i in range(c.layers.count()):
            item = c.layers.item(i)
            key = item.data(Qt.ItemDataRole.UserRole)
            if key in layers:
                item.setCheckState(Qt.CheckState.Checked if layers[key] else Qt.CheckState.Unchecked)
        c.camera.setCurrentIndex(session.camera)
        self.timeline.speed.setCurrentIndex(session.speed)
        self.timeline.loop.setChecked(session.loop)

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
        if self.loaded is not None:
            self._export("video", path, f"planner: export {path.suffix}")

    def export_episode(self, path: Path) -> None:
        self._export("episode", path, "planner: export episode")

    def export_csv(self, path: Path) -> None:
        self._export("csv", path, "planner: export CSV")

    def _export(self, kind: str, path: Path, label: str) -> None:
        """Exports run on their own slot; their result is a sentence for the message bar."""
        episode = self.loaded.episode if self.loaded else None
        self.exporter.start(lambda job: work.export(kind, episode, path, job), label)

    def shutdown(self) -> None:
        self.timer.stop()
        self.denoise_timer.stop()
        super().shutdown()
