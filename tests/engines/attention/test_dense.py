"""Dense round trips, the error for masks FlashMask cannot hold, and the N²-free heat map."""

from __future__ import annotations

import numpy as np
import pytest

from engines.attention import MASKS, build, density_image, from_dense, make_mask, to_dense
from engines.attention.dense import MAX_DENSE_ELEMENTS
from engines.core import EngineError

from .helpers import random_vectors


@pytest.mark.parametrize("name", list(MASKS))
def test_library_masks_round_trip_in_their_own_form(name: str) -> None:
    mask = build(name, 96)
    dense = to_dense(mask)[0, 0]
    back = from_dense(dense)
    np.testing.assert_array_equal(to_dense(back)[0, 0], dense)
    assert (back.causal, back.c) == (mask.causal, mask.c)


@pytest.mark.parametrize("causal,c", [(True, 1), (True, 2), (False, 2), (False, 4)])
def test_random_masks_round_trip_including_rectangular(causal: bool, c: int) -> None:
    rng = np.random.default_rng(c)
    for n_q, n_k in ((13, 13), (7, 19), (19, 7)):
        dense = to_dense(make_mask(random_vectors(rng, n_q, n_k, causal, c, heads=2), causal, n_q))
        np.testing.assert_array_equal(to_dense(from_dense(dense)), dense)
        np.testing.assert_array_equal(to_dense(from_dense(dense, causal=False)), dense)


def test_three_gaps_name_the_first_such_column() -> None:
    dense = np.ones((10, 6), dtype=bool)
    dense[[1, 4, 7], 2] = False  # column 2: three separate masked rows
    dense[[0, 5, 9], 4] = False
    with pytest.raises(EngineError, match=r"column 2 has 3 masked gaps; FlashMask can represent at most two"):
        from_dense(dense)


def test_causal_requested_for_a_non_causal_mask_is_refused() -> None:
    with pytest.raises(EngineError, match="column 1: row 0 may attend to it above the causal diagonal"):
        from_dense(np.ones((4, 4), dtype=bool), causal=True)


def test_causal_form_needs_one_gap_below_the_diagonal() -> None:
    dense = np.tril(np.ones((8, 8), dtype=bool))
    dense[[2, 5], 0] = False
    mask = from_dense(dense)  # two gaps below the diagonal: only the bidirectional C=4 form holds it
    assert not mask.causal and mask.c == 4
    with pytest.raises(EngineError, match="column 0 has 2 masked gaps below the causal diagonal; a causal FlashMask holds one"):
        from_dense(dense, causal=True)


def test_non_boolean_input_is_refused() -> None:
    with pytest.raises(EngineError, match="must be boolean"):
        from_dense(np.full((3, 3), 0.5))
    with pytest.raises(EngineError, match=r"shape \[N_q, N_k\]"):
        from_dense(np.ones(5, dtype=bool))


def test_huge_dense_masks_are_refused_before_allocating() -> None:
    mask = build("causal", 1 << 15)
    assert mask.n_q * mask.n_k > MAX_DENSE_ELEMENTS
    with pytest.raises(EngineError, match="too large to materialise; use the downsampled view"):
        to_dense(mask)


@pytest.mark.parametrize("name", ["causal", "global_sliding", "prefix_document", "random_eviction"])
def test_density_image_is_exact_at_full_size_and_block_averages_when_smaller(name: str) -> None:
    mask = build(name, 120)
    dense = to_dense(mask)[0, 0].astype(float)
    np.testing.assert_array_equal(density_image(mask, 120, 120), dense)
    np.testing.assert_allclose(density_image(mask, 30, 40), dense.reshape(30, 4, 40, 3).mean(axis=(1, 3)))


def test_density_image_of_a_million_token_mask_stays_small() -> None:
    image = density_image(build("causal_document", 1 << 20), 64, 64)
    assert image.shape == (64, 64)
    assert image[0, -1] == 0.0 and image[-1, -1] > 0.4 and 0 < image.mean() < 0.2
