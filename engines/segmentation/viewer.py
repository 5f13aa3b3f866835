"""Everything the 3-D viewer shows, computed here (Qt-free): decimation, colours, picking, cylinders.

The panel only draws these arrays. Colours are RGBA floats in [0, 1].
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engines.core import CancelToken, NEVER_CANCELLED, ProgressFn, no_progress, scaled

from .metrics import APResult, evaluate
from .api import SegmentationResult
from .pointio import InputFrame, PointCloud, read_cloud

MAX_DRAWN = 200_000
COLOR_MODES: tuple[str, ...] = ("instance", "ground truth", "score", "prior residual", "rgb", "errors")
GREY = np.array([0.62, 0.62, 0.62, 1.0], np.float32)
TP_COLOR = np.array([0.20, 0.72, 0.30, 1.0], np.float32)
FP_COLOR = np.array([0.90, 0.20, 0.15, 1.0], np.float32)
FN_COLOR = np.array([0.20, 0.40, 0.95, 1.0], np.float32)


def decimate(n: int, max_points: int = MAX_DRAWN, seed: int = 0) -> np.ndarray:
    """Indices of at most ``max_points`` points (a fixed random subset), sorted."""
    if n <= max_points:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, max_points, replace=False))


def palette(k: int) -> np.ndarray:
    """A distinct, stable colour for instance ``k`` (golden-ratio hues)."""
    import colorsys

    h = (k * 0.618033988749895) % 1.0
    s = 0.65 + 0.3 * ((k * 7) % 3) / 2
    v = 0.95 - 0.2 * ((k * 5) % 2)
    return np.array([*colorsys.hsv_to_rgb(h, min(s, 1.0), v), 1.0], np.float32)


def instance_colors(instance: np.ndarray) -> np.ndarray:
    out = np.tile(GREY, (len(instance), 1))
    for k in np.unique(instance):
        if k > 0:
            out[instance == k] = palette(int(k))
    return out


def scalar_colors(values: np.ndarray, lo: float | None = None, hi: float | None = None) -> np.ndarray:
    """Viridis-like colours for a scalar (NaN grey)."""
    stops = np.array([[0.267, 0.005, 0.329], [0.229, 0.322, 0.546], [0.128, 0.567, 0.551], [0.369, 0.789, 0.383], [0.993, 0.906, 0.144]])
    v = np.asarray(values, np.float64)
    finite = np.isfinite(v)
    out = np.tile(GREY, (len(v), 1))
    if not finite.any():
        return out
    lo = float(np.nanmin(v[finite])) if lo is None else lo
    hi = float(np.nanmax(v[finite])) if hi is None else hi
    t = np.clip((v[finite] - lo) / max(hi - lo, 1e-9), 0, 1) * (len(stops) - 1)
    i = np.minimum(t.astype(int), len(stops) - 2)
    f = (t - i)[:, None]
    out[finite, :3] = stops[i] * (1 - f) + stops[i + 1] * f
    return out


def rgb_colors(colors: np.ndarray | None, n: int) -> np.ndarray:
    if colors is None:
        return np.tile(GREY, (n, 1))
    return np.column_stack([colors.astype(np.float32) / 255.0, np.ones(n, np.float32)])


def error_labels(pred: np.ndarray, gt: np.ndarray, part: np.ndarray | None = None, threshold: float = 0.5) -> np.ndarray:
    """Per point: 0 nothing, 1 true positive, 2 false positive, 3 false negative (IoU > threshold matching).

    The masks are the segments and, when given, the nested parts inside them (``part``: a second
    per-point label, 0 outside a part), overlapping as the AP counts them: each mask is matched to
    one object not matched yet, segments before parts (parts rank after every segment, as in the
    AP), so a part only counts for an object its segment did not take. A point that a matched
    mask of its own object covers is a true positive, any other predicted point a false positive,
    and an object point that no matched mask covers a false negative.
    """
    sizes = {int(g): int(n) for g, n in zip(*np.unique(gt[gt > 0], return_counts=True))}
    used: set[int] = set()
    covered = np.zeros(len(pred), bool)
    for labels in (pred, part):
        if labels is None:
            continue
        pairs = []
        for p in np.unique(labels[labels > 0]):
            mask = labels == p
            objects, inter = np.unique(gt[mask], return_counts=True)
            for g, i in zip(objects, inter):
                if g > 0:
                    iou = i / (mask.sum() + sizes[int(g)] - i)
                    if iou > threshold:
                        pairs.append((float(iou), int(p), int(g)))
        taken: set[int] = set()
        for _, p, g in sorted(pairs, reverse=True):
            if p not in taken and g not in used:
                taken.add(p)
                used.add(g)
                covered |= (labels == p) & (gt == g)
    predicted = pred > 0
    out = np.zeros(len(pred), np.int8)
    out[predicted] = 2
    out[covered] = 1
    out[(gt > 0) & ~covered & ~predicted] = 3
    return out


def error_colors(labels: np.ndarray) -> np.ndarray:
    table = np.stack([np.array([0.8, 0.8, 0.8, 1.0], np.float32), TP_COLOR, FP_COLOR, FN_COLOR])
    return table[labels]


@dataclass
class SceneView:
    """A loaded cloud and what the viewer needs to draw it."""

    path: str
    cloud: PointCloud = field(repr=False)
    drawn: np.ndarray = field(repr=False)  # indices of the drawn points
    positions: np.ndarray = field(repr=False)  # (M, 3) float32 drawn positions
    colors: dict[str, np.ndarray] = field(repr=False)  # colour mode -> (M, 4)
    center: tuple[float, float, float]
    extent: float
    has_gt: bool
    dropped: int
    grid: np.ndarray = field(repr=False)  # floor grid: line segments as pairs of points

    @property
    def points(self) -> int:
        return len(self.cloud)

    @property
    def note(self) -> str:
        """What was assumed about the file's units and up axis ('' for a cloud not read with a frame)."""
        return self.cloud.placement.note

    @property
    def brief(self) -> str:
        """`note` in a few words, for a status line."""
        return self.cloud.placement.brief


