"""Triangle meshes for the evaluation generator: boxes, frusta, ellipsoids, moved and joined.

The evaluation rooms are scanned by casting rays at meshes (`scanner.py`), so their objects are
triangle meshes, not signed-distance shapes: nothing here is shared with the training
generator's `shapes.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_BOX_FACES = np.array(
    [[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4], [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]]
)


@dataclass(frozen=True)
class Mesh:
    """Vertices (V, 3) and triangles (T, 3); one colour (RGB 0-255) for all of it."""

    vertices: np.ndarray
    triangles: np.ndarray
    color: tuple[int, int, int] = (180, 180, 180)

    def moved(self, rotation: np.ndarray, translation: np.ndarray | tuple[float, float, float]) -> "Mesh":
        return Mesh(self.vertices @ np.asarray(rotation).T + np.asarray(translation, dtype=np.float64), self.triangles, self.color)

    def triangle_areas(self) -> np.ndarray:
        a, b, c = (self.vertices[self.triangles[:, k]] for k in range(3))
        return 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` points spread evenly over the surface (area-weighted triangles, uniform inside each)."""
        areas = self.triangle_areas()
        tri = rng.choice(len(areas), n, p=areas / areas.sum())
        u, v = rng.random(n), rng.random(n)
        flip = u + v > 1
        u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
        a, b, c = (self.vertices[self.triangles[tri, k]] for k in range(3))
        return a + u[:, None] * (b - a) + v[:, None] * (c - a)


def join(meshes: list[Mesh]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All meshes as one: vertices, triangles and the colour of each triangle."""
    verts, tris, colors, offset = [], [], [], 0
    for m in meshes:
        verts.append(m.vertices)
        tris.append(m.triangles + offset)
        colors.append(np.tile(m.color, (len(m.triangles), 1)))
        offset += len(m.vertices)
    return np.concatenate(verts), np.concatenate(tris), np.concatenate(colors)


def yaw_matrix(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def tilt_matrix(angle: float, axis: int) -> np.ndarray:
    """Rotation by ``angle`` about the x (0) or y (1) axis."""
    c, s = np.cos(angle), np.sin(angle)
    if axis == 0:
        return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def box(lo: tuple[float, float, float], hi: tuple[float, float, float], color: tuple[int, int, int]) -> Mesh:
    """Axis-aligned box from corner ``lo`` to corner ``hi``."""
    lo_, hi_ = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    corners = np.array([[(hi_ if (k >> axis) & 1 else lo_)[axis] for axis in range(3)] for k in range(8)])
    return Mesh(corners, _BOX_FACES.copy(), color)


def frustum(x: float, y: float, z0: float, z1: float, r0: float, r1: float, color: tuple[int, int, int], segments: int = 16) -> Mesh:
    """Vertical capped frustum (a cylinder when ``r0 == r1``) from radius ``r0`` at ``z0`` to ``r1`` at ``z1``."""
    a = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    ring = np.column_stack([np.cos(a), np.sin(a)])
    bottom = np.column_stack([x + r0 * ring[:, 0], y + r0 * ring[:, 1], np.full(segments, z0)])
    top = np.column_stack([x + r1 * ring[:, 0], y + r1 * ring[:, 1], np.full(segments, z1)])
    verts = np.concatenate([bottom, top, [[x, y, z0], [x, y, z1]]])
    k = np.arange(segments)
    k1 = (k + 1) % segments
    side = np.concatenate([np.column_stack([k, k1, segments + k]), np.column_stack([k1, segments + k1, segments + k])])
    caps = np.concatenate(
        [
            np.column_stack([np.full(segments, 2 * segments), k1, k]),
            np.column_stack([np.full(segments, 2 * segments + 1), segments + k, segments + k1]),
        ]
    )
    return Mesh(verts, np.concatenate([side, caps]), color)


def ellipsoid(
    center: tuple[float, float, float], radii: tuple[float, float, float], color: tuple[int, int, int], rings: int = 8, segments: int = 12
) -> Mesh:
    """UV ellipsoid (pillows, foliage, casters)."""
    theta = np.linspace(0, np.pi, rings + 1)[1:-1]
    phi = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    unit = np.column_stack([(np.sin(t) * np.cos(p)).ravel(), (np.sin(t) * np.sin(p)).ravel(), np.cos(t).ravel()])
    verts = np.concatenate([unit, [[0, 0, 1], [0, 0, -1]]]) * np.asarray(radii) + np.asarray(center)
    tris = []
    for r in range(rings - 2):
        for s in range(segments):
            a, b = r * segments + s, r * segments + (s + 1) % segments
            tris += [[a, a + segments, b], [b, a + segments, b + segments]]
    north, south, last = len(unit), len(unit) + 1, (rings - 2) * segments
    for s in range(segments):
        tris += [[north, s, (s + 1) % segments], [south, last + (s + 1) % segments, last + s]]
    return Mesh(verts, np.asarray(tris), color)
