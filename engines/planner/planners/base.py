"""One interface for every planner: ``reset(scene)`` once, then ``plan(observation)`` every step.

A plan is a trajectory of centre poses every ``PLAN_DT`` seconds, row 0 = now; planners may add
what they considered (samples, neighbour predictions, denoising trace) for the replay panel.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..scene import Scene
from ..vehicle import EgoState

PLAN_DT = 0.1
PLAN_STEPS = 40  # 4 s executed horizon (PDM-Closed's)
HISTORY_STEPS = 20  # 2 s of past at 10 Hz


@dataclass
class Observation:
    """What a planner sees at one step: ego and agents with 2 s of history, and the map."""

    step: int
    time: float
    dt: float
    ego: EgoState
    ego_history: np.ndarray  # (H+1, 4) x, y, heading, speed; last row = now
    agent_ids: np.ndarray  # (N,)
    agent_kinds: list[str]
    agent_size: np.ndarray  # (N, 2) length, width
    agent_history: np.ndarray  # (N, H+1, 4)
    agent_valid: np.ndarray  # (N, H+1) bool
    static_boxes: np.ndarray  # (S, 4, 2)
    scene: Scene

    @property
    def agents_now(self) -> np.ndarray:
        return self.agent_history[:, -1]

    @property
    def valid_now(self) -> np.ndarray:
        return self.agent_valid[:, -1]


@dataclass
class Plan:
    trajectory: np.ndarray  # (PLAN_STEPS+1, 4) x, y, heading, speed in the world frame
    samples: np.ndarray | None = None  # (K, T+1, 2) candidate ego plans (world), if any
    chosen: int = 0
    sample_dt: float = PLAN_DT
    predictions: np.ndarray | None = None  # (P, T+1, 2) neighbours' predicted futures (world)
    prediction_ids: np.ndarray | None = None
    trace: Any = None  # denoising trace of one replan (diffusion only, on request)
    info: dict[str, Any] = field(default_factory=dict)


class Planner(Protocol):
    name: str

    def reset(self, scene: Scene) -> None: ...

    def plan(self, obs: Observation) -> Plan: ...


def poses_with_speed(xy: np.ndarray, heading: np.ndarray | None, dt: float) -> np.ndarray:
    """(T+1, 4) x, y, heading, speed from positions (headings from motion where not given)."""
    xy = np.asarray(xy, dtype=float)
    diff = np.diff(xy, axis=0)
    speed = np.linalg.norm(diff, axis=1) / dt
    speed = np.concatenate([speed[:1], speed]) if len(speed) else np.zeros(1)
    if heading is None:
        h = np.arctan2(diff[:, 1], diff[:, 0]) if len(diff) else np.zeros(0)
        h = np.concatenate([h[:1], h]) if len(h) else np.zeros(1)
        heading = h
    return np.column_stack([xy, heading, speed])


def resample_plan(traj: np.ndarray, src_dt: float, dst_dt: float = PLAN_DT, steps: int = PLAN_STEPS) -> np.ndarray:
    """Linear re-timing of an (T+1, 2..4) trajectory onto the executed plan's time grid."""
    t_src = np.arange(len(traj)) * src_dt
    t_dst = np.arange(steps + 1) * dst_dt
    x = np.interp(t_dst, t_src, traj[:, 0])
    y = np.interp(t_dst, t_src, traj[:, 1])
    if traj.shape[1] >= 3:
        h = np.interp(t_dst, t_src, np.unwrap(traj[:, 2]))
        return poses_with_speed(np.column_stack([x, y]), h, dst_dt)
    return poses_with_speed(np.column_stack([x, y]), None, dst_dt)
