"""Classifier-style guidance on the x0 estimate: differentiable energies of the ego plan.

Each term can be switched on with a weight: collision (signed distance between inflated boxes
of the ego plan and the jointly predicted neighbours, static objects, and nearby agents
extrapolated with their current acceleration, which catches a leader that has just started to
brake before the learned prediction does), drivable area (signed
distance grid of the lanes), target speed, comfort (longitudinal acceleration and jerk, lateral
acceleration, differentiated with the comfort metric's Savitzky-Golay filter).
At a solver step the ego positions move down the weighted energy gradient (smoothed along time),
no further sideways than the car can steer after the plan's own travel (``reach_capped``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as TF
from scipy.signal import savgol_filter

from .guidance_config import SAFETY_TERMS, TERMS, GuidanceConfig
from .vehicle import LENGTH, MAX_STEER, WHEELBASE, WIDTH

__all__ = ["TERMS", "GuidanceConfig", "GuidanceContext", "choose", "energies", "guide_step", "total_energy"]

INFLATION = 0.5  # m added to length and width of every box (a quarter metre each side)
COLLISION_MARGIN = 0.3  # m of clearance wanted between inflated boxes: cars side by side in their lanes stay clear
DRIVABLE_MARGIN = 0.5  # m a corner should stay inside the road edge: at 0.2 m a plan that drifted
# towards the edge at walking speed (after a lane change, or in a turn) was only pushed back once
# it could no longer turn away, and crept out (two of the benchmark's four guided failures)
STEP = 1.5  # m of displacement per unit of weighted gradient
MAX_STEP = 6.0  # m: cap on one step's displacement of a waypoint
COMFORT_WINDOW_S = 1.4  # s: the Savitzky-Golay window of the comfort signals (the metric's is 1.5 s at 10 Hz)
COMFORT_ACC = (-3.5, 2.0)  # m/s^2 longitudinal; the metric allows -4.05..2.40
COMFORT_LAT_ACC = 3.5  # m/s^2; the metric allows 4.89
COMFORT_LON_JERK = 3.5  # m/s^3; the metric allows 4.13
SAFETY_TOLERANCE = 1e-6  # weighted safety energy within which samples count as equally safe (floating-point ties)
COMFORT_TRIALS = 4.0 ** -np.arange(4)  # fractions of the comfort step tried (1, 1/4, 1/16, 1/64; and none): its energy is stiff
TURN_RADIUS = WHEELBASE / float(np.tan(MAX_STEER))  # m: the tightest circle the car drives, at full lock (4.5 m)


@dataclass
class GuidanceContext:
    """Per-replan tensors in the ego frame (metres)."""

    neighbor_size: torch.Tensor  # (P, 2)
    neighbor_valid: torch.Tensor  # (P,) bool
    static_boxes: torch.Tensor  # (S, 4, 2)
    forecast_boxes: torch.Tensor  # (M, T, 4, 2) nearby agents braking/accelerating as they do now (physics forecast)
    sdf: torch.Tensor | None  # (1, 1, H, W) signed distance grid (world)
    sdf_origin: torch.Tensor  # (2,) world xy of cell (0, 0)
    sdf_res: float
    ego_origin: torch.Tensor  # (2,) world
    ego_heading: float
    speed_limit: float
    dt: float


def rect_corners(xy: torch.Tensor, cs: torch.Tensor, length: torch.Tensor | float, width: torch.Tensor | float) -> torch.Tensor:
    """Corners (..., 4, 2) from centres (..., 2), unit headings (..., 2) and sizes."""
    hl = torch.as_tensor(length, dtype=xy.dtype) / 2
    hw = torch.as_tensor(width, dtype=xy.dtype) / 2
    c, s = cs[..., 0], cs[..., 1]
    lon = torch.stack([hl, hl, -hl, -hl], dim=-1)
    lat = torch.stack([hw, -hw, -hw, hw], dim=-1)
    x = xy[..., 0:1] + c[..., None] * lon - s[..., None] * lat
    y = xy[..., 1:2] + s[..., None] * lon + c[..., None] * lat
    return torch.stack([x, y], dim=-1)


def signed_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Separating-axis signed distance of convex quads (..., 4, 2): > 0 apart, < 0 penetration depth."""
    axes = torch.cat([a[..., 1:3, :] - a[..., 0:2, :], b[..., 1:3, :] - b[..., 0:2, :]], dim=-2)
    axes = axes / axes.norm(dim=-1, keepdim=True).clamp(min=1e-6)
    pa = torch.einsum("...kd,...jd->...kj", axes, a)
    pb = torch.einsum("...kd,...jd->...kj", axes, b)
    gap = torch.maximum(pb.min(-1).values - pa.max(-1).values, pa.min(-1).values - pb.max(-1).values)
    return gap.max(-1).values


