"""Run many small fused-kernel calls in parallel without one OpenMP barrier per call.

Each call of the fused CPU kernel is an OpenMP parallel region that ends in a barrier. On a busy
machine a barrier waits for a descheduled sibling thread, so hundreds of small calls lose
milliseconds each. Instead, worker threads that each run torch single-threaded pull tiles from a
shared queue (the ops release the GIL): a stalled worker only delays its own tile.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

from engines.core import NEVER_CANCELLED, CancelToken

T = TypeVar("T")

_lock = threading.Lock()
_DONE = object()  # end of the shared queue
_pool: ThreadPoolExecutor | None = None
_size = 0
# The token of the job this call belongs to: the attention API has Paddle's signature, with no
# place for one, and one call at N = 128K runs for minutes.
_cancel: contextvars.ContextVar[CancelToken] = contextvars.ContextVar("flashmask_cancel", default=NEVER_CANCELLED)


@contextlib.contextmanager
def cancel_scope(token: CancelToken) -> Iterator[None]:
    """Calls made inside stop between their tasks once ``token`` is cancelled (raising Cancelled)."""
    reset = _cancel.set(token)
    try:
        yield
    finally:
        _cancel.reset(reset)


def current_cancel() -> CancelToken:
    return _cancel.get()


def _single_threaded(ready: threading.Barrier) -> None:
    torch.get_num_threads()  # run ATen's per-thread lazy init first, or it would undo the next line
    torch.set_num_threads(1)
    ready.wait()


def _workers(n: int) -> ThreadPoolExecutor:
    """A pool of ``n`` single-threaded torch workers (rebuilt when ``n`` changes)."""
    global _pool, _size
    with _lock:
        if _pool is None or _size != n:
            if _pool is not None:
                _pool.shutdown(wait=True)
            caller = torch.get_num_threads()
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="flashmask")
            ready = threading.Barrier(n + 1)
            for _ in range(n):
                _pool.submit(_single_threaded, ready)
            ready.wait()
            torch.set_num_threads(caller)  # set_num_threads also stores a process-wide default: restore it
            _size = n
        return _pool


def worker_count() -> int:
    """Workers to use: FLASHMASK_THREADS when set, else torch's intra-op thread count."""
    return int(os.environ.get("FLASHMASK_THREADS", 0)) or torch.get_num_threads()


def run_items(fn: Callable[[T], None], items: Sequence[T]) -> None:
    """Call ``fn`` on every item, spread over ``worker_count()`` workers, in the given order.

    Each worker drains one shared iterator: submitting one future per item would keep the caller
    busy in Python (holding the GIL) while the first workers want to start. Between items the
    workers look at the job's cancel token (``cancel_scope``) and stop; the caller then raises
    Cancelled."""
    cancel = current_cancel()
    n = worker_count()
    if n <= 1 or len(items) <= 1:
        for item in items:
            cancel.raise_if_cancelled()
            fn(item)
        return
    pending = iter(items)
    lock = threading.Lock()

    def drain() -> None:
        while not cancel.cancelled():
            with lock:
                item = next(pending, _DONE)
            if item is _DONE:
                return
            fn(item)  # type: ignore[arg-type]

    for future in [_workers(n).submit(drain) for _ in range(min(n, len(items)))]:
        future.result()
    cancel.raise_if_cancelled()
