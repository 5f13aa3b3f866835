"""A pyqtgraph OpenGL view of one point cloud: opaque points, an agent cylinder, our own picking.

pyqtgraph has no point picking and its GL items blend additively by default, so this view draws
with the 'opaque' / 'translucent' GL options and reports clicks (press and release without a drag)
for the engine to resolve against the projected points.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph.opengl as gl
from PySide6.QtCore import QPointF, Qt, QTimer, Signal
from PySide6.QtGui import QImage, QOpenGLContext, QVector3D


class _SharedShader:
    """Keep pyqtgraph's class-wide shader program per GL share group.

    pyqtgraph compiles one program per item class and reuses it in every context; a second
    window (a floated dock, a second panel) has its own context group, where that program id is
    invalid (GL_INVALID_VALUE on glUseProgram). Swapping the cached id per group fixes it.
    """

    _base: type
    _programs: dict = {}

    def paint(self) -> None:
        ctx = QOpenGLContext.currentContext()
        key = (self._base, id(ctx.shareGroup()) if ctx is not None else 0)
        self._base._shaderProgram = self._programs.get(key)
        super().paint()
        self._programs[key] = self._base._shaderProgram


class _Scatter(_SharedShader, gl.GLScatterPlotItem):
    _base = gl.GLScatterPlotItem


class _Lines(_SharedShader, gl.GLLinePlotItem):
    _base = gl.GLLinePlotItem


INTERACTIVE_POINTS = 50_000  # drawn while the camera moves (all, up to 200k, at rest)


class PointView(gl.GLViewWidget):
    cameraChanged = Signal()
    clicked = Signal(float, float)  # widget pixel position of a click (not a drag)

    def __init__(self, title: str = "", parent=None) -> None:
        super().__init__(parent)
        self.setObjectName(f"pointView{title.replace(' ', '')}")
        self.title = title
        self.setBackgroundColor((24, 26, 30))
        self.setMinimumSize(200, 160)
        self.scatter = _Scatter(pos=np.zeros((1, 3)), color=(0, 0, 0, 0), size=3.0, pxMode=True)
        self.scatter.setGLOptions("opaque")
        self.addItem(self.scatter)
        self.cylinder = _Lines(pos=np.zeros((2, 3)), color=(1.0, 0.85, 0.1, 1.0), width=2.0, mode="lines", antialias=True)
        self.cylinder.setGLOptions("translucent")
        self.cylinder.setVisible(False)
        self.addItem(self.cylinder)
        self.grid = _Lines(pos=np.zeros((2, 3)), color=(1.0, 1.0, 1.0, 0.12), width=1.0, mode="lines")
        self.grid.setGLOptions("translucent")
        self.addItem(self.grid)
        self._press: QPointF | None = None
        self._syncing = False
        self.positions = np.zeros((0, 3), np.float32)
        self.colors = np.zeros((0, 4), np.float32)
        self._lod = np.zeros(0, np.int64)
        self._moving = False
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(250)
        self._settle.timeout.connect(lambda: self._interactive(False))

    # Content ---------------------------------------------------------------------------------
    def set_points(self, positions: np.ndarray, colors: np.ndarray, size: float) -> None:
        self.scatter.setData(size=size)
        self.set_colors(colors, positions)

    def set_colors(self, colors: np.ndarray, positions: np.ndarray | None = None) -> None:
        from engines.segmentation.viewer import decimate

        if positions is not None:
            self.positions = positions
            self._lod = decimate(len(positions), INTERACTIVE_POINTS)
        self.colors = colors
        self._draw()

    def _draw(self) -> None:
        if self._moving and len(self.positions) > INTERACTIVE_POINTS:
            self.scatter.setData(pos=self.positions[self._lod], color=self.colors[self._lod])
        else:
            self.scatter.setData(pos=self.positions, color=self.colors)

    def _interactive(self, on: bool) -> None:
        """While the camera moves, draw a subset so that orbiting stays smooth on software GL."""
        if on != self._moving:
            self._moving = on
            self._draw()

    def set_point_size(self, size: float) -> None:
        self.scatter.setData(size=size)

    def set_cylinder(self, lines: np.ndarray | None, found: bool = False) -> None:
        if lines is None:
            self.cylinder.setVisible(False)
            return
        color = (0.3, 1.0, 0.4, 1.0) if found else (1.0, 0.85, 0.1, 1.0)
        self.cylinder.setData(pos=lines, color=color)
        self.cylinder.setVisible(True)

    def set_grid(self, lines: np.ndarray) -> None:
        self.grid.setData(pos=lines)

    # Camera ----------------------------------------------------------------------------------
    def set_camera(self, center: tuple[float, float, float], distance: float, elevation: float, azimuth: float) -> None:
        self.setCameraPosition(pos=QVector3D(*center), distance=distance, elevation=elevation, azimuth=azimuth)
        self.cameraChanged.emit()

    def camera(self) -> dict:
        c = self.opts["center"]
        return {"center": (c.x(), c.y(), c.z()), "distance": self.opts["distance"], "elevation": self.opts["elevation"],
                "azimuth": self.opts["azimuth"], "fov": self.opts["fov"]}

    def follow(self, other: "PointView") -> None:
        """Copy another view's camera without echoing the change back."""
        if self._syncing:
            return
        self._syncing = True
        cam = other.camera()
        self.opts["fov"] = cam["fov"]
        self.setCameraPosition(pos=QVector3D(*cam["center"]), distance=cam["distance"], elevation=cam["elevation"], azimuth=cam["azimuth"])
        self._syncing = False

    def mvp(self) -> np.ndarray:
        """Projection @ view as a row-major 4x4 (points are column vectors)."""
        viewport = (0, 0, self.width(), self.height())
        m = self.projectionMatrix(viewport, viewport) * self.viewMatrix()
        return np.array(m.copyDataTo(), dtype=np.float64).reshape(4, 4)

    # Events ----------------------------------------------------------------------------------
    def mousePressEvent(self, ev) -> None:
        self._press = ev.position()
        super().mousePressEvent(ev)
        self._interactive(True)

    def mouseMoveEvent(self, ev) -> None:
        super().mouseMoveEvent(ev)
        if ev.buttons() != Qt.MouseButton.NoButton:
            self.cameraChanged.emit()

    def mouseReleaseEvent(self, ev) -> None:
        super().mouseReleaseEvent(ev)
        self._interactive(False)
        if self._press is not None and ev.button() == Qt.MouseButton.LeftButton:
            d = ev.position() - self._press
            if abs(d.x()) + abs(d.y()) <= 3:
                self.clicked.emit(ev.position().x(), ev.position().y())
        self._press = None

    def wheelEvent(self, ev) -> None:
        self._interactive(True)
        self._settle.start()
        super().wheelEvent(ev)
        self.cameraChanged.emit()

    def image(self) -> QImage:
        """The rendered frame (QWidget.grab of a QOpenGLWidget can miss GL content)."""
        return self.grabFramebuffer()
