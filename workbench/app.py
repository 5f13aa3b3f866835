"""Start the GUI: QApplication, the qasync event loop, the main window."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

T0 = time.perf_counter()


def create_app(argv: list[str] | None = None):
    """The QApplication with the saved theme; qasync is imported after PySide6 (it picks the binding)."""
    os.environ.setdefault("QT_API", "pyside6")
    from PySide6.QtWidgets import QApplication

    load_llvm_users_before_gl()
    share_gl_contexts()
    app = QApplication.instance() or QApplication(argv or sys.argv[:1])
    app.setApplicationName("Workbench")
    app.setOrganizationName("Workbench")
    return app


def load_llvm_users_before_gl() -> None:
    """Load triton's LLVM before the first OpenGL context exists.

    Mesa's software OpenGL (llvmpipe) loads its own LLVM; importing triton after that (as
    torch.compile and the FlashMask triton backend do) crashes the process in triton's library
    initialiser. Loaded in the other order both work. Costs ~0.2 s at start-up.
    """
    try:
        import triton  # noqa: F401
    except ImportError:  # triton is optional off Linux x86-64
        pass


def share_gl_contexts() -> None:
    """Let every OpenGL view share one context group (must precede the QApplication).

    pyqtgraph caches one shader program per GL item class; without sharing, a floated dock or a
    second window gets a new context where those programs do not exist.
    """
    from PySide6.QtCore import QCoreApplication, Qt

    if QCoreApplication.instance() is None:
        QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)


def install_loop(app):
    """Make a qasync loop the asyncio loop of this thread (jobs post their results through it)."""
    import qasync

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    return loop


def build_window(app, settings=None):
    from .mainwindow import MainWindow
    from .settings import Settings
    from .theme import apply_theme

    settings = settings or Settings()
    apply_theme(app, settings.preference("theme"))
    return MainWindow(settings)


def run_gui(files: list[str] | None = None, startup_probe: bool = False) -> int:
    """Open the window and run until it closes. ``startup_probe`` quits after the first paint."""
    app = create_app()
    loop = install_loop(app)
    window = build_window(app)
    window.show()
    from PySide6.QtCore import QTimer

    if startup_probe:

        def report_shown() -> None:
            print(f"shown {time.perf_counter() - T0:.3f}", flush=True)
            QTimer.singleShot(0, report_panel)

        def report_panel() -> None:
            visible = [d for d in window.docks.values() if not d.visibleRegion().isEmpty()]
            if visible and any(d.panel is None for d in visible):
                QTimer.singleShot(5, report_panel)
                return
            print(f"panel {time.perf_counter() - T0:.3f}", flush=True)
            window._close_confirmed = True
            window.close()
            app.quit()

        QTimer.singleShot(0, report_shown)
    else:
        QTimer.singleShot(0, window.start_warmup)
        for f in files or []:
            QTimer.singleShot(0, lambda f=f: window.open_path(Path(f)))

    closed = asyncio.Event()
    app.aboutToQuit.connect(closed.set)
    with loop:
        loop.run_until_complete(closed.wait())
    return 0
