"""PyTorch FlexAttention (compiled) with a BlockMask built straight from the FlashMask vectors.

The tile classification gives Flex exactly what it wants: partial tiles become ``kv_indices``
(the ``mask_mod`` runs there), unmasked tiles ``full_kv_indices`` (no mask work), masked tiles are
left out. One ``mask_mod`` reads the four interval vectors, so every mask of a given shape reuses
one compiled kernel. On the CPU Flex is inference-only (it refuses backward).
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np
import torch

from engines.core import EngineError

from ..blocks import PARTIAL, UNMASKED, classify
from ..mask_cache import MaskCache
from ..representation import FlashMask

BLOCK = 128  # FlexAttention's default (and only well-trodden) block size


def _block_mask_bytes(bm) -> int:
    """The BlockMask's index tensors plus the interval vectors its ``mask_mod`` closes over."""
    held = list(bm.as_tuple()) + [cell.cell_contents for cell in bm.mask_mod.__closure__ or ()]
    return sum(t.numel() * t.element_size() for t in held if isinstance(t, torch.Tensor))


BLOCK_MASKS = MaskCache(weigh=_block_mask_bytes)  # built once per mask, as Flex's documentation recommends


@functools.lru_cache(maxsize=1)
def compiled_flex():
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False)


def _indices(kinds: np.ndarray, kind: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per query block: how many column blocks of ``kind`` and which (those first, ascending)."""
    hit = kinds == kind
    counts = hit.sum(axis=-1).astype(np.int32)
    order = np.argsort(~hit, axis=-1, kind="stable").astype(np.int32)
    return torch.from_numpy(counts), torch.from_numpy(np.ascontiguousarray(order))


def block_mask(mask: FlashMask, heads: int, device: torch.device | str = "cpu"):
    """A Flex BlockMask equivalent to ``mask`` (vectors broadcast to every head)."""
    from torch.nn.attention.flex_attention import BlockMask

    layout = classify(mask, BLOCK, BLOCK)
    kinds = np.broadcast_to(layout.kinds, (mask.batch, heads) + layout.kinds.shape[2:])
    kv_num, kv_idx = _indices(kinds, PARTIAL)
    full_num, full_idx = _indices(kinds, UNMASKED)
    iv = mask.intervals()
    vec = [torch.from_numpy(np.broadcast_to(x, (mask.batch, heads, mask.n_k)).copy()).to(device) for x in (iv.lts, iv.lte, iv.uts, iv.ute)]
    causal = torch.tensor(bool(mask.causal), device=device)
    offset = torch.tensor(mask.offset, device=device)
    mask_mod = _make_mask_mod(*vec, causal, offset)
    return BlockMask.from_kv_blocks(
        kv_num.to(device),
        kv_idx.to(device),
        full_num.to(device),
        full_idx.to(device),
        BLOCK_SIZE=BLOCK,
        mask_mod=mask_mod,
        seq_lengths=(mask.n_q, mask.n_k),
    )


def _make_mask_mod(lts, lte, uts, ute, causal, offset):
    def mask_mod(b, h, q_idx, kv_idx):
        hidden = ((q_idx >= lts[b, h, kv_idx]) & (q_idx < lte[b, h, kv_idx])) | ((q_idx >= uts[b, h, kv_idx]) & (q_idx < ute[b, h, kv_idx]))
        hidden = hidden | (causal & (kv_idx > q_idx + offset))
        return ~hidden

    return mask_mod


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: FlashMask, bm=None) -> torch.Tensor:
    if q.device.type == "cpu" and torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        raise EngineError("FlexAttention on the CPU is inference-only: use blocksparse or reference for gradients")
    if bm is None:
        bm = BLOCK_MASKS.get(mask, (q.shape[1], str(q.device)), lambda: block_mask(mask, q.shape[1], q.device))
    with torch.no_grad() if q.device.type == "cpu" else contextlib.nullcontext():
        return compiled_flex()(q, k, v, block_mask=bm)
