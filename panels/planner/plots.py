"""Metric curves over the episode (speed, acceleration, jerk, TTC, progress) with a cursor that
follows the timeline; clicking a plot seeks there."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal

PLOTS = (("speed", "speed m/s"), ("acceleration", "accel. m/s²"), ("jerk", "jerk m/s³"), ("ttc", "TTC s"), ("progress", "progress m"))


class MetricPlots(pg.GraphicsLayoutWidget):
    seek = Signal(float)  # seconds

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setBackground("#1c1f24")
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.compare: dict[str, pg.PlotDataItem] = {}
        self.cursors: list[pg.InfiniteLine] = []
        first = None
        self.plots = []
        for i, (key, label) in enumerate(PLOTS):
            p = self.addPlot(row=i, col=0)
            p.setLabel("left", label)
            p.showGrid(x=True, y=True, alpha=0.2)
            p.setMenuEnabled(False)
            p.getAxis("left").setWidth(52)
            if i < len(PLOTS) - 1:
                p.getAxis("bottom").setStyle(showValues=False)
            else:
                p.setLabel("bottom", "time s")
            if first is None:
                first = p
            else:
                p.setXLink(first)
            self.curves[key] = p.plot(pen=pg.mkPen("#ffaa00", width=2))
            self.compare[key] = p.plot(pen=pg.mkPen("#00d0d0", width=1.5))
            line = pg.InfiniteLine(angle=90, movable=True, pen=pg.mkPen("#ff4fd8", width=1))
            line.sigDragged.connect(lambda ln: self.seek.emit(float(ln.value())))
            p.addItem(line)
            self.cursors.append(line)
            self.plots.append(p)
        self.scene().sigMouseClicked.connect(self._clicked)
        first.setXRange(0, 15, padding=0.01)  # an episode's length until one is loaded
        if "ttc" in self.curves:
            ttc_plot = self.plots[[k for k, _ in PLOTS].index("ttc")]
            ttc_plot.addItem(pg.InfiniteLine(pos=0.95, angle=0, pen=pg.mkPen("#ff2828", style=pg.QtCore.Qt.PenStyle.DashLine)))
            ttc_plot.setYRange(0, 3.2)

    def set_data(self, time: np.ndarray, signals: dict[str, np.ndarray], compare: dict[str, np.ndarray] | None = None) -> None:
        for key, _ in PLOTS:
            y = signals.get(key)
            self.curves[key].setData(time, y if y is not None else np.zeros_like(time), connect="finite")
            c = (compare or {}).get(key)
            self.compare[key].setData(time[: len(c)] if c is not None else [], c if c is not None else [], connect="finite")
        self.plots[0].setXRange(0, float(time[-1]) if len(time) else 1.0, padding=0.01)

    def set_cursor(self, t: float) -> None:
        for line in self.cursors:
            if abs(line.value() - t) > 1e-9:
                line.blockSignals(True)
                line.setValue(t)
                line.blockSignals(False)

    def _clicked(self, ev) -> None:
        for p in self.plots:
            if p.sceneBoundingRect().contains(ev.scenePos()):
                self.seek.emit(float(p.vb.mapSceneToView(ev.scenePos()).x()))
                return
