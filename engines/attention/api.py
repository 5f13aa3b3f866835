"""One attention API over five backends, with Paddle's ``flashmask_attention`` mask semantics."""

from __future__ import annotations

import numpy as np
import torch

from engines.core import EngineError

from .params import BACKENDS
from .representation import FlashMask, as_mask, make_mask


def flashmask_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    startend_row_indices=None,
    *,
    causal: bool = False,
    backend: str = "auto",
) -> torch.Tensor:
    """Masked attention ``softmax(q k^T / sqrt(D) + M) v`` with q/k/v ``[B, H, N, D]``.

    ``startend_row_indices`` is Paddle's int32 ``[B, H or 1, N_k, C]`` (a torch tensor, a NumPy
    array or a :class:`FlashMask`); None means no mask beyond ``causal``. Rows that see no key
    give zeros. ``backend="auto"`` picks ``triton`` on a GPU and ``blocksparse`` on the CPU.
    """
    check_qkv(q, k, v)
    mask = fit_mask(as_mask(startend_row_indices, causal, q.shape[2], k.shape[2]), q.shape[0], q.shape[1])
    name = resolve_backend(backend, q)
    if name == "reference":
        from .backends.reference import attention
    elif name == "sdpa_dense":
        from .backends.sdpa_dense import attention
    elif name == "blocksparse":
        from .backends.blocksparse import attention
    elif name == "flex":
        from .backends.flex import attention
    else:
        from .backends.triton_backend import attention
    return attention(q, k, v, mask)


def resolve_backend(backend: str, q: torch.Tensor) -> str:
    if backend == "auto":
        return "triton" if q.device.type == "cuda" else "blocksparse"
    if backend not in BACKENDS:
        raise EngineError(f"unknown backend {backend!r}; choose from auto, {', '.join(BACKENDS)}")
    return backend


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            shape = list(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise EngineError(f"{name} must be a 4-D tensor [B, H, N, D], got {shape}")
        if not t.is_floating_point():
            raise EngineError(f"{name} must be a floating-point tensor, got {t.dtype}")
    if k.shape != v.shape:
        raise EngineError(f"k and v must have the same shape, got {list(k.shape)} and {list(v.shape)}")
    if q.shape[0] != k.shape[0] or q.shape[1] != k.shape[1] or q.shape[3] != k.shape[3]:
        raise EngineError(f"q {list(q.shape)} and k {list(k.shape)} must agree on batch, heads and head dim")
    if 0 in q.shape or 0 in k.shape:
        raise EngineError(f"q {list(q.shape)} and k {list(k.shape)} must not be empty")
    if not (q.dtype == k.dtype == v.dtype and q.device == k.device == v.device):
        raise EngineError("q, k and v must share one dtype and one device")


def fit_mask(mask: FlashMask, batch: int, heads: int) -> FlashMask:
    """Check the mask's batch and heads against q (a batch of 1 is broadcast)."""
    if mask.heads not in (1, heads):
        raise EngineError(f"the mask has {mask.heads} heads; it needs 1 or {heads} (the heads of q)")
    if mask.batch == batch:
        return mask
    if mask.batch == 1:
        return make_mask(np.repeat(mask.indices, batch, axis=0), mask.causal, mask.n_q)
    raise EngineError(f"the mask has batch {mask.batch} but q has batch {batch}")
