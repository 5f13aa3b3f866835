"""The batch-work table of docs/scaling.md: one small planner suite on local processes and on a
local Ray, 1 and 2 workers, in one Python process; then 40 no-op tasks per row for the per-task
overhead. Run it on a quiet machine: `python scripts/measure_executors.py [--n 8]`.

The rows of every run must agree (their sha1 is over everything but the wall-clock fields), which
is what `tests/engines/test_ray.py` checks on a smaller suite.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import replace

from engines.core import configure_threads
from engines.core.executor import ExecutorSpec, connect, run_tasks
from engines.planner.suite import SuiteParams, run_suite

WALL_CLOCK = ("episode_s", "replan_ms")
NO_OPS = 40


def rows_sha1(result: dict) -> str:
    rows = [{k: v for k, v in row.items() if k not in WALL_CLOCK} for row in result["rows"]]
    return hashlib.sha1(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:12]


def overhead_ms(spec: ExecutorSpec) -> float:
    """Wall time of ``NO_OPS`` no-op tasks through the executor, per task (the pool's start included)."""
    t0 = time.perf_counter()
    assert all(r.ok for r in run_tasks(abs, range(NO_OPS), spec))
    return 1000 * (time.perf_counter() - t0) / NO_OPS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8, help="procedural scenarios (default 8)")
    args = ap.parse_args()
    configure_threads()
    suite = SuiteParams(n=args.n, planners=("idm", "constant_velocity"), commonroad=False, latency_replans=0)
    print("| executor | workers | wall s | speed-up vs local, 1 worker | per-task overhead, ms | Ray start-up s | rows sha1 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    base = None
    for kind, workers in (("local", 1), ("local", 2), ("ray", 1), ("ray", 2)):
        start = ""
        if kind == "ray":  # started (or restarted at another size) outside the timed run
            t0 = time.perf_counter()
            connect(None, workers)
            start = f"{time.perf_counter() - t0:.1f}"
        t0 = time.perf_counter()
        result = run_suite(replace(suite, executor=kind, workers=workers))
        wall = time.perf_counter() - t0
        base = base or wall
        per_task = overhead_ms(ExecutorSpec(kind, workers))
        print(f"| {kind} | {workers} | {wall:.1f} | {base / wall:.2f} | {per_task:.0f} | {start} | {rows_sha1(result)} |", flush=True)


if __name__ == "__main__":
    main()
