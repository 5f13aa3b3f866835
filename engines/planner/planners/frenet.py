"""The CommonRoad project's sampling-based Frenet planner (``commonroad-reactive-planner``, after
Werling et al.) behind this project's planner interface: a real peer beside IDM and PDM-like.

Each replan hands it the ego's state (at the rear axle, as it expects), the route's centre line as
reference path (its Frenet frame, built once per scene) and a CommonRoad collision checker holding
the road boundary (``commonroad-drivability-checker``, from the scene's lanes, built once) and the
other agents' boxes, predicted at constant velocity over the horizon. It samples end states in
time, speed and lateral offset and keeps the cheapest sample that is kinematically feasible and
collision free. When no sample is, the plan is a comfortable stop along the route; the plan's info
counts these fallbacks.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..geometry import Polyline
from ..scene import Scene
from ..vehicle import LENGTH, MAX_STEER, MAX_STEER_RATE, REAR_TO_CENTER, WHEELBASE, WIDTH
from .base import PLAN_DT, PLAN_STEPS, Observation, Plan
from .corridor import PathFrame, path_plan
from .rules import blend_length

COMFORT_DECEL = 2.5  # m/s^2 of the fallback stop (inside nuPlan's comfort bound)
SPLINE_DEGREE = 3  # of the smoothing spline along the route (the reactive planner's own choice)


@dataclass(frozen=True)
class FrenetSettings:
    """The sampler's settings (the reactive planner's own defaults where this project has no reason to differ)."""

    horizon_steps: int = 50  # 5 s at PLAN_DT: long enough to see a stop coming, the executed plan is the first 4 s
    t_min: float = 1.0  # s: shortest manoeuvre sampled
    lateral: float = 3.5  # m either side of the route sampled (one lane width)
    speeds: int = 5  # speed samples at the coarse level (the dense level, tried when nothing is feasible, has 2x-1)
    margin: float = 0.3  # m added to the agents' boxes


def _quiet() -> None:
    """The reactive planner logs every cycle at INFO; a suite runs thousands."""
    logging.getLogger("RP_LOGGER").setLevel(logging.ERROR)


class FrenetPlanner:
    """commonroad-reactive-planner on the scene's route; a comfortable stop when it finds nothing."""

    name = "frenet"

    def __init__(self, settings: FrenetSettings = FrenetSettings()) -> None:
        self.settings = settings

    def reset(self, scene: Scene) -> None:
        from commonroad_rp.reactive_planner import ReactivePlanner

        from ..commonroad_export import commonroad_scenario

        _quiet()
        self.scene = scene
        self.fallbacks = 0
        self.replans = 0
        cr = commonroad_scenario(scene)
        config = _config(self.settings, cr)
        self.rp = ReactivePlanner(config)  # builds the road boundary of the map, which holds no obstacle
        self.road_boundary = self.rp.collision_checker.obstacles()[0]
        self.rp.set_reference_path(coordinate_system=_frenet_frame(scene.route_path.points))

    def plan(self, obs: Observation) -> Plan:
        self.replans += 1
        traj = None
        try:
            traj = self._sample(obs)
        except Exception as exc:  # noqa: BLE001  (it raises ValueError or a bare Exception for a start off the route's frame or against it)
            logging.getLogger(__name__).debug("frenet planner failed: %s", exc)
        if traj is None:
            self.fallbacks += 1
            return Plan(self._comfortable_stop(obs), info={"fallbacks": self.fallbacks, "replans": self.replans, "fallback": True})
        return Plan(traj[: PLAN_STEPS + 1], info={"fallbacks": self.fallbacks, "replans": self.replans})

    def _sample(self, obs: Observation) -> np.ndarray | None:
        import commonroad_dc.pycrcc as pycrcc
        from commonroad_rp.state import ReactivePlannerState

        e = obs.ego
        c, s = np.cos(e.heading), np.sin(e.heading)
        x0 = ReactivePlannerState(
            time_step=0,
            position=np.array([e.x - REAR_TO_CENTER * c, e.y - REAR_TO_CENTER * s]),
            velocity=max(float(e.speed), 0.0),
            orientation=float(e.heading),
            steering_angle=float(np.clip(e.steering, -MAX_STEER, MAX_STEER)),
            acceleration=float(e.acceleration),
            yaw_rate=float(e.yaw_rate),
        )
        cc = pycrcc.CollisionChecker()
        cc.add_collision_object(self.road_boundary)
        for obj in _obstacles(obs, self.settings.horizon_steps, self.settings.margin):
            cc.add_collision_object(obj)
        rp = self.rp
        rp.reset(initial_state_cart=x0, collision_checker=cc)
        frame = PathFrame.at(self.scene.route_path, np.array([e.x, e.y]))
        limit = float(self.scene.route_speed_limit(frame.s0))
        rp.set_desired_velocity(desired_velocity=limit, current_speed=x0.velocity)
        # End speeds from what braking can shed to the limit (or what accelerating can reach): the
        # default range (a few m/s around the current speed) cannot see a stop coming.
        v, horizon = x0.velocity, self.settings.horizon_steps * PLAN_DT
        rp.set_v_sampling_parameters(max(0.0, v - 3.0 * horizon), min(max(limit, v), v + 1.5 * horizon))
        result = rp.plan(current_sampling_level=0) or rp.plan(current_sampling_level=1)
        if result is None:
            return None
        states = result[0].state_list
        out = np.array([[st.position[0], st.position[1], st.orientation, st.velocity] for st in states], dtype=float)
        out[:, 0] += REAR_TO_CENTER * np.cos(out[:, 2])
        out[:, 1] += REAR_TO_CENTER * np.sin(out[:, 2])
        out[0] = [e.x, e.y, e.heading, e.speed]
        return out

    def _comfortable_stop(self, obs: Observation) -> np.ndarray:
        """Brake at COMFORT_DECEL along the route's centre line (where the ego is, drifting back to it)."""
        e = obs.ego
        frame = PathFrame.at(self.scene.route_path, np.array([e.x, e.y]))
        t = np.arange(PLAN_STEPS + 1) * PLAN_DT
        v = np.maximum(0.0, e.speed - COMFORT_DECEL * t)
        t_stop = e.speed / COMFORT_DECEL
        tt = np.minimum(t, t_stop)
        s = frame.s0 + e.speed * tt - 0.5 * COMFORT_DECEL * tt**2
        traj = path_plan(frame, s, frame.d0, 0.0, blend_length(e.speed), np.array([e.x, e.y]), e.heading)
        traj[:, 3] = v
        return traj


