"""What the panel and the CLI call to segment a point cloud: GrabS (plane removal, anchors, agent,
final masks) or the DBSCAN baseline.

The method sees points only: `segment` takes a `PointCloud` and drops any instance ids or
scores it carries before anything else runs, so ground truth can never leak into a result.
Large inputs are subsampled for the search and the labels carried back by nearest neighbour.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from engines.core import CancelToken, EngineError, NEVER_CANCELLED, ProgressFn, no_progress, scaled
from engines.core.imports import open3d

from .agent import AgentParams, Trajectory, enclosing_cylinder, run_agent
from .masks import DedupParams, deduplicate, drop_small_segments, grow_segments, labels_from_masks
from .merging import MergeParams, merge_parts
from .metrics import ScenePrediction
from .nested import NestedParams, nested_parts, ranked_below
from .neighbours import thinned
from .objectness import RewardParams, score_crops
from .planes import PlaneParams, farthest_point_anchors, reclaim_plane_points, remove_planes
from .pointio import PointCloud
from .ranking import RankParams, ranked_scores
from .unclaimed import UnclaimedParams, ranked_after, unclaimed_parts

# A scan denser than this is thinned before the search: the procedural rooms hold 20-40 points
# within 0.15 m of a point on average, a dense scan of a single chair thousands.
DENSITY_RADIUS = 0.15  # m, the mask link (RewardParams.component)
MAX_NEIGHBOURS = 100

# A stool's or lamp's base flush with the floor goes with the floor plane: the benchmark's small
# objects of 100-150 points keep 83-126 above it, so the search asks 80 and the finished segment 100.
SEARCH_SHARE = 0.8

METHODS: tuple[str, ...] = ("grabs", "dbscan")
VARIANTS: tuple[str, ...] = ("grabs", "grabs_ppo", "dbscan")  # what the panel and the benchmark offer


@dataclass(frozen=True)
class DbscanParams:
    eps: float = 0.1  # neighbourhood radius (m); 0.1 / 5 scored best on validation rooms (seeds 500-507)
    min_points: int = 5


@dataclass(frozen=True)
class SegmentParams:
    method: str = "grabs"
    seed: int = 0
    max_points: int = 60000  # larger clouds are subsampled for the search
    prior: str = ""  # checkpoint path; empty = the shipped prior
    policy: str = ""  # PPO policy checkpoint for agent.policy == "ppo"; empty = the shipped one
    planes: PlaneParams = PlaneParams()
    agent: AgentParams = AgentParams()
    reward: RewardParams = RewardParams()
    dedup: DedupParams = DedupParams()
    merge: MergeParams = MergeParams()
    rank: RankParams = RankParams()
    unclaimed: UnclaimedParams = UnclaimedParams()
    nested: NestedParams = NestedParams()
    dbscan: DbscanParams = DbscanParams()

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise EngineError(f"method must be one of {', '.join(METHODS)}")
        if self.max_points < 1000:
            raise EngineError("max_points must be at least 1000")


@dataclass(frozen=True)
class Segment:
    id: int
    points: int
    score: float
    bbox_min: tuple[float, float, float]
    bbox_max: tuple[float, float, float]
    centroid: tuple[float, float, float]
    confirmed: bool = True  # False: points no search claimed, or a nested part; ranked after every confirmed segment
    parent: int = 0  # a nested part's segment (`nested.py`: its points are that segment's too); 0 = none


@dataclass(frozen=True)
class Candidate:
    """A trajectory's final cylinder, kept so that new thresholds can re-score it without a new search."""

    trajectory: int
    x: float
    y: float
    radius: float
    second: bool = False  # from the second search, over the points no first-round mask holds


