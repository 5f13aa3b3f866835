"""from_dict enforces the types it is given: a wrong-typed field is one sentence naming its path,
never a crash deep in the engine that reads it later."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest

from engines.core import EngineError, from_dict
from engines.core.serial import CHECK, KEY


@dataclass(frozen=True)
class Point:
    x: float
    y: float = 0.0


@dataclass(frozen=True)
class Track:
    name: str
    points: tuple[tuple[float, float], ...] = ()
    start: Point = field(default_factory=lambda: Point(0.0))
    tags: tuple[str, ...] = ()
    notes: dict[str, float] = field(default_factory=dict)


@pytest.mark.parametrize(
    "data,needle",
    [
        ({"name": "a", "start": None}, r"field 'start' must be an object \(Point\), got None"),
        ({"name": "a", "start": [1, 2]}, r"field 'start' must be an object \(Point\), got \[1, 2\]"),
        ({"name": "a", "start": {"x": "abc"}}, r"field 'start.x' must be a number, got 'abc'"),
        ({"name": "a", "start": {"y": 1.0}}, r"Point at start lacks the field\(s\) 'x'"),
        ({"name": "a", "tags": "abc"}, r"field 'tags' must be a list, got 'abc'"),
        ({"name": "a", "points": [[1, 2], [3]]}, r"field 'points\[1\]' must be a list of 2 values, got \[3\]"),
        ({"name": "a", "points": [[1, True]]}, r"field 'points\[0\]\[1\]' must be a number, got True"),
        ({"name": "a", "notes": [1]}, r"field 'notes' must be an object, got \[1\]"),
        ({"name": 5}, r"field 'name' must be str, got 5"),
        ({}, r"Track lacks the field\(s\) 'name'"),
    ],
)
def test_wrong_types_and_shapes_name_the_field(data: dict, needle: str) -> None:
    with pytest.raises(EngineError, match=needle):
        from_dict(Track, data)


def test_null_in_a_float_field_is_nan_as_to_jsonable_writes_it() -> None:
    track = from_dict(Track, {"name": "a", "start": {"x": None}, "points": [[1, 2]]})
    assert math.isnan(track.start.x) and track.points == ((1.0, 2.0),)


def test_json_loads_names_the_file_for_bad_and_deeply_nested_text() -> None:
    from engines.core import json_loads

    assert json_loads('{"a": [1, 2]}', "x.json") == {"a": [1, 2]}
    with pytest.raises(EngineError, match=r"x.json is not valid JSON \(line 1, column 2"):
        json_loads("{oops", "x.json")
    with pytest.raises(EngineError, match="x.json is not valid JSON here: its lists or objects nest too deeply"):
        json_loads("[" * 100_000 + "]" * 100_000, "x.json")


def _even(value, name="count"):
    if not isinstance(value, int) or value % 2:
        raise ValueError(f"{name} must be an even whole number, not {value!r}")
    return value


@dataclass(frozen=True)
class Checked:
    count: int = field(default=0, metadata={CHECK: _even})
    klass: str = field(default="", metadata={KEY: "class"})


def test_a_field_check_reads_the_value_and_its_sentence_is_the_error() -> None:
    assert from_dict(Checked, {"count": 4}).count == 4
    with pytest.raises(EngineError) as info:
        from_dict(Checked, {"count": 3})
    assert str(info.value) == "count must be an even whole number, not 3"


def test_a_field_with_a_json_key_is_read_and_written_under_that_key() -> None:
    from engines.core import to_jsonable

    value = from_dict(Checked, {"class": "b"})
    assert value.klass == "b" and to_jsonable(value) == {"count": 0, "class": "b"}
    with pytest.raises(EngineError, match="unknown Checked field"):
        from_dict(Checked, {"klass": "b"})
