"""Shared fixtures: an isolated settings folder per test, a display for GL, the qasync loop,
a job manager that fails any test leaving a job running, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("QT_API", "pyside6")
    from workbench.display import ensure_display

    ensure_display(need_gl=True)  # an Xvfb of our own when there is no DISPLAY, else offscreen
    from workbench.app import load_llvm_users_before_gl, share_gl_contexts

    load_llvm_users_before_gl()  # as the app does, before pytest-qt creates the QApplication
    share_gl_contexts()


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(folder))
    return folder


@pytest.fixture(scope="session")
def qloop(qapp):
    """The qasync loop the job runner posts through (one per test session, like the app)."""
    from workbench.app import install_loop

    return install_loop(qapp)


def wait_until(qapp, predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        qapp.processEvents()
        time.sleep(0.005)
    return True


@pytest.fixture
def jobs(qapp, qloop):
    """A JobManager; the test fails if it leaves a job running."""
    from workbench.jobs import JobManager

    manager = JobManager()
    yield manager
    left = [job.label for job in manager.running.values()]
    manager.cancel_all()
    stopped = wait_until(qapp, lambda: not manager.running, timeout=15)
    manager.shutdown()
    assert not left, f"the test left job(s) running: {left}"
    assert stopped, "jobs did not stop after cancel"


@pytest.fixture
def settings(isolated_settings):
    from workbench.settings import Settings

    return Settings()


@pytest.fixture
def panel_ctx(jobs, settings):
    """What the main window hands a panel (its services included)."""
    from panels import PanelContext
    from workbench.screenshot import grab_to_png

    return PanelContext(jobs, settings, save_png=grab_to_png)


@pytest.fixture
def main_window(qapp, qtbot, jobs, settings):
    from engines.core import METHODS
    from workbench.mainwindow import MainWindow

    window = MainWindow(settings, jobs)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    # ready = the first dock's panel is built and what it loads on first show has arrived
    first = window.docks[METHODS[0]]
    assert wait_until(qapp, lambda: first.panel is not None and not jobs.running, 120), "the window did not settle"
    yield window
    # Panels shown during the test start their first view (the planner's scene preview): let it land.
    wait_until(qapp, lambda: not jobs.running, 60)
    window._close_confirmed = True
    window.close()


def run_cli(*args: str, timeout: float = 300, env: dict[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    """Run `python -m workbench ARGS` from the project root, as a user would run `workbench`."""
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        input=input,
    )


@pytest.fixture
def cli():
    return run_cli
