"""Training the edit model on procedurally generated reverse-path examples.

``train(params)`` runs for a wall-clock budget and resumes from ``params.out`` when it exists
(weights, optimiser, step and history live in that one file), so a longer schedule continues
later. Checkpoints are written atomically every few minutes and at the end.

Launched by torchrun as several processes (see ``engines.core.distributed``), every process makes
the whole global batch from the same seed and trains on its rows: a batch's rows come out of one
sequence of random draws, grouped by length over several batches, so this is how 2 processes see
exactly the batches 1 process sees. The data work therefore does not split; the model's does.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engines.core import NEVER_CANCELLED, Cancelled, CancelToken, EngineError, ProgressFn, atomic_path, check_seed, no_progress
from engines.core.batch_stream import BatchStream

from .data import TRAINING_GROUP, Batch, DataConfig, sample_batches, training_batches

FORMAT = "sketcher-edit-model/1"
VALIDATION_SEED = 424242


@dataclass(frozen=True)
class TrainParams:
    minutes: float
    out: str
    seed: int = 0
    batch_size: int = 32
    lr: float = 2e-3
    data_workers: int = 1  # batches made in a second process (see ``engines.core.batch_stream``)
    save_every_s: float = 180.0
    validation_size: int = 512
    log_every: int = 25  # steps per loss record (history, progress)
    max_steps: int | None = None  # stop once the run has this many steps in all (tests); the minutes still bound it
    data: DataConfig = field(default_factory=DataConfig)

    def __post_init__(self) -> None:
        """Impossible settings fail when built, before any data is made."""
        if not self.minutes > 0:
            raise EngineError("training needs a positive number of minutes")
        check_seed(self.seed)
        if self.batch_size < 1:
            raise EngineError("the batch size must be at least 1")
        if self.log_every < 1:
            raise EngineError("losses are recorded every 1 or more steps")
        if self.max_steps is not None and self.max_steps < 1:
            raise EngineError("max_steps must be at least 1")


@dataclass(frozen=True)
class TrainResult:
    out: str
    steps: int
    run_seconds: float
    total_seconds: float
    examples: int
    resumed_from_step: int
    metrics: dict[str, float]


def to_tensors(batch: Batch, device) -> dict[str, Any]:
    import torch

    from .model import images_to_tensor

    out = {
        k: torch.from_numpy(getattr(batch, k)).to(device)
        for k in (
            "seq",
            "pointer",
            "pointed",
            "length",
            "pointer_target",
            "pointer_ok",
            "fix",
            "fix_category",
            "anchors",
            "next_token",
            "category",
            "remaining",
        )
    }
    out["target"] = images_to_tensor(batch.target, device)
    out["current"] = images_to_tensor(batch.current, device)
    return out


def label_counts(t: dict[str, Any]) -> list[float]:
    """What ``compute_loss`` divides its sums by on these rows: labels, program tokens and the weight
    of the dense value labels. Training processes all divide by their mean over the processes, so
    that their losses average to the loss of the whole global batch, as one process takes it."""
    labels = 1 + (t["next_token"] != -100).sum(dim=1)  # the pointer and the replacement tokens
    return [float(labels.sum()), float(t["length"].sum()), float(_fix_weight(t).sum())]


def _fix_weight(t: dict[str, Any]):
    """The dense value labels' weights: mostly learn from the wrong tokens."""
    import torch

    return torch.where(t["fix"] == t["seq"], 0.2, 1.0) * (t["fix"] >= 0)


