"""Paddle's startend_row_indices semantics, checked against the rules applied literally."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engines.attention import FlashMask, as_mask, make_mask, to_dense
from engines.core import EngineError

from .helpers import dense_from_rules, random_vectors


@pytest.mark.parametrize("causal,c", [(True, 1), (True, 2), (False, 2), (False, 4)])
@pytest.mark.parametrize("n_q,n_k", [(1, 1), (9, 9), (6, 11), (11, 6)])
def test_dense_matches_the_rules_for_every_mode(causal: bool, c: int, n_q: int, n_k: int) -> None:
    rng = np.random.default_rng(n_q * 100 + n_k * 7 + c)
    for _ in range(5):
        vec = random_vectors(rng, n_q, n_k, causal, c)
        mask = make_mask(vec, causal, n_q)
        np.testing.assert_array_equal(to_dense(mask)[0, 0], dense_from_rules(vec[0, 0], causal, n_q))


def test_causal_with_fewer_queries_aligns_bottom_right() -> None:
    mask = make_mask(np.full((5, 1), 3), True, n_q=3)  # N_q=3, N_k=5, no extra masking
    dense = to_dense(mask)[0, 0]
    # the last query row sees every key, the first sees keys 0..2 (offset N_k - N_q = 2)
    np.testing.assert_array_equal(dense, np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=bool))


def test_shapes_are_normalised_and_described() -> None:
    mask = make_mask([4, 4, 4, 4], True)
    assert isinstance(mask, FlashMask) and mask.indices.shape == (1, 1, 4, 1) and mask.indices.dtype == np.int32
    assert "C=1" in mask.describe() and "LTS" in mask.describe()


@pytest.mark.parametrize(
    "vec,causal,n_q,fragment",
    [
        (np.array([[3, 1], [2, 5]]), True, 6, "column 0"),  # inverted LTS > LTE
        (np.array([[0, 0, 5, 2]]), False, 6, "UTS=5 > UTE=2"),
        (np.array([[7], [1]]), True, 6, "column 0: LTS=7 is outside the rows 0..6"),
        (np.array([[1, 2], [3, -1]]), False, 6, "column 1: UTE=-1"),
        (np.zeros((4, 3)), True, 4, "needs C in (1, 2)"),
        (np.zeros((4, 1)), False, 4, "needs C in (2, 4)"),
        (np.zeros((2, 2, 2)), True, 4, "shape [B, H, N_k, C]"),
        (np.array([[0.5]]), True, 4, "must hold integers"),
        (np.array([[1e308, -1e308]]), True, 4, "must hold integers"),  # wrapped round to garbage in int64
        (np.array([[np.nan, 1.0]]), True, 4, "must hold integers"),
    ],
)
def test_bad_vectors_get_one_clear_sentence(vec, causal, n_q, fragment) -> None:
    with pytest.raises(EngineError, match=None) as info:
        make_mask(vec, causal, n_q)
    assert fragment in str(info.value)


def test_the_column_named_is_the_first_bad_one_with_its_head() -> None:
    vec = np.zeros((1, 2, 8, 2), dtype=np.int32)
    vec[..., 0] = 8
    vec[0, 1, 5] = [9, 0]
    with pytest.raises(EngineError, match=r"column 5 \(head 1\): LTS=9"):
        make_mask(vec, False, 8)


def test_as_mask_checks_lengths_and_mode() -> None:
    mask = make_mask(np.full((4, 1), 4), True)
    with pytest.raises(EngineError, match="N_q=4, N_k=4 but q has 5 rows"):
        as_mask(mask, True, 5, 4)
    with pytest.raises(EngineError, match="causal=True but the call says causal=False"):
        as_mask(mask, False, 4, 4)
    assert to_dense(as_mask(None, True, 3, 3))[0, 0].sum() == 6


@pytest.mark.parametrize(
    "n_q,fragment",
    [
        ([1], "n_q [1] must be a whole number"),  # was a TypeError traceback
        (10**12, "n_q 1000000000000 must be a whole number from 1 to 1048576"),  # was a 58 GiB allocation
        (16.7, "n_q 16.7 must be a whole number"),  # was silently truncated to 16
        ("16", "n_q '16' must be a whole number"),
        (True, "n_q True must be a whole number"),
    ],
)
def test_query_lengths_from_files_are_checked_like_library_lengths(tmp_path, n_q, fragment: str) -> None:
    from engines.attention.export import load_vectors

    path = tmp_path / "v.json"
    path.write_text(json.dumps({"causal": True, "n_q": n_q, "startend_row_indices": [[16]] * 16}))
    with pytest.raises(EngineError, match=None) as info:
        load_vectors(path)
    assert fragment in str(info.value)


def test_causal_in_a_json_file_must_be_a_boolean(tmp_path) -> None:
    """ "false" (a string) was read as True."""
    from engines.attention.export import load_vectors

    path = tmp_path / "v.json"
    path.write_text(json.dumps({"causal": "false", "n_q": 16, "startend_row_indices": [[16, 0]] * 16}))
    with pytest.raises(EngineError, match="'causal' must be true or false, got 'false'"):
        load_vectors(path)
    path.write_text(json.dumps({"causal": False, "n_q": 16, "startend_row_indices": [[16, 0]] * 16}))
    assert load_vectors(path).causal is False


@pytest.mark.parametrize("c,causal", [(1, True), (4, False)])
def test_npy_vectors_infer_the_mode_from_c_and_c2_needs_it_said(tmp_path, c: int, causal: bool) -> None:
    from engines.attention.export import load_vectors, vectors_npy

    mask = make_mask(np.tile([16, 16, 0, 0], (16, 1)) if c == 4 else np.full((16, 1), 16), causal, 16)
    (tmp_path / "v.npy").write_bytes(vectors_npy(mask))
    assert load_vectors(tmp_path / "v.npy").causal is causal
    (tmp_path / "c2.npy").write_bytes(vectors_npy(make_mask(np.tile([16, 16], (16, 1)), True, 16)))
    with pytest.raises(EngineError, match="C=2 vectors.*say which"):
        load_vectors(tmp_path / "c2.npy")
