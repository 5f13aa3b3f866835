"""Training the edit model on procedurally generated reverse-path examples.

``train(params)`` runs for a wall-clock budget and resumes from ``params.out`` when it exists
(weights, optimiser, step and history live in that one file), so a longer schedule continues
later. Checkpoints are written atomically every few minutes and at the end.
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
    data: DataConfig = field(default_factory=DataConfig)


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


def compute_loss(model, t: dict[str, Any]):
    """Mean cross-entropy over every label (pointer and replacement tokens) plus a small value loss."""
    import torch
    import torch.nn.functional as F

    from .model import prefix_causal_mask

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
    n_labels = b + labelled.sum()
    loss = (ptr_loss.sum() + tok_loss.sum()) / n_labels
    differs = model.differs(h).squeeze(-1)  # dense help for the pointer: which program nodes are wrong
    differs_loss = (F.binary_cross_entropy_with_logits(differs, ok.float(), reduction="none") * valid).sum() / valid.sum()
    # dense help for the values: every program token predicts the target's token at its place
    fix_logits = model.head(h) + model.cat_mask[t["fix_category"]]
    fix_each = F.cross_entropy(fix_logits.reshape(-1, fix_logits.shape[-1]), t["fix"].reshape(-1), ignore_index=-100, reduction="none").view(b, n)
    fix_weight = torch.where(t["fix"] == seq, 0.2, 1.0) * (t["fix"] >= 0)  # mostly learn from the wrong tokens
    fix_loss = (fix_each * fix_weight).sum() / fix_weight.sum().clamp(min=1.0)
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
    """Train for ``params.minutes``; ``partial`` gets the summary line of every 25 steps. Torch's threads are
    the caller's to set (the CLI job sets them from --threads)."""
    import torch

    from engines.core import seed_everything

    if not params.minutes > 0:
        raise EngineError("training needs a positive number of minutes")
    check_seed(params.seed)
    device = torch.device("cpu")
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
    seed_everything(params.seed * 1_000_003 + step)
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
    try:
        while True:
            elapsed = time.monotonic() - started
            if elapsed >= budget:
                break
            cancel.raise_if_cancelled()
            frac = elapsed / budget
            warm = min(1.0, (step - start_step + 1) / 100)
            decay = 1.0 if frac < 0.8 else 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (frac - 0.8) / 0.2))
            for group in optimizer.param_groups:
                group["lr"] = params.lr * warm * decay
            batch = next(batches)
            loss, stats = compute_loss(model, to_tensors(batch, device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            step += 1
            examples += params.batch_size
            window.append(stats)
            if len(window) == 25:
                mean = {k: sum(w[k] for w in window) / len(window) for k in window[0]}
                history.append([step, round(total_seconds + elapsed, 1), mean["loss"], mean["pointer_accuracy"], mean["edit_accuracy"]])
                window.clear()
                text = f"step {step}: loss {mean['loss']:.3f}, position {mean['pointer_accuracy']:.2f}, edit {mean['edit_accuracy']:.2f}"
                progress(frac, text)
                if partial:
                    partial(text)
            if time.monotonic() - last_save > params.save_every_s:
                save()
                last_save = time.monotonic()
    except Cancelled:
        save()
        raise
    finally:
        stream.close()
    progress(0.99, "validating")
    metrics = evaluate(model, validation_batches(params.validation_size, params.batch_size, params.data), device)
    metrics = {f"validation_{k}": round(v, 4) for k, v in metrics.items()}
    save(metrics)
    run_seconds = time.monotonic() - started
    progress(1.0, "done")
    return TrainResult(str(out), step, round(run_seconds, 1), round(total_seconds + run_seconds, 1), examples, start_step, metrics)