@dataclass
class ResultView:
    """A segmentation and the arrays to draw it (colours of the drawn points, per-segment table)."""

    result: SegmentationResult = field(repr=False)
    colors: dict[str, np.ndarray] = field(repr=False)
    drawn_instance: np.ndarray = field(repr=False)  # per drawn point, the innermost proposal: its nested part, else its segment
    metrics: APResult | None
    errors: dict[str, int]


def load_view(path: Path, max_drawn: int = MAX_DRAWN, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED,
              frame: InputFrame = InputFrame()) -> SceneView:
    """Read a cloud in metres, z up, and prepare its drawing (run in a worker: a large file takes seconds)."""
    cloud = read_cloud(path, frame=frame, progress=scaled(progress, 0.0, 0.6), cancel=cancel)
    cancel.raise_if_cancelled()
    return scene_view(cloud, str(path), max_drawn, progress)


def scene_view(cloud: PointCloud, path: str, max_drawn: int = MAX_DRAWN, progress: ProgressFn = no_progress) -> SceneView:
    progress(0.6, "preparing the view")
    drawn = decimate(len(cloud), max_drawn)
    pos = cloud.points[drawn].astype(np.float32)
    lo, hi = cloud.points.min(0), cloud.points.max(0)
    colors = {"rgb": rgb_colors(None if cloud.colors is None else cloud.colors[drawn], len(drawn))}
    if cloud.instance is not None:
        colors["ground truth"] = instance_colors(cloud.instance[drawn])
    colors["height"] = scalar_colors(pos[:, 2])
    extent = float(np.linalg.norm(hi - lo))
    progress(1.0, "loaded")
    return SceneView(path, cloud, drawn, pos, colors, tuple(float(v) for v in (lo + hi) / 2), extent,
                     cloud.instance is not None, cloud.dropped, grid_lines(pos, extent))


def result_view(scene: SceneView, result: SegmentationResult) -> ResultView:
    d = scene.drawn
    inst = result.instance[d]
    if result.part is not None:  # a point in a nested part is drawn (and picked) as that part
        inst = np.where(result.part[d] > 0, result.part[d], inst)
    colors = {
        "instance": instance_colors(inst),
        "score": scalar_colors(np.where(inst > 0, result.score[d], np.nan), 0.0, 1.0),
        "prior residual": scalar_colors(np.minimum(result.residual[d], 0.1), 0.0, 0.1),
    }
    metrics = None
    counts: dict[str, int] = {}
    if scene.cloud.instance is not None:
        gt = scene.cloud.instance
        metrics = evaluate([result.prediction(gt)])
        labels = error_labels(result.instance, gt, result.part)
        colors["errors"] = error_colors(labels[d])
        counts = {"true_positive": int((labels == 1).sum()), "false_positive": int((labels == 2).sum()), "false_negative": int((labels == 3).sum())}
    return ResultView(result, colors, inst, metrics, counts)


def visible(instance: np.ndarray, hidden: set[int]) -> np.ndarray:
    """Mask of drawn points whose segment is not hidden."""
    if not hidden:
        return np.ones(len(instance), bool)
    return ~np.isin(instance, np.fromiter(hidden, dtype=np.int64))


