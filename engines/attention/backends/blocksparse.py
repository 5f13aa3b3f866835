"""Our CPU FlashMask: tile skipping plus PyTorch's fused flash kernel on what remains.

The tiles (128 x 128 by default) are classified from the per-block min/max vectors
(``blocks.py``). Fully masked tiles are skipped: their K/V are never read. The rest become calls
of the fused CPU flash kernel (``cpu_flash.py``), merged exactly through their log-sum-exps:

* unmasked tiles run with no mask at all. Where aligned groups of 2, 4 or 8 query tiles share
  unmasked key blocks, those blocks run once for the whole group: tall calls keep the fused
  kernel in its most efficient regime (256-row query splits) instead of many 128-row ones;
* a partial tile cut only by the causal diagonal, with its corner on it, runs with the kernel's
  own causal mode (it skips the upper half);
* other partial tiles run with a small additive mask built from the vectors for that tile only.

Memory: the vectors, the plan and one tile-sized mask per call, never N². The calls of one
level are spread over single-threaded workers (``workers.py``), so a busy machine costs us no
OpenMP barrier per call. Backward replays the plan with the fused backward op, which, given the
merged output and log-sum-exp, returns each piece's exact share of dQ, dK and dV.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import torch

from engines.core import EngineError

from ..blocks import MASKED, PARTIAL, UNMASKED, classify
from ..cpu_flash import NO_KEY_LSE, flash_backward, flash_forward, masked_value, merge_into
from ..representation import FlashMask
from ..workers import run_items, worker_count

BLOCK_Q = 128
BLOCK_K = 128
GROUP_LEVELS = (8, 4, 2)  # query tiles merged for shared unmasked key blocks, largest first
MAX_MASKED_COLS = 2048  # widest masked run per call: bounds a tile mask to BLOCK_Q x 2048

FREE, CAUSAL, MASKED_RUN = "free", "causal", "masked"


@dataclass(frozen=True)
class Run:
    """Key columns [c0, c1) that one task's query rows attend to, and how they are masked."""

    c0: int
    c1: int
    kind: str  # FREE: no mask; CAUSAL: the kernel's causal mode; MASKED_RUN: an additive tile mask


@dataclass(frozen=True)
class Task:
    """One call site: query rows [r0, r1) of a group against its runs."""

    group: int
    r0: int
    r1: int
    runs: tuple[Run, ...]


@dataclass(frozen=True, eq=False)
class Plan:
    """Every task, largest first; tasks of one group may share query rows (they merge under a lock)."""

    groups: list[tuple[int, slice, int]]  # (batch, query-head slice, mask head)
    tasks: list[Task]
    block_q: int
    mask: FlashMask
    lts: torch.Tensor  # int64 [B, Hm, N_k] normalised intervals, for the partial-tile masks
    lte: torch.Tensor
    uts: torch.Tensor
    ute: torch.Tensor
    biases: dict = field(default_factory=dict)  # tile masks shared by tiles with one pattern


def make_plan(mask: FlashMask, heads: int, block_q: int = BLOCK_Q, block_k: int = BLOCK_K, workers: int = 1) -> Plan:
    """Tasks for ``heads`` query heads; shared-mask heads are cut into ``workers`` chunks so that
    even a single tall call keeps every worker busy."""
    layout = classify(mask, block_q, block_k)
    if mask.heads == 1 or bool((mask.indices == mask.indices[:, :1]).all()):
        cuts = np.linspace(0, heads, min(heads, max(1, workers)) + 1).round().astype(int)
        groups = [(b, slice(int(h0), int(h1)), 0) for b in range(mask.batch) for h0, h1 in zip(cuts[:-1], cuts[1:])]
    else:
        groups = [(b, slice(h, h + 1), h) for b in range(mask.batch) for h in range(mask.heads)]
    rows, cols = layout.row_edges, layout.col_edges
    n_tiles = len(rows) - 1
    levels: list[list[Task]] = [[] for _ in range(len(GROUP_LEVELS) + 1)]
    for g, (b, _, hm) in enumerate(groups):
        kinds = layout.kinds[b, hm]
        free = kinds == UNMASKED  # unmasked blocks not yet given to a task
        for level, size in enumerate(GROUP_LEVELS):
            for t0 in range(0, n_tiles - size + 1, size):
                shared = free[t0 : t0 + size].all(axis=0)
                if shared.any():
                    free[t0 : t0 + size] &= ~shared
                    runs = tuple(Run(int(cols[s]), int(cols[e]), FREE) for s, e in _spans(shared))
                    levels[level].append(Task(g, int(rows[t0]), int(rows[t0 + size]), runs))
        for t in range(n_tiles):
            r0, r1 = int(rows[t]), int(rows[t + 1])
            partial = kinds[t] == PARTIAL
            diagonal = partial & layout.interval_free[b, hm, t]
            runs = []
            for s, e in _spans(free[t] | partial):  # one call per contiguous span: fewer merges
                c0, c1 = int(cols[s]), int(cols[e])
                if not partial[s:e].any():
                    runs.append(Run(c0, c1, FREE))
                elif mask.causal and diagonal[s:e].all() and c0 == r0 + mask.offset:
                    runs.append(Run(c0, c1, CAUSAL))
                else:
                    runs.extend(Run(a, min(a + MAX_MASKED_COLS, c1), MASKED_RUN) for a in range(c0, c1, MAX_MASKED_COLS))
            if runs:
                levels[-1].append(Task(g, r0, r1, tuple(runs)))
    tasks = [task for level in levels for task in level]
    tasks.sort(key=lambda task: -(task.r1 - task.r0) * sum(run.c1 - run.c0 for run in task.runs))  # LPT: even finish
    iv = mask.intervals()
    return Plan(groups, tasks, block_q, mask, *(torch.from_numpy(x) for x in (iv.lts, iv.lte, iv.uts, iv.ute)))


