"""One registry of actions: the menus, the shortcuts and the command palette all read it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget


@dataclass
class Entry:
    id: str
    category: str
    action: QAction

    @property
    def label(self) -> str:
        return f"{self.category}: {self.action.text().replace('&', '')}"


class ActionRegistry:
    def __init__(self, owner: QWidget) -> None:
        self.owner = owner
        self.entries: dict[str, Entry] = {}

    def add(
        self,
        id: str,
        category: str,
        text: str,
        slot: Callable[[], object] | None = None,
        shortcut: str | QKeySequence.StandardKey | None = None,
        checkable: bool = False,
        action: QAction | None = None,
    ) -> QAction:
        """Create (or adopt) an action, register it under ``id`` and give it a window shortcut."""
        if action is None:
            action = QAction(text, self.owner)
            if slot is not None:
                action.triggered.connect(lambda checked=False: slot())
        action.setCheckable(checkable or action.isCheckable())
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.setObjectName(f"action-{id}")
        self.owner.addAction(action)
        self.entries[id] = Entry(id, category, action)
        return action

    def remove(self, id: str) -> None:
        entry = self.entries.pop(id, None)
        if entry is not None:
            self.owner.removeAction(entry.action)

    def __getitem__(self, id: str) -> QAction:
        return self.entries[id].action

    def search(self, text: str) -> list[Entry]:
        """Entries whose label holds every word of ``text`` (case-insensitive), enabled first."""
        words = text.lower().split()
        hits = [e for e in self.entries.values() if all(w in e.label.lower() for w in words)]
        return sorted(hits, key=lambda e: (not e.action.isEnabled(), e.label))
