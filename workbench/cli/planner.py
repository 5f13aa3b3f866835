"""`workbench planner ...`: run one episode, benchmark planners, render a video, make data, train."""
from __future__ import annotations

import argparse
from pathlib import Path

from engines.core import EngineError
from engines.planner.params import PLANNERS, SPLITS

from .common import add_command, add_executor, add_group, add_record_flag, cli_job, executor_spec, existing_file, existing_folder, output, output_file


SHIPPED_EPISODES = 960  # expert episodes the shipped checkpoint was trained on (data and train defaults)


def register(sub: argparse._SubParsersAction) -> None:
    group = add_group(sub, "planner", "driving-scene planner replay: diffusion planner with guidance in closed loop")

    run = add_command(group, "run", cmd_run, "simulate one scenario with one planner and score it (nuPlan-style CLS)")
    src = run.add_mutually_exclusive_group(required=True)
    src.add_argument("--scenario", type=existing_file, help="scenario file: our .json or a CommonRoad .xml")
    src.add_argument("--type", help="procedural scenario type (straight, curve, merge, intersection, lead_braking, cut_in, stopped_vehicle, dense_traffic)")
    run.add_argument("--seed", type=int, default=0, help="seed of the procedural scenario and of the sampler (default 0)")
    run.add_argument("--planner", default="diffusion", help=f"{', '.join(PLANNERS)} (default diffusion; frenet: CommonRoad's reactive planner)")
    run.add_argument("--guidance", default="", help="guidance terms for the diffusion planner: collision,drivable,speed,comfort")
    run.add_argument("--samples", type=int, default=8, help="diffusion samples per replan (default 8)")
    run.add_argument("--steps", type=int, default=10, help="DPM-Solver++ steps (default 10)")
    run.add_argument("--reactive", action="store_true", help="agents react (IDM) instead of replaying their log")
    run.add_argument("--checkpoint", type=Path, help="diffusion checkpoint (default: the shipped one)")
    run.add_argument("--out", type=output_file, help="episode file to write (.json)")

    # `bench` is every method group's benchmark verb; `suite` is its older name, kept as an alias.
    suite = add_command(group, "bench", cmd_suite, "benchmark planners on procedural scenarios and the CommonRoad files, or on a folder of scenario files",
                        aliases=["suite"])
    suite.add_argument("--n", type=int, default=104, help="number of procedural scenarios (default 104: 13 per type)")
    suite.add_argument("--seed", type=int, default=0, help="suite seed (default 0)")
    suite.add_argument("--planners", default="diffusion,diffusion+guidance,idm,pdm,constant_velocity",
                       help=f"comma-separated planners of {', '.join(PLANNERS)}, diffusion+guidance (the diffusion planner guided by --guidance)")
    suite.add_argument("--guidance", default="collision,drivable",
                       help="guidance terms of diffusion+guidance (default collision,drivable: the targets' setting); also speed, comfort")
    suite.add_argument("--no-commonroad", action="store_true", help="skip the CommonRoad table")
    suite.add_argument("--scenarios", type=existing_folder,
                       help="benchmark the scenario files (.xml CommonRoad, .json) of this folder instead, in log replay and reactive")
    suite.add_argument("--split", choices=SPLITS,
                       help="with --scenarios: only the folder's files of this part of the shipped recorded-traffic split")
    suite.add_argument("--latency-replans", type=int, default=60, help="replans timed for the latency figure (default 60; 0 skips it)")
    suite.add_argument("--checkpoint", type=Path, help="diffusion checkpoint (default: the shipped one)")
    suite.add_argument("--workers", type=int, default=2,
                       help="processes running scenarios side by side, one torch thread each (default 2; the scores do not depend on it)")
    add_executor(suite)
    suite.add_argument("--out", type=output_file, help="also write the JSON result to this file")
    add_record_flag(suite)

    cross = add_command(group, "crosscheck", cmd_crosscheck,
                        "check every episode's collisions and road compliance again with commonroad-drivability-checker")
    cross.add_argument("--scenarios", type=existing_folder, required=True, help="folder of scenario files (.xml CommonRoad, .json)")
    cross.add_argument("--split", choices=SPLITS, help="only the folder's files of this part of the shipped recorded-traffic split")
    cross.add_argument("--planners", default="idm,pdm", help=f"comma-separated planners of {', '.join(p for p in PLANNERS if p != 'diffusion')} (default idm,pdm)")
    cross.add_argument("--limit", type=int, help="only the first N files (default: all)")
    cross.add_argument("--workers", type=int, default=2, help="processes checking files side by side (default 2; the result does not depend on it)")
    cross.add_argument("--out", type=output_file, help="also write the JSON result (every episode's verdicts) to this file")

    video = add_command(group, "video", cmd_video, "render an episode to .mp4 or .gif")
    video.add_argument("episode", type=existing_file, help="episode .json written by 'planner run'")
    video.add_argument("out", type=output_file, help="output .mp4 or .gif")
    video.add_argument("--fps", type=int, default=10, help="frames per second (default 10)")
    video.add_argument("--size", default="800x600", help="frame size WIDTHxHEIGHT (default 800x600)")

    fps = add_command(group, "replay-fps", cmd_replay_fps, "benchmark: frames/s of the replay panel on a dense scene (30+ agents, 16 samples)")
    fps.add_argument("--frames", type=int, default=180, help="frames to step and repaint (default 180)")
    fps.add_argument("--size", default="1400x900", help="window size WIDTHxHEIGHT (default 1400x900)")
    add_record_flag(fps)

    data = add_command(group, "data", cmd_data, "generate training data: expert demonstrations on procedural scenarios, or recorded traffic")
    data.add_argument("--from-logs", type=existing_folder,
                      help="learn from recorded traffic: every recorded car of the CommonRoad files in this folder becomes the ego in turn")
    data.add_argument("--split", choices=SPLITS, help="with --from-logs: only the folder's files of this part of the shipped split")
    data.add_argument("--episodes", type=int, default=SHIPPED_EPISODES,
                      help=f"episodes to simulate (default {SHIPPED_EPISODES}, {SHIPPED_EPISODES // 8} per type: the shipped model's data)")
    data.add_argument("--seed", type=int, default=0, help="data seed (default 0)")
    data.add_argument("--out", type=output_file, required=True, help="output .npz")
    data.add_argument("--workers", type=int, default=2, help="processes simulating episodes side by side (default 2; the file does not depend on it)")
    add_executor(data)
    data.add_argument("--student", type=existing_file,
                      help="diffusion checkpoint that drives instead of the expert, which labels every state it visits (DAgger)")
    data.add_argument("--standing-gap", type=float,
                      help="the expert's extra gap behind a standing car in the labels, metres (default: the benchmark's expert's, 1.5)")

    train = add_command(group, "train", cmd_train, "train the diffusion planner (resumes from --out when it exists)")
    train.add_argument("--minutes", type=float, required=True, help="wall-clock minutes to train in this run")
    train.add_argument("--out", type=output_file, required=True, help="training checkpoint (.pt); resumed when it exists")
    train.add_argument("--data", type=Path, nargs="+", default=[Path("planner-data.npz")],
                       help="training data .npz files, used together (one missing file is generated first from the expert)")
    train.add_argument("--episodes", type=int, default=SHIPPED_EPISODES, help=f"episodes to generate when --data is missing (default {SHIPPED_EPISODES})")
    train.add_argument("--workers", type=int, default=2, help="processes generating missing data (default 2)")
    add_executor(train)
    train.add_argument("--seed", type=int, default=0, help="training seed (default 0)")
    train.add_argument("--batch", type=int, default=128, help="batch size (default 128)")
    train.add_argument("--slow-weight", type=float, default=1.0, help="weigh a waypoint's loss up to this many times when the expert's plan travels little to reach it (default 1: off)")
    train.add_argument("--noise-draws", type=int, default=1, help="noise levels per scene and step, sharing one encoder pass (default 1)")
    train.add_argument("--early-weight", type=float, default=1.0, help="weigh the loss on the ego plan's first 2 s this many times the rest (default 1)")
    train.add_argument("--brake-weight", type=float, default=1.0, help="sample the moments where the expert brakes hard this many times as often (default 1)")
    train.add_argument("--lr", type=float, default=1e-3, help="peak learning rate after the warm-up (default 1e-3)")
    train.add_argument("--init", type=existing_file,
                       help="start a new run from this planner checkpoint's weights and normalisation (fine-tuning; --out must not exist yet)")
    train.add_argument("--export", type=output_file, help="also write a small inference-only copy (EMA, float16) here")

    average = add_command(group, "average", cmd_average, "average the weights of fine-tunes of one planner checkpoint (WiSE-FT, model soup)")
    average.add_argument("checkpoints", type=existing_file, nargs="+", help="planner checkpoints fine-tuned from one start (two or more)")
    average.add_argument("--weights", type=float, nargs="+", help="one weight per checkpoint, normalised to sum to 1 (default: equal)")
    average.add_argument("--out", type=output_file, required=True, help="averaged checkpoint (.pt)")
    average.add_argument("--export", type=output_file, help="also write a small inference-only copy (float16) here")


