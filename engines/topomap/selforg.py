"""The self-organisation rules that run after (or inside) each SGD step (torch).

CB-SOM and AB-SOM share one neighbourhood update and differ only in how the best-matching unit
(BMU) is chosen:
- CB-SOM (credit-based): the kernel with the largest gradient norm ||dL/dW_k|| (top-down credit);
- AB-SOM (activation-based): the kernel with the largest batch-mean activation map (its norm, as
  in the reference implementation): a bottom-up choice.
Then every kernel moves toward the BMU's weights:
    W_k += alpha(t) * exp(-||p_k - p_BMU||^2 / (2 sigma(t)^2)) * (W_BMU - W_k)
with alpha(t) = alpha0 e^(-decay t/T), sigma(t) = sigma0 e^(-decay t/T), floored (paper: 0.003).

TopoLoss (TopoNets) is a differentiable alternative: 1 - cos(W, up(down(W))) on the cortical
sheet view of each layer's weights, added to the task loss with weight tau.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def schedule(step: int, total: int, start: float, decay: float, floor: float) -> float:
    """start * exp(-decay * step / total), never below ``floor``."""
    return max(floor, start * math.exp(-decay * step / max(total, 1)))


def credit_bmu(weight_grad: torch.Tensor) -> int:
    """CB-SOM: the kernel whose weights got the largest gradient norm this step."""
    return int(weight_grad.reshape(weight_grad.shape[0], -1).norm(dim=1).argmax())


def activation_bmu(conv_output: torch.Tensor) -> int:
    """AB-SOM: the kernel with the strongest batch-mean activation map."""
    mean_map = conv_output.detach().mean(dim=0)
    return int(mean_map.reshape(mean_map.shape[0], -1).norm(dim=1).argmax())


@torch.no_grad()
def neighbourhood_update(weight: torch.Tensor, bmu: int, positions: torch.Tensor, alpha: float, sigma: float) -> torch.Tensor:
    """Pull every kernel toward the BMU's kernel, weighted by a Gaussian of grid distance.

    Returns the neighbourhood weights alpha * h_k (for tests and diagnostics).
    """
    flat = weight.view(weight.shape[0], -1)
    d2 = ((positions - positions[bmu]) ** 2).sum(dim=1)
    rate = alpha * torch.exp(-d2 / (2.0 * sigma**2))
    flat.add_(rate[:, None] * (flat[bmu][None, :] - flat))
    return rate


def cortical_sheet(weight: torch.Tensor) -> torch.Tensor:
    """A conv weight [K, C, kh, kw] as an image [1, C*kh*kw, side, side] (unit k at k // side, k % side)."""
    k = weight.shape[0]
    side = math.isqrt(k)
    return weight.reshape(side, side, -1).permute(2, 0, 1).unsqueeze(0)


def topo_loss(weight: torch.Tensor, factor: float) -> torch.Tensor:
    """TopoNets' loss: 1 - mean cosine(W, bilinear-upsample(bilinear-downsample(W, 1/factor)))."""
    sheet = cortical_sheet(weight)
    side = sheet.shape[-1]
    small = max(1, int(side / factor))
    blurred = F.interpolate(
        F.interpolate(sheet, size=(small, small), mode="bilinear", align_corners=False), size=(side, side), mode="bilinear", align_corners=False
    )
    a = sheet.flatten(2).squeeze(0).T  # [K, e]
    b = blurred.flatten(2).squeeze(0).T
    return 1.0 - F.cosine_similarity(a, b, dim=1).mean()
