"""Tile classification (what makes FlashMask fast) and the mask's sparsity and memory numbers.

Columns are cut into blocks of ``block_k``; per block we keep the min and max of each interval
vector (8 small vectors). A query tile [r0, r1) against a column block is

* fully masked (skipped: K/V are never loaded) when one interval covers it for every column
  (r0 >= max(start) and r1 <= min(end)), or it lies wholly above the causal diagonal;
* unmasked (no element mask at all) when both intervals miss it for every column and, under
  causal, it lies wholly on or below the diagonal;
* partially masked otherwise (the element mask is applied).

rho is the fraction of fully masked tiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .representation import FlashMask, Intervals

UNMASKED, PARTIAL, MASKED = 0, 1, 2
KIND_NAMES = ("unmasked", "partial", "masked")


@dataclass(frozen=True, eq=False)
class BlockMinMax:
    """Per column block min/max of each interval vector, ``[B, Hm, T_k]`` each (FlashMask's 8 vectors)."""

    lts_min: np.ndarray
    lts_max: np.ndarray
    lte_min: np.ndarray
    lte_max: np.ndarray
    uts_min: np.ndarray
    uts_max: np.ndarray
    ute_min: np.ndarray
    ute_max: np.ndarray

    @property
    def nbytes(self) -> int:
        """As int32 vectors, the way a kernel would keep them."""
        return int(sum(getattr(self, f).size for f in self.__dataclass_fields__) * 4)


def block_minmax(iv: Intervals, block_k: int) -> BlockMinMax:
    starts = np.arange(0, iv.n_k, block_k)
    values = {}
    for name in ("lts", "lte", "uts", "ute"):
        x = getattr(iv, name)
        values[f"{name}_min"] = np.minimum.reduceat(x, starts, axis=-1)
        values[f"{name}_max"] = np.maximum.reduceat(x, starts, axis=-1)
    return BlockMinMax(**values)


@dataclass(frozen=True, eq=False)
class BlockLayout:
    """Kind of every (query tile, column block): ``kinds`` uint8 ``[B, Hm, T_q, T_k]``."""

    kinds: np.ndarray
    block_q: int
    block_k: int
    n_q: int
    n_k: int
    minmax: BlockMinMax

    @property
    def row_edges(self) -> np.ndarray:
        return np.minimum(np.arange(0, self.kinds.shape[2] + 1) * self.block_q, self.n_q)

    @property
    def col_edges(self) -> np.ndarray:
        return np.minimum(np.arange(0, self.kinds.shape[3] + 1) * self.block_k, self.n_k)

    @property
    def rho(self) -> float:
        """Fraction of fully masked tiles (averaged over batch and mask heads)."""
        return float((self.kinds == MASKED).mean())

    def counts(self) -> dict[str, int]:
        return {name: int((self.kinds == k).sum()) for k, name in enumerate(KIND_NAMES)}


CLASSIFY_CELLS = 1 << 22  # tiles classified at once: bounded temporaries (a 1M-token mask has 61M tiles)


def classify(mask: FlashMask, block_q: int = 128, block_k: int = 128) -> BlockLayout:
    """Classify every tile from the per-block min/max vectors alone (O(N/B_r x N/B_c)), a band
    of tile rows at a time: the same answer, without first touching gigabytes of temporaries."""
    if block_q < 1 or block_k < 1:
        raise ValueError("block sizes must be positive")
    iv = mask.intervals()
    mm = block_minmax(iv, block_k)
    r0 = np.arange(0, mask.n_q, block_q, dtype=np.int64)
    r1 = np.minimum(r0 + block_q, mask.n_q)
    c0 = np.arange(0, mask.n_k, block_k, dtype=np.int64)
    c1 = np.minimum(c0 + block_k, mask.n_k)
    lts_max, lte_min, uts_max, ute_min, lts_min, lte_max, uts_min, ute_max = (
        x[:, :, None, :] for x in (mm.lts_max, mm.lte_min, mm.uts_max, mm.ute_min, mm.lts_min, mm.lte_max, mm.uts_min, mm.ute_max)
    )
    kinds = np.empty((*mm.lts_max.shape[:2], len(r0), len(c0)), dtype=np.uint8)
    band = max(1, CLASSIFY_CELLS // max(1, kinds.shape[0] * kinds.shape[1] * len(c0)))
    for start in range(0, len(r0), band):
        R0, R1 = r0[start : start + band, None], r1[start : start + band, None]  # [rows, 1] against [B, Hm, 1, T_k]
        covered = ((R0 >= lts_max) & (R1 <= lte_min)) | ((R0 >= uts_max) & (R1 <= ute_min))
        missed = ((R1 <= lts_min) | (R0 >= lte_max)) & ((R1 <= uts_min) | (R0 >= ute_max))
        if mask.causal:
            covered |= c0[None, :] > (R1 - 1) + mask.offset  # above the diagonal
            missed &= (c1[None, :] - 1) <= R0 + mask.offset  # wholly below it
        kinds[:, :, start : start + band] = np.where(covered, MASKED, np.where(missed, UNMASKED, PARTIAL))
    return BlockLayout(kinds, block_q, block_k, mask.n_q, mask.n_k, mm)


@dataclass(frozen=True)
class MaskStats:
    """What the readouts and the benchmark table show about a mask at one tile size."""

    n_q: int
    n_k: int
    c: int
    causal: bool
    block_q: int
    block_k: int
    tiles: int
    tiles_masked: int
    tiles_partial: int
    tiles_unmasked: int
    rho: float
    density: float  # visible elements / (N_q x N_k)
    visible_elements: int
    computed_elements: int  # elements inside tiles that are not skipped
    flashmask_bytes: int  # the int32 vectors
    minmax_bytes: int  # the per-block min/max vectors
    dense_bytes: int  # a boolean N_q x N_k mask per batch and mask head
    blockmask_bytes: int  # FlexAttention's BlockMask (kv and q index tensors, int32)

    @property
    def ideal_speedup(self) -> float:
        """1 / (1 - rho): what skipping alone can give over the full-mask time; infinite when every
        tile is skipped (nothing is left to compute), never a made-up finite cap."""
        return math.inf if self.rho >= 1.0 else 1.0 / (1.0 - self.rho)

    @property
    def ideal_speedup_text(self) -> str:
        """The speed-up as a readout says it: "all tiles skipped" instead of an infinite factor."""
        return "all tiles skipped" if math.isinf(self.ideal_speedup) else f"{self.ideal_speedup:.2f}x"


def visible_per_column(mask: FlashMask) -> np.ndarray:
    """Rows that may attend to each column, ``[B, Hm, N_k]`` (exact, O(N))."""
    return mask.n_q - mask.intervals().masked_per_column()


def mask_stats(mask: FlashMask, block_q: int = 128, block_k: int = 128) -> MaskStats:
    layout = classify(mask, block_q, block_k)
    counts = layout.counts()
    groups = mask.batch * mask.heads
    # elements in the tiles a kernel computes: each tile's height x width, summed without an area array per tile
    computed = int(np.einsum("bhij,i,j->", layout.kinds != MASKED, np.diff(layout.row_edges), np.diff(layout.col_edges)))
    visible = int(visible_per_column(mask).sum())
    t_q, t_k = layout.kinds.shape[2:]
    blockmask = 4 * groups * (2 * t_q + 2 * t_q * t_k + 2 * t_k + 2 * t_k * t_q)
    return MaskStats(
        n_q=mask.n_q,
        n_k=mask.n_k,
        c=mask.c,
        causal=mask.causal,
        block_q=block_q,
        block_k=block_k,
        tiles=int(layout.kinds.size),
        tiles_masked=counts["masked"],
        tiles_partial=counts["partial"],
        tiles_unmasked=counts["unmasked"],
        rho=layout.rho,
        density=visible / (groups * mask.n_q * mask.n_k),
        visible_elements=visible,
        computed_elements=computed,
        flashmask_bytes=int(mask.indices.size * 4),
        minmax_bytes=layout.minmax.nbytes,
        dense_bytes=groups * mask.n_q * mask.n_k,
        blockmask_bytes=blockmask,
    )
