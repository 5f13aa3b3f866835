"""Colour images of maps (NumPy, uint8 RGB), shared by the panel and the PNG exports.

Preference maps use hue for the preferred value and brightness for selectivity (relative to the
layer's most selective unit); category maps use one colour per class and brightness for its d'.
"""

from __future__ import annotations

import numpy as np

# Ten distinct class colours (Tableau 10), then cycled.
PALETTE = np.array(
    [
        [31, 119, 180],
        [255, 127, 14],
        [44, 160, 44],
        [214, 39, 40],
        [148, 103, 189],
        [140, 86, 75],
        [227, 119, 194],
        [127, 127, 127],
        [188, 189, 34],
        [23, 190, 207],
    ],
    dtype=np.float64,
)


def class_colour(index: int) -> tuple[int, int, int]:
    r, g, b = PALETTE[index % len(PALETTE)]
    return int(r), int(g), int(b)


def hsv_to_rgb(h: np.ndarray, s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Vectorised HSV (all in [0, 1]) to uint8 RGB, shape [..., 3]."""
    h = np.mod(h, 1.0) * 6.0
    i = np.floor(h).astype(int) % 6
    f = h - np.floor(h)
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    choices = [np.stack(c, -1) for c in ((v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q))]
    rgb = np.select([(i == k)[..., None] for k in range(6)], choices)
    return np.clip(np.rint(rgb * 255), 0, 255).astype(np.uint8)


def _relative(values: np.ndarray) -> np.ndarray:
    values = np.clip(np.nan_to_num(np.asarray(values, np.float64)), 0.0, None)
    top = values.max() if values.size else 0.0
    return values / top if top > 1e-12 else np.zeros_like(values)


def preference_rgb(hue: np.ndarray, selectivity: np.ndarray, side: int) -> np.ndarray:
    """[side, side, 3]: hue in [0, 1) = preference, brightness = relative selectivity."""
    v = _relative(selectivity)
    return hsv_to_rgb(np.asarray(hue, np.float64), np.ones_like(v), v).reshape(side, side, 3)


def orientation_rgb(orientation_deg: np.ndarray, selectivity: np.ndarray, side: int) -> np.ndarray:
    return preference_rgb(np.asarray(orientation_deg) / 180.0, selectivity, side)


def frequency_rgb(frequency: np.ndarray, frequencies: np.ndarray, selectivity: np.ndarray, side: int) -> np.ndarray:
    """Low frequencies red, high ones violet (log scale over the probe's range)."""
    lo, hi = np.log(np.min(frequencies)), np.log(np.max(frequencies))
    hue = 0.8 * (np.log(frequency) - lo) / max(hi - lo, 1e-9)
    return preference_rgb(hue, selectivity, side)


def category_rgb(category: np.ndarray, strength: np.ndarray, side: int) -> np.ndarray:
    """Each unit in the colour of its most selective class, as bright as its d' (relative)."""
    v = _relative(strength)[:, None]
    colours = PALETTE[np.asarray(category) % len(PALETTE)]
    return np.clip(np.rint(colours * v), 0, 255).astype(np.uint8).reshape(side, side, 3)


def scalar_rgb(values: np.ndarray, side: int, symmetric: bool = True) -> np.ndarray:
    """A diverging blue-white-red image of a scalar map (e.g. one class's d')."""
    x = np.nan_to_num(np.asarray(values, np.float64))
    top = np.abs(x).max() if symmetric else x.max()
    t = x / top if top > 1e-12 else np.zeros_like(x)
    red = np.where(t > 0, 1.0, 1.0 + t)
    blue = np.where(t < 0, 1.0, 1.0 - t)
    green = 1.0 - np.abs(t)
    return np.clip(np.rint(np.stack([red, green, blue], -1) * 255), 0, 255).astype(np.uint8).reshape(side, side, 3)


def mosaic(tiles: np.ndarray, side: int, pad: int = 1) -> np.ndarray:
    """Grey tiles [K, h, w] on the K units' grid, each scaled to its own range: [H, W, 3] uint8."""
    tiles = np.asarray(tiles, np.float64)
    k, h, w = tiles.shape
    lo = tiles.reshape(k, -1).min(1)[:, None, None]
    hi = tiles.reshape(k, -1).max(1)[:, None, None]
    scaled = np.divide(tiles - lo, hi - lo, out=np.full_like(tiles, 0.5), where=(hi - lo) > 1e-12)
    canvas = np.full((side * (h + pad) + pad, side * (w + pad) + pad), 0.15)
    for unit in range(k):
        r, c = divmod(unit, side)
        y, x = pad + r * (h + pad), pad + c * (w + pad)
        canvas[y : y + h, x : x + w] = scaled[unit]
    grey = np.clip(np.rint(canvas * 255), 0, 255).astype(np.uint8)
    return np.repeat(grey[..., None], 3, axis=-1)


def upscale(image: np.ndarray, factor: int) -> np.ndarray:
    """Nearest-neighbour enlargement so small grids stay crisp in PNGs."""
    return np.repeat(np.repeat(image, factor, axis=0), factor, axis=1)


def save_png(path, image: np.ndarray) -> None:
    """Write a uint8 image atomically."""
    from PIL import Image

    from engines.core import atomic_path

    with atomic_path(path) as tmp:
        Image.fromarray(np.ascontiguousarray(image)).save(tmp, format="PNG")
