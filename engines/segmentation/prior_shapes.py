"""Extra primitives for the prior's training shapes: spheres, capsules (swept spheres), tori and tilted parts.

They follow `shapes.py`'s protocol (``sdf``, ``area``, ``sample``) so a `Shape` can mix them
with boxes, cylinders and cones. Only the object prior's training data uses them: curved and
slanted parts (splayed legs, bent poles, rims, handles, foliage) that axis-aligned boxes and
vertical cylinders cannot make, so the prior learns surfaces beyond the room generator's furniture.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .shapes import Box, Cone, Cylinder, rotation_matrix


def _unit_sphere(n: int, rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True).clip(min=1e-12)


@dataclass(frozen=True)
class Sphere:
    center: tuple[float, float, float]
    radius: float

    def sdf(self, p: np.ndarray) -> np.ndarray:
        return np.linalg.norm(p - np.asarray(self.center), axis=-1) - self.radius

    def area(self) -> float:
        return 4 * np.pi * self.radius**2

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return _unit_sphere(n, rng) * self.radius + np.asarray(self.center)


@dataclass(frozen=True)
class Capsule:
    """A sphere swept along the segment a-b: rods, slanted legs, arms, pieces of bent tubes."""

    a: tuple[float, float, float]
    b: tuple[float, float, float]
    radius: float

    def sdf(self, p: np.ndarray) -> np.ndarray:
        a, b = np.asarray(self.a), np.asarray(self.b)
        ab = b - a
        t = np.clip(((p - a) @ ab) / max(float(ab @ ab), 1e-12), 0.0, 1.0)
        return np.linalg.norm(p - (a + t[..., None] * ab), axis=-1) - self.radius

    def area(self) -> float:
        length = float(np.linalg.norm(np.subtract(self.b, self.a)))
        return 2 * np.pi * self.radius * length + 4 * np.pi * self.radius**2

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        a, b = np.asarray(self.a, dtype=np.float64), np.asarray(self.b, dtype=np.float64)
        ab = b - a
        length = float(np.linalg.norm(ab))
        side = 2 * np.pi * self.radius * length
        on_side = rng.random(n) < side / (side + 4 * np.pi * self.radius**2)
        d = _unit_sphere(n, rng)
        axis = ab / max(length, 1e-12)
        t = rng.random(n)
        # Side: directions perpendicular to the axis; caps: the hemisphere facing away from the segment.
        perp = d - (d @ axis)[:, None] * axis
        perp /= np.linalg.norm(perp, axis=1, keepdims=True).clip(min=1e-12)
        along = d @ axis
        base = np.where(on_side[:, None], a + t[:, None] * ab, np.where((along >= 0)[:, None], b, a))
        direction = np.where(on_side[:, None], perp, d)
        return base + direction * self.radius


@dataclass(frozen=True)
class Torus:
    """A ring (major radius, tube radius) around a vertical axis, or a horizontal one (``upright``)."""

    center: tuple[float, float, float]
    major: float
    minor: float
    upright: bool = False  # the ring stands in the x-z plane (a handle) instead of lying flat (a rim)

    def _local(self, p: np.ndarray) -> np.ndarray:
        d = p - np.asarray(self.center)
        return d[..., [0, 2, 1]] if self.upright else d

    def sdf(self, p: np.ndarray) -> np.ndarray:
        d = self._local(p)
        q = np.hypot(d[..., 0], d[..., 1]) - self.major
        return np.hypot(q, d[..., 2]) - self.minor

    def area(self) -> float:
        return 4 * np.pi**2 * self.major * self.minor

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        theta = rng.uniform(0, 2 * np.pi, 2 * n + 16)
        phi = rng.uniform(0, 2 * np.pi, 2 * n + 16)
        # Area element grows with the distance from the axis: rejection keeps the density uniform.
        keep = rng.random(len(phi)) * (self.major + self.minor) <= self.major + self.minor * np.cos(phi)
        theta, phi = theta[keep][:n], phi[keep][:n]
        rr = self.major + self.minor * np.cos(phi)
        local = np.stack([rr * np.cos(theta), rr * np.sin(theta), self.minor * np.sin(phi)], -1)
        if self.upright:
            local = local[:, [0, 2, 1]]
        return local + np.asarray(self.center)


@dataclass(frozen=True)
class Tilted:
    """A box, cylinder or cone turned about a pivot: reclined backs, slanted shades, lean-to boards."""

    part: Box | Cylinder | Cone
    pivot: tuple[float, float, float]
    yaw: float = 0.0
    pitch: float = 0.0
    roll: float = 0.0

    def _r(self) -> np.ndarray:
        return rotation_matrix(self.yaw, self.pitch, self.roll)

    def sdf(self, p: np.ndarray) -> np.ndarray:
        pv = np.asarray(self.pivot)
        return self.part.sdf((p - pv) @ self._r() + pv)

    def area(self) -> float:
        return float(self.part.area())

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        pv = np.asarray(self.pivot)
        return (self.part.sample(n, rng) - pv) @ self._r().T + pv
