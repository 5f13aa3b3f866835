"""Plane geometry on NumPy arrays: polylines with arc length, oriented boxes, overlap tests.

Hot loops (agents' leaders, PDM proposal scoring) call these on whole arrays at once, so every
function is vectorised; shapely is used where exact polygon work matters (see ``drivable.py``).
"""
from __future__ import annotations

import numpy as np


def wrap_angle(a: np.ndarray | float) -> np.ndarray | float:
    """Angle(s) in (-pi, pi]."""
    return (np.asarray(a) + np.pi) % (2 * np.pi) - np.pi


def rotation(theta: float) -> np.ndarray:
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])


def to_local(points: np.ndarray, origin: np.ndarray, theta: float) -> np.ndarray:
    """World points (..., 2) into the frame at ``origin`` with x along ``theta``."""
    c, s = np.cos(theta), np.sin(theta)
    d = np.asarray(points, dtype=float) - origin
    return np.stack([c * d[..., 0] + s * d[..., 1], -s * d[..., 0] + c * d[..., 1]], axis=-1)


def to_world(points: np.ndarray, origin: np.ndarray, theta: float) -> np.ndarray:
    c, s = np.cos(theta), np.sin(theta)
    p = np.asarray(points, dtype=float)
    return np.stack([c * p[..., 0] - s * p[..., 1], s * p[..., 0] + c * p[..., 1]], axis=-1) + origin


def box_corners(x, y, heading, length, width) -> np.ndarray:
    """Corners (..., 4, 2) of oriented boxes: front-left, front-right, rear-right, rear-left."""
    x, y, heading, length, width = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x, y, heading, length, width)))
    c, s = np.cos(heading), np.sin(heading)
    hl, hw = length / 2.0, width / 2.0
    lon = np.stack([hl, hl, -hl, -hl], axis=-1)
    lat = np.stack([hw, -hw, -hw, hw], axis=-1)
    cx = x[..., None] + c[..., None] * lon - s[..., None] * lat
    cy = y[..., None] + s[..., None] * lon + c[..., None] * lat
    return np.stack([cx, cy], axis=-1)


CIRCLE_MARGIN = 1e-3  # metres: circles this close still go to the exact test (rounding never decides)


def boxes_overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """True where convex quads a, b (..., 4, 2) (broadcast) overlap. Most pairs a planner or the
    metrics ask about are far apart: pairs whose bounding circles are apart are answered by that,
    the separating-axis test runs on the rest (the same answers, several times faster)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ca, cb = a.mean(axis=-2), b.mean(axis=-2)
    ra = np.sqrt(((a - ca[..., None, :]) ** 2).sum(-1)).max(-1)
    rb = np.sqrt(((b - cb[..., None, :]) ** 2).sum(-1)).max(-1)
    near = ((ca - cb) ** 2).sum(-1) <= (ra + rb + CIRCLE_MARGIN) ** 2
    if near.all():
        return separating_axis_overlap(a, b)
    out = np.zeros(near.shape, dtype=bool)
    if near.any():
        a, b = np.broadcast_arrays(a, b)
        index = np.nonzero(near)
        out[index] = separating_axis_overlap(a[index], b[index])
    return out


def separating_axis_overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Separating-axis test for convex quads a, b (..., 4, 2) (broadcast): True where they overlap."""
    a, b = np.broadcast_arrays(a, b)
    axes = np.concatenate([a[..., 1:3, :] - a[..., 0:2, :], b[..., 1:3, :] - b[..., 0:2, :]], axis=-2)  # (...,4,2)
    pa = np.einsum("...kd,...jd->...kj", axes, a)
    pb = np.einsum("...kd,...jd->...kj", axes, b)
    separated = (pa.max(-1) < pb.min(-1)) | (pb.max(-1) < pa.min(-1))
    return ~separated.any(-1)


