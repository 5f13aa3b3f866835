"""VP-SDE (linear beta 0.1..20), the x0-prediction training loss, and DPM-Solver++ (2nd order,
multistep) sampling with the first waypoint pinned and guidance applied to each x0 estimate."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

BETA_MIN = 0.1
BETA_MAX = 20.0
T_EPS = 1e-3


def log_alpha(t: torch.Tensor) -> torch.Tensor:
    return -0.25 * t**2 * (BETA_MAX - BETA_MIN) - 0.5 * t * BETA_MIN


def alpha_sigma(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    la = log_alpha(t)
    return torch.exp(la), torch.sqrt(1.0 - torch.exp(2.0 * la))


def lam(t: torch.Tensor) -> torch.Tensor:
    la = log_alpha(t)
    return la - 0.5 * torch.log(1.0 - torch.exp(2.0 * la))


def t_of_lambda(lmb: torch.Tensor) -> torch.Tensor:
    """Inverse of lambda(t) = log(alpha_t / sigma_t) for the linear schedule."""
    tmp = 2.0 * (BETA_MAX - BETA_MIN) * torch.logaddexp(-2.0 * lmb, torch.zeros_like(lmb))
    return tmp / (torch.sqrt(BETA_MIN**2 + tmp) + BETA_MIN) / (BETA_MAX - BETA_MIN)


def diffusion_loss(
    denoise: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], x0: torch.Tensor, valid: torch.Tensor,
    ego_weights: torch.Tensor | None = None, ego_mask: torch.Tensor | None = None,
    t: torch.Tensor | None = None, noise: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """MSE between predicted and true x0 on the future part, for the ego and valid neighbours.

    x0: (B, P, T+1, 4) normalised; row 0 of each trajectory is the current state and stays clean.
    valid: (B, P, T+1) bool. ``ego_weights`` (T,) or per sample (B, T) weighs the ego's waypoints (None: equal).
    ``ego_mask`` (B, T+1): the ego waypoints that are labels (None: all). A recording that ends
    before 8 s has an ego plan whose tail is only extrapolated: the network sees it, as it sees
    a whole plan at inference, but is not taught it. ``t`` (B,) and ``noise`` (like x0): drawn
    here when None (a training process given its share of a global batch's draws passes them).
    Returns (total, ego loss, neighbour loss).
    """
    b = x0.shape[0]
    if t is None:
        t = torch.rand(b, device=x0.device) * (1.0 - T_EPS) + T_EPS
    a, s = alpha_sigma(t)
    if noise is None:
        noise = torch.randn_like(x0)
    x_t = a[:, None, None, None] * x0 + s[:, None, None, None] * noise
    x_t[:, :, 0] = x0[:, :, 0]
    x_t = x_t * valid[..., None]
    pred = denoise(x_t, t)
    err = ((pred - x0) ** 2).sum(-1)[:, :, 1:]
    mask = valid[:, :, 1:].float()
    ego_err = err[:, 0] * ego_weights if ego_weights is not None else err[:, 0]
    if ego_mask is None:
        ego = ego_err.mean()
    else:
        taught = ego_mask[:, 1:].float()
        ego = (ego_err * taught).sum() / taught.sum().clamp(min=1.0)
    nb_mask = mask[:, 1:]
    nb = (err[:, 1:] * nb_mask).sum() / nb_mask.sum().clamp(min=1.0)
    return ego + nb, ego, nb


@dataclass
class Trace:
    """What one sampling run went through, for the denoising animation."""

    times: list[float] = field(default_factory=list)
    x_t: list[torch.Tensor] = field(default_factory=list)  # normalised, (K, P, T+1, 4)
    x0: list[torch.Tensor] = field(default_factory=list)  # guided x0 estimates
    guidance: list[torch.Tensor] = field(default_factory=list)  # x0 change made by guidance


def dpm_solver_pp(
    denoise: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    x_T: torch.Tensor,
    current: torch.Tensor,
    steps: int = 10,
    guide: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    trace: Trace | None = None,
) -> torch.Tensor:
    """DPM-Solver++(2M) from t=1 to t=eps with ``steps`` model evaluations (logSNR-uniform times).

    ``current`` (K, P, 4): the pinned first waypoints. ``guide(x0, t)`` returns a corrected x0.
    """
    device = x_T.device
    lambdas = torch.linspace(float(lam(torch.tensor(1.0))), float(lam(torch.tensor(T_EPS))), steps + 1, device=device)
    ts = t_of_lambda(lambdas)
    x = x_T.clone()
    x[:, :, 0] = current
    prev_d: torch.Tensor | None = None
    prev_h: float | None = None
    for i in range(steps):
        t_i = ts[i].expand(x.shape[0])
        d = denoise(x, t_i)
        d[:, :, 0] = current
        if guide is not None:
            guided = guide(d, t_i)
            guided[:, :, 0] = current
        else:
            guided = d
        if trace is not None:
            trace.times.append(float(ts[i]))
            trace.x_t.append(x.detach().clone())
            trace.x0.append(guided.detach().clone())
            trace.guidance.append((guided - d).detach().clone())
        d = guided
        a_next, s_next = alpha_sigma(ts[i + 1])
        _, s_cur = alpha_sigma(ts[i])
        h = float(lambdas[i + 1] - lambdas[i])
        if prev_d is None or prev_h is None:
            d_eff = d
        else:
            r = prev_h / h
            d_eff = (1.0 + 0.5 / r) * d - (0.5 / r) * prev_d
        x = (s_next / s_cur) * x - a_next * torch.expm1(torch.tensor(-h, device=device)) * d_eff
        x[:, :, 0] = current
        prev_d, prev_h = d, h
    return x
