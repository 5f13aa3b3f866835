"""Thread-safe start-up: worker threads import one at a time (a session opening every panel at
once once handed a job a half-imported module), and a session with every panel opens 20 times."""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path

from engines.core.imports import serialise_imports

from ..conftest import wait_until

SLOW_MODULE = "import sys, time\nlog = sys.modules['startup_race_log'].events\nlog.append(('{name}', 'start'))\ntime.sleep(0.15)\nlog.append(('{name}', 'end'))\n"


def test_worker_threads_import_one_at_a_time(tmp_path: Path, monkeypatch) -> None:
    package = tmp_path / "startup_race_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("a", "b", "c"):
        (package / f"{name}.py").write_text(SLOW_MODULE.format(name=name))
    monkeypatch.syspath_prepend(str(tmp_path))
    record = types.ModuleType("startup_race_log")
    record.events = []
    monkeypatch.setitem(sys.modules, "startup_race_log", record)
    serialise_imports()
    import startup_race_pkg  # noqa: F401  (the parent first, so the children race only with each other)

    threads = [threading.Thread(target=__import__, args=(f"startup_race_pkg.{n}",)) for n in ("a", "b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events = record.events
    assert len(events) == 6
    assert all(events[i][0] == events[i + 1][0] and events[i][1] == "start" for i in range(0, 6, 2)), f"imports overlapped: {events}"
    for name in ("a", "b", "c"):
        monkeypatch.delitem(sys.modules, f"startup_race_pkg.{name}")
    monkeypatch.delitem(sys.modules, "startup_race_pkg")


def test_a_session_with_every_panel_opens_20_times(qapp, qtbot, jobs, settings, tmp_path: Path) -> None:
    """Each opening restores every panel, whose jobs start together; none may fail. (Not the
    main_window fixture: its 120 s for the first panel is short on a busy 2-core machine.)"""
    from engines.core import METHODS
    from workbench.mainwindow import MainWindow

    window = MainWindow(settings, jobs)
    qtbot.addWidget(window)
    for name in METHODS:
        window.show_panel(name)
    assert wait_until(qapp, lambda: not jobs.running, 600), f"start-up jobs still running: {[j.label for j in jobs.running.values()]}"
    session = window.save_session(tmp_path / "all")
    failures: list[str] = []
    watched: set[int] = set()
    for i in range(20):
        assert window.open_session(session), window.statusBar().currentMessage()
        for runner in jobs.runners:
            if id(runner) not in watched:
                watched.add(id(runner))
                runner.failed.connect(failures.append)
        if i:  # the first opening runs its jobs to the end; later ones only start them (the attention panel's timing is long)
            wait_until(qapp, lambda: False, 0.5)
            jobs.cancel_all()
        assert wait_until(qapp, lambda: not jobs.running, 600), f"session jobs still running: {[j.label for j in jobs.running.values()]}"
        assert "Could not restore" not in window.statusBar().currentMessage()
    window._close_confirmed = True
    window.close()
    assert not failures, failures
