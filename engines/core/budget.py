"""Memory budgets checked before allocation: a file's header may promise any size.

A 200-byte ``.npy`` can declare a 10^12-element array and a small zip can hold one; NumPy would
try to allocate it (MemoryError, or the machine swaps). Readers ask here first, from the header
alone, and the user gets one sentence naming the size and the limit.
"""

from __future__ import annotations

import math
import os
import zipfile
from pathlib import Path
from typing import IO

import numpy as np

from .errors import EngineError


def memory_bytes() -> int:
    """Physical memory of this machine (8 GiB when the system will not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def array_limit() -> int:
    """Bytes one file's arrays may take: half the machine's memory, so the app and the work still fit."""
    return memory_bytes() // 2


def human_bytes(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"


def check_bytes(nbytes: float, what: str, limit: int | None = None) -> None:
    """EngineError when ``what`` would need more than ``limit`` bytes (default: `array_limit`)."""
    limit = array_limit() if limit is None else limit
    if nbytes > limit:
        raise EngineError(f"{what} would need {human_bytes(nbytes)} of memory, over the limit of {human_bytes(limit)}")


def _header(fh: IO[bytes]) -> tuple[tuple[int, ...], np.dtype]:
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
    else:
        shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
    return tuple(int(s) for s in shape), np.dtype(dtype)


def npy_nbytes(fh: IO[bytes]) -> int:
    """Bytes the array in an open .npy stream declares (its header only is read)."""
    shape, dtype = _header(fh)
    return math.prod(shape) * dtype.itemsize


def check_npy(path: str | os.PathLike[str], limit: int | None = None) -> None:
    """Refuse a .npy whose header promises more than ``limit`` bytes; a bad header is one sentence too."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            nbytes = npy_nbytes(fh)
    except Exception as exc:  # numpy parses the header with Python's tokenizer: a damaged one raises almost any type
        raise EngineError(f"{path.name} is corrupt or not a NumPy .npy file ({_reason(exc)})") from None
    check_bytes(nbytes, f"{path.name}", limit)


def check_npz(path: str | os.PathLike[str], limit: int | None = None) -> None:
    """Refuse an .npz whose arrays together promise more than ``limit`` bytes (headers only, no data read)."""
    path = Path(path)
    total = 0
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with archive.open(info) as member:
                    total += npy_nbytes(member)
    except Exception as exc:  # zipfile and numpy's header parser raise almost any type for damaged bytes
        raise EngineError(f"{path.name} is corrupt or not a NumPy .npz archive ({_reason(exc)})") from None
    check_bytes(total, f"{path.name}", limit)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:120]
