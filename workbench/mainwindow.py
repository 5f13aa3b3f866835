"""The main window: one dock per method, menus from the action registry, activity and log.

Panels are created lazily, the first time their dock is shown (or a file, session or run needs
them), so the first paint never waits for a panel's imports.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QTabWidget,
    QWidget,
)

from engines.core import METHODS, EngineError, describe_device, set_device_preference

from .actions import ActionRegistry
from .activity import ActivityList
from .dialogs import AboutDialog, PreferencesDialog
from .jobs import JobManager, JobRunner
from .logdock import LogPanel, install_log_handler, remove_log_handler
from .palette import CommandPalette
from .session import SESSION_SUFFIX, load_session, save_session
from .settings import Settings
from .theme import apply_theme

log = logging.getLogger("workbench")

TITLES = {
    "segmentation": "Segmentation",
    "planner": "Planner",
    "attention": "Attention",
    "sketcher": "Sketcher",
    "topomap": "Topomap",
}
SHORTCUT_KEYS = {name: f"Alt+{i}" for i, name in enumerate(METHODS, start=1)}


class PanelDock(QDockWidget):
    """A method's dock; builds its panel on first show."""

    def __init__(self, name: str, factory: Callable[[str], QWidget], parent: QWidget) -> None:
        super().__init__(TITLES[name], parent)
        self.name = name
        self.setObjectName(f"dock-{name}")
        self.factory = factory
        self.panel = None
        self.setWidget(QLabel(f"Loading the {name} panel…"))
        self.visibilityChanged.connect(lambda visible: visible and QTimer.singleShot(0, self._build_if_still_shown))

    def _build_if_still_shown(self) -> None:
        # the window may have closed (and its jobs shut down) before this deferred call runs
        if self.isVisible():
            self.ensure_panel()

    def ensure_panel(self):
        if self.panel is None:
            self.panel = self.factory(self.name)
            self.setWidget(self.panel)
        return self.panel


