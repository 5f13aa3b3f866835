"""From a network to its maps: per-layer unit statistics, their smoothness and pinwheels, and the
colour images the panel and the exports show.

``LayerStats`` is the compact part stored in run files at every snapshot (d', preferences);
``LayerMaps`` adds what is derived from it (smoothness curves with the shuffled control,
pinwheels, colour images) and, for the final network, tuning curves and top stimuli per unit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .analysis import (
    Pinwheel,
    SmoothnessCurve,
    category_dprime,
    find_pinwheels,
    grating_preferences,
    grid_neighbours,
    smoothness_curve,
)
from .params import square_side
from .render import category_rgb, frequency_rgb, orientation_rgb, scalar_rgb
from .stimuli import PROBE_FREQUENCIES, PROBE_ORIENTATIONS, PROBE_PHASES

TOP_STIMULI = 8


@dataclass(frozen=True)
class LayerStats:
    dprime: np.ndarray  # [C, K] category selectivity of the conv output (as the reference measures it)
    dprime_relu: np.ndarray  # [C, K] the same on the rectified output (after norm and ReLU)
    orientation: np.ndarray  # [K] degrees
    orientation_selectivity: np.ndarray  # [K]
    frequency: np.ndarray  # [K] cycles per image
    frequency_selectivity: np.ndarray  # [K]
    responsive: np.ndarray  # [K] bool

    @property
    def width(self) -> int:
        return int(self.orientation.shape[0])


def layer_stats(test_pre: np.ndarray, test_post: np.ndarray, test_labels: np.ndarray, n_classes: int, grating_responses: np.ndarray) -> LayerStats:
    """Statistics of one layer from its responses to the held-out images (conv output and
    rectified output) and its rectified responses to the grating probe."""
    d = category_dprime(test_pre, test_labels, n_classes)
    d_relu = category_dprime(test_post, test_labels, n_classes)
    shape = (len(PROBE_ORIENTATIONS), len(PROBE_FREQUENCIES), len(PROBE_PHASES)) + grating_responses.shape[1:]
    prefs = grating_preferences(grating_responses.reshape(shape), np.array(PROBE_ORIENTATIONS), np.array(PROBE_FREQUENCIES))
    return LayerStats(d, d_relu, prefs.orientation, prefs.orientation_selectivity, prefs.frequency, prefs.frequency_selectivity, prefs.responsive)


@dataclass(frozen=True)
class UnitDetail:
    """What the panel shows for a clicked unit (final network only)."""

    tuning: np.ndarray  # [K, n_orientations, n_frequencies]
    class_means: np.ndarray  # [K, C] mean response per class
    top_stimuli: np.ndarray  # [K, TOP_STIMULI] indices into the test images
    neighbours: np.ndarray  # [K, 8] grid neighbours, -1 where the grid ends


@dataclass(frozen=True)
class LayerMaps:
    name: str
    stats: LayerStats
    smoothness: SmoothnessCurve  # |delta d'| (mean over classes) against grid distance
    relu_smoothness: SmoothnessCurve  # the same on the rectified output's d'
    orientation_smoothness: SmoothnessCurve  # |delta preferred orientation| (selective units)
    pinwheels: tuple[Pinwheel, ...]
    images: dict[str, np.ndarray]  # "category", "orientation", "frequency", "dprime/<c>" -> [side, side, 3] uint8
    detail: UnitDetail | None = None

    @property
    def width(self) -> int:
        return self.stats.width

    @property
    def side(self) -> int:
        return square_side(self.width)

    @property
    def category(self) -> np.ndarray:
        """[K] the class each unit is most selective for."""
        return self.stats.dprime.argmax(axis=0)

    @property
    def category_dprime(self) -> np.ndarray:
        return self.stats.dprime.max(axis=0)


def derive_maps(name: str, stats: LayerStats, *, shuffles: int = 200, seed: int = 0, detail: UnitDetail | None = None) -> LayerMaps:
    """Smoothness, pinwheels and colour images of a layer's statistics."""
    side = square_side(stats.width)
    rng = np.random.default_rng(seed)
    smooth = smoothness_curve(stats.dprime.T, stats.width, shuffles=shuffles, rng=rng)
    relu_smooth = smoothness_curve(stats.dprime_relu.T, stats.width, shuffles=shuffles, rng=rng)
    # Orientation is only meaningful for units that respond to gratings at all.
    ori_smooth = smoothness_curve(stats.orientation, stats.width, period=180.0, valid=stats.responsive, shuffles=shuffles, rng=rng)
    pinwheels = tuple(find_pinwheels(stats.orientation.reshape(side, side), stats.responsive.reshape(side, side)))
    images = {
        "category": category_rgb(stats.dprime.argmax(0), stats.dprime.max(0), side),
        "orientation": orientation_rgb(stats.orientation, stats.orientation_selectivity, side),
        "frequency": frequency_rgb(stats.frequency, np.array(PROBE_FREQUENCIES), stats.frequency_selectivity, side),
    }
    for c in range(stats.dprime.shape[0]):
        images[f"dprime/{c}"] = scalar_rgb(stats.dprime[c], side)
    return LayerMaps(name, stats, smooth, relu_smooth, ori_smooth, pinwheels, images, detail)


def unit_detail(test_responses: np.ndarray, test_labels: np.ndarray, n_classes: int, grating_responses: np.ndarray) -> UnitDetail:
    shape = (len(PROBE_ORIENTATIONS), len(PROBE_FREQUENCIES), len(PROBE_PHASES)) + grating_responses.shape[1:]
    r = grating_responses.reshape(shape)
    if r.ndim == 5:
        r = r.mean(-1)
    tuning = r.mean(axis=2).transpose(2, 0, 1)
    per_image = test_responses.mean(axis=-1) if test_responses.ndim == 3 else test_responses  # [N, K]
    class_means = np.stack(
        [per_image[test_labels == c].mean(0) if (test_labels == c).any() else np.zeros(per_image.shape[1]) for c in range(n_classes)],
        axis=1,
    )
    top = np.argsort(-per_image, axis=0, kind="stable")[:TOP_STIMULI].T
    k = per_image.shape[1]
    neighbours = np.full((k, 8), -1, dtype=np.int64)
    for unit in range(k):
        near = grid_neighbours(k, unit)
        neighbours[unit, : len(near)] = near
    return UnitDetail(tuning, class_means, top, neighbours)
