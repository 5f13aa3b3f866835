"""The one training loop every method shares, with progress, cancel, snapshots and resume.

Per mini-batch: forward, cross-entropy (+ tau * TopoLoss for ``topoloss``), backward, SGD step,
then for ``cbsom``/``absom`` the neighbourhood update of EVERY conv layer around that layer's BMU.
``som`` runs the same epochs and batches but fits a Kohonen map to the input pixels instead.

After every epoch a checkpoint (``RUN.partial``) is written; a later call with the same parameters
resumes from it. Batch order depends only on (seed, epoch), so a resumed run is the same run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, atomic_path, no_progress, to_jsonable

from .data import Dataset, load_dataset
from .maps import LayerStats, layer_stats
from .params import TrainParams
from .runfile import (
    CHECKPOINT_FORMAT,
    VERSION,
    EpochStats,
    RunRecord,
    Snapshot,
    history_from_plain,
    history_to_plain,
    read_archive,
    save_run,
    snapshots_from_torch,
    snapshots_to_torch,
)
from .stimuli import grating_probe


@dataclass(frozen=True)
class EpochUpdate:
    """Streamed to the panel after every epoch (live loss/accuracy, latest maps)."""

    params: TrainParams
    history: tuple[EpochStats, ...]
    snapshot: Snapshot | None  # set on snapshot epochs


@dataclass(frozen=True)
class TrainResult:
    method: str
    data: str
    seed: int
    epochs: int
    accuracy: float  # held-out, percent
    smoothness: dict[str, float]  # |delta d'| score per layer (d' of the conv output, as the reference)
    shuffled_smoothness: dict[str, float]  # the same score with positions shuffled (control)
    relu_smoothness: dict[str, float]  # the score on the rectified output's d' (a check)
    orientation_smoothness: dict[str, float]
    pinwheels: dict[str, int]
    seconds: float  # training wall time (all sessions, if resumed)
    steps: int
    resumed_from_epoch: int
    out: str | None


def snapshot_epochs(epochs: int, count: int) -> list[int]:
    """``count`` epochs from 0 (initialisation) to ``epochs``, evenly spread, always both ends."""
    return sorted({int(round(x)) for x in np.linspace(0, epochs, min(count, epochs + 1))})


def first_layer_tiles(model) -> np.ndarray:
    """First-layer filters [K, kh, kw] (SOM: prototype images [K, 16, 16])."""
    from .model import KohonenMap

    if isinstance(model, KohonenMap):
        w = model.weight.detach().numpy()
        side = int(math.isqrt(w.shape[1]))
        return w.reshape(-1, side, side).copy()
    return model.convs[0].weight.detach()[:, 0].numpy().copy()


def take_snapshot(model, data: Dataset, epoch: int) -> Snapshot:
    """Responses to the held-out images and to the grating probe -> per-layer statistics."""
    from .probe import unit_responses

    probe = grating_probe()
    pre = unit_responses(model, data.x_test, "pre")
    post = unit_responses(model, data.x_test, "post")
    gratings = unit_responses(model, data.standardise(probe.flat))
    layers = tuple(layer_stats(a, b, data.y_test, data.n_classes, g) for a, b, g in zip(pre, post, gratings))
    return Snapshot(epoch, layers, first_layer_tiles(model))


def quick_smoothness(layers: tuple[LayerStats, ...]) -> tuple[float, ...]:
    from .analysis import smoothness_curve

    return tuple(float(smoothness_curve(s.dprime.T, s.width, shuffles=0).score) for s in layers)


def checkpoint_path(out: Path) -> Path:
    return out.with_name(out.name + ".partial")


def train(
    params: TrainParams,
    *,
    out: Path | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    partial: Callable[[EpochUpdate], None] | None = None,
    resume: bool = True,
) -> TrainResult:
    """Train one run; write ``out`` (a ``*.topomap.pt`` run file) when given; ``partial`` gets an
    ``EpochUpdate`` after every epoch."""
    import torch

    from .model import build_model
    from .probe import accuracy as held_out_accuracy

    progress(0.0, f"{params.method}: loading {params.data}")
    data = load_dataset(params.data)
    torch.manual_seed(params.seed)
    model = build_model(params, data.n_classes)
    x_train = torch.from_numpy(data.x_train)
    y_train = torch.from_numpy(data.y_train)
    n = len(x_train)
    steps_per_epoch = math.ceil(n / params.batch_size)
    total_steps = params.epochs * steps_per_epoch
    marks = snapshot_epochs(params.epochs, params.snapshots)

    optimizer = None
    scheduler = None
    if params.method != "som":
        optimizer = torch.optim.SGD(model.parameters(), lr=params.lr, momentum=params.momentum)
        if params.lr_schedule == "cosine":
            scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps)
        else:  # the reference's MultiStepLR(milestones=[60, 80] of 90 epochs, gamma=0.1), in steps
            milestones = [round(total_steps * 2 / 3), round(total_steps * 8 / 9)]
            scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=milestones, gamma=0.1)
    else:
        model.init_from(x_train, torch.Generator().manual_seed(params.seed))

    history: list[EpochStats] = []
    snapshots: list[Snapshot] = []
    start_epoch, seconds_before = 0, 0.0
    ckpt = checkpoint_path(Path(out)) if out is not None else None
    if ckpt is not None and resume and ckpt.exists():
        state = _load_checkpoint(ckpt, params)
        if state is not None:
            model.load_state_dict(state["model"])
            if optimizer is not None:
                optimizer.load_state_dict(state["optimizer"])
                scheduler.load_state_dict(state["scheduler"])
            history = list(history_from_plain(state["history"]))
            snapshots = list(snapshots_from_torch(state["snapshots"]))
            start_epoch = int(state["epoch"])
            seconds_before = float(state["seconds"])
    if start_epoch == 0:
        snapshots = [take_snapshot(model, data, 0)] if 0 in marks else []

    t0 = time.perf_counter()
    step = start_epoch * steps_per_epoch
    for epoch in range(start_epoch, params.epochs):
        order = torch.randperm(n, generator=torch.Generator().manual_seed(params.seed * 100_003 + epoch))
        model.train()
        loss_sum, correct, seen = 0.0, 0, 0
        # One status per epoch (log files get a line when the text changes, not one per batch).
        status = f"{params.method} epoch {epoch + 1}/{params.epochs}" + (
            f"  loss {history[-1].loss:.3f}  held-out {history[-1].test_accuracy:.1f}%" if history else ""
        )
        for b in range(steps_per_epoch):
            cancel.raise_if_cancelled()
            idx = order[b * params.batch_size : (b + 1) * params.batch_size]
            xb, yb = x_train[idx], y_train[idx]
            if params.method == "som":
                alpha = _decayed(params.som_alpha0, step, total_steps, params)
                sigma = _decayed(math.sqrt(params.som_width) / 2.0, step, total_steps, params, sigma=True)
                loss = model.step(xb, alpha, sigma)
            else:
                loss, hits = _sgd_step(model, optimizer, xb, yb, params, step, total_steps)
                scheduler.step()
                correct += hits
            loss_sum += loss * len(idx)
            seen += len(idx)
            step += 1
            progress((epoch + (b + 1) / steps_per_epoch) / params.epochs * 0.97, status)
        if params.method == "som":
            model.assign_labels(x_train, y_train)
            correct = int((model(x_train)[0].argmax(1) == y_train).sum())
        test_acc = held_out_accuracy(model, data.x_test, data.y_test)
        if not math.isfinite(loss_sum):
            raise EngineError(f"training diverged at epoch {epoch + 1} (the loss is not finite): lower the learning rate or alpha0")
        snap = take_snapshot(model, data, epoch + 1) if epoch + 1 in marks else None
        if snap is not None:
            snapshots.append(snap)
        elapsed = seconds_before + time.perf_counter() - t0
        history.append(
            EpochStats(epoch + 1, step, loss_sum / seen, 100.0 * correct / n, test_acc, elapsed, quick_smoothness(snap.layers) if snap else ())
        )
        if partial is not None:
            partial(EpochUpdate(params, tuple(history), snap))
        if ckpt is not None and epoch + 1 < params.epochs:
            _save_checkpoint(ckpt, params, model, optimizer, scheduler, history, snapshots, epoch + 1, elapsed)

    seconds = seconds_before + time.perf_counter() - t0
    record = RunRecord(params, data.classes, model.state_dict(), tuple(history), tuple(snapshots), history[-1].test_accuracy, seconds)
    progress(0.98, "measuring the maps")
    result = summarise(record, out=out, resumed_from=start_epoch)
    if out is not None:
        save_run(Path(out), record)
        if ckpt is not None and ckpt.exists():
            ckpt.unlink()
    progress(1.0, f"{params.method}: {record.accuracy:.1f}% in {seconds:.0f} s")
    return result


def summarise(record: RunRecord, *, out: Path | None = None, resumed_from: int = 0, shuffles: int = 200) -> TrainResult:
    """The headline numbers of a run from its final snapshot."""
    from .maps import derive_maps

    final = record.snapshots[-1]
    maps = [derive_maps(name, stats, shuffles=shuffles) for name, stats in zip(record.layer_names, final.layers)]
    p = record.params
    return TrainResult(
        method=p.method,
        data=p.data,
        seed=p.seed,
        epochs=p.epochs,
        accuracy=record.accuracy,
        smoothness={m.name: m.smoothness.score for m in maps},
        shuffled_smoothness={m.name: m.smoothness.shuffled_score for m in maps},
        relu_smoothness={m.name: m.relu_smoothness.score for m in maps},
        orientation_smoothness={m.name: m.orientation_smoothness.score for m in maps},
        pinwheels={m.name: len(m.pinwheels) for m in maps},
        seconds=record.seconds,
        steps=record.history[-1].step if record.history else 0,
        resumed_from_epoch=resumed_from,
        out=str(out) if out is not None else None,
    )


def _decayed(start: float, step: int, total: int, params: TrainParams, sigma: bool = False) -> float:
    from .selforg import schedule

    return schedule(step, total, start, params.decay, params.sigma_min if sigma else params.alpha_min)


def _sgd_step(model, optimizer, xb, yb, params: TrainParams, step: int, total: int) -> tuple[float, int]:
    import torch.nn.functional as F

    from .selforg import activation_bmu, credit_bmu, neighbourhood_update, topo_loss

    logits, pre, _ = model(xb)
    loss = F.cross_entropy(logits, yb)
    task_loss = float(loss.detach())
    if params.method == "topoloss" and params.tau > 0:
        loss = loss + params.tau * sum(topo_loss(conv.weight, params.topo_factor) for conv in model.convs)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if params.method in ("cbsom", "absom"):
        alpha = _decayed(params.alpha0, step, total, params)
        for i, conv in enumerate(model.convs):
            sigma0 = params.sigma0 if params.sigma0 is not None else math.sqrt(conv.out_channels)
            sigma = _decayed(sigma0, step, total, params, sigma=True)
            bmu = credit_bmu(conv.weight.grad) if params.method == "cbsom" else activation_bmu(pre[i])
            neighbourhood_update(conv.weight.data, bmu, model.positions(i), alpha, sigma)
    return task_loss, int((logits.argmax(1) == yb).sum())


def _save_checkpoint(path: Path, params, model, optimizer, scheduler, history, snapshots, epoch: int, seconds: float) -> None:
    import torch

    payload: dict[str, Any] = {
        "format": CHECKPOINT_FORMAT,
        "version": VERSION,
        "params": to_jsonable(asdict(params)),
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else {},
        "scheduler": scheduler.state_dict() if scheduler is not None else {},
        "history": history_to_plain(history),
        "snapshots": snapshots_to_torch(snapshots),
        "epoch": epoch,
        "seconds": seconds,
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def _load_checkpoint(path: Path, params: TrainParams) -> dict[str, Any] | None:
    """The checkpoint's contents when it belongs to these parameters; None otherwise (start over)."""
    try:
        state = read_archive(path, CHECKPOINT_FORMAT)
    except EngineError:
        return None
    if state.get("params") != to_jsonable(asdict(params)) or not 0 < int(state.get("epoch", 0)) < params.epochs:
        return None
    return state
