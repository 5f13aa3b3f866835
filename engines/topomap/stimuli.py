"""Procedural images drawn with NumPy: sine gratings and shape categories (16 x 16, no downloads).

Gratings are the probe set for orientation / spatial-frequency maps; shapes are a small category
task for category-selective patches. Shapes are rasterised by point-in-shape tests on a 4x
supersampled grid, so their edges are anti-aliased.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

SIZE = 16
SHAPES: tuple[str, ...] = ("circle", "ring", "square", "triangle", "bar", "cross", "star", "crescent")
PROBE_ORIENTATIONS = tuple(float(a) for a in np.arange(0.0, 180.0, 15.0))  # degrees, 12 values
PROBE_FREQUENCIES = (1.5, 2.5, 4.0, 6.0)  # cycles per image
PROBE_PHASES = (0.0, 90.0, 180.0, 270.0)  # degrees


def grating(orientation_deg: float, cycles: float, phase_deg: float, size: int = SIZE) -> np.ndarray:
    """A full-field sine grating; orientation is the direction of the stripes (0 = horizontal)."""
    coords = np.arange(size, dtype=np.float64) - (size - 1) / 2.0
    yy, xx = np.meshgrid(coords, coords, indexing="ij")
    theta = np.deg2rad(orientation_deg)
    # The luminance varies along the normal of the stripes.
    along_normal = -xx * np.sin(theta) + yy * np.cos(theta)
    return np.sin(2 * np.pi * cycles * along_normal / size + np.deg2rad(phase_deg)).astype(np.float32)


@dataclass(frozen=True)
class GratingProbe:
    """Every grating of the probe grid, shaped [orientation, frequency, phase, H, W]."""

    images: np.ndarray
    orientations: tuple[float, ...] = PROBE_ORIENTATIONS
    frequencies: tuple[float, ...] = PROBE_FREQUENCIES
    phases: tuple[float, ...] = PROBE_PHASES

    @property
    def flat(self) -> np.ndarray:
        """The images as a network batch [N, 1, H, W]."""
        return self.images.reshape(-1, 1, *self.images.shape[-2:])


@lru_cache(maxsize=1)
def grating_probe() -> GratingProbe:
    images = np.stack([np.stack([np.stack([grating(o, f, p) for p in PROBE_PHASES]) for f in PROBE_FREQUENCIES]) for o in PROBE_ORIENTATIONS])
    return GratingProbe(images=images)


def random_gratings(n: int, n_classes: int, rng: np.random.Generator, noise: float = 0.6) -> tuple[np.ndarray, np.ndarray]:
    """An orientation task: class = orientation bin; frequency, phase, contrast and noise vary."""
    labels = rng.integers(0, n_classes, n)
    width = 180.0 / n_classes
    orient = labels * width + rng.uniform(-width / 4, width / 4, n)
    cycles = rng.uniform(1.5, 6.0, n)
    phase = rng.uniform(0, 360, n)
    contrast = rng.uniform(0.3, 1.0, n)
    images = np.stack([c * grating(o, f, p) for o, f, p, c in zip(orient, cycles, phase, contrast)])
    images += noise * rng.standard_normal(images.shape).astype(np.float32)
    return images.astype(np.float32), labels.astype(np.int64)


def _inside(name: str, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Point-in-shape test in the shape's own frame (unit radius about the origin)."""
    r = np.hypot(u, v)
    if name == "circle":
        return r <= 1.0
    if name == "ring":
        return (r <= 1.0) & (r >= 0.55)
    if name == "square":
        return (np.abs(u) <= 0.8) & (np.abs(v) <= 0.8)
    if name == "triangle":
        # Equilateral, apex up, circumradius 1.
        return (v >= -0.5) & (v <= 1.0 - np.sqrt(3) * np.abs(u) * 1.0) & (np.sqrt(3) * np.abs(u) <= 1.0 - v)
    if name == "bar":
        return (np.abs(u) <= 1.0) & (np.abs(v) <= 0.28)
    if name == "cross":
        return ((np.abs(u) <= 1.0) & (np.abs(v) <= 0.25)) | ((np.abs(v) <= 1.0) & (np.abs(u) <= 0.25))
    if name == "star":
        angle = np.arctan2(v, u)
        radius = 0.45 + 0.55 * np.abs(np.cos(2.5 * angle))
        return r <= radius
    if name == "crescent":
        return (r <= 1.0) & (np.hypot(u - 0.45, v) > 0.8)
    raise ValueError(f"unknown shape {name}")


def draw_shape(name: str, cx: float, cy: float, radius: float, angle_deg: float, size: int = SIZE, supersample: int = 4) -> np.ndarray:
    """One anti-aliased shape (1 inside, 0 outside) centred at (cx, cy) in pixels."""
    step = 1.0 / supersample
    coords = np.arange(size * supersample, dtype=np.float64) * step + step / 2 - 0.5
    yy, xx = np.meshgrid(coords, coords, indexing="ij")
    theta = np.deg2rad(angle_deg)
    dx, dy = (xx - cx) / radius, (cy - yy) / radius
    u = dx * np.cos(theta) + dy * np.sin(theta)
    v = -dx * np.sin(theta) + dy * np.cos(theta)
    mask = _inside(name, u, v).astype(np.float32)
    return mask.reshape(size, supersample, size, supersample).mean(axis=(1, 3))


def random_shapes(n: int, rng: np.random.Generator, noise: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """A shape-category task: position, size, rotation, contrast and noise vary within a class."""
    labels = rng.integers(0, len(SHAPES), n)
    images = np.empty((n, SIZE, SIZE), np.float32)
    for i, label in enumerate(labels):
        radius = rng.uniform(3.8, 6.2)
        cx, cy = rng.uniform(7.5 - 2.0, 7.5 + 2.0, 2)
        images[i] = rng.uniform(0.6, 1.0) * draw_shape(SHAPES[label], cx, cy, radius, rng.uniform(0, 360))
    images += noise * rng.standard_normal(images.shape).astype(np.float32)
    return images, labels.astype(np.int64)