class MainWindow(QMainWindow):
    torchReady = Signal(dict)

    def __init__(self, settings: Settings | None = None, jobs: JobManager | None = None) -> None:
        super().__init__()
        self.setObjectName("workbenchMainWindow")
        self.setWindowTitle("Workbench")
        self.setAcceptDrops(True)
        self.setDockNestingEnabled(True)
        self.setDocumentMode(True)
        self.setTabPosition(Qt.DockWidgetArea.AllDockWidgetAreas, QTabWidget.TabPosition.North)
        self.settings = settings or Settings()
        self.jobs = jobs or JobManager(self)
        self.jobs.threads = int(self.settings.preference("threads")) or None  # set by the job runner, before the first job
        self.registry = ActionRegistry(self)
        self.torch_info: dict[str, Any] | None = None
        self.session_path: Path | None = None
        self._close_confirmed = False
        self._close_dialog: QMessageBox | None = None
        self._shown_once = False

        self.docks: dict[str, PanelDock] = {name: PanelDock(name, self._make_panel, self) for name in METHODS}
        self.log_panel = LogPanel()
        self.log_dock = QDockWidget("Log", self)
        self.log_dock.setObjectName("dock-log")
        self.log_dock.setWidget(self.log_panel)
        self._log_handler = install_log_handler(self.log_panel)
        self.jobs.unexpectedError.connect(lambda msg, tb: self.statusBar().showMessage("Unexpected error: see the Log", 8000))
        self.log_panel.errorLogged.connect(lambda msg: self.statusBar().showMessage(f"Error: {msg} (see the Log)", 8000))

        self.activity = ActivityList(self.jobs)
        self.device_label = QLabel("torch: loading…")
        self.statusBar().addPermanentWidget(self.activity)
        self.statusBar().addPermanentWidget(self.device_label)
        self.palette_dialog = CommandPalette(self.registry, self)

        self._default_layout()
        self.default_state = self.saveState(1)
        self._build_actions()
        self._build_menus()
        self._restore_layout()
        self.torchReady.connect(self._on_torch_ready)

    # Layout --------------------------------------------------------------------------------
    def _default_layout(self) -> None:
        first = self.docks[METHODS[0]]
        self.addDockWidget(Qt.DockWidgetArea.TopDockWidgetArea, first)
        for name in METHODS[1:]:
            self.addDockWidget(Qt.DockWidgetArea.TopDockWidgetArea, self.docks[name])
            self.tabifyDockWidget(first, self.docks[name])
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.log_dock)
        first.raise_()
        self.resize(1280, 820)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._shown_once:
            self._shown_once = True
            if self.settings.layout() is None:  # docks only take sizes once the window has one
                QTimer.singleShot(0, self._size_log_dock)

    def _size_log_dock(self) -> None:
        log_height = max(110, self.height() // 7)
        top = self.docks[METHODS[0]]
        self.resizeDocks([top, self.log_dock], [self.height() - log_height, log_height], Qt.Orientation.Vertical)

    def _restore_layout(self) -> None:
        saved = self.settings.layout()
        if saved is not None:
            geometry, state = saved
            self.restoreGeometry(QByteArray(geometry))
            self.restoreState(QByteArray(state), 1)

    def reset_layout(self) -> None:
        for dock in [*self.docks.values(), self.log_dock]:
            dock.setFloating(False)
            dock.show()
        self.restoreState(self.default_state, 1)
        self.docks[METHODS[0]].raise_()
        self._size_log_dock()
        self.settings.clear_layout()
        self.statusBar().showMessage("Layout reset", 3000)

    def save_layout(self) -> None:
        self.settings.save_layout(bytes(self.saveGeometry()), bytes(self.saveState(1)))

    # Panels --------------------------------------------------------------------------------
    def _make_panel(self, name: str):
        from panels import PanelContext, load_panel

        from .screenshot import grab_to_png

        t0 = time.perf_counter()
        panel = load_panel(name, PanelContext(self.jobs, self.settings, self.add_recent, grab_to_png, self.settings.executor_spec))
        log.debug("panel %s built in %.0f ms", name, 1000 * (time.perf_counter() - t0))
        self._add_export_actions(name, panel)
        return panel

    def panel(self, name: str):
        """The method's panel, built now if it was not yet."""
        return self.docks[name].ensure_panel()

    def show_panel(self, name: str):
        dock = self.docks[name]
        dock.show()
        dock.raise_()
        return dock.ensure_panel()

    def built_panels(self) -> dict[str, Any]:
        return {name: dock.panel for name, dock in self.docks.items() if dock.panel is not None}

    # Actions and menus ---------------------------------------------------------------------
    def _build_actions(self) -> None:
        r = self.registry
        r.add("file.open", "File", "&Open…", self.open_dialog, QKeySequence.StandardKey.Open)
        r.add("file.session.save", "File", "&Save session…", self.save_session_dialog, QKeySequence.StandardKey.Save)
        r.add("file.session.open", "File", "Open s&ession…", self.open_session_dialog, "Ctrl+Shift+O")
        r.add("file.recent.clear", "File", "Clear recent files", self.clear_recent)
        r.add("file.preferences", "File", "&Preferences…", self.show_preferences, "Ctrl+,")
        r.add("file.quit", "File", "&Quit", self.close, QKeySequence.StandardKey.Quit)
        for name in METHODS:
            dock = self.docks[name]
            toggle = dock.toggleViewAction()
            toggle.setText(f"{TITLES[name]} panel")
            r.add(f"view.{name}", "View", toggle.text(), action=toggle, shortcut=SHORTCUT_KEYS[name])
            r.add(f"view.{name}.focus", "View", f"Go to {TITLES[name]}", lambda n=name: self.show_panel(n))
            r.add(f"run.{name}", "Run", f"Run {TITLES[name]} example", lambda n=name: self.run_panel(n))
        log_toggle = self.log_dock.toggleViewAction()
        log_toggle.setText("Log")
        r.add("view.log", "View", "Log", action=log_toggle, shortcut="Ctrl+L")
        r.add("view.reset", "View", "&Reset layout", self.reset_layout)
        r.add("view.palette", "View", "Command &palette…", self.palette_dialog.popup, "Ctrl+Shift+P")
        r.add("view.theme", "View", "Toggle dark / light theme", self.toggle_theme)
        r.add("run.cancel_all", "Run", "&Cancel all jobs", self.jobs.cancel_all, "Ctrl+.")
        r.add("help.about", "Help", "&About Workbench", self.show_about)

    def _build_menus(self) -> None:
        r = self.registry
        bar = self.menuBar()
        file = bar.addMenu("&File")
        file.addAction(r["file.open"])
        self.recent_menu = file.addMenu("Open &recent")
        self.recent_menu.setObjectName("menu-recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self._fill_recent()
        file.addSeparator()
        file.addAction(r["file.session.open"])
        file.addAction(r["file.session.save"])
        file.addSeparator()
        self.export_menu = file.addMenu("&Export")
        self.export_menu.setObjectName("menu-export")
        self.export_menus: dict[str, QMenu] = {}
        for name in METHODS:
            sub = self.export_menu.addMenu(TITLES[name])
            sub.setObjectName(f"menu-export-{name}")
            shot = r.add(f"export.{name}.png", "Export", f"{TITLES[name]}: screenshot (PNG)…", lambda n=name: self.export_screenshot(n))
            sub.addAction(shot)
            self.export_menus[name] = sub
        file.addSeparator()
        file.addAction(r["file.preferences"])
        file.addSeparator()
        file.addAction(r["file.quit"])

        view = bar.addMenu("&View")
        for name in METHODS:
            view.addAction(r[f"view.{name}"])
        view.addAction(r["view.log"])
        view.addSeparator()
        view.addAction(r["view.reset"])
        view.addAction(r["view.theme"])
        view.addAction(r["view.palette"])

        run = bar.addMenu("&Run")
        for name in METHODS:
            run.addAction(r[f"run.{name}"])
        run.addSeparator()
        run.addAction(r["run.cancel_all"])

        help_ = bar.addMenu("&Help")
        help_.addAction(r["help.about"])

    def _add_export_actions(self, name: str, panel) -> None:
        for i, action in enumerate(panel.export_actions()):
            self.registry.add(f"export.{name}.{i}", "Export", f"{TITLES[name]}: {action.text()}", action=action)
            self.export_menus[name].addAction(action)

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        files = self.settings.recent_files()
        for path in files:
            action = QAction(path, self.recent_menu)
            action.triggered.connect(lambda checked=False, p=path: self.open_path(Path(p)))
            self.recent_menu.addAction(action)
        if not files:
            none = self.recent_menu.addAction("(no recent files)")
            none.setEnabled(False)
        self.recent_menu.addSeparator()
        self.recent_menu.addAction(self.registry["file.recent.clear"])

    def clear_recent(self) -> None:
        self.settings.clear_recent()
        self._fill_recent()

    def add_recent(self, path: str) -> None:
        self.settings.add_recent(path)

    # Files ---------------------------------------------------------------------------------
    def panel_for(self, path: Path) -> str | None:
        """Which method opens this file: the one declaring the longest matching suffix, so
        `run.topomap.json` goes to topomap although the planner opens any `.json`."""
        from importlib import import_module

        name_lower = path.name.lower()
        best, best_length = None, 0
        for name in METHODS:
            for suffix in getattr(import_module(f"panels.{name}"), "FILE_SUFFIXES", ()):
                if name_lower.endswith(suffix) and len(suffix) > best_length:
                    best, best_length = name, len(suffix)
        return best

    def open_path(self, path: Path) -> bool:
        if path.name.endswith(SESSION_SUFFIX):
            return self.open_session(path)
        name = self.panel_for(path)
        if name is None:
            self.statusBar().showMessage(f"No panel opens {path.name}", 6000)
            log.warning("No panel opens %s", path)
            return False
        panel = self.show_panel(name)
        panel.open_path(path)
        self.add_recent(str(path))
        return True

    def open_dialog(self) -> None:
        dialog = QFileDialog(self, "Open", self.settings.last_dir())
        filters = ["Workbench session (*.wbsession.json)"]
        from importlib import import_module

        for name in METHODS:
            module = import_module(f"panels.{name}")
            if getattr(module, "FILE_SUFFIXES", ()):
                filters.append(f"{TITLES[name]} ({' '.join('*' + s for s in module.FILE_SUFFIXES)})")
        filters.append("All files (*)")
        dialog.setNameFilters(filters)
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(lambda p: self.open_path(Path(p)))
        dialog.open()

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        for url in event.mimeData().urls():
            if url.isLocalFile():
                self.open_path(Path(url.toLocalFile()))
        event.acceptProposedAction()

    # Sessions ------------------------------------------------------------------------------
    def session_state(self) -> dict[str, dict[str, Any]]:
        return {name: panel.state() for name, panel in self.built_panels().items()}

    def save_session(self, path: Path) -> Path:
        written = save_session(path, self.session_state())
        self.session_path = written
        self.add_recent(str(written))
        self.statusBar().showMessage(f"Session saved to {written.name}", 4000)
        return written

    def open_session(self, path: Path) -> bool:
        try:
            states = load_session(path)
        except EngineError as exc:
            self.statusBar().showMessage(str(exc), 8000)
            log.warning("%s", exc)
            return False
        problems = []
        for name, state in states.items():
            if name not in self.docks:
                log.warning("session %s names an unknown panel %r; skipped", path.name, name)
                continue
            try:
                self.panel(name).restore(state)
            except Exception as exc:  # one panel's bad state must not keep the others from loading
                problems.append(f"Could not restore the {name} panel: {exc}")
                log.warning("%s", problems[-1], exc_info=True)
        self.session_path = path
        self.add_recent(str(path))
        self.statusBar().showMessage(" ".join(problems) or f"Session {path.name} opened", 15000 if problems else 4000)
        return True

    def save_session_dialog(self) -> None:
        dialog = QFileDialog(self, "Save session", self.settings.last_dir(), "Workbench session (*.wbsession.json)")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.fileSelected.connect(lambda p: self._save_session_safely(Path(p)))
        dialog.open()

    def _save_session_safely(self, path: Path) -> None:
        try:
            self.save_session(path)
        except EngineError as exc:
            self.statusBar().showMessage(str(exc), 8000)
            log.warning("%s", exc)

    def open_session_dialog(self) -> None:
        dialog = QFileDialog(self, "Open session", self.settings.last_dir(), "Workbench session (*.wbsession.json)")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(lambda p: self.open_session(Path(p)))
        dialog.open()

    # Running -------------------------------------------------------------------------------
    def run_panel(self, name: str) -> bool:
        panel = self.show_panel(name)
        started = panel.run_default()
        if not started:
            self.statusBar().showMessage(f"{TITLES[name]} has no example to run yet", 4000)
        return started

    def export_screenshot(self, name: str) -> None:
        from .screenshot import grab_to_png

        dock = self.docks[name]
        dialog = QFileDialog(self, "Save screenshot", str(Path(self.settings.last_dir()) / f"{name}.png"), "PNG image (*.png)")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)

        def save(p: str) -> None:
            try:
                grab_to_png(dock, Path(p))
                self.statusBar().showMessage(f"Saved {Path(p).name}", 4000)
            except EngineError as exc:
                self.statusBar().showMessage(str(exc), 8000)

        dialog.fileSelected.connect(save)
        dialog.open()

    # Torch warm-up (after the first paint) -------------------------------------------------
    def start_warmup(self) -> JobRunner:
        """Import torch in a worker (the job runner sets its threads first), then show the device in the
        status bar; the runner lets a headless caller wait for it."""
        set_device_preference(self.settings.preference("device"))
        runner = self.jobs.runner("shell")
        runner.finished.connect(self.torchReady.emit)
        runner.failed.connect(self._on_torch_failed)
        runner.start(lambda job: describe_device(), "Loading torch")
        return runner

    def _on_torch_failed(self, message: str) -> None:
        """A setting torch cannot take (a bad WORKBENCH_THREADS): say so where the device would be."""
        self.device_label.setText("torch: not loaded")
        self.statusBar().showMessage(message, 15000)
        log.warning("%s", message)

    def _on_torch_ready(self, info: dict) -> None:
        self.torch_info = info
        n = info["torch_threads"]
        self.device_label.setText(f"torch {info['torch']} · {info['device']} · {n} thread{'' if n == 1 else 's'}")

    # Dialogs -------------------------------------------------------------------------------
    def show_preferences(self) -> None:
        dialog = PreferencesDialog(self.settings, self)
        dialog.applied.connect(self._apply_preferences)
        dialog.open()

    def _apply_preferences(self, values: dict) -> None:
        set_device_preference(values["device"])
        apply_theme(QApplication.instance(), values["theme"])
        self.statusBar().showMessage("Preferences saved", 3000)

    def toggle_theme(self) -> None:
        theme = "light" if self.settings.preference("theme") == "dark" else "dark"
        self.settings.set_preference("theme", theme)
        apply_theme(QApplication.instance(), theme)

    def show_about(self) -> None:
        dialog = AboutDialog(self.torch_info, self)
        if self.torch_info is None:
            self.torchReady.connect(dialog.set_torch_info)
        dialog.open()

    # Closing -------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        busy = [job.label for job in self.jobs.running.values()]
        if busy and not self._close_confirmed:
            event.ignore()
            self._ask_close(busy)
            return
        self.save_layout()
        for panel in self.built_panels().values():
            panel.shutdown()
        self.jobs.shutdown()
        remove_log_handler(self._log_handler)
        super().closeEvent(event)

    def _ask_close(self, busy: list[str]) -> None:
        if self._close_dialog is not None and self._close_dialog.isVisible():
            return
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Jobs are running",
            f"{len(busy)} job(s) are still running ({', '.join(busy)}). Stop them and quit?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            self,
        )
        box.setObjectName("closeDialog")
        box.setDefaultButton(QMessageBox.StandardButton.No)
        box.finished.connect(lambda result: result == QMessageBox.StandardButton.Yes and self._stop_jobs_and_close())
        self._close_dialog = box
        box.open()

    def _stop_jobs_and_close(self, timeout: float = 10.0) -> None:
        """Cancel every job, wait (without blocking the UI) until they stop, then close."""
        self.jobs.cancel_all()
        self.statusBar().showMessage("Stopping jobs…")
        deadline = time.monotonic() + timeout

        def poll() -> None:
            if self.jobs.wait_all(0.0) or time.monotonic() > deadline:
                if not self.jobs.wait_all(0.0):
                    log.warning("some jobs did not stop within %.0f s; quitting anyway", timeout)
                self._close_confirmed = True
                self.close()
            else:
                QTimer.singleShot(50, poll)

        poll()
