"""Run one scenario with one planner into a scored Episode; re-run from a frame with another
planner, other guidance, a moved agent or an injected cut-in. Shared by the CLI and the panel."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, no_progress, scaled

from .episode import Episode, StepPlan, save_episode
from .metrics import Track, compute_cls
from .params import PLANNERS
from .scenario import Agent, Event, Scenario, load_scenario_json
from .scene import Scene
from .simulation import Rollout, Simulator, run_episode

@dataclass(frozen=True)
class RunParams:
    """Everything that defines one run (the panel's state and the CLI's flags)."""

    scenario: str | None = None  # .json or .xml path
    type: str | None = None  # procedural type
    seed: int = 0
    planner: str = "diffusion"
    guidance: str = ""  # comma-separated terms
    weights: dict[str, float] = field(default_factory=dict)
    target_speed: float | None = None
    samples: int = 8
    steps: int = 10
    reactive: bool = False
    checkpoint: str | None = None
    trace_step: int | None = None  # record the denoising of this replan (diffusion)


def load_scenario(params: RunParams) -> Scenario:
    if params.scenario:
        path = Path(params.scenario)
        if not path.exists():
            raise EngineError(f"{path}: no such file")
        suffix = path.suffix.lower()
        if suffix == ".xml":
            from .commonroad_import import load_commonroad

            return load_commonroad(path)
        if suffix == ".json":
            return load_scenario_json(path)
        raise EngineError(f"{path.name}: scenarios are .json (this project's format) or .xml (CommonRoad)")
    if params.type:
        from .procedural import generate

        return generate(params.type, params.seed)
    raise EngineError("give a scenario file or a procedural scenario type")


def make_planner(params: RunParams, model: Any = None):
    """The planner named in ``params`` (the diffusion network is loaded lazily, or shared via ``model``)."""
    name = params.planner
    if name == "idm":
        from .planners.rules import IDMPlanner

        return IDMPlanner()
    if name == "pdm":
        from .planners.pdm import PDMPlanner

        return PDMPlanner()
    if name == "frenet":
        from .planners.frenet import FrenetPlanner

        return FrenetPlanner()
    if name == "constant_velocity":
        from .planners.rules import ConstantVelocityPlanner

        return ConstantVelocityPlanner()
    if name == "expert":
        from .planners.rules import ExpertPlanner

        return ExpertPlanner()
    if name == "diffusion":
        from .guidance import GuidanceConfig
        from .planners.diffusion_planner import DiffusionPlanner, DiffusionSettings

        if not (1 <= params.samples <= 64) or not (1 <= params.steps <= 50):
            raise EngineError("samples must be 1-64 and solver steps 1-50")
        settings = DiffusionSettings(params.samples, params.steps, guidance=GuidanceConfig.parse(params.guidance, params.weights, params.target_speed),
                                     seed=params.seed)
        return DiffusionPlanner(settings, params.checkpoint, model=model)
    raise EngineError(f"unknown planner '{name}'; choose from {', '.join(PLANNERS)}")


def track_of(scenario: Scenario, rollout: Rollout) -> Track:
    return Track(rollout.agents, rollout.valid, np.array([a.id for a in scenario.agents], dtype=int),
                 np.array([[a.length, a.width] for a in scenario.agents], dtype=float).reshape(-1, 2), [a.kind for a in scenario.agents])


def expert_rollout(scene: Scene, reactive: bool) -> Rollout:
    from .planners.rules import ExpertPlanner

    return run_episode(scene, ExpertPlanner(), reactive)


def episode_from_rollout(scene: Scene, rollout: Rollout, planner_name: str, settings: dict, reactive: bool,
                         expert: Rollout | None, plans_before: list[StepPlan] | None = None) -> Episode:
    sc = scene.scenario
    expert_progress = None
    if expert is not None:
        expert_progress = compute_cls(scene, expert.ego, track_of(sc, expert), sc.dt, None).ego_progress
    metrics = compute_cls(scene, rollout.ego, track_of(sc, rollout), sc.dt, expert_progress)
    plans = list(plans_before or [])
    trace = None
    for k, rec in enumerate(rollout.records):
        p = rec.plan
        plans.append(StepPlan(p.trajectory, p.samples, p.chosen, p.sample_dt, p.predictions, p.prediction_ids, rec.plan_ms))
        if p.trace is not None:
            trace = {"step": len(plans) - 1, "steps": p.trace["steps"]}
    return Episode(
        sc, planner_name, settings, reactive, sc.dt, rollout.ego, np.array([a.id for a in sc.agents], dtype=int), [a.kind for a in sc.agents],
        np.array([[a.length, a.width] for a in sc.agents], dtype=float).reshape(-1, 2), rollout.agents, rollout.valid, plans, metrics,
        None if expert is None else expert.ego[:, :4], trace,
    )


def planner_label(params: RunParams) -> str:
    if params.planner == "diffusion" and params.guidance:
        return f"diffusion+guidance({params.guidance})"
    return params.planner


def run(params: RunParams, out: Path | None = None, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED,
        model: Any = None, scenario: Scenario | None = None) -> "RunResult":
    """Simulate the scenario with the planner, score it against the expert; write the episode if asked."""
    sc = scenario or load_scenario(params)
    planner = make_planner(params, model)  # bad names and settings fail before any progress is shown
    progress(0.0, "preparing the scene")
    scene = Scene(sc)
    _arm_trace(planner, params.trace_step)
    progress(0.02, "expert reference")
    expert = expert_rollout(scene, params.reactive)
    cancel.raise_if_cancelled()
    rollout = run_episode(scene, planner, params.reactive, progress=scaled(progress, 0.1, 0.97), cancel=cancel,
                          on_step=_trace_hook(planner, params.trace_step))
    ep = episode_from_rollout(scene, rollout, planner_label(params), _settings(params), params.reactive, expert)
    if out is not None:
        save_episode(ep, Path(out))
    progress(1.0, f"CLS {ep.score:.1f}")
    return RunResult(ep, str(out) if out else None)


def rerun(episode: Episode, frame: int, params: RunParams, edit: Callable[[Scenario, Simulator], None] | None = None,
          scenario: Scenario | None = None, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED,
          model: Any = None) -> Episode:
    """Re-simulate from ``frame``: the ego replays its recorded states up to it (so the agents are
    exactly where they were), the world is edited, then ``params``' planner drives on."""
    sc = scenario or episode.scenario
    frame = replan_frame(episode, frame)
    scene = Scene(sc)
    planner = make_planner(params, model)
    _arm_trace(planner, params.trace_step)
    expert = expert_rollout(scene, episode.reactive)
    wrapped = None if edit is None else (lambda sim: edit(sc, sim))
    rollout = run_episode(scene, planner, episode.reactive, warm_ego=episode.ego[: frame + 1], edit=wrapped,
                          progress=scaled(progress, 0.05, 0.97), cancel=cancel, on_step=_trace_hook(planner, params.trace_step))
    ep = episode_from_rollout(scene, rollout, planner_label(params), _settings(params), episode.reactive, expert, episode.plans[:frame])
    ep.extras["rerun_from"] = frame
    progress(1.0, f"CLS {ep.score:.1f}")
    return ep


