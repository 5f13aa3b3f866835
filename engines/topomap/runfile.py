"""Run files (``*.topomap.pt``): the trained weights, the training history and map snapshots.

A run file is a torch archive of plain containers and tensors only, read with
``weights_only=True`` (no pickled code runs). Anything unreadable, truncated or from another
program is one clear ``EngineError``. Writes are atomic.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engines.core import EngineError, atomic_path, from_dict, to_jsonable
from engines.core.checkpoint import read_checkpoint

from .data import dataset_classes
from .maps import LayerStats
from .params import TrainParams

if TYPE_CHECKING:
    from torch import nn

RUN_SUFFIX = ".topomap.pt"
FORMAT = "workbench-topomap-run"
CHECKPOINT_FORMAT = "workbench-topomap-checkpoint"
VERSION = 1
_STAT_FIELDS = ("dprime", "dprime_relu", "orientation", "orientation_selectivity", "frequency", "frequency_selectivity", "responsive")


@dataclass(frozen=True)
class EpochStats:
    epoch: int  # 1-based: the number of epochs done
    step: int
    loss: float
    train_accuracy: float
    test_accuracy: float
    seconds: float
    smoothness: tuple[float, ...] = ()  # per layer, at snapshot epochs (else empty)


@dataclass(frozen=True)
class Snapshot:
    """The maps' raw material at one moment of training (epoch 0 = at initialisation)."""

    epoch: int
    layers: tuple[LayerStats, ...]
    kernels: np.ndarray  # first-layer filters (or SOM prototypes) [K, h, w]


@dataclass(frozen=True)
class RunRecord:
    params: TrainParams
    classes: tuple[str, ...]
    state: dict[str, Any]  # the network's state_dict (torch tensors)
    history: tuple[EpochStats, ...]
    snapshots: tuple[Snapshot, ...]
    accuracy: float
    seconds: float

    @property
    def layer_names(self) -> tuple[str, ...]:
        return self.params.layer_names


def _stats_to_torch(stats: LayerStats) -> dict[str, Any]:
    """Statistics as compact tensors (float32; the boolean mask stays boolean)."""
    import torch

    def compact(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a if a.dtype == bool else a.astype(np.float32))

    return {name: torch.from_numpy(compact(getattr(stats, name))) for name in _STAT_FIELDS}


def _stats_from_torch(data: dict[str, Any]) -> LayerStats:
    return LayerStats(**{name: data[name].numpy() for name in _STAT_FIELDS})


def snapshots_to_torch(snapshots: tuple[Snapshot, ...] | list[Snapshot]) -> list[dict[str, Any]]:
    import torch

    return [
        {
            "epoch": s.epoch,
            "layers": [_stats_to_torch(layer) for layer in s.layers],
            "kernels": torch.from_numpy(np.ascontiguousarray(s.kernels, np.float32)),
        }
        for s in snapshots
    ]


def snapshots_from_torch(items: list[dict[str, Any]]) -> tuple[Snapshot, ...]:
    return tuple(Snapshot(int(s["epoch"]), tuple(_stats_from_torch(layer) for layer in s["layers"]), s["kernels"].numpy()) for s in items)


def history_to_plain(history) -> list[dict[str, Any]]:
    return [to_jsonable(asdict(h)) for h in history]


def history_from_plain(items: list[dict[str, Any]]) -> tuple[EpochStats, ...]:
    return tuple(from_dict(EpochStats, h) for h in items)


def save_run(path: Path, record: RunRecord) -> Path:
    import torch

    payload = {
        "format": FORMAT,
        "version": VERSION,
        "params": to_jsonable(record.params),
        "classes": list(record.classes),
        "state": {k: v.detach().cpu().clone() for k, v in record.state.items()},
        "history": history_to_plain(record.history),
        "snapshots": snapshots_to_torch(record.snapshots),
        "accuracy": float(record.accuracy),
        "seconds": float(record.seconds),
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)
    return Path(path)


def read_archive(path: Path, expected_format: str) -> dict[str, Any]:
    """Load a torch archive safely; a file that is not ours is one clear sentence."""
    path = Path(path)
    if not path.exists():
        raise EngineError(f"{path}: no such run file")
    if path.is_dir():
        raise EngineError(f"{path} is a folder, not a run file")
    payload = read_checkpoint(path, "topomap run file", keys=("format",), fmt=expected_format)
    if payload.get("version") != VERSION:
        raise EngineError(f"{path.name} is a topomap run file of version {str(payload.get('version'))[:20]}, this program reads version {VERSION}")
    return payload


def load_run(path: Path) -> RunRecord:
    payload = read_archive(path, FORMAT)
    try:
        params = from_dict(TrainParams, payload["params"])
        record = RunRecord(
            params=params,
            classes=tuple(str(c) for c in payload["classes"]),
            state=dict(payload["state"]),
            history=history_from_plain(payload["history"]),
            snapshots=snapshots_from_torch(payload["snapshots"]),
            accuracy=float(payload["accuracy"]),
            seconds=float(payload["seconds"]),
        )
    except EngineError as exc:
        raise EngineError(f"{Path(path).name} has invalid contents: {exc}") from exc
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise EngineError(f"{Path(path).name} is damaged: a required entry is missing or malformed") from exc
    _check_consistent(record, Path(path).name)
    return record


def _check_consistent(record: RunRecord, name: str) -> None:
    widths = record.params.layer_widths
    if not record.snapshots:
        raise EngineError(f"{name} is damaged: it holds no map snapshots")
    if not math.isfinite(record.accuracy):
        raise EngineError(f"{name} is damaged: its accuracy is not a finite number")
    for snap in record.snapshots:
        if len(snap.layers) != len(widths) or any(layer.width != w for layer, w in zip(snap.layers, widths)):
            raise EngineError(f"{name} is damaged: its snapshots do not match its layer widths")
        if any(layer.dprime.shape[0] != len(record.classes) for layer in snap.layers):
            raise EngineError(f"{name} is damaged: its snapshots do not match its classes")
    network(record, name)
    if record.classes != dataset_classes(record.params.data):
        raise EngineError(f"{name} is damaged: its classes do not match its data set ({record.params.data})")


def network(record: RunRecord, name: str) -> nn.Module:
    """The network the run describes, carrying its weights. Loaded strictly, so weights of another
    shape, data set or a tampered file are one sentence instead of torch's key-by-key report."""
    import torch

    from .model import build_model

    model = build_model(record.params, len(dataset_classes(record.params.data)))
    try:
        model.load_state_dict(record.state)
    except (RuntimeError, TypeError, AttributeError, ValueError, KeyError) as exc:
        raise EngineError(f"{name} is damaged: its weights do not fit the network it describes") from exc
    if not all(bool(torch.isfinite(t).all()) for t in model.state_dict().values() if t.is_floating_point()):
        raise EngineError(f"{name} is damaged: some of its weights are not finite numbers")  # maps would be NaN
    return model
