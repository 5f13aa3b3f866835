"""Rules every command follows: one JSON object with --json, progress on stderr, exit 2 on user error."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from engines.core import CancelToken, EngineError, ProgressFn, configure_threads, to_jsonable
from engines.core.paths import check_output, check_special, same_file


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one ``error:`` line and exit status 2 (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(2)


def add_command(
    sub: argparse._SubParsersAction, name: str, handler: Callable[[argparse.Namespace], Any], help: str, **kwargs: Any
) -> argparse.ArgumentParser:
    """A sub-command with the shared flags (--json, --quiet) and its handler."""
    parser = sub.add_parser(name, help=help, description=help, **kwargs)
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(handler=handler)
    return parser


def add_executor(parser: argparse.ArgumentParser) -> None:
    """--executor and --ray-address: where a batch command's independent tasks run (with --workers)."""
    from engines.core.executor import EXECUTORS

    parser.add_argument(
        "--executor", choices=EXECUTORS, default="local", help="run the tasks in local processes (default) or on Ray; the results do not depend on it"
    )
    parser.add_argument(
        "--ray-address",
        metavar="auto|HOST:PORT",
        help="with --executor ray: the Ray cluster to join ('auto': the one this machine belongs to); default: start a Ray here",
    )


def executor_spec(args: argparse.Namespace, workers: int):
    """The ExecutorSpec the flags of ``add_executor`` name."""
    from engines.core.executor import ExecutorSpec

    spec = ExecutorSpec(args.executor, workers, args.ray_address)
    spec.check()
    return spec


def add_group(sub: argparse._SubParsersAction, name: str, help: str) -> argparse._SubParsersAction:
    """A command group such as `workbench attention ...`; running it bare prints its help."""
    parser = sub.add_parser(name, help=help, description=help)
    parser.set_defaults(handler=lambda args: parser.print_help() or None, json=False, quiet=True)
    return parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=ArgumentParser)


def output(args: argparse.Namespace, data: dict[str, Any], human: str | None = None) -> None:
    """Print the command's result: one JSON object with --json, readable lines otherwise."""
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(to_jsonable(data)) + "\n")
    elif human is not None:
        sys.stdout.write(human.rstrip("\n") + "\n")
    else:
        for key, value in to_jsonable(data).items():
            sys.stdout.write(f"{key}: {json.dumps(value) if isinstance(value, (dict, list)) else value}\n")
    sys.stdout.flush()
    if getattr(args, "record", None):  # a benchmark's --record (workbench/cli/record.py)
        from .record import write_record

        write_record(args.record, getattr(args, "argv", sys.argv[1:]), data, human)


class StderrProgress:
    """A progress bar on a terminal, a few plain lines otherwise; silent with --quiet."""

    def __init__(self, quiet: bool = False, label: str = "") -> None:
        self.quiet = quiet
        self.label = label
        self.tty = sys.stderr.isatty()
        self.last_time = 0.0
        self.last_text = ""

    def __call__(self, fraction: float, text: str = "") -> None:
        if self.quiet:
            return
        now = time.monotonic()
        if self.tty:
            if now - self.last_time < 0.1 and fraction < 1.0:
                return
            width = 28
            filled = int(width * fraction)
            sys.stderr.write(f"\r{self.label}[{'#' * filled}{'.' * (width - filled)}] {100 * fraction:5.1f}% {text[:60]:<60}")
            if fraction >= 1.0:
                sys.stderr.write("\n")
        else:
            # A log file gets at most one line per 2 s (status texts may change every step).
            if now - self.last_time < 2.0 and fraction < 1.0:
                return
            sys.stderr.write(f"{self.label}{100 * fraction:5.1f}% {text}\n")
        sys.stderr.flush()
        self.last_time = now
        self.last_text = text


