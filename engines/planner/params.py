"""The planner's names that the CLI, the panel and the engine share (import-free, so that
building the command line and the panel's widgets stays fast)."""
from __future__ import annotations

# Parts of the shipped recorded-traffic split (resources/planner/recorded_split.json), by map:
# learn from "train", choose among variants on "tune", report on "validation".
SPLITS = ("train", "tune", "validation")