def cmd_run(args: argparse.Namespace) -> None:
    from engines.planner.api import RunParams, run

    params = RunParams(
        scenario=str(args.scenario) if args.scenario else None, type=args.type, seed=args.seed, planner=args.planner,
        guidance=args.guidance, samples=args.samples, steps=args.steps, reactive=args.reactive,
        checkpoint=str(args.checkpoint) if args.checkpoint else None,
    )
    with cli_job(args, "run ") as (progress, cancel):
        result = run(params, out=args.out, progress=progress, cancel=cancel)
    output(args, result.summary(), result.human())


def cmd_suite(args: argparse.Namespace) -> None:
    from engines.planner.suite import SuiteParams, run_suite

    params = SuiteParams(n=args.n, seed=args.seed, planners=tuple(p.strip() for p in args.planners.split(",") if p.strip()),
                         commonroad=not args.no_commonroad, latency_replans=args.latency_replans, workers=args.workers,
                         executor=args.executor, ray_address=args.ray_address,
                         checkpoint=str(args.checkpoint) if args.checkpoint else None, guidance=args.guidance,
                         scenarios=None if args.scenarios is None else str(args.scenarios), split=args.split)
    if args.split is not None and args.scenarios is None:
        raise EngineError("--split goes with --scenarios")
    with cli_job(args, "suite ") as (progress, cancel):
        result = run_suite(params, progress=progress, cancel=cancel)
    if args.out:
        from engines.core import write_json

        write_json(args.out, result)
    table = result.pop("table")
    output(args, result, table)


