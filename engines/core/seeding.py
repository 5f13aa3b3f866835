"""One call to make a run repeatable."""

from __future__ import annotations

import random

import numpy as np

from .errors import EngineError

MAX_SEED = 2**31 - 1  # what NumPy, torch and Open3D (a 32-bit int) all take


def check_seed(seed: object) -> int:
    """The seed, or one sentence when a library would reject it mid-run with a traceback."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise EngineError(f"seed must be an integer from 0 to 2^31-1, got {seed!r}")
    return seed


def seed_everything(seed: int) -> np.random.Generator:
    """Seed Python, NumPy and torch (when imported); return a fresh NumPy generator."""
    import sys

    random.seed(seed)
    np.random.seed(seed % (2**32))
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)
    return np.random.default_rng(seed)
