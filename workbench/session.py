"""Session files (``*.wbsession.json``): every panel's parameters and inputs, in one JSON object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engines.core import EngineError, write_json

from . import __version__

SESSION_SUFFIX = ".wbsession.json"
FORMAT = "workbench-session"
FORMAT_VERSION = 1
MAX_SESSION_BYTES = 64 * 1024 * 1024


def save_session(path: Path, panels: dict[str, dict[str, Any]], extra: dict[str, Any] | None = None) -> Path:
    if not path.name.endswith(SESSION_SUFFIX):
        path = path.with_name(path.name.removesuffix(".json") + SESSION_SUFFIX)
    doc = {"format": FORMAT, "version": FORMAT_VERSION, "workbench": __version__, "panels": panels, **(extra or {})}
    return write_json(path, doc)


def load_session(path: Path) -> dict[str, dict[str, Any]]:
    """Read a session file and return its panels' states; bad files raise one clear EngineError."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise EngineError(f"cannot open {path.name}: {exc.strerror or exc}") from exc
    if size > MAX_SESSION_BYTES:
        raise EngineError(f"{path.name} is {size // 2**20} MB, too large for a session file")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise EngineError(f"{path.name} is not a text file, so not a session file") from exc
    except json.JSONDecodeError as exc:
        raise EngineError(f"{path.name} is not valid JSON (line {exc.lineno}, column {exc.colno})") from exc
    except RecursionError:  # lists nested thousands deep: no session file looks like that
        raise EngineError(f"{path.name} is not a Workbench session file") from None
    version = doc.get("version", 0) if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or isinstance(version, bool) or not isinstance(version, int):
        raise EngineError(f"{path.name} is not a Workbench session file")
    if version > FORMAT_VERSION:
        raise EngineError(f"{path.name} was written by a newer Workbench (session format {doc.get('version')})")
    panels = doc.get("panels", {})
    if not isinstance(panels, dict) or not all(isinstance(v, dict) for v in panels.values()):
        raise EngineError(f"{path.name} has a malformed 'panels' section")
    return panels
