"""Where shipped checkpoints, sample data and icons live (``resources/`` at the project root)."""

from __future__ import annotations

import os
from pathlib import Path

RESOURCES = Path(os.environ.get("WORKBENCH_RESOURCES", Path(__file__).resolve().parents[2] / "resources"))


def resource_path(*parts: str) -> Path:
    """Path of a shipped resource; it is not checked for existence."""
    return RESOURCES.joinpath(*parts)
