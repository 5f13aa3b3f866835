"""ScanNet-style class-agnostic AP: the spec's cases and the benchmark's rules."""
from __future__ import annotations

import numpy as np
import pytest

from engines.segmentation.metrics import IOU_THRESHOLDS, PooledAP, ScenePrediction, evaluate

GT = np.repeat([0, 1, 2, 3], 200)  # background and three objects of 200 points


def masks(*ids: int) -> list[np.ndarray]:
    return [GT == i for i in ids]


def test_perfect_predictions_score_one() -> None:
    result = evaluate([ScenePrediction.from_labels(GT, GT)])
    assert result.ap == pytest.approx(1.0) and result.ap50 == pytest.approx(1.0) and result.ap25 == pytest.approx(1.0)
    assert len(IOU_THRESHOLDS) == 10 and IOU_THRESHOLDS[0] == 0.5 and IOU_THRESHOLDS[-1] == 0.95


def test_no_predictions_score_zero() -> None:
    result = evaluate([ScenePrediction(GT, (), ())])
    assert result.ap == 0.0 and result.ap50 == 0.0 and result.ap25 == 0.0


def test_nothing_to_find_is_undefined() -> None:
    result = evaluate([ScenePrediction(np.zeros(500, int), (np.ones(500, bool),), (0.5,))])
    assert np.isnan(result.ap)


def test_duplicates_lower_precision() -> None:
    # Object 1 predicted twice, the copy more confident than object 2's prediction.
    pred = ScenePrediction(GT, tuple(masks(1, 1, 2, 3)), (0.9, 0.85, 0.8, 0.7))
    result = evaluate([pred])
    curve = result.curves["0.50"]
    assert min(curve.precision) < 1.0
    assert result.ap50 < 1.0
    assert max(curve.recall) == pytest.approx(1.0)  # every object is still found


def test_one_mask_over_two_objects_fails_at_half() -> None:
    merged = ScenePrediction(GT, ((GT == 1) | (GT == 2), GT == 3), (0.9, 0.8))
    result = evaluate([merged])
    # IoU with either object is exactly 0.5, not strictly above: at 0.5 only object 3 counts.
    assert max(result.curves["0.50"].recall) == pytest.approx(1 / 3)
    assert result.ap50 < 0.34
    assert max(result.curves["0.25"].recall) == pytest.approx(2 / 3)
    assert result.ap25 > result.ap50


def test_partial_masks_count_only_above_their_iou() -> None:
    half = np.zeros_like(GT, bool)
    half[np.flatnonzero(GT == 1)[:140]] = True  # IoU 0.7 with object 1
    result = evaluate([ScenePrediction(GT, (half,) + tuple(masks(2, 3)), (0.9, 0.8, 0.7))])
    assert result.per_threshold["0.65"] == pytest.approx(1.0)
    assert result.per_threshold["0.75"] < 1.0


def test_predictions_on_ignored_points_are_not_false_positives() -> None:
    background = GT == 0
    on_background = ScenePrediction(GT, (background,) + tuple(masks(1, 2, 3)), (0.99, 0.8, 0.7, 0.6))
    assert evaluate([on_background]).ap50 == pytest.approx(1.0)
    wrong = np.zeros_like(GT, bool)
    wrong[np.flatnonzero(GT == 1)[:150]] = True
    wrong[np.flatnonzero(GT == 2)[:150]] = True  # 150/300 on objects, IoU 0.43 with each
    result = evaluate([ScenePrediction(GT, (wrong,) + tuple(masks(1, 2, 3)), (0.99, 0.8, 0.7, 0.6))])
    assert result.ap50 < 1.0


def test_small_regions_are_ignored() -> None:
    gt = np.concatenate([GT, np.full(50, 9)])  # a 50-point object: below the 100-point minimum
    tiny = np.zeros(len(gt), bool)
    tiny[-50:] = True
    pred = ScenePrediction(gt, tuple(np.concatenate([m, np.zeros(50, bool)]) for m in masks(1, 2, 3)), (0.9, 0.8, 0.7))
    assert evaluate([pred]).ap == pytest.approx(1.0)  # the unfound tiny object is no false negative
    pred_tiny = ScenePrediction(gt, pred.masks + (tiny,), pred.scores + (0.95,))
    assert evaluate([pred_tiny]).ap == pytest.approx(1.0)  # a prediction under 100 points is dropped


def test_scenes_are_pooled() -> None:
    good = ScenePrediction.from_labels(GT, GT)
    empty = ScenePrediction(GT, (), ())
    result = evaluate([good, empty])
    assert result.n_gt == 6 and result.n_pred == 3
    assert result.ap50 == pytest.approx(0.5)


def test_pooled_ap_on_a_selection_of_scenes_is_evaluate_on_those_scenes() -> None:
    """The benchmark's bootstrap pools resampled rooms, repeats included, without matching them again."""
    good = ScenePrediction.from_labels(GT, GT)
    empty = ScenePrediction(GT, (), ())
    merged = ScenePrediction(GT, ((GT == 1) | (GT == 2), GT == 3), (0.9, 0.8))
    scenes = [good, empty, merged]
    pooled = PooledAP(scenes)
    assert pooled.at(0.5) == pytest.approx(evaluate(scenes).ap50)
    assert pooled.at(0.25) == pytest.approx(evaluate(scenes).ap25)
    pick = np.array([0, 0, 2, 1, 2])
    assert pooled.at(0.5, pick) == pytest.approx(evaluate([scenes[i] for i in pick]).ap50)
    assert pooled.at(0.5, np.array([0, 0])) == pytest.approx(1.0) and pooled.at(0.5, np.array([1])) == 0.0
