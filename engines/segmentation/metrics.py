"""Class-agnostic instance AP as the ScanNet benchmark computes it (AP over IoU 0.50:0.05:0.95, AP50, AP25).

The rules, in ScanNet's order: ground-truth instances under ``min_region`` points are ignored;
predictions under it are dropped. Per IoU threshold, each ground-truth object takes the most
confident unused prediction whose IoU is strictly above the threshold as its true positive; the
other predictions above the threshold on it are false positives. A prediction that matches no
object is a false positive unless more than ``threshold`` of its points lie on ignored points
(label 0, i.e. floor, walls and unlabelled points, and ignored small objects). Matches are pooled
over all scenes and the precision/recall curve is integrated with ScanNet's step rule.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

IOU_THRESHOLDS: tuple[float, ...] = tuple(np.round(np.arange(0.5, 0.951, 0.05), 2).tolist())


@dataclass(frozen=True)
class ScenePrediction:
    """One scene: ground-truth ids per point (0 = not an object) and predicted masks with confidences."""

    gt: np.ndarray
    masks: tuple[np.ndarray, ...]
    scores: tuple[float, ...]

    @staticmethod
    def from_labels(gt: np.ndarray, instance: np.ndarray, score: np.ndarray | None = None, part: np.ndarray | None = None,
                    part_score: np.ndarray | None = None) -> "ScenePrediction":
        """Masks from a per-point instance field (0 = none); confidence = mean per-point score (1 if absent).

        ``part`` (with ``part_score``) holds more masks, each inside one segment (`nested.py`): the
        masks may overlap, as ScanNet's evaluation allows."""
        masks: list[np.ndarray] = []
        scores: list[float] = []
        for labels, conf in ((instance, score), (part, part_score)):
            if labels is None:
                continue
            for i in np.unique(labels):
                if i > 0:
                    masks.append(labels == i)
                    scores.append(float(conf[masks[-1]].mean()) if conf is not None else 1.0)
        return ScenePrediction(np.asarray(gt), tuple(masks), tuple(scores))


@dataclass(frozen=True)
class Curve:
    precision: tuple[float, ...]
    recall: tuple[float, ...]


@dataclass(frozen=True)
class APResult:
    ap: float
    ap50: float
    ap25: float
    per_threshold: dict[str, float]
    curves: dict[str, Curve] = field(repr=False)
    n_gt: int
    n_pred: int


MIN_REGION = 100  # ScanNet's rule: objects (and predictions) of fewer points are not judged


def evaluate(scenes: list[ScenePrediction], min_region: int = MIN_REGION) -> APResult:
    """Pool all scenes and compute AP at IoU 0.25 and 0.50:0.05:0.95 (NaN when nothing to judge)."""
    prepared = [_prepare(s, min_region) for s in scenes]
    per, curves = {}, {}
    for thr in sorted(set(IOU_THRESHOLDS) | {0.25}):
        ap, curve = _ap_at(prepared, thr)
        per[f"{thr:.2f}"] = ap
        curves[f"{thr:.2f}"] = curve
    main = [per[f"{t:.2f}"] for t in IOU_THRESHOLDS]
    return APResult(
        ap=float(np.mean(main)) if not np.isnan(main).all() else float("nan"),
        ap50=per["0.50"],
        ap25=per["0.25"],
        per_threshold=per,
        curves=curves,
        n_gt=sum(len(p[0]) for p in prepared),
        n_pred=sum(len(p[2]) for p in prepared),
    )


class PooledAP:
    """Scenes matched once, so AP at one IoU threshold can be pooled over any selection of them
    (with repeats: the benchmark's bootstrap over rooms)."""

    def __init__(self, scenes: list[ScenePrediction], min_region: int = MIN_REGION) -> None:
        self.prepared = [_prepare(s, min_region) for s in scenes]
        self._matches: dict[float, list[_Matches]] = {}

    def at(self, threshold: float, scenes: np.ndarray | None = None) -> float:
        if threshold not in self._matches:  # matching is per scene: done once per threshold
            self._matches[threshold] = [_match(p, threshold) for p in self.prepared]
        matches = self._matches[threshold]
        return _pooled(matches if scenes is None else [matches[int(i)] for i in scenes])[0]


