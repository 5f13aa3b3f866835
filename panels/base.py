"""What every method panel offers the shell: state for sessions, files it opens, exports, job slots.

A panel turns widget state into frozen engine parameters, starts a job and draws the result; it
never does maths itself. It reaches the shell only through the services of its ``PanelContext``
(never by importing ``workbench``: tests/test_architecture.py), and every job slot it has comes
from ``add_runner``, so failures and bugs are shown the same way in every panel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QStyle, QTabWidget, QToolButton, QVBoxLayout, QWidget

from engines.core import EngineError
from engines.core.executor import ExecutorSpec

if TYPE_CHECKING:
    from workbench.jobs import JobManager, JobRunner

    from .folder_tab import FolderTab
    from .run_controls import RunControls


class PanelSettings(Protocol):
    """The settings a panel may read and write (``workbench.settings.Settings`` is one)."""

    def last_dir(self) -> str: ...

    def panel_value(self, panel: str, key: str, default: Any = None) -> Any: ...

    def set_panel_value(self, panel: str, key: str, value: Any) -> None: ...

    def data_folder(self, name: str) -> Path:
        """A folder of the app's own, next to its settings, for files a panel makes (trained runs)."""
        ...


@dataclass
class PanelContext:
    """What the shell hands a panel when it creates it: the panel's only way to the shell."""

    jobs: JobManager
    settings: PanelSettings
    add_recent: Callable[[str], None] = lambda path: None
    # The shell's PNG writer for a view (OpenGL included), atomic; None where no shell is (a bare test).
    save_png: Callable[[QWidget, Path], Path] | None = None
    # Where batch runs go (Preferences ▸ Batch runs), asked at each run; this machine, one worker, in a bare test.
    executor: Callable[[], ExecutorSpec] = ExecutorSpec


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

    The panel's main job slot is ``self.runner`` (``run_default`` uses it); a job that must not
    cancel it (an export, a preview) gets a slot of its own from ``add_runner``. Every slot is wired
    the same way: an ``EngineError``'s sentence and an unexpected error go to the message bar (the
    traceback to the log), ``finished``/``partial``/``progress`` to the handlers given, and a
    ``RunControls`` row follows it when one is given. ``shutdown`` cancels them all.
    """

    name: str = ""
    title: str = ""

    stateChanged = Signal()

    def __init__(self, ctx: PanelContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setObjectName(f"{self.name}Panel")
        self.message = MessageBar(self)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        outer.addWidget(self.message)
        self.body = QWidget(self)
        outer.addWidget(self.body, 1)
        self.runners: list[JobRunner] = []
        self.runner: JobRunner = self.add_runner(self.name)
        self.runner.started.connect(self._on_job_started)

    def add_runner(
        self,
        name: str,
        *,
        finished: Callable[[Any], None] | None = None,
        partial: Callable[[Any], None] | None = None,
        progress: Callable[[float, str], None] | None = None,
        controls: RunControls | None = None,
    ) -> JobRunner:
        """A job slot of this panel (a new job on it cancels the one it runs), wired like every other."""
        runner = self.ctx.jobs.runner(name)
        runner.failed.connect(self.show_error)
        runner.errored.connect(lambda text, tb: self.show_error(f"Unexpected error ({text}); the log has the details."))
        for signal, slot in ((runner.finished, finished), (runner.partial, partial), (runner.progress, progress)):
            if slot is not None:
                signal.connect(slot)
        if controls is not None:
            controls.follow(runner)
        self.runners.append(runner)
        return runner

    def add_folder_tab(self, name: str, tab: FolderTab, *, run: Callable[[], None], finished: Callable[[Any], None]) -> JobRunner:
        """Wire a folder tab: its Run button, the folder its dialog chose (``open_folder_in``) and a
        job slot of its own, so a batch run never cancels the panel's other work, nor it the batch."""
        tab.controls.run_button.clicked.connect(run)
        tab.folderChosen.connect(lambda path: self.open_folder_in(tab, Path(path)))
        return self.add_runner(name, finished=finished, controls=tab.controls)

    def open_folder_in(self, tab: FolderTab, folder: Path) -> None:
        """List ``folder`` in ``tab`` and bring the tab to the front, or say in one sentence why not."""
        try:
            tab.open_folder(folder)
        except EngineError as exc:
            self.show_error(str(exc))
            return
        tabs = tab.parentWidget()
        while tabs is not None and not isinstance(tabs, QTabWidget):
            tabs = tabs.parentWidget()
        if tabs is not None:
            tabs.setCurrentWidget(tab)

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
        """Called when the window closes: stop timers (an override calls this too); jobs are cancelled."""
        for runner in self.runners:
            runner.cancel()

    def _on_job_started(self, *_) -> None:
        """A new job makes the last message stale; a panel whose background jobs start on their own
        (not on a user action) overrides this so they do not wipe a sentence the user must read."""
        self.message.clear()

    # Helpers ---------------------------------------------------------------------------------
    def show_error(self, text: str) -> None:
        self.message.show_message(text, "error")

    def show_info(self, text: str) -> None:
        self.message.show_message(text, "info")
