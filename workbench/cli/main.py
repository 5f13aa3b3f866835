"""Entry point of the `workbench` command: no arguments opens the window."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from engines.core import METHODS, Cancelled, EngineError
from engines.core.capture import say_to_terminal
from engines.core.device import env_threads

from .common import ArgumentParser, add_command, add_record_flag, check_outputs, cli_job, output, output_file, output_folder, parse_size


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="workbench", description="Five ICLR 2025 methods, hands-on. No arguments opens the window.")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=ArgumentParser)

    gui = add_command(sub, "gui", cmd_gui, "open the window (the default), optionally with files")
    gui.add_argument("files", nargs="*", help="files or a *.wbsession.json to open")

    add_command(sub, "info", cmd_info, "versions, compute device and threads")

    shot = add_command(sub, "screenshot", cmd_screenshot, "render the window or one panel to a PNG")
    shot.add_argument("--panel", choices=METHODS, help="only this panel (default: the whole window)")
    shot.add_argument("--out", required=True, type=output_file, help="PNG file to write")
    shot.add_argument("--size", default="1280x820", help="window size WIDTHxHEIGHT (default 1280x820; refused when smaller than its panels need)")
    shot.add_argument("--run", action="store_true", help="run the panel's example first and wait for it")
    shot.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for --run or a panel's start-up job (default 300)")

    demo = add_command(sub, "demo", cmd_demo, "run every available method on its example; write exports and screenshots")
    demo.add_argument("--out", required=True, type=output_folder, help="folder to write into")
    demo.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset (default: all)")

    bench = add_command(sub, "bench", cmd_bench, "shell benchmark: cold start to first paint, UI stall under a torch job")
    bench.add_argument("--starts", type=int, default=5, help="cold starts to time (default 5)")
    bench.add_argument("--seconds", type=float, default=4.0, help="length of the torch job for the stall test")
    add_record_flag(bench)

    for name in METHODS:
        if importlib.util.find_spec(f"workbench.cli.{name}") is not None:
            importlib.import_module(f"workbench.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        env_threads()  # a typo there is refused before any command, not in the middle of its first torch job
        if not argv:
            return cmd_gui(argparse.Namespace(files=[]))
        parser = build_parser()
        args = parser.parse_args(argv)
        check_outputs(args)  # an input is never an output, before any work
        if not hasattr(args, "handler"):
            parser.print_help()
            return 0
        args.argv = list(argv)  # what a benchmark record says was run
        if args.handler not in (cmd_gui, cmd_screenshot, cmd_demo):
            # No UI thread to leave a core to: let torch use them all.
            os.environ.setdefault("WORKBENCH_THREADS", str(os.cpu_count() or 1))
        result = args.handler(args)
        return int(result) if isinstance(result, int) else 0
    except EngineError as exc:
        say_to_terminal(f"error: {exc}\n")
        return 2
    except Cancelled:
        say_to_terminal("error: cancelled by the user\n")
        return 2
    except KeyboardInterrupt:
        say_to_terminal("error: interrupted\n")
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:  # the file system said no (a read-only folder, a full disk, a path through a file)
        where = f"{exc.filename}: " if exc.filename else ""
        say_to_terminal(f"error: {where}{exc.strerror or exc}\n")
        return 2


# Commands -----------------------------------------------------------------------------------
def cmd_gui(args: argparse.Namespace) -> int:
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") and not os.environ.get("QT_QPA_PLATFORM"):
        raise EngineError("no display to open the window on: set DISPLAY, or run it under xvfb-run")
    from workbench.app import run_gui

    return run_gui(files=list(args.files))


def cmd_info(args: argparse.Namespace) -> None:
    from importlib.metadata import PackageNotFoundError, version

    import workbench
    from engines.core import configure_threads, describe_device
    from engines.core.checkpoint import shipped_checkpoints

    configure_threads()
    versions: dict[str, Any] = {"workbench": workbench.__version__, "python": platform.python_version()}
    for dist in (
        "numpy",
        "torch",
        "PySide6-Essentials",
        "pyqtgraph",
        "qasync",
        "open3d-cpu",
        "open3d",
        "triton",
        "scikit-learn",
        "lark",
        "shapely",
        "commonroad-io",
        "imageio",
    ):
        try:
            versions[dist] = version(dist)
        except PackageNotFoundError:
            continue
    checkpoints = shipped_checkpoints()
    data = {"versions": versions, **describe_device(), "platform": platform.platform(), "methods": list(METHODS), "checkpoints_sha256": checkpoints}
    human = "\n".join(
        [f"{k:20} {v}" for k, v in versions.items()]
        + [f"{'device':20} {data['device']}", f"{'torch threads':20} {data['torch_threads']}", "shipped checkpoints (SHA-256):"]
        + [f"  {name:34} {digest}" for name, digest in checkpoints.items()]
    )
    output(args, data, human)


WARMUP_TIMEOUT = 60.0  # seconds to wait for torch's import before a headless capture goes on without it


def _headless_window(size: str):
    """Application, qasync loop and main window on a private screen, with settings that do not persist."""
    import os
    import tempfile

    from workbench.display import ensure_display

    size_wh = parse_size(size)
    ensure_display(need_gl=True)
    os.environ.setdefault("WORKBENCH_CONFIG_DIR", tempfile.mkdtemp(prefix="workbench-cli-"))
    from workbench.app import build_window, create_app, install_loop

    app = create_app()
    install_loop(app)
    window = build_window(app)
    window.resize(*size_wh)
    window.show()
    app.processEvents()
    warmup = window.start_warmup()  # the status bar shows the device, as in the window a user sees
    _wait_for(app, lambda: not warmup.busy, WARMUP_TIMEOUT)
    return app, window


def _close_headless(app, window) -> None:
    """Close and destroy the window now, while the private X server still runs (it stops at exit)."""
    import shiboken6

    window._close_confirmed = True
    window.close()
    app.processEvents()
    shiboken6.delete(window)


def _wait_for(app, predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        app.processEvents()
        time.sleep(0.01)
    return True


def _settle(app, window, timeout: float, quiet: float = 1.5) -> bool:
    """Wait until no job has run for ``quiet`` seconds (panels start their first work on timers)."""
    deadline = time.monotonic() + timeout
    idle_since = time.monotonic()
    while time.monotonic() < deadline:
        app.processEvents()
        if window.jobs.running:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= quiet:
            return True
        time.sleep(0.01)
    return False


def _run_and_wait(app, window, name: str, timeout: float) -> str | None:
    """Run a panel's example and wait; returns an error sentence, or None when it finished."""
    panel = window.show_panel(name)
    _settle(app, window, timeout)  # what it loads when first shown
    outcome: dict[str, str] = {}
    panel.runner.finished.connect(lambda r: outcome.setdefault("state", "finished"))
    panel.runner.failed.connect(lambda text: outcome.setdefault("state", f"failed: {text}"))
    panel.runner.errored.connect(lambda text, tb: outcome.setdefault("state", f"error: {text}"))
    panel.runner.cancelled.connect(lambda: outcome.setdefault("state", "cancelled"))
    if not panel.run_default():
        return "it has no example to run"
    if not _wait_for(app, lambda: "state" in outcome and not panel.runner.busy, timeout):
        panel.runner.cancel()
        return f"its example did not finish within {timeout:g} s"
    _wait_for(app, lambda: False, 0.3)  # let the result draw
    state = outcome["state"]
    return None if state == "finished" else state


