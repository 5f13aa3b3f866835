"""The diffusion planner: encode the scene once, denoise K joint ego + neighbour futures in one
batch with DPM-Solver++ (guidance on each x0 estimate), pick one, follow it."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from engines.core import EngineError, resource_path
from engines.core.checkpoint import read_checkpoint

from .. import features as F
from ..diffusion import Trace, dpm_solver_pp
from ..features import FeatureBuilder
from ..geometry import to_world
from ..guidance import GuidanceConfig, GuidanceContext, choose, energies, guide_step
from ..model import DiffusionPlannerNet, ModelConfig
from ..scene import Scene
from .base import PLAN_DT, Observation, Plan, resample_plan

DEFAULT_CHECKPOINT = "diffusion_planner.pt"
FORMAT = "workbench-planner-checkpoint"  # written by training and averaging; the shipped file predates it


def default_checkpoint() -> Path:
    return resource_path("planner", DEFAULT_CHECKPOINT)


def load_model(path: Path | str | None = None) -> tuple[DiffusionPlannerNet, dict]:
    """The network and its checkpoint's metadata; a missing or foreign file is a user error."""
    path = Path(path) if path else default_checkpoint()
    if not path.exists():
        raise EngineError(f"no diffusion planner checkpoint at {path}: train one with 'workbench planner train'")
    ckpt = read_checkpoint(path, "diffusion planner checkpoint", keys=("config", "model"), fmt=FORMAT)
    try:
        model = DiffusionPlannerNet(ModelConfig(**ckpt["config"]))
        model.load_state_dict({k: v.float() for k, v in ckpt["model"].items()})
    except Exception as exc:  # foreign contents: a config or weights of another shape raise almost any type
        raise EngineError(f"{path.name} is not a diffusion planner checkpoint ({type(exc).__name__})") from None
    model.eval()
    return model, ckpt.get("meta", {})


@dataclass(frozen=True)
class DiffusionSettings:
    samples: int = 8
    steps: int = 10
    temperature: float = 0.5  # scale of the initial noise, as the reference implementation uses
    guidance: GuidanceConfig = field(default_factory=GuidanceConfig)
    seed: int = 0


