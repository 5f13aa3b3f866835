"""Background jobs: engine calls run off the UI thread through the qasync loop.

One `JobRunner` per panel: a new run cancels the old one and the old one's late results are
dropped. CPU work shares a small thread pool; GPU work goes through one single-worker executor so
two panels never fight over the device. Progress crosses back with ``call_soon_threadsafe``.

Torch's threads are set here, once, before the first job's work (``JobManager.threads``, the
preference): the one place the window does it, so no panel or engine call has to.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Signal

from engines.core import Cancelled, CancelToken, EngineError, configure_threads
from engines.core.imports import serialise_imports

log = logging.getLogger("workbench.jobs")

_ids = itertools.count(1)


@dataclass
class Job:
    """What the work function receives: report progress, stream partial results, poll cancel."""

    id: int
    label: str
    cancel: CancelToken
    progress: Callable[[float, str], None]
    partial: Callable[[Any], None]
    gpu: bool = False
    started: float = field(default_factory=time.monotonic)
    future: concurrent.futures.Future | None = None


class JobManager(QObject):
    """Owns the executors and the list of running jobs (the status-bar activity list reads it)."""

    jobAdded = Signal(object, object)  # Job, JobRunner
    jobProgress = Signal(int, float, str)
    jobRemoved = Signal(int)
    unexpectedError = Signal(str, str)  # message, traceback text

    def __init__(self, parent: QObject | None = None, cpu_workers: int = 3, threads: int | None = None) -> None:
        super().__init__(parent)
        serialise_imports()  # panels' jobs start together when a session opens: one first import at a time
        self.threads = threads  # torch's threads for every job; None: WORKBENCH_THREADS, else all cores but one
        self._cpu = concurrent.futures.ThreadPoolExecutor(max_workers=cpu_workers, thread_name_prefix="wb-cpu")
        self._gpu = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="wb-gpu")
        self.running: dict[int, Job] = {}
        self.runners: list[JobRunner] = []
        self.closed = False  # after shutdown nothing new starts (a panel may still be built as the window goes)

    def executor(self, gpu: bool) -> concurrent.futures.Executor:
        return self._gpu if gpu else self._cpu

    def runner(self, name: str) -> JobRunner:
        runner = JobRunner(self, name, parent=self)
        self.runners.append(runner)
        return runner

    def cancel_all(self) -> None:
        for runner in self.runners:
            runner.cancel()

    def wait_all(self, timeout: float) -> bool:
        """Wait for worker threads to stop (after cancel_all); True when all did in time."""
        futures = [job.future for job in self.running.values() if job.future is not None]
        if not futures:
            return True
        done, not_done = concurrent.futures.wait(futures, timeout=timeout)
        return not not_done

    def shutdown(self) -> None:
        self.closed = True
        self.cancel_all()
        self._cpu.shutdown(wait=False, cancel_futures=True)
        self._gpu.shutdown(wait=False, cancel_futures=True)


class JobRunner(QObject):
    """One panel's job slot. Signals fire on the UI thread, only for the current job."""

    started = Signal(int, str)
    progress = Signal(float, str)
    partial = Signal(object)
    finished = Signal(object)
    failed = Signal(str)  # an EngineError's sentence, for the panel
    cancelled = Signal()
    errored = Signal(str, str)  # unexpected exception: message and traceback (the log dock shows it)
    done = Signal()  # after finished / failed / cancelled / errored, whichever happened

    def __init__(self, manager: JobManager, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.manager = manager
        self.name = name
        self.current: Job | None = None

    @property
    def busy(self) -> bool:
        return self.current is not None

    def start(self, work: Callable[[Job], Any], label: str, *, gpu: bool = False) -> Job:
        """Run ``work(job)`` in the background, cancelling whatever this runner was doing."""
        self.cancel()
        loop = asyncio.get_event_loop()
        cancel = CancelToken()
        job_id = next(_ids)
        last_emit = [0.0]

        def progress(fraction: float, text: str = "") -> None:
            now = time.monotonic()
            if cancel.cancelled() or (now - last_emit[0] < 0.03 and 0.0 < fraction < 1.0):
                return
            last_emit[0] = now
            loop.call_soon_threadsafe(self._on_progress, job_id, float(fraction), str(text))

        def partial(obj: Any) -> None:
            if not cancel.cancelled():
                loop.call_soon_threadsafe(self._on_partial, job_id, obj)

        job = Job(job_id, label, cancel, progress, partial, gpu)
        if self.manager.closed:
            cancel.cancel()
            return job
        self.current = job
        # What loop.run_in_executor does, keeping the concurrent future for blocking waits at exit.
        job.future = self.manager.executor(gpu).submit(self._call, work, job, self.manager.threads)
        asyncio.wrap_future(job.future, loop=loop).add_done_callback(lambda f, j=job: self._on_done(j, f))
        self.manager.running[job_id] = job
        self.manager.jobAdded.emit(job, self)
        self.started.emit(job_id, label)
        return job

    @staticmethod
    def _call(work: Callable[[Job], Any], job: Job, threads: int | None) -> Any:
        job.cancel.raise_if_cancelled()
        configure_threads(threads)  # the first job sets them (a bad WORKBENCH_THREADS fails it); later ones only read
        return work(job)

    def cancel(self) -> None:
        """Ask the current job to stop at its next check; its results will be dropped."""
        job = self.current
        if job is None:
            return
        job.cancel.cancel()
        self.current = None
        self.cancelled.emit()
        self.done.emit()

    def _on_progress(self, job_id: int, fraction: float, text: str) -> None:
        self.manager.jobProgress.emit(job_id, fraction, text)
        if self.current is not None and self.current.id == job_id:
            self.progress.emit(fraction, text)

    def _on_partial(self, job_id: int, obj: Any) -> None:
        if self.current is not None and self.current.id == job_id:
            self.partial.emit(obj)

    def _on_done(self, job: Job, future: asyncio.Future) -> None:
        self.manager.running.pop(job.id, None)
        self.manager.jobRemoved.emit(job.id)
        is_current = self.current is not None and self.current.id == job.id
        if future.cancelled():
            exc: BaseException | None = Cancelled("cancelled")
        else:
            exc = future.exception()
        tb = ""
        if exc is not None and not isinstance(exc, (Cancelled, EngineError)):
            # A bug: it always reaches the log, even when the job was superseded.
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            log.error("job %r failed: %s: %s\n%s", job.label, type(exc).__name__, exc, tb)
            self.manager.unexpectedError.emit(f"{job.label}: {type(exc).__name__}: {exc}", tb)
        if not is_current:
            return  # stale: superseded or cancelled; its result is dropped
        self.current = None
        if exc is None:
            self.finished.emit(future.result())
        elif isinstance(exc, Cancelled):
            self.cancelled.emit()
        elif isinstance(exc, EngineError):
            self.failed.emit(str(exc))
        else:
            self.errored.emit(f"{type(exc).__name__}: {exc}", tb)
        self.done.emit()
