"""The ego vehicle: a kinematic bicycle (nuPlan's Pacifica) and the tracker that follows a plan.

State is kept at the box centre (like every agent); the bicycle integrates the rear axle.
Tracker: pure pursuit for steering, a proportional speed loop with the plan's acceleration fed
forward. It keeps no state, so a re-run from a recorded frame continues exactly.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .geometry import wrap_angle

WHEELBASE = 3.089
LENGTH = 5.176
WIDTH = 2.297
REAR_TO_CENTER = 1.461  # rear axle to box centre (Pacifica: 1.127 m rear overhang)
MAX_STEER = 0.6  # rad
MAX_STEER_RATE = 1.2  # rad/s
ACCEL_LIMITS = (-8.0, 3.0)
FIT_S = 1.2  # seconds of the plan the speed profile is fitted on


@dataclass
class EgoState:
    x: float
    y: float
    heading: float
    speed: float
    acceleration: float = 0.0
    steering: float = 0.0
    yaw_rate: float = 0.0

    def as_array(self) -> np.ndarray:
        return np.array([self.x, self.y, self.heading, self.speed, self.acceleration, self.steering, self.yaw_rate])


def step_bicycle(state: EgoState, accel: float, steer_target: float, dt: float) -> EgoState:
    """One explicit step of the kinematic bicycle with steering-rate and actuator limits."""
    accel = float(np.clip(accel, *ACCEL_LIMITS))
    steer_target = float(np.clip(steer_target, -MAX_STEER, MAX_STEER))
    steer = state.steering + float(np.clip(steer_target - state.steering, -MAX_STEER_RATE * dt, MAX_STEER_RATE * dt))
    v0 = state.speed
    v1 = max(0.0, v0 + accel * dt)
    accel = (v1 - v0) / dt
    v_mid = 0.5 * (v0 + v1)
    rx = state.x - REAR_TO_CENTER * np.cos(state.heading)
    ry = state.y - REAR_TO_CENTER * np.sin(state.heading)
    yaw_rate = v_mid * np.tan(steer) / WHEELBASE
    h_mid = state.heading + 0.5 * yaw_rate * dt
    rx += v_mid * np.cos(h_mid) * dt
    ry += v_mid * np.sin(h_mid) * dt
    heading = float(wrap_angle(state.heading + yaw_rate * dt))
    return EgoState(
        rx + REAR_TO_CENTER * np.cos(heading), ry + REAR_TO_CENTER * np.sin(heading), heading, v1, accel, steer, yaw_rate
    )


class Tracker:
    """Pure pursuit + proportional speed control on a plan of centre poses every ``dt`` seconds."""

    def __init__(self, dt: float = 0.1, speed_lead: float = 0.5, kp: float = 1.2) -> None:
        self.dt = dt
        self.speed_lead = speed_lead
        self.kp = kp

    def control(self, state: EgoState, plan: np.ndarray) -> tuple[float, float]:
        """Acceleration and steering angle that follow ``plan`` ((T+1, >=3): x, y, heading; row 0 = now)."""
        xy = np.asarray(plan[:, :2], dtype=float)
        # Speed and acceleration of the plan: least squares of s(t) = v t + a t^2 / 2 over its first
        # FIT_S seconds (as nuPlan's LQR tracker fits profiles), robust to jitter in learned plans.
        n = min(len(xy), int(round(FIT_S / self.dt)) + 1)
        t = np.arange(n) * self.dt
        s = np.linalg.norm(xy[:n] - xy[0], axis=1)
        if n >= 3:
            design = np.column_stack([t, 0.5 * t**2])
            (v_fit, a_fit), *_ = np.linalg.lstsq(design[1:], s[1:], rcond=None)
        else:
            v_fit, a_fit = (s[-1] / max(t[-1], self.dt)) if n > 1 else 0.0, 0.0
        v_ref = max(0.0, float(v_fit + a_fit * self.speed_lead))
        accel = 0.5 * float(a_fit) + self.kp * (v_ref - state.speed)
        if v_ref < 0.2 and state.speed < 0.5:
            accel = min(accel, -state.speed / self.dt)
        steer = self._pure_pursuit(state, plan)
        return accel, steer

    def _pure_pursuit(self, state: EgoState, plan: np.ndarray) -> float:
        rear = np.array([state.x - REAR_TO_CENTER * np.cos(state.heading), state.y - REAR_TO_CENTER * np.sin(state.heading)])
        heads = np.asarray(plan[:, 2], dtype=float)
        path = np.asarray(plan[:, :2], dtype=float) - REAR_TO_CENTER * np.stack([np.cos(heads), np.sin(heads)], axis=1)
        lookahead = float(np.clip(3.0 + 0.5 * state.speed, 4.0, 14.0))
        d = np.linalg.norm(path - rear, axis=1)
        beyond = np.nonzero(d >= lookahead)[0]
        if len(beyond):
            target = path[beyond[0]]
        else:  # short plan (stopping): extend along its last heading
            target = path[-1] + (lookahead - d[-1]) * np.array([np.cos(heads[-1]), np.sin(heads[-1])])
        c, s = np.cos(state.heading), np.sin(state.heading)
        rel = target - rear
        lx, ly = c * rel[0] + s * rel[1], -s * rel[0] + c * rel[1]
        ld2 = max(lx * lx + ly * ly, 1e-6)
        curvature = 2.0 * ly / ld2
        return float(np.arctan(WHEELBASE * curvature))
