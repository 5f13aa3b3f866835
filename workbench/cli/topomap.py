"""`workbench topomap ...`: train one topographic network, compare every method, export maps."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engines.core import EngineError, to_jsonable
from engines.topomap.params import DATASETS, LR_SCHEDULES, METHODS, CompareParams, TrainParams, parse_widths

from .common import add_command, add_executor, add_group, add_record_flag, cli_job, executor_spec, existing_file, output, output_file, output_folder

SHIPPED_RUN = "cbsom.topomap.pt"


def _methods(text: str) -> tuple[str, ...]:
    names = tuple(m.strip() for m in text.split(",") if m.strip())
    unknown = [m for m in names if m not in METHODS]
    if unknown:
        raise EngineError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    return names


def _schedule_flags(parser: argparse.ArgumentParser) -> None:
    d = TrainParams()
    parser.add_argument("--data", choices=DATASETS, default=d.data, help=f"training data (default {d.data})")
    parser.add_argument("--epochs", type=int, default=d.epochs, help=f"epochs (default {d.epochs})")
    parser.add_argument("--batch-size", type=int, default=d.batch_size, help=f"mini-batch size (default {d.batch_size})")
    parser.add_argument("--lr", type=float, default=d.lr, help=f"SGD learning rate (default {d.lr})")
    parser.add_argument(
        "--lr-schedule", choices=LR_SCHEDULES, default=d.lr_schedule, help="step: x0.1 at 2/3 and 8/9 of training, as the reference (default); cosine"
    )
    parser.add_argument("--widths", type=str, default=",".join(map(str, d.widths)), help="conv widths, square numbers (default 16,36,64)")
    parser.add_argument("--alpha0", type=float, default=d.alpha0, help=f"SOM learning rate at step 0 (default {d.alpha0})")
    parser.add_argument("--sigma0", type=float, default=None, help="SOM neighbourhood width at step 0 (default sqrt(K) per layer)")
    parser.add_argument("--tau", type=float, default=d.tau, help=f"TopoLoss weight (default {d.tau})")
    parser.add_argument("--som-width", type=int, default=d.som_width, help=f"units of the classic SOM (default {d.som_width})")


def _base_params(args: argparse.Namespace, **extra: Any) -> TrainParams:
    return TrainParams(
        data=args.data,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        lr_schedule=args.lr_schedule,
        widths=parse_widths(args.widths),
        alpha0=args.alpha0,
        sigma0=args.sigma0,
        tau=args.tau,
        som_width=args.som_width,
        **extra,
    )


def register(sub: argparse._SubParsersAction) -> None:
    group = add_group(sub, "topomap", "topographic networks: CB-SOM against AB-SOM, TopoLoss, a classic SOM and no topography")

    train = add_command(group, "train", cmd_train, "train one network and write its run file (resumes an interrupted run)")
    train.add_argument("--method", choices=METHODS, default="cbsom", help="self-organisation rule (default cbsom)")
    train.add_argument("--seed", type=int, default=0, help="seed of the network and batch order (default 0)")
    train.add_argument("--out", type=output_file, required=True, help="run file to write (*.topomap.pt)")
    train.add_argument("--fresh", action="store_true", help="ignore a checkpoint left by an interrupted run")
    _schedule_flags(train)

    # `bench` is every method group's benchmark verb; `compare` is its older name, kept as an alias.
    comp = add_command(
        group, "bench", cmd_bench, "train every method over several seeds and report accuracy and smoothness (mean ± std)", aliases=["compare"]
    )
    comp.add_argument("--seeds", type=int, default=3, help="seeds per method (default 3)")
    comp.add_argument("--first-seed", type=int, default=0, help="first seed (default 0): seeds run from it upwards")
    comp.add_argument("--methods", type=str, default=",".join(METHODS), help="comma-separated methods (default all)")
    comp.add_argument("--out", type=output_folder, default=None, help="folder to keep every run file in (a rerun reuses and resumes them)")
    comp.add_argument("--save", type=output_file, default=None, help="also write the result JSON here (for the panel's scatter plot)")
    add_record_flag(comp)
    comp.add_argument(
        "--workers", type=int, default=1, help="runs trained side by side, one torch thread each (default 1: one run at a time, all threads)"
    )
    add_executor(comp)
    _schedule_flags(comp)

    maps = add_command(group, "maps", cmd_maps, "write a run's maps: PNG images, maps.npz, units.csv and weights.npz")
    maps.add_argument("run", type=existing_file, help="a run file (*.topomap.pt)")
    maps.add_argument("--out", type=output_folder, required=True, help="folder to write into")


def _check_out(path: Path) -> None:
    if path.exists() and path.is_dir():
        raise EngineError(f"--out {path} is a folder; give a run file name such as {path / 'run.topomap.pt'}")
    from engines.topomap.runfile import RUN_SUFFIX

    if not path.name.endswith(RUN_SUFFIX):
        raise EngineError(f"--out {path.name} must end in {RUN_SUFFIX} so the app can open it")


def cmd_train(args: argparse.Namespace) -> None:
    from engines.topomap.train import train

    params = _base_params(args, method=args.method, seed=args.seed)
    _check_out(args.out)
    with cli_job(args, "train ") as (progress, cancel):
        result = train(params, out=args.out, progress=progress, cancel=cancel, resume=not args.fresh)
    smooth = "  ".join(f"{k} {v:.2f}" for k, v in result.smoothness.items())
    human = (
        f"{result.method} on {result.data}, seed {result.seed}: accuracy {result.accuracy:.2f}%  "
        f"smoothness {smooth}  ({result.seconds:.1f} s)\nwrote {args.out}"
    )
    output(args, to_jsonable(result), human)


def cmd_bench(args: argparse.Namespace) -> None:
    from engines.core import write_json
    from engines.topomap.compare import compare

    params = CompareParams(seeds=args.seeds, first_seed=args.first_seed, methods=_methods(args.methods), base=_base_params(args))
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise EngineError(f"--out {args.out} is a file; give a folder for the run files")
    with cli_job(args, "bench ") as (progress, cancel):
        result = compare(params, out_dir=args.out, progress=progress, cancel=cancel, executor=executor_spec(args, args.workers))
    data = to_jsonable(result)
    data["format"] = "workbench-topomap-compare"
    if args.save is not None:
        write_json(args.save, data)
    output(args, data, result.table)


def cmd_maps(args: argparse.Namespace) -> None:
    from engines.topomap.export import export_all
    from engines.topomap.runview import open_run

    with cli_job(args, "maps ") as (progress, cancel):
        view = open_run(args.run, progress=progress, cancel=cancel)
        files = export_all(view, args.out)
    data = {
        "run": str(args.run),
        "out": str(args.out),
        "files": files,
        "accuracy": view.record.accuracy,
        "smoothness": {layer.name: layer.smoothness.score for layer in view.layers},
        "pinwheels": {layer.name: len(layer.pinwheels) for layer in view.layers},
    }
    human = f"wrote {sum(len(v) for v in files.values())} files to {args.out}"
    output(args, data, human)


def demo(out: Path, progress, cancel) -> dict:
    """The shipped CB-SOM run's maps, exported (used by `workbench demo`)."""
    from engines.core import resource_path
    from engines.topomap.export import export_all
    from engines.topomap.runview import open_run

    view = open_run(resource_path("topomap", SHIPPED_RUN), progress=progress, cancel=cancel)
    files = export_all(view, out)
    return {"run": SHIPPED_RUN, "accuracy": view.record.accuracy, "files": sum(len(v) for v in files.values())}