@dataclass(frozen=True)
class SegmentationResult:
    method: str
    instance: np.ndarray = field(repr=False)  # (N,) int32, 0 = no object
    score: np.ndarray = field(repr=False)  # (N,) float32
    residual: np.ndarray = field(repr=False)  # (N,) float32 prior |SDF| (NaN where not scored)
    segments: tuple[Segment, ...]
    trajectories: tuple[Trajectory, ...] = field(repr=False)
    candidates: tuple[Candidate, ...] = field(repr=False)
    anchors: np.ndarray = field(repr=False)
    floor_z: float = 0.0
    plane_points: int = 0
    processed_points: int = 0
    seconds: float = 0.0
    agent: str = ""  # who moved the cylinders: "search" or "ppo" (empty for DBSCAN)
    part: np.ndarray | None = field(default=None, repr=False)  # (N,) int32 nested part per point (`nested.py`), 0 = none
    part_score: np.ndarray | None = field(default=None, repr=False)  # (N,) float32 its confidence

    def prediction(self, gt: np.ndarray, confirmed_only: bool = False) -> ScenePrediction:
        """The masks AP judges against ground truth ``gt``: the segments and the nested proposals, or
        (``confirmed_only``) only the segments the prior confirmed, what GrabS itself found."""
        if not confirmed_only:
            return ScenePrediction.from_labels(gt, self.instance, self.score, self.part, self.part_score)
        unconfirmed = [s.id for s in self.segments if not s.confirmed and not s.parent]
        return ScenePrediction.from_labels(gt, np.where(np.isin(self.instance, unconfirmed), 0, self.instance), self.score)

    def summary(self) -> dict:
        """The JSON summary: method, timings and one entry per segment."""
        return {
            "method": self.method,
            "agent": self.agent,
            "points": int(len(self.instance)),
            "processed_points": self.processed_points,
            "plane_points": self.plane_points,
            "seconds": round(self.seconds, 3),
            "segments": [
                {
                    "id": s.id,
                    "points": s.points,
                    "score": round(s.score, 4),
                    "confirmed": s.confirmed,
                    "bbox": [list(s.bbox_min), list(s.bbox_max)],
                    "centroid": list(s.centroid),
                    **({"inside": s.parent} if s.parent else {}),
                }
                for s in self.segments
            ],
            "trajectories": len(self.trajectories),
            "found": sum(t.found for t in self.trajectories),
        }


def with_min_points(params: SegmentParams, points: int) -> SegmentParams:
    """The smallest segment kept, ``points`` (GrabS's and ScanNet's 100), counted once the floor and
    wall points are given back; the search, which sees an object without them, asks SEARCH_SHARE of it."""
    search = max(1, int(round(SEARCH_SHARE * points)))
    return replace(params, reward=replace(params.reward, min_mask_points=search), dedup=replace(params.dedup, min_points=search, final_points=points))


def with_thresholds(
    params: SegmentParams,
    mask: float | None = None,
    found: float | None = None,
    dedup_iou: float | None = None,
    min_points: int | None = None,
    join_coverage: float | None = None,
) -> SegmentParams:
    """The thresholds the panel's sliders and `segmentation run` set (None keeps a value); raises
    EngineError for impossible ones."""
    if mask is not None:
        params = replace(params, reward=replace(params.reward, mask_threshold=mask))
    if found is not None:
        params = replace(params, reward=replace(params.reward, found_threshold=found))
    if dedup_iou is not None:
        params = replace(params, dedup=replace(params.dedup, iou=dedup_iou))
    if join_coverage is not None:
        params = replace(params, merge=replace(params.merge, coverage=join_coverage))
    return params if min_points is None else with_min_points(params, min_points)


def method_params(params: SegmentParams, variant: str) -> SegmentParams:
    """The settings of one of `VARIANTS`: `grabs_ppo` is GrabS with the learned PPO policy moving the cylinders."""
    if variant == "grabs_ppo":
        return replace(params, method="grabs", agent=replace(params.agent, policy="ppo"))
    return replace(params, method=variant)


def _segments(
    points: np.ndarray,
    instance: np.ndarray,
    score: np.ndarray,
    unconfirmed: tuple[int, ...] = (),
    part: np.ndarray | None = None,
    part_score: np.ndarray | None = None,
) -> tuple[Segment, ...]:
    """The segments, then the nested parts (each with the segment it lies in)."""
    out = []
    r = lambda v: tuple(round(float(x), 4) for x in v)  # noqa: E731
    for labels, conf, nested in ((instance, score, False), (part, part_score, True)):
        if labels is None:
            continue
        for k in range(1, int(labels.max(initial=0)) + 1):
            m = labels == k
            if not m.any():
                continue
            p = points[m]
            parent = int(np.bincount(instance[m]).argmax()) if nested else 0
            out.append(
                Segment(k, int(m.sum()), float(conf[m][0]), r(p.min(0)), r(p.max(0)), r(p.mean(0)), not nested and k not in unconfirmed, parent)
            )
    return tuple(out)