def path_headings(ego: torch.Tensor, cs: torch.Tensor, min_step: float = 0.05) -> torch.Tensor:
    """(cos, sin) of where each waypoint of (K, T+1, 4) plans moves from the one before, where it
    moves at all (> ``min_step`` m), else the plan's own heading ``cs`` (K, T, 2).

    The tracker follows the positions, so the car points where the path goes: guidance that moves
    waypoints sideways without turning the plan's headings would check corners the car never has."""
    step = (ego[:, 1:, :2] - ego[:, :-1, :2]).detach()
    length = step.norm(dim=-1, keepdim=True)
    return torch.where(length > min_step, step / length.clamp(min=1e-6), cs)


def energies(ego: torch.Tensor, neighbors: torch.Tensor, ctx: GuidanceContext, cfg: GuidanceConfig) -> dict[str, torch.Tensor]:
    """Per-sample energies (K,) of ego plans (K, T+1, 4) given neighbour plans (K, P, T+1, 4), metres."""
    out: dict[str, torch.Tensor] = {}
    xy = ego[:, 1:, :2]
    cs = ego[:, 1:, 2:4]
    cs = (cs / cs.norm(dim=-1, keepdim=True).clamp(min=1e-6)).detach()
    w = cfg.weights
    if w.get("collision", 0) > 0:
        # Every other waypoint is enough for boxes several metres long, and halves the cost.
        boxes = rect_corners(xy[:, ::2], cs[:, ::2], LENGTH + INFLATION, WIDTH + INFLATION)  # (K, T/2, 4, 2)
        pen = []
        if ctx.neighbor_valid.any():
            nb = neighbors[:, ctx.neighbor_valid, 1::2].detach()
            ncs = nb[..., 2:4] / nb[..., 2:4].norm(dim=-1, keepdim=True).clamp(min=1e-6)
            size = ctx.neighbor_size[ctx.neighbor_valid]
            nboxes = rect_corners(nb[..., :2], ncs, size[None, :, None, 0] + INFLATION, size[None, :, None, 1] + INFLATION)
            sd = signed_distance(boxes[:, None].expand_as(nboxes), nboxes)  # (K, P, T)
            pen.append(torch.relu(COLLISION_MARGIN - sd).pow(2).sum(dim=(1, 2)))
        if len(ctx.static_boxes):
            sb = ctx.static_boxes[None, :, None].expand(boxes.shape[0], -1, boxes.shape[1], -1, -1)
            sd = signed_distance(boxes[:, None].expand_as(sb), sb)
            pen.append(torch.relu(COLLISION_MARGIN - sd).pow(2).sum(dim=(1, 2)))
        if len(ctx.forecast_boxes):
            fb = ctx.forecast_boxes[None].expand(boxes.shape[0], -1, -1, -1, -1)
            sd = signed_distance(boxes[:, None].expand_as(fb), fb)
            pen.append(torch.relu(COLLISION_MARGIN - sd).pow(2).sum(dim=(1, 2)))
        out["collision"] = sum(pen) if pen else xy.sum(dim=(1, 2)) * 0.0
    if w.get("drivable", 0) > 0 and ctx.sdf is not None:
        corners = rect_corners(xy, path_headings(ego, cs), LENGTH, WIDTH)  # (K, T, 4, 2) ego frame
        c, s = torch.cos(torch.tensor(ctx.ego_heading)), torch.sin(torch.tensor(ctx.ego_heading))
        world = torch.stack([c * corners[..., 0] - s * corners[..., 1], s * corners[..., 0] + c * corners[..., 1]], dim=-1) + ctx.ego_origin
        h, wd = ctx.sdf.shape[-2:]
        pix = (world - ctx.sdf_origin) / ctx.sdf_res
        grid = torch.stack([pix[..., 0] / (wd - 1) * 2 - 1, pix[..., 1] / (h - 1) * 2 - 1], dim=-1)
        k = grid.shape[0]
        vals = TF.grid_sample(ctx.sdf.expand(k, -1, -1, -1), grid.reshape(k, -1, 1, 2), align_corners=True, padding_mode="border")
        out["drivable"] = torch.relu(vals.reshape(k, -1) + DRIVABLE_MARGIN).pow(2).sum(dim=1)
    full = ego[:, :, :2]
    vel = (full[:, 1:] - full[:, :-1]) / ctx.dt
    speed = vel.norm(dim=-1)
    if w.get("speed", 0) > 0:
        target = ctx.speed_limit if cfg.target_speed is None else min(cfg.target_speed, ctx.speed_limit)
        out["speed"] = torch.relu(speed - target).pow(2).sum(dim=1)
    if w.get("comfort", 0) > 0:
        out["comfort"] = comfort_energy(full, ctx.dt)
    return out


