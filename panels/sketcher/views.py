"""The panel's views: masks as pictures, the program editor, gallery, syntax tree, edit path and
solve-rate plot. They only draw what the engine computed."""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QIcon, QImage, QPixmap, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QSlider,
    QTextEdit,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)


def mask_pixmap(mask: np.ndarray, side: int) -> QPixmap:
    """Black ink on white paper, scaled with square pixels."""
    grey = np.ascontiguousarray(np.where(mask, 0, 255).astype(np.uint8))
    image = QImage(grey.data, grey.shape[1], grey.shape[0], grey.strides[0], QImage.Format.Format_Grayscale8).copy()
    return QPixmap.fromImage(image.scaled(side, side, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.FastTransformation))


class ProgramEditor(QPlainTextEdit):
    """CSG2D text with the syntax error, when there is one, underlined in red."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sketcherProgram")
        font = QFont("monospace")
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.setFont(font)
        self.setPlaceholderText("(- (Circle 6 8 8) (Quad 8 8 2 2 H))")
        self.setMaximumBlockCount(200)
        self.error_position: int | None = None

    def mark_error(self, position: int | None) -> None:
        """Underline from the 1-based ``position`` (one character, or the end) or clear marks."""
        self.error_position = position
        if position is None:
            self.setExtraSelections([])
            return
        selection = QTextEdit.ExtraSelection()
        fmt = QTextCharFormat()
        fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
        fmt.setUnderlineColor(QColor("#d32f2f"))
        fmt.setBackground(QColor(211, 47, 47, 40))
        selection.format = fmt
        cursor = QTextCursor(self.document())
        cursor.setPosition(min(max(position - 1, 0), max(len(self.toPlainText()) - 1, 0)))
        cursor.movePosition(QTextCursor.MoveOperation.NextCharacter, QTextCursor.MoveMode.KeepAnchor)
        selection.cursor = cursor
        self.setExtraSelections([selection])


class Gallery(QListWidget):
    """The best candidates so far: render, score (IoU, or outline match for a sketch) and program text; a click picks one."""

    picked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sketcherGallery")
        self.setViewMode(QListWidget.ViewMode.IconMode)
        self.setFlow(QListWidget.Flow.LeftToRight)
        self.setWrapping(True)
        self.setResizeMode(QListWidget.ResizeMode.Adjust)
        self.setIconSize(QSize(88, 88))
        self.setGridSize(QSize(118, 128))
        self.setWordWrap(True)
        self.setMovement(QListWidget.Movement.Static)
        self.itemClicked.connect(lambda item: self.picked.emit(item.data(Qt.ItemDataRole.UserRole)))

    def show_candidates(self, candidates, masks: np.ndarray, sketch: bool) -> None:
        self.clear()
        what = "match" if sketch else "IoU"
        for cand, mask in zip(candidates, masks):
            item = QListWidgetItem(
                QIcon(mask_pixmap(mask, 88)), f"{what} {cand.score:.3f}\n{cand.program[:28]}{'…' if len(cand.program) > 28 else ''}"
            )
            how = "outline match with the strokes (within 2 px)" if sketch else "IoU with the drawing"
            item.setToolTip(f"{cand.program}\n{how} {cand.score:.3f}, found after {cand.renders} renders, {cand.depth} edits from its start")
            item.setData(Qt.ItemDataRole.UserRole, cand.program)
            self.addItem(item)


def fill_tree(view: QTreeWidget, node) -> None:
    """Show an engine ``TreeNode`` (label + children) fully expanded."""
    view.clear()
    if node is None:
        return

    def add(parent, n) -> None:
        item = QTreeWidgetItem([n.label])
        if parent is None:
            view.addTopLevelItem(item)
        else:
            parent.addChild(item)
        for child in n.children:
            add(item, child)

    add(None, node)
    view.expandAll()


class PathView(QWidget):
    """Step through the edit path from the start program to the result."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.image = QLabel()
        self.image.setFixedSize(160, 160)
        self.image.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.steps = QListWidget()
        self.steps.setObjectName("sketcherPathSteps")
        row.addWidget(self.image)
        row.addWidget(self.steps, 1)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setObjectName("sketcherPathSlider")
        self.caption = QLabel("Convert a drawing to see the edits that led to its program.")
        self.caption.setWordWrap(True)
        layout.addLayout(row, 1)
        layout.addWidget(self.slider)
        layout.addWidget(self.caption)
        self._masks: np.ndarray | None = None
        self._path: tuple = ()
        self.slider.valueChanged.connect(self.show_step)
        self.steps.currentRowChanged.connect(lambda row: row >= 0 and self.slider.setValue(row))

    def set_path(self, path, masks: np.ndarray) -> None:
        self._path, self._masks = tuple(path), masks
        self.steps.clear()
        for i, step in enumerate(path):
            self.steps.addItem(f"{i}. {step.edit or 'start'}   (score {step.score:.3f})")
        self.slider.setRange(0, max(len(path) - 1, 0))
        self.slider.setValue(len(path) - 1)
        self.show_step(len(path) - 1)

    def show_step(self, index: int) -> None:
        if not self._path or self._masks is None or not 0 <= index < len(self._path):
            return
        step = self._path[index]
        self.image.setPixmap(mask_pixmap(self._masks[index], 160))
        self.caption.setText(f"step {index} of {len(self._path) - 1}: {step.program}")
        if self.steps.currentRow() != index:
            self.steps.setCurrentRow(index)


class RatePlot(QWidget):
    """Solve rate against renderer calls, edit model vs random mutations (from `bench` results)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.layout_ = QVBoxLayout(self)
        self.note = QLabel("Loading benchmark results…")
        self.note.setWordWrap(True)
        self.layout_.addWidget(self.note)
        self.plot = None

    def show_results(self, data: dict[str, Any]) -> None:
        import pyqtgraph as pg

        if self.plot is None:
            self.plot = pg.PlotWidget(background="w")
            self.plot.setObjectName("sketcherRatePlot")
            self.plot.setLabel("bottom", "renderer calls")
            self.plot.setLabel("left", "solved (%)")
            self.plot.showGrid(x=True, y=True, alpha=0.3)
            self.layout_.insertWidget(0, self.plot, 1)
            # The key sits under the plot: inside, it hid the rising part of the curves.
            self.key = QLabel(
                "<span style='color:#1565c0'>━━ edit model</span> &nbsp; "
                "<span style='color:#c62828'>╍╍ random mutations</span> &nbsp; thick: 1-4 primitives, thin: 5-8"
            )
            self.key.setObjectName("sketcherRateKey")
            self.key.setTextFormat(Qt.TextFormat.RichText)
            self.layout_.insertWidget(1, self.key)
        self.plot.clear()
        styles = {"model": ("#1565c0", Qt.PenStyle.SolidLine), "random": ("#c62828", Qt.PenStyle.DashLine)}
        for name, run in data.get("runs", {}).items():
            for method, points in run["curves"].items():
                color, style = styles.get(method, ("#444", Qt.PenStyle.SolidLine))
                xs = [0] + [p[0] for p in points]
                ys = [0] + [100 * p[1] for p in points]
                width = 3 if name.startswith("1") else 1.5
                pen = pg.mkPen(color=color, width=width, style=style)
                self.plot.plot(xs, ys, pen=pen, name=f"{'edit model' if method == 'model' else 'random mutations'}, {name} primitives")
        self.note.setText(data.get("caption", ""))
