"""The renderer: hand-checked geometry, true tree semantics, any size, IoU measures."""

from __future__ import annotations

import random

import numpy as np
import pytest

from engines.core import EngineError
from engines.sketcher.edits import random_program
from engines.sketcher.language import parse
from engines.sketcher.render import foreground_iou, mean_iou, render, render_batch


def test_circle_geometry_at_32_pixels() -> None:
    # (Circle 4 8 8): centre (16, 16) units, radius 8 units; at 32x32 one pixel is one unit.
    mask = render(parse("(Circle 4 8 8)"), 32)
    ys, xs = np.nonzero(mask)
    assert xs.min() == 8 and xs.max() == 23 and ys.min() == 8 and ys.max() == 23
    assert mask[16, 16] and mask[16, 8] and not mask[16, 7] and not mask[9, 9]
    assert abs(int(mask.sum()) - np.pi * 64) < 12


def test_quad_geometry_and_rotation() -> None:
    # (Quad 8 8 4 2 G): centre (16, 16), 8 wide and 4 tall.
    mask = render(parse("(Quad 8 8 4 2 G)"), 32)
    ys, xs = np.nonzero(mask)
    assert (xs.min(), xs.max(), ys.min(), ys.max()) == (12, 19, 14, 17)
    turned = render(parse("(Quad 8 8 4 2 I)"), 32)  # 90 degrees: 4 wide and 8 tall
    ys, xs = np.nonzero(turned)
    assert (xs.min(), xs.max(), ys.min(), ys.max()) == (14, 17, 12, 19)
    diamond = render(parse("(Quad 8 8 4 4 H)"), 64)  # a square turned by 45 degrees
    # half diagonal 4*sqrt(2) units = 11.3 pixels along the axes; the diagonal is cut at 8 pixels
    assert diamond[32, 42] and diamond[21, 32] and not diamond[22, 22] and not diamond[42, 42]
    assert abs(int(diamond.sum()) - 256) < 20


def test_canvas_is_origin_top_left_y_down() -> None:
    mask = render(parse("(Circle 1 2 C)"), 32)  # centre (4, 24): left, low
    ys, xs = np.nonzero(mask)
    assert xs.mean() < 8 and ys.mean() > 20


def test_subtraction_nests_as_a_tree() -> None:
    a, b, c = "(Quad 8 8 8 8 G)", "(Circle 2 6 8)", "(Circle 2 A 8)"
    nested = render(parse(f"(- {a} (+ {b} {c}))"))
    left_to_right = render(parse(f"(+ (- {a} {b}) {c})"))
    # at 64x64 the square spans pixels 16..47; the discs are centred at (24, 32) and (40, 32)
    assert not nested[32, 40] and left_to_right[32, 40]  # the right disc is cut out, not added back
    assert not nested[32, 24]
    assert nested[20, 20]
    double = render(parse(f"(- {a} (- {a} {b}))"))  # A minus (A minus B) is the part of B in A
    assert np.array_equal(double, render(parse(b)) & render(parse(a)))


def test_zero_area_shapes_are_empty() -> None:
    assert not render(parse("(Circle 0 8 8)")).any()
    assert not render(parse("(Quad 8 8 0 5 G)")).any()


def test_batch_matches_single_renders_at_any_size() -> None:
    rng = random.Random(3)
    programs = [random_program(rng, rng.randint(1, 6)) for _ in range(40)]
    for size in (17, 64, 129):
        batch = render_batch(programs, size)
        assert batch.shape == (40, size, size)
        for p, m in zip(programs[:8], batch):
            assert np.array_equal(m, render(p, size))


def test_sizes_scale_consistently() -> None:
    program = parse("(- (Circle 6 8 8) (Quad 8 8 2 2 H))")
    small = render(program, 64)
    large = render(program, 256)
    coarse = large.reshape(64, 4, 64, 4).mean(axis=(1, 3)) > 0.5
    assert foreground_iou(coarse, small) > 0.97


@pytest.mark.parametrize("size", [0, 3, 100000])
def test_absurd_sizes_are_refused(size: int) -> None:
    with pytest.raises(EngineError, match="out of range"):
        render(parse("(Circle 1 1 1)"), size)


def test_iou_measures() -> None:
    a = render(parse("(Quad 8 8 4 4 G)"))
    b = render(parse("(Quad 8 8 4 2 G)"))
    assert foreground_iou(a, a) == 1.0
    assert foreground_iou(b, a) == pytest.approx(0.5)
    empty = np.zeros_like(a)
    assert foreground_iou(empty, empty) == 1.0
    assert 0.5 < mean_iou(b, a) < 1.0
    batch = foreground_iou(np.stack([a, b]), a)
    assert batch.shape == (2,) and batch[0] == 1.0


def _balanced(leaves: list[str]) -> str:
    """A union tree of the given primitives, as shallow as it can be."""
    while len(leaves) > 1:
        leaves = [f"(+ {a} {b})" if b else a for a, b in zip(leaves[::2], leaves[1::2] + [""])]
    return leaves[0]


def test_masks_made_one_at_a_time_are_the_same_pixels(monkeypatch: pytest.MonkeyPatch) -> None:
    import engines.sketcher.render as renderer

    rng = random.Random(5)
    programs = [random_program(rng, rng.randint(1, 8)) for _ in range(40)]
    for size in (32, 100):
        at_once = render_batch(programs, size)
        monkeypatch.setattr(renderer, "MASK_BUDGET", 0)
        assert np.array_equal(render_batch(programs, size), at_once)
        monkeypatch.undo()


def test_a_big_program_at_a_big_size_renders_in_bounded_memory() -> None:
    """2000 primitives at 1024 px: all masks at once would be 2 GB; one at a time, a few masks."""
    import tracemalloc

    rng = random.Random(3)
    shapes = [f"(Circle {rng.choice('123')} {rng.choice('456789AB')} {rng.choice('456789AB')})" for _ in range(1000)]
    shapes += [f"(Quad {rng.choice('6789A')} {rng.choice('6789A')} 1 2 {rng.choice('GHIJ')})" for _ in range(1000)]
    tokens = parse(f"(- {_balanced(shapes[:1900])} {_balanced(shapes[1900:])})")
    tracemalloc.start()
    try:
        mask = render(tokens, 1024)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 150 * 2**20, f"{peak / 2**20:.0f} MB"
    assert mask.shape == (1024, 1024) and 0.05 < mask.mean() < 0.95
