"""Training of the diffusion planner on expert demonstrations, bounded by wall-clock minutes.

It resumes from the output checkpoint when it exists (model, optimiser, EMA, step, seconds so
far), or starts a new run from another checkpoint's weights (fine-tuning); checkpoints are
written atomically every few minutes and at the end. The EMA weights are what the planner uses.
"""
from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from engines.core import NEVER_CANCELLED, Cancelled, CancelToken, EngineError, ProgressFn, atomic_path, no_progress, seed_everything, to_jsonable
from engines.core.budget import check_npz
from engines.core.checkpoint import read_checkpoint
from engines.core.distributed import Group, setup

from .diffusion import T_EPS, diffusion_loss
from .features import EGO_DIM, FUTURE_DT
from .model import DiffusionPlannerNet, ModelConfig, count_parameters
from .planners.diffusion_planner import FORMAT, load_model

INPUT_KEYS = ("agents", "agents_mask", "statics", "statics_mask", "lanes", "lanes_mask", "route", "route_mask", "ego")


@dataclass(frozen=True)
class TrainParams:
    minutes: float = 30.0
    batch: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-4
    ema: float = 0.995
    seed: int = 0
    save_every_s: float = 180.0
    brake_weight: float = 1.0  # sampling weight of samples where the expert brakes hard (rare, and where crashes happen)
    early_weight: float = 1.0  # loss weight of the ego plan's first EARLY_S seconds against the rest (closed loop drives only those)
    slow_weight: float = 1.0  # at most this loss weight for a waypoint the expert reaches with little travel (see travel_weights)
    noise_draws: int = 1  # noise levels drawn per scene and step: the encoder runs once for all of them (see repeat_scenes)
    init: Path | None = None  # a checkpoint a new run starts from (fine-tuning); its normalisation stays, its weights were trained in those units
    max_steps: int | None = None  # for tests
    log_every: int = 50  # steps per loss record (history, progress)

    def __post_init__(self) -> None:
        """Impossible settings fail when built, before any data is generated or loaded."""
        if not self.minutes > 0:
            raise EngineError("--minutes must be positive")
        if self.batch < 1:
            raise EngineError("--batch must be at least 1")
        if not self.brake_weight > 0:
            raise EngineError("--brake-weight must be positive")
        if not self.early_weight > 0:
            raise EngineError("--early-weight must be positive")
        if not self.slow_weight >= 1:
            raise EngineError("--slow-weight must be at least 1")
        if self.noise_draws < 1:
            raise EngineError("--noise-draws must be at least 1")
        if not self.lr > 0:
            raise EngineError("--lr must be positive")


def _load_file(path: Path) -> dict[str, torch.Tensor]:
    if not Path(path).exists():
        raise EngineError(f"no training data at {path}: generate it with 'workbench planner data'")
    check_npz(path)  # the headers may promise more memory than there is
    try:
        with np.load(path) as z:
            data = {k: torch.from_numpy(np.asarray(z[k])) for k in (*INPUT_KEYS, "neighbor_index", "neighbor_current", "future", "future_valid")}
    except (KeyError, ValueError, OSError) as exc:
        raise EngineError(f"{Path(path).name} is not planner training data ({exc})") from None
    for k in ("agents", "statics", "lanes", "route", "ego", "neighbor_current"):
        data[k] = data[k].float()
    data["ego"] = data["ego"][:, :EGO_DIM]  # older data files also hold acceleration and yaw rate
    return data


def load_dataset(paths: Sequence[Path]) -> dict[str, torch.Tensor]:
    """The samples of every file, one after the other (expert data and student-driven data)."""
    parts = [_load_file(p) for p in paths]
    if len(parts) == 1:
        return parts[0]
    try:
        return {k: torch.cat([part[k] for part in parts]) for k in parts[0]}
    except RuntimeError:
        raise EngineError("the training data files do not have the same layout: generate them with the same code") from None


def state_statistics(future: torch.Tensor, valid: torch.Tensor, per_step: bool) -> dict[str, torch.Tensor]:
    """Mean and std of (x, y, cos, sin) of ego and neighbour futures, per waypoint or pooled.

    Headings keep mean 0 / std 1; the std of x and y is floored at 0.3 m. Row 0 (the current,
    pinned state) shares the statistics of the first future waypoint (per waypoint) or of all.
    """
    out = {}
    t1 = future.shape[2]
    for name, sl in (("ego", slice(0, 1)), ("nb", slice(1, None))):
        f = future[:, sl]
        v = valid[:, sl]
        mean = torch.zeros(t1, 4)
        std = torch.ones(t1, 4)
        if per_step:
            for t in range(1, t1):
                ft = f[:, :, t][v[:, :, t]]
                mean[t, :2], std[t, :2] = ft[:, :2].mean(0), ft[:, :2].std(0)
            mean[0], std[0] = mean[1], std[1]
        else:
            fa = f[:, :, 1:][v[:, :, 1:]]
            mean[:, :2], std[:, :2] = fa[:, :2].mean(0), fa[:, :2].std(0)
        std[:, :2] = std[:, :2].clamp(min=0.3)
        out[f"{name}_mean"], out[f"{name}_std"] = mean, std
    return out


