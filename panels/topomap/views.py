"""pyqtgraph views of the topomap panel. They only draw what the engine computed."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QLabel

METHOD_COLOURS = {
    "none": (120, 120, 120),
    "absom": (214, 39, 40),
    "cbsom": (31, 119, 180),
    "topoloss": (44, 160, 44),
    "som": (148, 103, 189),
}


class ClickableImage(pg.ImageItem):
    """An RGB map whose pixels are units; a left click reports (row, col)."""

    clicked = Signal(int, int)

    def mouseClickEvent(self, event) -> None:  # noqa: N802 (Qt naming)
        if event.button() != Qt.MouseButton.LeftButton or self.image is None:
            return
        pos = event.pos()
        row, col = int(np.floor(pos.y())), int(np.floor(pos.x()))
        rows, cols = self.image.shape[:2]
        if 0 <= row < rows and 0 <= col < cols:
            event.accept()
            self.clicked.emit(row, col)


class MapView(pg.GraphicsLayoutWidget):
    """A square grid of units (row 0 on top) with pinwheel markers and the selected unit."""

    unitClicked = Signal(int)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        self.box = self.addViewBox(lockAspect=True, invertY=True, enableMouse=False)
        self.box.setMenuEnabled(False)
        self.image = ClickableImage(axisOrder="row-major")
        self.box.addItem(self.image)
        self.pinwheels = pg.ScatterPlotItem(size=11, pxMode=True)
        self.box.addItem(self.pinwheels)
        self.selection = pg.ScatterPlotItem(size=1.0, pxMode=False, symbol="s", brush=None, pen=pg.mkPen((255, 255, 0), width=3))
        self.box.addItem(self.selection)
        self.side = 0
        self.image.clicked.connect(lambda r, c: self.unitClicked.emit(r * self.side + c))

    def show_map(self, rgb: np.ndarray, pinwheels: list[tuple[float, float, int]] | None, selected: int | None) -> None:
        self.side = rgb.shape[0]
        self.image.setImage(rgb, levels=(0, 255))
        self.image.setRect(0, 0, rgb.shape[1], rgb.shape[0])
        spots = []
        for row, col, sign in pinwheels or []:
            colour = (255, 255, 255) if sign > 0 else (0, 0, 0)
            edge = (0, 0, 0) if sign > 0 else (255, 255, 255)
            spots.append({"pos": QPointF(col + 0.5, row + 0.5), "brush": pg.mkBrush(*colour), "pen": pg.mkPen(*edge, width=1.5)})
        self.pinwheels.setData(spots)
        if selected is not None and self.side:
            r, c = divmod(selected, self.side)
            self.selection.setData([c + 0.5], [r + 0.5])
        else:
            self.selection.setData([], [])
        self.box.autoRange(padding=0.02)

    def clear(self) -> None:
        self.image.clear()
        self.pinwheels.setData([])
        self.selection.setData([], [])


def small_plot(title: str, left: str = "", bottom: str = "") -> pg.PlotWidget:
    plot = pg.PlotWidget(background="w")
    plot.setTitle(title, color="#222", size="9pt")
    plot.setLabel("left", left)
    plot.setLabel("bottom", bottom)
    plot.showGrid(x=True, y=True, alpha=0.2)
    plot.setMenuEnabled(False)
    plot.setMinimumHeight(100)
    for axis in ("left", "bottom"):
        plot.getAxis(axis).enableAutoSIPrefix(False)
        plot.getAxis(axis).setTextPen("#333")
        plot.getAxis(axis).setPen("#888")
    return plot


def image_pixmap(rgb: np.ndarray, scale: int = 1) -> QPixmap:
    """A QPixmap of a uint8 [H, W] or [H, W, 3] array, enlarged without smoothing."""
    array = np.ascontiguousarray(rgb if rgb.ndim == 3 else np.repeat(rgb[..., None], 3, axis=-1))
    h, w = array.shape[:2]
    image = QImage(array.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()
    pixmap = QPixmap.fromImage(image)
    if scale > 1:
        pixmap = pixmap.scaled(w * scale, h * scale, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.FastTransformation)
    return pixmap


class PixmapLabel(QLabel):
    """A label that shows an RGB array scaled to fit, crisp (nearest neighbour)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._rgb: np.ndarray | None = None
        self.setMinimumSize(60, 20)

    def set_rgb(self, rgb: np.ndarray | None) -> None:
        self._rgb = rgb
        self._refresh()

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._refresh()

    def _refresh(self) -> None:
        if self._rgb is None:
            self.clear()
            return
        h, w = self._rgb.shape[:2]
        scale = max(1, min(self.width() // max(w, 1), self.height() // max(h, 1)))
        self.setPixmap(image_pixmap(self._rgb, scale))
