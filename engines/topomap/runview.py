"""Everything the panel and the exports show about one run, computed in one background call.

The final layers get unit details (tuning curves, class means, top stimuli) from the rebuilt
network; every snapshot gets its derived maps so the scrubber replays map formation without any
further computation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress

from .maps import LayerMaps, derive_maps, unit_detail
from .params import TrainParams, square_side
from .render import hsv_to_rgb, mosaic
from .runfile import EpochStats, RunRecord, Snapshot, load_run, network
from .stimuli import PROBE_FREQUENCIES, PROBE_ORIENTATIONS

SNAPSHOT_SHUFFLES = 50


@dataclass(frozen=True)
class SnapshotView:
    epoch: int
    layers: tuple[LayerMaps, ...]
    kernels: np.ndarray  # [H, W, 3] uint8 mosaic of first-layer filters on their grid


@dataclass(frozen=True)
class RunView:
    path: str | None
    record: RunRecord
    layers: tuple[LayerMaps, ...]  # the final network, with unit details
    snapshots: tuple[SnapshotView, ...]
    test_images: np.ndarray  # [N, 16, 16] held-out images as shown (unstandardised)
    test_labels: np.ndarray
    top_strips: tuple[np.ndarray, ...]  # per layer [K, 16, w] uint8: each unit's top stimuli side by side
    legends: dict[str, np.ndarray]  # "orientation", "frequency" -> [1, n, 3] uint8 hue bars
    orientations: tuple[float, ...] = PROBE_ORIENTATIONS
    frequencies: tuple[float, ...] = PROBE_FREQUENCIES

    @property
    def params(self) -> TrainParams:
        return self.record.params

    @property
    def classes(self) -> tuple[str, ...]:
        return self.record.classes

    @property
    def history(self) -> tuple[EpochStats, ...]:
        return self.record.history

    @property
    def layer_names(self) -> tuple[str, ...]:
        return self.record.layer_names

    @property
    def kernels(self) -> np.ndarray:
        return self.snapshots[-1].kernels


def open_run(path: Path, *, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED) -> RunView:
    progress(0.0, f"reading {Path(path).name}")
    record = load_run(Path(path))
    return view_run(record, path=Path(path), progress=progress, cancel=cancel)


def view_run(record: RunRecord, *, path: Path | None = None, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED) -> RunView:
    from .data import load_dataset
    from .probe import unit_responses
    from .stimuli import grating_probe

    data = load_dataset(record.params.data)
    progress(0.1, "probing the network")
    model = network(record, Path(path).name if path else "the run")
    test = unit_responses(model, data.x_test)
    gratings = unit_responses(model, data.standardise(grating_probe().flat))
    final = record.snapshots[-1]
    layers = []
    for name, stats, t, g in zip(record.layer_names, final.layers, test, gratings):
        cancel.raise_if_cancelled()
        layers.append(derive_maps(name, stats, detail=unit_detail(t, data.y_test, data.n_classes, g)))
    snapshots = []
    for i, snap in enumerate(record.snapshots):
        cancel.raise_if_cancelled()
        progress(0.3 + 0.7 * i / len(record.snapshots), f"maps at epoch {snap.epoch}")
        snapshots.append(snapshot_view(record.params, snap))
    progress(1.0, "maps ready")
    shown = data.x_test[:, 0] * data.std + data.mean
    strips = tuple(top_stimuli_strips(shown, layer.detail.top_stimuli) for layer in layers if layer.detail is not None)
    return RunView(str(path) if path else None, record, tuple(layers), tuple(snapshots), shown, data.y_test, strips, hue_legends())


def snapshot_view(params: TrainParams, snap: Snapshot, shuffles: int = SNAPSHOT_SHUFFLES) -> SnapshotView:
    """Derived maps of one snapshot (also used live, while a run trains)."""
    maps = tuple(derive_maps(name, stats, shuffles=shuffles) for name, stats in zip(params.layer_names, snap.layers))
    return SnapshotView(snap.epoch, maps, mosaic(snap.kernels, square_side(snap.kernels.shape[0])))


def top_stimuli_strips(images: np.ndarray, top: np.ndarray, gap: int = 2) -> np.ndarray:
    """[K, H, n*(W+gap)-gap] grey strips of each unit's most effective held-out images."""
    lo, hi = float(images.min()), float(images.max())
    grey = np.clip(np.rint((images - lo) / max(hi - lo, 1e-9) * 255), 0, 255).astype(np.uint8)
    k, n = top.shape
    h, w = images.shape[1:]
    out = np.full((k, h, n * (w + gap) - gap), 255, np.uint8)
    for i in range(n):
        out[:, :, i * (w + gap) : i * (w + gap) + w] = grey[top[:, i]]
    return out


def hue_legends(n: int = 180) -> dict[str, np.ndarray]:
    ramp = np.linspace(0.0, 1.0, n, endpoint=False)
    ones = np.ones(n)
    return {"orientation": hsv_to_rgb(ramp, ones, ones)[None], "frequency": hsv_to_rgb(0.8 * np.linspace(0, 1, n), ones, ones)[None]}
