"""Tasks for the executor tests, in a module of their own so that a worker process imports only
this (not pytest) before it runs them."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from engines.core import EngineError


def square_or_raise(x: int) -> int:
    if x == 3:
        raise ValueError("three is refused")
    if x == 4:
        raise EngineError("four is a user's mistake")
    return x * x


def die(marker_dir: str, x: int) -> int:
    """Kills its own worker: item 1 every time, item 2 only on its first try (a marker file remembers)."""
    marker = Path(marker_dir) / f"tried-{x}"
    if x == 1 or (x == 2 and not marker.exists()):
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return 10 * x
