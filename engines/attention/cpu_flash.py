"""The one place that calls PyTorch's private fused CPU flash-attention ops.

``torch.ops.aten._scaled_dot_product_flash_attention_for_cpu`` returns the output *and* the
per-row log-sum-exp, which is what lets the block-sparse kernel run it on separate key ranges and
merge the pieces exactly. Its backward op takes the merged output and log-sum-exp, so each key
range's gradient comes out exact as well. Being private, both are wrapped here and tested
(``tests/engines/attention/test_cpu_flash.py``); a torch upgrade that changes them fails there.
"""

from __future__ import annotations

import torch

_FWD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
_BWD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward


def masked_value(dtype: torch.dtype) -> float:
    """Additive mask value for hidden elements: finite, so a row hidden in one key range gets a
    huge negative log-sum-exp (weight 0 when merged) instead of the op's ambiguous (0, 0)."""
    return -1e30 if torch.finfo(dtype).max > 1e31 else torch.finfo(dtype).min / 2


#: A merged log-sum-exp below this means the row saw no key at all.
NO_KEY_LSE = -1e29


def flash_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of q [B, H, R, D] over k/v [B, H, C, D] (any strides); ``bias`` [R, C] is added
    to the scores of every batch and head.

    Returns (out [B, H, R, D], logsumexp [B, H, R]) in natural-log units.
    """
    return _FWD(q, k, v, 0.0, False, attn_mask=bias)


def flash_backward(
    grad_out: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients for one (query rows, key range) piece, given the *whole-row* output and lse."""
    return _BWD(grad_out, q, k, v, out, lse, 0.0, False, attn_mask=bias)


def merge_into(acc: torch.Tensor, lse: torch.Tensor, out: torch.Tensor, part_lse: torch.Tensor) -> None:
    """Fold attention over another key range into (acc, lse), in place, through the log-sum-exps.

    ``acc`` [..., R, D] and ``lse`` [..., R] may be views; ``lse`` starts at -inf for untouched rows.
    The new piece's weight is sigmoid(part_lse - lse), so the merge is four ops (small merges
    cost their dispatch, not their arithmetic).
    """
    weight = torch.sigmoid(part_lse - lse)
    acc.lerp_(out, weight.unsqueeze(-1))
    torch.logaddexp(lse, part_lse, out=lse)
