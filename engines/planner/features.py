"""Ego-centric, normalised model inputs (Diffusion Planner's observation, scaled down).

Everything is expressed in the ego's frame at the current step (x forward, y left) and divided
by fixed scales, so the same code builds training samples and inference inputs:
- agents: the N_AGENTS nearest, 2 s of history every 0.2 s (x, y, cos, sin, vx, vy, valid) plus
  length, width and kind;
- static objects: the N_STATIC nearest boxes;
- lanes: the N_LANES nearest 30 m lane pieces (centre, direction, both boundaries, speed limit,
  on-route flag);
- route: N_ROUTE pieces of the route ahead;
- ego: current speed only (no history, acceleration or yaw rate: with them the model learns to
  continue what the ego is already doing instead of reacting to the scene, the copycat problem).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from .geometry import Polyline, to_local
from .planners.base import HISTORY_STEPS, Observation
from .scene import Scene

N_AGENTS = 24
N_NEIGHBORS = 6  # predicted jointly with the ego by the decoder
N_STATIC = 5
N_LANES = 20
N_ROUTE = 4
HIST_STRIDE = 2  # 2 s history sampled every 0.2 s
HIST_LEN = HISTORY_STEPS // HIST_STRIDE + 1
PIECE_LEN = 30.0
PIECE_PTS = 16
FUTURE_STEPS = 40  # 8 s every 0.2 s
FUTURE_DT = 0.2
POS_SCALE = 20.0
VEL_SCALE = 10.0
RADIUS = 80.0

AGENT_DIM = HIST_LEN * 7 + 5
STATIC_DIM = 6
LANE_DIM = PIECE_PTS * 8 + 2
ROUTE_DIM = PIECE_PTS * 4
EGO_DIM = 1
KINDS = ("vehicle", "pedestrian", "cyclist")


@dataclass
class Inputs:
    """One sample (or a batch, with a leading axis) of model inputs as NumPy arrays."""

    agents: np.ndarray  # (N_AGENTS, AGENT_DIM)
    agents_mask: np.ndarray  # (N_AGENTS,) bool, True = present
    statics: np.ndarray
    statics_mask: np.ndarray
    lanes: np.ndarray
    lanes_mask: np.ndarray
    route: np.ndarray
    route_mask: np.ndarray
    ego: np.ndarray  # (EGO_DIM,)
    neighbor_index: np.ndarray  # (N_NEIGHBORS,) index into the observation's agents, -1 = none
    neighbor_current: np.ndarray  # (N_NEIGHBORS, 4) x, y, cos, sin now (ego frame, metres)
    neighbor_size: np.ndarray  # (N_NEIGHBORS, 2)

    FIELDS = ("agents", "agents_mask", "statics", "statics_mask", "lanes", "lanes_mask", "route", "route_mask", "ego",
              "neighbor_index", "neighbor_current", "neighbor_size")


class FeatureBuilder:
    """Per-scene pre-computation (lane pieces) and per-step feature extraction."""

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        centers, lefts, rights, limits, piece_lane = [], [], [], [], []
        for lane in scene.lanes.values():
            n_pieces = max(1, int(np.ceil(lane.center.length / PIECE_LEN)))
            left, right = Polyline(lane.left), Polyline(lane.right)
            for k in range(n_pieces):
                s = np.linspace(k * PIECE_LEN, min((k + 1) * PIECE_LEN, lane.center.length), PIECE_PTS)
                c, _ = lane.center.interpolate(s)
                frac = s / max(lane.center.length, 1e-6)
                lp, _ = left.interpolate(frac * left.length)
                rp, _ = right.interpolate(frac * right.length)
                centers.append(c)
                lefts.append(lp)
                rights.append(rp)
                limits.append(lane.speed_limit)
                piece_lane.append(lane.id)
        self.centers = np.array(centers)
        self.lefts = np.array(lefts)
        self.rights = np.array(rights)
        self.limits = np.array(limits)
        self.piece_lane = np.array(piece_lane, dtype=object)
        self.on_route = self._on_route(scene)

    def _on_route(self, scene: Scene) -> np.ndarray:
        return np.isin(self.piece_lane, list(scene.scenario.route)).astype(float)

    def rerouted(self, scene: Scene) -> "FeatureBuilder":
        """These lane pieces for the same map with another route (``Scene.with_route``)."""
        other = copy.copy(self)
        other.scene = scene
        other.on_route = self._on_route(scene)
        return other

    def build(self, obs: Observation) -> Inputs:
        e = obs.ego
        origin = np.array([e.x, e.y])
        theta = e.heading
        c, s = np.cos(theta), np.sin(theta)

        # Agents --------------------------------------------------------------------------
        agents = np.zeros((N_AGENTS, AGENT_DIM), dtype=np.float32)
        agents_mask = np.zeros(N_AGENTS, dtype=bool)
        nb_index = np.full(N_NEIGHBORS, -1, dtype=np.int64)
        nb_current = np.zeros((N_NEIGHBORS, 4), dtype=np.float32)
        nb_size = np.zeros((N_NEIGHBORS, 2), dtype=np.float32)
        valid_now = obs.valid_now
        now = obs.agents_now
        dist = np.where(valid_now, np.linalg.norm(now[:, :2] - origin, axis=1), np.inf) if len(now) else np.zeros(0)
        order = np.argsort(dist)
        order = order[np.isfinite(dist[order]) & (dist[order] < RADIUS)][:N_AGENTS]
        if len(order):
            hist = obs.agent_history[order][:, ::-1][:, ::HIST_STRIDE][:, ::-1]  # (n, HIST_LEN, 4), last = now
            hv = obs.agent_valid[order][:, ::-1][:, ::HIST_STRIDE][:, ::-1]
            xy = to_local(hist[..., :2], origin, theta) / POS_SCALE
            h = hist[..., 2] - theta
            vx = hist[..., 3] * np.cos(h) / VEL_SCALE
            vy = hist[..., 3] * np.sin(h) / VEL_SCALE
            per_step = np.stack([xy[..., 0], xy[..., 1], np.cos(h), np.sin(h), vx, vy, hv.astype(float)], axis=-1)
            per_step *= hv[..., None]
            size = obs.agent_size[order]
            kind = np.array([[obs.agent_kinds[i] == k for k in KINDS] for i in order], dtype=float).reshape(len(order), 3)
            agents[: len(order)] = np.concatenate([per_step.reshape(len(order), -1), size / 5.0, kind], axis=1)
            agents_mask[: len(order)] = True
            m = min(N_NEIGHBORS, len(order))
            nb_index[:m] = order[:m]
            cur = to_local(now[order[:m], :2], origin, theta)
            hh = now[order[:m], 2] - theta
            nb_current[:m] = np.column_stack([cur, np.cos(hh), np.sin(hh)])
            nb_size[:m] = size[:m]

        # Static objects ------------------------------------------------------------------
        statics = np.zeros((N_STATIC, STATIC_DIM), dtype=np.float32)
        statics_mask = np.zeros(N_STATIC, dtype=bool)
        objs = obs.scene.scenario.static_objects
        if objs:
            pos = np.array([[o.x, o.y] for o in objs])
            d = np.linalg.norm(pos - origin, axis=1)
            idx = [i for i in np.argsort(d) if d[i] < RADIUS][:N_STATIC]
            for r, i in enumerate(idx):
                o = objs[i]
                p = to_local(np.array([o.x, o.y]), origin, theta) / POS_SCALE
                statics[r] = (p[0], p[1], np.cos(o.heading - theta), np.sin(o.heading - theta), o.length / 5.0, o.width / 5.0)
                statics_mask[r] = True

        # Lanes -----------------------------------------------------------------------------
        lanes = np.zeros((N_LANES, LANE_DIM), dtype=np.float32)
        lanes_mask = np.zeros(N_LANES, dtype=bool)
        dist = np.linalg.norm(self.centers - origin, axis=2).min(axis=1)
        idx = np.argsort(dist)
        idx = idx[dist[idx] < RADIUS][:N_LANES]
        if len(idx):
            cl = to_local(self.centers[idx], origin, theta)
            ll = to_local(self.lefts[idx], origin, theta)
            rl = to_local(self.rights[idx], origin, theta)
            direction = np.gradient(cl, axis=1)
            direction /= np.maximum(np.linalg.norm(direction, axis=2, keepdims=True), 1e-6)
            pts = np.concatenate([cl / POS_SCALE, direction, (ll - cl) / 5.0, (rl - cl) / 5.0], axis=2)
            lanes[: len(idx)] = np.concatenate([pts.reshape(len(idx), -1), self.limits[idx, None] / VEL_SCALE / 2, self.on_route[idx, None]], axis=1)
            lanes_mask[: len(idx)] = True

        # Route ahead ----------------------------------------------------------------------
        route = np.zeros((N_ROUTE, ROUTE_DIM), dtype=np.float32)
        route_mask = np.zeros(N_ROUTE, dtype=bool)
        path = obs.scene.route_path
        s0, _ = path.project(origin[None])
        for k in range(N_ROUTE):
            a = float(s0[0]) - 10.0 + k * PIECE_LEN
            if a > path.length:
                break
            ss = np.linspace(a, min(a + PIECE_LEN, path.length), PIECE_PTS)
            p, hd = path.interpolate(ss)
            loc = to_local(p, origin, theta) / POS_SCALE
            route[k] = np.column_stack([loc, np.cos(hd - theta), np.sin(hd - theta)]).reshape(-1)
            route_mask[k] = True

        ego = np.array([e.speed / VEL_SCALE], dtype=np.float32)
        return Inputs(agents, agents_mask, statics, statics_mask, lanes, lanes_mask, route, route_mask, ego, nb_index, nb_current, nb_size)


def future_in_ego_frame(origin: np.ndarray, theta: float, states: np.ndarray) -> np.ndarray:
    """(T, >=3) world x, y, heading -> (T, 4) ego-frame x, y, cos, sin."""
    xy = to_local(states[:, :2], origin, theta)
    h = states[:, 2] - theta
    return np.column_stack([xy, np.cos(h), np.sin(h)])


def stack_inputs(items: list[Inputs]) -> dict[str, np.ndarray]:
    return {f: np.stack([getattr(it, f) for it in items]) for f in Inputs.FIELDS}
