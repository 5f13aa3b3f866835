"""Box overlap: the bounding-circle screen in front of the separating-axis test must never change
an answer, for pairs far apart, touching, crossing, or one inside the other."""

from __future__ import annotations

import numpy as np

from engines.planner.geometry import box_corners, boxes_overlap, separating_axis_overlap


def test_the_circle_screen_gives_the_separating_axis_answers() -> None:
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(100):
        n = int(rng.integers(1, 30))
        a = box_corners(rng.uniform(0, 30, (n, 1)), rng.uniform(0, 8, (n, 1)), rng.uniform(-3, 3, (n, 1)), 4.5, 2.0)
        b = box_corners(rng.uniform(0, 30, (1, n)), rng.uniform(0, 8, (1, n)), rng.uniform(-3, 3, (1, n)), rng.uniform(0.5, 12, (1, n)), 2.0)
        fast = boxes_overlap(a, b)
        np.testing.assert_array_equal(fast, separating_axis_overlap(a, b))
        hits += int(fast.sum())
    assert hits > 100  # the draws overlap often enough to test both answers


def test_touching_nested_and_far_boxes() -> None:
    ego = box_corners(0.0, 0.0, 0.0, 4.0, 2.0)
    cases = {
        (4.0 - 1e-9, 0.0, 0.0, 4.0, 2.0): True,  # nose to tail, a hair overlapping
        (4.0 + 1e-6, 0.0, 0.0, 4.0, 2.0): False,  # a hair apart: the exact test decides, not the circles
        (0.0, 0.0, 0.3, 1.0, 0.5): True,  # inside
        (2.0, 2.0, np.pi / 4, 4.0, 2.0): True,  # corner across corner
        (100.0, 0.0, 0.0, 4.0, 2.0): False,
    }
    for (x, y, h, length, width), expected in cases.items():
        other = box_corners(x, y, h, length, width)
        assert bool(boxes_overlap(ego, other)) is expected, (x, y, h)
    empty = np.zeros((0, 4, 2))
    assert boxes_overlap(empty, ego).shape == (0,)
