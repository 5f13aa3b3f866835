"""Beam search under a render budget: solving, streaming, the edit path, cancelling, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from engines.core import Cancelled, CancelToken, EngineError
from engines.sketcher.decode import RandomProposer
from engines.sketcher.language import parse
from engines.sketcher.render import render
from engines.sketcher.search import SearchParams, solve


def test_random_search_solves_a_single_disc_and_replays_its_path() -> None:
    target = render(parse("(Circle 5 8 8)"))
    updates = []
    result = solve(target, RandomProposer(0), SearchParams(budget=3000, seed=0, style="filled"), partial=lambda c, r: updates.append((c, r)))
    assert result.solved and result.iou >= 0.98
    assert result.renders <= 3000
    # the reported program really draws the disc: its IoU recomputed here, not taken from the result
    drawn = render(parse(result.program))
    iou = np.count_nonzero(drawn & target) / np.count_nonzero(drawn | target)
    assert iou >= 0.98 and iou == pytest.approx(result.iou)
    # the gallery streamed, best first, with growing render counts
    assert len(updates) >= 2
    assert all(list(c[i].score for i in range(len(c))) == sorted((x.score for x in c), reverse=True) for c, _ in updates)
    assert [r for _, r in updates] == sorted(r for _, r in updates)
    # the path starts at a start program and each step is one edit away from the last
    assert result.path[0].edit == "" and result.path[-1].program == result.program
    assert all(step.edit.startswith("token ") for step in result.path[1:])
    assert [r for r, _ in result.curve] == sorted(r for r, _ in result.curve)


def test_budget_is_respected() -> None:
    target = render(parse("(- (Quad 8 8 6 3 H) (+ (Circle 2 6 6) (Circle 3 A A)))"))
    result = solve(target, RandomProposer(1), SearchParams(budget=150, beam=4, proposals=4, style="filled"))
    assert result.renders <= 150 and not result.solved


def test_search_continues_from_a_given_program() -> None:
    target = render(parse("(Circle 4 8 9)"))
    result = solve(target, RandomProposer(2), SearchParams(budget=1500, start="(Circle 4 8 8)", style="filled"))
    assert result.path[0].program == "(Circle 4 8 8)"
    assert result.solved and result.renders < 1500


def test_sketch_targets_are_scored_by_outline() -> None:
    from engines.sketcher.sketch import sketch_render

    program = parse("(Quad 8 8 5 4 G)")
    drawing = sketch_render(program, np.random.default_rng(3))
    result = solve(drawing, RandomProposer(3), SearchParams(budget=1500, start="(Quad 8 8 5 2 G)", seed=3))
    assert result.sketch
    assert float((render(parse(result.program)) & render(program)).sum() / (render(parse(result.program)) | render(program)).sum()) >= 0.8


def test_cancel_stops_the_search() -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        solve(render(parse("(Circle 5 8 8)")), RandomProposer(0), SearchParams(budget=100000, style="filled"), cancel=token)


@pytest.mark.parametrize(
    "given, message",
    [({"budget": 0}, "budget"), ({"beam": 0}, "beam"), ({"style": "ink"}, "style"), ({"start": "(Circle 1 2)"}, "syntax error")],
)
def test_bad_parameters_are_one_clear_error(given: dict, message: str) -> None:
    """Out-of-range values are refused when the parameters are made; a bad start program when it is read."""
    with pytest.raises(EngineError, match=message):
        solve(render(parse("(Circle 5 8 8)")), RandomProposer(0), SearchParams(**given))


def test_empty_target_is_refused() -> None:
    with pytest.raises(EngineError, match="empty"):
        solve(np.zeros((64, 64), bool), RandomProposer(0), SearchParams())


class _Recording:
    """A random proposer that remembers every beam it was asked to expand."""

    name = "recording"

    def __init__(self, seed: int) -> None:
        self.inner = RandomProposer(seed)
        self.beams: list[list] = []

    def propose(self, target, states, images, k):
        self.beams.append(list(states))
        return self.inner.propose(target, states, images, k)


def test_the_beam_holds_one_program_per_picture_and_no_invisible_parts() -> None:
    from engines.sketcher.render import render_batch
    from engines.sketcher.search import has_empty_primitive

    target = render(parse("(- (+ (Quad 8 8 6 3 H) (Circle 3 5 5)) (Circle 2 A A))"))
    proposer = _Recording(4)
    start = "(+ (Circle 3 5 5) (Quad 8 8 6 3 H))"
    solve(target, proposer, SearchParams(budget=600, beam=8, proposals=8, style="filled", start=start))
    assert len(proposer.beams) >= 5
    for beam in proposer.beams:
        images = render_batch(beam, 64).reshape(len(beam), -1)
        assert len({img.tobytes() for img in images}) == len(beam)  # no two draw the same
        assert not any(has_empty_primitive(p) for p in beam)  # children drawing like smaller programs are never rendered


def test_zero_area_primitives_are_recognised() -> None:
    from engines.sketcher.search import has_empty_primitive

    assert has_empty_primitive(parse("(+ (Circle 4 8 8) (Quad 3 3 0 5 H))"))
    assert has_empty_primitive(parse("(- (Circle 4 8 8) (Circle 0 3 3))"))
    assert has_empty_primitive(parse("(Quad 3 3 5 0 K)"))
    assert not has_empty_primitive(parse("(- (Circle 4 8 8) (Quad 0 0 3 3 G))"))


def test_the_gallery_shows_each_picture_once() -> None:
    from engines.sketcher.decode import Proposal
    from engines.sketcher.edits import Edit

    class Invisible:
        """Adds small discs inside the big one (same picture each time), and one that shows."""

        name = "invisible"

        def propose(self, target, states, images, k):
            texts = [f"(+ (Circle 6 8 8) (Circle 1 {x} 8))" for x in "6789A"] + ["(+ (Circle 6 8 8) (Circle 2 F F))"]
            return [[Proposal(Edit(0, parse(t)), 0.0) for t in texts] for _ in states]

    target = render(parse("(Circle 6 8 8)"))
    result = solve(target, Invisible(), SearchParams(budget=20, beam=1, style="filled", goal=1.01, start="(Circle 6 8 8)"), top=8)
    assert result.renders == 7 and result.program == "(Circle 6 8 8)"  # the simplest of the equal pictures
    pictures = [render(parse(c.program)).tobytes() for c in result.best]
    assert len(pictures) == len(set(pictures)) == 2


@pytest.mark.parametrize("seed", [10**20, -(2**63) - 1, -1, 2**31, True])
def test_seeds_torch_cannot_take_are_refused_before_the_search(seed: int) -> None:
    from engines.sketcher.api import SolveRequest, solve_target
    from engines.sketcher.bench import BenchParams

    with pytest.raises(EngineError, match="seed must be an integer from 0 to 2\\^31-1"):
        solve_target(render(parse("(Circle 5 8 8)")), SolveRequest(SearchParams(budget=10, seed=seed)))
    with pytest.raises(EngineError, match="seed"):
        BenchParams(seed=seed)
    assert SearchParams(seed=2**31 - 1).seed == 2**31 - 1