def cmd_crosscheck(args: argparse.Namespace) -> None:
    from engines.planner.crosscheck import CrosscheckParams, run_crosscheck, table

    params = CrosscheckParams(str(args.scenarios), args.split, tuple(p.strip() for p in args.planners.split(",") if p.strip()), args.limit, args.workers)
    from engines.core import write_json

    keep = None if args.out is None else (lambda so_far: write_json(args.out, so_far))  # a long run's files so far survive a stop
    with cli_job(args, "crosscheck ") as (progress, cancel):
        result = run_crosscheck(params, progress=progress, cancel=cancel, partial=keep)
    if args.out:
        write_json(args.out, result)
    output(args, {k: v for k, v in result.items() if k != "rows"}, table(result))


REPLAY_FPS_TARGET = 30.0


def cmd_replay_fps(args: argparse.Namespace) -> None:
    """The panel's replay speed, measured in the real window: a benchmark (machines are noisy),
    never a test assertion."""
    from engines.core import configure_threads
    from engines.planner.api import RunParams, run

    from .main import _close_headless, _headless_window, _settle

    if not 10 <= args.frames <= 100_000:
        raise EngineError("--frames must be 10 to 100000")
    configure_threads()  # no cli_job here: the window's own loop runs the measurement
    episode = run(RunParams(type="dense_traffic", seed=0, planner="pdm", reactive=True)).episode
    app, window = _headless_window(args.size)
    window.show_panel("planner")
    _settle(app, window, 120.0)
    panel = window.docks["planner"].panel
    panel.show_episode(episode, max_samples=16)
    agents = max(len(f.labels) for f in panel.loaded.replay.frames)
    samples = max(f.sample_lines for f in panel.loaded.replay.frames)
    panel.measure_fps(10)  # first paints build caches
    fps = panel.measure_fps(args.frames)
    _close_headless(app, window)
    met = fps >= REPLAY_FPS_TARGET
    data = {"fps": round(fps, 1), "frames": args.frames, "agents": agents, "samples_drawn": samples, "target_fps": REPLAY_FPS_TARGET, "met": met}
    output(args, data, f"replay: {fps:.1f} frames/s with {agents} agents and {samples} samples drawn "
                       f"(target >= {REPLAY_FPS_TARGET:.0f}: {'met' if met else 'missed'})")


def cmd_video(args: argparse.Namespace) -> None:
    from engines.planner.episode import load_episode
    from engines.planner.render import render_video

    from .common import parse_size

    size = parse_size(args.size)
    if args.out.suffix.lower() not in (".mp4", ".gif"):
        raise EngineError(f"cannot write {args.out.name}: the video must end in .mp4 or .gif")
    with cli_job(args, "video ") as (progress, cancel):
        episode = load_episode(args.episode)
        info = render_video(episode, args.out, fps=args.fps, size=size, progress=progress, cancel=cancel)
    output(args, info, f"wrote {args.out} ({info['frames']} frames)")


