"""Guard against the Qt binding leaking references to None (PySide6 6.12.0 on Python 3.11 did:
the app aborted with 'none_dealloc' after a few thousand repaints)."""
from __future__ import annotations

import sys

from PySide6.QtWidgets import QLabel


def test_void_qt_calls_do_not_leak_references_to_none(qapp) -> None:
    label = QLabel("x")
    for _ in range(10):  # warm up caches
        label.update()
    before = sys.getrefcount(None)
    for _ in range(2000):
        label.update()
        label.repaint()
    assert abs(sys.getrefcount(None) - before) < 50
