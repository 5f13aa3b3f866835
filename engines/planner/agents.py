"""Traffic agents in closed loop: reactive IDM along lane paths (with scripted braking and
lane changes), or log replay of recorded trajectories.

IDM (the spec's parameters): v0 from the lane's speed limit, minimum gap 1 m, headway 1.5 s,
a_max 1.0 m/s^2, comfortable braking 2.0 m/s^2, exponent 4. The leader is whatever box (agent,
ego or static object) overlaps the agent's corridor ahead on its path, so crossing traffic and
the ego are seen as well as vehicles in the lane.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .geometry import Polyline, box_corners, wrap_angle
from .scenario import Agent, Event, Scenario
from .scene import Scene


@dataclass(frozen=True)
class IDMParams:
    min_gap: float = 1.0
    headway: float = 1.5
    a_max: float = 1.0
    b_comf: float = 2.0
    exponent: float = 4.0
    max_brake: float = 8.0
    stopped_gap: float = 0.0  # extra gap behind a standing leader, fading out by 2 m/s (the expert's)


IDM = IDMParams()


def idm_accel(v: np.ndarray, v0: np.ndarray, gap: np.ndarray, dv: np.ndarray, p: IDMParams = IDM) -> np.ndarray:
    """IDM acceleration; gap = bumper-to-bumper distance to the leader (inf when none), dv = v - v_leader."""
    v = np.asarray(v, dtype=float)
    v0 = np.maximum(np.asarray(v0, dtype=float), 0.1)
    s_star = p.min_gap + np.maximum(0.0, v * p.headway + v * dv / (2.0 * np.sqrt(p.a_max * p.b_comf)))
    free = 1.0 - (v / v0) ** p.exponent
    interaction = np.where(np.isfinite(gap), (s_star / np.maximum(gap, 0.1)) ** 2, 0.0)
    return np.clip(p.a_max * (free - interaction), -p.max_brake, p.a_max)


def lookahead(v: float) -> float:
    return 12.0 + 3.0 * v + v * v / (2 * IDM.b_comf) * 0.5


@dataclass
class _Track:
    """Runtime state of one agent."""

    spec: Agent
    mode: str  # "idm" | "replay"
    path: Polyline | None
    path_pts: np.ndarray | None  # path resampled every metre
    s: float = 0.0
    d: float = 0.0
    v: float = 0.0
    d_rate: float = 0.0
    brake: Event | None = None
    lane_change_until: float = -1.0
    v0_override: float | None = None
    limits: np.ndarray | None = None  # speed limit per metre of the path


class AgentSim:
    """All agents of a scenario, stepped together at the scenario's dt."""

    def __init__(self, scene: Scene, reactive: bool) -> None:
        self.scene = scene
        sc: Scenario = scene.scenario
        self.dt = sc.dt
        self.reactive = reactive
        self.specs = list(sc.agents)
        n = len(self.specs)
        self.ids = np.array([a.id for a in self.specs], dtype=int)
        self.length = np.array([a.length for a in self.specs], dtype=float)
        self.width = np.array([a.width for a in self.specs], dtype=float)
        self.kind = [a.kind for a in self.specs]
        self.state = np.zeros((n, 4))  # x, y, heading, speed
        self.active = np.zeros(n, dtype=bool)
        self.tracks: list[_Track] = []
        self.step_index = 0
        for i, agent in enumerate(self.specs):
            x, y, h, v = agent.history[-1]
            self.state[i] = (x, y, h, v)
            self.active[i] = agent.start_step == 0
            if reactive or not agent.trajectory:
                tr = _Track(agent, "idm", None, None, v=float(v))
                self._set_path(tr, agent.route or scene.default_agent_route(agent))
                assert tr.path is not None
                s, d = tr.path.project(np.array([[x, y]]))
                tr.s, tr.d = float(s[0]), float(d[0])
                self.tracks.append(tr)
            else:
                self.tracks.append(_Track(agent, "replay", None, None))
        statics = sc.static_objects
        self.static_boxes = (
            box_corners([o.x for o in statics], [o.y for o in statics], [o.heading for o in statics], [o.length for o in statics], [o.width for o in statics])
            if statics else np.zeros((0, 4, 2))
        )

    def place(self, i: int, x: float, y: float, heading: float | None = None, speed: float | None = None) -> None:
        """Move agent i (e.g. dragged in the panel); from here it drives reactively along its lane."""
        h = float(self.state[i, 2] if heading is None else heading)
        v = float(self.state[i, 3] if speed is None else speed)
        tr = self.tracks[i]
        if tr.mode != "idm":
            spec = tr.spec
            moved = Agent(spec.id, spec.kind, spec.length, spec.width, ((x, y, h, v),))
            tr.mode = "idm"
            self._set_path(tr, self.scene.default_agent_route(moved))
        else:
            lid = self.scene.closest_lane(np.array([x, y]), h)
            self._set_path(tr, self.scene.default_agent_route(Agent(tr.spec.id, "vehicle", 4.0, 2.0, ((x, y, h, v),), route=(lid,))))
        assert tr.path is not None
        s, d = tr.path.project(np.array([[x, y]]))
        tr.s, tr.d, tr.v = float(s[0]), float(d[0]), v
        tr.brake, tr.v0_override, tr.lane_change_until = None, None, -1.0
        self.state[i] = (x, y, h, v)
        self.active[i] = True

    def corners(self) -> np.ndarray:
        s = self.state
        return box_corners(s[:, 0], s[:, 1], s[:, 2], self.length, self.width)

    def step(self, ego: np.ndarray | None, ego_size: tuple[float, float]) -> None:
        """Advance one dt. ``ego`` = (x, y, heading, speed) of the ego (None: ego not in the world)."""
        n_next = self.step_index + 1
        t_now = self.step_index * self.dt
        new_state = self.state.copy()
        new_active = self.active.copy()
        idm_rows = []
        for i, tr in enumerate(self.tracks):
            spec = tr.spec
            if n_next < spec.start_step:
                continue
            if n_next == spec.start_step:
                new_state[i] = spec.history[-1]
                new_active[i] = True
                continue
            if tr.mode == "replay":
                k = n_next - spec.start_step - 1
                new_active[i] = k < len(spec.trajectory)
                if new_active[i]:
                    new_state[i] = spec.trajectory[k]
                continue
            if self.active[i]:
                self._events(tr, t_now)
                idm_rows.append(i)
        if idm_rows:
            rows = np.array(idm_rows)
            boxes = np.concatenate([self.corners(), self._ego_box(ego, ego_size), self.static_boxes])
            sv = np.concatenate([self.state[:, [3, 2]], np.zeros((1 if ego is not None else 0, 2)), np.zeros((len(self.static_boxes), 2))])
            if ego is not None:
                sv[len(self.state)] = (ego[3], ego[2])
            present = np.concatenate([self.active, np.ones(len(boxes) - len(self.state), dtype=bool)])
            gaps, v_lead = self._leaders(rows, boxes, sv, present)
            for r, i in enumerate(rows):
                new_state[i], new_active[i] = self._move(self.tracks[i], i, gaps[r], v_lead[r])
        self.state = new_state
        self.active = new_active
        self.step_index += 1

    @staticmethod
    def _ego_box(ego: np.ndarray | None, size: tuple[float, float]) -> np.ndarray:
        if ego is None:
            return np.zeros((0, 4, 2))
        return box_corners(ego[0], ego[1], ego[2], size[0], size[1])[None]

    def _events(self, tr: _Track, t: float) -> None:
        for ev in tr.spec.events:
            if t - self.dt / 2 <= ev.time < t + self.dt / 2 or (t < self.dt / 2 and ev.time < t):
                if ev.action == "brake":
                    tr.brake = ev
                elif ev.action == "lane_change" and ev.lane in self.scene.lanes:
                    self._change_lane(tr, ev)

    def _change_lane(self, tr: _Track, ev: Event) -> None:
        scene = self.scene
        route = [ev.lane]
        total = scene.lanes[ev.lane].center.length
        while total < 600 and scene.lanes[route[-1]].successors:
            route.append(scene.lanes[route[-1]].successors[0])
            total += scene.lanes[route[-1]].center.length
        assert tr.path is not None
        xy, _ = tr.path.interpolate(np.array([tr.s]))
        heading = tr.path.heading_at(np.array([tr.s]))[0]
        normal = np.array([-np.sin(heading), np.cos(heading)])
        pos = xy[0] + tr.d * normal
        self._set_path(tr, tuple(route))
        s, d = tr.path.project(pos[None])
        tr.s, tr.d = float(s[0]), float(d[0])
        tr.lane_change_until = ev.time + ev.duration
        tr.d_rate = -tr.d / max(ev.duration, 0.5)

    def _set_path(self, tr: _Track, route: tuple[str, ...]) -> None:
        tr.path = self.scene.lane_path(route)
        tr.path_pts = tr.path.resample(1.0)
        limits = np.concatenate([np.full(max(1, int(np.ceil(self.scene.lanes[l].center.length))), self.scene.lanes[l].speed_limit) for l in route])
        tr.limits = limits

    def _leaders(self, rows: np.ndarray, boxes: np.ndarray, sv: np.ndarray, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gap to and along-path speed of each IDM agent's leader, all agents at once."""
        n_rows = len(rows)
        gaps = np.full(n_rows, np.inf)
        v_lead = np.zeros(n_rows)
        centers = boxes.mean(axis=1)
        pos = self.state[rows, :2]
        look = np.array([lookahead(self.tracks[i].v) for i in rows])
        dist = np.linalg.norm(centers[None] - pos[:, None], axis=2)
        heading = self.state[rows, 2]
        fwd = (centers[None, :, 0] - pos[:, None, 0]) * np.cos(heading)[:, None] + (centers[None, :, 1] - pos[:, None, 1]) * np.sin(heading)[:, None]
        cand = present[None] & (dist < look[:, None] + 15.0) & (fwd > -8.0)
        cand[np.arange(n_rows), rows] = False
        pr, pk = np.nonzero(cand)
        if len(pr) == 0:
            return gaps, v_lead
        win_len = int(min(max(look.max(), 10.0) + 12.0, 160.0))
        wins = np.zeros((n_rows, win_len, 2))
        starts = np.zeros(n_rows)
        for r, i in enumerate(rows):
            tr = self.tracks[i]
            i0 = int(np.clip(np.floor(tr.s), 0, len(tr.path_pts) - 2))
            seg = tr.path_pts[i0: i0 + win_len]
            if len(seg) < win_len:  # extend straight beyond the path's end
                tail_dir = tr.path_pts[-1] - tr.path_pts[-2]
                extra = tr.path_pts[-1] + np.outer(np.arange(1, win_len - len(seg) + 1), tail_dir)
                seg = np.concatenate([seg, extra])
            wins[r] = seg
            starts[r] = i0
        dirs = np.diff(wins, axis=1)
        dirs = np.concatenate([dirs, dirs[:, -1:]], axis=1)
        dirs /= np.maximum(np.linalg.norm(dirs, axis=2, keepdims=True), 1e-9)
        w = wins[pr]  # (P, W, 2)
        c = boxes[pk]  # (P, 4, 2)
        rel = c[:, :, None, :] - w[:, None, :, :]  # (P, 4, W, 2)
        j = np.argmin((rel**2).sum(-1), axis=2)  # (P, 4)
        pi = np.arange(len(pr))[:, None]
        r_sel = rel[pi, np.arange(4)[None], j]
        d_sel = dirs[pr[:, None], j]
        s_c = starts[pr][:, None] + j + (r_sel * d_sel).sum(-1)
        d_c = d_sel[..., 0] * r_sel[..., 1] - d_sel[..., 1] * r_sel[..., 0]
        s_self = np.array([self.tracks[i].s for i in rows])[pr]
        d_self = np.array([self.tracks[i].d for i in rows])[pr]
        half = self.width[rows][pr] / 2 + 0.3
        length = self.length[rows][pr]
        lateral = (d_c.max(1) >= d_self - half) & (d_c.min(1) <= d_self + half)
        ahead = s_c.min(1) > s_self + length / 2 - 0.5
        far_end = (j >= win_len - 1).all(1)
        ok = lateral & ahead & ~far_end
        gap = np.where(ok, s_c.min(1) - (s_self + length / 2), np.inf)
        path_dir = d_sel[:, 0]
        v_along = np.maximum(0.0, sv[pk, 0] * np.cos(sv[pk, 1] - np.arctan2(path_dir[:, 1], path_dir[:, 0])))
        order = np.lexsort((gap, pr))
        first = np.ones(len(order), dtype=bool)
        first[1:] = pr[order][1:] != pr[order][:-1]
        best = order[first]
        gaps[pr[best]] = np.maximum(gap[best], 0.0)
        v_lead[pr[best]] = np.where(np.isfinite(gap[best]), v_along[best], 0.0)
        return gaps, v_lead

    def _move(self, tr: _Track, i: int, gap: float, v_lead: float) -> tuple[np.ndarray, bool]:
        assert tr.path is not None and tr.limits is not None
        t_next = (self.step_index + 1) * self.dt
        limit = tr.limits[int(np.clip(tr.s, 0, len(tr.limits) - 1))] if tr.v0_override is None else tr.v0_override
        a = float(idm_accel(tr.v, limit, gap, tr.v - v_lead))
        if tr.brake is not None:
            if tr.v > tr.brake.speed + 1e-3:
                a = min(a, -tr.brake.decel)
            else:
                tr.v0_override = max(tr.brake.speed, 0.0)
                tr.brake = None
        v_new = max(0.0, tr.v + a * self.dt)
        if tr.v0_override == 0.0 and tr.brake is None:
            v_new = 0.0
        tr.s += 0.5 * (tr.v + v_new) * self.dt
        tr.v = v_new
        # Lateral offset: scripted lane changes move at d_rate; otherwise drift back to the lane centre.
        if t_next <= tr.lane_change_until + 1e-9:
            tr.d += tr.d_rate * self.dt
        else:
            tr.d_rate = -tr.d / 2.0
            tr.d += tr.d_rate * self.dt
        if tr.s > tr.path.length + self.length[i]:
            return self.state[i], False
        xy, heading = tr.path.interpolate(np.array([tr.s]))
        h = float(heading[0])
        pos = xy[0] + tr.d * np.array([-np.sin(h), np.cos(h)])
        slip = np.arctan2(tr.d_rate, max(tr.v, 1.0))
        return np.array([pos[0], pos[1], float(wrap_angle(h + slip)), tr.v]), True