@contextlib.contextmanager
def cli_job(args: argparse.Namespace, label: str = "", *, threads: int | None = None, torch: bool = True) -> Iterator[tuple[ProgressFn, CancelToken]]:
    """Progress for stderr and a cancel token that Ctrl+C sets (a second Ctrl+C interrupts hard).

    It sets torch's threads first, the one place a command does (``threads``, else WORKBENCH_THREADS,
    which `main` sets to every core); ``torch=False`` for a command that never loads torch, so that it
    does not wait for torch's import."""
    if torch:
        configure_threads(threads)
    cancel = CancelToken()
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum, frame) -> None:
        if cancel.cancelled():
            raise KeyboardInterrupt
        sys.stderr.write("\ncancelling… (Ctrl+C again to abort)\n")
        cancel.cancel()

    try:
        signal.signal(signal.SIGINT, on_sigint)
    except ValueError:  # not the main thread
        previous = None
    try:
        yield StderrProgress(getattr(args, "quiet", False), label), cancel
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def seed(value: str) -> int:
    """argparse type: a seed that NumPy, torch and Open3D (a 32-bit int) all take."""
    from engines.core import check_seed

    try:
        return check_seed(int(value))
    except ValueError:
        raise EngineError(f"seed must be an integer from 0 to 2^31-1, got {value!r}") from None


def existing_file(value: str) -> Path:
    """argparse type: a path that must exist and be a file (one clear error otherwise)."""
    path = Path(value)
    if not path.exists():
        raise EngineError(f"{value}: no such file")
    if path.is_dir():
        raise EngineError(f"{value} is a folder, not a file")
    return path


def existing_folder(value: str) -> Path:
    """argparse type: a path that must exist and be a folder (one clear error otherwise)."""
    path = Path(value)
    if not path.exists():
        raise EngineError(f"{value}: no such folder")
    if not path.is_dir():
        raise EngineError(f"{value} is a file, not a folder")
    return path


def output_file(value: str) -> Path:
    """argparse type: a file the command will write; refused now, not after a long run, when it
    names a folder, a device or lies where nothing can be written (`check_outputs` then compares
    it with the inputs)."""
    path = Path(value)
    if path.is_dir():
        raise EngineError(f"cannot write {value}: it is a folder")
    check_special(path, "output")
    _check_writable(path.parent, value)
    return path


def output_folder(value: str) -> Path:
    """argparse type: a folder the command will write into (created when missing)."""
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise EngineError(f"cannot write into {value}: it is a file, not a folder")
    _check_writable(path, value)
    return path


OUTPUTS = ("out", "save", "export", "summary", "csv", "curves", "scannet")  # every flag a command writes to


def check_outputs(args: argparse.Namespace) -> None:
    """Every output of the parsed command against every input and against each other, before any work:
    an input is never overwritten, however its path is spelled (`engines.core.paths`)."""
    values = vars(args)
    inputs = [p for key, value in values.items() if key not in OUTPUTS for p in _paths(value)]
    written: list[tuple[str, Path]] = []
    for key in OUTPUTS:
        value = values.get(key)
        if not isinstance(value, Path):
            continue
        check_output(value, inputs, f"--{key}")
        for other_key, other in written:
            if same_file(value, other):
                raise EngineError(f"--{key} {value} is the same file as --{other_key} {other}: give each output its own file")
        written.append((key, value))


def _paths(value: Any) -> list[Path]:
    if isinstance(value, Path):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, Path)]
    return []


def _check_writable(folder: Path, value: str) -> None:
    """Try a scratch file in the nearest folder that exists (the command creates the rest)."""
    import tempfile

    existing = folder if str(folder) else Path(".")
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise EngineError(f"cannot write {value}: {existing} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise EngineError(f"cannot write {value}: no file can be created in {existing} ({exc.strerror or exc})") from None


def parse_size(value: str) -> tuple[int, int]:
    """'1280x800' -> (1280, 800), with sane bounds."""
    try:
        w, h = (int(v) for v in value.lower().split("x"))
    except ValueError:
        raise EngineError(f"size {value!r} is not WIDTHxHEIGHT, e.g. 1280x800") from None
    if not (64 <= w <= 8192 and 64 <= h <= 8192):
        raise EngineError(f"size {value} is out of range: each side must be 64 to 8192 pixels")
    return w, h


def add_record_flag(parser: argparse.ArgumentParser) -> None:
    """The one flag every benchmark command takes (`--out` means other things on some of them)."""
    parser.add_argument(
        "--record", type=record_file, help="also write a benchmark record (.json: command, date, machine, result) for docs/benchmarks.md"
    )


def record_file(value: str) -> Path:
    """argparse type: refused before a long benchmark starts, not after it."""
    if not value.lower().endswith(".json"):
        raise EngineError(f"--record {value}: a record is JSON, give it a .json name")
    return output_file(value)
