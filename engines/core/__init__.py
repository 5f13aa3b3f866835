"""Qt-free protocol shared by every engine: progress, cancellation, errors, device, files, JSON.

Importing this package must stay cheap: no torch, no open3d at import time.
"""

from .atomic import atomic_path, atomic_write, write_bytes, write_json, write_text
from .device import (
    configure_threads,
    default_threads,
    describe_device,
    device,
    device_preference,
    pool_worker_setup,
    set_device_preference,
)
from .errors import Cancelled, EngineError
from .progress import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress, scaled, throttled
from .resources import resource_path
from .seeding import check_seed, seed_everything
from .serial import from_dict, json_loads, to_jsonable

METHODS: tuple[str, ...] = ("segmentation", "planner", "attention", "sketcher", "topomap")

__all__ = [
    "METHODS",
    "CancelToken",
    "Cancelled",
    "EngineError",
    "NEVER_CANCELLED",
    "ProgressFn",
    "atomic_path",
    "atomic_write",
    "configure_threads",
    "default_threads",
    "describe_device",
    "device",
    "device_preference",
    "from_dict",
    "json_loads",
    "no_progress",
    "pool_worker_setup",
    "resource_path",
    "scaled",
    "check_seed",
    "seed_everything",
    "set_device_preference",
    "throttled",
    "to_jsonable",
    "write_bytes",
    "write_json",
    "write_text",
]
