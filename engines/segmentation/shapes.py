"""Shapes made of boxes, cylinders and cones with exact signed distances (NumPy).

A `Shape` is a union of axis-aligned primitives in its own canonical frame (z up, standing on
z = 0, centred in x and y). The union's distance is the minimum of the parts' distances: exact
outside, a bound inside, which is what GrabS's SDF targets need (the decoder learns |SDF| near
the surface). Surfaces are sampled per part and the samples buried inside other parts dropped.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Box:
    """Axis-aligned box: centre and half extents."""

    center: tuple[float, float, float]
    half: tuple[float, float, float]

    def sdf(self, p: np.ndarray) -> np.ndarray:
        q = np.abs(p - np.asarray(self.center)) - np.asarray(self.half)
        outside = np.linalg.norm(np.maximum(q, 0.0), axis=-1)
        inside = np.minimum(q.max(axis=-1), 0.0)
        return outside + inside

    def area(self) -> float:
        hx, hy, hz = self.half
        return 8.0 * (hx * hy + hy * hz + hx * hz)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        hx, hy, hz = self.half
        areas = np.array([hy * hz, hy * hz, hx * hz, hx * hz, hx * hy, hx * hy])
        face = rng.choice(6, size=n, p=areas / areas.sum())
        uv = rng.uniform(-1.0, 1.0, size=(n, 3))
        axis = face // 2
        sign = np.where(face % 2 == 0, -1.0, 1.0)
        uv[np.arange(n), axis] = sign
        return uv * np.asarray(self.half) + np.asarray(self.center)


@dataclass(frozen=True)
class Cylinder:
    """Vertical capped cylinder: centre, radius, half height."""

    center: tuple[float, float, float]
    radius: float
    half_height: float

    def sdf(self, p: np.ndarray) -> np.ndarray:
        d = p - np.asarray(self.center)
        dx = np.hypot(d[..., 0], d[..., 1]) - self.radius
        dz = np.abs(d[..., 2]) - self.half_height
        outside = np.hypot(np.maximum(dx, 0.0), np.maximum(dz, 0.0))
        return outside + np.minimum(np.maximum(dx, dz), 0.0)

    def area(self) -> float:
        return 2 * np.pi * self.radius * (2 * self.half_height) + 2 * np.pi * self.radius**2

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        side = 2 * np.pi * self.radius * 2 * self.half_height
        cap = np.pi * self.radius**2
        part = rng.choice(3, size=n, p=np.array([side, cap, cap]) / (side + 2 * cap))
        theta = rng.uniform(0, 2 * np.pi, n)
        r = np.where(part == 0, self.radius, self.radius * np.sqrt(rng.uniform(0, 1, n)))
        z = np.where(part == 0, rng.uniform(-self.half_height, self.half_height, n), np.where(part == 1, -self.half_height, self.half_height))
        return np.stack([r * np.cos(theta), r * np.sin(theta), z], axis=-1) + np.asarray(self.center)


@dataclass(frozen=True)
class Cone:
    """Vertical capped cone (frustum): centre, bottom and top radius, half height."""

    center: tuple[float, float, float]
    r_bottom: float
    r_top: float
    half_height: float

    def sdf(self, p: np.ndarray) -> np.ndarray:
        d = p - np.asarray(self.center)
        qx = np.hypot(d[..., 0], d[..., 1])
        qy = d[..., 2]
        h, r1, r2 = self.half_height, self.r_bottom, self.r_top
        k1 = np.array([r2, h])
        k2 = np.array([r2 - r1, 2.0 * h])
        ca_x = qx - np.minimum(qx, np.where(qy < 0.0, r1, r2))
        ca_y = np.abs(qy) - h
        q = np.stack([qx, qy], axis=-1)
        t = np.clip(((k1 - q) @ k2) / float(k2 @ k2), 0.0, 1.0)
        cb = q - k1 + t[..., None] * k2
        sign = np.where((cb[..., 0] < 0.0) & (ca_y < 0.0), -1.0, 1.0)
        return sign * np.sqrt(np.minimum(ca_x**2 + ca_y**2, (cb**2).sum(-1)))

    def area(self) -> float:
        slant = np.hypot(self.r_bottom - self.r_top, 2 * self.half_height)
        return np.pi * (self.r_bottom + self.r_top) * slant + np.pi * (self.r_bottom**2 + self.r_top**2)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        h = self.half_height
        slant = np.hypot(self.r_bottom - self.r_top, 2 * h)
        lateral = np.pi * (self.r_bottom + self.r_top) * slant
        areas = np.array([lateral, np.pi * self.r_bottom**2, np.pi * self.r_top**2])
        part = rng.choice(3, size=n, p=areas / areas.sum())
        theta = rng.uniform(0, 2 * np.pi, n)
        # Lateral: pick the height so that density is uniform over the frustum's side.
        u = rng.uniform(0, 1, n)
        rb, rt = self.r_bottom, self.r_top
        if abs(rb - rt) < 1e-9:
            s = u
        else:
            s = (np.sqrt(rb**2 + u * (rt**2 - rb**2)) - rb) / (rt - rb)
        r_lat = rb + s * (rt - rb)
        z_lat = -h + s * 2 * h
        r_cap = np.sqrt(rng.uniform(0, 1, n))
        r = np.where(part == 0, r_lat, np.where(part == 1, rb * r_cap, rt * r_cap))
        z = np.where(part == 0, z_lat, np.where(part == 1, -h, h))
        return np.stack([r * np.cos(theta), r * np.sin(theta), z], axis=-1) + np.asarray(self.center)


Primitive = Box | Cylinder | Cone


@dataclass(frozen=True)
class Shape:
    """A union of primitives in its canonical frame, with its category and yaw symmetry order.

    ``symmetry`` is how many yaw rotations map the shape onto itself (1: none, 2, 4; 0: any).
    """

    category: str
    parts: tuple[Primitive, ...]
    symmetry: int = 1

    def sdf(self, p: np.ndarray) -> np.ndarray:
        p = np.asarray(p, dtype=np.float64)
        return np.min(np.stack([part.sdf(p) for part in self.parts]), axis=0)

    def area(self) -> float:
        return float(sum(part.area() for part in self.parts))

    def bounds(self, n: int = 4000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        pts = self.sample_surface(n, np.random.default_rng(seed))
        return pts.min(0), pts.max(0)

    def sample_surface(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """About ``n`` points spread evenly over the union's outer surface."""
        areas = np.array([part.area() for part in self.parts])
        counts = rng.multinomial(int(n * 1.4) + 8, areas / areas.sum())
        chunks = [part.sample(int(c), rng) for part, c in zip(self.parts, counts) if c > 0]
        pts = np.concatenate(chunks)
        keep = self.sdf(pts) > -1e-6  # drop samples buried inside another part
        pts = pts[keep]
        if len(pts) > n:
            pts = pts[rng.choice(len(pts), n, replace=False)]
        return pts


