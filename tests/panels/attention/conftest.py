"""Work around a PySide6 6.12.0 refcount bug on Python 3.11 (reported to the lead; not ours).

Every call of a Qt method returning void (``update()``, ``repaint()``, ``processEvents()``...)
drops one reference to ``None`` (and some to True/False) that it never took: shiboken 6.12 treats
them as immortal, which they are only from Python 3.12 on. A few thousand calls bring None's
count to zero and the interpreter aborts ("none_dealloc"). Until the shell pins a fixed PySide6
or moves to Python 3.12, give the three singletons the effectively-infinite count they have in
3.12, so the GUI tests measure our panel rather than that bug.
"""
from __future__ import annotations

import ctypes
import sys

if sys.version_info < (3, 12):
    for singleton in (None, True, False):
        ctypes.c_ssize_t.from_address(id(singleton)).value += 1 << 40
