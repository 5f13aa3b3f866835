"""What users do today: torch SDPA with a materialised N_q x N_k boolean mask."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..representation import FlashMask
from .reference import dense_allowed


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: FlashMask) -> torch.Tensor:
    allowed = dense_allowed(mask, q.device)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    # SDPA leaves rows without a visible key undefined (NaN); FlashMask defines them as zeros.
    no_key = ~allowed.any(dim=-1, keepdim=True)
    return out.masked_fill(no_key, 0.0)
