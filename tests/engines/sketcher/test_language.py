"""CSG2D: the grammar, printing back identically, and errors that name the position."""

from __future__ import annotations

import random

import pytest

from engines.core import EngineError
from engines.sketcher.edits import random_program
from engines.sketcher.language import MAX_DEPTH, error_position, parse, to_text
from engines.sketcher.vocab import ADD, CIRCLE, NUM0, QUAD, SUB


def test_round_trip_on_random_programs() -> None:
    rng = random.Random(7)
    for _ in range(500):
        text = to_text(random_program(rng, rng.randint(1, 10)))
        assert to_text(parse(text)) == text


def test_tokens_follow_the_grammar() -> None:
    tokens = parse("(- (Circle F 0 A) (Quad 1 2 3 4 N))")
    assert tokens[0] == SUB and tokens[1] == CIRCLE and tokens[5] == QUAD
    assert [t - NUM0 for t in tokens[2:5]] == [15, 0, 10]
    assert parse("(+ (Circle 1 1 1) (Circle 2 2 2))")[0] == ADD
    assert to_text(parse("  (Quad 1 2 3 4 G)\n")) == "(Quad 1 2 3 4 G)"


@pytest.mark.parametrize(
    "text, position, fragment",
    [
        ("(Circle 5 8)", 12, "expected ' '"),
        ("(Circle 5 8 G)", 13, "a number 0-F"),
        ("(Quad 1 2 3 4 5)", 15, "an angle G-N"),
        ("(* (Circle 1 1 1) (Circle 1 1 1))", 2, "'+' or '-'"),
        ("(Circle 5  8 8)", 11, "a number"),
        ("(Circle 1 2 3) x", 15, "the program ends at position 14, but ' ' follows"),
        ("(+ (Circle 1 2 3)", 18, "expected ' '"),
        ("(circle 1 2 3)", 2, "'Circle'"),
    ],
)
def test_parse_errors_name_the_position(text: str, position: int, fragment: str) -> None:
    with pytest.raises(EngineError) as info:
        parse(text)
    message = str(info.value)
    assert error_position(message) == position, message
    assert fragment in message


def test_empty_program_is_an_error() -> None:
    with pytest.raises(EngineError, match="empty"):
        parse("   ")


def test_nesting_is_bounded_with_its_position() -> None:
    """Thousands of nested operators once blew Python's recursion limit; 100 still parse and render."""

    def chain(n: int) -> str:
        return "(+ (Circle 1 1 1) " * n + "(Circle 1 1 1)" + ")" * n

    assert len(parse(chain(MAX_DEPTH))) == MAX_DEPTH + 4 * (MAX_DEPTH + 1)  # one token per operator, four per circle
    assert to_text(parse(chain(MAX_DEPTH))) == chain(MAX_DEPTH)
    with pytest.raises(EngineError, match="nests too deeply") as info:
        parse(chain(3000))
    assert error_position(str(info.value)) == 18 * MAX_DEPTH + 4  # the circle one level too deep


@pytest.mark.parametrize(
    "text, end, follows",
    [
        ("(Circle 6 8 8)x", 14, "'x'"),
        ("(Circle 6 8 8))", 14, "')'"),
        ("(Circle 6 8 8)\n(Circle 1 2 3)", 14, "'\\n'"),
        ("  (+ (Circle 6 8 8) (Circle 1 2 3))(", 35, "'('"),
    ],
)
def test_text_after_a_complete_program_is_said_as_such(text: str, end: int, follows: str) -> None:
    """Not "expected ' ' or ')'": the program was whole, and something came after it."""
    with pytest.raises(EngineError) as info:
        parse(text)
    assert str(info.value) == f"syntax error at position {end + 1}: the program ends at position {end}, but {follows} follows"
