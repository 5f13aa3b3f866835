"""The planner replay panel (Qt only; the engine computes everything it shows)."""
from __future__ import annotations

TITLE = "Planner replay (Diffusion Planner)"
# Scenario or episode JSON (session files, *.wbsession.json, are routed by the shell first) and CommonRoad XML.
FILE_SUFFIXES = (".json", ".xml")


def create_panel(ctx):
    from .panel import PlannerPanel

    return PlannerPanel(ctx)
