"""What the planner panel runs in its background jobs: each function calls the engine and returns
what the panel draws (a ``Preview``, a ``Loaded`` episode, or a sentence).

Nothing here runs on the UI thread, nor imports Qt; the engine is imported inside the jobs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engines.core import EngineError, json_loads


@dataclass
class Preview:
    """A scene at t = 0, before any run."""

    replay: Any


@dataclass
class Loaded:
    """A job's result: episode A (and B for A/B) with their replay arrays."""

    episode: Any
    replay: Any
    compare: Any = None
    compare_replay: Any = None
    rows: list = field(default_factory=list)
    trace: list | None = None
    note: str = ""


def preview(params) -> Preview:
    from engines.planner.replay import preview_replay
    from engines.planner.api import load_scenario

    return Preview(preview_replay(load_scenario(params)))


def loaded(episode, compare=None, note: str = "") -> Loaded:
    """An episode (and the A/B one) with the replay arrays the panel draws."""
    from engines.planner.replay import build_replay, compare_rows

    replay = build_replay(episode)
    if compare is None:
        return Loaded(episode, replay, note=note)
    return Loaded(episode, replay, compare, build_replay(compare), compare_rows(episode, compare), note=note)


def simulate(params, compare_params, job) -> Loaded:
    """The scenario driven by ``params`` (and by ``compare_params`` for A/B, on the same scenario)."""
    from engines.core import scaled
    from engines.planner.api import load_scenario, run

    sc = load_scenario(params)
    split = 0.5 if compare_params else 0.95
    a = run(params, progress=scaled(job.progress, 0.0, split), cancel=job.cancel, scenario=sc).episode
    b = None
    if compare_params is not None:
        b = run(compare_params, progress=scaled(job.progress, split, 0.95), cancel=job.cancel, scenario=sc).episode
    return loaded(a, b)


def replan_time(episode, frame: int) -> str:
    """When the action at ``frame`` starts, said so that the end frame's mapping to the last replan
    is never a surprise (re-run, cut-in and denoising all use it)."""
    from engines.planner.api import replan_frame

    k = replan_frame(episode, frame)
    when = f"{k * episode.dt:.1f} s"
    return when if k == frame else f"{when} (frame {k}, the last replan: frame {frame} is the episode's end)"


def rerun_from(episode, frame, params, pending, cut_in, job) -> Loaded:
    """The episode kept up to ``frame``, then driven on by ``params`` (with a dragged agent or a cut-in)."""
    from engines.planner.api import move_agent, rerun, with_cut_in

    edit = None
    scenario = None
    when = replan_time(episode, frame)
    note = f"Re-ran from {when} with {params.planner}."
    if pending is not None:
        agent_id, x, y = pending
        edit = move_agent(agent_id, x, y)
        note = f"Re-ran from {when} with agent {agent_id} moved."
    if cut_in:
        scenario = with_cut_in(episode, frame)
        note = f"Re-ran from {when} with a cut-in by agent {scenario.agents[-1].id}."
    ep = rerun(episode, frame, params, edit=edit, scenario=scenario, progress=job.progress, cancel=job.cancel)
    return loaded(ep, note=note)


def denoise(episode, frame, params, shown: Loaded) -> Loaded:
    """``shown`` with the denoising trace of the replan at ``frame``."""
    from engines.planner.replay import denoise_frames
    from engines.planner.api import denoise_at

    when = replan_time(episode, frame)
    trace = denoise_at(episode, frame, params)
    frames = denoise_frames(trace)
    return Loaded(shown.episode, shown.replay, shown.compare, shown.compare_replay, shown.rows, frames,
                  note=f"Denoising of the replan at {when}: {len(frames)} solver steps (magenta: guidance).")


def open_file(path: Path, params, job) -> Loaded:
    """A saved episode (replayed as it is), or a scenario file simulated with ``params``."""
    from engines.planner.episode import FORMAT, episode_from_dict
    from engines.planner.api import run

    if path.suffix.lower() == ".json":
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise EngineError(f"cannot read {path.name}: {exc}") from None
        data = json_loads(text, path.name)
        if isinstance(data, dict) and data.get("format") == FORMAT:
            return loaded(episode_from_dict(data, path.name), note=f"Opened the episode {path.name}.")
    return loaded(run(params, progress=job.progress, cancel=job.cancel).episode, note=f"Simulated {path.name}.")


def export(kind: str, episode, path: Path, job) -> str:
    """One export of the episode: "video" (its suffix says gif or mp4), "episode" (json) or "csv";
    the sentence the panel shows."""
    if kind == "video":
        from engines.planner.render import render_video

        render_video(episode, path, progress=job.progress, cancel=job.cancel)
    elif kind == "episode":
        from engines.planner.episode import save_episode

        save_episode(episode, path)
    else:
        from engines.planner.episode import save_csv

        save_csv(episode, path)
    return f"Saved {path.name}"
