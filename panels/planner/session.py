"""What a session file keeps of the planner panel, read by ``engines.core.serial.from_dict``.

Qt-free. A setting the session lacks takes its default, as it always has (a source, file, guidance
term or layer it does not name stays as the panel has it); one it has must pass its check
(``panels.session_checks``), or nothing of the session is applied.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engines.core import from_dict
from engines.planner.guidance_config import TERMS
from engines.planner.params import GUIDED, PLANNERS
from panels.session_checks import choice, flag, mapping, named, number, optional, setting, shown, text, whole

# The panel's names and ranges; its widgets take them too (the engine accepts up to 64 samples and 50 steps).
COMPARE = ("none", "diffusion", GUIDED, *(p for p in PLANNERS if p != "diffusion"))
SEED_RANGE = (0, 1_000_000)
SAMPLES_RANGE = (1, 32)
STEPS_RANGE = (1, 30)
WEIGHT_RANGE = (0, 10)
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)
LAYERS = {
    "lanes": "Lanes", "boundaries": "Lane boundaries", "drivable": "Drivable area", "route": "Route",
    "agents": "Agents (heading, ids)", "history": "Ego history", "samples": "Sampled plans", "chosen": "Chosen plan",
    "predictions": "Neighbour predictions", "expert": "Expert trajectory", "highlights": "TTC / collision highlights",
    "compare": "Planner B (A/B)", "denoise": "Denoising (x_t, x0, guidance)",
}
CAMERAS = ("Follow ego, north up", "Follow ego, heading up", "Free pan / zoom")


def _term(term: str, value: Any) -> tuple[bool, float]:
    """A guidance term's ``[on, weight]`` pair, as the session writes it."""
    if not (isinstance(value, list) and len(value) == 2):
        raise ValueError(f"guidance {term!r} must be [on, weight], not {shown(value)}")
    return flag(value[0], f"guidance {term!r} on"), number(value[1], f"guidance {term!r} weight", *WEIGHT_RANGE)


def _guidance(value: Any, key: str) -> dict[str, tuple[bool, float]]:
    return {term: _term(term, v) for term, v in named(value, key, TERMS).items()}


def _layers(value: Any, key: str) -> dict[str, bool]:
    return {layer: flag(v, f"layer {layer!r}") for layer, v in named(value, key, LAYERS).items()}


@dataclass(frozen=True)
class PlannerSession:
    source: str | None = setting(optional(text), "source")  # the source combo's text
    file: str | None = setting(optional(text), "file")  # an opened scenario file, added to the sources
    seed: int = setting(whole, "seed", *SEED_RANGE, default=0)
    reactive: bool = setting(flag, "reactive", default=True)
    planner: str = setting(choice, "planner", PLANNERS, default="diffusion")
    samples: int = setting(whole, "samples", *SAMPLES_RANGE, default=8)
    steps: int = setting(whole, "steps", *STEPS_RANGE, default=10)
    compare: str = setting(choice, "compare", COMPARE, default="none")
    guidance: dict[str, tuple[bool, float]] | None = setting(optional(_guidance), "guidance")  # term: (on, weight)
    layers: dict[str, bool] | None = setting(optional(_layers), "layers")  # layer: shown
    camera: int = setting(whole, "camera", 0, len(CAMERAS) - 1, default=0)
    speed: int = setting(whole, "speed", 0, len(SPEEDS) - 1, default=SPEEDS.index(1.0))
    loop: bool = setting(flag, "loop", default=False)
    frame: int = 0  # the frame shown when saved, for the file's reader: not restored (a session keeps no episode)


def read_session(state: Any) -> PlannerSession:
    """A session's planner settings, every one checked before any is applied; ValueError or
    EngineError names the first bad one."""
    return from_dict(PlannerSession, mapping(state, "they"))
