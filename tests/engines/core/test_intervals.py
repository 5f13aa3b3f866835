"""Benchmark intervals: bootstrap over items (paired and pooled) and Wilson intervals for rates."""

from __future__ import annotations

import math

import numpy as np

from engines.core.intervals import mean_interval, proportion_interval, statistic_interval


def test_mean_interval_brackets_the_mean_and_narrows_with_more_items() -> None:
    rng = np.random.default_rng(3)
    small, large = rng.normal(5.0, 2.0, 25), rng.normal(5.0, 2.0, 400)
    a, b = mean_interval(small), mean_interval(large)
    assert a.low < small.mean() < a.high and b.low < large.mean() < b.high
    assert (b.high - b.low) < 0.5 * (a.high - a.low)  # width falls like 1/sqrt(n): 4x here
    assert abs((b.high - b.low) - 2 * 1.96 * 2.0 / math.sqrt(400)) < 0.05  # the normal interval's width


def test_constant_items_give_a_point_and_one_item_gives_none() -> None:
    point = mean_interval([3.0] * 10)
    assert point.low == point.high == 3.0
    none = mean_interval([1.0])
    assert math.isnan(none.low) and math.isnan(none.high)


def test_a_paired_difference_is_narrower_than_the_unpaired_one() -> None:
    """Two planners on the same scenes: scene difficulty cancels in the per-scene differences."""
    rng = np.random.default_rng(0)
    difficulty = rng.uniform(0, 100, 60)
    a, b = difficulty + 2.0 + rng.normal(0, 0.5, 60), difficulty
    paired = mean_interval(a - b)
    unpaired = statistic_interval(60, lambda idx: float(a[idx].mean() - b[rng.integers(0, 60, 60)].mean()))
    assert 0 < paired.low < 2.0 < paired.high
    assert paired.high - paired.low < 0.1 * (unpaired.high - unpaired.low)


def test_statistic_interval_resamples_whole_items() -> None:
    """A pooled statistic (here a ratio of sums, like AP pooled over rooms) sees the resample's indices."""
    hits, totals = np.array([1, 9, 5, 5]), np.array([10, 10, 10, 10])
    seen = []

    def pooled(idx: np.ndarray) -> float:
        seen.append(idx)
        return float(hits[idx].sum() / totals[idx].sum())

    ci = statistic_interval(4, pooled, resamples=300)
    assert all(i.dtype.kind == "i" and len(i) == 4 and set(i.tolist()) <= {0, 1, 2, 3} for i in seen)
    assert 0.1 <= ci.low < 0.5 < ci.high <= 0.9


def test_wilson_interval_matches_the_formula() -> None:
    k, n, z = 80, 100, 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    ci = proportion_interval(k, n)
    assert abs(ci.low - (centre - half)) < 1e-9 and abs(ci.high - (centre + half)) < 1e-9
    assert proportion_interval(0, 10).low == 0.0 and proportion_interval(10, 10).high == 1.0
    assert math.isnan(proportion_interval(0, 0).low)
