"""`train-prior`: fit the object prior on procedural objects, resuming from its checkpoint.

Loss (GrabS stage 1): L1 on the signed distance, truncated at 0.15 (normalised) so the small
decoder spends itself near surfaces, with large errors down-weighted (weight min(1, delta /
error), so a confusing clutter point cannot dominate a batch), a small KL term on the VAE
latent, and the pose head's loss (yaw up to the shape's symmetry, pitch and roll).
A curriculum starts on uncluttered objects (the first quarter of the budget), then adds GrabS's
clutter to most samples. The learning rate follows the wall-clock budget (flat, then a cosine
decay over the last 40%).

Launched by torchrun as several processes (see ``engines.core.distributed``), each process makes
its own share of every global batch of ``--batch`` samples from its own stream (seeded by its
rank, with its own pool of ``--pool`` objects), and DDP averages the gradients. Unlike the
planner and the sketcher, the processes do not see the batches one process would: the stream
draws pool refreshes and samples from one generator in sequence, so only by making the whole
1-process batch could a process know its rows, and samples (posed partial views and signed
distances) are the costly part of a step (see ``engines.core.batch_stream``): every process would
do all of the data work. They follow the 1-process loss curve statistically (the same global
batch size, samples of the same kind), not to the digit.
"""
from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from engines.core import Cancelled, CancelToken, EngineError, NEVER_CANCELLED, ProgressFn, no_progress, seed_everything
from engines.core.batch_stream import BatchStream

from .prior_data import HELD_OUT_CATEGORIES, TRAIN_CATEGORIES, ObjectPool, Sample, make_sample


@dataclass(frozen=True)
class TrainParams:
    minutes: float = 25.0
    seed: int = 0
    batch: int = 32
    inputs: int = 256
    queries: int = 512
    lr: float = 2e-3
    kl_weight: float = 2e-5
    true_pose: float = 0.5  # share of samples canonicalised with the true pose (teacher forcing)
    pose_weight: float = 0.5
    delta: float = 0.25  # errors above it are down-weighted (outliers from ambiguous clutter)
    truncation: float = 0.15  # distances are learned up to this (normalised); the far field is flat
    clean_start: float = 0.25  # share of the budget trained on uncluttered objects first
    clean_share: float = 0.2  # share of uncluttered objects afterwards
    clutter_weight: float = 1.0  # loss weight of observed clutter points (what teaches rejection)
    pool: int = 768
    room_share: float = 0.5  # share of pool objects drawn from the room generator's categories (the rest: wide families)
    refresh: int = 2  # pool entries replaced per step
    save_every_s: float = 60.0
    val_size: int = 192
    data_workers: int = 1  # samples made in a second process (see ``engines.core.batch_stream``)
    model: str = "base"  # a key of ``prior.MODEL_SIZES``
    voxel: float = 0.03  # encoder input voxel size (normalised units); 0 = none
    max_steps: int | None = None  # stop once the run has this many steps in all (tests); the minutes still bound it

    def __post_init__(self) -> None:
        from .prior import MODEL_SIZES

        if self.model not in MODEL_SIZES:
            raise EngineError(f"model must be one of {', '.join(MODEL_SIZES)}")
        if not 0 <= self.voxel <= 0.2:
            raise EngineError("voxel must be in [0, 0.2] (normalised units)")
        if not 0 < self.minutes <= 90:
            raise EngineError("minutes must be in (0, 90]")
        if self.pool < 2 or self.val_size < 2:
            raise EngineError("pool and val_size must be at least 2")
        if self.batch < 2 or self.inputs < 32 or self.queries < 32:
            raise EngineError("batch >= 2, inputs >= 32, queries >= 32")
        if not 0 <= self.room_share <= 1:
            raise EngineError("room_share must be in [0, 1]")
        if self.max_steps is not None and self.max_steps < 1:
            raise EngineError("max_steps must be at least 1")


@dataclass(frozen=True)
class TrainResult:
    checkpoint: str
    steps: int
    wall_seconds: float
    parameters: int
    metrics: dict[str, float]


