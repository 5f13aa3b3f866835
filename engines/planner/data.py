"""Expert demonstrations for training: the expert drives procedural scenarios in closed loop
(reactive IDM agents); every few steps we keep the ego-centric inputs, the expert's 8 s plan
(the ego label) and the neighbours' actual futures. Half of the episodes perturb what the ego
executes (DART-style noise) so the data also shows how the expert recovers.

With a student checkpoint the trained diffusion planner drives instead and the expert labels
every state it visits (DAgger): the states a student drifts into (a little too fast, a little
too close behind a leader) are the ones expert-driven data never shows."""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, atomic_path, no_progress, pool_worker_setup
from engines.core.executor import ExecutorSpec, run_tasks

from . import features as F
from .features import FeatureBuilder, Inputs, future_in_ego_frame
from .planners.base import PLAN_DT, Observation, Plan, Planner
from .planners.rules import EXPERT_IDM, ExpertPlanner
from .procedural import TYPES, generate
from .scenario import Scenario
from .scene import Scene
from .simulation import Rollout, Simulator, run_episode

TRAIN_SEED_BASE = 100_000  # training scenes never share a seed with the benchmark's
SAMPLE_STRIDE = 2
MAX_STANDING_GAP = 10.0  # m
LABEL_STRIDE = int(round(F.FUTURE_DT / PLAN_DT))


class NoisyExpert:
    """Runs the expert; executes a perturbed copy of its plan now and then (labels stay clean)."""

    name = "expert"

    def __init__(self, rng: np.random.Generator, noise: bool, standing_gap: float = EXPERT_IDM.stopped_gap) -> None:
        self.expert = ExpertPlanner(standing_gap=standing_gap)
        self.rng = rng
        self.noise = noise
        self._until = -1.0
        self._shift = 0.0
        self._speed = 1.0

    def reset(self, scene: Scene) -> None:
        self.expert.reset(scene)

    def plan(self, obs: Observation) -> Plan:
        plan = self.expert.plan(obs)
        plan.info["label"] = plan.trajectory
        if not self.noise:
            return plan
        if obs.time > self._until + 2.0 and self.rng.random() < 0.08:
            self._until = obs.time + float(self.rng.uniform(0.8, 1.8))
            self._shift = float(self.rng.uniform(-1.0, 1.0))
            self._speed = float(self.rng.uniform(0.8, 1.15))
        if obs.time <= self._until:
            traj = plan.trajectory.copy()
            ramp = np.clip(np.arange(len(traj)) / 10.0, 0.0, 1.0)
            normal = np.stack([-np.sin(traj[:, 2]), np.cos(traj[:, 2])], axis=1)
            traj[:, :2] += (self._shift * ramp)[:, None] * normal
            # Re-time the path to drive a little faster or slower than planned.
            t = np.arange(len(traj))
            src = np.clip(t * self._speed, 0, len(traj) - 1)
            traj[:, 0] = np.interp(src, t, traj[:, 0])
            traj[:, 1] = np.interp(src, t, traj[:, 1])
            plan = Plan(traj, info=plan.info)
        return plan


class StudentDriver:
    """DAgger: the student drives, the expert says at every step what it would do."""

    name = "student"

    def __init__(self, student: Planner, standing_gap: float = EXPERT_IDM.stopped_gap) -> None:
        self.expert = ExpertPlanner(standing_gap=standing_gap)
        self.student = student

    def reset(self, scene: Scene) -> None:
        self.expert.reset(scene)
        self.student.reset(scene)

    def plan(self, obs: Observation) -> Plan:
        label = self.expert.plan(obs).trajectory  # every step, so the expert's own state stays current
        plan = self.student.plan(obs)
        plan.info["label"] = label
        return plan


def _first_failure(scene: Scene, rollout: Rollout) -> int:
    """The first step with a collision or off the road; states after it teach nothing."""
    from .metrics import compute_cls
    from .api import track_of

    sc = scene.scenario
    result = compute_cls(scene, rollout.ego, track_of(sc, rollout), sc.dt, None)
    steps = [c.step for c in result.collisions] + [v.step for v in result.violations if v.what == "drivable_area"]
    return min(steps, default=len(rollout.ego))