def _frenet_frame(reference: np.ndarray) -> Any:
    """The reactive planner's curvilinear frame along the route (spline-smoothed, as its own
    ``create_coordinate_system`` does). A sample that leaves the frame's projection domain is
    infeasible: the planner expects ``None`` there, while commonroad-clcs 2025.2 raises."""
    from commonroad_clcs.config import CLCSParams, ProcessingOption, ResamplingOption
    from commonroad_clcs.pycrccosy import CurvilinearProjectionDomainLateralError, CurvilinearProjectionDomainLongitudinalError
    from commonroad_rp.utility.utils_coordinate_system import CoordinateSystem

    class Frame(CoordinateSystem):
        def convert_to_cartesian_coords(self, s: float, d: float) -> np.ndarray | None:
            try:
                return super().convert_to_cartesian_coords(s, d)
            except (CurvilinearProjectionDomainLateralError, CurvilinearProjectionDomainLongitudinalError):
                return None

    if len(reference) <= SPLINE_DEGREE:  # a route of one straight piece: the cubic smoothing spline needs more points (scipy: "m > k")
        route = Polyline(reference)
        reference = route.resample(route.length / SPLINE_DEGREE)
    params = CLCSParams(processing_option=ProcessingOption.SPLINE_SMOOTHING)
    params.spline.degree_spline = SPLINE_DEGREE
    params.spline.smoothing_factor = 2.0
    params.resampling.option = ResamplingOption.ADAPTIVE
    params.resampling.min_step = 0.5
    params.resampling.max_step = 1.0
    # A straight route has zero curvature (divisions by zero) and a long one a slowly converging arc-length integral: both fine.
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Frame(reference=reference, preprocess_reference=True, clcs_params=params)


