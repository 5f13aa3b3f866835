"""The top-down scene: one pyqtgraph item per layer, fed with the engine's per-frame arrays.

All items hang under one root group, so the follow-ego camera can turn the world heading-up with
a single transform. Agents can be dragged (the drop point is reported, the engine applies it).
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPen, QPolygonF, QTransform
from PySide6.QtWidgets import QGraphicsPolygonItem

from .session import LAYERS  # the view's layers, by the names sessions keep them under


def _pen(color: str, width: float = 1.0, style=Qt.PenStyle.SolidLine, alpha: int = 255) -> QPen:
    c = QColor(color)
    c.setAlpha(alpha)
    pen = pg.mkPen(c, width=width)
    pen.setStyle(style)
    pen.setCosmetic(True)
    return pen


class LabelsItem(pg.GraphicsObject):
    """All agent ids in one item, drawn at a fixed pixel size whatever the zoom or rotation."""

    def __init__(self) -> None:
        super().__init__()
        self.labels: list[tuple[str, float, float]] = []
        self._rect = QRectF()
        self.color = QColor("#e6e6e6")

    def set_labels(self, labels: list[tuple[str, float, float]]) -> None:
        self.prepareGeometryChange()
        self.labels = labels
        if labels:
            xs = [x for _, x, _ in labels]
            ys = [y for _, _, y in labels]
            self._rect = QRectF(min(xs) - 5, min(ys) - 5, max(xs) - min(xs) + 10, max(ys) - min(ys) + 10)
        else:
            self._rect = QRectF()
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802
        return self._rect

    def paint(self, painter, option, widget=None) -> None:
        tr = painter.transform()
        painter.save()
        painter.resetTransform()
        painter.setPen(self.color)
        for text, x, y in self.labels:
            p = tr.map(QPointF(x, y))
            painter.drawText(QPointF(p.x() - 4 * len(text), p.y() + 4), text)
        painter.restore()


class DragViewBox(pg.ViewBox):
    """A ViewBox that lets the panel grab agents with the left button; other drags pan."""

    dragStarted = Signal(float, float)
    dragMoved = Signal(float, float)
    dragFinished = Signal(float, float)

    def __init__(self) -> None:
        super().__init__(lockAspect=True, enableMenu=False)
        self.root = pg.ItemGroup()
        self.addItem(self.root)
        self.can_grab = None  # callable (x, y) -> bool, set by the view
        self._grabbing = False

    def _world(self, ev) -> QPointF:
        return self.root.mapFromScene(ev.scenePos())

    def mouseDragEvent(self, ev, axis=None) -> None:  # noqa: N802 (Qt naming)
        if ev.button() != Qt.MouseButton.LeftButton:
            return super().mouseDragEvent(ev, axis)
        if ev.isStart():
            start = self.root.mapFromScene(ev.buttonDownScenePos())
            self._grabbing = bool(self.can_grab and self.can_grab(start.x(), start.y()))
            if self._grabbing:
                self.dragStarted.emit(start.x(), start.y())
        if not self._grabbing:
            return super().mouseDragEvent(ev, axis)
        ev.accept()
        p = self._world(ev)
        if ev.isFinish():
            self._grabbing = False
            self.dragFinished.emit(p.x(), p.y())
        else:
            self.dragMoved.emit(p.x(), p.y())


class SceneView(pg.GraphicsView):
    """Draws a ReplayData frame by frame."""

    agentDropped = Signal(int, float, float)

    def __init__(self, parent=None) -> None:
        super().__init__(parent, background="#1c1f24")
        self.vb = DragViewBox()
        self.setCentralItem(self.vb)
        self.vb.can_grab = self._can_grab
        self.vb.dragStarted.connect(self._drag_start)
        self.vb.dragMoved.connect(self._drag_move)
        self.vb.dragFinished.connect(self._drag_end)
        root = self.vb.root
        self.items: dict[str, list] = {}
        self.lane_items: list[QGraphicsPolygonItem] = []

        def curve(layer: str, color: str, width: float = 1.0, style=Qt.PenStyle.SolidLine, alpha: int = 255, z: float = 0.0):
            item = pg.PlotCurveItem(pen=_pen(color, width, style, alpha), connect="finite", antialias=False)
            item.setZValue(z)
            item.setParentItem(root)
            self.items.setdefault(layer, []).append(item)
            return item

        self.drivable = curve("drivable", "#5b8f5b", 2.0, Qt.PenStyle.DashLine, z=1)
        self.boundaries = curve("boundaries", "#c8c8c8", 1.0, z=2)
        self.route = curve("route", "#4682e6", 3.0, alpha=170, z=3)
        self.expert = curve("expert", "#50c878", 2.0, Qt.PenStyle.DashLine, z=4)
        self.statics = curve("agents", "#f0dc3c", 2.0, z=5)
        self.agents = curve("agents", "#5aaadc", 2.0, z=6)
        self.hot = curve("highlights", "#ff2828", 3.0, z=7)
        self.history = curve("history", "#f08c78", 2.0, z=8)
        self.samples = curve("samples", "#fad278", 1.0, alpha=150, z=9)
        self.predictions = curve("predictions", "#be78e6", 1.5, Qt.PenStyle.DashLine, z=10)
        self.chosen = curve("chosen", "#ffaa00", 3.0, z=11)
        self.compare_path = curve("compare", "#00d0d0", 2.0, z=12)
        self.compare_box = curve("compare", "#00d0d0", 2.0, z=13)
        self.x_t = curve("denoise", "#9aa0a6", 1.0, alpha=140, z=14)
        self.x0 = curve("denoise", "#ffffff", 1.5, z=15)
        self.arrows = curve("denoise", "#ff4fd8", 2.0, z=16)
        self.ego = QGraphicsPolygonItem()
        self.ego.setZValue(20)
        self.ego.setParentItem(root)
        self.ego_pen = pg.mkPen("#ffffff", width=1)
        self.ego.setPen(self.ego_pen)
        self.items["ego"] = [self.ego]
        self.drag_marker = pg.ScatterPlotItem(size=14, brush=pg.mkBrush("#ff4fd8"), pen=pg.mkPen("#ffffff"))
        self.drag_marker.setParentItem(root)
        self.drag_marker.setZValue(30)
        self.labels = LabelsItem()
        self.labels.setParentItem(root)
        self.labels.setZValue(25)
        self.items["agents"].append(self.labels)
        self.visible = {k: True for k in LAYERS}
        self.camera = 0
        self.span = 90.0
        self.replay = None
        self.episode = None
        self.frame = 0
        self._drag_id: int | None = None

    # Data -------------------------------------------------------------------------------------
    def set_replay(self, replay, episode) -> None:
        self.replay = replay
        self.episode = episode
        for item in self.lane_items:
            item.setParentItem(None)
            if item.scene() is not None:
                item.scene().removeItem(item)
        self.lane_items = []
        for poly in replay.lanes:
            item = QGraphicsPolygonItem(QPolygonF([QPointF(float(x), float(y)) for x, y in poly]))
            item.setBrush(pg.mkBrush("#464a52"))
            item.setPen(pg.mkPen(None))
            item.setZValue(-1)
            item.setParentItem(self.vb.root)
            self.lane_items.append(item)
        self.items["lanes"] = self.lane_items
        self.drivable.setData(*_xy(replay.drivable))
        self.boundaries.setData(*_xy(replay.boundaries))
        self.route.setData(*_xy(replay.route))
        self.expert.setData(*_xy(replay.expert))
        self.compare_path.setData([], [])
        self.compare_box.setData([], [])
        self.clear_denoise()
        self.apply_layers()
        self.set_frame(0)
        if self.camera == 2:
            minx, miny, maxx, maxy = replay.bounds
            self.vb.setRange(xRange=(minx, maxx), yRange=(miny, maxy), padding=0.02)

    def set_compare(self, path: np.ndarray) -> None:
        self._compare = path
        self.compare_path.setData(*_xy(path))

    def set_frame(self, k: int, compare_box: np.ndarray | None = None) -> None:
        if self.replay is None:
            return
        k = max(0, min(k, len(self.replay.frames) - 1))
        self.frame = k
        f = self.replay.frames[k]
        self.agents.setData(*_xy(f.agents))
        self.statics.setData(*_xy(self.replay.statics))
        self.hot.setData(*_xy(f.hot_agents))
        self.history.setData(*_xy(self.replay.ego_path[: k + 1]))
        self.samples.setData(*_xy(f.samples))
        self.chosen.setData(*_xy(f.chosen))
        self.predictions.setData(*_xy(f.predictions))
        self.compare_box.setData(*_xy(compare_box if compare_box is not None else np.zeros((0, 2))))
        self.ego.setPolygon(QPolygonF([QPointF(float(x), float(y)) for x, y in f.ego_box]))
        self.ego.setBrush(pg.mkBrush({"ok": "#eb503c", "ttc": "#ff9f1a", "collision": "#ff1010"}[f.ego_state]))
        self._set_labels(f.labels)
        self._camera(f)

    def _set_labels(self, labels) -> None:
        self.labels.set_labels(labels if self.visible["agents"] else [])

    def _camera(self, f) -> None:
        root = self.vb.root
        if self.camera == 1:
            tr = QTransform()
            tr.rotate(90.0 - math.degrees(f.ego_heading))
            tr.translate(-float(f.ego_xy[0]), -float(f.ego_xy[1]))
            root.setTransform(tr)
            self.vb.setRange(xRange=(-self.span / 2, self.span / 2), yRange=(-self.span / 3, self.span / 2), padding=0)
        else:
            if not root.transform().isIdentity():
                root.setTransform(QTransform())
            if self.camera == 0:
                x, y = float(f.ego_xy[0]), float(f.ego_xy[1])
                self.vb.setRange(xRange=(x - self.span / 2, x + self.span / 2), yRange=(y - self.span / 2.5, y + self.span / 2.5), padding=0)

    def set_camera(self, mode: int) -> None:
        self.camera = mode
        if self.replay is not None:
            if mode == 2:
                self.vb.root.setTransform(QTransform())
                minx, miny, maxx, maxy = self.replay.bounds
                self.vb.setRange(xRange=(minx, maxx), yRange=(miny, maxy), padding=0.02)
            self.set_frame(self.frame)

    def keyPressEvent(self, ev) -> None:  # noqa: N802
        """Timeline keys go to the panel, not to the scroll area's scrolling."""
        ev.ignore()

    def wheelEvent(self, ev) -> None:  # noqa: N802
        if self.camera == 2:
            return super().wheelEvent(ev)
        factor = 0.85 if ev.angleDelta().y() > 0 else 1 / 0.85
        self.span = float(min(max(self.span * factor, 15.0), 600.0))
        self.set_frame(self.frame)
        ev.accept()

    def apply_layers(self) -> None:
        for layer, items in self.items.items():
            for item in items:
                item.setVisible(self.visible.get(layer, True))
        self._set_labels(self.replay.frames[self.frame].labels if self.replay else [])

    # Denoising ----------------------------------------------------------------------------------
    def set_denoise(self, step: dict | None) -> None:
        if step is None:
            self.clear_denoise()
            return
        self.x_t.setData(*_xy(step["x_t"]))
        self.x0.setData(*_xy(step["x0"]))
        self.arrows.setData(*_xy(step["arrows"]))

    def clear_denoise(self) -> None:
        for item in (self.x_t, self.x0, self.arrows):
            item.setData([], [])

    # Dragging -----------------------------------------------------------------------------------
    def _can_grab(self, x: float, y: float) -> bool:
        if self.replay is None or self.episode is None:
            return False
        self._drag_id = self.replay.agent_at(self.frame, self.episode, x, y)
        return self._drag_id is not None

    def _drag_start(self, x: float, y: float) -> None:
        self.drag_marker.setData([x], [y])

    def _drag_move(self, x: float, y: float) -> None:
        self.drag_marker.setData([x], [y])

    def _drag_end(self, x: float, y: float) -> None:
        self.drag_marker.setData([x], [y])
        if self._drag_id is not None:
            self.agentDropped.emit(self._drag_id, x, y)

    def clear_drag(self) -> None:
        self.drag_marker.setData([], [])


def _xy(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=float).reshape(-1, 2)
    return a[:, 0], a[:, 1]
