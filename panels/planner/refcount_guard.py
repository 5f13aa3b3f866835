"""Work-around for a PySide6 6.12 bug on Python < 3.12 (reported to the shell's owner).

PySide6/shiboken 6.12 wheels return None (and, from some methods, True/False) from wrapped C++
calls without taking a reference, as if those singletons were immortal, which they are only from
Python 3.12 on. On 3.11 every such call lowers their reference count by one: after a few thousand
Qt calls (a replay redraws hundreds per second) Python aborts with "deallocating None". Giving the
singletons a huge reference count once makes them immortal in practice, as Python 3.12 does.
"""
from __future__ import annotations

import ctypes
import sys

_BOOST = 1 << 40
_done = False


def make_singletons_immortal() -> None:
    global _done
    if _done or sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return
    for obj in (None, True, False):
        ctypes.c_ssize_t.from_address(id(obj)).value += _BOOST
    _done = True
