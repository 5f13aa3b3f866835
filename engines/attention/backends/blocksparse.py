"""Our CPU FlashMask: tile skipping plus the fused flash kernel on the tiles that remain.

For every query tile the column blocks are classified from the min/max vectors (``blocks.py``).
Fully masked blocks are skipped (their K/V are never read); runs of consecutive unmasked blocks go
to PyTorch's fused CPU flash kernel with no mask at all; runs of partially masked blocks go to the
same kernel with a small additive mask built from the vectors for just that tile. The pieces are
merged exactly through their log-sum-exps (online softmax across key ranges). Memory: the
vectors plus one tile-sized mask at a time, never N².

Backward reuses the fused backward op piece by piece with the merged output and log-sum-exp,
which gives each piece's exact share of dQ, dK and dV.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..blocks import MASKED, PARTIAL, classify
from ..cpu_flash import flash_backward, flash_forward, masked_value, merge
from ..workers import run_items
from ..representation import FlashMask

BLOCK_Q = 256
BLOCK_K = 256
MAX_PARTIAL_COLS = 2048  # widest masked run per call: bounds the tile mask to BLOCK_Q x 2048


@dataclass(frozen=True)
class Run:
    """Consecutive key columns [c0, c1) of one query tile: unmasked, or partial (needs a mask)."""

    c0: int
    c1: int
    partial: bool


@dataclass(frozen=True, eq=False)
class Plan:
    """Runs for every (group, query tile); a group is one batch and one head (or all heads)."""

    groups: list[tuple[int, slice, int]]  # (batch, query-head slice, mask head)
    tiles: list[tuple[int, int]]  # query row ranges
    runs: list[list[list[Run]]]  # [group][tile] -> runs
    mask: FlashMask
    lts: torch.Tensor  # int64 [B, Hm, N_k] normalised intervals, for the partial-tile masks
    lte: torch.Tensor
    uts: torch.Tensor
    ute: torch.Tensor


def make_plan(mask: FlashMask, heads: int, block_q: int = BLOCK_Q, block_k: int = BLOCK_K) -> Plan:
    layout = classify(mask, block_q, block_k)
    kinds = layout.kinds
    col_edges = layout.col_edges
    row_edges = layout.row_edges
    if mask.heads == 1 or _heads_identical(mask):
        groups = [(b, slice(0, heads), 0) for b in range(mask.batch)]
    else:
        groups = [(b, slice(h, h + 1), h) for b in range(mask.batch) for h in range(mask.heads)]
    runs = [[_runs(kinds[b, hm, t], col_edges) for t in range(kinds.shape[2])] for b, _, hm in groups]
    iv = mask.intervals()
    tiles = list(zip(row_edges[:-1].tolist(), row_edges[1:].tolist()))
    return Plan(groups, tiles, runs, mask, *(torch.from_numpy(x) for x in (iv.lts, iv.lte, iv.uts, iv.ute)))


def _heads_identical(mask: FlashMask) -> bool:
    return bool((mask.indices == mask.indices[:, :1]).all())


def _runs(kinds_row: np.ndarray, col_edges: np.ndarray) -> list[Run]:
    """Group a row of block kinds into runs of equal kind, dropping the masked ones."""
    runs: list[Run] = []
    change = np.flatnonzero(np.diff(kinds_row)) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [len(kinds_row)]])
    for s, e in zip(starts.tolist(), ends.tolist()):
        kind = int(kinds_row[s])
        if kind == MASKED:
            continue
        c0, c1 = int(col_edges[s]), int(col_edges[e])
        step = MAX_PARTIAL_COLS if kind == PARTIAL else c1 - c0
        for a in range(c0, c1, step):
            runs.append(Run(a, min(a + step, c1), kind == PARTIAL))
    return runs


def _bias(plan: Plan, b: int, hm: int, r0: int, r1: int, run: Run, dtype: torch.dtype) -> torch.Tensor:
    """Additive mask of one partial run: 0 where visible, a huge negative where hidden."""
    cols = slice(run.c0, run.c1)
    i = torch.arange(r0, r1)[:, None]
    masked = ((i >= plan.lts[b, hm, cols]) & (i < plan.lte[b, hm, cols])) | (
        (i >= plan.uts[b, hm, cols]) & (i < plan.ute[b, hm, cols])
    )
    if plan.mask.causal:
        masked |= torch.arange(run.c0, run.c1)[None, :] > i + plan.mask.offset
    return torch.zeros(masked.shape, dtype=dtype).masked_fill_(masked, masked_value(dtype))


def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: Plan) -> tuple[torch.Tensor, torch.Tensor]:
    """Output [B, H, N_q, D] and log-sum-exp [B, H, N_q] (-inf for rows that see no key)."""
    out = torch.empty_like(q)
    lse = torch.empty(q.shape[:3], dtype=torch.float32)

    @torch.no_grad()  # workers are fresh threads: grad mode is per thread
    def tile(item: tuple[int, int]) -> None:
        g, t = item
        b, heads, hm = plan.groups[g]
        (r0, r1), runs = plan.tiles[t], plan.runs[g][t]
        if not runs:
            out[b, heads, r0:r1] = 0
            lse[b, heads, r0:r1] = float("-inf")
            return
        qt = q[b : b + 1, heads, r0:r1]
        kb, vb = k[b : b + 1, heads], v[b : b + 1, heads]
        parts = []
        for run in runs:
            bias = _bias(plan, b, hm, r0, r1, run, q.dtype) if run.partial else None
            parts.append(flash_forward(qt, kb[:, :, run.c0 : run.c1], vb[:, :, run.c0 : run.c1], bias))
        o, l = merge(parts)
        out[b, heads, r0:r1] = o[0].to(q.dtype)
        lse[b, heads, r0:r1] = l[0].float()

    run_items(tile, [(g, t) for g in range(len(plan.groups)) for t in range(len(plan.tiles))])
    return out, lse


def backward(
    grad_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor, plan: Plan
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    grad_out = grad_out.contiguous()
    # Rows that saw no key: +inf makes every probability exp(s - lse) vanish in the backward op.
    lse = lse.masked_fill(torch.isneginf(lse), float("inf"))
    for g, (b, heads, hm) in enumerate(plan.groups):
        sel = (slice(b, b + 1), heads)
        qb, kb, vb, ob, gb, lb = q[sel], k[sel], v[sel], out[sel], grad_out[sel], lse[sel]
        for (r0, r1), runs in zip(plan.tiles, plan.runs[g]):
            rows = slice(r0, r1)
            for run in runs:
                cols = slice(run.c0, run.c1)
                bias = _bias(plan, b, hm, r0, r1, run, q.dtype) if run.partial else None
                gq, gk, gv = flash_backward(
                    gb[:, :, rows], qb[:, :, rows], kb[:, :, cols], vb[:, :, cols], ob[:, :, rows], lb[:, :, rows], bias
                )
                dq[b : b + 1, heads, rows] += gq
                dk[b : b + 1, heads, cols] += gk
                dv[b : b + 1, heads, cols] += gv
    return dq, dk, dv


class BlockSparseAttention(torch.autograd.Function):
    """Autograd wrapper: forward keeps (out, lse); backward replays the plan with the fused op."""

    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: Plan) -> torch.Tensor:  # type: ignore[override]
        out, lse = forward(q, k, v, plan)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.plan = plan
        return out

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):  # type: ignore[override]
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = backward(grad_out, q, k, v, out, lse, ctx.plan)
        return dq, dk, dv, None


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: FlashMask, block_q: int = BLOCK_Q, block_k: int = BLOCK_K) -> torch.Tensor:
    if q.device.type != "cpu":
        from engines.core import EngineError

        raise EngineError("the blocksparse backend runs on the CPU; use the triton backend on a GPU")
    plan = make_plan(mask, q.shape[1], block_q, block_k)
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return BlockSparseAttention.apply(q, k, v, plan)
    return forward(q, k, v, plan)[0]
