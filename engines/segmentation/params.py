"""The segmentation vocabulary the panel and the CLI share: the thresholds a user may set, named as
the CLI's flags and the session files' keys, with their ranges and their defaults. The defaults are
the pipeline's own parameters, so a changed default reaches the panel's sliders and the CLI's help
at once."""

from __future__ import annotations

from dataclasses import dataclass

from .masks import DedupParams
from .merging import MergeParams
from .objectness import RewardParams


@dataclass(frozen=True)
class Threshold:
    label: str  # the panel's row
    low: float
    high: float
    step: float
    default: float
    fmt: str  # how the panel prints a value
    meaning: str  # the CLI's help, before "(default ...)"


THRESHOLDS: dict[str, Threshold] = {
    "mask_threshold": Threshold("Mask |SDF| <=", 0.005, 0.08, 0.0025, RewardParams.mask_threshold, "{:.4f}",
                                "|SDF| at most this (normalised) is on the object"),
    "found_threshold": Threshold("Found if distance <=", 0.04, 0.30, 0.005, RewardParams.found_threshold, "{:.3f}",
                                 "objectness distance at most this: found"),
    "dedup_iou": Threshold("Duplicate IoU >=", 0.30, 0.90, 0.05, DedupParams.iou, "{:.2f}", "masks overlapping this much are one object"),
    "min_points": Threshold("Min segment points", 20, 500, 10, DedupParams.final_points, "{:.0f}",
                            "smallest segment kept, floor and wall points included"),
    "join_coverage": Threshold("Join pieces if union mask keeps >=", 0.5, 1.0, 0.05, MergeParams.coverage, "{:.2f}",
                               "join touching pieces if the union's mask keeps this share"),
}
OLD_NAMES: dict[str, str] = {"merge_coverage": "join_coverage"}  # session files written before the names were one


def threshold_help(name: str) -> str:
    t = THRESHOLDS[name]
    return f"{t.meaning} (default {t.default:g})"
