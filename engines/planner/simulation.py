"""Closed-loop simulation (nuPlan's set-up): 15 s at 10 Hz; every step the planner plans, the
tracker follows the plan with the kinematic bicycle, and the agents move (IDM or log replay)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress

from .agents import AgentSim
from .geometry import to_local
from .planners.base import HISTORY_STEPS, Observation, Plan, Planner
from .scene import Scene
from .vehicle import LENGTH, WIDTH, EgoState, Tracker, step_bicycle


@dataclass
class StepRecord:
    """What one step of an episode keeps (for replay, plots and the score)."""

    plan: Plan
    plan_ms: float


@dataclass
class Rollout:
    """Raw arrays of a finished simulation."""

    ego: np.ndarray  # (S+1, 7) x, y, heading, speed, acceleration, steering, yaw rate
    agents: np.ndarray  # (S+1, N, 4)
    valid: np.ndarray  # (S+1, N)
    records: list[StepRecord] = field(default_factory=list)


class Simulator:
    """One scenario in closed loop; the ego can also be replayed from recorded states (warm start)."""

    def __init__(self, scene: Scene, reactive: bool) -> None:
        sc = scene.scenario
        self.scene = scene
        self.dt = sc.dt
        self.agents = AgentSim(scene, reactive)
        e = sc.ego
        self.ego = EgoState(e.x, e.y, e.heading, e.speed, e.acceleration)
        self.tracker = Tracker(self.dt)
        n = len(self.agents.specs)
        total = sc.steps + 1 + HISTORY_STEPS
        self._hist = np.zeros((total, n, 4))
        self._valid = np.zeros((total, n), dtype=bool)
        self._ego_hist = np.zeros((total, 4))
        h = HISTORY_STEPS
        for i, agent in enumerate(self.agents.specs):
            past = np.asarray(agent.history, dtype=float)[-(h + 1):]
            if agent.start_step == 0:
                self._hist[h + 1 - len(past): h + 1, i] = past
                self._valid[h + 1 - len(past): h + 1, i] = True
        t = (np.arange(-h, 1) * self.dt)[:, None]
        self._ego_hist[: h + 1] = np.column_stack(
            [e.x + np.cos(e.heading) * e.speed * t[:, 0], e.y + np.sin(e.heading) * e.speed * t[:, 0], np.full(h + 1, e.heading), np.full(h + 1, e.speed)]
        )
        self.step_index = 0
        self.ego_log = [self.ego.as_array()]
        self.agent_log = [self.agents.state.copy()]
        self.valid_log = [self.agents.active.copy()]
        self.static_boxes = self.agents.static_boxes

    def observation(self) -> Observation:
        k = self.step_index + HISTORY_STEPS
        return Observation(
            step=self.step_index,
            time=self.step_index * self.dt,
            dt=self.dt,
            ego=self.ego,
            ego_history=self._ego_hist[k - HISTORY_STEPS: k + 1].copy(),
            agent_ids=self.agents.ids,
            agent_kinds=self.agents.kind,
            agent_size=np.column_stack([self.agents.length, self.agents.width]) if len(self.agents.ids) else np.zeros((0, 2)),
            agent_history=self._hist[k - HISTORY_STEPS: k + 1].transpose(1, 0, 2).copy(),
            agent_valid=self._valid[k - HISTORY_STEPS: k + 1].T.copy(),
            static_boxes=self.static_boxes,
            scene=self.scene,
        )

    def refresh_now(self) -> None:
        """Record the agents' current states again after an edit of the world at this step."""
        k = self.step_index + HISTORY_STEPS
        self._hist[k] = self.agents.state
        self._valid[k] = self.agents.active
        self.agent_log[-1] = self.agents.state.copy()
        self.valid_log[-1] = self.agents.active.copy()

    def _advance(self, new_ego: EgoState) -> None:
        self.agents.step(np.array([self.ego.x, self.ego.y, self.ego.heading, self.ego.speed]), (LENGTH, WIDTH))
        self.ego = new_ego
        self.step_index += 1
        k = self.step_index + HISTORY_STEPS
        self._hist[k] = self.agents.state
        self._valid[k] = self.agents.active
        self._ego_hist[k] = (new_ego.x, new_ego.y, new_ego.heading, new_ego.speed)
        self.ego_log.append(new_ego.as_array())
        self.agent_log.append(self.agents.state.copy())
        self.valid_log.append(self.agents.active.copy())

    def step(self, plan: Plan) -> None:
        accel, steer = self.tracker.control(self.ego, plan.trajectory)
        self._advance(step_bicycle(self.ego, accel, steer, self.dt))

    def teleport(self, ego_row: np.ndarray) -> None:
        """Move the ego to a recorded state (agents react to it as in the recording)."""
        self._advance(EgoState(*[float(v) for v in ego_row[:7]]))

    def rollout(self) -> Rollout:
        return Rollout(np.array(self.ego_log), np.array(self.agent_log), np.array(self.valid_log))


def run_episode(
    scene: Scene,
    planner: Planner,
    reactive: bool,
    *,
    steps: int | None = None,
    warm_ego: np.ndarray | None = None,
    edit: Callable[[Simulator], None] | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    on_step: Callable[[int, Simulator, Observation, Plan], None] | None = None,
) -> Rollout:
    """Simulate ``steps`` steps (default: the scenario's duration).

    ``warm_ego`` (W, 7): recorded ego states to replay first (the ego is moved, not planned),
    used to re-run an episode from frame W-1; ``edit`` then changes the world (drag an agent,
    inject a cut-in) before planning resumes.
    """
    sim = Simulator(scene, reactive)
    total = scene.scenario.steps if steps is None else steps
    start = 0
    records: list[StepRecord] = []
    if warm_ego is not None and len(warm_ego) > 1:
        for row in warm_ego[1:]:
            sim.teleport(row)
        start = len(warm_ego) - 1
    if edit is not None:
        edit(sim)
    planner.reset(scene)
    for k in range(start, total):
        cancel.raise_if_cancelled()
        obs = sim.observation()
        t0 = time.perf_counter()
        plan = planner.plan(obs)
        ms = (time.perf_counter() - t0) * 1e3
        records.append(StepRecord(plan, ms))
        if on_step is not None:
            on_step(k, sim, obs, plan)
        sim.step(plan)
        progress((k + 1 - start) / max(total - start, 1), f"step {k + 1}/{total}")
    out = sim.rollout()
    out.records = records
    return out


def agent_relative(sim: Simulator, agent_index: int) -> np.ndarray:
    """Agent position in the ego frame (used by edits that place agents relative to the ego)."""
    s = sim.agents.state[agent_index]
    return to_local(s[:2], np.array([sim.ego.x, sim.ego.y]), sim.ego.heading)
