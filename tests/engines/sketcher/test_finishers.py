"""The search's finishers beyond numbers: residual edits for filled targets, settling for sketches."""

from __future__ import annotations

import numpy as np
import pytest

from engines.sketcher.language import parse, to_text
from engines.sketcher.render import foreground_iou, render
from engines.sketcher.residual import fit_primitives, residual_edits
from engines.sketcher.search import SearchParams, solve
from engines.sketcher.similarity import boundary, outline, outline_distance
from engines.sketcher.sketch import SketchStyle, sketch_render

from .test_polish import _AddsFarDiscs


def _exact(program: str, target: str) -> set[str]:
    """The residual edits of ``program`` whose render is exactly ``target``'s."""
    tokens, goal = parse(program), render(parse(target))
    children = [e.apply(tokens) for e in residual_edits(tokens, render(tokens), goal)]
    ious = foreground_iou(np.stack([render(c) for c in children]), goal)
    return {to_text(c) for c, iou in zip(children, ious) if iou == 1.0}


def test_fits_of_a_rendered_primitive_include_it() -> None:
    for text in ("(Circle 3 8 8)", "(Quad 9 6 5 2 G)", "(Circle 5 4 B)"):
        blob = render(parse(text))
        fits = fit_primitives(blob)
        assert fits and max(float(foreground_iou(render(f)[None], blob)[0]) for f in fits) >= 0.95, text


def test_a_missing_part_is_united_back() -> None:
    assert "(+ (Circle 4 5 5) (Quad A A 3 2 G))" in _exact("(Circle 4 5 5)", "(+ (Circle 4 5 5) (Quad A A 3 2 G))")


def test_a_missing_hole_is_subtracted() -> None:
    exact = _exact("(+ (Quad 6 8 5 5 G) (Circle 3 D 8))", "(+ (- (Quad 6 8 5 5 G) (Circle 2 6 8)) (Circle 3 D 8))")
    assert "(+ (- (Quad 6 8 5 5 G) (Circle 2 6 8)) (Circle 3 D 8))" in exact  # under the quad
    assert "(- (+ (Quad 6 8 5 5 G) (Circle 3 D 8)) (Circle 2 6 8))" in exact  # or at the top: the disc is clear of it


def test_a_part_too_many_is_dropped() -> None:
    assert "(Circle 4 5 5)" in _exact("(+ (Circle 4 5 5) (Circle 2 C C))", "(Circle 4 5 5)")


def test_a_stalled_near_miss_missing_a_part_is_finished_only_with_residual_edits() -> None:
    target = render(parse("(- (+ (Circle 5 7 8) (Quad D 8 2 3 G)) (Circle 2 7 8))"))
    near = "(- (Circle 5 7 8) (Circle 2 7 8))"  # the quad on the right is missing: IoU 0.92
    assert 0.9 <= float(foreground_iou(render(parse(near))[None], target)[0]) < 0.98
    params = SearchParams(budget=1500, beam=4, proposals=4, style="filled", start=near, polish_after=32)
    numbers_only = solve(target, _AddsFarDiscs(), SearchParams(**{**params.__dict__, "residual": False}))
    assert not numbers_only.solved
    found = solve(target, _AddsFarDiscs(), params)
    assert found.solved and found.iou >= 0.98 and found.renders <= 1500


def test_outline_distance_is_zero_on_the_strokes_and_grows_with_the_offset() -> None:
    strokes = boundary(render(parse("(Quad 8 8 6 4 G)")))
    shapes = np.stack([render(parse(p)) for p in ("(Quad 8 8 6 4 G)", "(Quad 8 8 6 5 G)", "(Quad 8 8 6 6 G)", "(Circle 0 0 0)")])
    d = outline_distance(shapes, strokes)
    assert d[0] == 0.0 and 0 < d[1] < d[2] and np.isinf(d[3])


@pytest.mark.parametrize(
    "drawn, smaller, larger",
    [
        ("(Quad 6 7 1 6 G)", "(Quad 6 7 1 5 G)", "(Quad 6 7 1 7 G)"),
        ("(Quad 8 8 6 4 G)", "(Quad 8 8 5 4 G)", "(Quad 8 8 7 4 G)"),
        ("(Circle 3 8 8)", "(Circle 2 8 8)", "(Circle 4 8 8)"),
    ],
)
def test_a_steady_hand_draws_on_the_boundary_and_the_drawn_size_lies_closest(drawn: str, smaller: str, larger: str) -> None:
    steady = SketchStyle(centre_jitter=0, size_jitter=0, angle_jitter_deg=0, wobble=(0, 0), gap_chance=0, stroke_px=(1.0, 1.0))
    strokes = sketch_render(parse(drawn), np.random.default_rng(0), style=steady)
    d = outline_distance(np.stack([render(parse(p)) for p in (drawn, smaller, larger)]), strokes)
    assert d[0] < 0.2 and d[0] < d[1] and d[0] < d[2]


def test_a_sketch_match_at_the_goal_settles_on_the_drawn_numbers() -> None:
    drawn = "(Quad 8 8 6 4 G)"
    strokes = outline(render(parse(drawn)))
    near = "(Quad 8 8 6 5 G)"  # 2 px off on two sides: within the outline match's tolerance
    params = SearchParams(budget=600, beam=4, proposals=4, style="sketch", start=near)
    unsettled = solve(strokes, _AddsFarDiscs(), SearchParams(**{**params.__dict__, "polish_after": 0}))
    assert unsettled.solved and unsettled.program == near
    settled = solve(strokes, _AddsFarDiscs(), params)
    assert settled.solved and settled.program == drawn and settled.path[0].program == near


def test_settling_may_leave_the_outline_match_for_the_closest_edge() -> None:
    """A stray stroke 3 px off the drawn quad: a taller quad reaches it within the 2 px match,
    the drawn one lies closer to the strokes on average and is the one kept."""
    drawn, taller = "(Quad 8 8 6 4 G)", "(Quad 8 8 6 5 G)"
    strokes = outline(render(parse(drawn)))
    top = int(np.nonzero(strokes)[0].min())
    strokes[top - 3, 28:36] = True
    params = SearchParams(budget=600, beam=4, proposals=4, style="sketch", start=taller)
    unsettled = solve(strokes, _AddsFarDiscs(), SearchParams(**{**params.__dict__, "polish_after": 0}))
    assert unsettled.solved and unsettled.program == taller and unsettled.score == 1.0
    settled = solve(strokes, _AddsFarDiscs(), params)
    assert settled.solved and settled.program == drawn and settled.path[0].program == taller
    assert settled.score < params.goal and settled.best[0].program == drawn
