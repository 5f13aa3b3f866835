"""What every method panel offers the shell: state for sessions, files it opens, exports, a job slot.

A panel turns widget state into frozen engine parameters, starts a job and draws the result; it
never does maths itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QStyle, QToolButton, QVBoxLayout, QWidget

if TYPE_CHECKING:
    from workbench.jobs import JobManager, JobRunner


@dataclass
class PanelContext:
    """What the shell hands a panel when it creates it."""

    jobs: "JobManager"
    settings: Any  # workbench.settings.Settings (kept loose so panels stay testable alone)
    add_recent: Callable[[str], None] = lambda path: None


class MessageBar(QWidget):
    """An inline one-sentence message (Orange-style) the panel shows for user-facing errors."""

    COLORS = {"error": "#b3261e", "warning": "#8a6d00", "info": "#1d5fa8"}

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("messageBar")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 4, 4)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("×")
        close.setAutoRaise(True)
        close.clicked.connect(self.clear)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.level = ""
        self.hide()

    def show_message(self, text: str, level: str = "error") -> None:
        self.level = level
        self.label.setText(text)
        color = self.COLORS.get(level, "#444")
        self.setStyleSheet(f"#messageBar {{ border: 1px solid {color}; border-radius: 4px; }} QLabel {{ color: {color}; }}")
        self.show()

    def clear(self) -> None:
        self.level = ""
        self.label.clear()
        self.hide()

    @property
    def text(self) -> str:
        return self.label.text() if self.isVisible() or self.level else ""


def side_scroll(content: QWidget, max_width: int | None = None) -> QScrollArea:
    """A column of controls that scrolls vertically and is never narrower than its widgets
    (a horizontal scroll bar there would hide the spin boxes' arrows and combo boxes' ends)."""
    scroll = QScrollArea()
    scroll.setWidget(content)
    scroll.setWidgetResizable(True)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    bar = scroll.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
    width = content.minimumSizeHint().width() + bar + 2 * scroll.frameWidth()
    scroll.setMinimumWidth(width)
    if max_width is not None:
        scroll.setMaximumWidth(max(width, max_width))
    return scroll


class MethodPanel(QWidget):
    """Base class of the five panels.

    Subclasses set ``name`` and ``title``, build their widgets into ``self.body`` and override
    the hooks they support. A panel package that opens files declares ``FILE_SUFFIXES``
    (lower-case, with the dot) at module level, so the shell can route files without building it.
    """

    name: str = ""
    title: str = ""

    stateChanged = Signal()

    def __init__(self, ctx: PanelContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setObjectName(f"{self.name}Panel")
        self.runner: JobRunner = ctx.jobs.runner(self.name)
        self.message = MessageBar(self)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        outer.addWidget(self.message)
        self.body = QWidget(self)
        outer.addWidget(self.body, 1)
        self.runner.failed.connect(lambda text: self.message.show_message(text, "error"))
        self.runner.errored.connect(
            lambda text, tb: self.message.show_message(f"Unexpected error ({text}); the log has the details.", "error")
        )
        self.runner.started.connect(self._on_job_started)

    # Hooks the shell calls -------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """Every parameter and input, JSON-ready, for session files."""
        return {}

    def restore(self, state: dict[str, Any]) -> None:
        """Apply a state produced by ``state()``; report problems with ``show_error``."""

    def open_path(self, path: Path) -> None:
        """Open a file the user dropped or chose (only called for the package's ``FILE_SUFFIXES``)."""
        self.show_error(f"The {self.title} panel cannot open {path.name}.")

    def export_actions(self) -> list[QAction]:
        """Actions for File ▸ Export ▸ <panel>."""
        return []

    def run_default(self) -> bool:
        """Start the panel's default job on its embedded example; False when it has none."""
        return False

    def shutdown(self) -> None:
        """Called when the window closes, after jobs were cancelled."""

    def _on_job_started(self, *_) -> None:
        """A new job makes the last message stale; a panel whose background jobs start on their own
        (not on a user action) overrides this so they do not wipe a sentence the user must read."""
        self.message.clear()

    # Helpers ---------------------------------------------------------------------------------
    def show_error(self, text: str) -> None:
        self.message.show_message(text, "error")

    def show_info(self, text: str) -> None:
        self.message.show_message(text, "info")
