"""Small mutations, the reverse edit path and training pairs."""

from __future__ import annotations

import random

import numpy as np

from engines.sketcher.editpath import differing_nodes, edit_path, next_edits, training_pair
from engines.sketcher.edits import Edit, count_primitives, mutate, node_end, primitive_counts, random_mutation, random_program
from engines.sketcher.language import parse, to_text
from engines.sketcher.render import render
from engines.sketcher.sketch import sketch_render
from engines.sketcher.vocab import rule_of


def test_node_spans_and_primitive_counts() -> None:
    tokens = parse("(- (Circle 1 2 3) (+ (Quad 1 2 3 4 G) (Circle 4 5 6)))")
    assert node_end(tokens, 0) == len(tokens)
    assert node_end(tokens, 1) == 5
    assert to_text(tokens[5 : node_end(tokens, 5)]) == "(+ (Quad 1 2 3 4 G) (Circle 4 5 6))"
    counts = primitive_counts(tokens)
    assert counts[0] == 3 and counts[1] == 1 and counts[5] == 2 and counts[2] == 0


def test_mutations_are_small_valid_and_change_the_program() -> None:
    rng = random.Random(11)
    for _ in range(400):
        program = random_program(rng, rng.randint(1, 8))
        edit = random_mutation(program, rng)
        counts = primitive_counts(program)
        assert counts[edit.pos] <= 2
        assert count_primitives(edit.replacement) <= 2
        assert rule_of(edit.replacement[0]) == rule_of(program[edit.pos])
        mutated = edit.apply(program)
        assert mutated != program
        assert parse(to_text(mutated)) == mutated


def test_mutation_picks_the_primitive_count_uniformly() -> None:
    rng = random.Random(5)
    program = random_program(rng, 8)
    counts = primitive_counts(program)
    seen = [counts[random_mutation(program, rng).pos] for _ in range(3000)]
    shares = np.bincount(seen, minlength=3)[:3] / len(seen)
    assert np.all(np.abs(shares - 1 / 3) < 0.05), shares


def test_edit_path_walks_to_the_first_differences() -> None:
    target = parse("(+ (Circle 1 2 3) (Quad 4 5 6 7 H))")
    current = parse("(+ (Circle 1 2 9) (Circle 4 5 6))")
    diffs = differing_nodes(current, target)
    assert [(pos, to_text(sub) if len(sub) > 1 else sub) for pos, sub in diffs] == [
        (4, target[4:5]),
        (5, "(Quad 4 5 6 7 H)"),
    ]


def test_big_target_subtrees_are_approached_by_small_edits() -> None:
    target = parse("(- (+ (Circle 1 1 1) (- (Quad 2 2 2 2 G) (Circle 3 3 3))) (Circle 4 4 4))")
    current = parse("(Circle 9 9 9)")
    (edit,) = next_edits(current, target)
    assert to_text(edit.replacement) == "(- (Circle 1 1 1) (Circle 4 4 4))"
    rng = random.Random(0)
    path = edit_path(current, target, rng)
    state = current
    for step in path:
        assert count_primitives(step.replacement) <= 2
        state = step.apply(state)
    assert state == target


def test_edit_paths_always_reach_the_target() -> None:
    rng = random.Random(2)
    for _ in range(300):
        target = random_program(rng, rng.randint(1, 8))
        start = mutate(target, rng, rng.randint(1, 5)) if rng.random() < 0.8 else random_program(rng, rng.randint(1, 8))
        state = start
        for edit in edit_path(start, target, rng):
            state = edit.apply(state)
        assert state == target


def test_training_pair_labels_one_step_of_the_path() -> None:
    rng = random.Random(4)
    for _ in range(200):
        target = random_program(rng, rng.randint(1, 8))
        pair = training_pair(target, rng)
        assert pair.state != target and pair.remaining >= 1
        after = pair.edit.apply(pair.state)
        assert len(edit_path(after, target, random.Random(0))) == pair.remaining - 1
        assert isinstance(pair.edit, Edit)


def test_sketch_style_follows_the_outline() -> None:
    tokens = parse("(Quad 8 8 5 5 G)")
    sketch = sketch_render(tokens, np.random.default_rng(0))
    clean = render(tokens)
    assert sketch.any() and sketch.sum() < clean.sum() / 2  # strokes, not a fill
    ys, xs = np.nonzero(sketch)
    # 64x64: the square spans pixels 22..42 on both axes (centre 32, half side 10 pixels)
    assert 19 <= xs.min() <= 25 and 39 <= xs.max() <= 45 and 19 <= ys.min() <= 25 and 39 <= ys.max() <= 45
    assert not sketch[28:37, 28:37].any()  # the middle stays blank
    other = sketch_render(tokens, np.random.default_rng(1))
    assert not np.array_equal(sketch, other)  # jittered: every drawing differs
