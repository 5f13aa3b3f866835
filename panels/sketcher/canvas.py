"""The drawing canvas: pen, eraser, line, rectangle and ellipse tools, brush size, undo/redo.

The drawing lives in a 512x512 grey QImage (white paper, black ink); the panel hands its pixels
to the engine, which turns them into a target.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

SIDE = 512
TOOLS = ("pen", "eraser", "line", "rectangle", "ellipse")
_HISTORY = 50


class DrawingCanvas(QWidget):
    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sketcherCanvas")
        self.setMinimumSize(256, 256)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setCursor(Qt.CursorShape.CrossCursor)
        self.image = self._blank()
        self.tool = "pen"
        self.brush = 14
        self.fill = True
        self._undo: list[QImage] = []
        self._redo: list[QImage] = []
        self._start: QPointF | None = None
        self._last: QPointF | None = None
        self._drag: QPointF | None = None

    # state -----------------------------------------------------------------------------------
    @staticmethod
    def _blank() -> QImage:
        image = QImage(SIDE, SIDE, QImage.Format.Format_Grayscale8)
        image.fill(255)
        return image

    def grey(self) -> np.ndarray:
        """The drawing as (512, 512) floats, 1 = paper, 0 = ink."""
        stride = self.image.bytesPerLine()
        raw = np.frombuffer(self.image.constBits(), np.uint8, count=stride * SIDE).reshape(SIDE, stride)[:, :SIDE]
        return raw.astype(np.float32) / 255.0

    def is_blank(self) -> bool:
        return bool((self.grey() > 0.5).all())

    def _remember(self) -> None:
        self._undo.append(self.image.copy())
        del self._undo[:-_HISTORY]
        self._redo.clear()

    def undo(self) -> None:
        if self._undo:
            self._redo.append(self.image)
            self.image = self._undo.pop()
            self._changed()

    def redo(self) -> None:
        if self._redo:
            self._undo.append(self.image)
            self.image = self._redo.pop()
            self._changed()

    def can_undo(self) -> bool:
        return bool(self._undo)

    def can_redo(self) -> bool:
        return bool(self._redo)

    def clear(self) -> None:
        self._remember()
        self.image = self._blank()
        self._changed()

    def set_mask(self, mask: np.ndarray) -> None:
        """Replace the drawing by a (n, n) ink mask, scaled up (undoable)."""
        self._remember()
        grey = np.where(mask, 0, 255).astype(np.uint8)
        small = QImage(grey.data, grey.shape[1], grey.shape[0], grey.strides[0], QImage.Format.Format_Grayscale8).copy()
        self.image = small.scaled(SIDE, SIDE, Qt.AspectRatioMode.IgnoreAspectRatio, Qt.TransformationMode.FastTransformation)
        self._changed()

    def set_image(self, image: QImage) -> None:
        self._remember()
        self.image = image.convertToFormat(QImage.Format.Format_Grayscale8).scaled(SIDE, SIDE)
        self._changed()

    def _changed(self) -> None:
        self.update()
        self.changed.emit()

    # geometry ----------------------------------------------------------------------------------
    def _frame(self) -> QRectF:
        side = min(self.width(), self.height())
        return QRectF((self.width() - side) / 2, (self.height() - side) / 2, side, side)

    def to_image(self, pos: QPointF) -> QPointF:
        frame = self._frame()
        scale = SIDE / frame.width()
        return QPointF((pos.x() - frame.x()) * scale, (pos.y() - frame.y()) * scale)

    # drawing -----------------------------------------------------------------------------------
    def _pen(self, erase: bool) -> QPen:
        pen = QPen(QColor(255 if erase else 0, 255 if erase else 0, 255 if erase else 0), self.brush)
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
        return pen

    def _paint_shape(self, painter: QPainter, a: QPointF, b: QPointF) -> None:
        painter.setPen(self._pen(False))
        painter.setBrush(QColor(0, 0, 0) if self.fill else Qt.BrushStyle.NoBrush)
        rect = QRectF(a, b).normalized()
        if self.tool == "line":
            painter.drawLine(a, b)
        elif self.tool == "rectangle":
            painter.drawRect(rect)
        else:
            painter.drawEllipse(rect)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        self._remember()
        p = self.to_image(event.position())
        self._start = self._last = self._drag = p
        if self.tool in ("pen", "eraser"):
            self._stroke(p, p)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._start is None:
            return
        p = self.to_image(event.position())
        if self.tool in ("pen", "eraser"):
            self._stroke(self._last, p)
            self._last = p
        else:
            self._drag = p
            self.update()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._start is None or event.button() != Qt.MouseButton.LeftButton:
            return
        p = self.to_image(event.position())
        if self.tool not in ("pen", "eraser"):
            painter = QPainter(self.image)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            self._paint_shape(painter, self._start, p)
            painter.end()
        self._start = self._last = self._drag = None
        self._changed()

    def _stroke(self, a: QPointF, b: QPointF) -> None:
        painter = QPainter(self.image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(self._pen(self.tool == "eraser"))
        painter.drawLine(a, b)
        painter.end()
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        frame = self._frame()
        painter.fillRect(self.rect(), self.palette().window())
        painter.drawImage(frame, self.image)
        painter.setPen(QPen(QColor(150, 150, 150), 1))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRect(frame.adjusted(0, 0, -1, -1))
        if self._start is not None and self._drag is not None and self.tool not in ("pen", "eraser"):
            painter.save()
            painter.translate(frame.topLeft())
            painter.scale(frame.width() / SIDE, frame.height() / SIDE)
            painter.setOpacity(0.6)
            self._paint_shape(painter, self._start, self._drag)
            painter.restore()
        painter.end()
