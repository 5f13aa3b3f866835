"""Library chatter during a read: Python warnings and Open3D's C++ stderr, caught rather than shown.

Open3D prints "[Open3D WARNING] Read PLY failed: ..." straight to file descriptor 2, where
Python's `sys.stderr` cannot catch it; NumPy warns about empty text files. The user should see
one `error:` sentence naming the file and the problem, not a stream of library lines, so reads
run with descriptor 2 pointed at a temporary file and the warnings recorded; what was caught
becomes part of the error when the read fails, and the log's business when it succeeds.
"""
from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

_log = logging.getLogger("engines.segmentation.pointio")
_lock = threading.RLock()  # descriptor 2 is the process's: one redirection at a time
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
    """Run a read with warnings recorded and descriptor 2 captured; log what was said."""
    out = Caught()
    with _lock, warnings.catch_warnings(record=True) as recorded, _stderr_to_file() as text:
        warnings.simplefilter("always")
        try:
            yield out
        finally:
            out.lines[:0] = _clean(text()) + [str(w.message) for w in recorded]
            for line in out.lines:
                _log.info("%s: %s", name, line)


@contextmanager
def _stderr_to_file() -> Iterator:
    """Point descriptor 2 at a temporary file for the duration; yield a function reading it back."""
    buffer = tempfile.TemporaryFile()
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no descriptor 2 (a windowed app): nothing to catch
        buffer.close()
        yield lambda: ""
        return
    os.dup2(buffer.fileno(), 2)
    restored = False

    def text() -> str:
        nonlocal restored
        if not restored:
            os.dup2(saved, 2)
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
