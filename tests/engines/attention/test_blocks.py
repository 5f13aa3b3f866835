"""Tile classification is never wrong about a tile, and the memory numbers are what they say."""

from __future__ import annotations

import numpy as np
import pytest

from engines.attention import MASKS, build, classify, make_mask, mask_stats, to_dense
from engines.attention.blocks import MASKED, PARTIAL, UNMASKED

from .helpers import random_vectors


def _check(mask, bq: int, bk: int) -> None:
    layout = classify(mask, bq, bk)
    dense = to_dense(mask)
    for b in range(mask.batch):
        for h in range(mask.heads):
            for t, (r0, r1) in enumerate(zip(layout.row_edges[:-1], layout.row_edges[1:])):
                for u, (c0, c1) in enumerate(zip(layout.col_edges[:-1], layout.col_edges[1:])):
                    tile = dense[b, h, r0:r1, c0:c1]
                    kind = layout.kinds[b, h, t, u]
                    if kind == MASKED:
                        assert not tile.any()
                    elif kind == UNMASKED:
                        assert tile.all()


@pytest.mark.parametrize("name", list(MASKS))
def test_library_tiles_are_classified_safely(name: str) -> None:
    _check(build(name, 200), 32, 16)


@pytest.mark.parametrize("causal,c", [(True, 1), (True, 2), (False, 2), (False, 4)])
def test_random_tiles_are_classified_safely(causal: bool, c: int) -> None:
    rng = np.random.default_rng(3)
    for n_q, n_k in ((50, 50), (30, 70), (70, 30)):
        _check(make_mask(random_vectors(rng, n_q, n_k, causal, c, heads=2), causal, n_q), 8, 8)


def test_causal_rho_and_counts() -> None:
    stats = mask_stats(build("causal", 1024), 128, 128)
    assert (stats.tiles, stats.tiles_masked, stats.tiles_partial, stats.tiles_unmasked) == (64, 28, 8, 28)
    assert stats.rho == pytest.approx(28 / 64) and stats.ideal_speedup == pytest.approx(64 / 36)
    assert stats.density == pytest.approx((1024 * 1025 / 2) / 1024**2)
    assert stats.computed_elements == 36 * 128 * 128


def test_document_tiles_are_exact_when_documents_align_with_blocks() -> None:
    layout = classify(build("document", 512, {"docs": "1,1,1,1"}), 128, 128)
    np.testing.assert_array_equal(layout.kinds[0, 0], np.where(np.eye(4, dtype=bool), UNMASKED, MASKED))
    assert PARTIAL not in layout.kinds


def test_memory_readouts() -> None:
    n = 8192
    stats = mask_stats(build("global_sliding", n), 128, 128)
    assert stats.flashmask_bytes == 16 * n  # four int32 vectors
    assert stats.dense_bytes == n * n
    assert stats.minmax_bytes == 8 * 4 * (n // 128)
    assert stats.blockmask_bytes == 4 * (2 * 64 + 2 * 64 * 64 + 2 * 64 + 2 * 64 * 64)


def test_ideal_speed_up_of_a_fully_skipped_mask_is_infinite_and_said_in_words() -> None:
    """rho = 1 once printed "ideal speed-up 1000000000.00x" (a 1e-9 floor)."""
    from engines.attention import make_mask

    hidden = mask_stats(make_mask(np.stack([np.zeros(256), np.full(256, 256)], axis=1), False, 256), 128, 128)
    assert hidden.rho == 1.0 and hidden.ideal_speedup == float("inf") and hidden.ideal_speedup_text == "all tiles skipped"
    assert mask_stats(build("causal", 1024), 128, 128).ideal_speedup_text == "1.78x"


@pytest.mark.parametrize("name", sorted(MASKS))
def test_classifying_a_band_of_tile_rows_at_a_time_changes_nothing(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """classify works through the tile rows in bands (bounded memory at N = 1M): one row per band
    gives every tile the kind that one band for all rows gives."""
    from engines.attention import blocks

    mask = build(name, 700)
    whole = classify(mask, 32, 16).kinds
    monkeypatch.setattr(blocks, "CLASSIFY_CELLS", 1)
    banded = classify(mask, 32, 16).kinds
    np.testing.assert_array_equal(banded, whole)
    assert whole.shape[2:] == (-(-700 // 32), -(-700 // 16))
    if name in ("causal", "causal_document", "sliding_window"):
        assert set(np.unique(whole)) == {MASKED, PARTIAL, UNMASKED}  # the bands meet every kind of tile