def confidence(distance: float, reward: RewardParams) -> float:
    """Segment confidence from the objectness distance: 1 at 0, 0.5 at the found threshold."""
    return float(np.clip(1.0 - distance / (2.0 * reward.found_threshold), 0.0, 1.0))


def finalize(
    prior, points: np.ndarray, floor_z: float, candidates: list[Candidate], params: SegmentParams, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Score each candidate's whole cylinder, keep the found ones, deduplicate, label the points.

    Returns instance, score and prior residual per point (of ``points``). The masks are not grown
    here: ``_grown`` grows the segments once both searches are done.
    """
    from .agent import CylinderCrops

    params = replace(params, reward=replace(params.reward, grow=1.0))
    n = len(points)
    residual = np.full(n, np.nan, np.float32)
    if not candidates:
        return np.zeros(n, np.int32), np.zeros(n, np.float32), residual
    crops = CylinderCrops(points, floor_z, params.agent.height)
    idxs, live, scores = _score_cylinders(prior, points, crops, [(c.x, c.y, c.radius) for c in candidates], params, rng)
    masks, confs = [], []
    for i, sc in zip(live, scores):
        glob = idxs[i][sc.scored]
        res = residual[glob]
        residual[glob] = np.where(np.isnan(res), sc.residual, np.fmin(res, sc.residual))
        if sc.found(params.reward):
            masks.append(idxs[i][sc.mask])
            confs.append(confidence(sc.distance, params.reward))
    if params.agent.refit_margin > 0:
        masks, confs = _refit(prior, points, crops, masks, confs, params, rng)
    kept = deduplicate(masks, confs, params.dedup)
    instance, score, _ = labels_from_masks(n, masks, confs, kept, params.dedup.min_points)
    return instance, score, residual


def _grown(points: np.ndarray, instance: np.ndarray, score: np.ndarray, residual: np.ndarray, params: SegmentParams) -> tuple[np.ndarray, np.ndarray]:
    """The segments grown through the points the prior decodes near a surface (`masks.grow_segments`)."""
    reward = params.reward
    if reward.grow <= 1.0:
        return instance, score
    return grow_segments(points, instance, score, residual, reward.grow * reward.mask_threshold, reward.component)


def _merged(
    prior, points: np.ndarray, instance: np.ndarray, score: np.ndarray, params: SegmentParams, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Touching segments the prior takes as one object, joined (`merging.py`)."""
    return merge_parts(prior, points, instance, score, params.merge, params.reward, rng, lambda d: confidence(d, params.reward))


def _ranked(
    prior,
    points: np.ndarray,
    objects: np.ndarray,
    floor_z: float,
    instance: np.ndarray,
    score: np.ndarray,
    params: SegmentParams,
    rng: np.random.Generator,
) -> np.ndarray:
    """Final confidences from what the prior says of each segment (`ranking.py`)."""
    return ranked_scores(
        prior, points, objects, floor_z, instance, score, params.rank, params.reward, rng, params.agent.height, params.agent.max_radius
    )


@dataclass(frozen=True)
class Finished:
    """Per-point labels of a finished segmentation (see `SegmentationResult`) and the unconfirmed segment ids."""

    instance: np.ndarray
    score: np.ndarray
    residual: np.ndarray
    part: np.ndarray
    part_score: np.ndarray
    unconfirmed: tuple[int, ...] = ()

    def carried(self, all_points: np.ndarray, points: np.ndarray) -> "Finished":
        """The labels of ``points`` carried to ``all_points`` (a superset) by nearest neighbour."""
        nn, far = _nearest(all_points, points)

        def carry(a: np.ndarray, fill: float) -> np.ndarray:
            out = a[nn]
            out[far] = fill
            return out

        return Finished(
            carry(self.instance, 0),
            carry(self.score, 0.0),
            carry(self.residual, np.nan),
            carry(self.part, 0),
            carry(self.part_score, 0.0),
            self.unconfirmed,
        )

    def segments(self, points: np.ndarray) -> tuple[Segment, ...]:
        return _segments(points, self.instance, self.score, self.unconfirmed, self.part, self.part_score)


def _finished(
    prior,
    points: np.ndarray,
    keep: np.ndarray,
    planes,
    floor_z: float,
    found: tuple[np.ndarray, np.ndarray, np.ndarray],
    params: SegmentParams,
    rng: np.random.Generator,
) -> Finished:
    """From both searches' labels on the object points (``keep``) to the finished, ranked segments
    of all ``points``: grown, joined, the unclaimed parts added (unconfirmed), floor and wall points
    given back, small ones dropped; then the objects nested in the confirmed segments, ranked last."""
    obj = points[keep]
    inst, sc, res = found
    inst, sc = _grown(obj, inst, sc, res, params)
    inst, sc = _merged(prior, obj, inst, sc, params, rng)
    inst, added = unclaimed_parts(obj, inst, params.unclaimed)
    n = len(points)
    instance, score, residual = np.zeros(n, np.int32), np.zeros(n, np.float32), np.full(n, np.nan, np.float32)
    instance[keep], score[keep], residual[keep] = inst, sc, res
    instance, score = reclaim_plane_points(points, keep, planes, instance, score, params.planes)
    instance, score = drop_small_segments(instance, score, params.dedup.final_points)
    labels = instance[np.flatnonzero(keep)[added]]
    unconfirmed = tuple(int(i) for i in np.unique(labels[labels > 0]))
    score = ranked_after(instance, _ranked(prior, points, keep, floor_z, instance, score, params, rng), unconfirmed)
    confirmed = tuple(int(i) for i in np.unique(instance) if i > 0 and i not in unconfirmed)
    part = nested_parts(points, instance, confirmed, params.nested, params.dedup.final_points)
    return Finished(instance, score, residual, part, ranked_below(part), unconfirmed)


def _second_masks(
    prior,
    points: np.ndarray,
    floor_z: float,
    candidates: list[Candidate],
    params: SegmentParams,
    rng: np.random.Generator,
    first: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add the second search's objects, found among the points the first round's masks left free."""
    instance, score, residual = (a.copy() for a in first)
    free = np.flatnonzero(instance == 0)
    later = [c for c in candidates if c.second]
    if not later or len(free) < params.dedup.min_points:
        return instance, score, residual
    inst2, sc2, res2 = finalize(prior, points[free], floor_z, later, params, rng)
    found = inst2 > 0
    instance[free[found]] = inst2[found] + instance.max()
    score[free[found]] = sc2[found]
    residual[free] = np.fmin(residual[free], res2)
    return instance, score, residual


def _score_cylinders(
    prior, points: np.ndarray, crops, cylinders: list[tuple[float, float, float]], params: SegmentParams, rng: np.random.Generator
) -> tuple[list[np.ndarray], list[int], list]:
    """Every point of each cylinder (x, y, radius) scored: the crops' indices, which cylinders
    held enough points to score, and their scores."""
    idxs = [crops.indices(*c) for c in cylinders]
    live = [k for k, idx in enumerate(idxs) if len(idx) >= params.agent.min_crop_points]
    scores = score_crops(
        prior,
        [points[idxs[k]] for k in live],
        params.reward,
        rng,
        full=True,
        axes=[cylinders[k][:2] for k in live],
        rings=[points[crops.ring(*cylinders[k])] for k in live],
    )
    return idxs, live, scores


def _refit(
    prior, points: np.ndarray, crops, masks: list[np.ndarray], confs: list[float], params: SegmentParams, rng: np.random.Generator
) -> tuple[list[np.ndarray], list[float]]:
    """A last centring move: each found mask gets a cylinder around it (its centroid, its radius
    plus the margin), scored again; the new mask replaces the old one where the prior finds the
    object in that tighter crop too (the crop then holds less of the neighbours)."""
    agent = params.agent
    cylinders = [enclosing_cylinder(points[m, :2], agent.refit_margin, agent.min_radius, agent.max_radius) for m in masks]
    idxs, live, scores = _score_cylinders(prior, points, crops, cylinders, params, rng)
    masks, confs = list(masks), list(confs)
    for k, sc in zip(live, scores):
        if sc.found(params.reward):
            masks[k] = idxs[k][sc.mask]
            confs[k] = confidence(sc.distance, params.reward)
    return masks, confs


def _dbscan(points: np.ndarray, params: DbscanParams, min_points: int) -> tuple[np.ndarray, np.ndarray]:
    o3d = open3d()

    n = len(points)
    instance = np.zeros(n, np.int32)
    score = np.zeros(n, np.float32)
    if n == 0:
        return instance, score
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points.astype(np.float64)))
    labels = np.asarray(cloud.cluster_dbscan(params.eps, params.min_points, print_progress=False))
    ids, sizes = np.unique(labels[labels >= 0], return_counts=True)
    big = [(i, s) for i, s in zip(ids, sizes) if s >= min_points]
    big.sort(key=lambda t: -t[1])
    largest = big[0][1] if big else 1
    for k, (i, s) in enumerate(big, start=1):
        instance[labels == i] = k
        score[labels == i] = s / largest  # bigger clusters first: the only confidence DBSCAN has
    return instance, score


MAX_EXTENT = 1e5  # m: voxel grids of 5 cm overflow Open3D's int32 indices near 1e8 m; rooms and buildings are far below


def check_extent(points: np.ndarray) -> None:
    """One sentence for a cloud spread over kilometres (wrong units, a projection, stray points),
    not Open3D's "voxel_size is too small" from deep inside the search."""
    span = float(np.ptp(points, axis=0).max()) if len(points) else 0.0
    if span > MAX_EXTENT:
        raise EngineError(f"the cloud spans {span:.3g} m, over the {MAX_EXTENT:.0e} m a scene may span: check its units and remove stray points")


def segment(
    cloud: PointCloud, params: SegmentParams = SegmentParams(), progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED
) -> SegmentationResult:
    """Segment the objects of a scene. Only ``cloud.points`` is used (never instance ids or scores)."""
    from engines.core import configure_threads

    t0 = time.perf_counter()
    configure_threads()
    cloud = cloud.without_labels()
    all_points = cloud.points.astype(np.float64)
    n_all = len(all_points)
    if n_all < 100:
        raise EngineError(f"the cloud has only {n_all} points; at least 100 are needed to segment it")
    check_extent(all_points)
    rng = np.random.default_rng(params.seed)
    sub = _search_points(all_points, params, rng)
    points = all_points[sub]
    progress(0.02, "removing floor and walls")
    keep, planes, floor_z = remove_planes(points, params.planes, params.seed)
    cancel.raise_if_cancelled()
    obj_idx = np.flatnonzero(keep)
    obj = points[obj_idx]
    n = len(points)
    instance = np.zeros(n, np.int32)
    score = np.zeros(n, np.float32)
    residual = np.full(n, np.nan, np.float32)
    trajs: list[Trajectory] = []
    candidates: list[Candidate] = []
    anchors = np.zeros((0, 3))
    no_parts = (np.zeros(n, np.int32), np.zeros(n, np.float32))
    done = Finished(instance, score, residual, *no_parts)
    if params.method == "dbscan":
        progress(0.3, "clustering (DBSCAN)")
        inst, sc = _dbscan(obj, params.dbscan, params.dedup.final_points)  # no points given back: the final rule at once
        instance[obj_idx], score[obj_idx] = inst, sc
        done = Finished(instance, score, residual, *no_parts)
    elif len(obj) >= params.agent.min_crop_points:
        from .prior import load_prior

        prior = load_prior(Path(params.prior) if params.prior else None)
        progress(0.05, "placing anchors")
        agent = _agent(params)
        anchors = farthest_point_anchors(obj, params.agent.anchors)
        trajs, _ = agent(prior, obj, floor_z, anchors, params.agent, params.reward, rng, scaled(progress, 0.05, 0.7), cancel)
        candidates = [Candidate(i, *t.state) for i, t in enumerate(trajs)]
        progress(0.7, "final masks")
        inst, sc, res = finalize(prior, obj, floor_z, candidates, params, rng)
        free = np.flatnonzero(inst == 0)
        if params.agent.second_anchors and len(free) >= params.dedup.min_points:
            # Search again among the points no found object holds, with the found ones taken out
            # of the scene: small objects beside big ones are what the first round loses.
            progress(0.75, "second search over the unclaimed points")
            more = farthest_point_anchors(obj[free], params.agent.second_anchors)
            trajs2, _ = agent(prior, obj[free], floor_z, more, params.agent, params.reward, rng, scaled(progress, 0.75, 0.9), cancel)
            candidates += [Candidate(len(trajs) + i, *t.state, second=True) for i, t in enumerate(trajs2)]
            trajs, anchors = trajs + trajs2, np.concatenate([anchors, more])
            inst, sc, res = _second_masks(prior, obj, floor_z, candidates, params, rng, (inst, sc, res))
        progress(0.9, "finishing and ranking the segments")
        done = _finished(prior, points, keep, planes, floor_z, (inst, sc, res), params, rng)
    cancel.raise_if_cancelled()
    if len(sub) < n_all:
        progress(0.95, "carrying labels to every point")
        done = done.carried(all_points, points)
    progress(1.0, "done")
    return SegmentationResult(
        params.method,
        done.instance,
        done.score,
        done.residual,
        done.segments(all_points),
        tuple(trajs),
        tuple(candidates),
        anchors,
        floor_z,
        int((~keep).sum()),
        int(len(sub)),
        time.perf_counter() - t0,
        params.agent.policy if params.method == "grabs" else "",
        done.part,
        done.part_score,
    )


def _search_points(points: np.ndarray, params: SegmentParams, rng: np.random.Generator) -> np.ndarray:
    """Indices of the points the search runs on (labels are carried to the rest afterwards): at most
    ``max_points`` of them, and no denser than ``MAX_NEIGHBOURS`` within a mask link on average."""
    sub = np.arange(len(points)) if len(points) <= params.max_points else np.sort(rng.choice(len(points), params.max_points, replace=False))
    return sub[thinned(points[sub], DENSITY_RADIUS, MAX_NEIGHBOURS)]


def _agent(params: SegmentParams):
    """`run_agent`, or the same contract with the learned PPO policy choosing the actions."""
    if params.agent.policy == "search":
        return run_agent
    from functools import partial

    from .policy import load_policy, run_policy_agent

    return partial(run_policy_agent, load_policy(params.policy or None))


def _nearest(all_points: np.ndarray, points: np.ndarray, max_distance: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``all_points``, its nearest of ``points`` and whether that lies beyond ``max_distance``."""
    from scipy.spatial import cKDTree

    d, nn = cKDTree(points).query(all_points, k=1, workers=1)
    return nn, d > max_distance


def resegment(
    result: SegmentationResult, cloud: PointCloud, params: SegmentParams, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED
) -> SegmentationResult:
    """New thresholds on an existing GrabS result: re-score the agent's final cylinders, no new search."""
    if result.method != "grabs" or not result.candidates:
        raise EngineError("only a GrabS result with agent trajectories can be re-thresholded")
    t0 = time.perf_counter()
    cloud = cloud.without_labels()
    points = cloud.points.astype(np.float64)
    if len(points) != len(result.instance):
        raise EngineError("the result does not belong to this point cloud")
    from .prior import load_prior

    prior = load_prior(Path(params.prior) if params.prior else None)
    rng = np.random.default_rng(params.seed)
    progress(0.1, "removing floor and walls")
    sub = _search_points(points, params, rng)
    keep, planes, floor_z = remove_planes(points[sub], params.planes, params.seed)
    obj_idx = sub[keep]
    cancel.raise_if_cancelled()
    progress(0.4, "re-scoring the agent's cylinders")
    first = [c for c in result.candidates if not c.second]
    inst, sc, res = finalize(prior, points[obj_idx], floor_z, first, params, rng)
    inst, sc, res = _second_masks(prior, points[obj_idx], floor_z, list(result.candidates), params, rng, (inst, sc, res))
    done = _finished(prior, points[sub], keep, planes, floor_z, (inst, sc, res), params, rng)
    if len(sub) < len(points):
        done = done.carried(points, points[sub])
    progress(1.0, "done")
    return replace(
        result,
        instance=done.instance,
        score=done.score,
        residual=done.residual,
        segments=done.segments(points),
        part=done.part,
        part_score=done.part_score,
        seconds=time.perf_counter() - t0,
    )
