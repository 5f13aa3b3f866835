"""Our CPU FlashMask: tile skipping plus PyTorch's fused flash kernel on what remains.

The tiles (128 x 128 by default) are classified from the per-block min/max vectors
(``blocks.py``). Fully masked tiles are skipped: their K/V are never read. The rest become calls
of the fused CPU flash kernel (``cpu_flash.py``), merged exactly through their log-sum-exps:

* unmasked key blocks that an aligned group of 2, 4 or 8 query tiles shares run once for the
  whole group with no mask: tall calls keep the fused kernel in its efficient regime;
* what each tile still needs (its partial blocks and leftover unmasked ones) runs as half-height
  leaves that drop the half-blocks they cannot see, with a small additive mask built from the
  vectors for that piece only (pieces with the same pattern share one);
* leaves that are the same call shifted by a constant step (a diagonal band) are batched into one
  call through strided views.

Memory: the vectors, the plan and its piece masks up to a budget (the rest built per call),
never N². All calls go through single-threaded workers fed largest first from one queue
(``workers.py``) and fold their rows in under one lock per 64 query rows (tasks on other rows
fold in at the same time), so a busy machine costs no OpenMP barrier per call. Backward replays
the plan with the fused backward op, which, given the merged output and log-sum-exp, returns each
piece's exact share of dQ, dK and dV.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from dataclasses import dataclass, replace

import numpy as np
import torch

from engines.core import EngineError

from ..blocks import MASKED, PARTIAL, UNMASKED, BlockLayout, classify
from ..cpu_flash import NO_KEY_LSE, flash_backward, flash_forward, masked_value, merge_into
from ..mask_cache import MaskCache
from ..representation import FlashMask
from ..workers import current_cancel, run_items, worker_count

BLOCK_Q = 128
BLOCK_K = 128
GROUP_LEVELS = (8, 4, 2)  # query tiles merged for shared unmasked key blocks, largest first
MAX_MASKED_COLS = 2048  # widest masked run per call: bounds a tile mask to BLOCK_Q x 2048
STORED_MASK_BYTES = 256 * 2**20  # piece masks a plan keeps; the rest are built at each call
LEAF_SPLIT = 2  # leaves are this many times shorter (and their key blocks narrower) than tiles
MAX_BATCH = 16  # tiles of a diagonal band per batched call (smaller batches balance the workers)
LOCK_ROWS = 64  # query rows per output lock (the leaf height at 128-row tiles)
TASKS_PER_WORKER = 8  # below this many tasks per worker, shared-mask heads are split across workers

# A mask's plan is built once (2-12 ms at N = 8192, 190 ms for random eviction) and reused while it
# repeats; weighed by its piece masks, the only part that grows with the mask's irregularity.
PLANS = MaskCache(weigh=lambda plan: plan.pieces.nbytes)


@dataclass(frozen=True)
class Run:
    """Key columns [c0, c1) that one task's query rows attend to, and how they are masked."""

    c0: int
    c1: int
    bias: int = -1  # index into Plan.pieces (an additive mask for this piece); -1: no mask at all


@dataclass(frozen=True)
class Task:
    """One call of the fused kernel: query rows [r0, r1) of a group against its runs, repeated
    ``count`` times, each copy shifted down and right by ``stride`` rows and columns (>= height).

    ``count`` > 1 batches the tiles of a diagonal band (same shape, same mask pattern relative to
    their corner) into one call through strided views: one call instead of dozens."""

    group: int
    r0: int
    r1: int
    runs: tuple[Run, ...]
    count: int = 1
    stride: int = 0

    @property
    def cost(self) -> int:
        return self.count * (self.r1 - self.r0) * sum(run.c1 - run.c0 for run in self.runs)


@dataclass(frozen=True, eq=False)
class Plan:
    """Every task, largest first; tasks of one group may share query rows (they merge under a lock)."""

    groups: list[tuple[int, slice, int]]  # (batch, query-head slice, mask head)
    tasks: list[Task]
    block_q: int
    mask: FlashMask
    pieces: PieceMasks  # one additive mask per distinct pattern (tiles of a band share one)


