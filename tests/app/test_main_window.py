"""The main window: docks, menus, layout persistence, palette, sessions, drag-and-drop, closing."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication, QMessageBox

from engines.core import METHODS

from ..conftest import ROOT, wait_until


def test_title_menus_and_a_dock_per_method(main_window) -> None:
    assert main_window.windowTitle() == "Workbench"
    menus = [a.text().replace("&", "") for a in main_window.menuBar().actions()]
    assert menus == ["File", "View", "Run", "Help"]
    assert set(main_window.docks) == set(METHODS)
    for name, dock in main_window.docks.items():
        assert dock.objectName() == f"dock-{name}"
        assert main_window.registry[f"view.{name}"] is dock.toggleViewAction()


def test_docks_close_and_come_back_from_the_view_menu(qtbot, main_window) -> None:
    dock = main_window.docks["planner"]
    main_window.show_panel("planner")
    dock.close()
    assert not dock.isVisible()
    main_window.registry["view.planner"].trigger()
    qtbot.waitUntil(dock.isVisible)


def test_docks_float_and_reset_layout_restores_them(qtbot, main_window) -> None:
    dock = main_window.docks["attention"]
    dock.setFloating(True)
    main_window.docks["topomap"].close()
    main_window.registry["view.reset"].trigger()
    assert not dock.isFloating()
    assert main_window.docks["topomap"].isVisible() or not main_window.docks["topomap"].isHidden()


def test_layout_is_saved_and_restored_with_a_version(qtbot, jobs, settings) -> None:
    from workbench.mainwindow import MainWindow
    from workbench.settings import LAYOUT_VERSION

    first = MainWindow(settings, jobs)
    qtbot.addWidget(first)
    first.show()
    first.docks["sketcher"].setFloating(True)
    first.close()
    assert int(settings.q.value("window/layout_version")) == LAYOUT_VERSION
    second = MainWindow(settings, jobs)
    qtbot.addWidget(second)
    second.show()
    assert second.docks["sketcher"].isFloating()
    settings.q.setValue("window/layout_version", LAYOUT_VERSION + 100)  # from another version: ignored
    assert settings.layout() is None
    second._close_confirmed = True
    second.close()


def test_panels_are_built_lazily(qapp, main_window) -> None:
    assert all(dock.panel is None for name, dock in main_window.docks.items() if name != METHODS[0])
    for name in METHODS:
        panel = main_window.show_panel(name)
        assert panel.name == name
        # a panel may start a job when first shown (a preview, a timing): it must finish by itself
        assert wait_until(qapp, lambda: not panel.runner.busy, 120), f"{name}: its start-up job did not finish"


def test_command_palette_filters_and_runs_actions(qtbot, main_window) -> None:
    main_window.registry["view.palette"].trigger()
    palette = main_window.palette_dialog
    qtbot.waitUntil(palette.isVisible)
    qtbot.keyClicks(palette.query, "reset layout")
    assert palette.results.count() == 1
    assert "Reset layout" in palette.results.item(0).text()
    main_window.docks["planner"].close()
    qtbot.keyClick(palette.query, Qt.Key.Key_Return)
    assert not palette.isVisible()
    assert not main_window.docks["planner"].isHidden()


def test_palette_covers_every_menu_action(main_window) -> None:
    registered = {e.action for e in main_window.registry.entries.values()}

    def walk(menu):
        for action in menu.actions():
            if action.menu():
                yield from walk(action.menu())
            elif not action.isSeparator() and action.isEnabled() and action.parent() is not main_window.recent_menu:
                yield action

    for top in main_window.menuBar().actions():
        for action in walk(top.menu()):
            assert action in registered, f"menu action {action.text()!r} is missing from the palette"


def test_session_save_and_open_round_trip(tmp_path: Path, main_window) -> None:
    """Values changed after saving come back when the session is opened again."""
    panel = main_window.show_panel("attention")
    path = main_window.save_session(tmp_path / "mine")
    assert path.name == "mine.wbsession.json"
    doc = json.loads(path.read_text())
    assert doc["format"] == "workbench-session" and "attention" in doc["panels"]
    saved = doc["panels"]["attention"]
    panel.controls.n.setValue(saved["n"] + 256)
    panel.controls.preset.setCurrentIndex((panel.controls.preset.findData(saved["preset"]) + 1) % (panel.controls.preset.count() - 1))
    panel.controls.tile.setValue(saved["tile"] // 2)
    assert panel.state() != saved
    assert main_window.open_session(path)
    assert (panel.controls.n.value(), panel.controls.preset.currentData(), panel.controls.tile.value()) == (
        saved["n"],
        saved["preset"],
        saved["tile"],
    )
    assert panel.state() == saved
    assert str(path.resolve()) in main_window.settings.recent_files()


def test_a_broken_session_file_is_one_clear_message(tmp_path: Path, main_window) -> None:
    bad = tmp_path / "broken.wbsession.json"
    bad.write_text("{ not json")
    assert not main_window.open_session(bad)
    assert "not valid JSON" in main_window.statusBar().currentMessage()


def test_dropping_a_session_file_opens_it(tmp_path: Path, main_window) -> None:
    """A dropped session file is opened: it becomes the current session and restores the panels."""
    panel = main_window.show_panel("attention")
    path = main_window.save_session(tmp_path / "drop")
    n = panel.controls.n.value()
    main_window.session_path = None
    panel.controls.n.setValue(n + 256)
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(QPoint(10, 10), Qt.DropAction.CopyAction, data, Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier)
    main_window.dropEvent(event)
    assert main_window.session_path == path
    assert panel.controls.n.value() == n


def test_recent_files_menu_lists_opened_files(main_window) -> None:
    """A file opened through the window shows up in File > Open recent."""
    path = ROOT / "resources" / "attention" / "samples" / "prefix_document_512.flashmask.json"
    assert str(path.resolve()) not in main_window.settings.recent_files()
    assert main_window.open_path(path)
    main_window.recent_menu.aboutToShow.emit()
    texts = [a.text() for a in main_window.recent_menu.actions()]
    assert str(path.resolve()) in texts


def test_unexpected_errors_reach_the_log_dock_with_traceback(qapp, main_window) -> None:
    runner = main_window.jobs.runner("test")

    def broken(job):
        return {}["missing"]

    runner.start(broken, "broken job")
    assert wait_until(qapp, lambda: any("KeyError" in e.message for e in main_window.log_panel.entries), 10)
    entry = next(e for e in main_window.log_panel.entries if "KeyError" in e.message)
    assert entry.level == logging.ERROR and "Traceback" in entry.details and "broken" in entry.details


def test_the_log_dock_shows_library_warnings_but_not_their_chatter(qapp, main_window) -> None:
    logging.getLogger("OpenGL.acceleratesupport").info("library chatter")
    logging.getLogger("OpenGL.acceleratesupport").warning("library warning")
    logging.getLogger("engines.planner").info("our own note")

    def messages() -> list[str]:
        return [e.message for e in main_window.log_panel.entries]

    assert wait_until(qapp, lambda: "our own note" in messages() and "library warning" in messages(), 10)
    assert "library chatter" not in messages()


def test_the_activity_list_shows_a_running_job_with_cancel(qapp, main_window) -> None:
    runner = main_window.jobs.runner("test")

    def slow(job):
        for i in range(500):
            job.cancel.raise_if_cancelled()
            job.progress(i / 500, "working")
            time.sleep(0.01)

    job = runner.start(slow, "slow job")
    assert wait_until(qapp, lambda: job.id in main_window.activity.items)
    item = main_window.activity.items[job.id]
    assert main_window.activity.isVisible() and "slow job" in item.label.text()
    assert wait_until(qapp, lambda: item.bar.value() > 0)
    item.cancel.click()
    assert wait_until(qapp, lambda: job.id not in main_window.activity.items and job.future.done(), 5)


def test_closing_with_a_running_job_asks_then_stops_it_cleanly(qapp, qtbot, jobs, settings) -> None:
    from workbench.mainwindow import MainWindow

    window = MainWindow(settings, jobs)
    qtbot.addWidget(window)
    window.show()
    runner = jobs.runner("test")

    def slow(job):
        for _ in range(2000):
            job.cancel.raise_if_cancelled()
            time.sleep(0.01)

    job = runner.start(slow, "slow job")
    window.close()
    assert window.isVisible(), "the window must ask before closing"
    box = window._close_dialog
    qtbot.waitUntil(box.isVisible)
    box.button(QMessageBox.StandardButton.Yes).click()
    assert wait_until(qapp, lambda: not window.isVisible(), 10)
    assert job.future.done() and job.cancel.cancelled()


def test_closing_and_answering_no_keeps_the_window(qapp, qtbot, main_window) -> None:
    runner = main_window.jobs.runner("test")
    job = runner.start(lambda job: [time.sleep(0.01) or job.cancel.raise_if_cancelled() for _ in range(1000)], "slow")
    main_window.close()
    box = main_window._close_dialog
    qtbot.waitUntil(box.isVisible)
    box.button(QMessageBox.StandardButton.No).click()
    qapp.processEvents()
    assert main_window.isVisible() and not job.cancel.cancelled()
    runner.cancel()
    assert wait_until(qapp, lambda: job.future.done())


def test_preferences_are_stored_and_the_theme_applies(qtbot, main_window) -> None:
    from engines.core.executor import ExecutorSpec
    from workbench.dialogs import PreferencesDialog

    panel = main_window.panel(METHODS[0])  # built before the preferences change
    assert panel.ctx.executor() == ExecutorSpec()
    dialog = PreferencesDialog(main_window.settings, main_window)
    dialog.applied.connect(main_window._apply_preferences)
    dialog.theme.setCurrentText("dark")
    dialog.threads.setValue(1)
    dialog.executor.setCurrentIndex(dialog.executor.findData("ray"))
    dialog.workers.setValue(3)
    dialog.ray_address.setText("auto")
    dialog.accept()
    assert main_window.settings.preference("theme") == "dark"
    assert main_window.settings.preference("threads") == 1
    assert panel.ctx.executor() == ExecutorSpec("ray", 3, "auto")  # the panel's next batch run, no restart
    assert QApplication.instance().property("workbenchTheme") == "dark"
    main_window.toggle_theme()
    assert QApplication.instance().property("workbenchTheme") == "light"


def test_about_lists_versions_and_the_torch_device(qapp, main_window) -> None:
    """Once the warm-up reports, About has the torch and Device rows and the status bar names the device."""
    import torch

    from engines.core import device
    from workbench.dialogs import AboutDialog

    main_window.start_warmup()
    assert wait_until(qapp, lambda: main_window.torch_info is not None, 60)
    info = main_window.torch_info
    expected = str(device())
    assert info["device"] == expected
    text = AboutDialog(info, main_window).label.text()
    assert "<b>PySide6 / Qt</b></td><td>" in text
    assert f"<b>torch</b></td><td>{torch.__version__}</td>" in text
    assert f"<b>Device</b></td><td>{expected}" in text
    # the warm-up worker's own thread count: OpenMP keeps it per thread, so the main thread's may differ
    assert isinstance(info["torch_threads"], int) and info["torch_threads"] >= 1
    n = info["torch_threads"]
    assert main_window.device_label.text() == f"torch {torch.__version__} · {expected} · {n} thread{'' if n == 1 else 's'}"


def test_a_dock_shown_as_the_window_closes_builds_no_panel(qtbot, main_window) -> None:
    dock = next(d for d in main_window.docks.values() if d.panel is None)
    dock.visibilityChanged.emit(True)  # its deferred build is queued...
    main_window._close_confirmed = True
    main_window.close()  # ...and the window closes (jobs shut down) before it runs
    qtbot.wait(50)
    assert dock.panel is None


def test_files_go_to_the_panel_with_the_most_specific_suffix(main_window) -> None:
    expected = {
        "cut_in.json": "planner",
        "US101.XML": "planner",
        "causal.flashmask.json": "attention",
        "cmp.topomap.json": "topomap",
        "room.ply": "segmentation",
        "drawing.png": "sketcher",
        "notes.txt": None,
    }
    assert {name: main_window.panel_for(Path(name)) for name in expected} == expected


def test_every_panel_cancels_all_its_jobs_when_the_window_closes(main_window, monkeypatch) -> None:
    """A panel's shutdown() stops its timers and then cancels every runner it added (the base class's
    part: an override that forgot it left its jobs running past the window)."""
    cancelled: list[str] = []
    panels = {name: main_window.panel(name) for name in main_window.docks}
    for name, panel in panels.items():
        assert panel.runners, f"the {name} panel has no runner"
        for i, runner in enumerate(panel.runners):
            monkeypatch.setattr(runner, "cancel", lambda name=name, i=i: cancelled.append(f"{name}:{i}"))
        panel.shutdown()
    assert cancelled == [f"{name}:{i}" for name, panel in panels.items() for i in range(len(panel.runners))]
