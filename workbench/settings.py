"""Persistent settings (QSettings, INI file) with a layout version, recent files and preferences.

Tests point ``WORKBENCH_CONFIG_DIR`` at a temporary folder so each one starts clean.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, QStandardPaths

from engines.core.executor import ExecutorSpec

# Bump when docks are added, renamed or re-arranged: a saved state from another version is ignored.
LAYOUT_VERSION = 1
MAX_RECENT = 10

# executor, workers, ray_address: where the panels' batch runs go, named as the CLI's flags (--executor ...)
PREFERENCE_DEFAULTS: dict[str, Any] = {"device": "auto", "threads": 0, "theme": "light", "executor": "local", "workers": 1, "ray_address": ""}


def config_dir() -> Path:
    env = os.environ.get("WORKBENCH_CONFIG_DIR")
    if env:
        return Path(env)
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.GenericConfigLocation)
    return Path(base or Path.home() / ".config") / "workbench"


class Settings:
    """Typed access to the handful of settings the shell keeps."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or config_dir() / "workbench.ini"
        self.q = QSettings(str(self.path), QSettings.Format.IniFormat)

    # Window layout --------------------------------------------------------------------------
    def save_layout(self, geometry: bytes, state: bytes) -> None:
        self.q.setValue("window/layout_version", LAYOUT_VERSION)
        self.q.setValue("window/geometry", geometry)
        self.q.setValue("window/state", state)
        self.q.sync()

    def layout(self) -> tuple[bytes, bytes] | None:
        """The saved geometry and dock state, or None when absent or from another version."""
        if int(self.q.value("window/layout_version", -1)) != LAYOUT_VERSION:
            return None
        geometry, state = self.q.value("window/geometry"), self.q.value("window/state")
        if geometry is None or state is None:
            return None
        return bytes(geometry), bytes(state)

    def clear_layout(self) -> None:
        for key in ("window/layout_version", "window/geometry", "window/state"):
            self.q.remove(key)

    # Recent files and folders ---------------------------------------------------------------
    def recent_files(self) -> list[str]:
        value = self.q.value("recent/files", [])
        files = [value] if isinstance(value, str) else list(value or [])
        return [f for f in files if f]

    def add_recent(self, path: str) -> None:
        path = str(Path(path).resolve())
        files = [path] + [f for f in self.recent_files() if f != path]
        self.q.setValue("recent/files", files[:MAX_RECENT])
        self.q.setValue("dirs/last", str(Path(path).parent))

    def clear_recent(self) -> None:
        self.q.remove("recent/files")

    def last_dir(self) -> str:
        return str(self.q.value("dirs/last", str(Path.home())))

    def data_folder(self, name: str) -> Path:
        """A folder of the app's own next to this settings file, for files a panel makes (trained runs)."""
        return self.path.parent / name

    # Preferences ----------------------------------------------------------------------------
    def preference(self, key: str) -> Any:
        default = PREFERENCE_DEFAULTS[key]
        value = self.q.value(f"prefs/{key}", default)
        return type(default)(value) if value is not None else default

    def set_preference(self, key: str, value: Any) -> None:
        if key not in PREFERENCE_DEFAULTS:
            raise KeyError(key)
        self.q.setValue(f"prefs/{key}", value)

    def executor_spec(self) -> ExecutorSpec:
        """Where a panel's batch run goes, read at each run so that a changed preference applies to
        the next one (an empty address: a Ray started here; the address is kept, unused, for local runs)."""
        kind = self.preference("executor")
        address = self.preference("ray_address").strip() if kind == "ray" else ""
        return ExecutorSpec(kind, self.preference("workers"), address or None)

    # Per-panel values (panels keep small UI choices here, under their method name) -----------
    def panel_value(self, panel: str, key: str, default: Any = None) -> Any:
        return self.q.value(f"{panel}/{key}", default)

    def set_panel_value(self, panel: str, key: str, value: Any) -> None:
        self.q.setValue(f"{panel}/{key}", value)