def _spans(flags: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of every run of True."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flags.astype(np.int8), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def _bias(plan: Plan, b: int, hm: int, r0: int, r1: int, run: Run, dtype: torch.dtype) -> torch.Tensor:
    """Additive mask of one masked run: 0 where visible, a huge negative where hidden.

    Tiles with the same pattern relative to their corner (every diagonal tile of a sliding window,
    say) share one tensor: the key is the intervals clipped to the tile, relative to its rows."""
    cols = slice(run.c0, run.c1)
    height = r1 - r0
    rel = [torch.clamp(x[b, hm, cols] - r0, 0, height) for x in (plan.lts, plan.lte, plan.uts, plan.ute)]
    shift = min(max(run.c0 - r0 - plan.mask.offset, -(run.c1 - run.c0)), height) if plan.mask.causal else None
    key = (height, run.c1 - run.c0, shift, dtype, b"".join(x.numpy().tobytes() for x in rel))
    cached = plan.biases.get(key)
    if cached is not None:
        return cached
    i = torch.arange(height)[:, None]
    hidden = ((i >= rel[0]) & (i < rel[1])) | ((i >= rel[2]) & (i < rel[3]))
    if shift is not None:
        hidden |= torch.arange(run.c1 - run.c0)[None, :] + shift > i
    bias = torch.where(hidden, masked_value(dtype), 0.0).to(dtype)
    plan.biases[key] = bias
    return bias


def _call(plan: Plan, task: Task, run: Run, q, k, v, dtype):
    """Arguments of the fused op for one run: (q rows, k cols, v cols, additive mask, causal)."""
    b, heads, hm = plan.groups[task.group]
    bias = _bias(plan, b, hm, task.r0, task.r1, run, dtype) if run.kind == MASKED_RUN else None
    sel = (slice(b, b + 1), heads)
    return q[sel][:, :, task.r0 : task.r1], k[sel][:, :, run.c0 : run.c1], v[sel][:, :, run.c0 : run.c1], bias, run.kind == CAUSAL


def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: Plan) -> tuple[torch.Tensor, torch.Tensor]:
    """Output [B, H, N_q, D] and log-sum-exp [B, H, N_q] (-inf for rows that see no key).

    All tasks run in one pool pass (no barrier per level); a task folds its result into each
    query tile it covers under that tile's lock: the first writer copies, later ones merge."""
    acc = torch.zeros(q.shape, dtype=torch.float32)
    lse = torch.full(q.shape[:3], float("-inf"), dtype=torch.float32)
    n_tiles = -(-q.shape[2] // plan.block_q)
    locks = [[threading.Lock() for _ in range(n_tiles)] for _ in plan.groups]
    written = [[False] * n_tiles for _ in plan.groups]

    @torch.no_grad()  # workers are fresh threads: grad mode is per thread
    def run_task(task: Task) -> None:
        b, heads, _ = plan.groups[task.group]
        parts = [flash_forward(*_call(plan, task, run, q, k, v, q.dtype)) for run in task.runs]
        out, part_lse = parts[0]
        for more_out, more_lse in parts[1:]:
            merge_into(out, part_lse, more_out, more_lse)
        for t in range(task.r0 // plan.block_q, -(-task.r1 // plan.block_q)):
            r0, r1 = t * plan.block_q, min((t + 1) * plan.block_q, task.r1)
            rows = (b, heads, slice(r0, r1))
            local = slice(r0 - task.r0, r1 - task.r0)
            with locks[task.group][t]:
                if written[task.group][t]:
                    merge_into(acc[rows], lse[rows], out[0, :, local], part_lse[0, :, local])
                else:
                    acc[rows] = out[0, :, local]
                    lse[rows] = part_lse[0, :, local]
                    written[task.group][t] = True

    run_items(run_task, plan.tasks)
    empty = lse < NO_KEY_LSE
    if bool(empty.any()):
        acc.masked_fill_(empty[..., None], 0.0)
        lse.masked_fill_(empty, float("-inf"))
    return acc.to(q.dtype), lse


def backward(
    grad_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor, plan: Plan
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    grad_out = grad_out.contiguous()
    # Rows that saw no key: +inf makes every probability exp(s - lse) vanish in the backward op.
    lse = lse.masked_fill(torch.isneginf(lse), float("inf"))
    for task in plan.tasks:  # serial: tasks share key columns, so dK/dV would race
        b, heads, _ = plan.groups[task.group]
        sel = (slice(b, b + 1), heads)
        rows = slice(task.r0, task.r1)
        for run in task.runs:
            qt, kt, vt, bias, causal = _call(plan, task, run, q, k, v, q.dtype)
            gq, gk, gv = flash_backward(grad_out[sel][:, :, rows], qt, kt, vt, out[sel][:, :, rows], lse[sel][:, :, rows], bias, causal)
            dq[sel][:, :, rows] += gq
            dk[sel][:, :, run.c0 : run.c1] += gk
            dv[sel][:, :, run.c0 : run.c1] += gv
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
        raise EngineError("the blocksparse backend runs on the CPU; use the triton backend on a GPU")
    plan = make_plan(mask, q.shape[1], block_q, block_k, worker_count())
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return BlockSparseAttention.apply(q, k, v, plan)
    return forward(q, k, v, plan)[0]
