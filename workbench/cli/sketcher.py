"""`workbench sketcher ...`: train, solve, render and benchmark the graphics-program sketcher."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from .common import add_command, add_executor, add_group, add_record_flag, cli_job, executor_spec, existing_file, output, output_file, seed

if TYPE_CHECKING:
    from engines.sketcher.data import DataConfig
    from engines.sketcher.params import SearchParams


def register(sub: argparse._SubParsersAction) -> None:
    from engines.sketcher.params import PROPOSERS, STYLES, SearchParams

    d = SearchParams()

    group = add_group(sub, "sketcher", "graphics programs from drawings by tree diffusion (edits on CSG2D syntax trees) plus search")

    train = add_command(group, "train", cmd_train, "train the edit model for a wall-clock budget; resumes from --out when it exists")
    train.add_argument("--minutes", type=float, required=True, help="wall-clock minutes to train in this run")
    train.add_argument("--out", type=output_file, required=True, help="checkpoint file to write (and resume from)")
    train.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    train.add_argument("--batch-size", type=int, default=32, help="examples per step (default 32)")
    train.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (default 2e-3)")
    train.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    train.add_argument("--data-workers", type=int, choices=(0, 1), default=1, help="make batches in a second process (1, default) or in this one (0)")
    train.add_argument("--primitive-weights", help="relative frequency of targets with 1, 2, ... primitives, e.g. 8,7,6,5,4,3,2,2 (the default)")
    train.add_argument("--sketch-fraction", type=float, help="share of targets drawn in the sketch style (default 0.3)")

    solve = add_command(group, "solve", cmd_solve, "find a program whose render matches a picture")
    solve.add_argument("--target", type=existing_file, required=True, help="image file (any size; dark ink on light, or the reverse)")
    solve.add_argument("--budget", type=int, default=d.budget, help=f"renderer calls to spend (default {d.budget})")
    solve.add_argument("--beam", type=int, default=d.beam, help=f"beam width (default {d.beam})")
    solve.add_argument("--proposals", type=int, default=d.proposals, help=f"edits asked per beam program and round (default {d.proposals})")
    solve.add_argument("--style", choices=STYLES, default=d.style, help="filled shapes or an outline sketch (default: detect)")
    solve.add_argument("--start", default="", help="a program to continue from (default: empty and random starts)")
    solve.add_argument("--proposer", choices=PROPOSERS, default=PROPOSERS[0], help="edit model, or the random-mutation baseline")
    solve.add_argument("--checkpoint", type=Path, help="model checkpoint (default: the shipped one)")
    _add_polish_flags(solve, d)
    solve.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    solve.add_argument("--out", type=output_file, help="also write the found program's render to this PNG")

    bench = add_command(group, "bench", cmd_bench, "edit model vs random-mutation baseline on fresh seeded targets, same search")
    bench.add_argument("--targets", type=int, default=20, help="targets per primitive count (default 20)")
    bench.add_argument("--primitives", default="1-4", help="primitive counts, e.g. 1-4 or 5-8 (default 1-4)")
    bench.add_argument("--budget", type=int, default=d.budget, help=f"renderer calls per target (default {d.budget})")
    bench.add_argument("--beam", type=int, default=d.beam, help=f"beam width (default {d.beam})")
    bench.add_argument("--proposals", type=int, default=d.proposals, help=f"edits per beam program and round (default {d.proposals})")
    bench.add_argument("--sketch", type=int, default=0, help="also this many sketch-style targets (default 0)")
    _add_polish_flags(bench, d)
    bench.add_argument("--seed", type=seed, default=2025, help="target seed (default 2025)")
    bench.add_argument("--checkpoint", type=Path, help="model checkpoint (default: the shipped one)")
    bench.add_argument("--save", type=output_file, help="also write the full result JSON here")
    bench.add_argument("--curves", type=output_file, help="merge this run's solve-rate curves into a curves JSON (what the panel plots)")
    add_record_flag(bench)
    bench.add_argument(
        "--workers", type=int, default=1, help="searches run side by side, one torch thread each (default 1; the results do not depend on it)"
    )
    add_executor(bench)

    render = add_command(group, "render", cmd_render, "render a program to a PNG (or an SVG when --out ends in .svg)")
    render.add_argument("--program", required=True, help='CSG2D text, e.g. "(- (Circle 6 8 8) (Quad 8 8 2 2 H))"')
    render.add_argument("--size", default="64", help="image side in pixels (default 64)")
    render.add_argument("--out", type=output_file, required=True, help="PNG or SVG file to write")


def _add_polish_flags(parser: argparse.ArgumentParser, d: SearchParams) -> None:
    """The number-polishing flags `solve` and `bench` share (one search, one set of knobs)."""
    parser.add_argument(
        "--polish-after",
        type=int,
        default=d.polish_after,
        help=f"renders without progress before the best program's numbers are polished; 0: never (default {d.polish_after})",
    )
    parser.add_argument("--no-residual", dest="residual", action="store_false", help="polish numbers only, without parts fitted to the wrong pixels")


def cmd_train(args: argparse.Namespace) -> None:
    import sys

    from engines.core.distributed import finish, rank
    from engines.sketcher.train import TrainParams, train

    params = TrainParams(
        minutes=args.minutes,
        out=str(args.out),
        seed=args.seed,
        batch_size=args.batch_size,
        lr=args.lr,
        data_workers=args.data_workers,
        data=_data_config(args),
    )
    lines = None if args.quiet or args.json else (lambda line: (sys.stderr.write(line + "\n"), sys.stderr.flush()))
    with cli_job(args, "train ", threads=args.threads) as (progress, cancel):
        try:
            result = train(params, progress=progress if lines is None else (lambda f, t: None), cancel=cancel, partial=lines)
        finally:
            finish()
    if rank() != 0:
        return  # under torchrun: rank 0 reports for all
    human = f"trained {result.steps - result.resumed_from_step} steps ({result.total_seconds / 60:.1f} min in all) -> {result.out}\n" + "\n".join(
        f"  {k}: {v}" for k, v in result.metrics.items()
    )
    output(args, result.__dict__, human)


def _data_config(args: argparse.Namespace) -> DataConfig:
    """The default data mix with what the command line changes (checked when built)."""
    from dataclasses import replace

    from engines.sketcher.data import DataConfig

    data = DataConfig()
    if args.primitive_weights is not None:
        data = replace(data, primitive_weights=DataConfig.parse_weights(args.primitive_weights))
    if args.sketch_fraction is not None:
        data = replace(data, sketch_fraction=args.sketch_fraction)
    return data


def _size(value: str) -> int:
    from engines.core import EngineError

    try:
        return int(value)
    except ValueError:
        raise EngineError(f"size {value!r} is not a whole number of pixels") from None


def cmd_solve(args: argparse.Namespace) -> None:
    from engines.sketcher.api import SolveRequest, png_path, solve_target
    from engines.sketcher.image_input import load_target
    from engines.sketcher.params import SearchParams

    params = SearchParams(
        budget=args.budget,
        beam=args.beam,
        proposals=args.proposals,
        style=args.style,
        start=args.start,
        seed=args.seed,
        polish_after=args.polish_after,
        residual=args.residual,
    )
    if args.out:
        png_path(args.out)  # refused before the search, not after it
    target = load_target(args.target)
    with cli_job(args, "solve ") as (progress, cancel):
        result = solve_target(target, SolveRequest(params, args.proposer, str(args.checkpoint or "")), progress, cancel)
    data = {
        "program": result.program,
        "iou": round(result.iou, 4),
        "renders": result.renders,
        "seconds": result.seconds,
        "mean_iou": round(result.mean_iou, 4),
        "score": round(result.score, 4),
        "solved": result.solved,
        "sketch": result.sketch,
        "proposer": result.proposer,
    }
    if args.out:
        from engines.sketcher.api import render_png

        render_png(result.program, 512, args.out)
        data["out"] = str(args.out)
    output(args, data, f"{result.program}\nIoU {result.iou:.3f} after {result.renders} renders in {result.seconds:.1f} s")


def cmd_render(args: argparse.Namespace) -> None:
    from engines.sketcher.api import render_png, write_svg

    size = _size(args.size)
    if args.out.suffix.lower() == ".svg":
        path = write_svg(args.program, args.out, size)
    else:
        path = render_png(args.program, size, args.out)
    output(args, {"out": str(path), "size": size}, f"wrote {path}")


def _range(value: str) -> tuple[int, int]:
    from engines.core import EngineError

    try:
        parts = [int(v) for v in value.split("-")]
    except ValueError:
        raise EngineError(f"primitives {value!r} is not a range such as 1-4") from None
    if len(parts) == 1:
        parts *= 2
    if len(parts) != 2:
        raise EngineError(f"primitives {value!r} is not a range such as 1-4")
    return parts[0], parts[1]


def cmd_bench(args: argparse.Namespace) -> None:
    from engines.core import write_json
    from engines.sketcher.bench import BenchParams, run_bench, table

    params = BenchParams(
        targets=args.targets,
        primitives=_range(args.primitives),
        budget=args.budget,
        beam=args.beam,
        proposals=args.proposals,
        sketch_targets=args.sketch,
        seed=args.seed,
        checkpoint=str(args.checkpoint or ""),
        polish_after=args.polish_after,
        residual=args.residual,
    )
    with cli_job(args, "bench ") as (progress, cancel):
        result = run_bench(params, progress, cancel, executor_spec(args, args.workers))
    if args.save:
        write_json(args.save, result)
    if args.curves:
        from engines.sketcher.bench import merge_curves

        merge_curves(args.curves, result)
    output(args, result, table(result))


def demo(out: Path, progress, cancel) -> dict:
    """Convert the embedded example drawing and write its program as text, SVG and PNG."""
    from engines.core import resource_path, write_json
    from engines.sketcher.api import SolveRequest
    from engines.sketcher.image_input import load_target
    from engines.sketcher.interactive import convert, export
    from engines.sketcher.params import EXAMPLE_BUDGET, SearchParams

    target = load_target(resource_path("sketcher", "example.png"))
    result = convert(target, SolveRequest(SearchParams(budget=EXAMPLE_BUDGET)), progress, cancel).result
    for name in ("program.txt", "program.svg", "program.png"):
        export(result.program, out / name, 512)
    summary = {"program": result.program, "iou": round(result.iou, 4), "renders": result.renders, "seconds": result.seconds}
    write_json(out / "result.json", summary)
    return summary
