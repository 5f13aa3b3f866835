"""The ``triton`` backend: launches the FlashMask Triton kernels, with autograd.

It runs on a CUDA GPU, or on CPU tensors when ``TRITON_INTERPRET=1`` was set before the kernels
were imported (Triton's interpreter; slow, used by the tests at small sizes).
"""

from __future__ import annotations

import math
import os

import numpy as np
import torch

from engines.core import EngineError

from ..blocks import block_minmax
from ..representation import FlashMask


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") == "1"


def _blocks(q: torch.Tensor) -> tuple[int, int, int, int]:
    """(BLOCK_M forward, BLOCK_M backward, BLOCK_N, num_warps)."""
    if interpreting():
        return 16, 16, 16, 4
    d = q.shape[-1]
    return (128, 64, 64, 8) if d <= 128 else (64, 64, 32, 8)


def _tables(mask: FlashMask, block_n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Interval vectors [B, Hm, 4, N_k] and block min/max [B, Hm, 8, T_k], int32 on the device."""
    iv = mask.intervals()
    vec = np.stack([iv.lts, iv.lte, iv.uts, iv.ute], axis=2)
    mm = block_minmax(iv, block_n)
    table = np.stack([mm.lts_min, mm.lts_max, mm.lte_min, mm.lte_max, mm.uts_min, mm.uts_max, mm.ute_min, mm.ute_max], axis=2)
    to = lambda x: torch.from_numpy(np.ascontiguousarray(x, dtype=np.int32)).to(device)  # noqa: E731
    return to(vec), to(table)


def _precision(dtype: torch.dtype) -> str:
    return "ieee" if dtype == torch.float32 else "tf32"


class _Launch:
    """Everything the three kernels share for one call."""

    def __init__(self, q: torch.Tensor, k: torch.Tensor, mask: FlashMask) -> None:
        self.block_m, self.block_m_bwd, self.block_n, self.warps = _blocks(q)
        self.vec, self.mm = _tables(mask, self.block_n, q.device)
        b, h, self.n_q, self.d = q.shape
        self.n_k = k.shape[2]
        self.h = h
        self.bh = b * h
        self.t_k = self.mm.shape[-1]
        one_head = mask.heads == 1
        self.vec_strides = (self.vec.stride(0), 0 if one_head else self.vec.stride(1))
        self.mm_strides = (self.mm.stride(0), 0 if one_head else self.mm.stride(1))
        self.causal = mask.causal
        self.offset = mask.offset
        self.scale = 1.0 / math.sqrt(self.d)
        self.block_d = max(16, 1 << (self.d - 1).bit_length())
        self.precision = _precision(q.dtype)

    def common(self, block_m: int) -> dict:
        return dict(
            CAUSAL=self.causal,
            BLOCK_M=block_m,
            BLOCK_N=self.block_n,
            BLOCK_D=self.block_d,
            HEAD_D=self.d,
            PRECISION=self.precision,
            num_warps=self.warps,
        )

    def scalars(self) -> tuple:
        return (self.h, self.n_q, self.n_k, self.t_k, self.offset, self.scale)


def _forward(q, k, v, launch: _Launch) -> tuple[torch.Tensor, torch.Tensor]:
    from .triton_kernels import flashmask_fwd

    out = torch.empty_like(q)
    lse = torch.empty((launch.bh, launch.n_q), dtype=torch.float32, device=q.device)
    grid = (-(-launch.n_q // launch.block_m), launch.bh)
    flashmask_fwd[grid](
        q,
        k,
        v,
        out,
        lse,
        launch.vec,
        launch.mm,
        *_s3(q),
        *_s3(k),
        *_s3(v),
        *_s3(out),
        *launch.vec_strides,
        *launch.mm_strides,
        *launch.scalars(),
        **launch.common(launch.block_m),
    )
    return out, lse


def _backward(do, q, k, v, out, lse, launch: _Launch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    from .triton_kernels import flashmask_bwd_dkdv, flashmask_bwd_dq

    do = do.contiguous()
    delta = (do.float() * out.float()).sum(-1).reshape(launch.bh, launch.n_q).contiguous()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    strides = (*_s3(q), *_s3(k), *_s3(v), *launch.vec_strides, *launch.mm_strides)
    flashmask_bwd_dkdv[(launch.t_k, launch.bh)](
        q, k, v, do, lse, delta, dk, dv, launch.vec, launch.mm, *strides, *launch.scalars(), **launch.common(launch.block_m_bwd)
    )
    flashmask_bwd_dq[(-(-launch.n_q // launch.block_m_bwd), launch.bh)](
        q, k, v, do, lse, delta, dq, launch.vec, launch.mm, *strides, *launch.scalars(), **launch.common(launch.block_m_bwd)
    )
    return dq, dk, dv


def _s3(t: torch.Tensor) -> tuple[int, int, int]:
    return t.stride(0), t.stride(1), t.stride(2)


class TritonFlashMask(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, launch: _Launch):  # type: ignore[override]
        out, lse = _forward(q, k, v, launch)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.launch = launch
        return out

    @staticmethod
    def backward(ctx, do):  # type: ignore[override]
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = _backward(do, q, k, v, out, lse, ctx.launch)
        return dq, dk, dv, None


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: FlashMask) -> torch.Tensor:
    if q.device.type != "cuda" and not interpreting():
        raise EngineError("the triton backend needs a CUDA GPU (or TRITON_INTERPRET=1 to run it slowly on the CPU)")
    try:
        import triton  # noqa: F401
    except ImportError as exc:
        raise EngineError("the triton backend needs the triton package") from exc
    q, k, v = (t.contiguous() for t in (q, k, v))
    launch = _Launch(q, k, mask)
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return TritonFlashMask.apply(q, k, v, launch)
    return _forward(q, k, v, launch)[0]
