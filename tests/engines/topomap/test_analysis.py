"""Map statistics on constructed maps with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from engines.core import EngineError
from engines.topomap.analysis import (
    category_dprime,
    dprime,
    find_pinwheels,
    grating_preferences,
    grid_neighbours,
    grid_positions,
    pairwise_differences,
    smoothness_curve,
    smoothness_score,
)
from engines.topomap.params import square_side


def smooth_map(side: int) -> np.ndarray:
    """A slow 2-D ramp: neighbours differ little, far units a lot."""
    pos = grid_positions(side * side)
    return pos[:, 0] + 0.5 * pos[:, 1]


def test_grid_positions_follow_the_channel_index() -> None:
    pos = grid_positions(16)
    assert pos.shape == (16, 2)
    assert tuple(pos[0]) == (0, 0) and tuple(pos[5]) == (1, 1) and tuple(pos[15]) == (3, 3)
    assert sorted(grid_neighbours(16, 0)) == [1, 4, 5]
    assert len(grid_neighbours(16, 5)) == 8


@pytest.mark.parametrize("width, hint", [(20, "16 or 25"), (50, "49 or 64"), (2, "too small")])
def test_non_square_widths_are_one_clear_error(width: int, hint: str) -> None:
    with pytest.raises(EngineError, match=hint):
        square_side(width)


def test_dprime_known_value_and_dead_units() -> None:
    target = np.array([[1.0, 5.0], [3.0, 5.0]])  # unit 0: mean 2, var 2; unit 1: constant
    other = np.array([[-1.0, 5.0], [1.0, 5.0]])  # unit 0: mean 0, var 2
    d = dprime(target, other)
    assert d[0] == pytest.approx(2.0 / np.sqrt(2.0))
    assert d[1] == 0.0


def test_category_dprime_finds_the_planted_category_unit() -> None:
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 50)
    responses = rng.normal(size=(150, 4))
    responses[labels == 2, 1] += 3.0  # unit 1 likes class 2
    d = category_dprime(responses, labels, 3)
    assert d.shape == (3, 4)
    assert d[:, 1].argmax() == 2 and d[2, 1] > 2.0
    assert np.abs(np.delete(d, 1, axis=1)).max() < 0.8


def test_smooth_map_scores_high_and_shuffled_map_near_zero() -> None:
    values = smooth_map(8)
    smooth = smoothness_curve(values, 64, rng=np.random.default_rng(1))
    assert smooth.score > 0.7
    assert np.all(np.diff(smooth.curve) > 0)  # |delta| grows with distance
    assert smooth.shuffled_score < 0.15
    assert np.all(smooth.curve[:2] < smooth.shuffled_mean[:2] - 2 * smooth.shuffled_std[:2])

    shuffled = np.random.default_rng(2).permutation(values)
    scores = [smoothness_curve(np.random.default_rng(s).permutation(values), 64, shuffles=0).score for s in range(20)]
    assert smoothness_curve(shuffled, 64, shuffles=0).score < 0.2
    assert np.mean(scores) < 0.1


def test_vector_valued_and_circular_differences() -> None:
    assert pairwise_differences(np.array([10.0, 170.0]), period=180.0)[0, 1] == pytest.approx(20.0)
    profiles = np.array([[0.0, 2.0], [1.0, 0.0]])
    assert pairwise_differences(profiles)[0, 1] == pytest.approx(1.5)
    # A smooth orientation map across the 0/180 seam is still smooth.
    pos = grid_positions(64)
    ori = (pos[:, 1] * 20.0 + 150.0) % 180.0
    assert smoothness_curve(ori, 64, period=180.0, shuffles=0).score > 0.6


def test_constant_map_and_degenerate_curves() -> None:
    assert smoothness_curve(np.ones(36), 36, shuffles=5).score == 0.0
    assert smoothness_score(np.array([])) == 0.0
    assert smoothness_score(np.array([1.0, 2.0])) == pytest.approx(0.5)


def planted_pinwheel(side: int, centre: tuple[float, float], sign: int) -> np.ndarray:
    rows, cols = np.mgrid[0:side, 0:side].astype(float)
    return (np.rad2deg(sign * np.arctan2(rows - centre[0], cols - centre[1])) / 2.0) % 180.0


def test_planted_pinwheels_are_counted_with_their_sign() -> None:
    plus = find_pinwheels(planted_pinwheel(8, (3.5, 3.5), +1))
    assert [(p.row, p.col, p.sign) for p in plus] == [(3.5, 3.5, 1)]
    minus = find_pinwheels(planted_pinwheel(8, (2.5, 4.5), -1))
    assert [(p.row, p.col, p.sign) for p in minus] == [(2.5, 4.5, -1)]
    assert find_pinwheels(np.full((6, 6), 42.0)) == []
    ramp = np.tile(np.arange(6) * 30.0, (6, 1)) % 180.0  # rotates across the map, no singularity
    assert find_pinwheels(ramp) == []


def test_pinwheels_skip_plaquettes_with_silent_units() -> None:
    valid = np.ones((8, 8), bool)
    valid[3, 3] = False
    assert find_pinwheels(planted_pinwheel(8, (3.5, 3.5), +1), valid) == []


def test_grating_preferences_recover_a_tuned_unit() -> None:
    orientations = np.arange(0, 180, 15.0)
    frequencies = np.array([1.5, 2.5, 4.0, 6.0])
    theta = np.deg2rad(orientations)[:, None, None]
    tuned = np.exp(2.0 * np.cos(2 * (theta - np.deg2rad(60.0)))) * np.array([0.2, 0.5, 1.0, 0.3])[None, :, None]
    flat = np.ones((12, 4, 1))
    responses = np.stack([np.broadcast_to(tuned, (12, 4, 4)), np.broadcast_to(flat, (12, 4, 4))], axis=-1)
    prefs = grating_preferences(responses, orientations, frequencies)
    assert prefs.orientation[0] == pytest.approx(60.0, abs=1e-6)
    assert prefs.frequency[0] == 4.0
    assert prefs.orientation_selectivity[0] > 0.5 and prefs.frequency_selectivity[0] > 0.5
    assert prefs.orientation_selectivity[1] == pytest.approx(0.0, abs=1e-9)
    assert prefs.tuning.shape == (2, 12, 4) and prefs.responsive.all()


def test_the_shuffle_control_does_not_depend_on_how_many_shuffles_go_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shuffles run in blocks (bounded memory for wide maps): one at a time gives the same band to the bit."""
    from engines.topomap import analysis

    rng = np.random.default_rng(4)
    values, valid = rng.random(100) * 180.0, rng.random(100) > 0.2
    together = smoothness_curve(values, period=180.0, valid=valid, shuffles=30, rng=np.random.default_rng(2))
    monkeypatch.setattr(analysis, "SHUFFLE_PAIRS", 1)
    alone = smoothness_curve(values, period=180.0, valid=valid, shuffles=30, rng=np.random.default_rng(2))
    for name in ("curve", "shuffled_mean", "shuffled_std", "pairs"):
        np.testing.assert_array_equal(getattr(together, name), getattr(alone, name))
    assert together.shuffled_score == alone.shuffled_score and len(together.curve) > 3
