"""Progress and cancellation protocol shared by every engine and both front ends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .errors import Cancelled

ProgressFn = Callable[[float, str], None]


def no_progress(fraction: float, text: str) -> None:
    """A progress callback that ignores everything (tests, nested calls)."""


class CancelToken:
    """A thread-safe flag the front end sets and the engine polls between steps."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled("cancelled by the user")


NEVER_CANCELLED = CancelToken()


def throttled(progress: ProgressFn, min_interval: float = 0.05) -> ProgressFn:
    """Wrap a callback so hot loops can call it freely: at most one call per interval, plus 0 and 1."""
    last = [float("-inf")]

    def call(fraction: float, text: str) -> None:
        now = time.monotonic()
        if fraction <= 0.0 or fraction >= 1.0 or now - last[0] >= min_interval:
            last[0] = now
            progress(min(max(float(fraction), 0.0), 1.0), text)

    return call


def scaled(progress: ProgressFn, start: float, stop: float) -> ProgressFn:
    """Map a sub-task's 0..1 onto [start, stop] of the parent's progress."""

    def call(fraction: float, text: str) -> None:
        progress(start + (stop - start) * min(max(fraction, 0.0), 1.0), text)

    return call
