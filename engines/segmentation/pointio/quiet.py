"""Library chatter during a read: Python warnings and Open3D's C++ output, caught rather than shown.

Open3D prints "[Open3D WARNING] Read PCD failed: ..." through Python's `sys.stdout` (where it would
corrupt the CLI's --json record), and C++ code may write to file descriptors 1 and 2 directly. The
user should see one `error:` sentence naming the file and the problem, not a stream of library
lines, so Open3D's reads and writes run with `sys.stdout` / `sys.stderr` swapped for a buffer,
descriptors 1 and 2 pointed at a temporary file and Python's warnings recorded; what was caught
becomes part of the error when the call fails, and the log's business when it succeeds.
"""
from __future__ import annotations

import ctypes
import io
import logging
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field

from engines.core.capture import captured

_log = logging.getLogger("engines.segmentation.pointio")
_lock = threading.RLock()  # descriptor 1 is the process's: one redirection at a time
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PREFIX = re.compile(r"^\[Open3D [A-Z]+\]\s*")


@dataclass
class Caught:
    """What the libraries said during the read, one cleaned line each."""

    lines: list[str] = field(default_factory=list)

    def first(self) -> str:
        """The first thing said, for an error sentence ('' when nothing was)."""
        return self.lines[0] if self.lines else ""


@contextmanager
def caught(name: str) -> Iterator[Caught]:
    """Run a read with warnings and descriptor 2 captured (``engines.core.capture``, shared with every
    other reader), descriptor 1 and Python's streams too (Open3D prints through them); log what was said."""
    out, python, stdout_text = Caught(), io.StringIO(), ""
    capture = captured(name)
    said_err = capture.__enter__()
    try:
        with _lock, _to_file(1) as said_out, redirect_stdout(python), redirect_stderr(python):
            try:
                yield out
            finally:
                _flush_c_streams()
                stdout_text = said_out()
    finally:
        capture.__exit__(None, None, None)  # fills said_err (its text is read when descriptor 2 goes back)
        out.lines[:0] = _clean(python.getvalue() + said_err.stderr + stdout_text) + said_err.warnings
        for line in out.lines:
            _log.info("%s: %s", name, line)


def _flush_c_streams() -> None:
    """C's stdio buffers stdout into a pipe: flush it while it still points at the temporary file."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no C library to ask (Windows): its streams are unbuffered there
        pass


@contextmanager
def _to_file(fd: int) -> Iterator:
    """Point descriptor ``fd`` at a temporary file for the duration; yield a function reading it back."""
    buffer = tempfile.TemporaryFile()
    try:
        (sys.stdout if fd == 1 else sys.stderr).flush()
        saved = os.dup(fd)
    except (OSError, ValueError, AttributeError):  # no descriptor 2 (a windowed app): nothing to catch
        buffer.close()
        yield lambda: ""
        return
    os.dup2(buffer.fileno(), fd)
    restored = False

    def text() -> str:
        nonlocal restored
        if not restored:
            os.dup2(saved, fd)
            os.close(saved)
            restored = True
        buffer.seek(0)
        return buffer.read(65536).decode("utf-8", errors="replace")

    try:
        yield text
    finally:
        text()
        buffer.close()


def _clean(text: str) -> list[str]:
    lines = (_PREFIX.sub("", _ANSI.sub("", line)).strip() for line in text.splitlines())
    return [line for line in lines if line]
