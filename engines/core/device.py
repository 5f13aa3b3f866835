"""Device and thread choice, kept in one place so the GUI preferences and the CLI agree.

torch is imported lazily: importing this module must stay cheap (start-up path).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from .errors import EngineError

_lock = threading.Lock()
_preference = os.environ.get("WORKBENCH_DEVICE", "auto")  # auto | cpu | cuda
_threads_applied = False


def set_device_preference(choice: str) -> None:
    """Set the device preference for later ``device()`` calls: auto, cpu or cuda."""
    global _preference
    if choice not in ("auto", "cpu", "cuda"):
        raise ValueError(f"unknown device preference {choice!r}")
    _preference = choice


def device_preference() -> str:
    return _preference


def device() -> Any:
    """The torch device to compute on: CUDA when wanted and visible, otherwise the CPU."""
    import torch

    if _preference in ("auto", "cuda") and torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


def default_threads() -> int:
    """Leave one core to the UI thread, but never go below one."""
    return max(1, (os.cpu_count() or 2) - 1)


def max_threads() -> int:
    """The most threads a setting may ask for: OpenMP starts every one of them, and an absurd count
    (10^9) crashed the process outright; 4 per core leaves room to oversubscribe on purpose."""
    return max(64, 4 * (os.cpu_count() or 1))


def check_threads(n: int, source: str = "the thread count") -> int:
    """``n`` when it is a usable thread count; one sentence naming ``source`` and the limit otherwise."""
    if not 1 <= n <= max_threads():
        raise EngineError(f"{source} must be a whole number from 1 to {max_threads()} (got {n})")
    return n


def env_threads() -> int | None:
    """The thread count WORKBENCH_THREADS asks for, None when unset; a typo there is the user's
    to fix, so it is one clear EngineError rather than a ValueError deep in the first torch job."""
    value = os.environ.get("WORKBENCH_THREADS", "")
    if not value.strip():
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise EngineError(f"WORKBENCH_THREADS must be a whole number of at least 1 (got {value!r})")
    return check_threads(n, "WORKBENCH_THREADS")


def configure_threads(threads: int | None = None) -> int:
    """Set torch's intra-op threads once, before any torch work; later calls only report."""
    global _threads_applied
    if threads:
        check_threads(threads, "--threads")
    import torch

    with _lock:
        if not _threads_applied:
            n = threads or env_threads() or default_threads()
            torch.set_num_threads(min(n, max_threads()))
            _threads_applied = True
        return torch.get_num_threads()


def pool_worker_setup() -> None:
    """Initializer of the processes that run episodes side by side: the pool already fills the
    cores, so one torch thread each (two threads each ran 8x slower here, waiting on each other);
    Ctrl+C belongs to the parent, which cancels and then stops the pool."""
    import signal

    import torch

    torch.set_num_threads(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def describe_device() -> dict[str, Any]:
    """Versions and device facts for `workbench info` and the About dialog."""
    import torch

    dev = device()
    info: dict[str, Any] = {
        "torch": torch.__version__,
        "device": str(dev),
        "device_preference": _preference,
        "cuda_available": bool(torch.cuda.is_available()),
        "torch_threads": torch.get_num_threads(),
    }
    if dev.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    return info
