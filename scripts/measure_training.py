"""The training table of docs/scaling.md: each trainer (planner, sketcher edit model, segmentation
prior) for a fixed number of steps at one global batch, alone and on 2 processes launched as
`torchrun --standalone` launches them (gloo), every process one torch thread and no data worker.
Run it on a quiet machine: `python scripts/measure_training.py [--steps 40]`.

Steps/s is over each trainer's own training loop (its clock; set-up and validation left out). The
planner's and the sketcher's processes see the samples one process sees, so their loss curves must
agree (what `tests/engines/*/test_distributed_train.py` checks); the prior's processes draw their
own samples, so its curves agree only statistically.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch

from engines.core.distributed import finish, launch_local
from engines.planner.data import generate_dataset
from engines.planner.model import ModelConfig
from engines.planner.train import TrainParams as PlannerParams
from engines.planner.train import train as train_planner
from engines.segmentation.train import TrainParams as PriorParams
from engines.segmentation.train import train_prior
from engines.sketcher.train import TrainParams as SketcherParams
from engines.sketcher.train import load_checkpoint as load_sketcher
from engines.sketcher.train import train as train_sketcher

PLANNER_NET = ModelConfig(dim=64, heads=2, encoder_layers=2, decoder_layers=1)
BATCH = {"planner": 64, "sketcher": 32, "prior": 32}


def _planner(steps: int, data: str, out: str) -> tuple[float, list[float]]:
    params = PlannerParams(minutes=30.0, batch=BATCH["planner"], max_steps=steps, log_every=steps // 4)
    result = train_planner([Path(data)], Path(out), params, model_config=PLANNER_NET)
    history = torch.load(out, map_location="cpu", weights_only=False)["history"]
    return result["steps"] / result["train_seconds"], [h["ego_loss"] + h["neighbor_loss"] for h in history]


def _sketcher(steps: int, out: str) -> tuple[float, list[float]]:
    torch.manual_seed(0)  # the first weights (DDP gives every process rank 0's)
    params = SketcherParams(
        minutes=30.0, out=out, batch_size=BATCH["sketcher"], data_workers=0, validation_size=8, max_steps=steps, log_every=steps // 4
    )
    result = train_sketcher(params)
    return result.steps / result.run_seconds, [h[2] for h in load_sketcher(Path(out))["history"]]


def _prior(steps: int, out: str) -> tuple[float, list[float]]:
    torch.manual_seed(0)
    params = PriorParams(minutes=30.0, batch=BATCH["prior"], pool=64, val_size=2, data_workers=0, save_every_s=1e9, max_steps=steps)
    result = train_prior(Path(out), params)
    return result.steps / result.wall_seconds, [result.metrics.get("l1", float("nan"))]


def _run(name: str, steps: int, *paths: str) -> tuple[float, list[float]]:
    torch.set_num_threads(1)
    return {"planner": _planner, "sketcher": _sketcher, "prior": _prior}[name](steps, *paths)


def _process(name: str, steps: str, *paths: str) -> tuple[float, list[float]]:
    """One of the torchrun processes."""
    try:
        return _run(name, int(steps), *paths)
    finally:
        finish()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40, help="training steps per run (default 40)")
    args = ap.parse_args()
    print("| trainer | processes | global batch | steps/s | speed-up | loss |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        data = str(Path(tmp) / "expert.npz")
        generate_dataset(Path(data), episodes=20, seed=0)
        for name in ("planner", "sketcher", "prior"):
            inputs = (data,) if name == "planner" else ()
            alone = _run(name, args.steps, *inputs, str(Path(tmp) / f"{name}-1.pt"))
            ranks = launch_local(_process, 2, name, str(args.steps), *inputs, str(Path(tmp) / f"{name}-2.pt"))
            rate = min(r[0] for r in ranks.values())  # the processes step together: the slower one's clock
            for processes, (steps_s, losses) in ((1, alone), (2, (rate, ranks[0][1]))):
                batch = f"{BATCH[name]}" if processes == 1 else f"{BATCH[name]} (2 x {BATCH[name] // 2})"
                curve = " / ".join(f"{v:.4g}" for v in losses)
                print(f"| {name} | {processes} | {batch} | {steps_s:.2f} | {steps_s / alone[0]:.2f} | {curve} |", flush=True)


if __name__ == "__main__":
    main()
