"""`workbench segmentation ...`: scenes, run, eval, bench and train-prior for GrabS."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from engines.core import EngineError, ProgressFn, CancelToken
from engines.segmentation.params import threshold_help
from engines.segmentation.pointio.frame import UNITS, UP_AXES

from engines.segmentation.generators import GENERATORS

from .common import add_command, add_executor, add_group, add_record_flag, cli_job, executor_spec, existing_file, output, output_file, output_folder, seed


def register(sub: argparse._SubParsersAction) -> None:
    group = add_group(sub, "segmentation", "3D object segmentation without scene labels (GrabS)")

    scenes = add_command(group, "scenes", cmd_scenes, "write procedural benchmark rooms (PLY with a ground-truth 'instance' field)")
    scenes.add_argument("--n", type=int, default=10, help="how many rooms (default 10)")
    scenes.add_argument("--seed", type=seed, default=0, help="seed of the first room (default 0)")
    scenes.add_argument("--out", type=output_folder, required=True, help="folder to write scene_NNN.ply / .json into")
    scenes.add_argument(
        "--points", type=_points, default=(20000, 20000), help="points per room, or a range LOW-HIGH drawn per room (e.g. 5000-200000; default 20000)"
    )
    scenes.add_argument(
        "--generator",
        choices=GENERATORS,
        default="train",
        help="train: the rooms the prior and policy are trained on (default); eval: other objects and arrangements, scanned",
    )
    scenes.add_argument("--workers", type=int, default=1, help="rooms written at a time, each in its own process (default 1: here)")
    add_executor(scenes)

    run = add_command(group, "run", cmd_run, "segment a point cloud (PLY/PCD/XYZ/PTS/NPZ) and write a labelled PLY")
    run.add_argument("scene", type=existing_file, help="input point cloud")
    run.add_argument("--method", choices=("grabs", "dbscan"), default="grabs", help="GrabS agent (default) or the DBSCAN baseline")
    run.add_argument("--out", type=output_file, required=True, help="labelled output (.ply keeps 'instance' and 'score')")
    run.add_argument("--summary", type=output_file, help="also write the JSON summary to this .json file")
    run.add_argument("--scannet", type=output_folder, help="also write the ScanNet benchmark layout into this folder")
    run.add_argument("--prior", type=existing_file, help="prior checkpoint (default: the shipped one)")
    run.add_argument("--anchors", type=int, default=40, help="agent anchors (default 40)")
    run.add_argument(
        "--agent",
        choices=("search", "ppo"),
        default="search",
        help="who moves the cylinders: the search over every action (default) or the PPO policy",
    )
    run.add_argument("--policy", type=existing_file, help="PPO policy checkpoint for --agent ppo (default: the shipped one)")
    run.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    run.add_argument("--units", choices=UNITS, default="auto",
                     help="the file's units: auto detects millimetres from a scan's size (default auto); results are written back in them")
    run.add_argument("--up", choices=UP_AXES, default="auto",
                     help="the file's up axis: auto detects y up from the floor plane (default auto); results keep the file's axes")
    tune = run.add_argument_group("thresholds (the panel's Thresholds tab; defaults: the shipped settings)")
    tune.add_argument("--mask-threshold", type=float, help=threshold_help("mask_threshold"))
    tune.add_argument("--found-threshold", type=float, help=threshold_help("found_threshold"))
    tune.add_argument("--dedup-iou", type=float, help=threshold_help("dedup_iou"))
    tune.add_argument("--min-points", type=int, help=threshold_help("min_points"))
    tune.add_argument("--join-coverage", type=float, help=threshold_help("join_coverage"))
    tune.add_argument(
        "--no-unclaimed",
        action="store_true",
        help="only the segments the prior confirmed: no unconfirmed segments for the object points no search claimed",
    )
    tune.add_argument(
        "--no-nested",
        action="store_true",
        help="no nested proposals: the parts beneath a segment's main horizontal surface (a chair under a table), ranked last",
    )

    ev = add_command(group, "eval", cmd_eval, "ScanNet-style AP of a labelled prediction against ground truth")
    ev.add_argument("--pred", type=existing_file, required=True, help="prediction with 'instance' (and 'score', 'part', 'part_score') per point")
    ev.add_argument("--gt", type=existing_file, required=True, help="ground truth with 'instance' per point, same points")

    bench = add_command(group, "bench", cmd_bench, "GrabS vs DBSCAN on benchmark scenes: AP, AP50, AP25, seconds per scene")
    bench.add_argument("--scenes", type=Path, help="folder of training-generator rooms written by 'scenes' (--generator train)")
    bench.add_argument("--eval-scenes", type=Path, help="folder of evaluation-generator rooms written by 'scenes --generator eval'")
    bench.add_argument("--limit", type=int, help="only the first N scenes")
    bench.add_argument("--out", type=output_file, help="also write the JSON record (what --json prints) to this .json file")
    bench.add_argument("--prior", type=existing_file, help="prior checkpoint (default: the shipped one)")
    bench.add_argument("--anchors", type=int, default=40, help="agent anchors per scene (default 40)")
    bench.add_argument("--policy", type=existing_file, help="PPO policy checkpoint of the grabs_ppo row (default: the shipped one)")
    bench.add_argument("--workers", type=int, default=1, help="rooms measured at a time, each in its own one-thread process (default 1: here)")
    add_executor(bench)
    add_record_flag(bench)

    train = add_command(group, "train-prior", cmd_train_prior, "train the object prior on procedural objects (resumes from --out)")
    train.add_argument("--minutes", type=float, default=25.0, help="wall-clock minutes for this run (default 25, at most 90)")
    train.add_argument("--out", type=output_file, required=True, help="checkpoint to write (and resume from when it exists)")
    train.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    train.add_argument("--batch", type=int, default=32, help="objects per step (default 32)")
    train.add_argument("--clutter-weight", type=float, default=1.0, help="loss weight of observed clutter points (default 1)")
    train.add_argument("--threads", type=int, default=0, help="torch threads (default: 1 beside a data worker, else the machine's default)")
    train.add_argument("--data-workers", type=int, choices=(0, 1), default=1, help="make samples in a second process (1, default) or in this one (0)")
    train.add_argument("--pool", type=int, help="objects held in the rolling pool, built before the clock starts (default 768)")
    train.add_argument("--val-size", type=int, help="held-out samples validated at the end, built before the clock starts (default 192)")
    train.add_argument("--model", help="network size, a name of the engine's MODEL_SIZES (default: base, the shipped size; or large)")
    train.add_argument("--voxel", type=float, help="voxel size (normalised) the encoder's input is thinned to, 0 = none (default 0.03)")
    train.add_argument("--room-share", type=float,
                       help="share of training objects from the room generator's categories, the rest from the wide families (default 0.5)")

    check = add_command(group, "validate-prior", cmd_validate_prior,
                        "mask IoU of priors on crops of object categories no prior trained on, against calling every point object")
    check.add_argument("--prior", type=existing_file, action="append", help="prior checkpoint to check (repeatable; default: the shipped one)")
    check.add_argument("--n", type=int, default=192, help="held-out crops (default 192)")
    check.add_argument("--seed", type=seed, default=0, help="seed of the crops (default 0)")

    policy = add_command(
        group, "train-policy", cmd_train_policy, "train the agent's PPO policy against the frozen prior (procedural rooms, no labels)"
    )
    policy.add_argument("--minutes", type=float, default=20.0, help="wall-clock minutes (default 20, at most 90)")
    policy.add_argument("--out", type=output_file, required=True, help="policy checkpoint to write")
    policy.add_argument("--seed", type=seed, default=0, help="random seed; also picks the training rooms (default 0)")
    policy.add_argument("--rooms", type=int, default=32, help="training rooms held at once, a rolling pool (default 32)")
    policy.add_argument("--prior", type=existing_file, help="prior checkpoint (default: the shipped one)")


def _params(anchors: int, agent: str = "search", **kwargs: Any):
    from dataclasses import replace

    from engines.segmentation.api import SegmentParams

    params = SegmentParams()
    return replace(params, agent=replace(params.agent, anchors=anchors, policy=agent), **kwargs)


def _after(progress: ProgressFn, seconds: float) -> ProgressFn:
    """Progress that starts to show only after ``seconds``: a small file reads without a line of it."""
    import time

    start = time.monotonic()
    return lambda fraction, text: progress(fraction, text) if time.monotonic() - start >= seconds else None


def _points(text: str) -> tuple[int, int]:
    """argparse type: ``N`` or ``LOW-HIGH`` points a room, each 1,000 to 2,000,000."""
    low, _, high = text.partition("-")
    try:
        span = (int(low), int(high or low))
    except ValueError:
        raise EngineError(f"--points must be a count (20000) or a range (5000-200000), got {text!r}") from None
    if not 1000 <= span[0] <= span[1] <= 2_000_000:
        raise EngineError(f"--points {text}: a room holds 1000 to 2000000 points, the range's low end first")
    return span


def cmd_scenes(args: argparse.Namespace) -> None:
    from engines.segmentation.bench import write_scenes
    from engines.segmentation.scenes import SceneParams

    low, high = args.points
    executor = executor_spec(args, args.workers)
    with cli_job(args, "scenes ") as (progress, cancel):
        paths = write_scenes(
            args.out, args.n, args.seed, SceneParams(n_points=low), progress, cancel, args.generator, None if low == high else (low, high), executor
        )
    output(
        args,
        {"out": str(args.out), "generator": args.generator, "scenes": [str(p) for p in paths]},
        f"wrote {len(paths)} {args.generator}-generator scenes to {args.out}",
    )


def cmd_run(args: argparse.Namespace) -> None:
    from engines.core import configure_threads
    from engines.segmentation.export import check_scannet_folder, export_json, export_ply, export_scannet, scannet_scene_name
    from engines.segmentation.api import segment, with_thresholds
    from engines.segmentation.pointio import InputFrame, read_cloud
    from engines.segmentation.nested import NestedParams
    from engines.segmentation.unclaimed import UnclaimedParams

    # Every output is checked before any work, so that a refused one leaves nothing half done behind.
    flags: dict[Path, str] = {}
    for flag, value in (("--out", args.out), ("--summary", args.summary), ("--scannet", args.scannet)):
        if value:
            if value.resolve() in flags:
                raise EngineError(f"{flags[value.resolve()]} and {flag} both name {value}: each output needs its own path")
            flags[value.resolve()] = flag
    if args.out.suffix.lower() not in (".ply", ".pcd", ".npz"):
        raise EngineError(f"--out {args.out.name}: use .ply (or .pcd / .npz) so that 'instance' and 'score' are kept")
    if args.summary and args.summary.suffix.lower() != ".json":
        raise EngineError(f"--summary {args.summary.name}: the summary is JSON, so give it a .json name")
    if args.scannet:
        check_scannet_folder(args.scannet)
    params = _params(method=args.method, seed=args.seed, anchors=args.anchors, prior=str(args.prior or ""),
                     agent=args.agent, policy=str(args.policy or ""), unclaimed=UnclaimedParams(enabled=not args.no_unclaimed),
                     nested=NestedParams(enabled=not args.no_nested))
    params = with_thresholds(
        params,
        mask=args.mask_threshold,
        found=args.found_threshold,
        dedup_iou=args.dedup_iou,
        min_points=args.min_points,
        join_coverage=args.join_coverage,
    )
    if args.method == "grabs" and args.agent == "ppo":
        from engines.segmentation.policy import load_policy

        configure_threads()
        load_policy(args.policy)  # a bad checkpoint fails here, before the read reports progress
    with cli_job(args, "read ", torch=False) as (progress, cancel):  # a bad file fails here, before the segmentation imports torch
        cloud = read_cloud(args.scene, frame=InputFrame(args.units, args.up), progress=_after(progress, 1.0), cancel=cancel)
    if not args.quiet:
        print(f"input: {args.scene.name}: {len(cloud):,} points, {cloud.placement.note}", file=sys.stderr)
    with cli_job(args, "run ") as (progress, cancel):
        result = segment(cloud, params, progress, cancel)
    export_ply(args.out, cloud, result)
    assumed = {"units": "mm" if cloud.placement.scale == 1000.0 else "m", "up": cloud.placement.up, "note": cloud.placement.note,
               "sampled_from_triangles": cloud.sampled_from}
    summary = {**result.summary(), "input": str(args.scene), "input_frame": assumed, "out": str(args.out), "dropped_non_finite": cloud.dropped}
    if args.summary:
        export_json(args.summary, result, {"input": str(args.scene), "input_frame": assumed, "out": str(args.out)})
    if args.scannet:
        export_scannet(args.scannet, result, scannet_scene_name(args.scene))
    nested = sum(1 for s in result.segments if s.parent)
    human = (
        f"{len(result.segments) - nested} segments"
        + (f" and {nested} nested proposals" if nested else "")
        + f" in {result.seconds:.1f} s -> {args.out}"
    )
    if cloud.dropped:
        human += f" ({cloud.dropped} NaN/inf points dropped)"
    output(args, summary, human)


def cmd_eval(args: argparse.Namespace) -> None:
    from engines.core import to_jsonable
    from engines.segmentation.metrics import MIN_REGION, ScenePrediction, evaluate
    from engines.segmentation.pointio import read_cloud

    pred, gt = read_cloud(args.pred), read_cloud(args.gt)
    if gt.instance is None:
        raise EngineError(f"{args.gt.name} has no 'instance' field to evaluate against")
    if pred.instance is None:
        raise EngineError(f"{args.pred.name} has no 'instance' field (write it with 'workbench segmentation run')")
    if len(pred) != len(gt):
        raise EngineError(f"{args.pred.name} has {len(pred)} points but {args.gt.name} has {len(gt)}: they must be the same cloud")
    result = evaluate([ScenePrediction.from_labels(gt.instance, pred.instance, pred.score, pred.part, pred.part_score)])
    if result.n_gt == 0:
        raise EngineError(f"{args.gt.name} holds no ground-truth objects of at least {MIN_REGION} points: nothing to evaluate")
    data = {
        "ap": result.ap,
        "ap50": result.ap50,
        "ap25": result.ap25,
        "per_threshold": result.per_threshold,
        "gt_objects": result.n_gt,
        "predictions": result.n_pred,
        "curves": {k: to_jsonable(v) for k, v in result.curves.items() if k in ("0.25", "0.50")},
    }
    output(args, data, f"AP {result.ap:.3f}  AP50 {result.ap50:.3f}  AP25 {result.ap25:.3f}  ({result.n_pred} predictions, {result.n_gt} objects)")


def cmd_bench(args: argparse.Namespace) -> None:
    from engines.segmentation.bench import generator_of, run_bench, run_benches
    from engines.segmentation.api import VARIANTS

    folders = {gen: folder for gen, folder in (("train", args.scenes), ("eval", args.eval_scenes)) if folder is not None}
    if not folders:
        raise EngineError("give --scenes (training-generator rooms), --eval-scenes (evaluation-generator rooms) or both")
    for gen, folder in folders.items():
        flag = "--scenes" if gen == "train" else "--eval-scenes"
        if not folder.is_dir():
            raise EngineError(f"{flag} {folder} is not a folder of scenes")
        if generator_of(folder) != gen:
            other = "--eval-scenes" if gen == "train" else "--scenes"
            raise EngineError(f"{folder} holds {generator_of(folder)}-generator rooms: give it as {other}")
    if args.limit is not None and args.limit < 1:
        raise EngineError(f"--limit must be at least 1 scene, got {args.limit}")
    if args.out and args.out.suffix.lower() != ".json":
        raise EngineError(f"--out {args.out.name}: the record is JSON, so give it a .json name")
    from engines.segmentation.policy import load_policy

    params = _params(prior=str(args.prior or ""), anchors=args.anchors, policy=str(args.policy or ""))
    executor = executor_spec(args, args.workers)
    with cli_job(args, "bench ") as (progress, cancel):
        load_policy(args.policy)  # the grabs_ppo row's checkpoint: a bad one fails before any room is measured
        if len(folders) == 1:  # one set: the record as it always was
            ((gen, folder),) = folders.items()
            result = run_bench(folder, params, VARIANTS, args.limit, progress, cancel, gen, executor)
        else:
            result = run_benches(folders, params, VARIANTS, args.limit, progress, cancel, executor)
    table = result.pop("table")
    if args.out:
        from engines.core import write_json

        write_json(args.out, result)
    output(args, result, table)


def cmd_train_prior(args: argparse.Namespace) -> None:
    from engines.core.distributed import finish, rank
    from engines.segmentation.train import TrainParams, train_prior

    params = TrainParams(minutes=args.minutes, seed=args.seed, batch=args.batch, clutter_weight=args.clutter_weight,
                         data_workers=args.data_workers,
                         **{k: v for k, v in (("model", args.model), ("voxel", args.voxel), ("pool", args.pool), ("val_size", args.val_size),
                                              ("room_share", args.room_share)) if v is not None})
    if args.threads < 0:
        raise EngineError("--threads must not be negative")
    log_path = args.out.with_suffix(".log.jsonl")
    # one thread beside the data worker: two made fewer steps
    with cli_job(args, "train ", threads=args.threads or (1 if args.data_workers else None)) as (progress, cancel):
        try:
            result = train_prior(args.out, params, progress, cancel, log_path=log_path)
        finally:
            finish()
    if rank() != 0:
        return  # under torchrun: rank 0 reports for all
    human = f"wrote {result.checkpoint}: {result.steps} steps, {result.wall_seconds / 60:.1f} min, {result.parameters:,} parameters\n"
    human += "\n".join(f"  {k}: {v:.4f}" for k, v in result.metrics.items())
    output(
        args,
        {
            "checkpoint": result.checkpoint,
            "steps": result.steps,
            "wall_seconds": result.wall_seconds,
            "parameters": result.parameters,
            "metrics": result.metrics,
        },
        human,
    )


def cmd_validate_prior(args: argparse.Namespace) -> None:
    from dataclasses import asdict

    from engines.segmentation.train import check_priors

    paths = args.prior or [None]
    names = [str(p) if p else "shipped" for p in paths]
    with cli_job(args, "validate-prior ") as (progress, cancel):
        result = check_priors(dict(zip(names, paths)), n=args.n, seed=args.seed, progress=progress)
    lines = [f"{result.samples} crops of held-out categories ({', '.join(result.categories)}); mask IoU on observed points:"]
    lines += [f"  {name}: {iou:.3f}  ({iou - result.trivial_iou:+.3f} over everything-is-object)" for name, iou in result.mask_iou.items()]
    lines.append(f"  everything is object: {result.trivial_iou:.3f}")
    output(args, asdict(result), "\n".join(lines))


def cmd_train_policy(args: argparse.Namespace) -> None:
    from engines.segmentation.policy import PolicyTrainParams, train_policy

    params = PolicyTrainParams(minutes=args.minutes, seed=args.seed, rooms=args.rooms)
    with cli_job(args, "train-policy ") as (progress, cancel):
        result = train_policy(args.out, params, args.prior, progress, cancel)
    human = (
        f"wrote {result['out']}: {result['iterations']} PPO iterations in {result['seconds'] / 60:.1f} min; held-out episodes "
        f"({result['held_out_episodes']}) found {result['held_out_found']:.1%} (untrained {result['held_out_found_before']:.1%}, "
        f"search {result['held_out_found_by_search']:.1%})"
    )
    output(args, result, human)


def demo(out: Path, progress: ProgressFn, cancel: CancelToken) -> dict:
    """Segment the embedded example room; write the labelled PLY, JSON summary and ScanNet layout."""
    from engines.segmentation.example import example_cloud
    from engines.segmentation.export import export_json, export_ply, export_scannet
    from engines.segmentation.metrics import evaluate
    from engines.segmentation.api import SegmentParams, segment

    cloud = example_cloud()
    result = segment(cloud, SegmentParams(), progress, cancel)
    export_ply(out / "example_pred.ply", cloud, result)
    ap = evaluate([result.prediction(cloud.instance)])
    export_json(out / "example_summary.json", result, {"ap": ap.ap, "ap50": ap.ap50, "ap25": ap.ap25})
    export_scannet(out / "scannet", result, "example")
    return {"segments": len(result.segments), "ap50": ap.ap50, "ap25": ap.ap25, "files": ["example_pred.ply", "example_summary.json", "scannet/"]}
