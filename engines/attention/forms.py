"""From masked row runs per column to the smallest FlashMask form (causal C=1/2, else C=2/4).

Used by ``from_dense`` (runs read off a dense mask) and ``compose`` (runs computed from two
masks' intervals). Errors name the first column that no form can hold.
"""

from __future__ import annotations

import numpy as np

from engines.core import EngineError

from .representation import FlashMask, make_mask

MAX_RUNS = 3  # runs kept per column: one more than any form holds, to tell why it does not fit


def from_runs(starts: np.ndarray, ends: np.ndarray, counts: np.ndarray, n_q: int, n_k: int, causal: bool | None = None) -> FlashMask:
    """``starts``/``ends`` ``[B, H, N_k, MAX_RUNS]`` (sorted, disjoint, padded with n_q), ``counts`` ``[B, H, N_k]``."""
    ce = np.clip(np.arange(n_k) - (n_k - n_q), 0, n_q)  # causality hides rows [0, ce)
    upper_hidden = (ce == 0) | ((counts >= 1) & (starts[..., 0] == 0) & (ends[..., 0] >= ce))
    # Below the diagonal: the first run's tail past ce (if any) and every later run.
    tail = (counts >= 1) & (ends[..., 0] > ce) & (ce > 0)
    lower_count = np.where(ce > 0, tail.astype(np.int64) + np.maximum(counts - 1, 0), counts)
    causal_fits = upper_hidden & (lower_count <= 1)
    if causal is None:
        causal = bool(causal_fits.all())
    if causal:
        if not upper_hidden.all():
            b, h, col = np.argwhere(~upper_hidden)[0]
            row = 0 if counts[b, h, col] == 0 or starts[b, h, col, 0] > 0 else ends[b, h, col, 0]
            raise EngineError(f"column {col}{_where(b, h, counts)}: row {row} may attend to it above the causal diagonal, so the mask is not causal")
        if (lower_count > 1).any():
            b, h, col = np.argwhere(lower_count > 1)[0]
            raise EngineError(
                f"column {col}{_where(b, h, counts)} has {int(lower_count[b, h, col])} masked gaps below the causal diagonal; "
                "a causal FlashMask holds one"
            )
        return _causal_form(starts, ends, counts, ce, tail, n_q)
    if (counts > 2).any():
        b, h, col = min(map(tuple, np.argwhere(counts > 2)), key=lambda x: x[2])
        raise EngineError(
            f"column {col}{_where(b, h, counts)} has {int(counts[b, h, col])} masked gaps; FlashMask can represent at most "
            "two masked row intervals per key column"
        )
    return _bidirectional_form(starts, ends, counts, n_q)


def _where(b: int, h: int, counts: np.ndarray) -> str:
    parts = ([f"batch {b}"] if counts.shape[0] > 1 else []) + ([f"head {h}"] if counts.shape[1] > 1 else [])
    return f" ({', '.join(parts)})" if parts else ""


def _causal_form(starts, ends, counts, ce, tail, n_q: int) -> FlashMask:
    # The one lower run: the first run's tail [ce, e0), or the next run, or the first run when ce = 0.
    first_is_lower = ce == 0
    lo_start = np.where(tail, ce, np.where(first_is_lower, starts[..., 0], starts[..., 1]))
    lo_end = np.where(tail, ends[..., 0], np.where(first_is_lower, ends[..., 0], ends[..., 1]))
    has = np.where(first_is_lower, counts >= 1, tail | (counts >= 2))
    lts = np.where(has, lo_start, n_q)
    lte = np.where(has, lo_end, n_q)
    if (lte == n_q).all():
        return make_mask(lts[..., None], True, n_q)
    return make_mask(np.stack([lts, lte], axis=-1), True, n_q)


def _bidirectional_form(starts, ends, counts, n_q: int) -> FlashMask:
    # C=2 needs every column's masked rows to be a top run [0, UTE) and/or a bottom run [LTS, n_q).
    top = (counts >= 1) & (starts[..., 0] == 0)
    first_bottom = (counts == 1) & (ends[..., 0] == n_q)
    second_bottom = (counts == 2) & (ends[..., 1] == n_q)
    fits_c2 = (counts == 0) | (counts == 1) & (top | first_bottom) | (counts == 2) & top & second_bottom
    if fits_c2.all():
        ute = np.where(top, ends[..., 0], 0)
        lts = np.where(counts == 2, starts[..., 1], np.where(first_bottom & ~top, starts[..., 0], n_q))
        lts = np.where((counts == 1) & top & (ends[..., 0] == n_q), 0, lts)
        return make_mask(np.stack([lts, ute], axis=-1), False, n_q)
    # C=4: the lower (second) run in [LTS, LTE), the upper (first) in [UTS, UTE); a single run goes low.
    one = counts == 1
    lts = np.where(counts == 2, starts[..., 1], np.where(one, starts[..., 0], n_q))
    lte = np.where(counts == 2, ends[..., 1], np.where(one, ends[..., 0], n_q))
    uts = np.where(counts == 2, starts[..., 0], n_q)
    ute = np.where(counts == 2, ends[..., 0], n_q)
    return make_mask(np.stack([lts, lte, uts, ute], axis=-1), False, n_q)
