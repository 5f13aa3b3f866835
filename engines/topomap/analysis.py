"""Map statistics on a square grid of units, in plain NumPy so they can be tested on constructed maps.

- category selectivity d' = (mu_t - mu_o) / sqrt((var_t + var_o) / 2) per unit (and per position,
  then averaged over positions, as the reference analysis does);
- orientation / spatial-frequency preference and selectivity from grating responses;
- pinwheels: 2x2 plaquettes around which the orientation turns by +-180 degrees (winding +-1/2);
- smoothness: mean |delta value| against grid distance, a distance-shuffled control, and the TDANN
  score (max(curve) - curve[0]) / max(curve): 1 when neighbours are alike, 0 with no structure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .params import square_side


def grid_positions(width: int) -> np.ndarray:
    """(row, col) of each unit: unit k sits at (k // side, k % side), as in the reference."""
    side = square_side(width)
    k = np.arange(width)
    return np.stack([k // side, k % side], axis=1).astype(np.float64)


def grid_neighbours(width: int, unit: int) -> list[int]:
    """The up-to-8 units around ``unit`` on its grid."""
    side = square_side(width)
    r, c = divmod(unit, side)
    out = []
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            rr, cc = r + dr, c + dc
            if (dr or dc) and 0 <= rr < side and 0 <= cc < side:
                out.append(rr * side + cc)
    return out


# Category selectivity -------------------------------------------------------------------------
def dprime(target: np.ndarray, other: np.ndarray) -> np.ndarray:
    """d' per unit for responses shaped [n, K] or [n, K, S] (then averaged over the S positions).

    A unit that never varies (a dead ReLU) has d' = 0, not NaN.
    """
    target = np.asarray(target, np.float64)
    other = np.asarray(other, np.float64)
    if target.ndim == 2:
        target, other = target[..., None], other[..., None]
    pooled = (target.var(0, ddof=1) + other.var(0, ddof=1)) / 2.0
    diff = target.mean(0) - other.mean(0)
    d = np.divide(diff, np.sqrt(pooled), out=np.zeros_like(diff), where=pooled > 1e-12)
    return d.mean(axis=-1)


def category_dprime(responses: np.ndarray, labels: np.ndarray, n_classes: int) -> np.ndarray:
    """[C, K]: each class against all the others."""
    labels = np.asarray(labels)
    out = np.zeros((n_classes, responses.shape[1]))
    for c in range(n_classes):
        mask = labels == c
        if 2 <= mask.sum() <= len(labels) - 2:
            out[c] = dprime(responses[mask], responses[~mask])
    return out


# Grating preferences --------------------------------------------------------------------------
@dataclass(frozen=True)
class Preferences:
    orientation: np.ndarray  # [K] preferred orientation, degrees in [0, 180)
    orientation_selectivity: np.ndarray  # [K] 1 - circular variance, in [0, 1]
    frequency: np.ndarray  # [K] preferred spatial frequency, cycles per image
    frequency_selectivity: np.ndarray  # [K] (max - min) / (max + min) of the frequency tuning
    tuning: np.ndarray  # [K, n_orientations, n_frequencies] mean response
    responsive: np.ndarray  # [K] bool: the unit responds to some grating


def grating_preferences(responses: np.ndarray, orientations: np.ndarray, frequencies: np.ndarray) -> Preferences:
    """Preferences from responses shaped [n_ori, n_freq, n_phase, K] or [..., K, S] (S positions).

    Responses are averaged over phase and position (phase-invariant, complex-cell style). The
    orientation preference is half the angle of sum r(theta) e^{2i theta} at the preferred frequency.
    """
    r = np.asarray(responses, np.float64)
    if r.ndim == 5:
        r = r.mean(axis=-1)
    tuning = np.clip(r.mean(axis=2), 0.0, None).transpose(2, 0, 1)  # [K, ori, freq]
    k = tuning.shape[0]
    best_freq = tuning.max(axis=1).argmax(axis=1)  # frequency with the strongest orientation peak
    ori_curve = tuning[np.arange(k), :, best_freq]  # [K, ori]
    angles = np.deg2rad(np.asarray(orientations, np.float64)) * 2.0
    vector = (ori_curve * np.exp(1j * angles)).sum(axis=1)
    total = ori_curve.sum(axis=1)
    responsive = total > 1e-9
    osi = np.divide(np.abs(vector), total, out=np.zeros(k), where=responsive)
    orientation = (np.rad2deg(np.angle(vector)) / 2.0) % 180.0
    best_ori = ori_curve.argmax(axis=1)
    freq_curve = tuning[np.arange(k), best_ori, :]  # [K, freq]
    fmax, fmin = freq_curve.max(axis=1), freq_curve.min(axis=1)
    fsi = np.divide(fmax - fmin, fmax + fmin, out=np.zeros(k), where=(fmax + fmin) > 1e-9)
    frequency = np.asarray(frequencies, np.float64)[freq_curve.argmax(axis=1)]
    return Preferences(orientation, osi, frequency, fsi, tuning, responsive)


# Pinwheels ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pinwheel:
    row: float  # plaquette centre, in grid units (between four units)
    col: float
    sign: int  # +1 (orientation winds +180 deg counter-clockwise) or -1


def find_pinwheels(orientation: np.ndarray, valid: np.ndarray | None = None) -> list[Pinwheel]:
    """Pinwheel centres of an orientation map [side, side] in degrees (period 180).

    Around each 2x2 plaquette the doubled angle's wrapped steps sum to 0 or +-2 pi; +-2 pi is a
    winding number of +-1/2 for orientation. Plaquettes touching an invalid unit are skipped.
    """
    phi = np.deg2rad(np.asarray(orientation, np.float64)) * 2.0
    out: list[Pinwheel] = []

    def wrap(d: np.ndarray) -> np.ndarray:
        return (d + np.pi) % (2 * np.pi) - np.pi

    a, b, c, d = phi[:-1, :-1], phi[:-1, 1:], phi[1:, 1:], phi[1:, :-1]  # a ring of corners
    total = wrap(b - a) + wrap(c - b) + wrap(d - c) + wrap(a - d)
    winding = np.rint(total / (2 * np.pi)).astype(int)
    if valid is not None:
        v = np.asarray(valid, bool)
        ok = v[:-1, :-1] & v[:-1, 1:] & v[1:, 1:] & v[1:, :-1]
        winding = np.where(ok, winding, 0)
    for r, cc in zip(*np.nonzero(winding)):
        out.append(Pinwheel(float(r) + 0.5, float(cc) + 0.5, int(np.sign(winding[r, cc]))))
    return out


# Smoothness -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SmoothnessCurve:
    distances: np.ndarray  # bin centres (grid units)
    curve: np.ndarray  # mean |delta| of unit pairs per distance bin
    shuffled_mean: np.ndarray  # the same with values shuffled over positions
    shuffled_std: np.ndarray
    pairs: np.ndarray  # number of unit pairs per bin
    score: float  # (max(curve) - curve[0]) / max(curve)
    shuffled_score: float  # mean score of the shuffled curves: what no structure gives


def smoothness_score(curve: np.ndarray) -> float:
    """TDANN's score: 1 = neighbours alike, 0 = no structure; 0 for a constant map."""
    curve = np.asarray(curve, np.float64)
    top = float(np.max(curve)) if curve.size else 0.0
    if curve.size < 2 or top <= 1e-12:
        return 0.0
    return float((top - curve[0]) / top)


def pairwise_differences(values: np.ndarray, period: float | None = None) -> np.ndarray:
    """[K, K] mean absolute difference of unit values ([K] or [K, F]); circular when ``period``."""
    v = np.asarray(values, np.float64)
    if v.ndim == 1:
        v = v[:, None]
    d = np.abs(v[:, None, :] - v[None, :, :])
    if period is not None:
        d = np.mod(d, period)
        d = np.minimum(d, period - d)
    return d.mean(axis=-1)


SHUFFLE_PAIRS = 4_000_000  # unit pairs handled at once by the shuffle control (about 100 MB of temporaries)


def smoothness_curve(
    values: np.ndarray,
    width: int | None = None,
    *,
    period: float | None = None,
    valid: np.ndarray | None = None,
    shuffles: int = 200,
    rng: np.random.Generator | None = None,
    min_pairs: int = 4,
) -> SmoothnessCurve:
    """|delta value| against grid distance in unit-wide bins [1, 2), [2, 3), ... below the grid side.

    The control shuffles the values over grid positions ``shuffles`` times (band = mean +- std).
    """
    values = np.asarray(values, np.float64)
    width = width or values.shape[0]
    side = square_side(width)
    pos = grid_positions(width)
    keep = np.ones(width, bool) if valid is None else np.asarray(valid, bool)
    dist = np.sqrt(((pos[:, None] - pos[None]) ** 2).sum(-1))
    iu = np.triu_indices(width, 1)
    bins = np.floor(dist[iu]).astype(int) - 1
    n_bins = max(side - 1, 1)
    in_range = (bins >= 0) & (bins < n_bins)
    diffs = pairwise_differences(values, period)
    rng = rng or np.random.default_rng(0)

    def curves_of(orders: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean |delta value| per distance bin, and the pair counts, for each row of ``orders``
        (a permutation of the units): one bincount over all rows, each row's pairs summed in the
        same order as alone."""
        first, second = orders[:, iu[0]], orders[:, iu[1]]
        ok = in_range & keep[first] & keep[second]
        index = (np.arange(len(orders))[:, None] * n_bins + bins)[ok]
        size = len(orders) * n_bins
        sums = np.bincount(index, weights=diffs[first, second][ok], minlength=size).reshape(len(orders), n_bins)
        counts = np.bincount(index, minlength=size).reshape(len(orders), n_bins)
        return np.divide(sums, counts, out=np.full(sums.shape, np.nan), where=counts > 0), counts

    curve, counts = (c[0] for c in curves_of(np.arange(width)[None]))
    used = counts >= min_pairs
    # Only bins starting from the first one form a curve; later empty bins are dropped.
    if not used.any() or not used[0]:
        empty = np.zeros(0)
        return SmoothnessCurve(empty, empty, empty, empty, counts[:0], 0.0, 0.0)
    used = used & np.cumprod(used).astype(bool)
    if shuffles:
        orders = np.stack([rng.permutation(width) for _ in range(shuffles)])
        block = max(1, SHUFFLE_PAIRS // max(len(iu[0]), 1))  # bounded memory for wide maps
        shuffled = np.concatenate([curves_of(orders[i : i + block])[0] for i in range(0, shuffles, block)])
    else:
        shuffled = curve[None]
    shuffled = shuffled[:, used]
    shuffled_scores = [smoothness_score(s) for s in np.nan_to_num(shuffled)]
    return SmoothnessCurve(
        distances=np.arange(n_bins, dtype=np.float64)[used] + 1.5,
        curve=curve[used],
        shuffled_mean=np.nanmean(shuffled, axis=0),
        shuffled_std=np.nanstd(shuffled, axis=0),
        pairs=counts[used],
        score=smoothness_score(curve[used]),
        shuffled_score=float(np.mean(shuffled_scores)) if shuffled_scores else 0.0,
    )
