"""The self-organisation rules on constructed weights."""

from __future__ import annotations

import math

import pytest
import torch

from engines.topomap.analysis import grid_positions
from engines.topomap.selforg import activation_bmu, credit_bmu, neighbourhood_update, schedule, topo_loss


def positions(width: int) -> torch.Tensor:
    return torch.tensor(grid_positions(width), dtype=torch.float32)


def test_schedule_decays_exponentially_and_is_floored() -> None:
    assert schedule(0, 100, 0.01, 3.0, 0.003) == pytest.approx(0.01)
    assert schedule(20, 100, 0.01, 3.0, 0.003) == pytest.approx(0.01 * math.exp(-0.6))
    assert schedule(100, 100, 0.01, 3.0, 0.003) == 0.003
    assert schedule(100, 100, 8.0, 3.0, 0.003) == pytest.approx(8.0 * math.exp(-3.0))


def test_bmu_choices() -> None:
    grad = torch.zeros(9, 2, 3, 3)
    grad[7] = 0.5
    grad[2, 0, 0, 0] = 1.0  # one large entry, smaller norm than kernel 7's
    assert credit_bmu(grad) == 7
    out = torch.zeros(4, 9, 5, 5)
    out[:, 4] = 2.0
    out[0, 1] = 6.0  # strongest single response, but a weaker batch mean (1.5 < 2)
    assert activation_bmu(out) == 4


def test_neighbourhood_update_is_the_paper_rule() -> None:
    torch.manual_seed(0)
    weight = torch.randn(16, 3, 3, 3)
    before = weight.clone()
    bmu, alpha, sigma = 5, 0.1, 1.0
    rate = neighbourhood_update(weight, bmu, positions(16), alpha, sigma)
    pos = positions(16)
    for k in range(16):
        h = math.exp(-float(((pos[k] - pos[bmu]) ** 2).sum()) / (2 * sigma**2))
        expected = before[k] + alpha * h * (before[bmu] - before[k])
        assert torch.allclose(weight[k], expected, atol=1e-6)
        assert float(rate[k]) == pytest.approx(alpha * h, rel=1e-5)
    assert torch.equal(weight[bmu], before[bmu])
    # Closer units moved further toward the BMU.
    moved = (weight - before).flatten(1).norm(dim=1) / (before[bmu] - before).flatten(1).norm(dim=1).clamp_min(1e-9)
    assert moved[4] > moved[7] > moved[15]


def test_repeated_updates_make_neighbours_alike() -> None:
    torch.manual_seed(1)
    weight = torch.randn(64, 8)
    pos = positions(64)
    gen = torch.Generator().manual_seed(0)
    for _ in range(500):  # without gradients to oppose it, long enough would collapse every kernel into one
        neighbourhood_update(weight, int(torch.randint(64, (1,), generator=gen)), pos, 0.1, 1.0)
    w = torch.nn.functional.normalize(weight, dim=1)
    cos = w @ w.T
    dist = torch.cdist(pos, pos)
    near = cos[(dist > 0) & (dist <= 1)].mean()
    far = cos[dist >= 5].mean()
    assert near > 0.7 and far < 0.2


def test_topo_loss_is_zero_for_a_uniform_sheet_and_lower_for_smooth_ones() -> None:
    uniform = torch.ones(16, 2, 3, 3)
    assert float(topo_loss(uniform, 2.0)) == pytest.approx(0.0, abs=1e-6)
    torch.manual_seed(0)
    noisy = torch.randn(64, 4, 3, 3)
    rows = positions(64)[:, 0:1]
    smooth = torch.cat([torch.cos(rows / 3), torch.sin(rows / 3)], dim=1).repeat(1, 18).reshape(64, 4, 3, 3)
    assert float(topo_loss(smooth, 2.0)) < 0.1 < float(topo_loss(noisy, 2.0))
    noisy.requires_grad_(True)
    topo_loss(noisy, 2.0).backward()
    assert noisy.grad is not None and noisy.grad.abs().sum() > 0
