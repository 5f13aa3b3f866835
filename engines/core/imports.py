"""Heavy third-party packages imported by one thread at a time.

Open3D pulls in plotly, dash and pydantic, whose modules import each other. When two worker
threads import it at the same moment (the segmentation panel reading a cloud while a run
starts), Python's per-module import locks can hand one of them a partly initialised module:
"cannot import name 'import_string' from partially initialized module
'pydantic._internal._validators'" (seen in a segmentation screenshot run). Importing under one
lock makes the second thread wait for the first import to finish.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

_lock = threading.Lock()


def import_once(name: str) -> ModuleType:
    """The module ``name``, imported under the lock the first time (later calls are a dict lookup)."""
    with _lock:
        return importlib.import_module(name)


def open3d() -> ModuleType:
    """The ``open3d`` package; every engine module takes it from here, never by a bare import."""
    return import_once("open3d")