@dataclass
class Episode:
    inputs: list[Inputs]
    future: np.ndarray  # (n, P+1, T+1, 4) ego frame metres
    valid: np.ndarray  # (n, P+1, T+1)


def expert_episode(kind: str, seed: int, noise: bool, stride: int = SAMPLE_STRIDE,
                   student: Planner | None = None, standing_gap: float = EXPERT_IDM.stopped_gap) -> Episode:
    """Samples of one episode on the procedural scene (kind, seed), labelled by the expert.

    The expert drives (with DART noise when ``noise``), or the ``student`` does, up to its first
    collision or departure from the road. ``standing_gap``: the expert's extra gap behind a
    standing leader (m) in the labels.
    """
    return labelled_episode(generate(kind, seed), seed, noise, True, stride, student, standing_gap, cut=student is not None)


def labelled_episode(sc: Scenario, seed: int, noise: bool, reactive: bool, stride: int = SAMPLE_STRIDE,
                     student: Planner | None = None, standing_gap: float = EXPERT_IDM.stopped_gap, cut: bool = True) -> Episode:
    """Samples of one closed-loop episode on ``sc`` labelled by the expert (see ``expert_episode``),
    up to the driver's first collision or departure from the road when ``cut``; on a recorded map
    the agents replay their logs (``reactive`` False) or drive IDM."""
    scene = Scene(sc)
    fb = FeatureBuilder(scene)
    planner = (StudentDriver(student, standing_gap) if student is not None
               else NoisyExpert(np.random.default_rng([seed, 7]), noise, standing_gap))
    kept: list[tuple[int, Inputs, np.ndarray, np.ndarray, float]] = []

    def on_step(k: int, sim: Simulator, obs: Observation, plan: Plan) -> None:
        if k % stride:
            return
        inp = fb.build(obs)
        label = plan.info["label"][::LABEL_STRIDE][: F.FUTURE_STEPS + 1]
        origin = np.array([obs.ego.x, obs.ego.y])
        kept.append((k, inp, future_in_ego_frame(origin, obs.ego.heading, label), origin, obs.ego.heading))

    rollout = run_episode(scene, planner, reactive=reactive, on_step=on_step)
    if cut:
        end = _first_failure(scene, rollout)
        kept = [item for item in kept if item[0] < end]
    t1 = F.FUTURE_STEPS + 1
    n = len(kept)
    p = F.N_NEIGHBORS + 1
    future = np.zeros((n, p, t1, 4), dtype=np.float32)
    valid = np.zeros((n, p, t1), dtype=bool)
    last = len(rollout.agents) - 1
    for r, (k, inp, ego_future, origin, theta) in enumerate(kept):
        future[r, 0, : len(ego_future)] = ego_future
        valid[r, 0, : len(ego_future)] = True
        rows = np.arange(k, k + t1 * LABEL_STRIDE, LABEL_STRIDE)
        inside = rows <= last
        for j, idx in enumerate(inp.neighbor_index):
            if idx < 0:
                continue
            states = rollout.agents[rows[inside], idx]
            ok = rollout.valid[rows[inside], idx]
            future[r, j + 1, : inside.sum()] = future_in_ego_frame(origin, theta, states)
            valid[r, j + 1, : inside.sum()] = ok
            # A neighbour's track ends where it first disappears.
            if not ok.all():
                valid[r, j + 1, int(np.argmin(ok)):] = False
    return Episode([item[1] for item in kept], future, valid)


def save_samples(path: Path, items: list[Inputs], futures: list[np.ndarray], valids: list[np.ndarray],
                 extra: dict[str, np.ndarray]) -> None:
    """One .npz of training samples (the layout ``train.load_dataset`` reads), written atomically."""
    if not items:
        raise EngineError("no training samples came out of the data: nothing to write")
    arrays = {f: np.stack([getattr(it, f) for it in items]) for f in Inputs.FIELDS}
    for f in ("agents", "statics", "lanes", "route", "ego", "neighbor_current", "neighbor_size"):
        arrays[f] = arrays[f].astype(np.float16)
    arrays["future"] = np.concatenate(futures).astype(np.float32)
    arrays["future_valid"] = np.concatenate(valids)
    arrays.update(extra)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)


