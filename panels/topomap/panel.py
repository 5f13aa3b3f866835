"""The topomap panel: train a topographic network in the background and look at its maps.

Left (``controls.py``): training parameters, run files, what to show. Middle: the map on the unit grid (click a
unit), its legend and the training scrubber. Right: live loss/accuracy, the smoothness curve
against its shuffled band, accuracy-vs-smoothness across runs, first-layer kernels, and the
clicked unit's tuning curve, class responses, top stimuli and neighbours.
Jobs are in ``work.py``, the saved state in ``session.py``; this module wires and draws.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSlider,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engines.core import EngineError, from_dict, to_jsonable
from engines.topomap.params import DATASETS, METHOD_TITLES, METHODS
from engines.topomap.runfile import RUN_SUFFIX
from panels.base import MethodPanel, PanelContext
from panels.session_checks import mapping, whole

from . import work
from .controls import TopomapControls
from .session import TopomapSession
from .views import METHOD_COLOURS, MapView, PixmapLabel, small_plot

UNIT_PLOT_HEIGHT = 140  # pixels of the tuning and class plots
CLASS_ROW_HEIGHT = 15  # pixels per class in the class plot: one line of tick text
RUNS_FOLDER = "topomap-runs"  # where runs trained in the panel are kept (``PanelSettings.data_folder``)


class TopomapPanel(MethodPanel):
    name = "topomap"
    title = "Topographic maps (CB-SOM)"

    def __init__(self, ctx: PanelContext, parent: QWidget | None = None) -> None:
        super().__init__(ctx, parent)
        self.view = None  # engines.topomap.runview.RunView of the shown run
        self.point = None  # its ScatterPoint
        self.compare = None  # a CompareTable for the scatter plot
        self.live: list = []  # SnapshotViews streamed while training
        self.live_history: tuple = ()
        self.live_epochs = 0
        self.selected: int | None = None
        # A session's layer and class, chosen once a run's layers and classes are known.
        self._wanted_layer: str | None = None
        self._wanted_class: int | None = None
        self._build()
        self.exporter = self.add_runner("topomap-export", finished=self.show_info)
        self.controls.run.follow(self.runner)
        self.runner.partial.connect(self._on_live)
        self.runner.finished.connect(self._on_loaded)
        self.play_timer = QTimer(self)
        self.play_timer.setInterval(450)
        self.play_timer.timeout.connect(self._play_step)
        self._restore_choices()
        self.run_default()  # open on the shipped example run's maps rather than empty plots

    # Building ------------------------------------------------------------------------------
    def _build(self) -> None:
        layout = QHBoxLayout(self.body)
        layout.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Horizontal, self.body)
        layout.addWidget(split)
        self.controls = TopomapControls()
        self.controls.run.run_button.clicked.connect(self.start_training)
        self.controls.open_run.clicked.connect(lambda: self._open_dialog(f"Topomap run (*{RUN_SUFFIX})"))
        self.controls.open_compare.clicked.connect(lambda: self._open_dialog(f"Topomap comparison (*{work.COMPARE_SUFFIX} *.json)"))
        for widget in (self.controls.layer, self.controls.kind, self.controls.klass):
            widget.currentIndexChanged.connect(self._on_choice)
        self.controls.show_pinwheels.toggled.connect(self._on_choice)
        split.addWidget(self.controls)
        split.addWidget(self._build_map())
        split.addWidget(self._build_plots())
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 3)
        split.setStretchFactor(2, 4)
        split.setSizes([280, 450, 640])

    def _build_map(self) -> QWidget:
        box = QWidget()
        col = QVBoxLayout(box)
        col.setContentsMargins(2, 2, 2, 2)
        self.map_title = QLabel("")
        self.map_title.setStyleSheet("font-weight: bold;")
        col.addWidget(self.map_title)
        self.map = MapView()
        self.map.setMinimumSize(300, 300)
        self.map.unitClicked.connect(self.select_unit)
        col.addWidget(self.map, 1)
        self.legend_bar = PixmapLabel()
        self.legend_bar.setFixedHeight(14)
        col.addWidget(self.legend_bar)
        self.legend = QLabel("")
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        col.addWidget(self.legend)
        scrub = QHBoxLayout()
        self.play = QToolButton()
        self.play.setText("▶")
        self.play.setToolTip("Replay map formation over the training snapshots")
        self.play.setCheckable(True)
        self.play.toggled.connect(self._toggle_play)
        self.scrubber = QSlider(Qt.Orientation.Horizontal)
        self.scrubber.setRange(0, 0)
        self.scrubber.valueChanged.connect(self._on_choice)
        self.epoch_label = QLabel("epoch –")
        self.epoch_label.setMinimumWidth(90)
        scrub.addWidget(self.play)
        scrub.addWidget(self.scrubber, 1)
        scrub.addWidget(self.epoch_label)
        col.addLayout(scrub)
        return box

    def _build_plots(self) -> QWidget:
        col = QSplitter(Qt.Orientation.Vertical)
        self.loss_plot = small_plot("Training loss", "", "epoch")
        self.acc_plot = small_plot("Accuracy (%)", "", "epoch")
        self.acc_plot.addLegend(offset=(-5, -5), labelTextColor="#222")
        self.smooth_plot = small_plot("Smoothness: |Δ| vs grid distance", "|Δ|", "grid distance (units)")
        self.scatter_plot = small_plot("Accuracy vs smoothness (runs)", "accuracy %", "smoothness (deeper layers)")
        self.scatter_key = QLabel(
            " ".join(f"<span style='color: rgb{METHOD_COLOURS[m]}'>●</span>&nbsp;{m}" for m in METHODS) + " &nbsp;★&nbsp;this run"
        )
        self.scatter_key.setTextFormat(Qt.TextFormat.RichText)
        self.scatter_key.setWordWrap(True)
        scatter_box = QWidget()
        sl = QVBoxLayout(scatter_box)
        sl.setContentsMargins(0, 0, 0, 0)
        sl.setSpacing(0)
        sl.addWidget(self.scatter_plot, 1)
        sl.addWidget(self.scatter_key)
        for row in ((self.loss_plot, self.acc_plot), (self.smooth_plot, scatter_box)):
            holder = QWidget()
            line = QHBoxLayout(holder)
            line.setContentsMargins(0, 0, 0, 0)
            for plot in row:
                line.addWidget(plot, 1)
            col.addWidget(holder)

        kernels = QGroupBox("First-layer kernels")
        kernels.setMaximumWidth(230)
        kl = QVBoxLayout(kernels)
        self.kernels = PixmapLabel()
        self.kernels.setMinimumSize(120, 120)
        kl.addWidget(self.kernels)

        unit = QGroupBox("Unit")
        # The details scroll when the window is short rather than drawing over one another.
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        details = QWidget()
        scroll.setWidget(details)
        QVBoxLayout(unit).addWidget(scroll)
        ul = QGridLayout(details)
        ul.setContentsMargins(0, 0, 0, 0)
        self.unit_title = QLabel("Click a unit on the map.")
        self.unit_title.setWordWrap(True)
        self.tuning_plot = small_plot("Orientation tuning", "response", "orientation (°)")
        # Bars lie horizontally so that every class name has a row of its own ("112.5°", "crescent").
        self.class_plot = small_plot("Mean response", "", "")
        self.class_plot.invertY(True)
        self.class_plot.getViewBox().setDefaultPadding(0.05)  # the longest bar stops short of the frame
        for plot in (self.tuning_plot, self.class_plot):
            plot.setFixedHeight(UNIT_PLOT_HEIGHT)
        self.top = PixmapLabel()
        self.top.setFixedHeight(40)
        self.neighbours = QLabel("")
        self.neighbours.setWordWrap(True)
        self.neighbours.setTextFormat(Qt.TextFormat.RichText)
        ul.addWidget(self.unit_title, 0, 0, 1, 2)
        ul.addWidget(self.tuning_plot, 1, 0)
        ul.addWidget(self.class_plot, 1, 1)
        caption = QLabel("Top held-out stimuli (tuning, class means and stimuli: final network):")
        caption.setWordWrap(True)
        ul.addWidget(caption, 2, 0, 1, 2)
        ul.addWidget(self.top, 3, 0, 1, 2)
        ul.addWidget(self.neighbours, 4, 0, 1, 2)
        ul.setRowStretch(5, 1)
        holder = QWidget()
        bottom = QHBoxLayout(holder)
        bottom.setContentsMargins(0, 0, 0, 0)
        bottom.addWidget(kernels)
        bottom.addWidget(unit, 1)
        col.addWidget(holder)
        sizes = (150, 230, 340)
        for i, stretch in enumerate((2, 3, 5)):
            col.setStretchFactor(i, stretch)
        col.setSizes(list(sizes))
        col.setChildrenCollapsible(False)
        return col

    # Jobs ----------------------------------------------------------------------------------
    def run_default(self) -> bool:
        self.runner.start(work.load_example, "Topomap: open the example run")
        return True

    def start_training(self) -> None:
        c = self.controls
        settings = {
            "method": c.method.currentData(),
            "data": c.data.currentData(),
            "epochs": c.epochs.value(),
            "seed": c.seed.value(),
            "alpha0": c.alpha0.value(),
            "tau": c.tau.value(),
        }
        widths, folder, compare = c.widths.text(), self.ctx.settings.data_folder(RUNS_FOLDER), self.compare
        self.live, self.live_history, self.live_epochs = [], (), settings["epochs"]
        self.runner.start(lambda job: work.train(settings, widths, folder, compare, job), f"Topomap: train {settings['method']}")

    def open_path(self, path: Path) -> None:
        path = Path(path)
        self.ctx.add_recent(str(path))
        self.runner.start(lambda job: work.open_file(path, job), f"Topomap: open {path.name}")

    def _open_dialog(self, filter_text: str) -> None:
        dialog = QFileDialog(self, "Open", self.ctx.settings.last_dir(), filter_text)
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(lambda p: self.open_path(Path(p)))
        dialog.open()

    def _on_live(self, update) -> None:
        self.live_history = update.history
        self.live_epochs = update.epochs
        if update.snapshot is not None:
            self.live.append(update.snapshot)
            at_end = self.scrubber.value() == self.scrubber.maximum()
            self.scrubber.blockSignals(True)
            self.scrubber.setRange(0, len(self.live) - 1)
            if at_end or len(self.live) == 1:
                self.scrubber.setValue(len(self.live) - 1)
            self.scrubber.blockSignals(False)
            self._fill_layers([m.name for m in update.snapshot.layers], list(update.classes))
        self._draw_all()

    def _on_loaded(self, result) -> None:
        from_compare = not hasattr(result, "view")
        if from_compare:
            self.compare = result
            self._draw_scatter()
            self.show_info(f"Loaded a comparison of {len(result.points)} runs.")
            return
        self.view, self.point = result.view, result.point
        if result.compare is not None:
            self.compare = result.compare
        self.live, self.live_history = [], ()
        self._fill_layers(list(self.view.layer_names), list(self.view.classes))
        self.scrubber.blockSignals(True)
        self.scrubber.setRange(0, len(self.view.snapshots) - 1)
        self.scrubber.setValue(len(self.view.snapshots) - 1)
        self.scrubber.blockSignals(False)
        self._describe_run()
        layer = self.current_layer()
        if layer is not None and (self.selected is None or self.selected >= layer.width):
            self.selected = (layer.side // 2) * layer.side + layer.side // 2  # start with the centre unit
        self._draw_all()

    # Choices -------------------------------------------------------------------------------
    def _fill_layers(self, layers: list[str], classes: list[str]) -> None:
        current = self.controls.layer.currentText()
        if [self.controls.layer.itemText(i) for i in range(self.controls.layer.count())] != layers:
            self.controls.layer.blockSignals(True)
            self.controls.layer.clear()
            self.controls.layer.addItems(layers)
            wanted = self._wanted_layer if self._wanted_layer in layers else current
            self.controls.layer.setCurrentIndex(layers.index(wanted) if wanted in layers else len(layers) - 1)
            self.controls.layer.blockSignals(False)
        if classes:
            current_class = self.controls.klass.currentIndex() if self._wanted_class is None else self._wanted_class
            self._wanted_class = None
            self.controls.klass.blockSignals(True)
            self.controls.klass.clear()
            self.controls.klass.addItems(classes)
            self.controls.klass.setCurrentIndex(current_class if 0 <= current_class < len(classes) else 0)
            self.controls.klass.blockSignals(False)

    def _on_choice(self, *_: Any) -> None:
        self.controls.klass.setEnabled(self.controls.kind.currentData() == "dprime")
        layer = self.current_layer()
        if layer is not None and (self.selected is None or self.selected >= layer.width):
            self.selected = (layer.side // 2) * layer.side + layer.side // 2  # the centre unit of this grid
        self._save_choices()
        self._draw_all()

    def _snapshots(self) -> list:
        if self.live:
            return self.live
        return list(self.view.snapshots) if self.view is not None else []

    def current_snapshot(self):
        snaps = self._snapshots()
        if not snaps:
            return None
        return snaps[min(self.scrubber.value(), len(snaps) - 1)]

    def current_layer(self):
        snap = self.current_snapshot()
        if snap is None:
            return None
        index = max(0, min(self.controls.layer.currentIndex(), len(snap.layers) - 1))
        return snap.layers[index]

    def image_key(self) -> str:
        kind = self.controls.kind.currentData()
        return f"dprime/{max(self.controls.klass.currentIndex(), 0)}" if kind == "dprime" else kind

    # Drawing -------------------------------------------------------------------------------
    def _draw_all(self) -> None:
        self._draw_map()
        self._draw_training()
        self._draw_smoothness()
        self._draw_scatter()
        self._draw_unit()

    def _draw_map(self) -> None:
        snap, layer = self.current_snapshot(), self.current_layer()
        if snap is None or layer is None:
            self.map.clear()
            return
        key = self.image_key()
        rgb = layer.images.get(key, layer.images["category"])
        pins = [(p.row, p.col, p.sign) for p in layer.pinwheels] if key == "orientation" and self.controls.show_pinwheels.isChecked() else None
        self.map.show_map(rgb, pins, self.selected if self.selected is not None and self.selected < layer.width else None)
        total = self.live_epochs if self.live else (self.view.params.epochs if self.view else 0)
        self.epoch_label.setText(f"epoch {snap.epoch}/{total}")
        self.kernels.set_rgb(snap.kernels)
        classes = (
            list(self.view.classes)
            if self.view is not None and not self.live
            else [self.controls.klass.itemText(i) for i in range(self.controls.klass.count())]
        )
        self.map_title.setText(f"{layer.name}: {layer.side}×{layer.side} units · {self.controls.kind.currentText()}")
        kind = self.controls.kind.currentData()
        if kind == "orientation":
            self.legend_bar.set_rgb(self.view.legends["orientation"] if self.view else None)
            self.legend.setText(
                f"Hue: preferred orientation 0°→180° (bar above); brightness: selectivity. Pinwheels: {len(layer.pinwheels)} (white +½, black −½)."
            )
        elif kind == "frequency":
            self.legend_bar.set_rgb(self.view.legends["frequency"] if self.view else None)
            self.legend.setText("Hue: preferred spatial frequency, 1.5 (red) → 6 (violet) cycles/image; brightness: selectivity.")
        elif kind == "dprime":
            self.legend_bar.set_rgb(None)
            name = classes[self.controls.klass.currentIndex()] if classes else ""
            self.legend.setText(f"d′ for class {name}: red = prefers it, blue = avoids it, white = indifferent.")
        else:
            from engines.topomap.render import class_colour

            self.legend_bar.set_rgb(None)
            chips = " ".join(f"<span style='color: rgb{class_colour(i)}'>■</span>&nbsp;{c}" for i, c in enumerate(classes))
            self.legend.setText(f"Colour: class with the highest d′; brightness: that d′. {chips}")

    def _draw_training(self) -> None:
        history = self.live_history if self.live or self.live_history else (self.view.history if self.view else ())
        self.loss_plot.clear()
        self.acc_plot.clear()
        if not history:
            return
        epochs = [h.epoch for h in history]
        self.loss_plot.plot(epochs, [h.loss for h in history], pen=pg.mkPen((31, 119, 180), width=2))
        self.acc_plot.plot(epochs, [h.train_accuracy for h in history], pen=pg.mkPen((150, 150, 150), width=2), name="train")
        self.acc_plot.plot(epochs, [h.test_accuracy for h in history], pen=pg.mkPen((214, 39, 40), width=2), name="held-out")

    def _draw_smoothness(self) -> None:
        self.smooth_plot.clear()
        layer = self.current_layer()
        if layer is None:
            return
        curve = layer.orientation_smoothness if self.controls.kind.currentData() == "orientation" else layer.smoothness
        self.smooth_plot.setLabel("left", "|Δ orientation| (°)" if self.controls.kind.currentData() == "orientation" else "|Δd′|")
        if curve.curve.size == 0:
            self.smooth_plot.setTitle("Smoothness: grid too small", color="#222", size="9pt")
            return
        x = curve.distances
        upper = pg.PlotDataItem(x, curve.shuffled_mean + curve.shuffled_std, pen=pg.mkPen((180, 180, 180)))
        lower = pg.PlotDataItem(x, curve.shuffled_mean - curve.shuffled_std, pen=pg.mkPen((180, 180, 180)))
        self.smooth_plot.addItem(upper)
        self.smooth_plot.addItem(lower)
        self.smooth_plot.addItem(pg.FillBetweenItem(upper, lower, brush=pg.mkBrush(160, 160, 160, 90)))
        self.smooth_plot.plot(x, curve.shuffled_mean, pen=pg.mkPen((120, 120, 120), style=Qt.PenStyle.DashLine))
        self.smooth_plot.plot(x, curve.curve, pen=pg.mkPen((31, 119, 180), width=2), symbol="o", symbolSize=6, symbolBrush=(31, 119, 180))
        self.smooth_plot.setTitle(f"Smoothness {curve.score:.2f} (shuffled: {curve.shuffled_score:.2f}, grey)", color="#222", size="9pt")

    def _draw_scatter(self) -> None:
        plot = self.scatter_plot
        plot.clear()
        points = list(self.compare.points) if self.compare is not None else []
        for method in METHODS:
            mine = [p for p in points if p.method == method]
            if mine:
                plot.plot(
                    [p.smoothness for p in mine],
                    [p.accuracy for p in mine],
                    pen=None,
                    symbol="o",
                    symbolSize=8,
                    symbolBrush=pg.mkBrush(*METHOD_COLOURS[method], 200),
                    symbolPen=None,
                )
        if self.point is not None and not self.live:
            plot.plot(
                [self.point.smoothness],
                [self.point.accuracy],
                pen=None,
                symbol="star",
                symbolSize=16,
                symbolBrush=pg.mkBrush(*METHOD_COLOURS[self.point.method]),
                symbolPen=pg.mkPen("k"),
            )

    def select_unit(self, unit: int) -> None:
        self.selected = int(unit)
        self._draw_map()
        self._draw_unit()

    def _draw_unit(self) -> None:
        self.tuning_plot.clear()
        self.class_plot.clear()
        self.top.set_rgb(None)
        layer = self.current_layer()
        if self.selected is None or layer is None or self.selected >= layer.width:
            self.unit_title.setText("Click a unit on the map.")
            self.neighbours.setText("")
            return
        k = self.selected
        s = layer.stats
        row, col = divmod(k, layer.side)
        classes = list(self.view.classes) if self.view else []
        best = int(s.dprime[:, k].argmax())
        best_name = classes[best] if best < len(classes) else str(best)
        self.unit_title.setText(
            f"<b>{layer.name} unit {k}</b> (row {row}, col {col}) · best class {best_name} (d′ {s.dprime[best, k]:.2f}) · "
            f"orientation {s.orientation[k]:.0f}° (sel. {s.orientation_selectivity[k]:.2f}) · {s.frequency[k]:g} cycles/image"
        )
        final = self._final_layer(layer.name)
        if final is None or final.detail is None:
            self.neighbours.setText("Tuning curves and top stimuli are measured on the final network.")
            return
        detail = final.detail
        orientations = list(self.view.orientations)
        keys = []
        for j, freq in enumerate(self.view.frequencies):
            colour = pg.intColor(j, hues=len(self.view.frequencies), values=1, maxValue=200)
            self.tuning_plot.plot(orientations, detail.tuning[k, :, j], pen=pg.mkPen(colour, width=2))
            keys.append(f"<span style='color: {colour.name()}'>{freq:g}</span>")
        self.tuning_plot.setTitle(f"c/img {' '.join(keys)}", color="#222", size="9pt")
        means = detail.class_means[k]
        self.class_plot.addItem(pg.BarGraphItem(x0=0, y=np.arange(len(means)), width=means, height=0.7, brush=(31, 119, 180)))
        self.class_plot.getAxis("left").setTicks([[(i, c) for i, c in enumerate(classes)]])
        for plot in (self.tuning_plot, self.class_plot):  # one readable row per class, plus ~60 px of title and axis
            plot.setFixedHeight(max(UNIT_PLOT_HEIGHT, 60 + CLASS_ROW_HEIGHT * len(means)))
        index = self.view.layer_names.index(layer.name)
        self.top.set_rgb(self.view.top_strips[index][k])
        rows = []
        for n in detail.neighbours[k]:
            if n < 0:
                continue
            nb = int(s.dprime[:, n].argmax())
            rows.append(f"{n}: {classes[nb] if nb < len(classes) else nb} (d′ {s.dprime[nb, n]:.2f}), {s.orientation[n]:.0f}°")
        self.neighbours.setText("<b>Neighbours</b> — " + "; ".join(rows))

    def _final_layer(self, name: str):
        if self.view is None or self.live:
            return None
        for layer in self.view.layers:
            if layer.name == name:
                return layer
        return None

    def _describe_run(self) -> None:
        v = self.view
        smooth = ", ".join(f"{layer.name} {layer.smoothness.score:.2f}" for layer in v.layers)
        pins = ", ".join(f"{layer.name} {len(layer.pinwheels)}" for layer in v.layers)
        where = Path(v.path).name if v.path else "(not saved)"
        self.controls.summary.setText(
            f"<b>{METHOD_TITLES.get(v.params.method, v.params.method)}</b> on {v.params.data}, seed {v.params.seed}, "
            f"{v.params.epochs} epochs<br>held-out accuracy <b>{v.record.accuracy:.1f}%</b> · {v.record.seconds:.0f} s<br>"
            f"smoothness: {smooth}<br>pinwheels: {pins}<br><i>{where}</i>"
        )

    # Scrubber ------------------------------------------------------------------------------
    def _toggle_play(self, on: bool) -> None:
        self.play.setText("⏸" if on else "▶")
        if on:
            if self.scrubber.value() == self.scrubber.maximum():
                self.scrubber.setValue(0)
            self.play_timer.start()
        else:
            self.play_timer.stop()

    def _play_step(self) -> None:
        if self.scrubber.value() >= self.scrubber.maximum():
            self.play.setChecked(False)
            return
        self.scrubber.setValue(self.scrubber.value() + 1)

    # Exports -------------------------------------------------------------------------------
    def export_actions(self) -> list[QAction]:
        actions = []
        for text, handler in (
            ("Map images (PNG folder)…", self._export_png_dialog),
            ("Maps (NPZ)…", lambda: self._save_dialog("maps.npz", "NumPy archive (*.npz)", "npz")),
            ("Unit statistics (CSV)…", lambda: self._save_dialog("units.csv", "CSV table (*.csv)", "csv")),
            ("Trained weights (NPZ)…", lambda: self._save_dialog("weights.npz", "NumPy archive (*.npz)", "weights")),
            ("Run file (.topomap.pt)…", lambda: self._save_dialog("run.topomap.pt", f"Topomap run (*{RUN_SUFFIX})", "run")),
        ):
            action = QAction(text, self)
            action.triggered.connect(handler)
            actions.append(action)
        return actions

    def _save_dialog(self, default: str, filter_text: str, what: str) -> None:
        if self.view is None:
            self.show_error("Load or train a run first; there is nothing to export yet.")
            return
        dialog = QFileDialog(self, "Export", str(Path(self.ctx.settings.last_dir()) / default), filter_text)
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.fileSelected.connect(lambda p: self.export(what, Path(p)))
        dialog.open()

    def _export_png_dialog(self) -> None:
        if self.view is None:
            self.show_error("Load or train a run first; there is nothing to export yet.")
            return
        dialog = QFileDialog(self, "Export map images to a folder", self.ctx.settings.last_dir())
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.fileSelected.connect(lambda p: self.export("png", Path(p)))
        dialog.open()

    def export(self, what: str, path: Path) -> None:
        """Write one export in the background: png (a folder), npz, csv, weights or run."""
        view = self.view
        if view is None:
            self.show_error("Load or train a run first; there is nothing to export yet.")
            return
        self.exporter.start(lambda job: work.export(what, view, path, job), f"Topomap: export {what}")

    # Session -------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        c = self.controls
        return to_jsonable(
            TopomapSession(
                method=c.method.currentData(),
                data=c.data.currentData(),
                epochs=c.epochs.value(),
                seed=c.seed.value(),
                widths=c.widths.text(),
                alpha0=c.alpha0.value(),
                tau=c.tau.value(),
                layer=c.layer.currentText(),
                kind=c.kind.currentData(),
                klass=c.klass.currentIndex(),
                pinwheels=c.show_pinwheels.isChecked(),
                run=self.view.path if self.view is not None else None,
            )
        )

    def restore(self, state: dict[str, Any]) -> None:
        """Take a session's settings, all or none: every value is checked before any widget
        changes, so a bad one is one sentence and leaves the panel (and its run) as it was."""
        try:
            session = from_dict(TopomapSession, mapping(state, "they"))
            klass = self._session_class(session)
        except (ValueError, EngineError) as exc:
            self.show_error(f"The session's topomap settings are invalid: {exc}")
            return
        self._apply(session, klass)
        if session.run:
            self.open_path(Path(session.run))

    def _session_class(self, session: TopomapSession) -> int | None:
        """The session's class index, None when it names none (-1: no classes were shown). Its top
        is the shown run's last class or, when the session opens a run of its own (its classes
        unknown until it loads), any data set's."""
        if session.klass is None or (type(session.klass) is int and session.klass == -1):
            return None
        if self.controls.klass.count() and not session.run:
            last = self.controls.klass.count() - 1
        else:
            from engines.topomap.data import dataset_classes

            last = max(len(dataset_classes(name)) for name in DATASETS) - 1
        return whole(session.klass, "class", 0, last)

    def _apply(self, session: TopomapSession, klass: int | None) -> None:
        """Apply a checked session: what it names (not None) replaces the panel's."""
        c = self.controls
        for combo, value in ((c.method, session.method), (c.data, session.data), (c.kind, session.kind)):
            if value is not None:
                combo.setCurrentIndex(combo.findData(value))
        for box, value in ((c.epochs, session.epochs), (c.seed, session.seed), (c.alpha0, session.alpha0), (c.tau, session.tau)):
            if value is not None:
                box.setValue(value)
        if session.widths is not None:
            c.widths.setText(session.widths)
        if session.pinwheels is not None:
            c.show_pinwheels.setChecked(session.pinwheels)
        self._wanted_layer = session.layer
        if klass is not None:
            if session.run or klass >= c.klass.count():
                self._wanted_class = klass  # chosen when the run's classes are known
            else:
                c.klass.setCurrentIndex(klass)

    def _save_choices(self) -> None:
        self.ctx.settings.set_panel_value(self.name, "kind", self.controls.kind.currentData())
        self.ctx.settings.set_panel_value(self.name, "pinwheels", int(self.controls.show_pinwheels.isChecked()))

    def _restore_choices(self) -> None:
        c, settings = self.controls, self.ctx.settings
        index = c.kind.findData(settings.panel_value(self.name, "kind", "category"))
        c.kind.blockSignals(True)
        c.kind.setCurrentIndex(max(index, 0))
        c.kind.blockSignals(False)
        c.klass.setEnabled(c.kind.currentData() == "dprime")
        c.show_pinwheels.setChecked(bool(int(settings.panel_value(self.name, "pinwheels", 1))))

    def shutdown(self) -> None:
        self.play_timer.stop()
        super().shutdown()