def _settings(params: RunParams) -> dict:
    from engines.core import to_jsonable

    return to_jsonable(params)


def _arm_trace(planner: Any, step: int | None) -> None:
    if hasattr(planner, "record_trace"):
        planner.record_trace = step == 0


def _trace_hook(planner: Any, step: int | None):
    """Record the denoising trace only at the requested replan (it costs memory)."""
    if step is None or not hasattr(planner, "record_trace"):
        return None

    def hook(k: int, sim: Simulator, obs, plan) -> None:
        planner.record_trace = k + 1 == step

    return hook


@dataclass
class RunResult:
    episode: Episode
    out: str | None

    def summary(self) -> dict[str, Any]:
        ep = self.episode
        m = ep.metrics
        ms = [p.ms for p in ep.plans]
        return {
            "scenario": ep.scenario.name, "planner": ep.planner, "reactive": ep.reactive, "cls": round(ep.score, 2),
            "multipliers": m.multipliers, "weighted": {k: round(v, 4) for k, v in m.weighted.items()},
            "collisions": [c.__dict__ for c in m.collisions], "at_fault_collision": m.at_fault,
            "first_violation": None if m.first_violation is None else m.first_violation.__dict__,
            "ego_progress_m": round(m.ego_progress, 2), "expert_progress_m": round(m.expert_progress, 2),
            "replan_ms_median": round(float(np.median(ms)), 2) if ms else None, "steps": ep.steps, "out": self.out,
        }

    def human(self) -> str:
        s = self.summary()
        lines = [f"{s['scenario']}  planner {s['planner']}  ({'reactive' if s['reactive'] else 'log replay'} agents)",
                 f"CLS {s['cls']:.1f}"]
        lines += [f"  x {k:30} {v:.2f}" for k, v in s["multipliers"].items()]
        lines += [f"  w {k:30} {v:.2f}" for k, v in s["weighted"].items()]
        lines.append(f"  progress {s['ego_progress_m']:.1f} m (expert {s['expert_progress_m']:.1f} m), replan {s['replan_ms_median']} ms median")
        if s["first_violation"]:
            lines.append(f"  first violation at step {s['first_violation']['step']}: {s['first_violation']['text']}")
        if s["out"]:
            lines.append(f"episode written to {s['out']}")
        return "\n".join(lines)


