"""Notifications and log: every warning and unexpected error, with its traceback one click away."""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)


@dataclass(frozen=True)
class LogEntry:
    level: int
    message: str
    details: str
    when: float


class LogBridge(QObject):
    """Carries log records from any thread to the UI thread (queued signal)."""

    entry = Signal(object)


class QtLogHandler(logging.Handler):
    def __init__(self, bridge: LogBridge) -> None:
        super().__init__(level=logging.INFO)
        self.bridge = bridge

    def emit(self, record: logging.LogRecord) -> None:
        details = ""
        if record.exc_info:
            details = "".join(traceback.format_exception(*record.exc_info))
        message = record.getMessage()
        if "\n" in message and not details:  # jobs log "summary\ntraceback"
            message, details = message.split("\n", 1)
        self.bridge.entry.emit(LogEntry(record.levelno, message, details, record.created))


class LogPanel(QWidget):
    """The log dock's content: a list of entries and the selected entry's details."""

    errorLogged = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("logPanel")
        self.entries: list[LogEntry] = []
        self.list = QListWidget()
        self.details = QPlainTextEdit()
        self.details.setReadOnly(True)
        self.details.setPlaceholderText("Select an entry to see its details and traceback.")
        for view in (self.list, self.details):
            view.setMinimumHeight(24)
        splitter = QSplitter(Qt.Orientation.Horizontal)  # side by side: the dock is short and wide
        splitter.addWidget(self.list)
        splitter.addWidget(self.details)
        splitter.setSizes([640, 360])
        clear = QPushButton("Clear")
        clear.clicked.connect(self.clear)
        self.count = QLabel()
        bar = QHBoxLayout()
        bar.addWidget(self.count, 1)
        bar.addWidget(clear)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(bar)
        layout.addWidget(splitter, 1)
        self.list.currentRowChanged.connect(self._show_details)
        self._update_count()

    def add(self, entry: LogEntry) -> None:
        self.entries.append(entry)
        stamp = time.strftime("%H:%M:%S", time.localtime(entry.when))
        name = logging.getLevelName(entry.level)
        item = QListWidgetItem(f"{stamp}  {name:<7}  {entry.message}")
        if entry.level >= logging.ERROR:
            item.setForeground(QColor("#d03b3b"))
        elif entry.level >= logging.WARNING:
            item.setForeground(QColor("#b08000"))
        self.list.addItem(item)
        self.list.scrollToBottom()
        self._update_count()
        if entry.level >= logging.ERROR:
            self.list.setCurrentRow(self.list.count() - 1)
            self.errorLogged.emit(entry.message)

    def clear(self) -> None:
        self.entries.clear()
        self.list.clear()
        self.details.clear()
        self._update_count()

    def _show_details(self, row: int) -> None:
        if 0 <= row < len(self.entries):
            entry = self.entries[row]
            self.details.setPlainText(entry.message + ("\n\n" + entry.details if entry.details else ""))

    def _update_count(self) -> None:
        errors = sum(e.level >= logging.ERROR for e in self.entries)
        self.count.setText(f"{len(self.entries)} entries, {errors} errors")


OWN_LOGGERS = ("workbench", "engines", "panels")


def _ours_or_a_warning(record: logging.LogRecord) -> bool:
    """Libraries chat at INFO (PyOpenGL, matplotlib...); the dock shows their warnings only."""
    return record.levelno >= logging.WARNING or record.name.split(".")[0] in OWN_LOGGERS


def install_log_handler(panel: LogPanel) -> QtLogHandler:
    """Route Python logging and uncaught exceptions (UI thread and workers) to the log panel."""
    bridge = LogBridge(panel)
    bridge.entry.connect(panel.add)
    handler = QtLogHandler(bridge)
    handler.addFilter(_ours_or_a_warning)
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
    log = logging.getLogger("workbench")

    def excepthook(exc_type, exc, tb) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        log.error("Unexpected error: %s: %s", exc_type.__name__, exc, exc_info=(exc_type, exc, tb))

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is not None and args.exc_value is not None:
            excepthook(args.exc_type, args.exc_value, args.exc_traceback)

    sys.excepthook = excepthook
    threading.excepthook = thread_hook
    return handler


def remove_log_handler(handler: QtLogHandler) -> None:
    logging.getLogger().removeHandler(handler)
    sys.excepthook = sys.__excepthook__
    threading.excepthook = threading.__excepthook__
