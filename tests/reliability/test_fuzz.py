"""Property-based fuzzing of every reader of a user's file (hypothesis): random bytes, mutations of
a valid file (bit flips, cuts, splices, extreme numbers, repeats), and structured inputs. The
property: a result or an EngineError, never another exception, within the deadline.

Examples per test: WORKBENCH_FUZZ_EXAMPLES (default 20; the run is derandomised, so it repeats).
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engines.core import EngineError

from .fuzz_readers import READERS, Reader

EXAMPLES = int(os.environ.get("WORKBENCH_FUZZ_EXAMPLES", "20"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=timedelta(seconds=10),  # per example, on a loaded 2-core machine; typical examples take milliseconds
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
EXTREMES = [
    b"0",
    b"-1",
    b"nan",
    b"inf",
    b"-inf",
    b"1e308",
    b"-1e309",
    b"1e-320",
    b"99999999999999999999999",
    b"-0",
    b"",
    b"\x00",
    b"\xff\xfe",
    b"[]",
    b"{}",
    b"null",
    b'"x"',
    b"4294967296",
    b"-2147483649",
    b"true",
    b"1.5",
]
NUMBER = re.compile(rb"-?\d+(\.\d+)?([eE][-+]?\d+)?")
SCRATCH = Path(tempfile.mkdtemp(prefix="workbench-fuzz-"))


def answers(reader: Reader, data: bytes) -> None:
    """The property: a result or an EngineError, nothing else."""
    path = SCRATCH / f"fuzz{reader.suffix}"
    path.write_bytes(data)
    try:
        reader.read(path)
    except EngineError as exc:
        assert str(exc).strip() and "\n" not in str(exc).strip(), f"not one sentence: {exc!r}"


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 3))):
        if not data:
            data = bytearray(b" ")
        kind = draw(st.sampled_from(("flip", "truncate", "splice", "number", "repeat")))
        pos = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[pos:]
        elif kind == "splice":
            data[pos : pos + draw(st.integers(0, 8))] = draw(st.binary(max_size=16) | st.sampled_from(EXTREMES))
        elif kind == "number":
            match = NUMBER.search(bytes(data), pos) or NUMBER.search(bytes(data))
            if match:
                data[match.start() : match.end()] = draw(st.sampled_from(EXTREMES))
        else:
            data[pos:pos] = data[pos : pos + 64] * draw(st.integers(1, 40))
    return bytes(data)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def json_mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """The valid document with one value somewhere in it replaced by any JSON value."""
    doc = json.loads(seed)
    node, key = None, None
    cursor: Any = doc
    for _ in range(draw(st.integers(0, 6))):
        keys = list(cursor.keys()) if isinstance(cursor, dict) else list(range(len(cursor))) if isinstance(cursor, list) else []
        if not keys:
            break
        node, key = cursor, draw(st.sampled_from(keys))
        cursor = cursor[key]
    value = draw(JSON_VALUES)
    if node is None:
        doc = value
    else:
        node[key] = value
    return json.dumps(doc, allow_nan=True).encode()


def strategy(reader: Reader, seed: bytes) -> st.SearchStrategy[bytes]:
    options = [st.binary(max_size=600), mutated(seed)]
    if reader.suffix.endswith(".json"):
        options.append(json_mutated(seed))
    return st.one_of(options)


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.name)
def test_reader_gives_a_result_or_one_sentence(reader: Reader) -> None:
    seed = reader.sample()
    answers(reader, seed)  # the seed itself is read without complaint or with one sentence

    @FUZZ
    @given(strategy(reader, seed))
    def check(data: bytes) -> None:
        answers(reader, data)

    check()


TOKENS = st.sampled_from(
    [
        "(",
        ")",
        "+",
        "-",
        "*",
        "Circle",
        "Quad",
        "H",
        "V",
        "0",
        "8",
        "15",
        "16",
        "-3",
        "99999999999",
        "1.5",
        "nan",
        " ",
        "\n",
        "(Circle 6 8 8)",
        "(Quad 8 8 2 2 H)",
        "é",
        "\x00",
    ]
)


@FUZZ
@given(st.lists(TOKENS, max_size=40).map(" ".join) | st.text(max_size=200))
def test_program_text_parses_or_says_why(text: str) -> None:
    from engines.sketcher.language import error_position, parse, try_parse

    try:
        parse(text)
    except EngineError as exc:
        assert try_parse(text) == (None, str(exc))
        position = error_position(str(exc))
        assert position is None or 1 <= position <= len(text) + 1


@FUZZ
@given(
    st.integers(1, 300),
    st.integers(1, 300),
    st.sampled_from(["1", "L", "LA", "P", "RGB", "RGBA", "I", "F"]),
    st.sampled_from(["PNG", "BMP", "GIF", "TIFF", "JPEG", "WEBP"]),
    st.integers(0, 255),
)
def test_images_of_any_size_mode_and_format(width: int, height: int, mode: str, fmt: str, ink: int) -> None:
    from PIL import Image

    im = Image.new(mode, (width, height), 0 if mode in ("I", "F") else None)
    if mode not in ("I", "F"):
        im.paste(ink if mode in ("1", "L", "P", "I") else (ink,) * len(mode), (0, 0, max(1, width // 2), max(1, height // 3)))
    buf = io.BytesIO()
    try:
        im.save(buf, fmt)
    except (OSError, ValueError, KeyError):  # the format cannot hold this mode: nothing to read
        return
    reader = next(r for r in READERS if r.name.startswith("image"))
    answers(reader, buf.getvalue())


TENSORS = st.builds(
    lambda shape, dtype: __import__("torch").zeros(shape, dtype=getattr(__import__("torch"), dtype)),
    st.lists(st.integers(0, 4), max_size=3),
    st.sampled_from(["float32", "float16", "int64", "bool", "uint8"]),
)
PAYLOADS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | TENSORS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["config", "model", "format", "version", "meta", "x"]), inner, max_size=4)
    ),
    max_leaves=10,
)


@FUZZ
@given(PAYLOADS)
def test_checkpoints_of_any_structure(payload: Any) -> None:
    import torch

    buf = io.BytesIO()
    torch.save(payload, buf)
    for reader in READERS:
        if reader.suffix.endswith(".pt"):
            answers(reader, buf.getvalue())


@FUZZ
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=4),
    st.sampled_from(["<i4", "<i8", "<f4", "|b1", "|u1", "<f8", "<c8", "|S3", "<U2"]),
    st.booleans(),
)
def test_mask_arrays_of_any_shape_and_type(shape: list[int], dtype: str, causal: bool) -> None:
    rng = np.random.default_rng(len(shape))
    arr = rng.integers(-3, 9, shape).astype(dtype)
    buf = io.BytesIO()
    np.save(buf, arr)
    for reader in READERS:
        if reader.suffix == ".npy":
            answers(reader, buf.getvalue())
    vectors = next(r for r in READERS if r.name == "attention mask vectors .json")
    answers(vectors, json.dumps({"startend_row_indices": arr.tolist() if arr.dtype.kind in "iub" else [], "causal": causal}).encode())
