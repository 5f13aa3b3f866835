"""Shell commands refuse what they cannot honour with one `error:` line, exit 2 and no file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT


def _error_line(proc: subprocess.CompletedProcess) -> str:
    """The one error line; Qt's own warnings may come before it (offscreen has no OpenGL)."""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert proc.returncode == 2, proc.stderr
    assert len(errors) == 1 and proc.stderr.strip().endswith(errors[0]) and "Traceback" not in proc.stderr, proc.stderr
    return errors[0]


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf"])
def test_screenshot_refuses_a_timeout_that_is_not_positive(cli, tmp_path: Path, timeout: str) -> None:
    out = tmp_path / "x.png"
    line = _error_line(cli("screenshot", "--panel", "sketcher", "--run", f"--timeout={timeout}", "--out", str(out)))
    assert line.startswith("error: --timeout must be a positive number of seconds")
    assert not list(tmp_path.iterdir())


def test_a_screenshot_of_a_run_that_failed_writes_nothing(cli, tmp_path: Path) -> None:
    out = tmp_path / "x.png"
    line = _error_line(cli("screenshot", "--panel", "sketcher", "--run", "--timeout", "0.3", "--out", str(out)))
    assert line == "error: the sketcher panel could not run: its example did not finish within 0.3 s"
    assert not list(tmp_path.iterdir())


def test_a_size_below_what_the_panels_need_is_refused(cli, tmp_path: Path) -> None:
    line = _error_line(cli("screenshot", "--size", "64x64", "--out", str(tmp_path / "x.png")))
    assert line.startswith("error: the window cannot be as small as 64x64: its panels need at least ")
    assert "pixels of width and " in line and line.endswith("pixels of height")
    assert not list(tmp_path.iterdir())


def test_demo_with_no_method_named_is_an_error(cli, tmp_path: Path) -> None:
    line = _error_line(cli("demo", "--methods", ",", "--out", str(tmp_path / "demo")))
    assert line == "error: --methods names no method: give a comma-separated subset of segmentation, planner, attention, sketcher, topomap"
    assert not (tmp_path / "demo").exists()


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5"])
@pytest.mark.parametrize("command", [["info"], ["sketcher", "render", "--program", "(Circle 6 8 8)", "--out", "x.png"]])
def test_a_bad_workbench_threads_is_one_error_line(cli_process, tmp_path: Path, value: str, command: list[str]) -> None:
    """As its own process: the entry point's exit code for a method's command too (the other CLI
    tests run the commands inside pytest's process)."""
    args = [str(tmp_path / a) if a == "x.png" else a for a in command]
    line = _error_line(cli_process(*args, env={"WORKBENCH_THREADS": value}))
    assert line == f"error: WORKBENCH_THREADS must be a whole number of at least 1 (got {value!r})"
    assert not list(tmp_path.iterdir())


def test_headless_windows_show_the_device_not_loading() -> None:
    """What `screenshot` and `demo` capture: the status bar names torch's device, as a user sees it."""
    script = (
        "from workbench.cli.main import _close_headless, _headless_window\n"
        "app, window = _headless_window('1280x820')\n"
        "print(window.device_label.text(), flush=True)\n"
        "_close_headless(app, window)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    import torch

    assert proc.stdout.strip().splitlines()[-1].startswith(f"torch {torch.__version__} · cpu · "), proc.stdout