def _executor(args: argparse.Namespace) -> dict:
    spec = executor_spec(args, args.workers)
    return {"workers": spec.workers, "executor": spec.kind, "ray_address": spec.address}


def cmd_data(args: argparse.Namespace) -> None:
    from engines.planner.data import generate_dataset

    if args.from_logs is not None:
        from engines.planner.recorded import generate_recorded_dataset

        with cli_job(args, "data ") as (progress, cancel):
            info = generate_recorded_dataset(args.out, args.from_logs, args.split, progress, cancel, **_executor(args))
        skipped = f"; {len(info['skipped'])} files gave none (see --json)" if info["skipped"] else ""
        output(args, info, f"wrote {info['samples']} samples of {info['vehicles']} recorded vehicles from {info['files']} files to {args.out} in {info['seconds']} s{skipped}")
        return
    if args.split is not None:
        raise EngineError("--split goes with --from-logs")
    with cli_job(args, "data ") as (progress, cancel):
        info = generate_dataset(args.out, args.episodes, args.seed, progress, cancel, **_executor(args), student=args.student,
                                **({} if args.standing_gap is None else {"standing_gap": args.standing_gap}))
    output(args, info, f"wrote {info['samples']} samples from {info['episodes']} episodes ({info['driver']} driving) to {args.out} in {info['seconds']} s")


def cmd_train(args: argparse.Namespace) -> None:
    from engines.core.distributed import finish, launched, rank
    from engines.planner.data import generate_dataset
    from engines.planner.train import TrainParams, check_init, export_inference, resume_state, train

    params = TrainParams(minutes=args.minutes, seed=args.seed, batch=args.batch, brake_weight=args.brake_weight, early_weight=args.early_weight, slow_weight=args.slow_weight,
                         noise_draws=args.noise_draws, lr=args.lr, init=args.init)
    with cli_job(args, "train ") as (progress, cancel):
        check_init(args.out, args.init, resume_state(args.out))  # an unusable or clashing checkpoint fails before any data is generated
        data_info = None
        if len(args.data) == 1 and not args.data[0].exists():
            if launched():
                raise EngineError(f"no training data at {args.data[0]}: generate it first with 'workbench planner data' (a torchrun run only reads it)")
            data_info = generate_dataset(args.data[0], args.episodes, args.seed, progress, cancel, **_executor(args))
        try:
            info = train(args.data, args.out, params, progress, cancel)
        finally:
            finish()
        if args.export and rank() == 0:
            info["export"] = export_inference(args.out, args.export)
    if rank() != 0:
        return  # under torchrun: rank 0 reports for all
    if data_info:
        info["data"] = data_info
    output(args, info, f"{info['steps']} steps, {info['train_seconds']} s of training in all; ego loss {info['ego_loss']}")


def cmd_average(args: argparse.Namespace) -> None:
    from engines.planner.train import export_inference
    from engines.planner.weight_average import average_checkpoints

    with cli_job(args, "average ") as (progress, cancel):
        info = average_checkpoints(args.checkpoints, args.out, args.weights)
        if args.export:
            info["export"] = export_inference(args.out, args.export)
    parts = ", ".join(f"{s['weight']:g} x {s['file']}" for s in info["averaged"])
    output(args, info, f"wrote {args.out}: {parts}")


def demo(out: Path, progress, cancel) -> dict:
    """Run the embedded example with the guided diffusion planner; write the episode, CSV and a GIF."""
    from engines.core import resource_path, scaled
    from engines.planner.episode import save_csv
    from engines.planner.render import render_video
    from engines.planner.api import RunParams, run

    params = RunParams(scenario=str(resource_path("planner", "example_scenario.json")), planner="diffusion",
                       guidance="collision,drivable,speed,comfort", reactive=True)
    result = run(params, out=out / "planner-episode.json", progress=scaled(progress, 0.0, 0.8), cancel=cancel)
    save_csv(result.episode, out / "planner-episode.csv")
    render_video(result.episode, out / "planner-episode.gif", size=(480, 360), progress=scaled(progress, 0.8, 1.0), cancel=cancel)
    summary = result.summary()
    return {"cls": summary["cls"], "planner": summary["planner"], "files": ["planner-episode.json", "planner-episode.csv", "planner-episode.gif"]}