def _config(settings: FrenetSettings, cr_scenario: Any):
    """The reactive planner's configuration for this project's ego (nuPlan's Pacifica) and horizon."""
    from commonroad_rp.utility.config import (
        DebugConfiguration,
        PlanningConfiguration,
        ReactivePlannerConfiguration,
        SamplingConfiguration,
        VehicleConfiguration,
    )

    vehicle = VehicleConfiguration(
        length=LENGTH,
        width=WIDTH,
        wb_front_axle=WHEELBASE - REAR_TO_CENTER,
        wb_rear_axle=REAR_TO_CENTER,
        a_max=8.0,
        delta_min=-MAX_STEER,
        delta_max=MAX_STEER,
        v_delta_min=-MAX_STEER_RATE,
        v_delta_max=MAX_STEER_RATE,
    )
    planning = PlanningConfiguration(dt=PLAN_DT, time_steps_computation=settings.horizon_steps)
    sampling = SamplingConfiguration(
        num_sampling_levels=2,
        t_min=settings.t_min,
        d_min=-settings.lateral,
        d_max=settings.lateral,
        vel_init_samples=settings.speeds,
        pos_init_samples=3,
    )
    debug = DebugConfiguration(logging_level="ERROR", multiproc=False, show_plots=False, save_plots=False, draw_traj_set=False)
    config = ReactivePlannerConfiguration(vehicle=vehicle, planning=planning, sampling=sampling, debug=debug)
    config.scenario = cr_scenario
    return config


def _obstacles(obs: Observation, steps: int, margin: float) -> list:
    """CommonRoad collision objects: each agent's box moving at constant velocity over ``steps``, the static boxes.

    An agent wholly behind the ego in its lane is left out: avoiding a rear-end collision is the
    follower's task (as in the at-fault metric), and its forecast would rule out every braking plan.
    """
    import commonroad_dc.pycrcc as pycrcc

    e = obs.ego
    a = obs.agents_now[obs.valid_now]
    size = obs.agent_size[obs.valid_now]
    out = []
    if len(a):
        dx, dy = a[:, 0] - e.x, a[:, 1] - e.y
        lon = dx * np.cos(e.heading) + dy * np.sin(e.heading)
        lat = -dx * np.sin(e.heading) + dy * np.cos(e.heading)
        near = np.hypot(dx, dy) < 30.0 + 6.0 * max(e.speed, 5.0)
        behind = (lon < -LENGTH / 2) & (np.abs(lat) < WIDTH)
        t = np.arange(steps + 1) * PLAN_DT
        for row, (length, width) in zip(a[near & ~behind], size[near & ~behind]):
            x, y, h, v = row
            tvo = pycrcc.TimeVariantCollisionObject(0)
            hl, hw = length / 2 + margin, width / 2 + margin
            for k in range(steps + 1):
                tvo.append_obstacle(pycrcc.RectOBB(hl, hw, h, x + np.cos(h) * v * t[k], y + np.sin(h) * v * t[k]))
            out.append(tvo)
    for box in obs.static_boxes:
        e1, e2 = box[1] - box[0], box[2] - box[1]
        cx, cy = box.mean(axis=0)
        out.append(pycrcc.RectOBB(np.linalg.norm(e1) / 2, np.linalg.norm(e2) / 2, float(np.arctan2(e1[1], e1[0])), cx, cy))
    return out