def episode_list(count: int, seed: int) -> list[tuple[str, int, bool]]:
    """(type, scene seed, noisy) for ``count`` training episodes, types in turn."""
    out = []
    for i in range(count):
        kind = TYPES[i % len(TYPES)]
        out.append((kind, TRAIN_SEED_BASE + seed * 10_000 + i // len(TYPES), i % 2 == 1))
    return out


@lru_cache(maxsize=1)
def _student(checkpoint: Path) -> Planner:
    """One loaded student per process: ``reset`` readies it for each episode."""
    from .planners.diffusion_planner import DiffusionPlanner

    return DiffusionPlanner(checkpoint=checkpoint)


def _episode_job(job: tuple[str, int, bool, Path | None, float]) -> Episode:
    kind, seed, noise, checkpoint, standing_gap = job
    return expert_episode(kind, seed, noise, student=_student(checkpoint) if checkpoint is not None else None, standing_gap=standing_gap)


def generate_dataset(path: Path, episodes: int, seed: int = 0, progress: ProgressFn = no_progress,
                     cancel: CancelToken = NEVER_CANCELLED, workers: int = 1, student: Path | None = None,
                     standing_gap: float = EXPERT_IDM.stopped_gap, executor: str = "local", ray_address: str | None = None) -> dict:
    """Write an .npz of expert-labelled samples; returns counts and the wall time.

    ``student``: a diffusion checkpoint that drives the episodes (DAgger) instead of the expert.
    ``standing_gap``: the expert's extra gap behind a standing leader (m; the benchmark's expert
    keeps 1.5), a lever on where its students stop.
    Episodes are independent, so ``workers`` processes simulate them side by side, here or on Ray
    (``executor``, ``ray_address``); results are gathered in plan order, so the file is the same for
    any number of workers. An episode whose task fails is logged, left out and listed in "failed".
    """
    if episodes < 1:
        raise EngineError("the number of episodes must be at least 1")
    if workers < 1:
        raise EngineError("the number of data workers must be at least 1")
    if not 0.0 <= standing_gap <= MAX_STANDING_GAP:
        raise EngineError(f"the standing gap must be 0 to {MAX_STANDING_GAP:g} m")
    if student is not None:
        _student(student)  # a missing or foreign checkpoint fails before any episode runs
    driver = Path(student).name if student is not None else "expert"
    t0 = time.perf_counter()
    spec = ExecutorSpec(executor, workers, ray_address)
    spec.check()
    items: list[Inputs] = []
    futures, valids, failed = [], [], []
    plan = [(kind, scene_seed, noisy, student, standing_gap) for kind, scene_seed, noisy in episode_list(episodes, seed)]
    for i, result in enumerate(run_tasks(_episode_job, plan, spec, cancel, initializer=pool_worker_setup)):
        cancel.raise_if_cancelled()
        kind = result.item[0]
        if result.ok:
            ep = result.value
            items.extend(ep.inputs)
            futures.append(ep.future)
            valids.append(ep.valid)
        else:
            failed.append({"episode": i, "type": kind, "seed": result.item[1], "error": result.error})
        progress((i + 1) / len(plan), f"episode {i + 1}/{len(plan)} ({kind}), {len(items)} samples")
    seconds = time.perf_counter() - t0
    extra = {"meta": np.array([episodes, seed, seconds]), "standing_gap": np.array(standing_gap)}
    if student is not None:
        extra["student"] = np.array(driver)
    save_samples(path, items, futures, valids, extra)
    return {"episodes": episodes, "samples": len(items), "seconds": round(seconds, 1), "path": str(path),
            "driver": driver, "standing_gap": standing_gap, "failed": failed}
