"""Rule-based planners: constant velocity, the IDM lane follower (after nuPlan's IDM planner) and the
expert that demonstrates driving for training (IDM with forecasts, yielding, gap acceptance and
lane changes)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..agents import IDMParams
from ..geometry import box_corners, boxes_overlap, wrap_angle
from ..scene import Scene
from ..vehicle import LENGTH, WIDTH
from .base import PLAN_DT, PLAN_STEPS, Observation, Plan
from .corridor import PathFrame, change_leaders, forecast_obstacles, idm_profile, leaders_on_path, path_plan, project_corners

EXPERT_STEPS = 80  # 8 s: the expert's plan is the training label of the diffusion model
LAT_ACC_COMFORT = 2.5  # m/s^2 the expert allows in curves
CURVE_BRAKE = 1.5  # m/s^2 the expert brakes with before curves


def lane_offset_ok(scene: Scene, frame: PathFrame, offset: float, reach: float) -> bool:
    """A lateral offset of the route is a lane to drive in when its centre stays well inside the
    drivable area and a lane there runs the same way as the route."""
    s = np.linspace(frame.s0, min(frame.s0 + reach, frame.path.length), 12)
    xy, h = frame.path.interpolate(s)
    pts = xy + offset * np.stack([-np.sin(h), np.cos(h)], axis=1)
    if (scene.sdf.sample(pts) > -WIDTH / 2).any():
        return False
    lane = scene.lanes[scene.closest_lane(pts[0], float(h[0]))]
    ls, _ = lane.center.project(pts[:1])
    return abs(float(wrap_angle(lane.center.heading_at(ls)[0] - h[0]))) < 0.5


class ConstantVelocityPlanner:
    """Keeps the current speed and heading."""

    name = "constant_velocity"

    def reset(self, scene: Scene) -> None:
        self.scene = scene

    def plan(self, obs: Observation) -> Plan:
        e = obs.ego
        t = np.arange(PLAN_STEPS + 1) * PLAN_DT
        xy = np.column_stack([e.x + np.cos(e.heading) * e.speed * t, e.y + np.sin(e.heading) * e.speed * t])
        return Plan(np.column_stack([xy, np.full_like(t, e.heading), np.full_like(t, e.speed)]))


def blend_length(speed: float) -> float:
    return max(15.0, 3.0 * speed)


class IDMPlanner:
    """Follows the route's centre line at the lane's speed limit; IDM behind whatever occupies
    the path now (no forecasts, no lane changes): nuPlan's IDM baseline, with the reactive
    agents' IDM parameters (nuPlan's planner brakes at most 3 m/s^2; see docs/planner.md)."""

    name = "idm"

    def reset(self, scene: Scene) -> None:
        self.scene = scene

    def plan(self, obs: Observation) -> Plan:
        e = obs.ego
        scene = self.scene
        frame = PathFrame.at(scene.route_path, np.array([e.x, e.y]))
        obstacles = forecast_obstacles(obs, PLAN_STEPS * PLAN_DT, step=PLAN_STEPS * PLAN_DT)
        reach = 20.0 + 4.0 * max(e.speed, 5.0)
        s_lead, v_lead = leaders_on_path(frame, obstacles, (frame.d0, 0.0), reach, forecast=False)
        v_target = np.array([float(scene.route_speed_limit(frame.s0))])
        s, _ = idm_profile(frame.s0, e.speed, v_target, s_lead, v_lead, PLAN_STEPS, s_stop=scene.route_path.length - 1.0)
        traj = path_plan(frame, s[0], frame.d0, 0.0, blend_length(e.speed), np.array([e.x, e.y]), e.heading)
        return Plan(traj)


# The expert stops 2.5 m behind a standing car (1 m behind moving ones): with the 1 m gap its
# students, which undershoot stops a little, crept into standing leaders.
EXPERT_IDM = IDMParams(stopped_gap=1.5)


class ExpertPlanner:
    """The demonstrator: IDM along the route with constant-velocity forecasts (so it yields to
    crossing traffic and cut-ins), gap acceptance (it merges behind a car it would otherwise meet
    beside it), curve speed, and lane changes to pass slow or stopped traffic when the target
    lane is free. Its 8 s plans are the diffusion model's training labels."""

    name = "expert"

    def __init__(self, hold: float = 3.0, standing_gap: float = EXPERT_IDM.stopped_gap) -> None:
        self.hold = hold
        self.idm = replace(EXPERT_IDM, stopped_gap=standing_gap)  # `planner data --standing-gap`

    def reset(self, scene: Scene) -> None:
        self.scene = scene
        self.target = 0.0
        self.last_switch = -1e9
        self._lanes_at: tuple[float, list[float]] = (-1e9, [])

    def _lane_offsets(self, frame: PathFrame, obs: Observation) -> list[float]:
        """Offsets of drivable neighbour lanes, re-checked every 5 m of progress (it is costly)."""
        if abs(frame.s0 - self._lanes_at[0]) > 5.0:
            e = obs.ego
            width = self.scene.lanes[self.scene.closest_lane(np.array([e.x, e.y]), e.heading)].width
            self._lanes_at = (frame.s0, [o for o in (-width, width) if lane_offset_ok(self.scene, frame, o, 60.0)])
        return self._lanes_at[1]

    def _target_speed(self, frame: PathFrame, speed: float) -> float:
        """The speed limit, lowered ahead of curves so that braking for them stays comfortable."""
        limit = float(self.scene.route_speed_limit(frame.s0))
        ahead = np.arange(0.0, 20.0 + 5.0 * max(speed, limit), 2.0)
        s = np.clip(frame.s0 + ahead, 0, frame.path.length)
        kappa = np.abs(frame.path.curvature_at(s))
        v_curve = np.sqrt(LAT_ACC_COMFORT / np.maximum(kappa, 1e-4))
        envelope = np.sqrt(v_curve**2 + 2.0 * CURVE_BRAKE * ahead)
        return float(min(limit, envelope.min()))

    def plan(self, obs: Observation) -> Plan:
        e = obs.ego
        scene = self.scene
        frame = PathFrame.at(scene.route_path, np.array([e.x, e.y]))
        horizon = EXPERT_STEPS * PLAN_DT
        obstacles = forecast_obstacles(obs, horizon, step=0.5)
        reach = 30.0 + horizon * max(e.speed, 8.0)
        v_target = self._target_speed(frame, e.speed)
        stop = scene.route_path.length - 1.0
        candidates = sorted({self.target, 0.0} | set(self._lane_offsets(frame, obs)))
        # One IDM rollout per candidate lane, each in the band the ego sweeps to get there.
        blend = blend_length(e.speed)
        proj = project_corners(frame, obstacles.corners, reach)
        profiles = None
        # Twice: the second pass adds gap acceptance, judged along the first pass's speed profile
        # (would anyone enter the corridor beside the ego if it drove on like that?).
        for _ in range(2):
            leads = [change_leaders(frame, obstacles, c, reach, True, blend, e.speed, proj, None if profiles is None else profiles[i])
                     for i, c in enumerate(candidates)]
            m = max(len(v) for _, v in leads)
            tf = leads[0][0].shape[1]
            s_lead = np.full((len(candidates), m, tf), np.inf)
            v_lead = np.zeros((len(candidates), m))
            for i, (sl, vl) in enumerate(leads):
                s_lead[i, : len(vl)] = sl
                v_lead[i, : len(vl)] = vl
            profiles, _ = idm_profile(frame.s0, e.speed, np.full(len(candidates), v_target), s_lead, v_lead, EXPERT_STEPS, s_stop=stop, p=self.idm)
        results = dict(zip(candidates, profiles))
        gain = {c: results[c][-1] - results[self.target][-1] for c in candidates}
        now = obs.time
        if now - self.last_switch >= self.hold:
            best = max(candidates, key=lambda c: (gain[c] - 3.0 * abs(c), -abs(c)))
            back_home = self.target != 0.0 and gain.get(0.0, -np.inf) >= -2.0
            choice = 0.0 if back_home else best
            if choice != self.target and (back_home or gain[choice] > 15.0):
                if self._change_is_safe(frame, obs, obstacles, choice, results[choice]):
                    self.target = choice
                    self.last_switch = now
        traj = path_plan(frame, results[self.target], frame.d0, self.target, blend_length(e.speed), np.array([e.x, e.y]), e.heading)
        return Plan(traj, info={"lane_offset": self.target})

    def _change_is_safe(self, frame: PathFrame, obs: Observation, obstacles, target: float, s_prof: np.ndarray) -> bool:
        """No forecast box comes near the lane-change trajectory in its first 4 s (inflated ego box)."""
        traj = path_plan(frame, s_prof[:41], frame.d0, target, blend_length(obs.ego.speed), np.array([obs.ego.x, obs.ego.y]), obs.ego.heading)
        idx = (obstacles.times[obstacles.times <= 4.0] / PLAN_DT).round().astype(int)
        ego = traj[idx]
        margin = 4.0 + 1.0 * obs.ego.speed * 0.5
        boxes = box_corners(ego[:, 0], ego[:, 1], ego[:, 2], LENGTH + 2 * margin, WIDTH + 0.6)
        if not len(obstacles.speed):
            return True
        other = obstacles.corners[:, : len(idx)]
        return not boxes_overlap(boxes[None], other).any()