def training_samples(seed: tuple[int, ...], params: TrainParams, rows: int, knob) -> Iterator[list[Sample]]:
    """The endless stream of training batches of ``rows`` samples (a process's share of ``params.batch``);
    ``knob.value`` is the share of cluttered samples."""
    rng = np.random.default_rng(list(seed))
    pool = ObjectPool(params.pool, rng, room_share=params.room_share)
    while True:
        pool.refresh(params.refresh)
        clutter = knob.value
        yield [make_sample(pool, rng, params.inputs, params.queries, clutter=bool(rng.random() < clutter), voxel=params.voxel) for _ in range(rows)]


def _batch(samples: list[Sample]):
    import torch

    x = torch.from_numpy(np.stack([s.inputs for s in samples]))
    q = torch.from_numpy(np.stack([s.queries for s in samples]))
    d = torch.from_numpy(np.stack([s.sdf for s in samples]))
    clutter = torch.from_numpy(np.stack([s.clutter for s in samples]))
    pose = torch.tensor([[s.yaw, s.pitch, s.roll] for s in samples], dtype=torch.float32)
    sym = torch.tensor([s.symmetry for s in samples])
    return x, q, d, clutter, pose, sym


def yaw_loss(pred, target, symmetry):
    """1 - cos of the yaw error, minimised over the shape's symmetric yaws (0 = any yaw: no loss)."""
    import torch

    k = symmetry.clamp(min=1).float()
    offsets = torch.arange(4, dtype=torch.float32)[None, :] * (2 * math.pi) / k[:, None]
    offsets = torch.where(torch.arange(4)[None, :] < symmetry.clamp(min=1)[:, None], offsets, torch.zeros_like(offsets))
    err = 1 - torch.cos(pred[:, None] - target[:, None] - offsets)
    loss = err.min(dim=1).values
    return torch.where(symmetry == 0, torch.zeros_like(loss), loss)


def losses(model, x, q, d, clutter, pose, sym, params: TrainParams) -> dict:
    import torch

    from .prior import MAX_TILT

    rot = None
    if params.true_pose > 0:
        with torch.no_grad():
            pred_rot = model.rotation(*model.pose(x))
            true_rot = model.rotation(pose[:, 0], pose[:, 1], pose[:, 2])
            pick = (torch.rand(len(x)) < params.true_pose)[:, None, None]
            rot = torch.where(pick, true_rot, pred_rot)
    pred, mu, logvar, (yaw, pitch, roll) = model(x, q, rot=rot)
    t = params.truncation
    err = (pred.clamp(-t, t) - d.clamp(-t, t)).abs()
    weight = (params.delta / err.clamp(min=1e-6)).clamp(max=1.0).detach()
    w = 1.0 + (params.clutter_weight - 1.0) * clutter.float()
    sdf = (w * weight * err).sum() / w.sum()
    kl = (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1)).mean()
    pose_l = yaw_loss(yaw, pose[:, 0], sym).mean() + (((pitch - pose[:, 1]) ** 2 + (roll - pose[:, 2]) ** 2) / MAX_TILT**2).mean()
    total = sdf + params.kl_weight * kl + params.pose_weight * pose_l
    return {"total": total, "sdf": sdf, "kl": kl, "pose": pose_l, "l1": err.mean()}


