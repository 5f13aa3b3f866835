"""Find a screen to draw on: the user's, a private Xvfb (OpenGL works there), or offscreen."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess


def ensure_display(need_gl: bool = True) -> str:
    """Make sure Qt can create windows; returns what was chosen ("x11", "xvfb" or "offscreen").

    Offscreen cannot create OpenGL contexts, so when GL is needed and no display is set we start
    our own Xvfb (stopped at exit).
    """
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform == "offscreen" or (platform and platform != "xcb"):
        return platform
    if os.environ.get("DISPLAY"):
        return "x11"
    xvfb = shutil.which("Xvfb")
    if xvfb and need_gl:
        read_fd, write_fd = os.pipe()
        proc = subprocess.Popen(
            [xvfb, "-displayfd", str(write_fd), "-screen", "0", "1920x1200x24", "-nolisten", "tcp"],
            pass_fds=(write_fd,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write_fd)
        with os.fdopen(read_fd) as fh:
            number = fh.readline().strip()
        if number:
            os.environ["DISPLAY"] = f":{number}"
            os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
            atexit.register(_stop, proc)
            return "xvfb"
        _stop(proc)
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    return "offscreen"


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
