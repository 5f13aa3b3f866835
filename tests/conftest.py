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
    if os.environ.get("PYTEST_XDIST_WORKER"):  # pytest workers side by side already fill the cores: one torch thread each
        import torch

        torch.set_num_threads(1)


# Tests that start worker processes of their own (a pool, torchrun, a local Ray): under
# `pytest -n 2 --dist loadgroup` (make test) they run one after another on one pytest worker,
# so that two of them never share the cores, or a machine's one local Ray, at the same time.
PROCESSES = pytest.mark.xdist_group("processes")


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


SHELL_COMMANDS = ("gui", "screenshot", "demo", "bench", "info")  # Qt or process-wide: never inside pytest's process


def run_cli_here(*args: str, timeout: float = 300, env: dict[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    """`workbench ARGS` through the CLI's ``main()`` in this process: the same exit code, standard
    output and standard error as ``run_cli`` (an uncaught exception: its traceback and exit code 1,
    as Python prints it), without starting Python and importing torch again for every call (about
    3 s each, 158 calls). What a command may change for the whole process is put back afterwards:
    the environment, the working folder, standard input, signal handlers, the root logger and
    torch's threads (a command sets them once per process, for all the cores: left set, the tests
    after it would run two threads beside their own worker processes). ``timeout`` is
    pytest-timeout's here. The shell's own commands (the window, screenshots, the
    demo, the shell benchmark, ``info``'s process facts) and a bare ``workbench`` run as processes."""
    if not args or args[0] in SHELL_COMMANDS:
        return run_cli(*args, timeout=timeout, env=env, input=input)
    import contextlib
    import importlib
    import io
    import logging
    import signal
    import traceback

    import torch

    from workbench.cli.main import main

    device = importlib.import_module("engines.core.device")  # the module (``engines.core.device`` is also a function)

    out, err = io.StringIO(), io.StringIO()
    threads, threads_applied = torch.get_num_threads(), device._threads_applied
    environ, cwd, stdin = dict(os.environ), os.getcwd(), sys.stdin
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    root = logging.getLogger()
    log_handlers, log_level = list(root.handlers), root.level
    os.environ.update(env or {})
    os.chdir(ROOT)
    sys.stdin = io.StringIO(input or "")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors, --help
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
            except Exception:
                traceback.print_exc()
                code = 1
    finally:
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(cwd)
        sys.stdin = stdin
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        root.handlers[:], root.level = log_handlers, log_level
        torch.set_num_threads(threads)
        device._threads_applied = threads_applied
    return subprocess.CompletedProcess(["workbench", *args], code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli():
    """The CLI, run in this process (``run_cli_here``): what most CLI tests need."""
    return run_cli_here


@pytest.fixture
def cli_process():
    """The CLI as its own process (``run_cli``), for what only a process shows: the entry point,
    signals, the display, process-wide settings such as torch's threads."""
    return run_cli
