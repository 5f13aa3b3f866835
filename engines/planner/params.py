"""The planner's names that the CLI, the panel and the engine share (import-free, so that
building the command line and the panel's widgets stays fast)."""

from __future__ import annotations

# Parts of the shipped recorded-traffic split (resources/planner/recorded_split.json), by map:
# learn from "train", choose among variants on "tune", report on "validation".
SPLITS = ("train", "tune", "validation")

# Every planner `planner run --planner`, the suite and the panel offer; "frenet" is CommonRoad's
# sampling-based reactive planner (commonroad-reactive-planner), the peer beside IDM and PDM-like.
PLANNERS = ("diffusion", "idm", "pdm", "frenet", "constant_velocity", "expert")
# The diffusion planner with the safety guidance terms, a name of the suite and the panel's A/B choice.
GUIDED = "diffusion+guidance"
