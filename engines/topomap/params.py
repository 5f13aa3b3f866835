"""Parameters of a topomap training run and of the method comparison (frozen, JSON-ready).

Each parameter object checks itself when built (``__post_init__``), so an impossible one never
exists: the CLI, the panel and run files reject it with the same one-sentence error before any
torch work starts. The names (methods, data sets, map kinds) are the panel's and the CLI's too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from engines.core import EngineError, check_seed

METHODS: tuple[str, ...] = ("none", "absom", "cbsom", "topoloss", "som")
METHOD_TITLES: dict[str, str] = {
    "none": "non-topographic",
    "absom": "AB-SOM (activation BMU)",
    "cbsom": "CB-SOM (credit BMU)",
    "topoloss": "TopoLoss (TopoNets)",
    "som": "classic Kohonen SOM on inputs",
}
DATASETS: tuple[str, ...] = ("digits", "gratings", "shapes")
# What a map can show (``runview`` draws an image per kind; "dprime" is one per class).
MAP_KINDS: dict[str, str] = {
    "category": "Category d′ (best class)",
    "orientation": "Orientation preference",
    "frequency": "Spatial frequency preference",
    "dprime": "d′ of one class",
}
EPOCHS_RANGE = (1, 500)
LR_SCHEDULES: tuple[str, ...] = ("step", "cosine")
MAX_LAYERS = 4
MAX_WIDTH = 256


def square_side(width: int, what: str = "layer width") -> int:
    """Side of the square grid a layer of ``width`` units sits on; non-squares are a user error."""
    if not isinstance(width, int) or isinstance(width, bool) or width < 4:
        raise EngineError(f"{what} {width!r} is too small: use a square number of units such as 16, 36 or 64")
    side = math.isqrt(width)
    if side * side != width:
        lower, upper = side * side, (side + 1) ** 2
        raise EngineError(f"{what} {width} is not a square number, so its units cannot sit on a square grid; use {lower} or {upper}")
    return side


def parse_widths(text: str) -> tuple[int, ...]:
    """Widths typed as '16,36,64' (panel field and CLI flag alike); an empty item such as '16,,36'
    is a typo, refused rather than silently dropped."""
    try:
        return tuple(int(v) for v in text.split(","))  # int() allows spaces around, refuses ''
    except ValueError:
        raise EngineError(f"widths {text!r} must be comma-separated integers such as 16,36,64") from None


def _finite(name: str, value: float, low: float, high: float, *, low_open: bool = False) -> None:
    ok = isinstance(value, (int, float)) and math.isfinite(value) and value <= high and (value > low if low_open else value >= low)
    if not ok:
        bracket = "(" if low_open else "["
        raise EngineError(f"{name} must be a number in {bracket}{low:g}, {high:g}], got {value!r}")


@dataclass(frozen=True)
class TrainParams:
    """One training run: which self-organisation rule, which data, and the schedule.

    ``alpha0``/``sigma0`` follow the paper's form alpha(t) = alpha0 exp(-decay t/T), same for sigma,
    both floored at ``alpha_min``/``sigma_min``; ``sigma0`` None means sqrt(K) per layer (the paper's).
    ``alpha0`` defaults higher than the paper's 0.008-0.01 because a run here has 3,600 SGD steps
    instead of ImageNet's ~450k; it was calibrated on seeds 100-102 (see docs/topomap.md).
    ``lr_schedule`` "step" is the reference's MultiStepLR (x0.1 at 2/3 and 8/9 of training).
    """

    method: str = "cbsom"
    data: str = "digits"
    seed: int = 0
    epochs: int = 40
    batch_size: int = 16
    lr: float = 0.05
    lr_schedule: str = "step"  # "step": x0.1 at 2/3 and 8/9 of training (the reference's); "cosine"
    momentum: float = 0.9
    widths: tuple[int, ...] = (16, 36, 64)
    alpha0: float = 0.3
    sigma0: float | None = None
    alpha_min: float = 0.003
    sigma_min: float = 0.003
    decay: float = 3.0
    tau: float = 5.0
    topo_factor: float = 2.0
    som_width: int = 64
    som_alpha0: float = 0.5
    snapshots: int = 10

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise EngineError(f"unknown method {self.method!r}; choose one of {', '.join(METHODS)}")
        if self.data not in DATASETS:
            raise EngineError(f"unknown data set {self.data!r}; choose one of {', '.join(DATASETS)}")
        check_seed(self.seed)
        if not isinstance(self.epochs, int) or not EPOCHS_RANGE[0] <= self.epochs <= EPOCHS_RANGE[1]:
            raise EngineError(f"epochs must be an integer from {EPOCHS_RANGE[0]} to {EPOCHS_RANGE[1]}, got {self.epochs!r}")
        if not isinstance(self.batch_size, int) or not 2 <= self.batch_size <= 1024:
            raise EngineError(f"batch size must be an integer from 2 to 1024, got {self.batch_size!r}")
        _finite("learning rate", self.lr, 0.0, 10.0, low_open=True)
        _finite("momentum", self.momentum, 0.0, 0.999)
        if self.lr_schedule not in LR_SCHEDULES:
            raise EngineError(f"unknown learning-rate schedule {self.lr_schedule!r}; choose one of {', '.join(LR_SCHEDULES)}")
        if not self.widths or len(self.widths) > MAX_LAYERS:
            raise EngineError(f"give 1 to {MAX_LAYERS} layer widths, got {len(self.widths)}")
        for i, width in enumerate(self.widths, 1):
            square_side(width, f"width of conv{i}")
            if width > MAX_WIDTH:
                raise EngineError(f"width of conv{i} is {width}; at most {MAX_WIDTH} units per layer run on this CPU")
        _finite("alpha0", self.alpha0, 0.0, 1.0, low_open=True)
        if self.sigma0 is not None:
            _finite("sigma0", self.sigma0, 0.0, 1000.0, low_open=True)
        _finite("alpha floor", self.alpha_min, 0.0, 1.0)
        _finite("sigma floor", self.sigma_min, 0.0, 1000.0, low_open=True)
        _finite("decay", self.decay, 0.0, 50.0)
        _finite("tau", self.tau, 0.0, 1000.0)
        _finite("TopoLoss factor", self.topo_factor, 1.0, 16.0, low_open=True)
        if self.method == "topoloss":
            for i, width in enumerate(self.widths, 1):
                if self.topo_factor > math.isqrt(width):
                    raise EngineError(f"TopoLoss factor {self.topo_factor:g} is larger than conv{i}'s {math.isqrt(width)}x{math.isqrt(width)} grid")
        square_side(self.som_width, "SOM width")
        if self.som_width > 1024:
            raise EngineError(f"SOM width {self.som_width} is too large; at most 1024 units")
        _finite("SOM alpha0", self.som_alpha0, 0.0, 1.0, low_open=True)
        if not isinstance(self.snapshots, int) or not 2 <= self.snapshots <= 100:
            raise EngineError(f"snapshots must be an integer from 2 to 100, got {self.snapshots!r}")

    @property
    def layer_names(self) -> tuple[str, ...]:
        if self.method == "som":
            return ("som",)
        return tuple(f"conv{i}" for i in range(1, len(self.widths) + 1))

    @property
    def layer_widths(self) -> tuple[int, ...]:
        return (self.som_width,) if self.method == "som" else tuple(self.widths)


@dataclass(frozen=True)
class CompareParams:
    """The benchmark: every method over several seeds, in one run, on the same data and schedule."""

    seeds: int = 3
    first_seed: int = 0  # seeds first_seed .. first_seed + seeds - 1
    methods: tuple[str, ...] = METHODS
    base: TrainParams = field(default_factory=TrainParams)  # data, epochs, schedule shared by all runs

    def __post_init__(self) -> None:
        if not isinstance(self.seeds, int) or not 1 <= self.seeds <= 20:
            raise EngineError(f"seeds must be an integer from 1 to 20, got {self.seeds!r}")
        if not isinstance(self.first_seed, int) or not 0 <= self.first_seed < 2**31 - 20:
            raise EngineError(f"the first seed must be a non-negative integer, got {self.first_seed!r}")
        if not self.methods:
            raise EngineError("choose at least one method to compare")
        for method in self.methods:
            if method not in METHODS:
                raise EngineError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
        self.run_params(self.methods[0], self.first_seed)  # checks itself

    def run_params(self, method: str, seed: int) -> TrainParams:
        from dataclasses import replace

        return replace(self.base, method=method, seed=seed)
