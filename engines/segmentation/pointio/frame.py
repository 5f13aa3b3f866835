"""Units and up axis: a scan in millimetres or with y up, detected or set, turned into the engine's
metres and z up, with one line saying what was assumed.

The vocabulary (`UNITS`, `UP_AXES`, their labels) is shared by the CLI's ``--units`` / ``--up`` and
the panel's Input tab. Detection is a guess a user can overrule, so the note always says which it was:
- millimetres when the scan is implausibly large for metres (over ``MM_ABOVE`` across) yet, divided by
  1000, the size of a room or a building, and not flat like a terrain survey;
- y up when the largest plane square to an axis is square to y rather than z: a room's floor is its
  largest horizontal plane (walls are lower than rooms are wide, and furniture hides less of them
  than of the floor only when the room is very narrow).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engines.core import EngineError
from engines.core.imports import open3d

from .cloud import Placement, PointCloud, to_engine_axes

UNITS: tuple[str, ...] = ("auto", "m", "mm")
UP_AXES: tuple[str, ...] = ("auto", "z", "y")
UNIT_LABELS = {"auto": "Detect", "m": "Metres", "mm": "Millimetres"}
UP_LABELS = {"auto": "Detect", "z": "z up", "y": "y up"}
SCALES = {"m": 1.0, "mm": 1000.0}
_WORDS = {"m": "metres", "mm": "millimetres"}

MM_ABOVE = 100.0  # file units across: a room in metres is never this large
ROOM_M = (0.2, 60.0)  # m across, as millimetres: an object to a large hall
FLAT_BELOW = 0.02  # thinnest / widest extent below this: a terrain survey, not a room
PLANE_SAMPLE = 20_000
PLANE_DISTANCE = 0.03  # m, RANSAC inlier distance for the up-axis planes
PLANE_TILT_DEG = 12.0
Y_MARGIN = 1.2  # the y plane must beat the z plane by this factor: z up unless the scan clearly says y


@dataclass(frozen=True)
class InputFrame:
    """What the user said about the file: each of units and up axis set, or "auto" to detect."""

    units: str = "auto"
    up: str = "auto"

    def __post_init__(self) -> None:
        if self.units not in UNITS:
            raise EngineError(f"units must be one of {', '.join(UNITS)}, not {self.units!r}")
        if self.up not in UP_AXES:
            raise EngineError(f"up must be one of {', '.join(UP_AXES)}, not {self.up!r}")


def detect_units(points: np.ndarray) -> tuple[str, str]:
    """"m" or "mm" and why, from the extent of the middle 99 % of the points (stray returns ignored)."""
    extent = _extent(points)
    widest = float(extent.max())
    as_mm = widest / 1000.0
    if widest > MM_ABOVE and ROOM_M[0] <= as_mm <= ROOM_M[1] and extent.min() >= FLAT_BELOW * widest:
        return "mm", f"{widest:,.0f} units across, {as_mm:.1f} m as millimetres"
    return "m", f"{widest:,.1f} units across"


def detect_up(points: np.ndarray, seed: int = 0) -> tuple[str, str]:
    """"z" or "y" and why: which axis the largest axis-square plane (the floor) is square to. ``points`` in metres."""
    o3d = open3d()
    rng = np.random.default_rng(seed)
    pts = points if len(points) <= PLANE_SAMPLE else points[rng.choice(len(points), PLANE_SAMPLE, replace=False)]
    best = {"y": 0, "z": 0}
    cos_tol = np.cos(np.radians(PLANE_TILT_DEG))
    threads = o3d.utility.get_max_threads()
    o3d.utility.set_max_threads(1)  # seeded RANSAC repeats only on one thread (see planes.py)
    try:
        o3d.utility.random.seed(seed)
        work = np.asarray(pts, dtype=np.float64)
        for _ in range(5):
            if len(work) < max(50, 0.03 * len(pts)):
                break
            model, inliers = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(work)).segment_plane(PLANE_DISTANCE, 3, 400)
            normal = np.abs(np.asarray(model[:3])) / (np.linalg.norm(model[:3]) + 1e-12)
            for axis, k in (("y", 1), ("z", 2)):
                if normal[k] >= cos_tol:
                    best[axis] = max(best[axis], len(inliers))
            work = np.delete(work, np.asarray(inliers, dtype=np.int64), axis=0)
    finally:
        o3d.utility.set_max_threads(threads)
    share = {k: v / max(1, len(pts)) for k, v in best.items()}
    if best["y"] > Y_MARGIN * best["z"]:
        return "y", f"the largest level plane, {share['y']:.0%} of the points, is square to y"
    if best["z"]:
        return "z", f"the largest level plane, {share['z']:.0%} of the points, is square to z"
    return "z", "no floor plane found; z assumed"


def placed(cloud: PointCloud, frame: InputFrame, units_why: tuple[str, str] | None = None) -> PointCloud:
    """The cloud in metres and z up, its `Placement` saying how to go back and what was assumed.

    ``units_why``: units already decided (a mesh decides them before sampling its surface)."""
    units, units_note = units_why or ((frame.units, "set") if frame.units != "auto" else detect_units(cloud.points))
    scale = SCALES[units]
    points = cloud.points / np.float32(scale) if scale != 1.0 else cloud.points
    up, up_note = (frame.up, "set") if frame.up != "auto" else detect_up(points)
    how = lambda note: "set" if note == "set" else f"detected: {note}"  # noqa: E731
    note = f"read as {_WORDS[units]} ({how(units_note)}), {up} up ({how(up_note)})"
    if units != "m" or up != "z":
        note += "; converted to metres, z up"
    normals = None if cloud.normals is None else to_engine_axes(cloud.normals, up).astype(np.float32)
    return replace(cloud, points=np.ascontiguousarray(to_engine_axes(points, up), dtype=np.float32), normals=normals,
                   placement=Placement(scale, up, note, _brief(units, units_note == "set", up, up_note == "set")))


def _brief(units: str, units_set: bool, up: str, up_set: bool) -> str:
    if units_set == up_set:
        return f"{_WORDS[units]}, {up} up ({'set' if units_set else 'detected'})"
    return f"{_WORDS[units]} ({'set' if units_set else 'detected'}), {up} up ({'set' if up_set else 'detected'})"


def mesh_units(vertices: np.ndarray, frame: InputFrame) -> tuple[str, str]:
    """A mesh's units, decided on its vertices before its surface is sampled (the point count follows the area)."""
    if frame.units != "auto":
        return frame.units, "set"
    if not len(vertices):
        raise EngineError("the mesh has no vertices")
    return detect_units(vertices)


def _extent(points: np.ndarray) -> np.ndarray:
    sample = points if len(points) <= 200_000 else points[:: len(points) // 200_000]
    lo, hi = np.percentile(sample, [0.5, 99.5], axis=0)
    return np.maximum(hi - lo, 0.0)
