"""What a session file keeps of the topomap panel, read by ``engines.core.serial.from_dict``.

Qt-free. A setting the session lacks (None) keeps the panel's, so an older session still opens;
one it has must pass its check (``panels.session_checks``), or nothing of the session is applied.
The class is checked by the panel: its top depends on the run it will show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engines.core.serial import KEY
from engines.topomap.params import DATASETS, EPOCHS_RANGE, MAP_KINDS, METHODS
from panels.session_checks import choice, flag, number, optional, setting, text, whole

# The panel's widgets take these ranges too (the engine accepts wider ones for seed and tau).
SEED_RANGE = (0, 1_000_000)
ALPHA0_RANGE = (0.001, 1.0)
TAU_RANGE = (0.0, 100.0)


@dataclass(frozen=True)
class TopomapSession:
    method: str | None = setting(choice, "method", METHODS)
    data: str | None = setting(choice, "data", DATASETS)
    epochs: int | None = setting(whole, "epochs", *EPOCHS_RANGE)
    seed: int | None = setting(whole, "seed", *SEED_RANGE)
    widths: str | None = setting(text, "widths")  # as typed in its field: Train checks it, with one sentence
    alpha0: float | None = setting(number, "alpha0", *ALPHA0_RANGE)
    tau: float | None = setting(number, "tau", *TAU_RANGE)
    layer: str | None = setting(optional(text), "layer")  # None: no layer chosen when it was saved
    kind: str | None = setting(choice, "kind", MAP_KINDS)
    klass: Any = field(default=None, metadata={KEY: "class"})  # -1: no classes shown when saved
    pinwheels: bool | None = setting(flag, "pinwheels")
    run: str | None = setting(optional(text), "run")  # None: no run shown when it was saved
