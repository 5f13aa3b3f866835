"""Composition by interval arithmetic equals the dense intersection / union, or names the column."""

from __future__ import annotations

import numpy as np
import pytest

from engines.attention import MASKS, build, from_dense, make_mask, to_dense
from engines.attention.compose import compose
from engines.core import EngineError

from .helpers import random_vectors


@pytest.mark.parametrize("operation", ["intersection", "union"])
def test_library_pairs_match_dense_or_are_truly_unrepresentable(operation: str) -> None:
    refused = 0
    for a_name in MASKS:
        for b_name in MASKS:
            a, b = build(a_name, 64), build(b_name, 64)
            da, db = to_dense(a), to_dense(b)
            want = (da & db) if operation == "intersection" else (da | db)
            try:
                got = to_dense(compose(a, b, operation))
            except EngineError:
                refused += 1
                with pytest.raises(EngineError):
                    from_dense(want)
                continue
            np.testing.assert_array_equal(got, want, err_msg=f"{a_name} {operation} {b_name}")
    assert refused < 10


def test_random_rectangular_per_head_masks() -> None:
    rng = np.random.default_rng(5)
    for _ in range(60):
        n_q, n_k = (int(x) for x in rng.integers(1, 25, 2))
        ca, cb = bool(rng.integers(2)), bool(rng.integers(2))
        a = make_mask(random_vectors(rng, n_q, n_k, ca, int(rng.choice([1, 2] if ca else [2, 4])), heads=2), ca, n_q)
        b = make_mask(random_vectors(rng, n_q, n_k, cb, int(rng.choice([1, 2] if cb else [2, 4]))), cb, n_q)
        want = to_dense(a) & to_dense(b)
        try:
            np.testing.assert_array_equal(to_dense(compose(a, b)), want)
        except EngineError:
            with pytest.raises(EngineError):
                from_dense(want)


def test_a_union_that_needs_three_gaps_names_the_first_column() -> None:
    n = 40
    j = np.arange(n)
    # a: key j visible to rows [j, j+2) and [j+10, n); b: only to rows [j+5, j+7)
    a = make_mask(np.stack([np.minimum(j + 2, n), np.minimum(j + 10, n)], axis=1), True)
    b = make_mask(np.stack([np.minimum(j + 7, n), np.minimum(j + 5, n)], axis=1), False)
    with pytest.raises(EngineError, match=r"^column 1 has 3 masked gaps"):
        compose(a, b, "union")
    assert to_dense(compose(a, b, "intersection")).sum() == 0  # the islands never meet


def test_mismatched_masks_are_refused() -> None:
    with pytest.raises(EngineError, match="differ in size"):
        compose(build("causal", 10), build("causal", 11))
    with pytest.raises(EngineError, match="unknown operation"):
        compose(build("causal", 10), build("causal", 10), "xor")
