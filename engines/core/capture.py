"""Keep libraries quiet while a user's file is read: one sentence per problem, not three.

Open3D, NumPy, PIL and torch print their own warnings and error text (native code writes to file
descriptor 2 directly, past ``sys.stderr``) before our ``error:`` line. Around a read, this sends
fd 2 to a scratch file and records Python warnings; the reader decides what the user sees, and
may quote the captured text (``Capture.text``) when it names the real problem.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_depth = 0  # reads in progress; fd 2 is redirected while it is above zero (threads may overlap)
_saved_fd: int | None = None
_scratch = None


@dataclass
class Capture:
    """What the libraries said during one read: native stderr text and Python warning messages."""

    path: Path | None = None
    stderr: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """Everything said, one line per message, blank lines dropped."""
        lines = [line.strip() for line in self.stderr.splitlines()] + [w.strip() for w in self.warnings]
        return "\n".join(line for line in lines if line)

    def last_line(self, limit: int = 200) -> str:
        """The last thing said, cut to ``limit`` characters (a library's own reason, for a message)."""
        lines = self.text.splitlines()
        return lines[-1][:limit] if lines else ""


def say_to_terminal(text: str) -> None:
    """Write ``text`` to the real standard error even while a read in another thread has fd 2
    sent to the scratch file: a command's one ``error:`` line must never land there, nor be lost
    when the process exits with a read still in progress."""
    with _lock:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        if _saved_fd is None:
            sys.stderr.write(text)
            sys.stderr.flush()
        else:
            os.write(_saved_fd, text.encode("utf-8", "replace"))


def _redirect() -> int:
    """Point fd 2 at the shared scratch file (first reader only); the offset this reader starts at."""
    global _depth, _saved_fd, _scratch
    with _lock:
        if _depth == 0:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            _scratch = tempfile.TemporaryFile()
            _saved_fd = os.dup(2)
            os.dup2(_scratch.fileno(), 2)
        _depth += 1
        return os.lseek(2, 0, os.SEEK_END)


def _restore(start: int) -> str:
    """The text written since ``start``; fd 2 goes back when the last reader leaves."""
    global _depth, _saved_fd, _scratch
    with _lock:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        fd = _scratch.fileno()
        end = os.lseek(fd, 0, os.SEEK_END)
        text = os.pread(fd, max(0, end - start), start).decode("utf-8", "replace")
        _depth -= 1
        if _depth == 0:
            os.dup2(_saved_fd, 2)
            os.close(_saved_fd)
            _scratch.close()
            _saved_fd, _scratch = None, None
        return text


@contextlib.contextmanager
def captured(path: str | os.PathLike[str] | None = None) -> Iterator[Capture]:
    """Capture fd 2 and Python warnings for the block; the ``Capture`` is filled when it ends."""
    capture = Capture(Path(path) if path is not None else None)
    start = _redirect()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield capture
            finally:
                capture.warnings = [str(w.message) for w in caught]
    finally:
        capture.stderr = _restore(start)
