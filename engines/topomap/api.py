"""What the panel and the CLI call, one call each: open the shipped example, open a run file, train
and view a run (streaming live updates through ``partial``). Everything returned is ready to draw."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from engines.core import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress, resource_path, scaled

from .compare import CompareTable, ScatterPoint, load_compare, scatter_point
from .params import TrainParams, parse_widths
from .runfile import EpochStats
from .runview import RunView, SnapshotView, open_run, snapshot_view

EXAMPLE_RUN = "cbsom.topomap.pt"
EXAMPLE_COMPARE = "compare.topomap.json"
# What run_default trains when the shipped run is missing: a few seconds on this CPU.
TINY_EXAMPLE = TrainParams(method="cbsom", epochs=4, batch_size=32, snapshots=5)


@dataclass(frozen=True)
class Loaded:
    view: RunView
    point: ScatterPoint  # this run in the accuracy-vs-smoothness plot
    compare: CompareTable | None = None


@dataclass(frozen=True)
class LiveUpdate:
    epochs: int
    classes: tuple[str, ...]
    history: tuple[EpochStats, ...]
    snapshot: SnapshotView | None


def _loaded(view: RunView, compare: CompareTable | None = None) -> Loaded:
    smooth = {layer.name: layer.smoothness.score for layer in view.layers}
    point = scatter_point(view.params.method, view.params.seed, view.record.accuracy, smooth)
    return Loaded(view, point, compare)


def example_paths() -> tuple[Path, Path]:
    return resource_path("topomap", EXAMPLE_RUN), resource_path("topomap", EXAMPLE_COMPARE)


def load_example(*, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED) -> Loaded:
    """The shipped CB-SOM run and comparison; without them, a tiny run trained on the spot."""
    run_path, compare_path = example_paths()
    compare = load_compare(compare_path) if compare_path.exists() else None
    if run_path.exists():
        return _loaded(open_run(run_path, progress=progress, cancel=cancel), compare)
    out = Path(tempfile.mkdtemp(prefix="topomap-example-")) / "tiny.topomap.pt"
    return train_and_view(TINY_EXAMPLE, out, progress=progress, cancel=cancel, compare=compare)


def load_run_file(path: Path, *, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED) -> Loaded:
    return _loaded(open_run(Path(path), progress=progress, cancel=cancel))


def train_and_view(
    params: TrainParams,
    out: Path,
    *,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    partial: Callable[[LiveUpdate], None] | None = None,
    compare: CompareTable | None = None,
) -> Loaded:
    """Train (resuming a checkpoint at ``out``), streaming history and snapshot maps, then view."""
    from .data import load_dataset
    from .train import train

    classes = load_dataset(params.data).classes

    def live(update) -> None:
        if partial is not None:
            snap = snapshot_view(params, update.snapshot) if update.snapshot is not None else None
            partial(LiveUpdate(params.epochs, classes, update.history, snap))

    train(params, out=out, progress=scaled(progress, 0.0, 0.9), cancel=cancel, partial=live)
    return _loaded(open_run(out, progress=scaled(progress, 0.9, 1.0), cancel=cancel), compare)


def run_name(params: TrainParams) -> str:
    return f"{params.method}-{params.data}-seed{params.seed}-e{params.epochs}.topomap.pt"


def with_widths(params: TrainParams, text: str) -> TrainParams:
    """Parameters with widths typed as '16,36,64' (validated: a clear sentence when wrong)."""
    return replace(params, widths=parse_widths(text))
