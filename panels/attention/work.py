"""What the attention panel runs in its background jobs: each function calls the engine and returns
what the panel draws. Nothing here runs on the UI thread; torch is imported inside the engine calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def analyse(request, tile: int, job=None):
    """``(request, MaskView)``: everything the panel draws of one mask (numpy only)."""
    from engines.attention.view import analyze

    return request, analyze(request, tile)


def open_vectors(path: Path, causal: bool | None, tile: int, job=None):
    """``(request, MaskView)`` of vectors read from a .json or .npy file."""
    from engines.attention.export import load_vectors
    from engines.attention.view import MaskRequest, analyze

    mask = load_vectors(path, causal)
    request = MaskRequest(kind="vectors", vectors=mask.indices, causal=mask.causal, n_q=mask.n_q)
    return request, analyze(request, tile)


def time_mask(view, settings, sweep_from: tuple[str, dict[str, Any]] | None, job):
    """``(report, sweep)``: every chosen backend timed on the mask (streamed through ``job.partial``
    as soon as it is done), then latency against rho over the family of ``sweep_from``."""
    from engines.attention.params import TimingSettings
    from engines.attention.timing import time_cases, time_sweep
    from engines.core import scaled

    report = time_cases([(view.name, view.params, view.mask)], settings, scaled(job.progress, 0.0, 0.5 if sweep_from else 1.0), job.cancel)
    job.partial(report)
    sweep = None
    if sweep_from is not None:
        sweep_settings = TimingSettings(
            heads=settings.heads,
            dim=settings.dim,
            backends=tuple(b for b in settings.backends if b != "sdpa_dense") or settings.backends,
            repeats=max(1, settings.repeats - 1),
            warmup=1,
            block=settings.block,
        )
        sweep = time_sweep(sweep_from[0], view.mask.n_k, sweep_from[1], sweep_settings, scaled(job.progress, 0.5, 1.0), job.cancel)
    return report, sweep


def export(kind: str, path: Path, view, report, job=None) -> str:
    """Write the mask (or the timing table, ``kind`` csv) and return the path written."""
    from engines.attention.export import export_mask, timing_csv
    from engines.core import write_text

    if kind == "csv":
        return str(write_text(path, timing_csv(report)))
    return str(export_mask(view.mask, path, kind, view.name, view.params))
