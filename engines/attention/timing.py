"""Timing the backends on masks: interleaved repeats, medians and spreads, work-based TFLOP/s,
errors against the float64 reference, speed-ups and the share of the ideal 1/(1-rho).

Every backend is timed at the API level (vectors in, output out), so mask preparation (the plan,
Flex's BlockMask, the dense mask) counts for each of them. Repeats are interleaved across cases
and backends, because the machines this runs on are shared and noisy.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, no_progress

from .blocks import MaskStats, mask_stats
from .params import TimingSettings
from .representation import FlashMask, full_mask

ERROR_ROWS = 256  # query rows sampled for the error against the float64 reference
NOISY_SPREAD = 0.15
MAX_TENSOR_BYTES = 2 << 30


@dataclass(frozen=True)
class BackendTiming:
    backend: str
    ms: float  # median
    ms_min: float
    ms_max: float
    spread: float  # (max - min) / median
    tflops_dense: float  # 4 N_q N_k D H B / time
    tflops_block: float  # the same over the elements of tiles that are not skipped
    tflops_element: float  # the same over visible elements only
    max_error: float | None  # against float64, on sampled query rows
    mask_bytes: int  # what this backend's mask costs in memory
    full_ms: float | None  # this backend on the full (unmasked) mask, same shapes
    speedup_vs_dense: float | None
    speedup_vs_flex: float | None
    pct_of_ideal: float | None  # (full_ms / ms) / (1 / (1 - rho)), in percent; None when rho == 1 (infinite ideal)
    speedup_vs_flex_best: float | None = None  # the same ratios from the fastest repeat of each
    pct_of_ideal_best: float | None = None  # (least disturbed by other processes on a shared machine)
    samples: tuple[float, ...] = ()


@dataclass(frozen=True)
class CaseTiming:
    name: str
    params: dict[str, Any]
    stats: MaskStats
    rows: tuple[BackendTiming, ...]

    def row(self, backend: str) -> BackendTiming | None:
        return next((r for r in self.rows if r.backend == backend), None)


@dataclass(frozen=True)
class TimingReport:
    cases: tuple[CaseTiming, ...]
    settings: TimingSettings
    n_q: int
    n_k: int
    threads: int
    load_before: float
    load_after: float
    noisy: bool
    note: str
    environment: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Case:
    name: str
    params: dict[str, Any]
    mask: FlashMask


def time_cases(
    cases: list[tuple[str, dict[str, Any], FlashMask]],
    settings: TimingSettings = TimingSettings(),
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> TimingReport:
    """Time every backend on every case (same shapes), plus each backend on the full mask."""
    import torch

    from .api import flashmask_attention
    from .workers import cancel_scope

    if not cases:
        raise EngineError("nothing to time: give at least one mask")
    n_q, n_k = cases[0][2].n_q, cases[0][2].n_k
    if any((m.n_q, m.n_k) != (n_q, n_k) for _, _, m in cases):
        raise EngineError("all masks of one timing run need the same N_q and N_k")
    tensor_bytes = 4 * settings.batch * settings.heads * (2 * n_q + 2 * n_k) * settings.dim  # q, out, k, v in fp32
    if tensor_bytes > MAX_TENSOR_BYTES:
        raise EngineError(
            f"timing at N_q={n_q}, N_k={n_k} with {settings.heads} heads of dim {settings.dim} needs "
            f"{tensor_bytes / 2**30:.1f} GiB of q/k/v/out; lower N, heads or dim"
        )
    todo = [_Case(name, params, mask) for name, params, mask in cases]
    full = next((c for c in todo if c.name == "full"), None)
    extra_full = full is None  # timed for the speed-up over the full mask, not reported as a case
    if full is None:
        full = _Case("full", {}, full_mask(n_q, n_k))
        todo.append(full)
    gen = torch.Generator().manual_seed(settings.seed)
    shape = (settings.batch, settings.heads)
    q = torch.randn(*shape, n_q, settings.dim, generator=gen)
    k = torch.randn(*shape, n_k, settings.dim, generator=gen)
    v = torch.randn(*shape, n_k, settings.dim, generator=gen)
    load_before = _load()
    samples: dict[tuple[int, str], list[float]] = {(i, b): [] for i in range(len(todo)) for b in settings.backends}
    errors: dict[tuple[int, str], float | None] = {}
    total = len(samples) * (settings.repeats + settings.warmup)
    done = 0
    with torch.no_grad():
        for rep in range(settings.warmup + settings.repeats):
            for i, case in enumerate(todo):
                for backend in settings.backends:
                    cancel.raise_if_cancelled()
                    progress(done / total, f"{'warm-up' if rep < settings.warmup else 'timing'} {backend} on {case.name}")
                    start = time.perf_counter()
                    with cancel_scope(cancel):  # blocksparse stops between its tasks
                        out = flashmask_attention(q, k, v, case.mask, causal=case.mask.causal, backend=backend)
                    elapsed = time.perf_counter() - start
                    if rep >= settings.warmup:
                        samples[(i, backend)].append(elapsed * 1e3)
                    if (i, backend) not in errors:
                        errors[(i, backend)] = sampled_error(q, k, v, case.mask, out)
                    done += 1
    progress(1.0, "done")
    load_after = _load()
    full_index = todo.index(full)
    results = []
    for i, case in enumerate(todo):
        if case is full and extra_full:
            continue
        stats = mask_stats(case.mask, settings.block, settings.block)
        results.append(_case_result(case, stats, settings, samples, errors, i, full_index))
    spread = max((r.spread for c in results for r in c.rows), default=0.0)
    cores = os.cpu_count() or 1
    noisy = spread > NOISY_SPREAD or max(load_before, load_after) > cores
    note = (
        f"noisy: load average {max(load_before, load_after):.1f} on {cores} cores, spread up to {100 * spread:.0f}% "
        "(other processes share this machine; compare backends within this run only)"
        if noisy
        else f"steady: load average {max(load_before, load_after):.1f} on {cores} cores, spread up to {100 * spread:.0f}%"
    )
    env = {"torch": torch.__version__, "cores": cores}
    return TimingReport(tuple(results), settings, n_q, n_k, torch.get_num_threads(), load_before, load_after, noisy, note, env)


def _case_result(case: _Case, stats: MaskStats, settings: TimingSettings, samples, errors, i: int, full_index: int) -> CaseTiming:
    flop = 4.0 * settings.dim  # two matmuls of 2 * dim flops per score element
    shared = (settings.heads // case.mask.heads) * (settings.batch // case.mask.batch)  # mask broadcasts
    dense_elements = settings.batch * settings.heads * case.mask.n_q * case.mask.n_k
    block_elements = stats.computed_elements * shared
    visible_elements = stats.visible_elements * shared
    medians = {b: statistics.median(samples[(i, b)]) for b in settings.backends}
    bests = {b: min(samples[(i, b)]) for b in settings.backends}
    rows = []
    for backend in settings.backends:
        ts = samples[(i, backend)]
        ms = medians[backend]
        full_ms = statistics.median(samples[(full_index, backend)])
        # rho == 1 (every tile skipped): the ideal is infinite and a share of it is undefined, not 0%.
        ideal = None if math.isinf(stats.ideal_speedup) else stats.ideal_speedup
        rows.append(
            BackendTiming(
                backend=backend,
                ms=ms,
                ms_min=min(ts),
                ms_max=max(ts),
                spread=(max(ts) - min(ts)) / ms if ms > 0 else 0.0,
                tflops_dense=flop * dense_elements / (ms * 1e-3) / 1e12,
                tflops_block=flop * block_elements / (ms * 1e-3) / 1e12,
                tflops_element=flop * visible_elements / (ms * 1e-3) / 1e12,
                max_error=errors.get((i, backend)),
                mask_bytes=_mask_bytes(backend, stats),
                full_ms=full_ms,
                speedup_vs_dense=medians["sdpa_dense"] / ms if "sdpa_dense" in medians else None,
                speedup_vs_flex=medians["flex"] / ms if "flex" in medians else None,
                pct_of_ideal=None if ideal is None else 100.0 * (full_ms / ms) / ideal,
                speedup_vs_flex_best=bests["flex"] / bests[backend] if "flex" in bests else None,
                pct_of_ideal_best=None if ideal is None else 100.0 * (min(samples[(full_index, backend)]) / bests[backend]) / ideal,
                samples=tuple(ts),
            )
        )
    return CaseTiming(case.name, case.params, stats, tuple(rows))


def _mask_bytes(backend: str, stats: MaskStats) -> int:
    if backend in ("reference", "sdpa_dense"):
        return stats.dense_bytes
    if backend == "flex":
        return stats.blockmask_bytes
    return stats.flashmask_bytes + stats.minmax_bytes


def sampled_error(q, k, v, mask: FlashMask, out) -> float:
    """Max abs error of ``out`` against float64 attention, on up to ERROR_ROWS query rows."""
    import math

    import torch

    rows = np.unique(np.linspace(0, mask.n_q - 1, min(ERROR_ROWS, mask.n_q)).round().astype(np.int64))
    allowed = torch.from_numpy(mask.intervals().allowed_rows(rows))  # [B, Hm, R, N_k]
    qr = q[:, :, torch.from_numpy(rows)].double()
    scores = (qr @ k.double().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~allowed, float("-inf"))
    top = scores.amax(-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    weights = torch.exp(scores - top)
    total = weights.sum(-1, keepdim=True)
    ref = (weights / torch.where(total > 0, total, torch.ones_like(total))) @ v.double()
    return float((out[:, :, torch.from_numpy(rows)].double() - ref).abs().max())


def _load() -> float:
    try:
        return float(os.getloadavg()[0])
    except OSError:
        return float("nan")


@dataclass(frozen=True)
class SweepPoint:
    label: str
    rho: float
    ms: dict[str, float]  # median per backend


@dataclass(frozen=True)
class SweepResult:
    family: str
    points: tuple[SweepPoint, ...]
    full_ms: dict[str, float]  # per backend: the unmasked time; the ideal line is full_ms * (1 - rho)
    noisy: bool
    note: str


def time_sweep(
    name: str,
    n: int,
    params: dict[str, Any] | None = None,
    settings: TimingSettings = TimingSettings(backends=("blocksparse",), repeats=3),
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> SweepResult:
    """Latency against rho over a family of masks around ``name`` (see ``library.sweep_params``)."""
    from . import library

    family, param_sets = library.sweep_params(name, n, params)
    spec = library.mask_spec(family)
    cases = [(f"{family} {i + 1}", p, spec.builder(n, **p)) for i, p in enumerate(param_sets)]
    report = time_cases(cases, settings, progress, cancel)
    points = tuple(SweepPoint(c.name, c.stats.rho, {r.backend: r.ms for r in c.rows}) for c in report.cases)
    full = {r.backend: r.full_ms for r in report.cases[0].rows if r.full_ms is not None}
    return SweepResult(family, points, full, report.noisy, report.note)
