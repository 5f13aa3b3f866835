"""Atomic file writes: a file is either the old one, the complete new one, or absent.

Write to a temporary file in the same folder, flush it to disk, then rename over the target.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .errors import EngineError


def _prepare(path: str | os.PathLike[str]) -> Path:
    target = Path(path)
    if target.exists() and target.is_dir():
        raise EngineError(f"cannot write {target}: it is a folder")
    parent = target.parent if str(target.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EngineError(f"cannot create the folder {parent}: {exc.strerror or exc}") from exc
    return target


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path (same folder, same suffix) for libraries that write by file name.

    On success the temporary file replaces ``path``; on any exception it is removed.
    """
    target = _prepare(path)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=f".tmp{target.suffix}", dir=target.parent)
    except OSError as exc:  # a read-only or virtual folder: name the file the user asked for, not our temporary
        raise EngineError(f"cannot write {target}: {exc.strerror or exc}") from exc
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a finished file gets the usual mode
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        if not tmp.exists() or tmp.stat().st_size == 0 and not _allow_empty(target):
            raise EngineError(f"nothing was written to {target}")
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _umask() -> int:
    """The process umask, read without changing it where Linux allows (os.umask races threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _allow_empty(target: Path) -> bool:
    return target.suffix in (".txt", ".csv", ".json")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Open a temporary file for writing; it replaces ``path`` only when the block succeeds."""
    if "b" in mode:
        encoding = None
    with atomic_path(path) as tmp:
        with open(tmp, mode, encoding=encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    with atomic_write(path, "w") as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    with atomic_write(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_json(path: str | os.PathLike[str], obj: Any, indent: int | None = 2) -> Path:
    from .serial import to_jsonable

    return write_text(path, json.dumps(to_jsonable(obj), indent=indent) + "\n")
