"""What the topomap panel runs in its background jobs: each function calls the engine and returns
what the panel draws (``engines.topomap.api.Loaded``, a ``CompareTable``, or a sentence).

Nothing here runs on the UI thread; torch is imported inside the engine calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

COMPARE_SUFFIX = ".topomap.json"  # `workbench topomap bench --save FILE.topomap.json`


def load_example(job):
    from engines.topomap.api import load_example

    return load_example(progress=job.progress, cancel=job.cancel)


def train(settings: dict[str, Any], widths: str, folder: Path, compare, job):
    """Train ``TrainParams(**settings)`` with the widths as typed (both checked here: a mistake is the
    job's one sentence), streaming live updates."""
    from engines.topomap.api import run_name, train_and_view, with_widths
    from engines.topomap.params import TrainParams

    params = with_widths(TrainParams(**settings), widths)
    return train_and_view(params, folder / run_name(params), progress=job.progress, cancel=job.cancel, partial=job.partial, compare=compare)


def open_file(path: Path, job):
    """A run file, or a saved comparison (any .json) for the scatter plot."""
    name = path.name.lower()
    if name.endswith(COMPARE_SUFFIX) or name.endswith(".json"):
        from engines.topomap.compare import load_compare

        return load_compare(path)
    from engines.topomap.api import load_run_file

    return load_run_file(path, progress=job.progress, cancel=job.cancel)


def export(what: str, view, path: Path, job) -> str:
    """One export: png (a folder), npz, csv, weights or run; the sentence the panel shows."""
    from engines.topomap import export
    from engines.topomap.runfile import save_run

    if what == "png":
        files = export.export_pngs(view, path)
        return f"Wrote {len(files)} map images to {path}."
    writer = {"npz": export.export_npz, "csv": export.export_csv, "weights": export.export_weights, "run": lambda v, p: save_run(p, v.record)}[what]
    writer(view, path)
    return f"Wrote {path.name}."
