"""Classifier-style guidance on the x0 estimate: differentiable energies of the ego plan.

Each term can be switched on with a weight: collision (signed distance between inflated boxes
of the ego plan and the jointly predicted neighbours, static objects, and nearby agents
extrapolated with their current acceleration, which catches a leader that has just started to
brake before the learned prediction does), drivable area (signed
distance grid of the lanes), target speed, comfort (acceleration, jerk, lateral acceleration).
At a solver step the ego positions move down the weighted energy gradient (smoothed along time).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as TF

from .guidance_config import TERMS, GuidanceConfig
from .vehicle import LENGTH, WIDTH

__all__ = ["TERMS", "GuidanceConfig", "GuidanceContext", "energies", "guide_step", "total_energy"]

INFLATION = 0.5  # m added to length and width of every box (a quarter metre each side)
COLLISION_MARGIN = 0.3  # m of clearance wanted between inflated boxes: cars side by side in their lanes stay clear
DRIVABLE_MARGIN = 0.5  # m a corner should stay inside the road edge: at 0.2 m a plan that drifted
# towards the edge at walking speed (after a lane change, or in a turn) was only pushed back once
# it could no longer turn away, and crept out (two of the benchmark's four guided failures)
STEP = 1.5  # m of displacement per unit of weighted gradient
MAX_STEP = 6.0  # m: cap on one step's displacement of a waypoint


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
        acc = (speed[:, 1:] - speed[:, :-1]) / ctx.dt
        jerk = (acc[:, 1:] - acc[:, :-1]) / ctx.dt
        heading = torch.atan2(vel[..., 1], vel[..., 0] + 1e-6)
        yaw = torch.remainder(heading[:, 1:] - heading[:, :-1] + torch.pi, 2 * torch.pi) - torch.pi
        lat = speed[:, 1:] * yaw / ctx.dt * (speed[:, 1:] > 1.0)
        out["comfort"] = (
            torch.relu(acc - 2.0).pow(2) + torch.relu(-3.5 - acc).pow(2)
        ).sum(dim=1) + torch.relu(jerk.abs() - 3.5).pow(2).sum(dim=1) * 0.1 + torch.relu(lat.abs() - 3.5).pow(2).sum(dim=1)
    return out


def total_energy(terms: dict[str, torch.Tensor], cfg: GuidanceConfig) -> torch.Tensor:
    return sum(cfg.weights.get(k, 0.0) * v for k, v in terms.items())  # type: ignore[return-value]


def guide_step(ego: torch.Tensor, neighbors: torch.Tensor, ctx: GuidanceContext, cfg: GuidanceConfig) -> torch.Tensor:
    """Displacement (K, T+1, 2) in metres of the ego waypoints down the energy gradient."""
    with torch.enable_grad():
        leaf = ego.detach().clone().requires_grad_(True)
        e = total_energy(energies(leaf, neighbors, ctx, cfg), cfg)
        if not torch.is_tensor(e) or not e.requires_grad:
            return torch.zeros_like(ego[..., :2])
        (grad,) = torch.autograd.grad(e.sum(), leaf)
    step = -STEP * grad[..., :2]
    # Smooth along time so that guidance bends the plan rather than single waypoints.
    kernel = torch.exp(-torch.linspace(-2, 2, 7) ** 2 / 2)
    kernel = (kernel / kernel.sum()).view(1, 1, -1)
    k, t1, _ = step.shape
    sm = TF.conv1d(TF.pad(step.permute(0, 2, 1).reshape(-1, 1, t1), (3, 3), mode="replicate"), kernel).reshape(k, 2, t1).permute(0, 2, 1)
    norm = sm.norm(dim=-1, keepdim=True)
    sm = sm * torch.clamp(MAX_STEP / norm.clamp(min=1e-9), max=1.0)
    sm[:, 0] = 0.0
    return sm
