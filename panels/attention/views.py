"""The attention panel's drawings: mask heat map with tile overlay and painting, vector plots,
and the latency-vs-rho sweep. They only draw what the engine computed."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal

# Tile kinds (engine: unmasked 0, partial 1, masked 2) as RGBA overlay colours.
TILE_COLOURS = np.array([[46, 160, 67, 70], [240, 180, 41, 150], [200, 60, 60, 110]], dtype=np.uint8)
TILE_NAMES = ("unmasked", "partial", "fully masked (skipped)")
VECTOR_PENS = {"LTS": "#1d5fa8", "LTE": "#6aa5e0", "UTS": "#b3261e", "UTE": "#e0786f"}


class HeatMap(pg.GraphicsLayoutWidget):
    """Visible fraction per pixel (dark = visible) in mask coordinates: x = key column, y = query row.

    With painting on, dragging emits ``painted(row, col)`` in mask coordinates."""

    painted = Signal(int, int)
    boundariesMoved = Signal(object)  # list of column positions after a drag

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        self.plot = self.addPlot()
        self.plot.invertY(True)
        self.plot.setAspectLocked(True)
        self.plot.setLabel("bottom", "key column j")
        self.plot.setLabel("left", "query row i")
        self.plot.setMenuEnabled(False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setLookupTable(_lut())
        self.image.setLevels((0.0, 1.0))
        self.overlay = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.plot.addItem(self.overlay)
        self.paint_enabled = False
        self._shape = (1, 1)
        self._lines: list[pg.InfiniteLine] = []

    def show_mask(self, image: np.ndarray, n_q: int, n_k: int, tiles: np.ndarray | None, overlay: bool) -> None:
        self._shape = (n_q, n_k)
        self.image.setImage(image, autoLevels=False, levels=(0.0, 1.0))
        self.image.setRect(0, 0, n_k, n_q)
        if tiles is not None and overlay:
            self.overlay.setImage(TILE_COLOURS[tiles], autoLevels=False)
            self.overlay.setRect(0, 0, n_k, n_q)
            self.overlay.show()
        else:
            self.overlay.hide()
        self.plot.setRange(xRange=(0, n_k), yRange=(0, n_q), padding=0.02)

    def set_boundaries(self, edges: tuple[int, ...], n_k: int) -> None:
        """Draggable segment edges (document boundaries); a finished drag emits them all."""
        for line in self._lines:
            self.plot.removeItem(line)
        self._lines = []
        for edge in edges:
            line = pg.InfiniteLine(pos=edge, angle=90, movable=True, bounds=(1, n_k - 1), pen=pg.mkPen("#8a6d00", width=2))
            line.setHoverPen(pg.mkPen("#b3261e", width=3))
            line.setToolTip("drag to move this boundary")
            line.sigPositionChangeFinished.connect(lambda *_: self.boundariesMoved.emit([ln.value() for ln in self._lines]))
            self.plot.addItem(line)
            self._lines.append(line)

    def _cell(self, pos) -> tuple[int, int] | None:
        point = self.plot.vb.mapSceneToView(pos)
        i, j = int(np.floor(point.y())), int(np.floor(point.x()))
        if 0 <= i < self._shape[0] and 0 <= j < self._shape[1]:
            return i, j
        return None

    def mousePressEvent(self, event) -> None:
        if self.paint_enabled and event.button() == Qt.MouseButton.LeftButton:
            self._paint(event.position())
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event) -> None:
        if self.paint_enabled and event.buttons() & Qt.MouseButton.LeftButton:
            self._paint(event.position())
            event.accept()
            return
        super().mouseMoveEvent(event)

    def _paint(self, pos: QPointF) -> None:
        cell = self._cell(self.mapToScene(pos.toPoint()))
        if cell is not None:
            self.painted.emit(*cell)


def _lut() -> np.ndarray:
    light, dark = np.array([241, 245, 249]), np.array([29, 53, 87])
    t = np.linspace(0, 1, 256)[:, None]
    return (light + t * (dark - light)).astype(np.uint8)


class VectorPlot(pg.PlotWidget):
    """The interval vectors against the key column (pyqtgraph downsamples long ones)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent, background="w")
        self.setLabel("bottom", "key column j")
        self.setLabel("left", "query row")
        self.addLegend(offset=(5, 5))
        self.plotItem.setDownsampling(auto=True, mode="peak")
        self.plotItem.setClipToView(True)
        self.getViewBox().invertY(True)

    def show_vectors(self, vectors: np.ndarray, names: tuple[str, ...]) -> None:
        self.clear()
        x = np.arange(vectors.shape[0])
        for k, name in enumerate(names):
            self.plot(x, vectors[:, k], pen=pg.mkPen(VECTOR_PENS.get(name, "k"), width=2), name=name)


class SweepPlot(pg.PlotWidget):
    """Latency against rho for each timed backend, with the ideal line full_ms x (1 - rho)."""

    COLOURS = {"blocksparse": "#1d5fa8", "flex": "#8a6d00", "sdpa_dense": "#b3261e", "triton": "#2e7d32"}

    def __init__(self, parent=None) -> None:
        super().__init__(parent, background="w")
        self.setLabel("bottom", "rho (fraction of tiles skipped)")
        self.setLabel("left", "latency (ms)")
        self.addLegend(offset=(5, -5))  # bottom left: every curve starts near the full latency and falls no faster than the ideal line
        self.setXRange(0, 1)

    def show_sweep(self, sweep) -> None:
        self.clear()
        for backend, full in sweep.full_ms.items():
            colour = self.COLOURS.get(backend, "k")
            pts = sorted((p.rho, p.ms[backend]) for p in sweep.points if backend in p.ms)
            if pts:
                xs, ys = zip(*pts)
                self.plot(xs, ys, pen=pg.mkPen(colour, width=2), symbol="o", symbolBrush=colour, name=f"{backend}")
            self.plot([0, 1], [full, 0], pen=pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine), name=f"ideal {backend}")
        self.setXRange(0, 1)
