"""The command palette (Ctrl+Shift+P): type to filter every registered action, Enter runs it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from .actions import ActionRegistry


class CommandPalette(QDialog):
    def __init__(self, registry: ActionRegistry, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("commandPalette")
        self.setWindowTitle("Command palette")
        self.registry = registry
        self.query = QLineEdit()
        self.query.setPlaceholderText("Type a command…")
        self.results = QListWidget()
        layout = QVBoxLayout(self)
        layout.addWidget(self.query)
        layout.addWidget(self.results)
        self.resize(520, 360)
        self.query.textChanged.connect(self.refresh)
        self.query.returnPressed.connect(self.run_current)
        self.results.itemActivated.connect(lambda item: self.run_current())
        self.query.installEventFilter(self)

    def popup(self) -> None:
        self.query.clear()
        self.refresh("")
        self.open()
        self.query.setFocus()

    def refresh(self, text: str) -> None:
        self.results.clear()
        for entry in self.registry.search(text):
            shortcut = entry.action.shortcut().toString()
            item = QListWidgetItem(entry.label + (f"    {shortcut}" if shortcut else ""))
            item.setData(Qt.ItemDataRole.UserRole, entry.id)
            item.setFlags(item.flags() if entry.action.isEnabled() else Qt.ItemFlag.NoItemFlags)
            self.results.addItem(item)
        if self.results.count():
            self.results.setCurrentRow(0)

    def run_current(self) -> None:
        item = self.results.currentItem()
        if item is None:
            return
        action = self.registry[item.data(Qt.ItemDataRole.UserRole)]
        self.accept()
        if action.isEnabled():
            action.trigger()

    def eventFilter(self, obj, event) -> bool:  # arrow keys move the selection while typing
        if obj is self.query and event.type() == event.Type.KeyPress and event.key() in (Qt.Key.Key_Down, Qt.Key.Key_Up):
            step = 1 if event.key() == Qt.Key.Key_Down else -1
            row = max(0, min(self.results.count() - 1, self.results.currentRow() + step))
            self.results.setCurrentRow(row)
            return True
        return super().eventFilter(obj, event)
