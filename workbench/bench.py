"""Shell benchmark: cold start to first paint, and the UI loop's longest stall under torch work.

Both are measured, never asserted in tests: these machines are shared and noisy.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from typing import Any

from engines.core import ProgressFn, no_progress

STARTUP_TARGET_S = 2.5
STALL_TARGET_MS = 50.0


def time_cold_start(env: dict[str, str]) -> tuple[float, float]:
    """Seconds from process launch to the window shown, and to the first panel built."""
    code = "from workbench.app import run_gui; raise SystemExit(run_gui(startup_probe=True))"
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    shown = panel = float("nan")
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("shown"):
            shown = time.perf_counter() - t0
        elif line.startswith("panel"):
            panel = time.perf_counter() - t0
    _, err = proc.communicate(timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"start-up probe failed: {err.strip()[-500:]}")
    return shown, panel


def measure_stall(seconds: float, heavy: bool) -> dict[str, float]:
    """Longest gap between 5 ms UI timer ticks while (optionally) a torch job runs in the job runner."""
    from PySide6.QtCore import QElapsedTimer, QTimer

    from workbench.app import create_app, install_loop
    from workbench.jobs import JobManager

    if heavy:  # the one-time import stall is measured on its own (_stall_during_import); the job runner sets the threads
        import torch  # noqa: F401
    app = create_app()
    install_loop(app)
    jobs = JobManager()
    runner = jobs.runner("bench")
    clock = QElapsedTimer()
    gaps: list[float] = []
    last = [0]

    def tick() -> None:
        now = clock.elapsed()
        gaps.append(now - last[0])
        last[0] = now

    def work(job) -> int:
        import torch

        a = torch.randn(768, 768)
        n = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            job.cancel.raise_if_cancelled()
            a = torch.tanh(a @ a * 1e-3)
            n += 1
            job.progress((seconds - (end - time.monotonic())) / seconds, f"{n} matmuls")
        return n

    from PySide6.QtCore import QEventLoop

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(tick)
    loop = QEventLoop()
    if heavy:
        runner.done.connect(loop.quit)
        QTimer.singleShot(int(1000 * (seconds + 60)), loop.quit)  # a safety net, never the measure
    else:
        QTimer.singleShot(int(1000 * seconds), loop.quit)
    clock.start()
    timer.start()
    if heavy:
        runner.start(work, "torch matmuls")
    loop.exec()
    timer.stop()
    jobs.shutdown()
    gaps = gaps[3:] or [0.0]
    return {"max_ms": float(max(gaps)), "p99_ms": float(sorted(gaps)[int(0.99 * (len(gaps) - 1))]), "ticks": len(gaps)}


def run_shell_bench(starts: int = 5, stall_seconds: float = 4.0, progress: ProgressFn = no_progress) -> dict[str, Any]:
    from workbench.display import ensure_display

    ensure_display(need_gl=True)
    env = dict(os.environ)
    env.setdefault("WORKBENCH_CONFIG_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), f"wb-bench-{os.getpid()}"))
    shown, panel = [], []
    for i in range(starts):
        progress(i / (starts + 3), f"cold start {i + 1}/{starts}")
        s, p = time_cold_start(env)
        shown.append(s)
        panel.append(p)

    progress(starts / (starts + 3), "importing torch in a worker")
    t0 = time.perf_counter()
    import_stall = _stall_during_import()
    import_seconds = time.perf_counter() - t0
    progress((starts + 1) / (starts + 3), "UI stall, idle")
    idle = measure_stall(min(2.0, stall_seconds), heavy=False)
    progress((starts + 2) / (starts + 3), "UI stall, torch job running")
    busy = measure_stall(stall_seconds, heavy=True)
    progress(1.0, "done")

    result: dict[str, Any] = {
        "cold_start_s": {"median": statistics.median(shown), "min": min(shown), "max": max(shown), "target": STARTUP_TARGET_S},
        "first_panel_s": {"median": statistics.median(panel), "min": min(panel), "max": max(panel)},
        "ui_stall_ms": {"idle": idle["max_ms"], "torch_job": busy["max_ms"], "torch_job_p99": busy["p99_ms"], "target": STALL_TARGET_MS},
        "torch_import_in_worker": {"stall_ms": import_stall, "seconds": import_seconds},
    }
    result["pass"] = {
        "cold_start": result["cold_start_s"]["median"] <= STARTUP_TARGET_S,
        "ui_stall": busy["max_ms"] <= STALL_TARGET_MS,
    }
    rows = [
        (
            f"cold start to window shown (median of {starts})",
            f"{statistics.median(shown):.2f} s",
            f"<= {STARTUP_TARGET_S} s",
            result["pass"]["cold_start"],
        ),
        ("cold start to first panel built", f"{statistics.median(panel):.2f} s", "", None),
        ("UI loop longest gap, idle", f"{idle['max_ms']:.1f} ms", "", None),
        (
            "UI loop longest gap, torch job running",
            f"{busy['max_ms']:.1f} ms (p99 {busy['p99_ms']:.1f})",
            f"<= {STALL_TARGET_MS:.0f} ms",
            result["pass"]["ui_stall"],
        ),
        ("UI loop longest gap, torch import in a worker", f"{import_stall:.1f} ms", "", None),
    ]
    lines = [f"{'measure':48} {'value':24} {'target':10} ok"]
    for name, value, target, ok in rows:
        lines.append(f"{name:48} {value:24} {target:10} {'' if ok is None else ('yes' if ok else 'NO')}")
    result["table"] = "\n".join(lines)
    return result


def _stall_during_import() -> float:
    """Longest UI gap while a worker imports torch for the first time (in a fresh process)."""
    code = (
        "import time,threading\n"
        "from PySide6.QtCore import QElapsedTimer, QTimer\n"
        "from PySide6.QtWidgets import QApplication\n"
        "app=QApplication([]); c=QElapsedTimer(); gaps=[]; last=[0]\n"
        "def tick():\n  n=c.elapsed(); gaps.append(n-last[0]); last[0]=n\n"
        "t=QTimer(); t.setInterval(5); t.timeout.connect(tick); c.start(); t.start()\n"
        "th=threading.Thread(target=lambda: __import__('torch')); th.start()\n"
        "while th.is_alive(): app.processEvents(); time.sleep(0.001)\n"
        "print(max(gaps[3:] or [0]))\n"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    try:
        return float(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return float("nan")