def make_plan(
    mask: FlashMask, heads: int, block_q: int = BLOCK_Q, block_k: int = BLOCK_K, workers: int = 1, dtype: torch.dtype = torch.float32
) -> Plan:
    """Tasks for ``heads`` query heads. Heads that share one mask run together in each call, cut
    into ``workers`` chunks only when there are too few tasks to keep every worker busy (the full
    mask is one call): more tasks cost Python time, and with it the GIL that workers share.
    Head groups with the same mask head share its tasks (built once)."""
    layout = classify(mask, block_q, block_k)
    split = LEAF_SPLIT if block_q % LEAF_SPLIT == 0 and block_k % LEAF_SPLIT == 0 else 1  # leaves: 1/split of a tile high
    fine = classify(mask, block_q // split, block_k // split)
    pieces = PieceMasks(mask, dtype, STORED_MASK_BYTES)
    per_head: dict[tuple[int, int], list[Task]] = {}

    def head_tasks(b: int, hm: int) -> list[Task]:
        if (b, hm) not in per_head:
            per_head[b, hm] = _head_tasks(layout, fine, split, b, hm, pieces)
        return per_head[b, hm]

    if mask.heads == 1 or bool((mask.indices == mask.indices[:, :1]).all()):
        chunks = 1 if len(head_tasks(0, 0)) >= TASKS_PER_WORKER * workers else min(heads, max(1, workers))
        cuts = np.linspace(0, heads, chunks + 1).round().astype(int)
        groups = [(b, slice(int(h0), int(h1)), 0) for b in range(mask.batch) for h0, h1 in zip(cuts[:-1], cuts[1:])]
    else:
        groups = [(b, slice(h, h + 1), h) for b in range(mask.batch) for h in range(mask.heads)]
    tasks = [replace(task, group=g) for g, (b, _, hm) in enumerate(groups) for task in head_tasks(b, hm)]
    tasks.sort(key=lambda task: -task.cost)  # LPT: the workers finish together
    return Plan(groups, tasks, block_q, mask, pieces)


def _head_tasks(layout: BlockLayout, fine: BlockLayout, split: int, b: int, hm: int, pieces: PieceMasks) -> list[Task]:
    """The calls for one mask head (group index 0): shared unmasked blocks of aligned tile groups,
    then what each tile still needs as half-height leaves, diagonal bands batched."""
    rows, cols = layout.row_edges, layout.col_edges
    n_tiles = len(rows) - 1
    kinds = layout.kinds[b, hm]
    free = kinds == UNMASKED  # unmasked blocks not yet given to a task
    tasks: list[Task] = []
    for size in GROUP_LEVELS:
        for t0 in range(0, n_tiles - size + 1, size):
            shared = free[t0 : t0 + size].all(axis=0)
            if shared.any():
                free[t0 : t0 + size] &= ~shared
                runs = tuple(Run(int(cols[s]), int(cols[e])) for s, e in _spans(shared))
                tasks.append(Task(0, int(rows[t0]), int(rows[t0 + size]), runs))
    leaves = []
    fine_kinds = fine.kinds[b, hm]
    fine_rows, fine_cols = fine.row_edges, fine.col_edges
    for t in range(n_tiles):
        # What this tile still needs (unclaimed unmasked blocks and its partial blocks), at
        # half the tile size: each half-height leaf drops the half-blocks it cannot see.
        needed = np.repeat(free[t] | (kinds[t] == PARTIAL), split)[: fine_kinds.shape[1]]
        for tf in range(split * t, min(split * t + split, fine_kinds.shape[0])):
            r0, r1 = int(fine_rows[tf]), int(fine_rows[tf + 1])
            keep = needed & (fine_kinds[tf] != MASKED)
            partial = keep & (fine_kinds[tf] == PARTIAL)
            runs = []
            for s, e in _spans(keep):  # one call per contiguous span: fewer merges
                c0, c1 = int(fine_cols[s]), int(fine_cols[e])
                if not partial[s:e].any():
                    runs.append(Run(c0, c1))
                else:
                    for a in range(c0, c1, MAX_MASKED_COLS):
                        a1 = min(a + MAX_MASKED_COLS, c1)
                        runs.append(Run(a, a1, pieces.index(b, hm, r0, r1, a, a1)))
            if runs:
                leaves.append(Task(0, r0, r1, tuple(runs)))
    return tasks + _batch_band(leaves)


class PieceMasks:
    """Additive masks of the masked runs, one per distinct pattern relative to the piece's corner:
    every diagonal tile of a sliding window, say, shares one.

    A plan keeps them up to ``budget`` bytes. Masks whose partial tiles all differ (random
    eviction) would need about 2 N^2 bytes (2 GiB at N = 32768), so past the budget a pattern is
    remembered by its piece and built at each call: a plan never holds N^2 memory."""

    def __init__(self, mask: FlashMask, dtype: torch.dtype, budget: int) -> None:
        iv = mask.intervals()
        # [B, Hm, 4, N_k]; int32 (N <= 2^20): the comparisons that build a mask run 4x faster than in int64
        self.vectors = np.stack([iv.lts, iv.lte, iv.uts, iv.ute], axis=2).astype(np.int32)
        self.mask, self.dtype, self.budget = mask, dtype, budget
        self._itemsize = torch.empty(0, dtype=dtype).element_size()
        self.nbytes = 0  # of the masks kept
        self._items: list[torch.Tensor | tuple[int, int, int, int, int, int]] = []  # a mask, or its piece
        self._ids: dict[tuple, int] = {}

    def index(self, b: int, hm: int, r0: int, r1: int, c0: int, c1: int) -> int:
        """The mask of rows [r0, r1) x columns [c0, c1): 0 where visible, a huge negative where hidden."""
        pattern = self._pattern(b, hm, r0, r1, c0, c1)
        key = (r1 - r0, c1 - c0, pattern[1], hashlib.blake2b(pattern[0].tobytes(), digest_size=16).digest())
        found = self._ids.get(key)
        if found is None:
            size = (r1 - r0) * (c1 - c0) * self._itemsize
            if self.nbytes + size <= self.budget:
                self._items.append(self._build(*pattern))
                self.nbytes += size
            else:
                self._items.append((b, hm, r0, r1, c0, c1))
            found = self._ids[key] = len(self._items) - 1
        return found

    def get(self, i: int) -> torch.Tensor:
        item = self._items[i]
        return item if isinstance(item, torch.Tensor) else self._build(*self._pattern(*item))

    def _pattern(self, b: int, hm: int, r0: int, r1: int, c0: int, c1: int) -> tuple[np.ndarray, int | None, int]:
        """The piece's intervals relative to its corner, its causal diagonal's shift, its height."""
        height = r1 - r0
        rel = np.clip(self.vectors[b, hm, :, c0:c1] - r0, 0, height)
        shift = min(max(c0 - r0 - self.mask.offset, -(c1 - c0)), height) if self.mask.causal else None
        return rel, shift, height

    def _build(self, rel: np.ndarray, shift: int | None, height: int) -> torch.Tensor:
        i = np.arange(height, dtype=np.int32)[:, None]
        hidden = ((i >= rel[0]) & (i < rel[1])) | ((i >= rel[2]) & (i < rel[3]))
        if shift is not None:
            hidden |= np.arange(rel.shape[1], dtype=np.int32)[None, :] + shift > i
        return torch.from_numpy(hidden.astype(np.float32) * np.float32(masked_value(self.dtype))).to(self.dtype)


def _batch_band(leaves: list[Task]) -> list[Task]:
    """Fold leaf tiles whose calls are the same call shifted by a constant step into one task.

    Leaves are bucketed by their call relative to the tile corner (masks are shared by pattern,
    so equal mask indices mean equal masks); each bucket's tiles (in row order) are chained while
    the step between them stays the same."""
    buckets: dict[tuple, list[Task]] = {}
    for task in leaves:
        key = (task.r1 - task.r0,) + tuple((run.c0 - task.r0, run.c1 - task.r0, run.bias) for run in task.runs)
        buckets.setdefault(key, []).append(task)
    out: list[Task] = []
    for tasks in buckets.values():
        chain = [tasks[0]]
        for task in tasks[1:]:
            step = task.r0 - chain[-1].r0
            if len(chain) < MAX_BATCH and step >= task.r1 - task.r0 and (len(chain) == 1 or step == chain[1].r0 - chain[0].r0):
                chain.append(task)
            else:
                out.append(_fold(chain))
                chain = [task]
        out.append(_fold(chain))
    return out


def _fold(chain: list[Task]) -> Task:
    first = chain[0]
    if len(chain) == 1:
        return first
    return Task(first.group, first.r0, first.r1, first.runs, len(chain), chain[1].r0 - first.r0)


def _spans(flags: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of every run of True."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flags.astype(np.int8), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def _band(x: torch.Tensor, b: int, heads: slice, start: int, length: int, task: Task) -> torch.Tensor:
    """``x[b, heads, start:start+length]`` as ``[count, heads, length, ...]``, copy i shifted by i * stride."""
    base = x[b, heads]  # [H', N, (D)]
    if task.count == 1:
        return base[:, start : start + length].unsqueeze(0)
    size = (task.count, base.shape[0], length) + tuple(base.shape[2:])
    strides = (task.stride * base.stride(1),) + tuple(base.stride())
    return base.as_strided(size, strides, base.storage_offset() + start * base.stride(1))


def _call(plan: Plan, task: Task, run: Run, q, k, v):
    """Arguments of the fused op for one run: (q rows, k cols, v cols, additive mask or None)."""
    b, heads, hm = plan.groups[task.group]
    bias = plan.pieces.get(run.bias) if run.bias >= 0 else None
    height, width = task.r1 - task.r0, run.c1 - run.c0
    return (
        _band(q, b, heads, task.r0, height, task),
        _band(k, b, heads, run.c0, width, task),
        _band(v, b, heads, run.c0, width, task),
        bias,
    )


def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: Plan) -> tuple[torch.Tensor, torch.Tensor]:
    """Output [B, H, N_q, D] and log-sum-exp [B, H, N_q] (-inf for rows that see no key).

    All tasks run in one pool pass, largest first (no barrier per level); each folds its result
    into the output under the locks of its rows (the log-sum-exp merge does not care about order)."""
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    # numpy's zeros are calloc'd pages, zeroed by the workers that first touch them: torch.zeros
    # would run an OpenMP region here whose threads then spin on the cores the workers need.
    acc = torch.from_numpy(np.zeros(q.shape, dtype=np.float32))
    lse = torch.from_numpy(np.full(q.shape[:3], -np.inf, dtype=np.float32))
    # One lock per LOCK_ROWS query rows of a group: tasks on other rows fold in at the same time.
    n_locks = -(-q.shape[2] // LOCK_ROWS)
    locks = [[threading.Lock() for _ in range(n_locks)] for _ in plan.groups]
    written = [np.zeros(q.shape[2], dtype=bool) for _ in plan.groups]  # rows some task already wrote

    @torch.no_grad()  # workers are fresh threads: grad mode is per thread
    def run_task(task: Task) -> None:
        b, heads, _ = plan.groups[task.group]
        parts = [flash_forward(*_call(plan, task, run, q, k, v)) for run in task.runs]
        out, part_lse = parts[0]
        for more_out, more_lse in parts[1:]:
            merge_into(out, part_lse, more_out, more_lse)
        height = task.r1 - task.r0
        starts = [task.r0 + i * task.stride for i in range(task.count)]
        rows = np.concatenate([np.arange(r, r + height) for r in starts]) if task.count > 1 else slice(task.r0, task.r1)
        held = sorted({i for r in starts for i in range(r // LOCK_ROWS, (r + height - 1) // LOCK_ROWS + 1)})
        acc_band, lse_band = _band(acc, b, heads, task.r0, height, task), _band(lse, b, heads, task.r0, height, task)
        with contextlib.ExitStack() as stack:
            for i in held:  # ascending order: no two tasks wait on each other
                stack.enter_context(locks[task.group][i])
            if written[task.group][rows].any():
                merge_into(acc_band, lse_band, out, part_lse)
            else:  # first write to these rows: a copy
                acc_band.copy_(out)
                lse_band.copy_(part_lse)
            written[task.group][rows] = True

    run_items(run_task, plan.tasks)
    empty = lse < NO_KEY_LSE
    if bool(empty.any()):
        acc.masked_fill_(empty[..., None], 0.0)
        lse.masked_fill_(empty, float("-inf"))
    return acc.to(q.dtype), lse


def backward(
    grad_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor, plan: Plan
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q, k, v, out = q.contiguous(), k.contiguous(), v.contiguous(), out.contiguous()
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    grad_out = grad_out.contiguous()
    # Rows that saw no key: +inf makes every probability exp(s - lse) vanish in the backward op.
    lse = lse.masked_fill(torch.isneginf(lse), float("inf"))
    cancel = current_cancel()
    for task in plan.tasks:  # serial: tasks share key columns, so dK/dV would race
        cancel.raise_if_cancelled()
        b, heads, _ = plan.groups[task.group]
        height = task.r1 - task.r0
        g_rows, o_rows, l_rows = (_band(x, b, heads, task.r0, height, task) for x in (grad_out, out, lse))
        for run in task.runs:
            qt, kt, vt, bias = _call(plan, task, run, q, k, v)
            gq, gk, gv = flash_backward(g_rows, qt, kt, vt, o_rows, l_rows, bias)
            _band(dq, b, heads, task.r0, height, task).add_(gq)  # query bands never overlap
            for i in range(task.count):  # key bands of a diagonal band may overlap: add one by one
                cols = slice(run.c0 + i * task.stride, run.c1 + i * task.stride)
                dk[b, heads, cols] += gk[i]
                dv[b, heads, cols] += gv[i]
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
    heads, workers = q.shape[1], worker_count()
    plan = PLANS.get(mask, (heads, block_q, block_k, workers, q.dtype), lambda: make_plan(mask, heads, block_q, block_k, workers, q.dtype))
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return BlockSparseAttention.apply(q, k, v, plan)
    return forward(q, k, v, plan)[0]