def compute_loss(model, t: dict[str, Any], counts: list[float] | None = None):
    """Mean cross-entropy over every label (pointer and replacement tokens) plus a small value loss;
    ``counts`` are what the sums are divided by (see ``label_counts``; by default this batch's own)."""
    import torch
    import torch.nn.functional as F

    from .model import prefix_causal_mask

    n_labels, n_tokens, n_fix = counts or label_counts(t)
    seq = t["seq"]
    b, n = seq.shape
    image = model.encoder(t["target"], t["current"])
    positions = torch.arange(n, device=seq.device).expand(b, n)
    h = model.run(model.embed(seq, positions, t["pointer"], t["pointed"], image, t["anchors"]), prefix_causal_mask(t["length"], n))
    rows = torch.arange(b, device=seq.device)
    query = h[rows, t["length"]]
    valid = positions < t["length"][:, None]
    ptr_logits = model.pointer_logits(query, h, valid)
    # any node the reverse path may edit next is a right answer: maximise their total probability
    ok = t["pointer_ok"]
    ptr_loss = torch.logsumexp(ptr_logits, -1) - torch.logsumexp(ptr_logits.masked_fill(~ok, float("-inf")), -1)
    logits = model.head(h) + model.cat_mask[t["category"]]
    labels = t["next_token"]
    tok_loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100, reduction="none").view(b, n)
    labelled = labels != -100
    loss = (ptr_loss.sum() + tok_loss.sum()) / n_labels
    differs = model.differs(h).squeeze(-1)  # dense help for the pointer: which program nodes are wrong
    differs_loss = (F.binary_cross_entropy_with_logits(differs, ok.float(), reduction="none") * valid).sum() / n_tokens
    # dense help for the values: every program token predicts the target's token at its place
    fix_logits = model.head(h) + model.cat_mask[t["fix_category"]]
    fix_each = F.cross_entropy(fix_logits.reshape(-1, fix_logits.shape[-1]), t["fix"].reshape(-1), ignore_index=-100, reduction="none").view(b, n)
    fix_loss = (fix_each * _fix_weight(t)).sum() / max(n_fix, 1.0)
    value = model.value(query).squeeze(-1)
    value_loss = F.mse_loss(value, torch.log1p(t["remaining"].float()))
    with torch.no_grad():
        ptr_ok = ok[rows, ptr_logits.argmax(-1)]
        tok_ok = ((logits.argmax(-1) == labels) | ~labelled).all(dim=1) & (ptr_logits.argmax(-1) == t["pointer_target"])
        stats = {
            "loss": float(loss),
            "value_loss": float(value_loss),
            "pointer_accuracy": float(ptr_ok.float().mean()),
            "edit_accuracy": float(tok_ok.float().mean()),
        }
        stats["differs_loss"] = float(differs_loss)
        stats["fix_loss"] = float(fix_loss)
    return loss + 0.1 * value_loss + 0.3 * differs_loss + 0.5 * fix_loss, stats


def _compact_optimizer(state: dict) -> dict:
    import torch

    out = {"param_groups": state["param_groups"], "state": {}}
    for key, s in state["state"].items():
        out["state"][key] = {k: (v.to(torch.bfloat16) if torch.is_tensor(v) and v.ndim > 0 else v) for k, v in s.items()}
    return out


def _expand_optimizer(state: dict) -> dict:
    import torch

    for s in state["state"].values():
        for k, v in list(s.items()):
            if torch.is_tensor(v) and v.dtype == torch.bfloat16:
                s[k] = v.float()
    return state


def load_checkpoint(path: str | Path) -> dict:
    from engines.core.checkpoint import read_checkpoint

    path = Path(path)
    if not path.exists():
        raise EngineError(f"checkpoint {path} does not exist")
    ckpt = read_checkpoint(path, "sketcher model checkpoint", keys=("format", "config", "model"), fmt=FORMAT)
    return ckpt


def build_model(ckpt: dict | None = None):
    from .model import EditModel, ModelConfig

    cfg = ModelConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in ckpt["config"].items()}) if ckpt else ModelConfig()
    model = EditModel(cfg)
    if ckpt:
        model.load_state_dict(ckpt["model"])
    return model


def evaluate(model, batches: list[Batch], device) -> dict[str, float]:
    import torch

    model.eval()
    totals: dict[str, float] = {}
    with torch.no_grad():
        for batch in batches:
            _, stats = compute_loss(model, to_tensors(batch, device))
            for k, v in stats.items():
                totals[k] = totals.get(k, 0.0) + v / len(batches)
    model.train()
    return totals