def _prepare(scene: ScenePrediction, min_region: int):
    gt = np.asarray(scene.gt).astype(np.int64)
    ids, sizes = np.unique(gt[gt > 0], return_counts=True)
    valid = ids[sizes >= min_region]
    ignored_points = ~np.isin(gt, valid)  # background, unlabelled and too-small objects
    gt_masks = [gt == i for i in valid]
    keep = [k for k, m in enumerate(scene.masks) if int(np.count_nonzero(m)) >= min_region]
    masks = [np.asarray(scene.masks[k], dtype=bool) for k in keep]
    scores = np.array([scene.scores[k] for k in keep], dtype=np.float64)
    if masks:
        pred = np.stack(masks)
        gts = np.stack(gt_masks) if gt_masks else np.zeros((0, len(gt)), bool)
        inter = gts.astype(np.int32) @ pred.T.astype(np.int32)  # (G, P)
        union = gts.sum(1)[:, None] + pred.sum(1)[None, :] - inter
        iou = inter / np.maximum(union, 1)
        ignore_frac = (pred & ignored_points[None, :]).sum(1) / pred.sum(1)
    else:
        iou = np.zeros((len(gt_masks), 0))
        ignore_frac = np.zeros(0)
    return gt_masks, iou, scores, ignore_frac


@dataclass(frozen=True)
class _Matches:
    """One scene's matches at one IoU threshold: what pooling over scenes needs of it."""

    y_true: tuple[int, ...]
    y_score: tuple[float, ...]
    hard_fn: int  # objects no prediction reached
    has_gt: bool
    has_pred: bool


def _match(prepared_scene, thr: float) -> _Matches:
    gt_masks, iou, scores, ignore_frac = prepared_scene
    y_true: list[int] = []
    y_score: list[float] = []
    hard_fn = 0
    order = np.argsort(-scores, kind="stable")
    used = np.zeros(len(scores), dtype=bool)
    for g in range(len(gt_masks)):
        hits = [p for p in order if iou[g, p] > thr and not used[p]]
        if not hits:
            hard_fn += 1
            continue
        used[hits[0]] = True
        y_true.append(1)
        y_score.append(float(scores[hits[0]]))
        for p in hits[1:]:  # a second prediction on a matched object
            used[p] = True
            y_true.append(0)
            y_score.append(float(scores[p]))
    for p in range(len(scores)):
        if used[p] or (iou.shape[0] and (iou[:, p] > thr).any()):
            continue
        if ignore_frac[p] <= thr:
            y_true.append(0)
            y_score.append(float(scores[p]))
    return _Matches(tuple(y_true), tuple(y_score), hard_fn, len(gt_masks) > 0, len(scores) > 0)


def _pooled(matches: list[_Matches]) -> tuple[float, Curve]:
    """AP of the scenes' matches pooled, ScanNet's way: one curve over all scenes."""
    if not any(m.has_gt for m in matches):
        return float("nan"), Curve((), ())
    y_true = [t for m in matches for t in m.y_true]
    if not any(m.has_pred for m in matches) or not y_true:
        return 0.0, Curve((1.0,), (0.0,))
    y_score = [s for m in matches for s in m.y_score]
    return _integrate(np.array(y_true), np.array(y_score), sum(m.hard_fn for m in matches))


def _ap_at(prepared, thr: float) -> tuple[float, Curve]:
    return _pooled([_match(scene, thr) for scene in prepared])


def _integrate(y_true: np.ndarray, y_score: np.ndarray, hard_fn: int) -> tuple[float, Curve]:
    """ScanNet's curve: one point per distinct confidence (ascending), plus (recall 0, precision 1)."""
    n_gt = int(y_true.sum()) + hard_fn
    thresholds = np.unique(y_score)
    precision, recall = [], []
    for t in thresholds:
        sel = y_score >= t
        tp = int(y_true[sel].sum())
        fp = int(sel.sum()) - tp
        precision.append(tp / max(tp + fp, 1))
        recall.append(tp / max(n_gt, 1))
    precision.append(1.0)
    recall.append(0.0)
    r = np.array(recall)
    padded = np.concatenate([[r[0]], r, [0.0]])
    widths = 0.5 * (padded[:-2] - padded[2:])
    ap = float(np.dot(np.array(precision), widths))
    return ap, Curve(tuple(float(p) for p in precision), tuple(float(x) for x in recall))