def pick(positions: np.ndarray, mvp: np.ndarray, width: int, height: int, x: float, y: float, radius: float = 8.0) -> int | None:
    """Index of the drawn point under the cursor: project to the screen, nearest within ``radius`` px, front-most.

    ``mvp`` is the 4x4 projection @ view matrix (column-vector convention), ``x, y`` widget pixels.
    """
    if len(positions) == 0:
        return None
    hom = np.column_stack([positions, np.ones(len(positions), np.float32)]) @ np.asarray(mvp, np.float64).T
    w = hom[:, 3]
    front = w > 1e-9
    ndc = hom[:, :3] / np.where(front, w, 1.0)[:, None]
    sx = (ndc[:, 0] + 1) * 0.5 * width
    sy = (1 - ndc[:, 1]) * 0.5 * height
    d2 = (sx - x) ** 2 + (sy - y) ** 2
    near = front & (d2 <= radius**2) & (np.abs(ndc[:, 2]) <= 1)
    if not near.any():
        return None
    cand = np.flatnonzero(near)
    # Front-most among the close ones (depth first, then pixel distance).
    depth = ndc[cand, 2]
    best = cand[np.lexsort((d2[cand], np.round(depth, 3)))][0]
    return int(best)


def cylinder_lines(x: float, y: float, r: float, z0: float, z1: float, segments: int = 48) -> np.ndarray:
    """Line segments (pairs of points) outlining a vertical cylinder: two rings and a few uprights."""
    a = np.linspace(0, 2 * np.pi, segments + 1)
    ring = np.column_stack([x + r * np.cos(a), y + r * np.sin(a)])
    lines = []
    for z in (z0, z1):
        pts = np.column_stack([ring, np.full(len(ring), z)])
        lines.append(np.stack([pts[:-1], pts[1:]], 1).reshape(-1, 3))
    for k in range(0, segments, segments // 8):
        lines.append(np.array([[ring[k, 0], ring[k, 1], z0], [ring[k, 0], ring[k, 1], z1]]))
    return np.concatenate(lines).astype(np.float32)


def grid_lines(positions: np.ndarray, extent: float, max_lines: int = 200) -> np.ndarray:
    """A floor grid under the points (line segment pairs), spaced at a round step.

    At most ``max_lines`` lines a side, so that far-off or huge coordinates still give a grid.
    """
    positions = np.asarray(positions, np.float64)
    positions = positions[np.isfinite(positions).all(axis=1)]
    if len(positions) == 0:
        return np.zeros((2, 3), np.float32)
    lo, hi = positions.min(0), positions.max(0)
    floor = float(np.quantile(positions[:, 2], 0.02))
    extent = extent if np.isfinite(extent) else float(np.linalg.norm(hi - lo))
    step = max(0.25, float(10 ** np.floor(np.log10(max(extent, 1e-3) / 4))))
    start = np.floor(lo[:2] / step) * step
    lines = np.minimum(np.floor((hi[:2] - start) / step) + 2, max_lines).astype(int)
    xs = start[0] + step * np.arange(lines[0])
    ys = start[1] + step * np.arange(lines[1])
    segs = [[(x, ys[0], floor), (x, ys[-1], floor)] for x in xs] + [[(xs[0], y, floor), (xs[-1], y, floor)] for y in ys]
    return np.asarray(segs, np.float32).reshape(-1, 3)


def camera_preset(name: str, center: tuple[float, float, float], extent: float) -> dict[str, float | tuple[float, float, float]]:
    """Camera (centre, distance, elevation, azimuth in degrees) for top / front / iso views of a box."""
    angles = {"top": (90.0, -90.0), "front": (5.0, -90.0), "iso": (35.0, -45.0)}
    if name not in angles:
        raise ValueError(f"unknown camera preset {name!r}")
    elev, azim = angles[name]
    return {"center": center, "distance": max(extent, 0.1) * 0.85, "elevation": elev, "azimuth": azim}


def fit_selection(positions: np.ndarray, mask: np.ndarray) -> tuple[tuple[float, float, float], float] | None:
    """Centre and size of the selected points (for 'fit selection')."""
    if not mask.any():
        return None
    p = positions[mask]
    lo, hi = p.min(0), p.max(0)
    return tuple(float(v) for v in (lo + hi) / 2), float(max(np.linalg.norm(hi - lo), 0.2))


def segment_rows(result: SegmentationResult) -> list[tuple[int, int, float, bool, int]]:
    """(id, points, score, confirmed, parent) per segment and nested part, for the segment list."""
    return [(s.id, s.points, s.score, s.confirmed, s.parent) for s in result.segments]