HARD_BRAKE = 2.0  # m/s^2 within the first 2 s of the expert's plan


def hard_braking(data: dict[str, torch.Tensor]) -> torch.Tensor:
    """Which samples' expert plans brake harder than ``HARD_BRAKE`` in their first 2 s."""
    horizon = int(round(2.0 / FUTURE_DT))
    x = data["future"][:, 0, : horizon + 2, 0]
    speed = torch.diff(x, dim=1) / FUTURE_DT  # along the ego's heading, between waypoints
    decel = (speed[:, :-1] - speed[:, 1:]) / FUTURE_DT
    return (decel.amax(dim=1) > HARD_BRAKE) & data["future_valid"][:, 0, : horizon + 2].all(dim=1)


EARLY_S = 2.0


def early_weights(future_steps: int, weight: float) -> torch.Tensor | None:
    """Per-waypoint loss weights of the ego plan, mean 1: ``weight`` for the first ``EARLY_S``
    seconds against 1 after them, or None when they are equal.

    Replanning every 0.1 s, the closed loop only ever drives the start of each plan, so an error
    there (braking a little late, cruising a little fast behind a leader) is what collides."""
    if weight == 1.0:
        return None
    t = torch.arange(1, future_steps + 1) * FUTURE_DT
    w = torch.where(t <= EARLY_S + 1e-9, weight, 1.0)
    return w / w.mean()


TRAVEL_FLOOR = 5.0  # m: travel below this counts as this much when weighing a waypoint's error


def travel_weights(travel: torch.Tensor, std: torch.Tensor, cap: float) -> torch.Tensor | None:
    """Per-sample ego waypoint loss weights (B, T): (std_t / max(travel, TRAVEL_FLOOR))^2 clipped to [1, cap].

    Each waypoint is normalised by the spread of all training futures there (35 m at 8 s), so a
    stopping plan's last metres, the ones that decide whether it stops short of a leader, cost
    almost nothing in the loss. Weighing by the plan's own travel measures that error against the
    distance the plan covers instead. ``travel`` (B, T) is the expert's distance from the start, m;
    ``std`` (T,) the normalising spread of the along-track coordinate. None when ``cap`` is 1."""
    if cap == 1.0:
        return None
    return ((std / travel.clamp(min=TRAVEL_FLOOR)) ** 2).clamp(1.0, cap)


def repeat_scenes(draws: int, *tensors: torch.Tensor | None) -> list[torch.Tensor | None]:
    """Each scene's rows ``draws`` times in a row (None stays None), so one encoder pass serves
    several noise levels: the encoder is most of a step's cost, the decoder a small part."""
    return [t.repeat_interleave(draws, dim=0) if t is not None and draws > 1 else t for t in tensors]


