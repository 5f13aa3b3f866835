"""Benchmark records: what a benchmark printed, with when, where and how it ran.

`--record FILE.json` on every benchmark command writes one; `make bench` collects them under
bench-results/ and scripts/render_benchmarks.py renders docs/benchmarks.md from them, so that a
measured number is typed by nobody and lives in one place."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from engines.core import to_jsonable, write_json

FORMAT = "workbench-bench-record"
VERSION = 1


def write_record(path: Path, argv: list[str], result: dict[str, Any], table: str | None) -> Path:
    """Write the record atomically; ``argv`` is the command line without the --record flag's pair."""
    record = {
        "format": FORMAT,
        "version": VERSION,
        "command": "workbench " + " ".join(_without_record(argv)),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "commit": _commit(),
        "result": to_jsonable(result),
        "table": table,
    }
    return write_json(path, record)


def machine() -> dict[str, Any]:
    """The machine in words a reader can compare: CPU model, cores, threads used, load, GPU if torch saw one."""
    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "threads": os.environ.get("WORKBENCH_THREADS"),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    if hasattr(os, "getloadavg"):
        info["load"] = round(os.getloadavg()[0], 2)  # the machine is often shared: a busy one reads slower
    torch = sys.modules.get("torch")
    if torch is not None:
        info["torch"] = torch.__version__
        info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return info


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _commit() -> str | None:
    """The source's git commit, when it runs from a checkout (a wheel has none)."""
    root = Path(__file__).resolve().parents[2]
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _without_record(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--record":
            skip = True
        elif not arg.startswith("--record="):
            out.append(arg)
    return out
