"""PDM-Closed-like planner: IDM proposals at several target speeds and lateral offsets of the
route's centre line, each rolled through the tracker and bicycle model and scored by a
vectorised form of the closed-loop metric against constant-velocity forecasts; the best
proposal is executed."""
from __future__ import annotations

import numpy as np

from ..geometry import box_corners, boxes_overlap
from ..metrics import TH, WEIGHTS
from ..scene import Scene
from ..vehicle import LENGTH, REAR_TO_CENTER, WIDTH
from .base import PLAN_DT, PLAN_STEPS, Observation, Plan
from .corridor import PathFrame, change_leaders, forecast_obstacles, idm_profile, path_plan, project_corners
from .rules import blend_length, lane_offset_ok

SPEED_FRACTIONS = (0.2, 0.4, 0.6, 0.8, 1.0)
OFFSETS = (-1.0, 0.0, 1.0)


def agent_forecast_boxes(obs: Observation, times: np.ndarray, radius: float = 100.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Constant-velocity boxes (M, T, 4, 2) of the agents near the ego, their states now (M, 4) and sizes (M, 2)."""
    a = obs.agents_now[obs.valid_now]
    size = obs.agent_size[obs.valid_now]
    near = np.linalg.norm(a[:, :2] - np.array([obs.ego.x, obs.ego.y]), axis=1) < radius if len(a) else np.zeros(0, dtype=bool)
    a, size = a[near], size[near]
    x = a[:, None, 0] + np.cos(a[:, None, 2]) * a[:, None, 3] * times[None]
    y = a[:, None, 1] + np.sin(a[:, None, 2]) * a[:, None, 3] * times[None]
    boxes = box_corners(x, y, np.broadcast_to(a[:, None, 2], x.shape), size[:, None, 0], size[:, None, 1])
    return boxes.reshape(len(a), len(times), 4, 2), a, size


def score_proposals(obs: Observation, scene: Scene, trajs: np.ndarray, progress: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The CLS terms of P proposals (P, T+1, 4) at PLAN_DT over their horizon; returns scores (P,) and terms.

    ``progress``: metres each proposal advances along the route. Forecasts are constant velocity.
    """
    p, t1, _ = trajs.shape
    times = np.arange(t1) * PLAN_DT
    ego_boxes = box_corners(trajs[..., 0], trajs[..., 1], trajs[..., 2], LENGTH, WIDTH)  # (P, T, 4, 2)
    agent_boxes, agents, size = agent_forecast_boxes(obs, times)
    m = len(agents)

    # At-fault collisions: overlaps with an agent that is not behind the ego, while the ego moves.
    no_collision = np.ones(p)
    if m:
        hit = boxes_overlap(ego_boxes[:, :, None], agent_boxes.transpose(1, 0, 2, 3)[None])  # (P, T, M)
        if hit.any():
            ax = agents[:, 0][None, None] + np.cos(agents[:, 2])[None, None] * agents[:, 3][None, None] * times[None, :, None]
            ay = agents[:, 1][None, None] + np.sin(agents[:, 2])[None, None] * agents[:, 3][None, None] * times[None, :, None]
            dx, dy = ax - trajs[..., 0:1], ay - trajs[..., 1:2]
            lon = dx * np.cos(trajs[..., 2:3]) + dy * np.sin(trajs[..., 2:3])
            fault = hit & (lon > -REAR_TO_CENTER) & (trajs[..., 3:4] > TH.stopped_speed)
            no_collision = np.where(fault.any(axis=(1, 2)), 0.0, 1.0)
    if len(obs.static_boxes):
        shit = boxes_overlap(ego_boxes[:, :, None], obs.static_boxes[None, None]).any(axis=1).sum(axis=1)
        no_collision = np.minimum(no_collision, np.maximum(0.0, 1.0 - 0.5 * shit))

    outside = scene.distance_outside(ego_boxes[:, ::2]).max(axis=(1, 2))  # exact (shapely), every 0.2 s
    drivable = (outside <= TH.drivable_tolerance).astype(float)

    best = progress.max()
    ratio = progress / best if best > TH.min_expert_progress else np.ones(p)
    making = (ratio >= TH.making_progress_ratio).astype(float)

    # TTC: the ego keeps its velocity for < 0.95 s from every other step; agents keep theirs.
    ttc = np.ones(p)
    if m:
        taus = np.array([0.3, 0.6, 0.9])
        ks = np.arange(0, t1, 2)
        e = trajs[:, ks]  # (P, K, 4)
        ex = e[..., 0:1] + np.cos(e[..., 2:3]) * e[..., 3:4] * taus
        ey = e[..., 1:2] + np.sin(e[..., 2:3]) * e[..., 3:4] * taus
        eb = box_corners(ex, ey, np.broadcast_to(e[..., 2:3], ex.shape), LENGTH, WIDTH)  # (P, K, 3, 4, 2)
        tt = times[ks][:, None] + taus[None]  # (K, 3)
        ax = agents[:, 0] + np.cos(agents[:, 2]) * agents[:, 3] * tt[..., None]
        ay = agents[:, 1] + np.sin(agents[:, 2]) * agents[:, 3] * tt[..., None]
        ab = box_corners(ax, ay, np.broadcast_to(agents[:, 2], ax.shape), size[:, 0], size[:, 1])
        overlap = boxes_overlap(eb[:, :, :, None], ab[None])  # (P, K, 3, M)
        now_hit = boxes_overlap(ego_boxes[:, ks][:, :, None], agent_boxes[:, ks].transpose(1, 0, 2, 3)[None])  # (P, K, M)
        rel_lon = (ax[:, 0][None] - e[..., 0:1]) * np.cos(e[..., 2:3]) + (ay[:, 0][None] - e[..., 1:2]) * np.sin(e[..., 2:3])
        relevant = (rel_lon > -REAR_TO_CENTER) & ~now_hit & (e[..., 3:4] > TH.stopped_speed)
        ttc = np.where((overlap.any(axis=2) & relevant).any(axis=(1, 2)), 0.0, 1.0)

    limits = scene.route_speed_limit(PathFrame.at(scene.route_path, trajs[0, 0, :2]).s0 + np.zeros(1))[0]
    over = np.maximum(0.0, trajs[..., 3] - limits).mean(axis=1)
    speed = np.maximum(0.0, 1.0 - over / TH.max_overspeed)

    comfort = _comfort(trajs)
    mult = no_collision * drivable * making
    weighted = (WEIGHTS["progress"] * np.minimum(ratio, 1.0) + WEIGHTS["ttc"] * ttc + WEIGHTS["speed_limit"] * speed + WEIGHTS["comfort"] * comfort) / sum(WEIGHTS.values())
    terms = {"no_at_fault_collisions": no_collision, "drivable_area_compliance": drivable, "making_progress": making,
             "progress": ratio, "ttc": ttc, "speed_limit": speed, "comfort": comfort, "weighted": weighted, "outside": outside}
    return mult * weighted, terms


def _comfort(trajs: np.ndarray) -> np.ndarray:
    """1 where a proposal stays inside nuPlan's comfort bounds (finite differences at PLAN_DT)."""
    dt = PLAN_DT
    v = trajs[..., 3]
    h = np.unwrap(trajs[..., 2], axis=1)
    acc = np.gradient(v, dt, axis=1)
    jerk = np.gradient(acc, dt, axis=1)
    yaw = np.gradient(h, dt, axis=1)
    yaw_acc = np.gradient(yaw, dt, axis=1)
    lat = v * yaw
    ok = (
        (acc >= TH.lon_acc[0]) & (acc <= TH.lon_acc[1]) & (np.abs(lat) <= TH.lat_acc) & (np.abs(jerk) <= TH.jerk)
        & (np.abs(yaw) <= TH.yaw_rate) & (np.abs(yaw_acc) <= TH.yaw_acc)
    )
    return ok[:, 1:-1].all(axis=1).astype(float)


def simulate_proposals(obs: Observation, trajs: np.ndarray) -> np.ndarray:
    """Roll every proposal through the tracker and kinematic bicycle (vectorised), as PDM-Closed
    does, so the scores see what the ego would really drive (cut corners, lag in speed)."""
    from ..vehicle import MAX_STEER, MAX_STEER_RATE, ACCEL_LIMITS, WHEELBASE, REAR_TO_CENTER

    p, t1, _ = trajs.shape
    e = obs.ego
    x = np.full(p, e.x)
    y = np.full(p, e.y)
    h = np.full(p, e.heading)
    v = np.full(p, e.speed)
    steer = np.full(p, e.steering)
    out = np.empty_like(trajs)
    out[:, 0] = trajs[:, 0]
    out[:, 0, 3] = e.speed
    rows = np.arange(p)
    rear_ref = trajs[..., :2] - REAR_TO_CENTER * np.stack([np.cos(trajs[..., 2]), np.sin(trajs[..., 2])], axis=-1)
    for k in range(t1 - 1):
        lead = min(k + 5, t1 - 1)
        v_ref = trajs[:, lead, 3]
        a_ff = (trajs[:, min(k + 1, t1 - 1), 3] - trajs[:, k, 3]) / PLAN_DT
        acc = np.clip(0.5 * a_ff + 1.2 * (v_ref - v), *ACCEL_LIMITS)
        rx, ry = x - REAR_TO_CENTER * np.cos(h), y - REAR_TO_CENTER * np.sin(h)
        look = np.clip(3.0 + 0.5 * v, 4.0, 14.0)
        d = np.hypot(rear_ref[:, k:, 0] - rx[:, None], rear_ref[:, k:, 1] - ry[:, None])
        beyond = d >= look[:, None]
        idx = np.where(beyond.any(axis=1), beyond.argmax(axis=1), d.shape[1] - 1) + k
        tx, ty = rear_ref[rows, idx, 0] - rx, rear_ref[rows, idx, 1] - ry
        ly = -np.sin(h) * tx + np.cos(h) * ty
        curv = 2.0 * ly / np.maximum(tx * tx + ty * ty, 1e-6)
        target = np.clip(np.arctan(WHEELBASE * curv), -MAX_STEER, MAX_STEER)
        steer = steer + np.clip(target - steer, -MAX_STEER_RATE * PLAN_DT, MAX_STEER_RATE * PLAN_DT)
        v_new = np.maximum(0.0, v + acc * PLAN_DT)
        v_mid = 0.5 * (v + v_new)
        yaw = v_mid * np.tan(steer) / WHEELBASE
        hm = h + 0.5 * yaw * PLAN_DT
        rx = rx + v_mid * np.cos(hm) * PLAN_DT
        ry = ry + v_mid * np.sin(hm) * PLAN_DT
        h = h + yaw * PLAN_DT
        v = v_new
        x, y = rx + REAR_TO_CENTER * np.cos(h), ry + REAR_TO_CENTER * np.sin(h)
        out[:, k + 1] = np.column_stack([x, y, h, v])
    return out


class PDMPlanner:
    """PDM-Closed-like: score IDM proposals with the metric, execute the best."""

    name = "pdm"

    def __init__(self, speed_fractions: tuple[float, ...] = SPEED_FRACTIONS, offsets: tuple[float, ...] = OFFSETS, lane_offsets: bool = True) -> None:
        self.speed_fractions = speed_fractions
        self.offsets = offsets
        self.lane_offsets = lane_offsets

    def reset(self, scene: Scene) -> None:
        self.scene = scene
        self.target = 0.0

    def proposals(self, obs: Observation) -> tuple[np.ndarray, np.ndarray, list[float]]:
        """Trajectories (P, T+1, 4), their progress (P,) and lateral offsets (P,)."""
        e = obs.ego
        scene = self.scene
        frame = PathFrame.at(scene.route_path, np.array([e.x, e.y]))
        obstacles = forecast_obstacles(obs, PLAN_STEPS * PLAN_DT, step=PLAN_STEPS * PLAN_DT)
        reach = 20.0 + 4.0 * max(e.speed, 5.0)
        offsets = list(self.offsets)
        if self.lane_offsets:
            width = scene.lanes[scene.closest_lane(np.array([e.x, e.y]), e.heading)].width
            offsets += [o for o in (-width, width) if lane_offset_ok(scene, frame, o, 60.0)]
        blend = blend_length(e.speed)
        limit = float(scene.route_speed_limit(frame.s0))
        proj = project_corners(frame, obstacles.corners[:, :1], reach)
        leads = [change_leaders(frame, obstacles, c, reach, False, blend, e.speed, proj) for c in offsets]
        m = max(len(v) for _, v in leads)
        nf = len(self.speed_fractions)
        tf = leads[0][0].shape[1]
        s_lead = np.full((len(offsets) * nf, m, tf), np.inf)
        v_lead = np.zeros((len(offsets) * nf, m))
        for i, (sl, vl) in enumerate(leads):
            s_lead[i * nf: (i + 1) * nf, : len(vl)] = sl
            v_lead[i * nf: (i + 1) * nf, : len(vl)] = vl
        v_target = np.tile(np.array(self.speed_fractions) * limit, len(offsets))
        s_prof, _ = idm_profile(frame.s0, e.speed, v_target, s_lead, v_lead, PLAN_STEPS, s_stop=scene.route_path.length - 1.0)
        start = np.array([e.x, e.y])
        trajs = np.stack([
            path_plan(frame, s_prof[i], frame.d0, offsets[i // nf], blend, start, e.heading) for i in range(len(v_target))
        ])
        lat = [offsets[i // nf] for i in range(len(v_target))]
        return trajs, s_prof[:, -1] - frame.s0, lat

    def plan(self, obs: Observation) -> Plan:
        trajs, progress, lat = self.proposals(obs)
        driven = simulate_proposals(obs, trajs)
        s_end, _ = self.scene.route_path.project(driven[:, -1, :2])
        s_now, _ = self.scene.route_path.project(driven[:1, 0, :2])
        scores, terms = score_proposals(obs, self.scene, driven, s_end - s_now[0])
        # Ties: keep the current lateral target, then go faster. When every proposal breaks a
        # multiplier, take the least bad: fewest broken multipliers, then the weighted terms.
        broken = (terms["no_at_fault_collisions"] < 1).astype(float) + (terms["drivable_area_compliance"] < 1) + (terms["making_progress"] < 1)
        fallback = 1e-2 * (terms["weighted"] - broken - 0.1 * np.maximum(terms["outside"], 0.0))
        key = scores + (fallback if scores.max() <= 0 else 0.0) - 1e-3 * np.abs(np.array(lat) - self.target) + 1e-6 * progress
        best = int(np.argmax(key))
        self.target = lat[best]
        return Plan(trajs[best], samples=trajs[..., :2], chosen=best, info={"scores": scores, "lane_offset": self.target})
