"""The shared session-value checks: what each accepts, what it refuses, and the one sentence it says."""

from __future__ import annotations

import math
import re

import pytest

from panels.session_checks import choice, flag, mapping, named, number, shown, text, whole


def refused(check, *args) -> str:
    with pytest.raises(ValueError) as info:
        check(*args)
    return str(info.value)


@pytest.mark.parametrize("value", [0, 7, 1_000_000])
def test_whole_accepts_ints_in_range(value: int) -> None:
    result = whole(value, "seed", 0, 1_000_000)
    assert result == value and type(result) is int


@pytest.mark.parametrize("value", ["x", None, True, False, 7.0, 5.5, math.nan, math.inf, [3], -1, 1_000_001, 10**20])
def test_whole_refuses_other_types_bools_floats_and_out_of_range(value) -> None:
    assert refused(whole, value, "seed", 0, 1_000_000) == f"seed must be a whole number from 0 to 1000000, not {value!r}"


def test_whole_says_the_example_sentence() -> None:
    assert refused(whole, "x", "seed", 0, 1_000_000) == "seed must be a whole number from 0 to 1000000, not 'x'"


@pytest.mark.parametrize("value", [0, 2.5, 10, -1e300, 10**40])
def test_number_without_a_range_takes_any_finite_number_as_a_float(value) -> None:
    result = number(value, "mask_threshold")
    assert result == float(value) and type(result) is float


@pytest.mark.parametrize("value", ["0.5", None, True, False, math.nan, math.inf, -math.inf, [1.0]])
def test_number_refuses_bools_nan_infinity_and_other_types(value) -> None:
    assert refused(number, value, "mask_threshold") == f"mask_threshold must be a number, not {value!r}"


@pytest.mark.parametrize("value", [0, 0.0, 4.5, 10])
def test_number_in_a_range_takes_both_ends(value) -> None:
    assert number(value, "weight", 0, 10) == value


@pytest.mark.parametrize("value", [-0.001, 10.5, 11, math.nan, True])
def test_number_out_of_its_range_names_the_range(value) -> None:
    assert refused(number, value, "weight", 0, 10) == f"weight must be a number from 0 to 10, not {value!r}"


@pytest.mark.parametrize("value", [True, False])
def test_flag_accepts_true_and_false(value: bool) -> None:
    assert flag(value, "reactive") is value


@pytest.mark.parametrize("value", [3, 0, 1, "false", "true", None, [True]])
def test_flag_refuses_what_bool_would_turn_into_one(value) -> None:
    assert refused(flag, value, "reactive") == f"reactive must be true or false, not {value!r}"


@pytest.mark.parametrize("value", ["", "room.ply"])
def test_text_accepts_strings(value: str) -> None:
    assert text(value, "path") == value


@pytest.mark.parametrize("value", [5, None, True, ["room.ply"], b"room.ply"])
def test_text_refuses_other_types(value) -> None:
    assert refused(text, value, "path") == f"path must be text, not {value!r}"


PLANNERS = ("diffusion", "idm", "pdm")


@pytest.mark.parametrize("value", PLANNERS)
def test_choice_accepts_the_names(value: str) -> None:
    assert choice(value, "planner", PLANNERS) == value


@pytest.mark.parametrize("value", ["foo", "IDM", "", None, 1, ["idm"]])
def test_choice_refuses_other_values_and_lists_the_names(value) -> None:
    assert refused(choice, value, "planner", PLANNERS) == f"unknown planner {value!r} (choose diffusion, idm, pdm)"


def test_choice_takes_the_keys_of_a_dict_as_its_names() -> None:
    layers = {"lanes": "Lanes", "agents": "Agents"}
    assert choice("agents", "layers", layers) == "agents"
    assert refused(choice, "Agents", "layers", layers) == "unknown layers 'Agents' (choose lanes, agents)"


@pytest.mark.parametrize("value", [{}, {"a": 1}])
def test_mapping_accepts_objects(value: dict) -> None:
    assert mapping(value, "thresholds") is value


@pytest.mark.parametrize("value", [[1, 2], None, "a", 3])
def test_mapping_refuses_other_types(value) -> None:
    assert refused(mapping, value, "thresholds") == f"thresholds must be an object of name: value, not {value!r}"


@pytest.mark.parametrize("value", [{}, {"collision": 1}, {"collision": 1, "speed": [True, 2.0]}])
def test_named_accepts_objects_keyed_by_known_names(value: dict) -> None:
    assert named(value, "guidance", ("collision", "speed")) is value


def test_named_refuses_an_unknown_name_and_names_it() -> None:
    message = refused(named, {"collision": 1, "sped": 2}, "guidance", ("collision", "speed"))
    assert message == "unknown guidance 'sped' (choose collision, speed)"


def test_named_refuses_what_is_not_an_object() -> None:
    assert refused(named, ["collision"], "guidance", ("collision",)) == "guidance must be an object of name: value, not ['collision']"


def test_a_huge_bad_value_is_cut_short_to_one_short_line() -> None:
    value = list(range(100_000))
    message = refused(whole, value, "seed", 0, 9)
    assert len(message) < 120 and "\n" not in message and message.startswith("seed must be a whole number from 0 to 9, not [0, 1, ")
    assert shown(value) in message and shown("x" * 1000) != repr("x" * 1000)


@pytest.mark.parametrize(
    "check, args, bad",
    [
        (whole, ("many", "anchors", 1, 128), "'many'"),
        (number, ("many", "anchors"), "'many'"),
        (flag, (2, "anchors"), "2"),
        (text, (1, "anchors"), "1"),
        (choice, ("many", "anchors", ("a",)), "'many'"),
        (mapping, ("many", "anchors"), "'many'"),
        (named, ({"many": 1}, "anchors", ("a",)), "'many'"),
    ],
)
def test_every_sentence_names_the_key_and_the_bad_value(check, args, bad: str) -> None:
    message = refused(check, *args)
    assert "anchors" in message and re.search(rf"(^|\s){re.escape(bad)}(\s|$)", message), message
    assert "\n" not in message and not message.endswith(".")