# Edits for re-runs ------------------------------------------------------------------------
def move_agent(agent_id: int, x: float, y: float, heading: float | None = None, speed: float | None = None):
    """An edit: put an agent at (x, y) at the re-run frame; it drives on reactively (IDM) from there."""

    def edit(sc: Scenario, sim: Simulator) -> None:
        ids = list(sim.agents.ids)
        if agent_id not in ids:
            raise EngineError(f"there is no agent {agent_id} in this scene")
        i = ids.index(agent_id)
        sim.agents.place(i, x, y, heading, speed)
        sim.refresh_now()

    return edit


def replan_frame(episode: Episode, frame: int) -> int:
    """The replan that an action at ``frame`` (re-run, cut-in, denoising) starts from.

    The timeline shows steps + 1 frames, but the planner last plans at frame steps - 1: the final
    state has nothing left to drive. So the end frame means that last replan, and the panel's
    numbering and the runner's agree; any other frame outside the episode is an error.
    """
    if not (0 <= frame <= episode.steps):
        raise EngineError(f"frame {frame} is outside the episode (0-{episode.steps})")
    return min(frame, episode.steps - 1)


def with_cut_in(episode: Episode, frame: int) -> Scenario:
    """The scenario plus a vehicle that appears beside the ego at ``frame`` and cuts into its lane."""
    frame = replan_frame(episode, frame)
    sc = episode.scenario
    scene = Scene(sc)
    ego = episode.ego[frame]
    lane_id = scene.closest_lane(ego[:2], float(ego[2]))
    lane = scene.lanes[lane_id]
    side = lane.left_neighbor or lane.right_neighbor
    if side is None:
        raise EngineError("there is no lane beside the ego here to cut in from")
    target = scene.lanes[side]
    s, _ = target.center.project(ego[None, :2])
    s_new = float(s[0]) + 8.0 + 0.4 * float(ego[3])
    xy, h = target.center.interpolate(np.array([s_new]))
    speed = max(0.0, float(ego[3]) - 2.0)
    t0 = frame * sc.dt
    state = (float(xy[0, 0]), float(xy[0, 1]), float(h[0]), speed)
    new_id = max([a.id for a in sc.agents], default=0) + 1
    route = _lane_chain(scene, side)
    agent = Agent(new_id, "vehicle", 4.7, 1.9, (state,), route=route,
                  events=(Event(t0 + 0.5, "lane_change", lane=lane_id, duration=2.0),), start_step=frame)
    return replace(sc, agents=(*sc.agents, agent))


def _lane_chain(scene: Scene, lane_id: str) -> tuple[str, ...]:
    out = [lane_id]
    total = scene.lanes[lane_id].center.length
    while total < 600 and scene.lanes[out[-1]].successors:
        out.append(scene.lanes[out[-1]].successors[0])
        total += scene.lanes[out[-1]].center.length
    return tuple(out)


def denoise_at(episode: Episode, frame: int, params: RunParams, model: Any = None, scenario: Scenario | None = None) -> dict[str, Any]:
    """The denoising trace of the diffusion planner's replan at ``frame`` of an episode (world frame)."""
    if params.planner != "diffusion":
        raise EngineError("the denoising view needs the diffusion planner")
    frame = replan_frame(episode, frame)
    sc = scenario or episode.scenario
    scene = Scene(sc)
    sim = Simulator(scene, episode.reactive)
    for row in episode.ego[1: frame + 1]:
        sim.teleport(row)
    planner = make_planner(params, model)
    planner.reset(scene)
    planner.record_trace = True
    plan = planner.plan(sim.observation())
    return {"step": frame, "steps": plan.trace["steps"], "chosen": plan.chosen}