@lru_cache(maxsize=8)
def savgol_operators(n: int, dt: float) -> tuple[torch.Tensor, torch.Tensor]:
    """First and second derivative operators (n, n) of a Savitzky-Golay filter over COMFORT_WINDOW_S
    (quadratic, polynomial fits at the ends): the filter the comfort metric differentiates with."""
    win = min(n if n % 2 else n - 1, 2 * round(COMFORT_WINDOW_S / dt / 2) + 1)
    eye = np.eye(n)
    d1, d2 = (savgol_filter(eye, win, 2, deriv=k, delta=dt, axis=0, mode="interp") for k in (1, 2))
    return torch.from_numpy(d1).float(), torch.from_numpy(d2).float()


def comfort_signals(xy: torch.Tensor, dt: float) -> dict[str, torch.Tensor]:
    """Speed, longitudinal and lateral acceleration and longitudinal jerk (K, T+1) of plans
    (K, T+1, 2) sampled every ``dt`` s, differentiated as the metric does.

    Raw finite differences of the sampled waypoints turned their few centimetres of jitter into
    jerks of 10-20 m/s^3 on plans the car drives smoothly; the comfort term then pushed every
    waypoint by metres, and its steps grew instead of settling (the plans zigzagged at 30-60 m/s)."""
    d1, d2 = savgol_operators(xy.shape[1], float(dt))
    vel = torch.einsum("ij,kjd->kid", d1, xy)
    acc = torch.einsum("ij,kjd->kid", d2, xy)
    speed = vel.norm(dim=-1)
    lon_acc = d1 @ speed.T
    lat_acc = (vel[..., 0] * acc[..., 1] - vel[..., 1] * acc[..., 0]) / speed.clamp(min=1.0) * (speed > 1.0)
    return {"speed": speed, "lon_acc": lon_acc.T, "lat_acc": lat_acc, "lon_jerk": (d1 @ lon_acc).T}


def comfort_energy(xy: torch.Tensor, dt: float) -> torch.Tensor:
    """Per-plan (K,) squared excess over bounds a little inside the metric's."""
    sig = comfort_signals(xy, dt)
    lon = sig["lon_acc"]
    return (
        torch.relu(lon - COMFORT_ACC[1]).pow(2) + torch.relu(COMFORT_ACC[0] - lon).pow(2)
        + torch.relu(sig["lat_acc"].abs() - COMFORT_LAT_ACC).pow(2)
        + torch.relu(sig["lon_jerk"].abs() - COMFORT_LON_JERK).pow(2)
    ).sum(dim=1)


def total_energy(terms: dict[str, torch.Tensor], cfg: GuidanceConfig) -> torch.Tensor:
    return sum(cfg.weights.get(k, 0.0) * v for k, v in terms.items())  # type: ignore[return-value]


def choose(terms: dict[str, torch.Tensor], cfg: GuidanceConfig) -> int | None:
    """The sample to drive: the least weighted energy without comfort among the safest samples
    (collision + drivable within SAFETY_TOLERANCE of the least); None when only comfort guides.

    Comfort shapes the samples (``guide_step``) but does not pick among them: the most comfortable
    of equally safe plans is the one braking latest, and on ZAM_Tutorial's road end it used the
    whole margin (3 of 4 sampler seeds ended 0.3 m off the map). A weighted sum with safety let
    comfort or speed outvote it."""
    total = total_energy({k: v for k, v in terms.items() if k != "comfort"}, cfg)
    safety = total_energy({k: v for k, v in terms.items() if k in SAFETY_TERMS}, cfg)
    if not torch.is_tensor(total):
        return None
    if torch.is_tensor(safety):
        total = torch.where(safety <= safety.min() + SAFETY_TOLERANCE, total, torch.inf)
    return int(torch.argmin(total))