def _check_window_size(window, size: str) -> None:
    """Refuse a size the window did not take: Qt silently keeps a window at the minimum its
    panels need (which depends on the panels built), and the picture would not be what was asked."""
    w, h = parse_size(size)
    got = window.size()
    short = [f"{n} pixels of {side}" for n, asked, side in ((got.width(), w, "width"), (got.height(), h, "height")) if n > asked]
    if short:
        raise EngineError(f"the window cannot be as small as {w}x{h}: its panels need at least {' and '.join(short)}")


def cmd_screenshot(args: argparse.Namespace) -> None:
    from workbench.screenshot import grab_to_png, require_png

    require_png(args.out)
    if not (0 < args.timeout < float("inf")):
        raise EngineError(f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    app, window = _headless_window(args.size)
    try:
        target = window
        if args.panel:
            target = window.docks[args.panel]
            window.show_panel(args.panel)
            app.processEvents()
        _check_window_size(window, args.size)
        if args.panel and args.run:
            problem = _run_and_wait(app, window, args.panel, args.timeout)
            if problem:  # a picture of a failed run is no screenshot of the panel: write nothing
                raise EngineError(f"the {args.panel} panel could not run: {problem}")
        # what a panel loads when first shown (an example scene, a first timing) belongs in the picture
        _settle(app, window, args.timeout)
        path = grab_to_png(target, args.out)
        size = target.grab().size()
    finally:
        _close_headless(app, window)
    output(args, {"out": str(path), "width": size.width(), "height": size.height(), "panel": args.panel}, f"wrote {path}")


def cmd_demo(args: argparse.Namespace) -> None:
    from workbench.screenshot import grab_to_png

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods:
        raise EngineError(f"--methods names no method: give a comma-separated subset of {', '.join(METHODS)}")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise EngineError(f"unknown method(s): {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"out": str(out), "methods": {}}
    with cli_job(args, "demo ") as (progress, cancel):
        for name in methods:
            if importlib.util.find_spec(f"workbench.cli.{name}") is None:
                report["methods"][name] = {"status": "not available yet"}
                continue
            module = importlib.import_module(f"workbench.cli.{name}")
            if not hasattr(module, "demo"):
                report["methods"][name] = {"status": "no demo"}
                continue
            folder = out / name
            folder.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            result = module.demo(folder, progress, cancel)
            report["methods"][name] = {"status": "ok", "seconds": round(time.perf_counter() - t0, 2), **(result or {})}
        app, window = _headless_window("1280x820")
        for name in methods:
            entry = report["methods"][name]
            if entry["status"] != "ok":
                continue
            progress(0.99, f"screenshot of {name}")
            problem = _run_and_wait(app, window, name, 600)
            entry["screenshot"] = str(grab_to_png(window.docks[name], out / name / f"{name}-panel.png"))
            if problem:
                entry["panel_problem"] = problem
        grab_to_png(window, out / "window.png")
        _close_headless(app, window)
    lines = [f"{name:14} {entry['status']}" for name, entry in report["methods"].items()]
    output(args, report, "\n".join(lines + [f"written to {out}"]))


def cmd_bench(args: argparse.Namespace) -> None:
    from workbench.bench import run_shell_bench

    with cli_job(args, "bench ", torch=False) as (progress, cancel):  # its torch job runs in the job runner, which sets the threads
        result = run_shell_bench(starts=args.starts, stall_seconds=args.seconds, progress=progress)
    output(args, result, result.pop("table"))
