"""The frame every "a folder of the user's files, one batch run over it" tab shares: an Open folder
button and what is open, the Run/Cancel/progress row, a table of what the run returned.

The planner's Folder tab (a suite over scenario files) and the segmentation's Bench tab (a benchmark
over labelled rooms) are this frame with their own listing and columns; the panel wires one with
``MethodPanel.add_folder_tab`` (a job slot of its own, the folder dialog's answer checked by the
panel, which says in one sentence what is wrong with a folder).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QHeaderView, QLabel, QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from .run_controls import RunControls


class FolderTab(QWidget):
    """Open a folder (``folderChosen``: the panel calls ``open_folder``), run over it, read the table.

    Subclasses list a folder in ``open_folder`` (raising EngineError when it holds nothing to run)
    and fill the table from their run's result."""

    folderChosen = Signal(str)

    def __init__(self, *, holds: str, empty: str, run: str, run_tip: str, columns: Sequence[str], parent: QWidget | None = None) -> None:
        """``holds``: what the folder holds, as the dialog's title and the button's tooltip say it;
        ``empty``: the line shown before a folder is open; ``run``/``run_tip``: the run button."""
        super().__init__(parent)
        self.folder: Path | None = None
        self._holds = holds
        self.open_button = QPushButton("Open folder…")
        self.open_button.setToolTip(f"A folder of {holds}")
        self.open_button.clicked.connect(self._ask_folder)
        self.label = QLabel(empty)
        self.label.setWordWrap(True)
        self.controls = RunControls(run)
        self.controls.run_button.setToolTip(run_tip)
        self.controls.run_button.setEnabled(False)
        self.table = QTableWidget(0, len(columns))
        self.table.setHorizontalHeaderLabels(list(columns))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for c in range(1, len(columns)):
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        top = QHBoxLayout()
        top.addWidget(self.open_button)
        top.addWidget(self.label, 1)
        self.body = QVBoxLayout(self)  # subclasses insert their own rows (options above the run row, notes below)
        self.body.setContentsMargins(2, 2, 2, 2)
        self.body.addLayout(top)
        self.body.addWidget(self.controls)
        self.body.addWidget(self.table, 1)

    def open_folder(self, folder: Path) -> None:
        """List the folder's files (no numbers yet); EngineError when it holds nothing to run."""
        raise NotImplementedError

    def opened(self, folder: Path, text: str, runnable: bool) -> None:
        """Record the open folder, say what it holds and clear the last run's numbers."""
        self.folder = Path(folder)
        self.label.setText(text)
        self.controls.run_button.setEnabled(runnable)
        self.table.setRowCount(0)

    def set_number(self, row: int, column: int, text: str, tip: str = "") -> None:
        """A right-aligned cell of the table (its tooltip: why it holds no number, when it does not)."""
        item = QTableWidgetItem(text)
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if tip:
            item.setToolTip(tip)
        self.table.setItem(row, column, item)

    def _ask_folder(self) -> None:
        dialog = QFileDialog(self, f"Open a folder of {self._holds}", str(self.folder or Path.home()))
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.fileSelected.connect(self.folderChosen.emit)  # the panel opens it and says what is wrong with it
        dialog.open()