def guide_step(ego: torch.Tensor, neighbors: torch.Tensor, ctx: GuidanceContext, cfg: GuidanceConfig) -> torch.Tensor:
    """Displacement (K, T+1, 2) in metres of the ego waypoints down the energy gradient.

    Comfort takes its own step after the others, the fraction of COMFORT_TRIALS along its
    gradient that leaves the least total energy: its energy (derivatives up to jerk of waypoints
    0.2 s apart) is far stiffer than the distance terms, so a fixed step overshoots it. A fraction
    that raises the collision or drivable energy is not taken: comfort is not bought with safety."""
    weight = cfg.weights.get("comfort", 0.0)
    rest = replace(cfg, weights={k: v for k, v in cfg.weights.items() if k != "comfort"})
    step = torch.zeros_like(ego[..., :2])
    if rest.active:
        step = _descent(ego, lambda x: total_energy(energies(x, neighbors, ctx, rest), rest))
    moved = ego[..., :2] + step
    if weight > 0 and bool((comfort_energy(moved, ctx.dt) > 0).any()):  # most plans are comfortable: no search
        down = _descent(moved, lambda x: weight * comfort_energy(x, ctx.dt))
        frac = torch.from_numpy(np.append(COMFORT_TRIALS, 0.0)).float()  # 0: no comfort step at all
        trials = ego[None].repeat(len(frac), 1, 1, 1)
        trials[..., :2] = moved[None] + frac[:, None, None, None] * down[None]  # (F, K, T+1, 4)
        nb = neighbors[None].expand(len(frac), *neighbors.shape).flatten(0, 1)
        terms = {k: v.view(len(frac), -1) for k, v in energies(trials.flatten(0, 1), nb, ctx, cfg).items()}
        safety = total_energy({k: v for k, v in terms.items() if k in SAFETY_TERMS}, cfg)
        e = total_energy(terms, cfg)
        if torch.is_tensor(safety):  # comfort never at the expense of safety: no fraction that raises it
            e = torch.where(safety <= safety[-1] + SAFETY_TOLERANCE, e, torch.inf)
        best = frac[e.argmin(dim=0)]  # (K,)
        step = step + best[:, None, None] * down
    return reach_capped(step, ego)


def sideways_reach(travel: torch.Tensor) -> torch.Tensor:
    """How far sideways (m) a car gets while it drives ``travel`` m at full lock from straight."""
    quarter = TURN_RADIUS * np.pi / 2
    arc = travel.clamp(max=quarter) / TURN_RADIUS
    return TURN_RADIUS * (1 - torch.cos(arc)) + (travel - quarter).clamp(min=0)


def reach_capped(step: torch.Tensor, ego: torch.Tensor) -> torch.Tensor:
    """``step`` (K, T+1, 2) with each waypoint's move across the plan's direction capped at
    ``sideways_reach`` of the plan's own travel up to that waypoint.

    Guidance moved the waypoints of a standing or creeping plan sideways by up to a metre, a path
    the car cannot start along: on FRA_Anglet the ego then never moved off, and on USA_Peach a
    fine-tuned model's waiting ego was pushed to its right, into the lane an oncoming car turned
    across, and drove into it."""
    xy = ego[:, :, :2].detach()
    cs = ego[:, 1:, 2:4].detach()
    heading = path_headings(ego, cs / cs.norm(dim=-1, keepdim=True).clamp(min=1e-6))  # (K, T, 2)
    normal = torch.stack([-heading[..., 1], heading[..., 0]], dim=-1)
    travel = (xy[:, 1:] - xy[:, :-1]).norm(dim=-1).cumsum(dim=1)  # (K, T)
    across = (step[:, 1:] * normal).sum(dim=-1)
    cap = sideways_reach(travel)
    excess = across - across.clamp(-cap, cap)
    capped = step.clone()
    capped[:, 1:] -= excess[..., None] * normal
    return capped


def _descent(x: torch.Tensor, energy) -> torch.Tensor:
    """Displacement (K, T+1, 2) of x's positions down the gradient of ``energy(x)`` (K,): STEP m per
    unit, smoothed along time so that guidance bends the plan rather than single waypoints,
    capped at MAX_STEP, the pinned first waypoint left in place."""
    with torch.enable_grad():
        leaf = x.detach().clone().requires_grad_(True)
        e = energy(leaf)
        if not torch.is_tensor(e) or not e.requires_grad:
            return torch.zeros_like(x[..., :2])
        (grad,) = torch.autograd.grad(e.sum(), leaf)
    step = -STEP * grad[..., :2]
    kernel = torch.exp(-torch.linspace(-2, 2, 7) ** 2 / 2)
    kernel = (kernel / kernel.sum()).view(1, 1, -1)
    k, t1, _ = step.shape
    sm = TF.conv1d(TF.pad(step.permute(0, 2, 1).reshape(-1, 1, t1), (3, 3), mode="replicate"), kernel).reshape(k, 2, t1).permute(0, 2, 1)
    norm = sm.norm(dim=-1, keepdim=True)
    sm = sm * torch.clamp(MAX_STEP / norm.clamp(min=1e-9), max=1.0)
    sm[:, 0] = 0.0
    return sm