class Polyline:
    """A polyline with cumulative arc length: projection, interpolation and resampling."""

    def __init__(self, points: np.ndarray) -> None:
        pts = np.asarray(points, dtype=float).reshape(-1, 2)
        keep = np.ones(len(pts), dtype=bool)
        if len(pts) > 1:
            keep[1:] = np.linalg.norm(np.diff(pts, axis=0), axis=1) > 1e-6
        pts = pts[keep]
        if len(pts) < 2:
            raise ValueError("a polyline needs two distinct points")
        self.points = pts
        seg = np.diff(pts, axis=0)
        self.seg_len = np.linalg.norm(seg, axis=1)
        self.seg_dir = seg / self.seg_len[:, None]
        self.s = np.concatenate([[0.0], np.cumsum(self.seg_len)])
        self.length = float(self.s[-1])
        self.seg_heading = np.arctan2(self.seg_dir[:, 1], self.seg_dir[:, 0])

    def project(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Arc length and signed lateral offset (left positive) of points (..., 2).

        Beyond the ends, s extends linearly (negative before the start, > length after the end).
        """
        p = np.asarray(xy, dtype=float)
        shape = p.shape[:-1]
        p = p.reshape(-1, 2)
        a = self.points[:-1]
        rel = p[:, None, :] - a[None, :, :]
        t = np.einsum("mnd,nd->mn", rel, self.seg_dir)
        tc = np.clip(t, 0.0, self.seg_len[None, :])
        closest = a[None] + tc[..., None] * self.seg_dir[None]
        dist2 = ((p[:, None, :] - closest) ** 2).sum(-1)
        idx = np.argmin(dist2, axis=1)
        rows = np.arange(len(p))
        t_best = t[rows, idx]
        # Extrapolate along the first/last segment so that s is monotone beyond the ends.
        first, last = idx == 0, idx == len(self.seg_len) - 1
        t_use = np.where(first & (t_best < 0), t_best, np.where(last & (t_best > self.seg_len[idx]), t_best, np.clip(t_best, 0, self.seg_len[idx])))
        s = self.s[idx] + t_use
        r = rel[rows, idx]
        d = self.seg_dir[idx, 0] * r[:, 1] - self.seg_dir[idx, 1] * r[:, 0]
        return s.reshape(shape), d.reshape(shape)

    def interpolate(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Points (..., 2) and headings at arc lengths s (extrapolated linearly beyond the ends)."""
        s = np.asarray(s, dtype=float)
        idx = np.clip(np.searchsorted(self.s, s, side="right") - 1, 0, len(self.seg_len) - 1)
        t = s - self.s[idx]
        xy = self.points[idx] + t[..., None] * self.seg_dir[idx]
        return xy, self.seg_heading[idx]

    def heading_at(self, s: np.ndarray) -> np.ndarray:
        return self.interpolate(s)[1]

    def curvature_at(self, s: np.ndarray, ds: float = 2.0) -> np.ndarray:
        h0 = self.heading_at(np.asarray(s) - ds)
        h1 = self.heading_at(np.asarray(s) + ds)
        return wrap_angle(h1 - h0) / (2 * ds)

    def resample(self, step: float) -> np.ndarray:
        n = max(2, int(np.ceil(self.length / step)) + 1)
        return self.interpolate(np.linspace(0.0, self.length, n))[0]

    def offset(self, d: float) -> np.ndarray:
        """The polyline shifted sideways by d (left positive), vertex by vertex (miter-free)."""
        normals = np.zeros_like(self.points)
        n_seg = np.stack([-self.seg_dir[:, 1], self.seg_dir[:, 0]], axis=1)
        normals[:-1] += n_seg
        normals[1:] += n_seg
        normals /= np.linalg.norm(normals, axis=1, keepdims=True)
        return self.points + d * normals


def polyline_length(points: np.ndarray) -> float:
    p = np.asarray(points, dtype=float)
    return float(np.linalg.norm(np.diff(p, axis=0), axis=1).sum()) if len(p) > 1 else 0.0