def scene_denoiser(model: DiffusionPlannerNet, x: dict[str, torch.Tensor], valid_now: torch.Tensor,
                   draws: int = 1) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """x0 prediction for ``draws`` noisy copies of each scene in ``x`` (rows as ``repeat_scenes``
    lays them out), encoding each scene once. ``valid_now`` (B x draws, P): trajectories present now."""
    def denoise(x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        tokens, pad, cond = model.encoder(x)
        memory = [tuple(repeat_scenes(draws, k, v)) for k, v in model.decoder.memory(tokens)]
        pad, cond = repeat_scenes(draws, pad, cond)
        return model.decoder(x_t, t, memory, pad, cond, ~valid_now)
    return denoise


def batch_targets(model: DiffusionPlannerNet, data: dict[str, torch.Tensor],
                  idx: torch.Tensor) -> tuple[dict, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inputs, normalised x0, which trajectories' waypoints are present, and which ego waypoints
    are labels (a recording's ego plan may end early: its tail is present, extrapolated, untaught)."""
    x = {k: data[k][idx] for k in INPUT_KEYS}
    fut = data["future"][idx].clone()
    valid = data["future_valid"][idx].clone()
    ego_mask = valid[:, 0].clone()
    ego_mask[:, 0] = True
    valid[:, 0] = True
    # Row 0 is the current state: the ego's is (0, 0, 1, 0) by construction, neighbours' from the inputs.
    valid[:, 1:, 0] = data["neighbor_index"][idx] >= 0
    fut[:, 1:, 0] = data["neighbor_current"][idx]
    x0 = model.normalize(fut) * valid[..., None]
    return x, x0, valid, ego_mask


def train(data_paths: Sequence[Path], out: Path, params: TrainParams = TrainParams(), progress: ProgressFn = no_progress,
          cancel: CancelToken = NEVER_CANCELLED, model_config: ModelConfig = ModelConfig()) -> dict:
    """Train for ``params.minutes`` more minutes (resuming from ``out``); returns a summary.

    Launched by torchrun as several processes, each takes its share of every global batch of
    ``params.batch`` (see ``engines.core.distributed``); rank 0 writes the checkpoint."""
    group = setup()
    group.share(params.batch)  # a batch that does not split over the processes fails before any data is read
    if not group.main:
        progress = no_progress
    state = resume_state(out)
    start = check_init(out, params.init, state)
    seed_everything(params.seed)  # the same on every process: together they draw what one process draws
    data = load_dataset(data_paths)
    n = len(data["future"])
    if n < params.batch:
        raise EngineError(f"the training data has only {n} samples, fewer than one batch of {params.batch}")
    if state is not None:
        model_config = ModelConfig(**state["config"])
    elif start is not None:
        model_config = start.cfg
    model = DiffusionPlannerNet(model_config)
    opt = torch.optim.AdamW(model.parameters(), lr=params.lr, weight_decay=params.weight_decay)
    step, seconds, history = 0, 0.0, []
    if state is not None:
        model.load_state_dict(state["train_model"])
        opt.load_state_dict(state["optimizer"])
        step, seconds, history = state["step"], state["train_seconds"], state.get("history", [])
    elif start is not None:
        model.load_state_dict(start.state_dict())
    else:
        for k, v in state_statistics(data["future"], data["future_valid"], model_config.per_step_norm).items():
            getattr(model, k).copy_(v)
    ema = copy.deepcopy(model)
    if state is not None:
        ema.load_state_dict({k: v.float() for k, v in state["model"].items()})
    for p in ema.parameters():
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(params.seed + step)
    weights = None
    if params.brake_weight != 1.0:
        weights = torch.where(hard_braking(data), params.brake_weight, 1.0).double()
    early = early_weights(model_config.future_steps, params.early_weight)
    # Per-sample weights for the whole set, once: the normalisation they depend on is fixed by now.
    travel = travel_weights(data["future"][:, 0, 1:, :2].norm(dim=-1), model.ego_std[1:, 0], params.slow_weight)
    if travel is not None and early is not None:
        travel = travel * early
    budget = params.minutes * 60.0
    t_start = time.perf_counter()
    last_save = t_start
    running = []
    model.train()
    loss_of = group.wrap(_Loss(model))

    draws = params.noise_draws
    while True:
        # every process takes the slowest clock and any cancel, so that all stop at the same step
        elapsed, cancelled = group.agree_max([time.perf_counter() - t_start, float(cancel.cancelled())])
        if elapsed >= budget or (params.max_steps is not None and step >= params.max_steps):
            break
        if cancelled:
            raise Cancelled("cancelled by the user")
        if weights is None:
            idx = torch.randint(0, n, (params.batch,), generator=gen)
        else:
            idx = torch.multinomial(weights, params.batch, replacement=True, generator=gen)
        idx = idx[group.share(params.batch)]
        x, x0, valid, ego_mask = batch_targets(model, data, idx)
        x0, valid, ego_mask, per_sample = repeat_scenes(draws, x0, valid, ego_mask, None if travel is None else travel[idx])
        loss_weights = early if per_sample is None else per_sample
        # Warm-up then a cosine decay over the planned budget of this run.
        frac = min(1.0, (seconds + elapsed) / max(seconds + budget, 1.0))
        lr = float(params.lr * min(1.0, (step + 1) / 200) * (0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * frac))))  # a Python float: checkpoints load weights_only
        for g in opt.param_groups:
            g["lr"] = lr
        loss, ego_loss, nb_loss = loss_of(x, x0, valid, loss_weights, ego_mask, draws, *_global_draws(x0, group))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), model.parameters()):
                pe.mul_(params.ema).add_(pm.detach(), alpha=1 - params.ema)
        step += 1
        running.append((float(ego_loss.detach()), float(nb_loss.detach())))
        if step % params.log_every == 0:
            e, nb = group.mean([float(v) for v in np.mean(running, axis=0)])
            history.append({"step": step, "seconds": round(float(seconds + elapsed), 1), "ego_loss": float(e), "neighbor_loss": float(nb)})
            running = []
            progress(min(elapsed / budget, 0.999), f"step {step}: ego loss {e:.4f}, neighbours {nb:.4f}")
        if group.main and time.perf_counter() - last_save > params.save_every_s:
            _save(out, model, ema, opt, step, seconds + time.perf_counter() - t_start, history, data_paths, n, params)
            last_save = time.perf_counter()
    total = seconds + time.perf_counter() - t_start
    if group.main:
        _save(out, model, ema, opt, step, total, history, data_paths, n, params)
    group.wait_all()
    progress(1.0, f"{step} steps")
    last = history[-1] if history else {}
    return {"out": str(out), "steps": step, "train_seconds": round(total, 1), "samples": n,
            "parameters": count_parameters(model), "ego_loss": last.get("ego_loss"), "neighbor_loss": last.get("neighbor_loss")}


