"""Independent tasks on local processes or on a Ray cluster: the one way every batch command
fans out its work items.

A batch (benchmark episodes, data episodes, files) maps one function over its items. The
function and its items must be picklable (module-level functions, ``functools.partial``), and
each task must depend on its item only: then any executor and any number of workers give the
same results, streamed back in item order.

A task that raises is logged with its item and traceback and comes back as a failed
``TaskResult``; the rest of the batch goes on. A worker that dies (killed, out of memory) has its
task run once more, then counted as failed. Ray is imported only when asked for.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import contextvars
import logging
import os
import re
import socket
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from .errors import Cancelled, EngineError
from .progress import NEVER_CANCELLED, CancelToken

log = logging.getLogger(__name__)

EXECUTORS: tuple[str, ...] = ("local", "ray")
POLL_S = 0.2  # how often a waiting batch looks at its cancel token
RAY_OBJECT_STORE_BYTES = 128 * 1024 * 1024  # a local Ray's object store: results are small (rows, samples)
# A local Ray shares this machine with the work it runs: on a busy machine its own node missed
# Ray's default health checks and was declared dead. Two minutes of silence, here.
PATIENT_HEALTH_CHECKS = {"health_check_period_ms": 5000, "health_check_timeout_ms": 20000, "health_check_failure_threshold": 24}
# ray.init keeps retrying, for many minutes, an address where no Ray answers: a connection first,
# given this long, turns a cluster that is down, mistyped or another server into one sentence.
REACH_TIMEOUT_S = 5.0
# A Ray head's address is its GCS, a gRPC (HTTP/2) server: it answers a client's connection preface
# with a SETTINGS frame (type 4 in the 9-byte frame header). A web server or a database does not.
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # the preface, then an empty SETTINGS
SETTINGS_FRAME = 4
_VERSIONS = re.compile(r"Ray: (\S+)\s+Python: (\S+)")
_HOST_PORT = re.compile(r"(?P<host>[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):(?P<port>[0-9]{1,5})")

_current_cancel: contextvars.ContextVar[CancelToken] = contextvars.ContextVar("executor_cancel", default=NEVER_CANCELLED)


def current_cancel() -> CancelToken:
    """The batch's cancel token when a task runs in the caller's process, else one never set:
    a task run in this process can stop mid-way; remote ones are stopped by their executor."""
    return _current_cancel.get()


def ray_address_problem(address: str) -> str | None:
    """Why ``address`` cannot name a Ray cluster (one sentence), or None when it can: "auto" or
    HOST:PORT. The CLI and the Preferences dialog check with this one rule."""
    match = _HOST_PORT.fullmatch(address)
    if address == "auto" or (match and 1 <= int(match["port"]) <= 65535):
        return None
    return f"a Ray address is 'auto' or HOST:PORT (such as 10.0.0.5:6379), not {address!r}"


@dataclass(frozen=True)
class ExecutorSpec:
    """Where a batch runs: ``local`` processes (the default) or ``ray``; ``workers`` tasks at a
    time; ``address`` of a Ray cluster ("auto" or HOST:PORT), None to start a Ray on this machine."""

    kind: str = "local"
    workers: int = 1
    address: str | None = None

    def check(self) -> None:
        if self.kind not in EXECUTORS:
            raise EngineError(f"unknown executor {self.kind!r}; choose from {', '.join(EXECUTORS)}")
        if self.workers < 1:
            raise EngineError("--workers must be at least 1")
        if self.address is not None and self.kind != "ray":
            raise EngineError("--ray-address goes with --executor ray")
        problem = None if self.address is None else ray_address_problem(self.address)
        if problem:
            raise EngineError(problem)

    def describe(self) -> str:
        """Where a batch runs, for a status line: "on this machine, 1 worker", "on Ray (auto), 4 workers"."""
        workers = f"{self.workers} worker{'' if self.workers == 1 else 's'}"
        if self.kind != "ray":
            return f"on this machine, {workers}"
        return f"on Ray ({self.address}), {workers}" if self.address else f"on a Ray started here, {workers}"


@dataclass(frozen=True)
class TaskResult:
    """One item's outcome: its value, or the error that stopped it (``crash``: not an EngineError,
    i.e. a bug or a dead worker; ``died``: its worker died on both tries)."""

    index: int
    item: Any
    value: Any = None
    error: str | None = None
    traceback: str = ""
    crash: bool = False
    died: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


def failure_count(results: Sequence[TaskResult]) -> int:
    return sum(not r.ok for r in results)


def run_tasks(
    fn: Callable[[Any], Any],
    items: Sequence[Any],
    spec: ExecutorSpec = ExecutorSpec(),
    cancel: CancelToken = NEVER_CANCELLED,
    *,
    inline: Callable[[Any], Any] | None = None,
    initializer: Callable[[], None] | None = None,
    ordered: bool = True,
) -> Iterator[TaskResult]:
    """Map ``fn`` over ``items`` on the executor ``spec`` names; yields each item's ``TaskResult``
    (in item order when ``ordered``, else as they finish). ``inline``: what runs an item when the
    batch stays in this process (one local worker), e.g. with a model already loaded here;
    ``initializer``: run once in every worker process (threads, signals)."""
    spec.check()
    if spec.kind == "ray":
        yield from RayExecutor(spec.workers, spec.address, initializer).map(fn, items, cancel, ordered=ordered)
    else:
        yield from LocalExecutor(spec.workers, initializer).map(fn, items, cancel, ordered=ordered, inline=inline)


def _call(fn: Callable[[Any], Any], item: Any) -> tuple:
    """Run one task where it lands and turn an exception into data, so that its traceback
    travels back the same way from a process or a cluster node."""
    try:
        return True, fn(item)
    except Cancelled:
        raise
    except Exception as exc:  # noqa: BLE001  (any failure of one task is reported; none stops the batch)
        text = str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}"
        return False, (text, traceback.format_exc(), not isinstance(exc, EngineError))


def _result(index: int, item: Any, outcome: tuple) -> TaskResult:
    ok, payload = outcome
    if ok:
        return TaskResult(index, item, value=payload)
    text, tb, crash = payload
    log.error("task %d (%r) failed: %s\n%s", index, item, text, tb)
    return TaskResult(index, item, error=text, traceback=tb, crash=crash)


def _died(index: int, item: Any, detail: str) -> TaskResult:
    text = f"its worker died twice ({detail})"
    log.error("task %d (%r) failed: %s", index, item, text)
    return TaskResult(index, item, error=text, crash=True, died=True)


class _Ordering:
    """Hands results on in item order (or as they come), holding early finishers back."""

    def __init__(self, ordered: bool) -> None:
        self.ordered, self.next, self.held = ordered, 0, {}

    def push(self, result: TaskResult) -> Iterator[TaskResult]:
        if not self.ordered:
            yield result
            return
        self.held[result.index] = result
        while self.next in self.held:
            yield self.held.pop(self.next)
            self.next += 1


class LocalExecutor:
    """Spawned processes on this machine (``workers`` of them), or this process for one worker."""

    def __init__(self, workers: int = 1, initializer: Callable[[], None] | None = None) -> None:
        self.workers, self.initializer = workers, initializer

    def map(
        self,
        fn: Callable[[Any], Any],
        items: Sequence[Any],
        cancel: CancelToken = NEVER_CANCELLED,
        *,
        ordered: bool = True,
        inline: Callable[[Any], Any] | None = None,
    ) -> Iterator[TaskResult]:
        if self.workers <= 1 or len(items) <= 1:
            yield from self._inline(inline or fn, items, cancel)
        else:
            yield from self._pool(fn, items, cancel, ordered)

    @staticmethod
    def _inline(fn: Callable[[Any], Any], items: Sequence[Any], cancel: CancelToken) -> Iterator[TaskResult]:
        for index, item in enumerate(items):
            cancel.raise_if_cancelled()
            token = _current_cancel.set(cancel)
            try:
                outcome = _call(fn, item)
            finally:
                _current_cancel.reset(token)
            yield _result(index, item, outcome)

    def _pool(self, fn: Callable[[Any], Any], items: Sequence[Any], cancel: CancelToken, ordered: bool) -> Iterator[TaskResult]:
        """At most ``workers`` tasks in flight. When a worker dies the pool breaks, and nothing says
        which task killed it: every task it ran goes again alone on a fresh pool, where a death is the
        task's own; a task whose worker dies under it alone twice is counted as failed."""
        order = _Ordering(ordered)
        queue = list(range(len(items)))
        queue.reverse()  # pop() takes the next item
        suspects: list[int] = []
        lone_deaths: dict[int, int] = {}
        pool = self._new_pool(len(items))
        running: dict[cf.Future, int] = {}
        try:
            while queue or suspects or running:
                if suspects and not running:
                    index = suspects.pop()
                    running[pool.submit(_call, fn, items[index])] = -1 - index  # negative: a lone try
                while queue and not suspects and len(running) < self.workers:
                    index = queue.pop()
                    running[pool.submit(_call, fn, items[index])] = index
                cancel.raise_if_cancelled()
                done, _ = cf.wait(running, timeout=POLL_S, return_when=cf.FIRST_COMPLETED)
                broken = False
                for future in done:
                    key = running.pop(future)
                    index = key if key >= 0 else -1 - key
                    try:
                        outcome = future.result()
                    except cf.process.BrokenProcessPool:
                        broken = True
                        lone_deaths[index] = lone_deaths.get(index, 0) + (key < 0)
                        if lone_deaths[index] >= 2:
                            yield from order.push(_died(index, items[index], "a local worker process exited"))
                        else:
                            suspects.append(index)
                        continue
                    yield from order.push(_result(index, items[index], outcome))
                if broken:  # the pool is unusable: the tasks it still held go again on a new one
                    suspects += [key for key in running.values() if key >= 0]
                    suspects.sort(reverse=True)
                    running.clear()
                    _terminate(pool)
                    for index in suspects:
                        log.warning("a worker died while task %d (%r) ran: running it again, alone", index, items[index])
                    pool = self._new_pool(len(items))
        finally:
            _terminate(pool)  # on cancel or error: stop the tasks under way instead of waiting for them

    def _new_pool(self, n_items: int) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(min(self.workers, n_items), mp_context=get_context("spawn"), initializer=self.initializer)


