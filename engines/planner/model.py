"""The Diffusion Planner network, scaled to ~1.6M parameters.

Encoder: one MLP per element type (agents' 2 s history, static objects, lane pieces), then
self-attention fusion over all scene tokens. Route: an MLP per route piece, max-pooled.
Decoder (DiT): one token per trajectory (ego + nearest neighbours), each the flattened
(1 + FUTURE_STEPS) x (x, y, cos, sin); adaLN conditioning on diffusion time + route;
self-attention among the trajectories, cross-attention to the scene; predicts x0.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

from . import features as F


@dataclass(frozen=True)
class ModelConfig:
    dim: int = 128
    heads: int = 4
    encoder_layers: int = 3  # runs once per replan
    decoder_layers: int = 2  # runs K x steps times per replan: kept lean
    mlp_ratio: float = 2.0
    n_neighbors: int = F.N_NEIGHBORS
    future_steps: int = F.FUTURE_STEPS
    per_step_norm: bool = True  # normalise each waypoint by its own spread (else one mean/std for all)

    def to_dict(self) -> dict:
        return asdict(self)


def mlp(i: int, h: int, o: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(i, h), nn.GELU(), nn.Linear(h, o))


class SceneEncoder(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.dim
        self.agent = mlp(F.AGENT_DIM, d, d)
        self.static = mlp(F.STATIC_DIM, d, d)
        self.lane = mlp(F.LANE_DIM, d, d)
        self.type_emb = nn.Parameter(torch.zeros(3, d))
        layer = nn.TransformerEncoderLayer(d, cfg.heads, int(d * cfg.mlp_ratio), dropout=0.0, batch_first=True, norm_first=True, activation="gelu")
        self.fusion = nn.TransformerEncoder(layer, cfg.encoder_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.route = mlp(F.ROUTE_DIM, d, d)
        self.route_out = mlp(d, d, d)
        self.ego = mlp(F.EGO_DIM, d, d)

    def forward(self, x: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Scene tokens (B, S, d), their padding mask (B, S) True = empty, and the condition (B, d):
        route embedding plus the ego's current speed."""
        tokens = torch.cat([
            self.agent(x["agents"]) + self.type_emb[0],
            self.static(x["statics"]) + self.type_emb[1],
            self.lane(x["lanes"]) + self.type_emb[2],
        ], dim=1)
        present = torch.cat([x["agents_mask"], x["statics_mask"], x["lanes_mask"]], dim=1)
        pad = ~present
        pad_safe = pad.clone()
        pad_safe[:, -1] &= present.any(dim=1)  # never a fully masked row
        tokens = self.fusion(tokens, src_key_padding_mask=pad_safe)
        tokens = self.norm(tokens) * present[..., None]
        r = self.route(x["route"])
        r = r.masked_fill(~x["route_mask"][..., None], -1e4).max(dim=1).values
        r = torch.where(x["route_mask"].any(dim=1, keepdim=True), r, torch.zeros_like(r))
        return tokens, pad_safe, self.route_out(r) + self.ego(x["ego"])


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t[:, None].float() * 1000.0 * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * (1 + scale[:, None]) + shift[:, None]


