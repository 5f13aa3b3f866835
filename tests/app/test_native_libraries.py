"""Guards against native-library traps the app fell into once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from PySide6.QtWidgets import QLabel

ROOT = Path(__file__).resolve().parents[2]


def test_void_qt_calls_do_not_leak_references_to_none(qapp) -> None:
    """PySide6 6.12.0 on Python 3.11 dropped a reference to None per void call and aborted."""
    label = QLabel("x")
    for _ in range(10):  # warm up caches
        label.update()
    before = sys.getrefcount(None)
    for _ in range(2000):
        label.update()
        label.repaint()
    assert abs(sys.getrefcount(None) - before) < 50


def test_triton_loads_after_an_opengl_view_was_shown() -> None:
    """Mesa's llvmpipe and triton both carry LLVM: triton imported after a GL context crashed."""
    code = (
        "from workbench.display import ensure_display\n"
        "ensure_display(need_gl=True)\n"
        "from workbench.app import create_app\n"
        "app = create_app()\n"
        "from PySide6.QtOpenGLWidgets import QOpenGLWidget\n"
        "w = QOpenGLWidget(); w.resize(64, 64); w.show()\n"
        "for _ in range(20): app.processEvents()\n"
        "import torch._dynamo  # pulls in triton, as torch.compile does\n"
        "print('alive')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "alive" in out.stdout, out.stderr[-2000:]