def validation_batches(size: int, batch_size: int, data: DataConfig) -> list[Batch]:
    return sample_batches(random.Random(VALIDATION_SEED), max(1, size // batch_size), batch_size, data)


def train(params: TrainParams, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED, partial=None) -> TrainResult:
    """Train for ``params.minutes``; ``partial`` gets the summary line of every ``params.log_every`` steps.
    Torch's threads are the caller's to set (the CLI job sets them from --threads).

    Under torchrun each process trains on its share of every global batch of ``params.batch_size``;
    rank 0 alone reports progress, validates and writes the checkpoint (its result holds the metrics)."""
    import torch

    from engines.core import seed_everything
    from engines.core.distributed import LossModule, setup

    device = torch.device("cpu")
    group = setup(device)
    share = group.share(params.batch_size)  # a batch that does not split over the processes fails before any data is made
    if not group.main:
        progress, partial = no_progress, None
    out = Path(params.out)
    ckpt = load_checkpoint(out) if out.exists() else None
    model = build_model(ckpt).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=params.lr, weight_decay=0.01, fused=True)
    step = 0
    total_seconds = 0.0
    history: list[list[float]] = []
    if ckpt:
        optimizer.load_state_dict(_expand_optimizer(ckpt["optimizer"]))
        step, total_seconds, history = ckpt["step"], ckpt["seconds"], ckpt["history"]
    start_step = step
    seed_everything(params.seed * 1_000_003 + step)  # the same on every process: each makes the whole global batch
    stream = BatchStream(
        training_batches, (params.seed * 1_000_003 + step, params.batch_size, params.data), params.data_workers, chunk=TRAINING_GROUP
    )
    batches = iter(stream)
    budget = params.minutes * 60.0
    started = time.monotonic()
    last_save = started
    window: list[dict[str, float]] = []
    examples = 0

    def save(metrics: dict[str, float] | None = None) -> None:
        state = {
            "format": FORMAT,
            "config": model.cfg.to_dict(),
            "data": asdict(params.data),
            "model": model.state_dict(),
            "optimizer": _compact_optimizer(optimizer.state_dict()),
            "step": step,
            "seconds": total_seconds + (time.monotonic() - started),
            "seed": params.seed,
            "batch_size": params.batch_size,
            "history": history,
            "metrics": metrics or (ckpt or {}).get("metrics", {}),
        }
        with atomic_path(out) as tmp:
            torch.save(state, tmp)

    model.train()
    loss_of = group.wrap(LossModule(model, compute_loss))
    try:
        while True:
            # every process takes the slowest clock and any cancel, so that all stop at the same step
            elapsed, cancelled = group.agree_max([time.monotonic() - started, float(cancel.cancelled())])
            if elapsed >= budget or (params.max_steps is not None and step >= params.max_steps):
                break
            if cancelled:
                raise Cancelled("cancelled by the user")
            frac = elapsed / budget
            warm = min(1.0, (step - start_step + 1) / 100)
            decay = 1.0 if frac < 0.8 else 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (frac - 0.8) / 0.2))
            for g in optimizer.param_groups:
                g["lr"] = params.lr * warm * decay
            t = to_tensors(next(batches).rows(share), device)
            loss, stats = loss_of(t, group.mean(label_counts(t)))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            step += 1
            examples += params.batch_size
            window.append(stats)
            if len(window) == params.log_every:
                # the mean over the processes: the loss on the whole global batch
                logged = ("loss", "pointer_accuracy", "edit_accuracy")
                loss_mean, pointer, edit = group.mean([sum(w[k] for w in window) / len(window) for k in logged])
                history.append([step, round(total_seconds + elapsed, 1), loss_mean, pointer, edit])
                window.clear()
                text = f"step {step}: loss {loss_mean:.3f}, position {pointer:.2f}, edit {edit:.2f}"
                progress(frac, text)
                if partial:
                    partial(text)
            if group.main and time.monotonic() - last_save > params.save_every_s:
                save()
                last_save = time.monotonic()
    except Cancelled:
        if group.main:
            save()
        group.wait_all()
        raise
    finally:
        stream.close()
    metrics: dict[str, float] = {}
    if group.main:
        progress(0.99, "validating")
        metrics = evaluate(model, validation_batches(params.validation_size, params.batch_size, params.data), device)
        metrics = {f"validation_{k}": round(v, 4) for k, v in metrics.items()}
        save(metrics)
    group.wait_all()  # every process leaves after rank 0 wrote the checkpoint
    run_seconds = time.monotonic() - started
    progress(1.0, "done")
    return TrainResult(str(out), step, round(run_seconds, 1), round(total_seconds + run_seconds, 1), examples, start_step, metrics)
