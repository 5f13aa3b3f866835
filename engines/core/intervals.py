"""95% confidence intervals for the benchmarks' numbers.

A benchmark of 20 rooms, 104 driving scenes or 100 drawings reads one number; another draw of
the same kind of scenes reads another. Two retrains of one model, or one model on two scene
sets, have differed by more than some targets' margins, so each benchmark prints how far its
number could move: a percentile bootstrap over the scenes (paired where two methods ran on the
same scenes) and Wilson intervals for solve rates. The targets are still judged on the numbers
themselves.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 2000


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def as_list(self, digits: int = 4) -> list[float]:
        return [round(self.low, digits), round(self.high, digits)]

    def text(self, fmt: str = ".3f") -> str:
        if any(v is None or math.isnan(v) for v in (self.low, self.high)):  # None: read back from JSON
            return "[no interval]"
        return f"[{self.low:{fmt}}, {self.high:{fmt}}]"


NO_INTERVAL = Interval(math.nan, math.nan)


def statistic_interval(n: int, statistic: Callable[[np.ndarray], float], seed: int = 0, resamples: int = RESAMPLES) -> Interval:
    """Percentile bootstrap of ``statistic(indices)`` over ``n`` items drawn with replacement.

    The statistic gets the indices of a resample, so one that pools its items (AP over rooms) or
    compares two methods on the same items (a paired difference) is resampled as a whole.
    """
    if n < 2:
        return NO_INTERVAL
    from scipy.stats import bootstrap

    result = bootstrap(
        (np.arange(n),),
        statistic,
        vectorized=False,
        n_resamples=resamples,
        method="percentile",
        confidence_level=CONFIDENCE,
        rng=np.random.default_rng(seed),
    )
    ci = result.confidence_interval
    return Interval(float(ci.low), float(ci.high))


def mean_interval(values, seed: int = 0, resamples: int = RESAMPLES) -> Interval:
    """Bootstrap interval of a mean; pass per-item differences ``a - b`` for a paired comparison."""
    v = np.asarray(values, dtype=np.float64)
    return statistic_interval(len(v), lambda idx: float(v[idx].mean()), seed, resamples)


def proportion_interval(successes: int, trials: int) -> Interval:
    """Wilson score interval of a rate such as a solve rate (sound at 0% and 100% too)."""
    if trials < 1:
        return NO_INTERVAL
    from scipy.stats import binomtest

    ci = binomtest(int(successes), int(trials)).proportion_ci(confidence_level=CONFIDENCE, method="wilson")
    return Interval(float(ci.low), float(ci.high))
