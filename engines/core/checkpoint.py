"""The one way a checkpoint is read: tensors and plain containers only, never code.

A ``.pt`` file is a pickle, and a pickle can name any Python callable to run while it loads.
Checkpoints are files people share, so every engine reads them here with torch's
``weights_only`` unpickler, which refuses every global outside tensors, numbers, strings and
containers. The project's own checkpoints hold nothing else (no allow-list is needed); a file
that asks for more is refused with one sentence before anything in it runs.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import EngineError
from .resources import RESOURCES

_CODE_SIGNS = ("Unsupported global", "can still be loaded")  # torch's words for a pickle naming a callable
CHECKPOINT_LIMIT = 4 << 30  # bytes: far above any checkpoint we write, below what would exhaust memory on load


def sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in chunks (shipped checkpoints are listed with it in `workbench info`)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def shipped_checkpoints() -> dict[str, str]:
    """``method/file -> SHA-256`` of every checkpoint shipped in resources/ (for `info` and the model cards)."""
    return {str(p.relative_to(RESOURCES)): sha256(p) for p in sorted(RESOURCES.glob("*/*.pt"))}


def read_checkpoint(path: str | Path, what: str, *, keys: Iterable[str] = (), fmt: str | None = None, version: int | None = None) -> dict[str, Any]:
    """The dictionary saved in ``path``; any other content is an EngineError naming ``what`` it should be.

    ``keys`` must all be present. ``fmt`` is checked against the file's "format" field when the file
    has one (older files from before the field are told apart by their keys); ``version``, when given,
    must match the file's "version" field exactly.
    """
    from .capture import captured

    path = Path(path)
    if not path.exists():
        raise EngineError(f"{path}: no such {what}")
    if not path.is_file():
        raise EngineError(f"{path} is not a {what}: it is not a regular file")
    size = path.stat().st_size
    if size > CHECKPOINT_LIMIT:
        raise EngineError(f"{path.name} is {size / 2**30:.1f} GiB, over the {CHECKPOINT_LIMIT >> 30} GiB limit for a {what}")
    import torch

    try:
        with captured(path):
            payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if any(sign in str(exc) for sign in _CODE_SIGNS):
            raise EngineError(f"{path.name} is not a {what}: it asks to run code while loading, which is refused") from None
        raise EngineError(f"{path.name} is not a {what}: it cannot be read (it may be truncated or corrupt)") from None
    except EngineError:
        raise
    except Exception:  # torch raises almost any type for a damaged archive
        raise EngineError(f"{path.name} is not a {what}: it cannot be read (it may be truncated or corrupt)") from None
    if not isinstance(payload, dict):
        raise EngineError(f"{path.name} is not a {what}: it holds a {type(payload).__name__}, not a checkpoint's dictionary")
    found = payload.get("format")
    if fmt is not None and found is not None and found != fmt:
        raise EngineError(f"{path.name} is not a {what}: its format is {str(found)[:60]!r}, expected {fmt!r}")
    if version is not None and payload.get("version") != version:
        raise EngineError(f"{path.name} is a {what} of version {str(payload.get('version'))[:20]}, this program reads version {version}")
    missing = [k for k in keys if k not in payload]
    if missing:
        raise EngineError(f"{path.name} is not a {what}: it has no {missing[0]!r} entry")
    return payload