class DiffusionPlanner:
    name = "diffusion"

    def __init__(self, settings: DiffusionSettings = DiffusionSettings(), checkpoint: Path | str | None = None,
                 model: DiffusionPlannerNet | None = None) -> None:
        self.settings = settings
        self.model = model if model is not None else load_model(checkpoint)[0]
        self.record_trace = False

    @property
    def label(self) -> str:
        return "diffusion+guidance" if self.settings.guidance.active else "diffusion"

    def reset(self, scene: Scene) -> None:
        self.scene = scene
        self.features = FeatureBuilder(scene)
        self.generator = torch.Generator().manual_seed(self.settings.seed)
        grid = scene.sdf
        self.sdf = torch.from_numpy(grid.values)[None, None].float()
        self.sdf_origin = torch.tensor(grid.origin, dtype=torch.float32)
        self.sdf_res = float(grid.res)

    def _tensors(self, inp: F.Inputs) -> dict[str, torch.Tensor]:
        out = {}
        for name in ("agents", "agents_mask", "statics", "statics_mask", "lanes", "lanes_mask", "route", "route_mask", "ego"):
            out[name] = torch.from_numpy(np.asarray(getattr(inp, name)))[None]
        return out

    def plan(self, obs: Observation) -> Plan:
        st = self.settings
        model = self.model
        inp = self.features.build(obs)
        k, p = st.samples, model.cfg.n_neighbors + 1
        origin = np.array([obs.ego.x, obs.ego.y])
        theta = obs.ego.heading
        with torch.no_grad():
            x = self._tensors(inp)
            scene_tok, scene_pad, cond = model.encoder(x)
            memory = model.decoder.memory(scene_tok)  # batch 1: shared by all K samples and steps
            cond = cond.expand(k, -1)
            nb_valid = torch.from_numpy(inp.neighbor_index >= 0)
            current = torch.zeros(1, p, 1, 4)
            current[0, 0, 0] = torch.tensor([0.0, 0.0, 1.0, 0.0])
            current[0, 1:, 0] = torch.from_numpy(inp.neighbor_current)
            current_n = model.normalize(current)[:, :, 0].expand(k, -1, -1).clone()
            current_n[:, 1:][:, ~nb_valid] = 0.0
            tok_pad = torch.cat([torch.zeros(1, dtype=torch.bool), ~nb_valid])[None].expand(k, -1)
            noise = torch.randn(k, p, model.cfg.future_steps + 1, 4, generator=self.generator) * st.temperature

            def denoise(x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
                out = model.decoder(x_t, t, memory, scene_pad, cond, tok_pad)
                return out * torch.cat([torch.ones(1, dtype=torch.bool), nb_valid])[None, :, None, None]

            ctx = self._context(obs, inp, nb_valid)
            guide = self._guide(ctx) if st.guidance.active else None
            trace = Trace() if self.record_trace else None
            x0 = dpm_solver_pp(denoise, noise, current_n, st.steps, guide, trace)
            traj = model.denormalize(x0)  # (K, P, T+1, 4) ego frame, metres
            ego = traj[:, 0]
            chosen = choose(energies(ego, traj[:, 1:], ctx, st.guidance), st.guidance) if st.guidance.active else None
            if chosen is None:
                chosen = medoid(ego[..., :2])
        ego_np = ego.numpy().astype(float)
        world = to_world(ego_np[..., :2], origin, theta)  # (K, T+1, 2)
        heading = np.arctan2(ego_np[..., 3], ego_np[..., 2]) + theta
        chosen_world = np.column_stack([world[chosen], heading[chosen]])
        steps = int(round(model.cfg.future_steps * F.FUTURE_DT / PLAN_DT))
        plan_traj = resample_plan(chosen_world, F.FUTURE_DT, PLAN_DT, steps)
        nb = traj[chosen, 1:].numpy().astype(float)
        valid = inp.neighbor_index >= 0
        preds = to_world(nb[valid][..., :2], origin, theta)
        out = Plan(plan_traj, samples=world, chosen=chosen, sample_dt=F.FUTURE_DT, predictions=preds,
                   prediction_ids=obs.agent_ids[inp.neighbor_index[valid]] if valid.any() else np.zeros(0, dtype=int))
        if trace is not None:
            out.trace = self._trace_to_world(trace, origin, theta, valid)
        return out

    def _context(self, obs: Observation, inp: F.Inputs, nb_valid: torch.Tensor) -> GuidanceContext:
        from ..geometry import to_local

        origin = np.array([obs.ego.x, obs.ego.y])
        statics = obs.static_boxes
        s0, _ = self.scene.route_path.project(origin[None])
        end = route_end_box(self.scene.route_path, float(s0[0]))
        if end is not None:
            statics = np.concatenate([statics.reshape(-1, 4, 2), end[None]])
        static_local = to_local(statics, origin, obs.ego.heading) if len(statics) else np.zeros((0, 4, 2))
        forecast = physics_forecast(obs)
        return GuidanceContext(
            neighbor_size=torch.from_numpy(inp.neighbor_size).float(),
            neighbor_valid=nb_valid & ~torch.from_numpy(following(inp.neighbor_current)),
            static_boxes=torch.from_numpy(static_local).float(),
            forecast_boxes=torch.from_numpy(forecast).float(),
            sdf=self.sdf,
            sdf_origin=self.sdf_origin,
            sdf_res=self.sdf_res,
            ego_origin=torch.tensor([obs.ego.x, obs.ego.y], dtype=torch.float32),
            ego_heading=float(obs.ego.heading),
            speed_limit=float(self.scene.route_speed_limit(s0)[0]),
            dt=F.FUTURE_DT,
        )

    def _guide(self, ctx: GuidanceContext):
        model = self.model
        cfg = self.settings.guidance

        def guide(x0: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            if float(t[0]) > cfg.t_max:
                return x0
            traj = model.denormalize(x0)
            delta = guide_step(traj[:, 0], traj[:, 1:], ctx, cfg)
            traj = traj.clone()
            traj[:, 0, :, :2] += delta
            return model.normalize(traj)

        return guide

    def _trace_to_world(self, trace: Trace, origin: np.ndarray, theta: float, valid: np.ndarray) -> dict:
        """Per solver step: noisy and denoised ego samples and guidance shifts, in the world frame."""
        steps = []
        for t, xt, x0, g in zip(trace.times, trace.x_t, trace.x0, trace.guidance):
            ego_t = self.model.denormalize(xt)[:, 0, :, :2].numpy().astype(float)
            ego_0 = self.model.denormalize(x0)[:, 0, :, :2].numpy().astype(float)
            shift = (g[:, 0, :, :2] * self.model.ego_std[:, :2]).numpy().astype(float)
            c, s = np.cos(theta), np.sin(theta)
            rot = np.stack([c * shift[..., 0] - s * shift[..., 1], s * shift[..., 0] + c * shift[..., 1]], axis=-1)
            steps.append({"t": t, "x_t": to_world(ego_t, origin, theta), "x0": to_world(ego_0, origin, theta), "guidance": rot})
        return {"steps": steps}


ROUTE_END_REACH = 150.0  # m: a route ending closer than this gets its end wall in the collision guidance


def route_end_box(route, s_now: float) -> np.ndarray | None:
    """A wall (4, 2) across the road over the route's last 1.5 m and 0.5 m beyond, or None when
    the end is far.

    Past the end of the route (in CommonRoad files, often the end of the mapped road) nothing is
    drivable; the drivable-area term only pushes corners sideways and back once they are out, so
    the planner crept past the end. A wall makes the collision term slow the plan down in time,
    as PDM's stop at the route's end does."""
    from ..geometry import box_corners

    if route.length - s_now > ROUTE_END_REACH:
        return None
    xy, heading = route.interpolate(np.array([route.length - 0.5]))
    return box_corners(xy[:, 0], xy[:, 1], heading, np.array([2.0]), np.array([12.0]))[0]


def following(current: np.ndarray) -> np.ndarray:
    """Neighbours (rows of ego-frame x, y, cos, sin) right behind the ego in its lane. The collision
    term leaves them out: a car closing in from behind is its driver's to avoid, and fleeing it
    sideways (as the guidance did on a CommonRoad log whose follower drives through the ego) leaves
    the road."""
    from ..vehicle import LENGTH

    return (current[:, 0] < -LENGTH / 2) & (np.abs(current[:, 1]) < 1.5)


def physics_forecast(obs: Observation, radius: float = 50.0) -> np.ndarray:
    """Boxes (M, T, 4, 2), ego frame, at the guided waypoints' times (0.2, 0.6, ... 7.8 s), of the
    agents ahead of the ego within ``radius``: each keeps its heading and the acceleration of its
    last second (braking down to a stop)."""
    from ..geometry import box_corners, to_local

    hist, valid = obs.agent_history, obs.agent_valid
    now = hist[:, -1]
    ego = np.array([obs.ego.x, obs.ego.y])
    ahead = to_local(now[:, :2], ego, obs.ego.heading)[:, 0] > 0.0 if len(now) else np.zeros(0, dtype=bool)
    near = valid[:, -1] & valid[:, -11] & ahead & (np.linalg.norm(now[:, :2] - ego, axis=1) < radius) if len(now) else ahead
    if not near.any():
        return np.zeros((0, F.FUTURE_STEPS // 2, 4, 2))
    a = np.clip((now[near, 3] - hist[near, -11, 3]) / 1.0, -8.0, 2.0)
    v0 = now[near, 3]
    t = np.arange(1, F.FUTURE_STEPS + 1, 2) * F.FUTURE_DT  # the every-other waypoint the energy checks
    t_stop = np.where(a < 0, v0 / np.maximum(-a, 1e-6), np.inf)
    tt = np.minimum(t[None], t_stop[:, None])
    dist = v0[:, None] * tt + 0.5 * a[:, None] * tt**2
    h = now[near, 2]
    x = now[near, 0:1] + np.cos(h)[:, None] * dist
    y = now[near, 1:2] + np.sin(h)[:, None] * dist
    size = obs.agent_size[near]
    boxes = box_corners(x, y, np.broadcast_to(h[:, None], x.shape), size[:, 0:1] + 0.5, size[:, 1:2] + 0.5)
    return to_local(boxes, ego, obs.ego.heading)


def medoid(xy: torch.Tensor) -> int:
    """The sample with the smallest mean distance to the others (the mode, without guidance)."""
    d = (xy[:, None] - xy[None]).norm(dim=-1).mean(-1).sum(-1)
    return int(torch.argmin(d))
