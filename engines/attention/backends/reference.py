"""Ground truth: float64 dense softmax over the materialised mask (rows with no visible key give 0)."""

from __future__ import annotations

import math

import torch

from ..dense import to_dense
from ..representation import FlashMask


def dense_allowed(mask: FlashMask, device: torch.device | str = "cpu") -> torch.Tensor:
    """Boolean [B, Hm, N_q, N_k] (True = may attend), refusing sizes too large to materialise."""
    return torch.from_numpy(to_dense(mask)).to(device)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: FlashMask) -> torch.Tensor:
    allowed = dense_allowed(mask, q.device)
    scores = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~allowed, float("-inf"))
    top = scores.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top)).detach()
    weights = torch.exp(scores - top)
    total = weights.sum(dim=-1, keepdim=True)
    probs = weights / torch.where(total > 0, total, torch.ones_like(total))
    return (probs @ v.double()).to(q.dtype)