@dataclass(frozen=True)
class Pose:
    """Where a shape stands: yaw about z, small pitch/roll (radians) and a translation (metres)."""

    yaw: float = 0.0
    pitch: float = 0.0
    roll: float = 0.0
    translation: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def rotation(self) -> np.ndarray:
        return rotation_matrix(self.yaw, self.pitch, self.roll)

    def to_world(self, p: np.ndarray) -> np.ndarray:
        return p @ self.rotation().T + np.asarray(self.translation)

    def to_local(self, p: np.ndarray) -> np.ndarray:
        return (p - np.asarray(self.translation)) @ self.rotation()


def rotation_matrix(yaw: float, pitch: float = 0.0, roll: float = 0.0) -> np.ndarray:
    """R = Rz(yaw) @ Ry(pitch) @ Rx(roll): yaw about the vertical, then the small tilts."""
    cz, sz = np.cos(yaw), np.sin(yaw)
    cy, sy = np.cos(pitch), np.sin(pitch)
    cx, sx = np.cos(roll), np.sin(roll)
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    return rz @ ry @ rx


def posed_sdf(shape: Shape, pose: Pose, p: np.ndarray) -> np.ndarray:
    """Signed distance of a posed shape (rotations and translations keep distances exact)."""
    return shape.sdf(pose.to_local(np.asarray(p, dtype=np.float64)))