def _terminate(pool: cf.ProcessPoolExecutor) -> None:
    """Stop a pool now: kill its processes (Python 3.11's pool has no public way to) and drop the queue."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(Exception):
            process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)


class RayExecutor:
    """Ray tasks, on a Ray this process starts on this machine (``address`` None: ``workers`` CPUs,
    a small object store, no dashboard) or on a running cluster ("auto" or HOST:PORT), whose nodes
    need the same workbench installed. A task whose worker dies is run once more (Ray's
    ``max_retries=1``), then counted as failed."""

    def __init__(self, workers: int = 1, address: str | None = None, initializer: Callable[[], None] | None = None) -> None:
        self.workers, self.address, self.initializer = workers, address, initializer

    def map(
        self, fn: Callable[[Any], Any], items: Sequence[Any], cancel: CancelToken = NEVER_CANCELLED, *, ordered: bool = True
    ) -> Iterator[TaskResult]:
        ray = connect(self.address, self.workers)
        cancel.raise_if_cancelled()  # starting or joining a Ray takes a while: the user may have given up
        remote = ray.remote(num_cpus=1, max_retries=1, retry_exceptions=False)(_ray_call)
        order = _Ordering(ordered)
        queue = list(range(len(items)))
        queue.reverse()
        running: dict[Any, int] = {}
        try:
            while queue or running:
                while queue and len(running) < self.workers:
                    index = queue.pop()
                    running[remote.remote(self.initializer, fn, items[index])] = index
                cancel.raise_if_cancelled()
                done, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S)
                for ref in done:
                    index = running.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except ray.exceptions.RayError as exc:  # the worker (or its node) died on both tries
                        yield from order.push(_died(index, items[index], type(exc).__name__))
                        continue
                    yield from order.push(_result(index, items[index], outcome))
        finally:
            for ref in running:  # on cancel or error: stop the tasks under way
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)


def _ray_call(initializer: Callable[[], None] | None, fn: Callable[[Any], Any], item: Any) -> tuple:
    if initializer is not None:
        initializer()  # cheap and idempotent (threads, signals): Ray reuses its workers
    return _call(fn, item)


_connecting = threading.Lock()
_joined: tuple[str | None, int] | None = None  # what this process's Ray was started or joined for by connect


def connect(address: str | None, workers: int = 1):
    """Ray, initialised once per process: joined to the cluster at ``address``, or a Ray started
    here with ``workers`` CPUs. Asked for another cluster, or a local Ray of another size (a long-
    lived window whose preferences changed), it leaves the one it has first. Returns the ``ray`` module."""
    global _joined
    try:
        import ray
    except ImportError:
        raise EngineError("--executor ray needs the 'ray' package: pip install ray") from None
    wanted = (address, workers if address is None else 0)  # a cluster's size is its own
    with _connecting:
        if ray.is_initialized() and _joined in (None, wanted):  # None: initialised by its caller, not here
            return ray
        if address not in (None, "auto"):
            _check_reachable(address)  # before leaving the Ray this process has
        if ray.is_initialized():
            ray.shutdown()
            _joined = None
        try:
            if address is None:
                root = str(Path(__file__).resolve().parents[2])  # workers import this checkout's engines
                env = {"PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])), "OMP_NUM_THREADS": "1"}
                ray.init(
                    num_cpus=workers,
                    object_store_memory=RAY_OBJECT_STORE_BYTES,
                    include_dashboard=False,
                    runtime_env={"env_vars": env},
                    logging_level=logging.WARNING,
                    log_to_driver=False,
                    _system_config=PATIENT_HEALTH_CHECKS,
                )
            else:
                ray.init(address=address, logging_level=logging.WARNING)
        except ConnectionError as exc:
            first = str(exc).split(". ")[0].rstrip(".")  # Ray's first sentence; the rest names its CLI flags
            raise EngineError(f"cannot reach a Ray cluster at {address}: {first[:1].lower()}{first[1:]}") from None
        except RuntimeError as exc:
            versions = _VERSIONS.findall(str(exc))  # Ray's "Version mismatch": the cluster's, then this process's
            if len(versions) != 2:
                raise
            (ray_there, py_there), (ray_here, py_here) = versions
            raise EngineError(
                f"the Ray cluster at {address} runs Ray {ray_there} on Python {py_there}, this machine Ray {ray_here} "
                f"on Python {py_here}: install the same versions on both"
            ) from None
        _joined = wanted
    return ray


def _check_reachable(address: str) -> None:
    """EngineError unless a Ray head (an HTTP/2 server) answers at HOST:PORT within ``REACH_TIMEOUT_S``."""
    host, _, port = address.rpartition(":")
    try:
        conn = socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT_S)
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise EngineError(f"cannot reach a Ray cluster at {address}: {reason[:1].lower()}{reason[1:]}") from None
    with conn:
        try:
            conn.sendall(HTTP2_PREFACE)
            head = b""
            while len(head) < 9 and (chunk := conn.recv(9 - len(head))):
                head += chunk
        except OSError:  # silent past the timeout, or the connection reset
            head = b""
    if len(head) < 9 or head[3] != SETTINGS_FRAME:
        raise EngineError(
            f"{address} answers, but not as a Ray cluster: give the head node's address (port 6379 unless 'ray start --head --port' chose another)"
        )
