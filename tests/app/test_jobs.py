"""The job runner with a real engine-like function: progress, cancel, errors, stale results."""

from __future__ import annotations

import threading
import time

from engines.core import CancelToken, EngineError, ProgressFn

from ..conftest import wait_until


def engine_like(steps: int, *, progress: ProgressFn, cancel: CancelToken, step_s: float = 0.01, fail_at: int = -1, bug_at: int = -1) -> int:
    """Shaped like every engine call: loops, reports, checks cancel between steps."""
    total = 0
    for i in range(steps):
        cancel.raise_if_cancelled()
        if i == fail_at:
            raise EngineError("the input has no points left after filtering")
        if i == bug_at:
            raise ZeroDivisionError("a bug")
        time.sleep(step_s)
        total += i
        progress((i + 1) / steps, f"step {i + 1}/{steps}")
    return total


def test_progress_arrives_and_result_is_delivered(qapp, jobs) -> None:
    runner = jobs.runner("test")
    seen: list[float] = []
    results: list[int] = []
    runner.progress.connect(lambda f, t: seen.append(f))
    runner.finished.connect(results.append)
    runner.start(lambda job: engine_like(20, progress=job.progress, cancel=job.cancel, step_s=0.04), "sum")
    assert wait_until(qapp, lambda: results, 20)
    assert results == [sum(range(20))]
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)
    assert not runner.busy and not jobs.running


def test_work_runs_off_the_ui_thread(qapp, jobs) -> None:
    runner = jobs.runner("test")
    threads: list[str] = []
    runner.start(lambda job: threads.append(threading.current_thread().name), "where")
    assert wait_until(qapp, lambda: threads and not jobs.running)
    assert threads[0] != threading.main_thread().name and threads[0].startswith("wb-cpu")


def test_gpu_jobs_are_serialised_on_one_worker(qapp, jobs) -> None:
    active = [0, 0]
    lock = threading.Lock()

    def work(job) -> str:
        with lock:
            active[0] += 1
            active[1] = max(active[1], active[0])
        time.sleep(0.1)
        with lock:
            active[0] -= 1
        return threading.current_thread().name

    names: list[str] = []
    for i in range(3):
        runner = jobs.runner(f"gpu{i}")
        runner.finished.connect(names.append)
        runner.start(work, "gpu work", gpu=True)
    assert wait_until(qapp, lambda: len(names) == 3, 10)
    assert active[1] == 1 and all(n.startswith("wb-gpu") for n in names)


def test_cancel_stops_the_engine_between_steps(qapp, jobs) -> None:
    runner = jobs.runner("test")
    finished: list[object] = []
    cancelled: list[bool] = []
    steps_done: list[float] = []
    runner.finished.connect(finished.append)
    runner.cancelled.connect(lambda: cancelled.append(True))
    job = runner.start(lambda job: engine_like(1000, progress=lambda f, t: steps_done.append(f), cancel=job.cancel), "long")
    assert wait_until(qapp, lambda: len(steps_done) >= 3)
    runner.cancel()
    assert cancelled == [True]
    assert wait_until(qapp, lambda: job.future.done() and not jobs.running, 5)
    assert len(steps_done) < 1000 and not finished


def test_a_new_run_cancels_the_old_and_drops_its_result(qapp, jobs) -> None:
    runner = jobs.runner("test")
    results: list[str] = []
    runner.finished.connect(results.append)
    gate = threading.Event()

    def old(job) -> str:
        gate.wait(5)
        return "stale"  # ignores cancel on purpose: its result must still be dropped

    first = runner.start(old, "old")
    runner.start(lambda job: "fresh", "new")
    gate.set()
    assert wait_until(qapp, lambda: first.future.done() and not jobs.running, 5)
    qapp.processEvents()
    assert results == ["fresh"]


def test_engine_error_becomes_a_message_for_the_panel(qapp, jobs) -> None:
    runner = jobs.runner("test")
    failures: list[str] = []
    unexpected: list[str] = []
    runner.failed.connect(failures.append)
    jobs.unexpectedError.connect(lambda msg, tb: unexpected.append(msg))
    runner.start(lambda job: engine_like(5, progress=job.progress, cancel=job.cancel, fail_at=2), "filter")
    assert wait_until(qapp, lambda: failures)
    assert failures == ["the input has no points left after filtering"] and not unexpected


def test_unexpected_exception_carries_its_traceback(qapp, jobs) -> None:
    runner = jobs.runner("test")
    errors: list[tuple[str, str]] = []
    jobs.unexpectedError.connect(lambda msg, tb: errors.append((msg, tb)))
    runner.start(lambda job: engine_like(5, progress=job.progress, cancel=job.cancel, bug_at=1), "buggy")
    assert wait_until(qapp, lambda: errors)
    message, tb = errors[0]
    assert "ZeroDivisionError" in message and "engine_like" in tb and "Traceback" in tb


def test_nothing_starts_after_shutdown(qapp, jobs) -> None:
    runner = jobs.runner("late")
    jobs.shutdown()
    ran: list[int] = []
    job = runner.start(lambda job: ran.append(1), "too late")
    qapp.processEvents()
    time.sleep(0.05)
    assert job.cancel.cancelled() and not runner.busy and not jobs.running and not ran