class _Loss(torch.nn.Module):
    """The training loss as one module call, the form DistributedDataParallel wraps."""

    def __init__(self, model: DiffusionPlannerNet) -> None:
        super().__init__()
        self.model = model

    def forward(self, x, x0, valid, weights, ego_mask, draws: int, t=None, noise=None):
        return diffusion_loss(scene_denoiser(self.model, x, valid[:, :, 0], draws), x0, valid, weights, ego_mask, t, noise)


def _global_draws(x0: torch.Tensor, group: Group) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Diffusion times and noise for the whole global batch, drawn as one process draws them
    (every process seeds alike), then this process's rows; alone: None, None (drawn in the loss)."""
    if group.world == 1:
        return None, None
    rows = len(x0) * group.world
    t = torch.rand(rows, device=x0.device) * (1.0 - T_EPS) + T_EPS
    noise = torch.randn(rows, *x0.shape[1:], dtype=x0.dtype, device=x0.device)
    mine = slice(group.rank * len(x0), (group.rank + 1) * len(x0))
    return t[mine], noise[mine]


def check_init(out: Path, init: Path | None, state: dict | None) -> DiffusionPlannerNet | None:
    """The network a new run starts from (None: fresh weights); a run resumes ``out`` or starts from ``init``, never both."""
    if init is None:
        return None
    if state is not None:
        raise EngineError(f"--init starts a new run, but {Path(out).name} already holds one to resume: choose another --out")
    return load_model(init)[0]


def resume_state(out: Path) -> dict | None:
    """The training state in ``out`` (None when there is none yet); an unusable file is a user error."""
    path = Path(out)
    if not path.exists():
        return None
    try:
        state = read_checkpoint(path, "planner checkpoint", keys=("config", "model"), fmt=FORMAT)
    except EngineError as exc:
        raise EngineError(f"cannot resume from {path.name}: {exc}") from None
    if "train_model" not in state:
        raise EngineError(f"{path.name} holds no training state to resume from (it is a shipped, inference-only checkpoint)")
    return state


def _save(out: Path, model, ema, opt, step: int, seconds: float, history: list, data_paths: Sequence[Path], n: int,
          params: TrainParams) -> None:
    state = {
        "format": FORMAT,
        "config": model.cfg.to_dict(),
        "model": {k: v.detach().clone() for k, v in ema.state_dict().items()},
        "train_model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "step": step,
        "train_seconds": float(seconds),  # plain Python values only: the loader reads weights_only
        "history": to_jsonable(history),
        "meta": {"steps": step, "train_seconds": round(float(seconds), 1), "samples": n, "data": " + ".join(Path(p).name for p in data_paths), "seed": params.seed,
                 "batch": params.batch, "lr": params.lr, "brake_weight": params.brake_weight,
                 "early_weight": params.early_weight, "slow_weight": params.slow_weight, "noise_draws": params.noise_draws,
                 "init": None if params.init is None else Path(params.init).name, "parameters": count_parameters(model)},
    }
    with atomic_path(out) as tmp:
        torch.save(state, tmp)


def export_inference(ckpt: Path, out: Path) -> dict:
    """A small inference-only copy (EMA weights in float16) for shipping."""
    state = read_checkpoint(ckpt, "planner checkpoint", keys=("config", "model"), fmt=FORMAT)
    slim = {"format": FORMAT, "config": state["config"], "model": {k: v.half() if v.is_floating_point() else v for k, v in state["model"].items()},
            "meta": state.get("meta", {}), "history": state.get("history", [])}
    with atomic_path(out) as tmp:
        torch.save(slim, tmp)
    return {"out": str(out), "bytes": Path(out).stat().st_size}
