"""An editable table over one head's ``startend_row_indices``: a row per key column, a column per vector.

Edits do not change the mask here: the model emits the edited array and the panel sends it to
the engine, which validates it (and names the column when it is wrong)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal

from engines.attention.representation import MAX_N


class VectorsModel(QAbstractTableModel):
    edited = Signal(object)  # the full edited int array [N_k, C]
    rejected = Signal(str)  # a sentence for text that is not a row index

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._data = np.zeros((0, 1), dtype=np.int64)
        self._names: tuple[str, ...] = ("LTS",)

    def set_vectors(self, data: np.ndarray, names: tuple[str, ...]) -> None:
        self.beginResetModel()
        self._data = np.array(data, dtype=np.int64)
        self._names = names
        self.endResetModel()

    @property
    def values(self) -> np.ndarray:
        return self._data

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else self._data.shape[0]

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else self._data.shape[1]

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return int(self._data[index.row(), index.column()])
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal:
            return self._names[section] if section < len(self._names) else None
        return f"j={section}"

    def flags(self, index: QModelIndex) -> Qt.ItemFlag:
        return super().flags(index) | Qt.ItemFlag.ItemIsEditable

    def setData(self, index: QModelIndex, value, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if role != Qt.ItemDataRole.EditRole or not index.isValid():
            return False
        try:
            number = int(str(value).strip())
        except ValueError:
            self.rejected.emit(f"{str(value)!r} is not a row index: type a whole number between 0 and N_q")
            return False
        if not -MAX_N <= number <= MAX_N:  # beyond any mask's rows, and too big for the int array
            name = self._names[index.column()] if index.column() < len(self._names) else "value"
            self.rejected.emit(f"column {index.row()}: {name}={number} is outside the rows of any mask (0..N_q, N_q at most {MAX_N})")
            return False
        edited = self._data.copy()
        edited[index.row(), index.column()] = number
        self.edited.emit(edited)
        return True
