"""Every library mask equals an independent element-by-element construction of the same mask."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from engines.attention import MASKS, build, to_dense
from engines.attention.library import resolve_params
from engines.core import EngineError

from .helpers import allowed_by_definition

N = 64


def _shared_question_layout(n: int, samples: int, answers: int, question: float) -> dict:
    sample = np.repeat(np.arange(samples), n // samples)
    part = np.empty(n, dtype=int)
    span = n // samples
    q_len = int(round(question * span))
    a_len = (span - q_len) // answers
    for s in range(samples):
        base = s * span
        part[base : base + q_len] = -1
        for a in range(answers):
            part[base + q_len + a * a_len : base + q_len + (a + 1) * a_len] = s * answers + a
    return {"sample": sample, "part": part}


CASES = [
    ("full", {}, {}),
    ("causal", {}, {}),
    ("sliding_window", {"window": 5}, {"window": 5}),
    ("causal_document", {"docs": "1,1,2"}, {"edges": [0, 16, 32, 64]}),
    ("document", {"docs": "3,1"}, {"edges": [0, 48, 64]}),
    ("shared_question", {"samples": 2, "answers": 2, "question": 0.5}, _shared_question_layout(N, 2, 2, 0.5)),
    ("global_sliding", {"global_tokens": 4, "left": 3, "right": 6}, {"global_tokens": 4, "left": 3, "right": 6}),
    ("causal_blockwise", {"blocks": "1,1,2"}, {"edges": [0, 16, 32, 64]}),
    ("prefix_lm", {"prefix": 10}, {"prefix": 10}),
    ("prefix_document", {"docs": "1,1", "prefix": 0.25}, {"edges": [0, 32, 64], "prefix": 0.25}),
    ("qk_sparse", {"start": 20, "length": 12}, {"start": 20, "length": 12}),
]


@pytest.mark.parametrize("name,params,truth", CASES, ids=[c[0] for c in CASES])
def test_builder_matches_its_definition(name: str, params: dict, truth: dict) -> None:
    mask = build(name, N, params)
    np.testing.assert_array_equal(to_dense(mask)[0, 0], allowed_by_definition(name, N, truth))


def test_the_cases_cover_the_whole_library_but_random_eviction() -> None:
    assert {c[0] for c in CASES} | {"random_eviction"} == set(MASKS)


def test_random_eviction_is_causal_seeded_and_evicts_at_the_rate() -> None:
    n = 4000
    mask = build("random_eviction", n, {"rate": 0.3, "seed": 7})
    lts = mask.indices[0, 0, :, 0].astype(int)
    j = np.arange(n)
    assert mask.causal and mask.c == 1
    assert np.all((lts > j) & (lts <= n))  # a key is never evicted before its own row
    assert 0.25 < np.mean(lts < n) < 0.35
    np.testing.assert_array_equal(build("random_eviction", n, {"rate": 0.3, "seed": 7}).indices, mask.indices)
    assert not np.array_equal(build("random_eviction", n, {"rate": 0.3, "seed": 8}).indices, mask.indices)
    dense = to_dense(build("random_eviction", 50, {"rate": 0.5, "seed": 1}))[0, 0]
    for col in range(50):  # visible rows of each key form one run starting at the key itself
        rows = np.flatnonzero(dense[:, col])
        assert rows[0] == col and np.all(np.diff(rows) == 1)


@pytest.mark.parametrize("name", list(MASKS))
def test_every_mask_builds_at_awkward_sizes(name: str) -> None:
    for n in (1, 2, 7, 127):
        mask = build(name, n)
        assert mask.n_q == mask.n_k == n


def test_a_128k_mask_builds_without_quadratic_memory() -> None:
    """At N = 131072 a dense mask would take 16 GiB; builders work on the vectors only."""
    for name in MASKS:
        tracemalloc.start()
        mask = build(name, 131072)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 256 * 131072, name  # tens of bytes a column, not N
        assert mask.indices.nbytes <= 16 * 131072


@pytest.mark.parametrize(
    "name,params,fragment",
    [
        ("nope", {}, "unknown mask 'nope'"),
        ("sliding_window", {"width": 3}, "has no parameter width (its parameters: window)"),
        ("sliding_window", {"window": "abc"}, "window='abc' must be a whole number"),
        ("sliding_window", {"window": 2.5}, "must be a whole number"),
        ("sliding_window", {"window": 1000}, "out of range"),
        ("document", {"docs": "1,-1"}, "positive sizes"),
        ("causal_document", {"docs": "1e308,1e308"}, "positive sizes with a finite sum"),  # once overflowed into one document
        ("random_eviction", {"rate": 2}, "rate=2.0 is out of range"),
    ],
)
def test_bad_parameters_are_named(name: str, params: dict, fragment: str) -> None:
    with pytest.raises(EngineError) as info:
        build(name, 64, params)
    assert fragment in str(info.value)


def test_defaults_scale_with_n_and_strings_parse() -> None:
    assert resolve_params("sliding_window", 8192) == {"window": 1024}
    assert resolve_params("document", 100, {"docs": "1; 2"}) == {"docs": (1.0, 2.0)}
    with pytest.raises(EngineError, match="sequence length"):
        build("causal", 0)


def test_segment_edges_refuse_sizes_whose_sum_overflows() -> None:
    """Builders called directly (not through Param.parse) are guarded too: no overflow warning, no
    silently collapsed documents."""
    from engines.attention.library import segment_edges

    np.testing.assert_array_equal(segment_edges(8, (1.0, 1.0)), [0, 4, 8])
    with pytest.raises(EngineError, match="finite sum"):
        segment_edges(1024, (1e308, 1e308))
