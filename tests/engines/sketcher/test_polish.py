"""Numeric polish: the number changes it renders, and the near misses it finishes."""

from __future__ import annotations

from itertools import count

from engines.sketcher.decode import Proposal
from engines.sketcher.edits import Edit
from engines.sketcher.language import parse, to_text
from engines.sketcher.polish import numeric_edits
from engines.sketcher.render import render
from engines.sketcher.search import SearchParams, solve
from engines.sketcher.vocab import ANG0, NUM0


def _changed(before: tuple[int, ...], after: tuple[int, ...]) -> list[tuple[int, int, int]]:
    assert len(before) == len(after)
    return [(i, a, b) for i, (a, b) in enumerate(zip(before, after)) if a != b]


def test_numeric_edits_change_one_number_by_up_to_two_or_two_numbers_of_one_primitive_by_one() -> None:
    program = parse("(+ (Circle 0 8 F) (Quad E 6 D A N))")
    children = [e.apply(program) for e in numeric_edits(program)]
    assert len(children) == len(set(children))
    for child in children:
        diff = _changed(program, child)
        assert 1 <= len(diff) <= 2
        for _, a, b in diff:
            if a >= ANG0:
                assert (b - a) % 8 in (1, 2, 6, 7)  # angles wrap: N + 1 is G
            else:
                assert NUM0 <= b < NUM0 + 16 and abs(b - a) <= (2 if len(diff) == 1 else 1)
        if len(diff) == 2:  # both in the circle (tokens 2-4) or both in the quad (6-10)
            assert {i for i, _, _ in diff} <= {2, 3, 4} or {i for i, _, _ in diff} <= set(range(6, 11))
    assert "(+ (Circle 1 8 F) (Quad E 6 D A N))" in {to_text(c) for c in children}
    assert "(+ (Circle 0 8 F) (Quad F 6 D A G))" in {to_text(c) for c in children}
    assert "(+ (Circle 0 8 F) (Quad E 6 D A L))" in {to_text(c) for c in children}


class _AddsFarDiscs:
    """Never helps: each round it adds a new small disc far from the shape."""

    name = "far-discs"

    def __init__(self) -> None:
        self.n = count()

    def propose(self, target, states, images, k):
        return [[Proposal(Edit(0, parse(f"(+ {to_text(s)} (Circle 1 {next(self.n) % 16:X} 0))")), 0.0) for _ in range(k)] for s in states]


def test_a_stalled_search_polishes_the_best_numbers_to_the_goal() -> None:
    target = render(parse("(- (Circle 9 E 9) (Quad E 6 D A L))"))
    near = "(- (Circle 9 E 9) (Quad F 7 F A L))"  # three numbers off: IoU 0.95
    params = SearchParams(budget=800, beam=4, proposals=4, style="filled", start=near, polish_after=32)
    unpolished = solve(target, _AddsFarDiscs(), SearchParams(**{**params.__dict__, "polish_after": 0}))
    assert not unpolished.solved and unpolished.program == near
    polished = solve(target, _AddsFarDiscs(), params)
    assert polished.solved and polished.iou >= 0.98 and polished.renders <= 800
    assert polished.path[0].program == near and len(polished.path) >= 2  # the path replays the polish steps
