"""Path-following building blocks of the rule-based planners: which boxes occupy the corridor
ahead on a path (now or as forecast), an IDM speed profile along it, and the plan it gives."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..agents import IDM, IDMParams
from ..geometry import Polyline, box_corners, wrap_angle
from ..vehicle import LENGTH, WIDTH
from .base import PLAN_DT, Observation


@dataclass
class PathFrame:
    """A path resampled every metre, with the ego's arc length and lateral offset on it."""

    path: Polyline
    pts: np.ndarray
    s0: float
    d0: float

    @classmethod
    def at(cls, path: Polyline, xy: np.ndarray) -> "PathFrame":
        s, d = path.project(np.asarray(xy, dtype=float)[None])
        return cls(path, path.resample(1.0), float(s[0]), float(d[0]))

    def project(self, points: np.ndarray, s_lo: float, s_hi: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Arc length, lateral offset and 'inside the window' of points (..., 2) on [s_lo, s_hi]."""
        step = self.path.length / max(len(self.pts) - 1, 1)
        i0 = int(np.clip(np.floor(s_lo / step), 0, len(self.pts) - 2))
        i1 = int(np.clip(np.ceil(s_hi / step) + 1, i0 + 2, len(self.pts)))
        win = self.pts[i0:i1]
        seg = np.diff(win, axis=0)
        seg_len = np.maximum(np.linalg.norm(seg, axis=1), 1e-9)
        dirs = np.concatenate([seg / seg_len[:, None], seg[-1:] / seg_len[-1]], axis=0)
        p = np.asarray(points, dtype=float)
        shape = p.shape[:-1]
        p = p.reshape(-1, 2)
        rel = p[:, None, :] - win[None]
        j = np.argmin((rel**2).sum(-1), axis=1)
        r = rel[np.arange(len(j)), j]
        dj = dirs[j]
        s = (i0 + j) * step + (r * dj).sum(-1)
        d = dj[:, 0] * r[:, 1] - dj[:, 1] * r[:, 0]
        inside = (j > 0) & (j < len(win) - 1) | (np.abs((r * dj).sum(-1)) < step)
        return s.reshape(shape), d.reshape(shape), inside.reshape(shape)


Projection = tuple[np.ndarray, np.ndarray, np.ndarray]


def project_corners(frame: PathFrame, corners: np.ndarray, reach: float) -> Projection:
    """Arc length, lateral offset and 'inside the window' of box corners (..., 4, 2): computed once
    per plan and shared by every lateral band that is tested."""
    return frame.project(corners, frame.s0 - 10.0, frame.s0 + reach)


def corridor_hits(proj: Projection, d_lo: float, d_hi: float) -> np.ndarray:
    """Nearest arc length of projected boxes inside the lateral band [d_lo, d_hi]; inf if not in it."""
    s, d, inside = proj
    lat = (d.max(-1) >= d_lo) & (d.min(-1) <= d_hi)
    ok = lat & inside.any(-1)
    return np.where(ok, s.min(-1), np.inf)


@dataclass
class Obstacles:
    """Boxes the ego must not drive into: agents (with constant-velocity forecasts) and static objects."""

    corners: np.ndarray  # (M, Tc, 4, 2) forecast corners at times ``times``
    speed: np.ndarray  # (M,)
    heading: np.ndarray  # (M,)
    times: np.ndarray  # (Tc,)


def forecast_obstacles(obs: Observation, horizon: float, step: float = 0.5, radius: float = 120.0) -> Obstacles:
    """Constant-velocity forecasts of the agents near the ego, plus static objects (Tc samples)."""
    times = np.arange(0.0, horizon + 1e-9, step)
    a = obs.agents_now[obs.valid_now]
    size = obs.agent_size[obs.valid_now]
    ego_xy = np.array([obs.ego.x, obs.ego.y])
    near = np.linalg.norm(a[:, :2] - ego_xy, axis=1) < radius if len(a) else np.zeros(0, dtype=bool)
    a, size = a[near], size[near]
    x = a[:, None, 0] + np.cos(a[:, None, 2]) * a[:, None, 3] * times[None]
    y = a[:, None, 1] + np.sin(a[:, None, 2]) * a[:, None, 3] * times[None]
    corners = box_corners(x, y, np.broadcast_to(a[:, None, 2], x.shape), size[:, None, 0], size[:, None, 1])
    statics = obs.static_boxes
    if len(statics):
        corners = np.concatenate([corners, np.broadcast_to(statics[:, None], (len(statics), len(times), 4, 2))])
    speed = np.concatenate([a[:, 3], np.zeros(len(statics))])
    heading = np.concatenate([a[:, 2], np.zeros(len(statics))])
    return Obstacles(corners.reshape(-1, len(times), 4, 2), speed, heading, times)


def leaders_on_path(frame: PathFrame, obstacles: Obstacles, d_band: tuple[float, float], reach: float, forecast: bool,
                    ego_speed: float = 0.0, proj: Projection | None = None,
                    ego_s: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Leading-obstacle arc length per fine step and its along-path speed.

    forecast=False (IDM planner): only the present occupancy counts, moved along the path at the
    obstacle's along-path speed. forecast=True (expert): forecasts count too (cut-ins), and a
    crossing obstacle blocks its crossing point until 1 s after it left unless the ego, at its
    current speed, clears the point a second before the obstacle arrives.
    ``d_band``: the lateral offsets the ego sweeps (now and target); the corridor is that band
    widened by half the ego's width plus 0.3 m. Returns s_lead (M, Tf) and v_lead (M,) for
    Tf = horizon / PLAN_DT + 1 fine steps. ``proj``: the obstacles' corners already projected.
    ``ego_s``: the ego's planned arc length per fine step; given, an obstacle that would enter the
    corridor beside the ego on that plan blocks its entry point until it is in (gap acceptance).
    """
    half = WIDTH / 2 + 0.3
    d_lo, d_hi = min(d_band) - half, max(d_band) + half
    times = obstacles.times
    m = len(obstacles.speed)
    tf = np.arange(0.0, times[-1] + 1e-9, PLAN_DT)
    if m == 0:
        return np.full((0, len(tf)), np.inf), np.zeros(0)
    if proj is None:
        proj = project_corners(frame, obstacles.corners if forecast else obstacles.corners[:, :1], reach)
    if not forecast:
        s_now = corridor_hits(proj, d_lo, d_hi)[:, 0]
        path_h = frame.path.heading_at(np.clip(np.where(np.isfinite(s_now), s_now, frame.s0), 0, frame.path.length))
        v_along = np.maximum(0.0, obstacles.speed * np.cos(wrap_angle(obstacles.heading - path_h)))
        return s_now[:, None] + v_along[:, None] * tf[None], v_along
    s_all = corridor_hits(proj, d_lo, d_hi)  # (M, Tc)
    s_front = np.where(np.isfinite(s_all), proj[0].max(-1), -np.inf)
    # Does the obstacle move along the path where it occupies it, or across it?
    h_at = frame.path.heading_at(np.clip(np.where(np.isfinite(s_all), s_all, frame.s0), 0, frame.path.length))
    cos_rel = np.cos(wrap_angle(obstacles.heading[:, None] - h_at))
    along = (cos_rel > 0.7) | (obstacles.speed[:, None] < 0.5)
    out = np.full((m, len(tf)), np.inf)
    v_out = np.zeros(m)
    for k in range(m):
        occ = np.isfinite(s_all[k])
        if not occ.any():
            continue
        with_along = occ & along[k]
        if with_along.any():  # a leader (also one cutting in later): interpolate its arc length
            t_in, t_out = times[with_along].min(), times[with_along].max()
            s_f = np.interp(tf, times[with_along], s_all[k][with_along])
            v_k = max(0.0, float(obstacles.speed[k] * cos_rel[k][with_along][0]))
            s_f = np.where(tf > t_out, s_f + v_k * (tf - t_out), s_f)
            out[k] = np.where(tf >= t_in - 0.5, s_f, np.inf)
            v_out[k] = v_k
            i_in = int(np.argmax(with_along))
            if ego_s is not None and t_in > 0.0 and not _enters_clear(
                    float(np.interp(t_in, tf[: len(ego_s)], ego_s)), s_all[k, i_in], s_front[k, i_in], v_k):
                # Gap acceptance: it enters the corridor beside the ego (the ego's route merging into
                # its lane, or it cutting in alongside): wait at its entry point until it is in.
                out[k] = np.where(tf < t_in - 0.5, s_all[k, i_in], out[k])
                v_out[k] = 0.0
        crossing = occ & ~along[k]
        if crossing.any():
            # Crossing: go first only if the ego clears the point well before it arrives;
            # otherwise yield (the point is blocked from now until 1 s after it has left).
            first, last = times[crossing].min(), times[crossing].max() + 1.0
            s_block = s_all[k][crossing].min()
            v_e = max(ego_speed, 3.0)
            t_clear = (s_block - frame.s0 + LENGTH + 4.0) / v_e
            if t_clear < first - 1.0:
                continue
            block = np.where(tf <= last, s_block, np.inf)
            if block.min() < out[k].min():
                v_out[k] = 0.0
            out[k] = np.minimum(out[k], block)
    return out, v_out


def _enters_clear(s_e: float, rear_in: float, front_in: float, v_in: float) -> bool:
    """Whether an obstacle entering the corridor (rear/front arc lengths then) while the ego's
    centre is at s_e is no conflict: it enters ahead of the ego's nose, or far enough behind its
    tail to brake for it (1 s at its speed plus 2 m)."""
    return rear_in > s_e + LENGTH / 2 or s_e - LENGTH / 2 > front_in + 2.0 + v_in


def change_leaders(frame: PathFrame, obstacles: Obstacles, target: float, reach: float, forecast: bool, blend: float,
                   ego_speed: float = 0.0, proj: Projection | None = None,
                   ego_s: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Leaders for driving at lateral offset ``target``: boxes in the target lane, plus boxes in the
    band swept on the way there while they are closer than the end of the lane change."""
    s_t, v_t = leaders_on_path(frame, obstacles, (target, target), reach, forecast, ego_speed, proj, ego_s)
    if abs(target - frame.d0) < 0.5:
        return s_t, v_t
    s_w, v_w = leaders_on_path(frame, obstacles, (frame.d0, target), reach, forecast, ego_speed, proj, ego_s)
    s_w = np.where(s_w < frame.s0 + LENGTH / 2 + blend, s_w, np.inf)
    return np.concatenate([s_t, s_w]), np.concatenate([v_t, v_w])


FLOAT_PROPOSALS = 4  # up to this many proposals step as floats (measured: 6x faster for one, slower from about 10)


def idm_profile(
    s0: float, v0: float, v_target: np.ndarray, s_lead: np.ndarray, v_lead: np.ndarray, steps: int,
    s_stop: float = np.inf, p: IDMParams = IDM, dt: float = PLAN_DT,
) -> tuple[np.ndarray, np.ndarray]:
    """IDM along a path for P proposals at once.

    v_target (P,); s_lead (M, Tf) shared or (P, M, Tf) per proposal: leading-box arc lengths per
    step; v_lead (M,) or (P, M); s_stop: a stop line (end of route). Returns arc lengths and
    speeds (P, steps+1). The steps are sequential; a few proposals (the rule-based planners and the
    expert: one or two) step faster as Python floats than as numpy arrays (a call per step costs
    more than its arithmetic), many (PDM-like's) as arrays. Both give the same numbers to the bit.
    """
    n = len(v_target)
    s_lead = np.asarray(s_lead, dtype=float)
    if s_lead.ndim == 2:
        s_lead = np.broadcast_to(s_lead, (n, *s_lead.shape))
        v_lead = np.broadcast_to(np.asarray(v_lead, dtype=float), (n, s_lead.shape[1]))
    stepper = _idm_floats if n <= FLOAT_PROPOSALS else _idm_arrays
    return stepper(float(s0), float(v0), np.maximum(np.asarray(v_target, dtype=float), 0.1), s_lead, np.asarray(v_lead, dtype=float),
                   steps, float(s_stop), p, dt)


def _idm_floats(s0: float, v0: float, vt: np.ndarray, s_lead: np.ndarray, v_lead: np.ndarray, steps: int, s_stop: float,
                p: IDMParams, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """``idm_profile`` one proposal at a time: each step's nearest leader ahead (the first of equals,
    as argmin takes) and the IDM update, on Python floats."""
    n, m = s_lead.shape[:2]
    last = s_lead.shape[2] - 1 if m else 0
    front, sq = LENGTH / 2, 2 * np.sqrt(p.a_max * p.b_comf)
    out_s, out_v = np.empty((n, steps + 1)), np.empty((n, steps + 1))
    for i in range(n):
        columns = s_lead[i].T.tolist()  # per step, the leaders' arc lengths
        speeds = v_lead[i].tolist()
        v_free = float(vt[i])
        s, v = s0, v0
        row_s, row_v = [s], [v]
        for k in range(steps):
            nose = s + front
            gap, vl = np.inf, 0.0  # no leader ahead: an infinite gap, whose IDM term is 0 whatever vl is
            for at, speed in zip(columns[min(k, last)] if m else (), speeds):
                if at > nose - 1.0 and at - nose < gap:
                    gap, vl = at - nose, speed
            stop_gap = s_stop - nose
            if stop_gap < gap:
                gap, vl, standing = stop_gap, 0.0, 0.0
            else:
                standing = p.stopped_gap * min(max(1.0 - vl / 2.0, 0.0), 1.0)
            s_star = p.min_gap + standing + max(0.0, v * p.headway + v * (v - vl) / sq)
            ratio = s_star / max(gap, 0.1)
            a = min(max(p.a_max * (1.0 - (v / v_free) ** p.exponent - ratio * ratio), -p.max_brake), p.a_max)
            v_new = max(0.0, v + a * dt)
            s = s + 0.5 * (v + v_new) * dt
            v = v_new
            row_s.append(s)
            row_v.append(v)
        out_s[i], out_v[i] = row_s, row_v
    return out_s, out_v


def _idm_arrays(s0: float, v0: float, vt: np.ndarray, s_lead: np.ndarray, v_lead: np.ndarray, steps: int, s_stop: float,
                p: IDMParams, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """``idm_profile`` for all proposals at once, one numpy update per step."""
    n, m = s_lead.shape[:2]
    s = np.full(n, s0)
    v = np.full(n, v0)
    out_s = np.empty((n, steps + 1))
    out_v = np.empty((n, steps + 1))
    out_s[:, 0], out_v[:, 0] = s, v
    front = LENGTH / 2
    rows = np.arange(n)
    sq = 2 * np.sqrt(p.a_max * p.b_comf)
    last = s_lead.shape[2] - 1 if m else 0
    for k in range(steps):
        nose = s + front
        if m:
            col = s_lead[:, :, min(k, last)]
            g = col - nose[:, None]
            g[col <= nose[:, None] - 1.0] = np.inf
            j = g.argmin(axis=1)
            gap = g[rows, j]
            vl = v_lead[rows, j]
        else:
            gap = np.full(n, np.inf)
            vl = np.zeros(n)
        stop_gap = s_stop - nose
        use_stop = stop_gap < gap
        standing = np.where(use_stop, 0.0, p.stopped_gap * np.clip(1.0 - vl / 2.0, 0.0, 1.0))
        gap = np.where(use_stop, stop_gap, gap)
        vl = np.where(use_stop, 0.0, vl)
        s_star = p.min_gap + standing + np.maximum(0.0, v * p.headway + v * (v - vl) / sq)
        inter = (s_star / np.maximum(gap, 0.1)) ** 2
        a = np.clip(p.a_max * (1.0 - (v / vt) ** p.exponent - inter), -p.max_brake, p.a_max)
        v_new = np.maximum(0.0, v + a * dt)
        s = s + 0.5 * (v + v_new) * dt
        v = v_new
        out_s[:, k + 1] = s
        out_v[:, k + 1] = v
    return out_s, out_v


def smoothstep(u: np.ndarray) -> np.ndarray:
    u = np.clip(u, 0.0, 1.0)
    return 3 * u**2 - 2 * u**3


def path_plan(frame: PathFrame, s: np.ndarray, d_from: float, d_to: float, blend_len: float, start_xy: np.ndarray, start_heading: float) -> np.ndarray:
    """Poses (T+1, 4) along the path at arc lengths s, moving sideways from d_from to d_to.

    ``blend_len`` is the distance for a whole lane width; a smaller offset takes proportionally
    less (at least 8 m), so repeated replanning converges instead of creeping towards the target.
    """
    length = max(8.0, blend_len * min(1.0, abs(d_to - d_from) / 3.5))
    d = d_from + (d_to - d_from) * smoothstep((s - s[0]) / length)
    xy, heading = frame.path.interpolate(s)
    normal = np.stack([-np.sin(heading), np.cos(heading)], axis=-1)
    pts = xy + d[:, None] * normal
    pts[0] = start_xy
    ds = np.gradient(s) if len(s) > 1 else np.ones_like(s)
    dd = np.gradient(d) if len(d) > 1 else np.zeros_like(d)
    h = heading + np.arctan2(dd, np.maximum(ds, 1e-3))
    h[0] = start_heading
    speed = np.concatenate([[0.0], np.linalg.norm(np.diff(pts, axis=0), axis=1) / PLAN_DT])
    speed[0] = speed[1] if len(speed) > 1 else 0.0
    return np.column_stack([pts, h, speed])
