"""The point cloud every reader returns, and where its points lie in the file that held them."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

LABELS = ("instance", "score", "part", "part_score")  # per-point fields kept beside points and colours


@dataclass(frozen=True)
class Placement:
    """How the engine's coordinates (metres, z up) map back onto the file's.

    A scan in millimetres or with y up is converted when read (`frame.py`); results are written
    back in the file's own units and axes so that they overlay the user's scan.
    """

    scale: float = 1.0  # file units per metre: 1 (metres) or 1000 (millimetres)
    up: str = "z"  # the file's up axis: "z" or "y" (y up is turned to z up by +90 degrees about x)
    note: str = ""  # one line: what was assumed about units and up axis, and why
    brief: str = ""  # the same in a few words, for a status line: "millimetres, y up (detected)"


@dataclass(frozen=True)
class PointCloud:
    """Points (N, 3) float32 with optional colours (uint8), normals, instance ids (int32) and scores (float32).

    ``origin`` is where the points' (0, 0, 0) lies in the file's coordinates. It is not zero for
    georeferenced scans (UTM metres run to millions, where float32 keeps only half a metre): such
    a cloud is read relative to a whole-metre corner of its box and written back at its place.
    """

    points: np.ndarray
    colors: np.ndarray | None = None
    instance: np.ndarray | None = None
    score: np.ndarray | None = None
    part: np.ndarray | None = None  # a result's nested object per point (int32, 0 = none; `nested.py`)
    part_score: np.ndarray | None = None  # its confidence (float32)
    dropped: int = 0  # non-finite points removed when reading
    origin: tuple[float, float, float] = (0.0, 0.0, 0.0)
    normals: np.ndarray | None = None  # (N, 3) float32 unit normals, when the file has them
    placement: Placement = Placement()
    sampled_from: int = 0  # triangles of the mesh whose surface these points were sampled from (0: a point file)

    def __len__(self) -> int:
        return len(self.points)

    def without_labels(self) -> "PointCloud":
        """The same cloud with no instance ids or scores: what a segmentation method may see."""
        return replace(self, instance=None, score=None, part=None, part_score=None)

    def subset(self, index: np.ndarray) -> "PointCloud":
        pick = lambda a: None if a is None else a[index]  # noqa: E731
        return replace(self, points=self.points[index], colors=pick(self.colors), instance=pick(self.instance), score=pick(self.score),
                       part=pick(self.part), part_score=pick(self.part_score), normals=pick(self.normals))

    def file_points(self) -> np.ndarray:
        """The points in the file's coordinates: float64 when the cloud was moved, scaled or turned."""
        p = self.placement
        if not any(self.origin) and p.scale == 1.0 and p.up == "z":
            return self.points
        return from_engine_axes(self.points.astype(np.float64), p.up) * p.scale + np.asarray(self.origin)

    def file_normals(self) -> np.ndarray | None:
        return None if self.normals is None else from_engine_axes(self.normals, self.placement.up)


def to_engine_axes(values: np.ndarray, up: str) -> np.ndarray:
    """Turn y-up vectors to z-up: +90 degrees about x, (x, y, z) -> (x, -z, y); a rotation, so no mirror image."""
    if up == "z":
        return values
    return np.stack([values[:, 0], -values[:, 2], values[:, 1]], axis=1)


def from_engine_axes(values: np.ndarray, up: str) -> np.ndarray:
    """The inverse of `to_engine_axes`: (x, y, z) -> (x, z, -y)."""
    if up == "z":
        return values
    return np.stack([values[:, 0], values[:, 2], -values[:, 1]], axis=1)
