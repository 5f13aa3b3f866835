"""Point clouds in and out: PLY (points or a mesh, sampled), PCD, XYZ, PTS and NPZ.

Readers are NumPy's, a chunk at a time with progress and cancel, behind header checks and budgets
that refuse a file before its points are allocated; Open3D reads meshes and the rare layouts NumPy
does not, with its stderr caught. `frame.py` detects or takes units and up axis and converts to
the engine's metres, z up; `write_cloud` writes back in the file's own coordinates.
"""
from __future__ import annotations

from .cloud import Placement, PointCloud
from .frame import UNIT_LABELS, UNITS, UP_AXES, UP_LABELS, InputFrame
from .read import MAX_BYTES, MAX_POINTS, SUFFIXES, read_cloud
from .write import write_cloud

__all__ = ["MAX_BYTES", "MAX_POINTS", "SUFFIXES", "UNITS", "UNIT_LABELS", "UP_AXES", "UP_LABELS", "InputFrame", "Placement",
           "PointCloud", "read_cloud", "write_cloud"]
