"""The GrabS panel: open a point cloud, segment it in the background, inspect it in 3-D.

Prediction and ground truth side by side with linked cameras; colour by instance, ground truth,
score, prior residual, RGB or false positives / negatives; a segment list with visibility boxes;
click-to-select; camera presets; the agent's trajectories replayed with their cylinders; threshold
sliders that re-score masks in the background; the AP table and precision/recall curves; exports.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QSignalBlocker, Qt, QTimer
from PySide6.QtGui import QAction, QImage, QPainter
from PySide6.QtWidgets import (
    QComboBox, QFileDialog, QHBoxLayout, QLabel, QProgressBar, QPushButton, QSpinBox, QSplitter, QTabWidget,
    QVBoxLayout, QWidget,
)

from engines.core import EngineError, atomic_path
from engines.segmentation.params import OLD_NAMES
from engines.segmentation.pointio.frame import UNITS, UP_AXES

from ..base import MethodPanel, PanelContext
from ..session_checks import choice, flag, mapping, named, number, text, whole
from . import work
from .bench_tab import BenchTab, bench_job
from .sidebar import COLOR_MODES, AgentReplay, InputControls, MetricsView, SegmentList, ThresholdControls, ViewControls
from .view3d import PointView

FILTER = "Point clouds (*.ply *.pcd *.xyz *.pts *.npz)"


class SegmentationPanel(MethodPanel):
    name = "segmentation"
    title = "3D segmentation (GrabS)"

    def __init__(self, ctx: PanelContext, parent: QWidget | None = None) -> None:
        super().__init__(ctx, parent)
        self.scene = None  # engines.segmentation.viewer.SceneView
        self.view = None  # engines.segmentation.viewer.ResultView
        self.hidden: set[int] = set()
        self.selected: int | None = None
        self._job_kind = ""
        self._visible = np.zeros(0, bool)
        # One runner per export kind: exporting JSON must not cancel a PLY still being written.
        self._exporters = {kind: self.add_runner(f"segmentation-export-{kind}", finished=lambda p: self.show_info(f"Wrote {p}"))
                           for kind in ("ply", "json", "scannet")}
        self._recompute_timer = QTimer(self)
        self._recompute_timer.setSingleShot(True)
        self._recompute_timer.setInterval(300)
        self._recompute_timer.timeout.connect(self.recompute)
        self._play = QTimer(self)
        self._play.setInterval(450)
        self._play.timeout.connect(self._advance)
        self._build()
        self.runner.started.connect(lambda *_: self._busy(True))
        self.runner.done.connect(lambda: self._busy(False))
        self.runner.progress.connect(self._progress)
        self.runner.finished.connect(self._on_finished)
        # The status line shows a job's progress; when the job fails it goes back to what it said before.
        self.runner.started.connect(lambda *_: setattr(self, "_status_before", self.status.text()))
        for signal in (self.runner.failed, self.runner.errored, self.runner.cancelled):
            signal.connect(lambda *_: self.status.setText(self._status_before))
        self._restore_ui_choices()
        self._show_example_room()

    def _show_example_room(self) -> None:
        """A first look at something rather than an empty view: the example room, not yet segmented."""
        from engines.segmentation.example import example_path

        path = example_path()
        self._start("load", lambda job: work.load(path, job), "Open the example room")

    # Layout ----------------------------------------------------------------------------------
    def _build(self) -> None:
        outer = QVBoxLayout(self.body)
        outer.setContentsMargins(0, 0, 0, 0)
        bar = QHBoxLayout()
        self.open_button = QPushButton("Open…")
        self.open_button.clicked.connect(self.open_dialog)
        self.example_button = QPushButton("Example")
        self.example_button.setToolTip("Open the embedded example room and segment it")
        self.example_button.clicked.connect(self.run_default)
        self.method = QComboBox()
        self.method.setObjectName("methodBox")
        self.method.addItem("GrabS agent (search)", "grabs")
        self.method.addItem("GrabS agent (PPO policy)", "grabs_ppo")
        self.method.addItem("DBSCAN baseline", "dbscan")
        self.method.setToolTip("Search: every action of the cylinder scored by the prior. PPO policy: the learned policy picks "
                               "one action a step (resources/segmentation/policy.pt). DBSCAN: the baseline.")
        self.anchors = QSpinBox()
        self.anchors.setObjectName("anchorsBox")
        self.anchors.setRange(1, 128)
        self.anchors.setValue(40)
        self.anchors.setToolTip("Anchors the agent starts from (farthest-point sampling)")
        self.run_button = QPushButton("Segment")
        self.run_button.setObjectName("runButton")
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.runner.cancel)
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.progress.setMaximumWidth(160)
        policy = self.progress.sizePolicy()
        policy.setRetainSizeWhenHidden(True)  # shown only while a job runs; the status text stays put
        self.progress.setSizePolicy(policy)
        self.progress.hide()
        self.status = QLabel("Open a point cloud (PLY, PCD, XYZ, PTS, NPZ) or the example.")
        self.status.setObjectName("statusText")
        for w in (self.open_button, self.example_button, QLabel("Method"), self.method, QLabel("Anchors"), self.anchors,
                  self.run_button, self.cancel_button, self.progress):
            bar.addWidget(w)
        bar.addWidget(self.status, 1)
        outer.addLayout(bar)

        split = QSplitter(Qt.Orientation.Horizontal)
        self.views = QSplitter(Qt.Orientation.Horizontal)
        self.pred_view = PointView("prediction")
        self.gt_view = PointView("ground truth")
        for title, v in (("Prediction", self.pred_view), ("Ground truth", self.gt_view)):
            box = QWidget()
            lay = QVBoxLayout(box)
            lay.setContentsMargins(0, 0, 0, 0)
            lab = QLabel(title)
            lab.setAlignment(Qt.AlignmentFlag.AlignCenter)
            lay.addWidget(lab)
            lay.addWidget(v, 1)
            self.views.addWidget(box)
        self.gt_box = self.views.widget(1)
        self.gt_box.setVisible(False)
        split.addWidget(self.views)
        self.tabs = QTabWidget()
        self.input = InputControls()
        self.segments = SegmentList()
        self.controls = ViewControls()
        self.replay = AgentReplay()
        self.thresholds = ThresholdControls()
        self.metrics = MetricsView()
        self.bench = BenchTab()
        for w, name in ((self.input, "Input"), (self.segments, "Segments"), (self.controls, "View"), (self.replay, "Agent"),
                        (self.thresholds, "Thresholds"), (self.metrics, "Metrics"), (self.bench, "Bench")):
            self.tabs.addTab(w, name)
        self.tabs.setCurrentWidget(self.segments)
        self.tabs.setMinimumWidth(300)
        self.tabs.setUsesScrollButtons(False)  # every tab in sight (names elided when the side is narrow)
        self.tabs.setElideMode(Qt.TextElideMode.ElideRight)
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 1)
        split.setSizes([880, 370])
        outer.addWidget(split, 1)

        self.segments.visibilityChanged.connect(self._set_hidden)
        self.segments.selected.connect(self._select)
        self.controls.colorModeChanged.connect(lambda _m: self._recolor())
        self.controls.pointSizeChanged.connect(self._point_size)
        self.controls.preset.connect(self.camera_preset)
        self.controls.sideBySideChanged.connect(lambda _: self._update_gt_box())
        self.replay.stepChanged.connect(self._show_step)
        self.replay.play.toggled.connect(lambda on: self._play.start() if on else self._play.stop())
        self.thresholds.changed.connect(self._recompute_timer.start)
        self.input.changed.connect(self._reload)
        self.pred_view.clicked.connect(self.pick)
        self.bench_runner = self.add_folder_tab("segmentation-bench", self.bench, run=self.run_bench, finished=self.bench.show_result)
        self.pred_view.cameraChanged.connect(lambda: self._linked(self.gt_view, self.pred_view))
        self.gt_view.cameraChanged.connect(lambda: self._linked(self.pred_view, self.gt_view))

    # Shell hooks -----------------------------------------------------------------------------
    def open_path(self, path: Path) -> None:
        """Load in a worker: a large file never freezes the window; a bad one keeps the current scene."""
        units, up = self.input.values()
        self._start("load", lambda job: work.load(Path(path), job, units, up), f"Open {Path(path).name}")
        self.ctx.add_recent(str(path))

    def _reload(self) -> None:
        """Read the open file again with the units and up axis now chosen (its result no longer fits it)."""
        if self.scene is not None and not (self.runner.busy and self._job_kind == "segment"):
            path, (units, up) = Path(self.scene.path), self.input.values()
            self._start("load", lambda job: work.load(path, job, units, up), f"Read {path.name} again")

    def open_dialog(self) -> None:
        dialog = QFileDialog(self, "Open a point cloud", self.ctx.settings.last_dir() if hasattr(self.ctx.settings, "last_dir") else "", FILTER)
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(lambda p: self.open_path(Path(p)))
        dialog.open()

    def run_default(self) -> bool:
        """Open the embedded example room and segment it with GrabS (a few seconds)."""
        from engines.segmentation.example import example_path

        params = self.params(method="grabs")
        path = example_path()
        self._start("segment", lambda job: work.segment(None, params, job, load_first=path), "Segment the example room")
        return True

    def state(self) -> dict[str, Any]:
        return {
            "path": self.scene.path if self.scene is not None else "",
            "method": self.method.currentData(),
            "anchors": self.anchors.value(),
            "thresholds": self.thresholds.values(),
            "units": self.input.values()[0],
            "up": self.input.values()[1],
            "unclaimed": self.thresholds.unclaimed.isChecked(),
            "nested": self.thresholds.nested.isChecked(),
            "color_mode": self.controls.color.currentText(),
            "point_size": self.controls.size.value(),
            "side_by_side": self.controls.side.isChecked(),
            "link_cameras": self.controls.link.isChecked(),
        }

    def restore(self, state: dict[str, Any]) -> None:
        try:
            checked = self._checked(state)
        except ValueError as exc:
            self.show_error(f"The session's segmentation settings are invalid: {exc}")
            return
        self.method.setCurrentIndex(self.method.findData(checked["method"]))
        self.anchors.setValue(checked["anchors"])
        self.input.set_values(checked["units"], checked["up"])
        for name, value in checked["thresholds"].items():
            self.thresholds.set_value(name, value, emit=False)
        for name in ("unclaimed", "nested"):
            box = getattr(self.thresholds, name)
            with QSignalBlocker(box):
                box.setChecked(checked[name])
        if checked["color_mode"] is not None:
            self.controls.color.setCurrentText(checked["color_mode"])
        self.controls.size.setValue(checked["point_size"])
        self.controls.side.setChecked(checked["side_by_side"])
        self.controls.link.setChecked(checked["link_cameras"])
        path = checked["path"]
        if path:
            if Path(path).exists():
                self.open_path(Path(path))
            else:
                self.show_error(f"The session's point cloud {path} no longer exists.")

    def _checked(self, state: dict[str, Any]) -> dict[str, Any]:
        """Every setting of a session checked before any is applied, so that a bad one changes nothing.
        Whole numbers must fit their widget: a huge one overflows Qt's int half-way through applying."""
        mapping(state, "they")
        methods = [self.method.itemData(i) for i in range(self.method.count())]
        given = state.get("thresholds", {})
        if isinstance(given, dict):  # a session written before the names were the CLI's
            given = {OLD_NAMES.get(k, k): v for k, v in given.items()}
        thresholds = named(given, "thresholds", self.thresholds.SPECS)
        color_mode = state.get("color_mode")
        size = self.controls.size
        return {
            "method": choice(state.get("method", "grabs"), "method", methods),
            "anchors": whole(state.get("anchors", 40), "anchors", self.anchors.minimum(), self.anchors.maximum()),
            "thresholds": {k: number(v, k) for k, v in thresholds.items()},
            "units": choice(state.get("units", "auto"), "units", UNITS),
            "up": choice(state.get("up", "auto"), "up", UP_AXES),
            "unclaimed": flag(state.get("unclaimed", True), "unclaimed"),
            "nested": flag(state.get("nested", True), "nested"),
            "color_mode": None if color_mode is None else choice(color_mode, "color_mode", COLOR_MODES),
            "point_size": whole(state.get("point_size", 3), "point_size", size.minimum(), size.maximum()),
            "side_by_side": flag(state.get("side_by_side", True), "side_by_side"),
            "link_cameras": flag(state.get("link_cameras", True), "link_cameras"),
            "path": text(state.get("path") or "", "path"),
        }

    def export_actions(self) -> list[QAction]:
        actions = []
        for text, slot in (("Labelled PLY (instance, score)…", self.export_ply_dialog), ("ScanNet benchmark layout…", self.export_scannet_dialog),
                           ("JSON summary…", self.export_json_dialog), ("PNG of the 3-D view…", self.export_png_dialog)):
            action = QAction(text, self)
            action.triggered.connect(slot)
            actions.append(action)
        return actions

    def shutdown(self) -> None:
        self._play.stop()
        self._recompute_timer.stop()
        super().shutdown()

    # Parameters ------------------------------------------------------------------------------
    def params(self, method: str | None = None):
        from engines.segmentation.api import SegmentParams, method_params, with_thresholds

        base = SegmentParams()
        t = self.thresholds.values()
        unclaimed = replace(base.unclaimed, enabled=self.thresholds.unclaimed.isChecked())
        nested = replace(base.nested, enabled=self.thresholds.nested.isChecked())
        params = with_thresholds(replace(base, agent=replace(base.agent, anchors=self.anchors.value()), unclaimed=unclaimed, nested=nested),
                                 mask=t["mask_threshold"], found=t["found_threshold"], dedup_iou=t["dedup_iou"],
                                 min_points=int(t["min_points"]), join_coverage=t["join_coverage"])
        return method_params(params, method or self.method.currentData())

    # Jobs ------------------------------------------------------------------------------------
    def run(self) -> None:
        if self.scene is None:
            self.show_error("Open a point cloud first (or press Example).")
            return
        scene, params = self.scene, self.params()
        self._start("segment", lambda job: work.segment(scene, params, job), f"Segment {Path(scene.path).name} ({params.method})")

    def recompute(self) -> None:
        """Re-score the agent's final cylinders with the current thresholds (in the background)."""
        if self.scene is None or self.view is None or self.view.result.method != "grabs":
            return
        if self.runner.busy and self._job_kind != "recompute":
            return  # a load or a segmentation is running: the new thresholds apply to its result's next re-score
        scene, previous, params = self.scene, self.view.result, self.params(method="grabs")
        self._start("recompute", lambda job: work.recompute(scene, previous, params, job), "Re-score masks")

    def run_bench(self) -> None:
        """The benchmark over the open folder with the checked methods and this tab's thresholds, where
        the preferences say batch runs go now."""
        if self.bench.folder is None:
            return
        folder, params, methods, executor = self.bench.folder, self.params("grabs"), self.bench.chosen_methods(), self.ctx.executor()
        self.bench_runner.start(lambda job: bench_job(folder, params, methods, executor, job), f"segmentation: benchmark on {folder.name}")

    def _start(self, kind: str, work_fn, label: str) -> None:
        self._job_kind = kind
        self.runner.start(work_fn, label)

    def _busy(self, on: bool) -> None:
        self.cancel_button.setEnabled(on)
        self.run_button.setEnabled(not on)
        self.progress.setValue(0)
        self.progress.setVisible(on)

    def _progress(self, fraction: float, text: str) -> None:
        self.progress.setValue(int(fraction * 1000))
        self.status.setText(text)

    def _on_finished(self, out: Any) -> None:
        if isinstance(out, work.Loaded):
            self._show_scene(out.scene)
            self._clear_result()
        elif isinstance(out, work.Segmented):
            if out.scene is not self.scene:
                self._show_scene(out.scene)
            self._show_result(out.view)

    # Drawing ---------------------------------------------------------------------------------
    def _show_scene(self, scene) -> None:
        """Install a loaded scene. Everything it needs (grid included) was computed and checked by the engine
        in the worker, so nothing here can fail half-way and leave a half-installed scene."""
        n_drawn = len(scene.drawn)
        text = f"{Path(scene.path).name}: {scene.points:,} points"
        if n_drawn < scene.points:
            text += f" ({n_drawn:,} drawn)"
        if scene.dropped:
            text += f"; {scene.dropped:,} NaN/inf points dropped"
        if scene.brief:
            text += f"; {scene.brief}"
        self.input.assumed.setText(f"{Path(scene.path).name}: {scene.note}." if scene.note else "")
        self.status.setToolTip(f"{Path(scene.path).name}: {scene.note}" if scene.note else "")
        self.scene = scene
        self.view = None  # any earlier result belongs to another cloud
        self.hidden = set()
        self.selected = None
        self.status.setText(text)
        self._visible = np.ones(n_drawn, bool)
        size = float(self.controls.size.value())
        self.pred_view.set_points(scene.positions, self._colors(), size)
        gt = scene.colors.get("ground truth")
        if gt is not None:
            self.gt_view.set_points(scene.positions, gt, size)
        self._update_gt_box()
        for v in (self.pred_view, self.gt_view):
            v.set_grid(scene.grid)
            v.set_cylinder(None)
        self.camera_preset("iso")

    def _clear_result(self) -> None:
        self.segments.fill([])
        self.replay.fill([])
        self.replay.text.setText("Run GrabS to see its agent's trajectories.")
        self.metrics.show_rows([], {})
        self._recolor()

    def _show_result(self, view) -> None:
        from engines.segmentation.viewer import segment_rows

        self.view = view
        self.hidden = set()
        result = view.result
        self.segments.fill(segment_rows(result))
        second = {c.trajectory for c in result.candidates if c.second}
        labels = [f"#{i}: {'found' if t.found else 'not found'} after {len(t.steps) - 1} steps{' (second search)' if i in second else ''}"
                  for i, t in enumerate(result.trajectories)]
        found = [i for i, t in enumerate(result.trajectories) if t.found]
        self.replay.fill(labels, found[0] if found else 0)  # open on the agent at work
        if not labels:
            self.replay.text.setText("The DBSCAN baseline has no agent." if result.method == "dbscan" else "No trajectories.")
        rows, curves = [], {}
        if view.metrics is not None:
            m = view.metrics
            rows = [("AP (0.50:0.95)", f"{m.ap:.3f}"), ("AP50", f"{m.ap50:.3f}"), ("AP25", f"{m.ap25:.3f}"),
                    ("objects / predictions", f"{m.n_gt} / {m.n_pred}")]
            rows += [(f"AP @ {k}", f"{v:.3f}") for k, v in m.per_threshold.items() if k not in ("0.25", "0.50")]
            rows += [(k.replace("_", " ") + " points", f"{v:,}") for k, v in view.errors.items()]
            curves = {k: (m.curves[k].precision, m.curves[k].recall) for k in ("0.50", "0.25")}
        self.metrics.show_rows(rows, curves)
        found = sum(t.found for t in result.trajectories)
        extra = f", {'PPO policy' if result.agent == 'ppo' else 'agent'}: {found}/{len(result.trajectories)} found" if result.trajectories else ""
        ap = f", AP50 {view.metrics.ap50:.2f}" if view.metrics is not None else ""
        nested = sum(1 for s in result.segments if s.parent)
        counted = f"{len(result.segments) - nested} segments" + (f" + {nested} nested" if nested else "")
        self.status.setText(f"{counted} in {result.seconds:.1f} s ({result.method}{extra}{ap})")
        self._recolor()

    def _colors(self) -> np.ndarray:
        mode = self.controls.color.currentText()
        scene = self.scene
        source = None
        if self.view is not None:
            source = self.view.colors.get(mode)
        if source is None:
            source = scene.colors.get(mode)
        if source is None:
            source = scene.colors["rgb"] if mode == "rgb" else scene.colors.get("ground truth" if mode == "ground truth" else "height")
        legend = {"errors": "green: true positive, red: false positive, blue: false negative (IoU > 0.5)",
                  "prior residual": "prior |SDF| per point: dark = on the decoded surface",
                  "score": "segment confidence (dark 0, yellow 1)"}
        self.controls.legend.setText(legend.get(mode, ""))
        return source

    def _recolor(self) -> None:
        if self.scene is None:
            return
        from engines.segmentation.viewer import visible

        colors = self._colors()
        if self.view is not None:
            self._visible = visible(self.view.drawn_instance, self.hidden)
        else:
            self._visible = np.ones(len(self.scene.drawn), bool)
        self.pred_view.set_colors(colors[self._visible], self.scene.positions[self._visible])

    def _set_hidden(self, hidden: set[int]) -> None:
        self.hidden = set(hidden)
        self._recolor()

    def _point_size(self, size: float) -> None:
        self.pred_view.set_point_size(size)
        self.gt_view.set_point_size(size)

    def _update_gt_box(self) -> None:
        has_gt = self.scene is not None and "ground truth" in self.scene.colors
        self.gt_box.setVisible(bool(has_gt and self.controls.side.isChecked()))

    def _linked(self, target: PointView, source: PointView) -> None:
        if self.controls.link.isChecked() and target.isVisible():
            target.follow(source)

    def camera_preset(self, name: str) -> None:
        from engines.segmentation.viewer import camera_preset, fit_selection

        if self.scene is None:
            return
        if name == "fit":
            if self.view is None or self.selected is None:
                self.show_info("Select a segment first (click a point or a row).")
                return
            box = fit_selection(self.scene.positions, self.view.drawn_instance == self.selected)
            if box is None:
                return
            center, size = box
            cam = self.pred_view.camera()
            self.pred_view.set_camera(center, size * 1.6, cam["elevation"], cam["azimuth"])
            return
        cam = camera_preset(name, self.scene.center, self.scene.extent)
        self.pred_view.set_camera(cam["center"], cam["distance"], cam["elevation"], cam["azimuth"])

    # Picking and selection ------------------------------------------------------------------
    def pick(self, x: float, y: float) -> None:
        from engines.segmentation.viewer import pick

        if self.scene is None:
            return
        shown = np.flatnonzero(self._visible)
        hit = pick(self.scene.positions[shown], self.pred_view.mvp(), self.pred_view.width(), self.pred_view.height(), x, y)
        if hit is None:
            self.controls.info.setText("No point under the cursor.")
            return
        drawn = int(shown[hit])
        index = int(self.scene.drawn[drawn])
        sid = int(self.view.drawn_instance[drawn]) if self.view is not None else 0
        p = self.scene.positions[drawn]
        where = f"point {index:,} at ({p[0]:.2f}, {p[1]:.2f}, {p[2]:.2f})"
        if sid > 0:
            seg = next(s for s in self.view.result.segments if s.id == sid)
            kind = (f" (nested in #{seg.parent}: beneath its top surface, ranked last)" if seg.parent
                    else "" if seg.confirmed else " (unconfirmed: no search claimed it)")
            self.controls.info.setText(f"{where}: segment #{sid}{kind}, {seg.points:,} points, score {seg.score:.3f}")
            self.segments.select_id(sid)
        else:
            self.controls.info.setText(f"{where}: no segment")
            self.segments.select_id(None)
        self.selected = sid if sid > 0 else None

    def _select(self, sid: int) -> None:
        self.selected = sid

    # Agent replay ----------------------------------------------------------------------------
    def _show_step(self, traj: int, step: int) -> None:
        from engines.segmentation.viewer import cylinder_lines

        if self.view is None or not (0 <= traj < len(self.view.result.trajectories)):
            for v in (self.pred_view, self.gt_view):
                v.set_cylinder(None)
            return
        t = self.view.result.trajectories[traj]
        self.replay.set_steps(len(t.steps))
        step = min(step, len(t.steps) - 1)
        s = t.steps[step]
        z0 = self.view.result.floor_z
        lines = cylinder_lines(s.x, s.y, s.radius, z0, z0 + 2.2) if self.replay.show_cylinder.isChecked() else None
        found = s.reward > 0
        for v in (self.pred_view, self.gt_view):
            v.set_cylinder(lines, found)
        dist = "not an object" if not np.isfinite(s.distance) else f"distance {s.distance:.3f}"
        self.replay.text.setText(f"step {step}/{len(t.steps) - 1}: {s.action}, centre ({s.x:.2f}, {s.y:.2f}), radius {s.radius:.2f} m, "
                                 f"{dist}, reward {s.reward:+.0f}" + (" (found)" if found else ""))

    def _advance(self) -> None:
        s = self.replay.slider
        s.setValue(s.value() + 1 if s.value() < s.maximum() else 0)

    # Exports ---------------------------------------------------------------------------------
    def _need_result(self) -> bool:
        if self.view is None:
            self.show_error("Segment a cloud first: there is nothing to export yet.")
            return False
        return True

    def _save_dialog(self, title: str, name: str, filt: str, slot, folder: bool = False) -> None:
        dialog = QFileDialog(self, title, name, filt)
        if folder:
            dialog.setFileMode(QFileDialog.FileMode.Directory)
            dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        else:
            dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.fileSelected.connect(lambda p: slot(Path(p)))
        dialog.open()

    def export_ply_dialog(self) -> None:
        if self._need_result():
            self._save_dialog("Save labelled PLY", f"{Path(self.scene.path).stem}_pred.ply", "PLY (*.ply)", self.export_ply)

    def export_json_dialog(self) -> None:
        if self._need_result():
            self._save_dialog("Save JSON summary", f"{Path(self.scene.path).stem}_segments.json", "JSON (*.json)", self.export_json)

    def export_scannet_dialog(self) -> None:
        if self._need_result():
            self._save_dialog("Folder for the ScanNet layout", "", "", self.export_scannet, folder=True)

    def export_png_dialog(self) -> None:
        if self.scene is not None:
            self._save_dialog("Save PNG of the view", f"{Path(self.scene.path).stem}.png", "PNG (*.png)", self.export_png)

    def _export(self, kind: str, path: Path) -> None:
        if not self._need_result():
            return
        scene, result = self.scene, self.view.result
        self._exporters[kind].start(lambda job: work.export(kind, path, scene, result, job), f"Export {kind}")

    @property
    def exporting(self) -> bool:
        return any(r.busy for r in self._exporters.values())

    def export_ply(self, path: Path) -> None:
        self._export("ply", path)

    def export_json(self, path: Path) -> None:
        self._export("json", path)

    def export_scannet(self, path: Path) -> None:
        self._export("scannet", path)

    def view_image(self) -> QImage:
        """Prediction (and ground truth, when shown) rendered side by side."""
        images = [self.pred_view.image()]
        if self.gt_box.isVisible():
            images.append(self.gt_view.image())
        w = sum(i.width() for i in images)
        h = max(i.height() for i in images)
        out = QImage(w, h, QImage.Format.Format_RGB32)
        out.fill(0)
        painter = QPainter(out)
        x = 0
        for img in images:
            painter.drawImage(x, 0, img)
            x += img.width()
        painter.end()
        return out

    def export_png(self, path: Path) -> None:
        image = self.view_image()
        try:
            with atomic_path(path) as tmp:
                if not image.save(str(tmp), "PNG"):
                    raise EngineError(f"could not write {path}")
        except EngineError as exc:
            self.show_error(str(exc))
            return
        self.show_info(f"Wrote {path}")

    # Settings --------------------------------------------------------------------------------
    def _restore_ui_choices(self) -> None:
        s = self.ctx.settings
        mode = s.panel_value(self.name, "color_mode", "instance")
        if mode in COLOR_MODES:
            self.controls.color.setCurrentText(mode)
        self.controls.size.setValue(int(s.panel_value(self.name, "point_size", 3)))
        self.controls.color.currentTextChanged.connect(lambda m: s.set_panel_value(self.name, "color_mode", m))
        self.controls.size.valueChanged.connect(lambda v: s.set_panel_value(self.name, "point_size", v))