def validation_set(seed: int, n: int = 192, inputs: int = 256, queries: int = 512,
                   categories: tuple[str, ...] = TRAIN_CATEGORIES) -> list[Sample]:
    """Fixed held-out samples (their own seed), cluttered like the end of training."""
    rng = np.random.default_rng(seed + 10_007)
    pool = ObjectPool(min(96, max(4, n // 2)), rng, categories)
    return [make_sample(pool, rng, inputs, queries) for _ in range(n)]


def validate(model, samples: list[Sample], mask_threshold: float = 0.02) -> dict[str, float]:
    """Near-surface L1, mask IoU on observed points (object vs clutter), yaw error in degrees.

    The encoder's inputs are re-drawn from each crop with the model's own density normalisation,
    so checkpoints trained with and without it are measured on the same crops. ``trivial_iou``
    is the mask IoU of calling every observed point object.
    """
    import torch

    from .prior import encoder_inputs

    model.eval()
    x, q, d, _, pose, sym = _batch(samples)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(np.stack([encoder_inputs(s.observed, len(s.inputs), model.config.voxel, rng) for s in samples]).astype(np.float32))
    with torch.no_grad():
        mu, logvar, rot, (yaw, _, _) = model.encode(x)
        pred = model.decode(mu, rot, q)
        near = d.abs() < 0.05
        l1_near = float((pred - d).abs()[near].mean())
        ious, trivial = [], []
        for i, s in enumerate(samples):
            obs = torch.from_numpy(s.observed)[None]
            p = model.decode(mu[i : i + 1], rot[i : i + 1], obs)[0].abs().numpy() <= mask_threshold
            g = np.abs(s.observed_sdf) <= mask_threshold
            ious.append((p & g).sum() / max((p | g).sum(), 1))
            trivial.append(g.sum() / max(len(g), 1))
        yaw_err = torch.acos((1 - yaw_loss(yaw, pose[:, 0], sym)).clamp(-1, 1)) * 180 / math.pi
        has_yaw = sym != 0
    model.train()
    return {
        "l1_near_surface": l1_near,
        "mask_iou": float(np.mean(ious)),
        "trivial_iou": float(np.mean(trivial)),
        "yaw_error_deg_median": float(yaw_err[has_yaw].median()) if has_yaw.any() else float("nan"),
    }


@dataclass(frozen=True)
class PriorCheck:
    """Mask IoU of priors on crops of categories no prior trained on, beside calling every point object."""

    samples: int
    categories: tuple[str, ...]
    trivial_iou: float
    mask_iou: dict[str, float]  # by the name the caller gave each prior
    l1_near_surface: dict[str, float]


def check_priors(priors: dict[str, Path | None], n: int = 192, seed: int = 0, categories: tuple[str, ...] = HELD_OUT_CATEGORIES,
                 progress: ProgressFn = no_progress) -> PriorCheck:
    """Every prior on the same held-out crops (each with its own input density normalisation)."""
    from .prior import load_prior

    if n < 1:
        raise EngineError("the check needs at least one sample")
    progress(0.0, "making held-out crops")
    samples = validation_set(seed + 777, n, categories=categories)
    ious, l1s, trivial = {}, {}, 0.0
    for k, (name, path) in enumerate(priors.items()):
        progress((k + 1) / (len(priors) + 1), f"validating {name}")
        m = validate(load_prior(path), samples)
        ious[name], l1s[name], trivial = m["mask_iou"], m["l1_near_surface"], m["trivial_iou"]
    progress(1.0, "done")
    return PriorCheck(n, categories, trivial, ious, l1s)


def _clutter_share(frac: float, params: TrainParams) -> float:
    """The curriculum: uncluttered objects first, then mostly cluttered ones."""
    return 0.0 if frac < params.clean_start else 1.0 - params.clean_share


def train_prior(out: Path, params: TrainParams = TrainParams(), progress: ProgressFn = no_progress,
                cancel: CancelToken = NEVER_CANCELLED, log_path: Path | None = None) -> TrainResult:
    """Train for ``params.minutes`` more minutes, resuming from ``out`` when it exists.

    Under torchrun each process trains on its own ``params.batch`` / processes samples a step (see
    the module's docstring); rank 0 alone reports, logs, validates and writes the checkpoint (its
    result holds the metrics)."""
    import torch

    from engines.core import configure_threads
    from engines.core.distributed import LossModule, setup

    from .prior import MODEL_SIZES, ObjectPrior, count_parameters, load_checkpoint, save_checkpoint

    configure_threads()
    group = setup()
    group.share(params.batch)  # a batch that does not split over the processes fails before the pool is built
    if not group.main:
        progress, log_path = no_progress, None
    out = Path(out)
    state = {"step": 0, "elapsed_s": 0.0, "seed": params.seed, "history": []}
    model = ObjectPrior(replace(MODEL_SIZES[params.model], voxel=params.voxel))
    payload = None
    if out.exists():  # resume (or fine-tune) with the checkpoint's size; the input normalisation is this run's data's
        loaded, payload = load_checkpoint(out)
        model = ObjectPrior(replace(loaded.config, voxel=params.voxel))
        model.load_state_dict(loaded.state_dict())
    optimizer = torch.optim.Adam(model.parameters(), lr=params.lr)
    if payload is not None:
        if "optimizer" in payload:
            optimizer.load_state_dict(payload["optimizer"])
        state.update(payload.get("state", {}))
        if state.get("seed", params.seed) != params.seed:
            raise EngineError(f"{out.name} was trained with seed {state['seed']}; resume with --seed {state['seed']} or use a new --out")
    model.train()
    seed_everything(params.seed + int(state["step"]) + 1_000_003 * group.rank)  # each process its own latent noise and pose draws
    if group.main:
        val = validation_set(params.seed, params.val_size, params.inputs, params.queries)
        val_unseen = validation_set(params.seed, params.val_size // 2, params.inputs, params.queries, HELD_OUT_CATEGORIES)
    budget = params.minutes * 60.0
    start_elapsed = float(state["elapsed_s"])
    total_planned = start_elapsed + budget
    progress(0.0, "building the object pool")
    seed = (params.seed, int(state["step"])) + ((group.rank,) if group.world > 1 else ())  # alone: the stream of before
    stream = BatchStream(training_samples, (seed, params, params.batch // group.world), params.data_workers,
                         knob=_clutter_share(start_elapsed / total_planned, params))
    loss_of = group.wrap(LossModule(model, losses))
    running: dict[str, float] = {}
    log = None
    try:
        batches = iter(stream)
        batches = itertools.chain([next(batches)], batches)  # the pool is built before the clock starts
        if log_path:
            Path(log_path).parent.mkdir(parents=True, exist_ok=True)
            log = open(log_path, "a")
        t0 = last_save = time.monotonic()
        while True:
            # every process takes the slowest clock and any cancel, so that all stop at the same step
            spent, cancelled = group.agree_max([time.monotonic() - t0, float(cancel.cancelled())])
            if spent >= budget or cancelled or (params.max_steps is not None and state["step"] >= params.max_steps):
                break
            frac = (start_elapsed + spent) / total_planned
            decay = min(max((frac - 0.6) / 0.4, 0.0), 1.0)
            for g in optimizer.param_groups:
                g["lr"] = params.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * decay)))
            stream.set_knob(_clutter_share(frac, params))
            parts = loss_of(*_batch(next(batches)), params)
            optimizer.zero_grad(set_to_none=True)
            parts["total"].backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            state["step"] = int(state["step"]) + 1
            # the mean over the processes: the losses on the whole global batch, the same on every process
            for k, v in zip(parts, group.mean([float(v.detach()) for v in parts.values()])):
                running[k] = 0.98 * running.get(k, v) + 0.02 * v
            progress(spent / budget, f"step {state['step']}  L1 {running['l1']:.4f}  pose {running['pose']:.3f}")
            if group.main and time.monotonic() - last_save >= params.save_every_s:
                state["elapsed_s"] = start_elapsed + time.monotonic() - t0
                entry = {"step": state["step"], "elapsed_s": round(state["elapsed_s"], 1), **{k: round(v, 5) for k, v in running.items()}}
                state["history"] = list(state.get("history", [])) + [entry]
                if log:
                    log.write(json.dumps(entry) + "\n")
                    log.flush()
                save_checkpoint(out, model, optimizer, state)
                last_save = time.monotonic()
        state["elapsed_s"] = start_elapsed + time.monotonic() - t0
        metrics: dict[str, float] = {}
        if group.main:
            progress(0.99, "validating")
            metrics = state["metrics"] = validate(model, val)
            metrics.update({f"held_out_{k}": v for k, v in validate(model, val_unseen).items() if k in ("mask_iou", "trivial_iou")})
            metrics.update({k: float(v) for k, v in running.items()})
            save_checkpoint(out, model, optimizer, state)
        group.wait_all()  # every process leaves after rank 0 wrote the checkpoint
    finally:
        stream.close()
        if log:
            log.close()
    if cancelled or cancel.cancelled():  # agreed by every process, or here during validation
        raise Cancelled("cancelled by the user")
    progress(1.0, "done")
    return TrainResult(str(out), int(state["step"]), float(state["elapsed_s"]), count_parameters(model), metrics)
