"""Inputs are never outputs: the check every command runs on its output paths before any work.

A command that writes over the file it reads loses the user's data (a labelled cloud's ground
truth, a scenario), however the two paths are spelled: ``./a/../s.ply``, a symbolic link, or a
hard link (another name for the same inode). A device or pipe named as an output would be
replaced by a regular file by our atomic rename, so it is refused too.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from .errors import EngineError


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """True when ``a`` and ``b`` name one file: equal once resolved, or one inode (hard and symbolic links)."""
    pa, pb = Path(a), Path(b)
    try:
        if pa.resolve() == pb.resolve():
            return True
        return pa.exists() and pb.exists() and os.path.samefile(pa, pb)
    except (OSError, RuntimeError):  # a symlink loop or an unreadable folder: not provably the same
        return False


def check_special(path: str | os.PathLike[str], flag: str = "--out") -> None:
    """Refuse an existing output that is a device, pipe or socket (a folder is the caller's to judge)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # absent (the usual case) or unreachable: the write itself will say why
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise EngineError(f"cannot write {flag} {path}: it is a device or other special file, not a regular file")


def check_output(out: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]] = (), flag: str = "--out") -> Path:
    """``out`` when it is safe to write: not a special file and not one of ``inputs`` by any spelling."""
    check_special(out, flag)
    for source in inputs:
        if same_file(out, source):
            raise EngineError(f"{flag} {out} is the input {source}: writing it would destroy the input, choose another file")
    return Path(out)
