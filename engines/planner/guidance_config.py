"""Which guidance terms exist and how they are switched on (torch-free, so the panel can import it)."""
from __future__ import annotations

from dataclasses import dataclass, field

from engines.core import EngineError

TERMS = ("collision", "drivable", "speed", "comfort")
DEFAULT_WEIGHTS = {"collision": 1.0, "drivable": 1.0, "speed": 0.05, "comfort": 0.02}
SAFETY_TERMS = ("collision", "drivable")  # what "diffusion+guidance" means everywhere (suite, panel); speed and comfort are preferences


@dataclass(frozen=True)
class GuidanceConfig:
    weights: dict[str, float] = field(default_factory=dict)  # term -> weight (absent or 0 = off)
    target_speed: float | None = None  # m/s; None = the lane's speed limit
    t_max: float = 0.1  # guide at diffusion times below this, as the reference code does (the x0 estimate is meaningful there)

    @property
    def active(self) -> bool:
        return any(w > 0 for w in self.weights.values())

    @classmethod
    def parse(cls, text: str | None, weights: dict[str, float] | None = None, target_speed: float | None = None) -> "GuidanceConfig":
        """'collision,drivable' -> those terms at their default (or given) weights."""
        names = [n.strip() for n in (text or "").split(",") if n.strip()]
        unknown = [n for n in names if n not in TERMS]
        if unknown:
            raise EngineError(f"unknown guidance term(s) {', '.join(unknown)}; choose from {', '.join(TERMS)}")
        return cls({n: float((weights or {}).get(n, DEFAULT_WEIGHTS[n])) for n in names}, target_speed)
