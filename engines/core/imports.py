"""Imports done by one worker thread at a time.

Open3D pulls in plotly, dash and pydantic, whose modules import each other. When two worker
threads import such packages at the same moment (a session opening every panel at once: the
segmentation panel reading a cloud while the planner builds its scene), Python's per-module
import locks can resolve the cycle by handing one thread a partly initialised module:
"cannot import name 'import_string' from partially initialized module
'pydantic._internal._validators'" (2 runs in 8). `serialise_imports` puts every first import
made by a worker thread behind one re-entrant lock, so the second thread waits for the first
import to finish. The GUI thread is left out: it never waits for a worker's slow torch import.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

_lock = threading.RLock()
LOCK_WAIT = 60.0  # seconds a worker waits for another's import (torch takes ~10 s on a busy machine)
_builtin_import = builtins.__import__


def import_once(name: str) -> ModuleType:
    """The module ``name``, imported under the lock the first time (later calls are a dict lookup)."""
    with _lock:
        return importlib.import_module(name)


def open3d() -> ModuleType:
    """The ``open3d`` package; every engine module takes it from here, never by a bare import."""
    return import_once("open3d")


def _loaded(name: str, fromlist: Any) -> bool:
    """Whether importing ``name`` (and its ``fromlist``) would find everything finished already."""
    module = sys.modules.get(name)
    if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
        return False
    return not fromlist or all(f == "*" or hasattr(module, f) or f"{name}.{f}" in sys.modules for f in fromlist)


def _serial_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> ModuleType:
    if threading.current_thread() is threading.main_thread():
        return _builtin_import(name, globals, locals, fromlist, level)
    absolute = name
    if level:
        try:
            absolute = importlib.util.resolve_name("." * level + name, (globals or {}).get("__package__") or "")
        except (ImportError, ValueError):
            absolute = ""
    if absolute and _loaded(absolute, fromlist):
        return _builtin_import(name, globals, locals, fromlist, level)  # the common case: no lock
    # A bounded wait: code that imports through importlib directly holds Python's module locks
    # without ours, so an unbounded wait could deadlock; after LOCK_WAIT it proceeds as Python would.
    held = _lock.acquire(timeout=LOCK_WAIT)
    try:
        return _builtin_import(name, globals, locals, fromlist, level)
    finally:
        if held:
            _lock.release()


def serialise_imports() -> None:
    """Make worker threads import one at a time (idempotent; the job manager calls it at start)."""
    if builtins.__import__ is not _serial_import:
        builtins.__import__ = _serial_import
