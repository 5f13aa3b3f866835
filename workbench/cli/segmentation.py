"""`workbench segmentation ...`: scenes, run, eval, bench and train-prior for GrabS."""
from __future__ import annotations

import argparse
from pathlib import Path

from engines.core import EngineError

from .common import add_command, add_group, cli_job, existing_file, output


def register(sub: argparse._SubParsersAction) -> None:
    group = add_group(sub, "segmentation", "3D object segmentation without scene labels (GrabS)")

    train = add_command(group, "train-prior", cmd_train_prior, "train the object prior on procedural objects (resumes from --out)")
    train.add_argument("--minutes", type=float, default=25.0, help="wall-clock minutes for this run (default 25, at most 90)")
    train.add_argument("--out", type=Path, required=True, help="checkpoint to write (and resume from when it exists)")
    train.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    train.add_argument("--batch", type=int, default=32, help="objects per step (default 32)")


def cmd_train_prior(args: argparse.Namespace) -> None:
    from engines.core import configure_threads
    from engines.segmentation.training import TrainParams, train_prior

    try:
        params = TrainParams(minutes=args.minutes, seed=args.seed, batch=args.batch)
    except ValueError as exc:
        raise EngineError(str(exc)) from None
    configure_threads()
    log_path = args.out.with_suffix(".log.jsonl")
    with cli_job(args, "train ") as (progress, cancel):
        result = train_prior(args.out, params, progress, cancel, log_path=log_path)
    human = f"wrote {result.checkpoint}: {result.steps} steps, {result.wall_seconds / 60:.1f} min, {result.parameters:,} parameters\n"
    human += "\n".join(f"  {k}: {v:.4f}" for k, v in result.metrics.items())
    output(args, {"checkpoint": result.checkpoint, "steps": result.steps, "wall_seconds": result.wall_seconds,
                  "parameters": result.parameters, "metrics": result.metrics}, human)