class Attention(nn.Module):
    """Multi-head attention on scaled_dot_product_attention; keys and values can be computed once
    (the scene's, for cross-attention) and reused by every solver step and sample."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)
        self.out = nn.Linear(d, d)

    def keys_values(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, s, d = memory.shape
        k, v = self.kv(memory).view(b, s, 2, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        return k, v

    def forward(self, x: torch.Tensor, kv: tuple[torch.Tensor, torch.Tensor], key_pad: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q = self.q(x).view(b, n, self.heads, d // self.heads).transpose(1, 2)
        k, v = kv
        if k.shape[0] != b:
            k, v = k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)
        mask = (~key_pad)[:, None, None, :]
        if mask.shape[0] != b:
            mask = mask.expand(b, -1, -1, -1)
        out = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out(out.transpose(1, 2).reshape(b, n, d))


class DiTBlock(nn.Module):
    """adaLN-Zero block: self-attention among trajectories, cross-attention to the scene, MLP."""

    def __init__(self, d: int, heads: int, mlp_ratio: float) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.attn = Attention(d, heads)
        self.norm2 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.cross = Attention(d, heads)
        self.norm3 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.mlp = mlp(d, int(d * mlp_ratio), d)
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(d, 9 * d))
        nn.init.zeros_(self.ada[1].weight)
        nn.init.zeros_(self.ada[1].bias)

    def forward(self, x: torch.Tensor, mods: torch.Tensor, scene_kv: tuple[torch.Tensor, torch.Tensor], scene_pad: torch.Tensor,
                tok_pad: torch.Tensor) -> torch.Tensor:
        s1, c1, g1, s2, c2, g2, s3, c3, g3 = mods.chunk(9, dim=-1)
        h = modulate(self.norm1(x), s1, c1)
        x = x + g1[:, None] * self.attn(h, self.attn.keys_values(h), tok_pad)
        h = modulate(self.norm2(x), s2, c2)
        x = x + g2[:, None] * self.cross(h, scene_kv, scene_pad)
        h = modulate(self.norm3(x), s3, c3)
        return x + g3[:, None] * self.mlp(h)


class DiTDecoder(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.dim
        self.token_dim = (cfg.future_steps + 1) * 4
        self.preproj = mlp(self.token_dim, d, d)
        self.agent_emb = nn.Parameter(torch.zeros(2, d))
        self.t_mlp = mlp(d, d, d)
        self.blocks = nn.ModuleList([DiTBlock(d, cfg.heads, cfg.mlp_ratio) for _ in range(cfg.decoder_layers)])
        self.final_norm = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.final_ada = nn.Sequential(nn.SiLU(), nn.Linear(d, 2 * d))
        self.final = nn.Linear(d, self.token_dim)
        nn.init.zeros_(self.final_ada[1].weight)
        nn.init.zeros_(self.final_ada[1].bias)

    def memory(self, scene: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Each block's cross-attention keys and values of the scene tokens (computed once per plan)."""
        return [block.cross.keys_values(scene) for block in self.blocks]

    def forward(self, x_t: torch.Tensor, t: torch.Tensor, memory: list[tuple[torch.Tensor, torch.Tensor]], scene_pad: torch.Tensor,
                cond: torch.Tensor, tok_pad: torch.Tensor) -> torch.Tensor:
        """x_t (B, P, T+1, 4) normalised noisy trajectories -> predicted x0, same shape."""
        b, p = x_t.shape[:2]
        h = self.preproj(x_t.reshape(b, p, -1))
        h = h + torch.cat([self.agent_emb[:1], self.agent_emb[1:].expand(p - 1, -1)], dim=0)[None]
        if bool((t == t[0]).all()) and bool((cond == cond[:1]).all()):  # sampling: one condition for all K
            y = (self.t_mlp(timestep_embedding(t[:1], h.shape[-1])) + cond[:1]).expand(b, -1)
            mods = [block.ada(y[:1]).expand(b, -1) for block in self.blocks]
        else:
            y = self.t_mlp(timestep_embedding(t, h.shape[-1])) + cond
            mods = [block.ada(y) for block in self.blocks]
        for block, kv, mod in zip(self.blocks, memory, mods):
            h = block(h, mod, kv, scene_pad, tok_pad)
        shift, scale = self.final_ada(y).chunk(2, dim=-1)
        out = self.final(modulate(self.final_norm(h), shift, scale))
        return out.reshape(b, p, -1, 4)


class DiffusionPlannerNet(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = SceneEncoder(cfg)
        self.decoder = DiTDecoder(cfg)
        # State normalisation of trajectories (x, y, cos, sin) per waypoint, ego and neighbours; set from data.
        t1 = cfg.future_steps + 1
        self.register_buffer("ego_mean", torch.zeros(t1, 4))
        self.register_buffer("ego_std", torch.ones(t1, 4))
        self.register_buffer("nb_mean", torch.zeros(t1, 4))
        self.register_buffer("nb_std", torch.ones(t1, 4))

    def _stats(self, p: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(1, P, T+1, 4) mean and std; cached for sampling (the buffers do not change then)."""
        key = (p, self.ego_mean.data_ptr(), self.ego_mean._version, self.nb_std._version)
        cached = getattr(self, "_stats_cache", None)
        if cached is not None and cached[0] == key and not self.training:
            return cached[1]
        mean = torch.cat([self.ego_mean[None], self.nb_mean[None].expand(p - 1, -1, -1)])[None]
        std = torch.cat([self.ego_std[None], self.nb_std[None].expand(p - 1, -1, -1)])[None]
        self._stats_cache = (key, (mean, std))
        return mean, std

    def normalize(self, traj: torch.Tensor) -> torch.Tensor:
        """(B, P, T+1, 4) metres -> normalised (ego row 0, neighbours rows 1..)."""
        mean, std = self._stats(traj.shape[1])
        return (traj - mean) / std

    def denormalize(self, traj: torch.Tensor) -> torch.Tensor:
        mean, std = self._stats(traj.shape[1])
        return traj * std + mean

    def load_state_dict(self, state, strict: bool = True, assign: bool = False):  # type: ignore[override]
        """Accept checkpoints whose statistics are one row (4,) for every waypoint."""
        state = dict(state)
        for k in ("ego_mean", "ego_std", "nb_mean", "nb_std"):
            if k in state and state[k].dim() == 1:
                state[k] = state[k][None].expand(self.cfg.future_steps + 1, -1).clone()
        return super().load_state_dict(state, strict, assign)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
