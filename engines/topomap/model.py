"""The networks a run trains (torch): a small CNN whose convolutions sit on square grids, and a
classic Kohonen map fitted to the input pixels.

Every convolution is "self-organising": its K kernels are units on a sqrt(K) x sqrt(K) grid (unit
k at row k // side, column k % side). conv1 has 5x5 kernels (so first-layer filters can be tuned to
orientation and frequency on 16 x 16 images), deeper layers 3x3; each conv is followed by batch norm
and ReLU, and 2x2 max-pooling while the maps are larger than 4 x 4.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .analysis import grid_positions
from .params import TrainParams


class TopoCNN(nn.Module):
    def __init__(self, widths: tuple[int, ...], n_classes: int, image_size: int = 16) -> None:
        super().__init__()
        self.widths = tuple(widths)
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.pool_after: list[bool] = []
        channels, size = 1, image_size
        for i, width in enumerate(self.widths):
            kernel = 5 if i == 0 else 3
            self.convs.append(nn.Conv2d(channels, width, kernel, padding=kernel // 2))
            self.norms.append(nn.BatchNorm2d(width))
            pool = i < len(self.widths) - 1 and size > 4
            self.pool_after.append(pool)
            size = size // 2 if pool else size
            channels = width
        self.fc = nn.Linear(channels, n_classes)
        for conv in self.convs:
            nn.init.kaiming_normal_(conv.weight, mode="fan_out", nonlinearity="relu")
        for i, width in enumerate(self.widths):
            self.register_buffer(f"positions{i}", torch.tensor(grid_positions(width), dtype=torch.float32), persistent=False)

    def positions(self, layer: int) -> torch.Tensor:
        return getattr(self, f"positions{layer}")

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """Logits, the conv outputs (pre-norm, for AB-SOM's BMU) and the unit responses (post-ReLU)."""
        pre: list[torch.Tensor] = []
        post: list[torch.Tensor] = []
        for conv, norm, pool in zip(self.convs, self.norms, self.pool_after):
            z = conv(x)
            x = F.relu(norm(z))
            pre.append(z)
            post.append(x)
            if pool:
                x = F.max_pool2d(x, 2)
        return self.fc(x.mean(dim=(2, 3))), pre, post


class KohonenMap(nn.Module):
    """A classic SOM: K prototype images on a grid, fitted to the inputs, never to the labels.

    A unit's response to an image is exp(-||x - w||^2 / D) (D = pixels): positive, and largest for
    the best-matching unit. ``labels`` (the majority training class of each unit's wins)
    turn the map into a classifier for the accuracy column.
    """

    def __init__(self, width: int, n_classes: int, image_size: int = 16) -> None:
        super().__init__()
        self.width = width
        self.weight = nn.Parameter(torch.zeros(width, image_size * image_size), requires_grad=False)
        self.register_buffer("labels", torch.zeros(width, dtype=torch.long))
        self.register_buffer("positions0", torch.tensor(grid_positions(width), dtype=torch.float32), persistent=False)
        self.n_classes = n_classes

    def responses(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(x.shape[0], -1)
        return torch.exp(-torch.cdist(flat, self.weight).pow(2) / flat.shape[1])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        r = self.responses(x)
        logits = F.one_hot(self.labels[r.argmax(dim=1)], self.n_classes).float()
        return logits, [r[..., None, None]], [r[..., None, None]]

    @torch.no_grad()
    def init_from(self, images: torch.Tensor, generator: torch.Generator) -> None:
        """Start from small noise around the data mean (the map unfolds from there)."""
        flat = images.reshape(images.shape[0], -1)
        noise = torch.randn(self.weight.shape, generator=generator) * flat.std(dim=0, keepdim=True) * 0.1
        self.weight.copy_(flat.mean(dim=0, keepdim=True) + noise)

    @torch.no_grad()
    def step(self, x: torch.Tensor, alpha: float, sigma: float) -> float:
        """One mini-batch Kohonen step: every unit moves toward the inputs its grid-neighbourhood won.

        Returns the mean quantisation error (squared distance to the BMU), the SOM's "loss".
        """
        flat = x.reshape(x.shape[0], -1)
        dist = torch.cdist(flat, self.weight).pow(2)
        qe, bmu = dist.min(dim=1)
        pos = self.positions0
        h = torch.exp(-((pos[None] - pos[bmu][:, None]) ** 2).sum(-1) / (2 * sigma**2))  # [B, K]
        pull = (h[..., None] * (flat[:, None, :] - self.weight[None])).mean(dim=0)
        self.weight.add_(alpha * pull)
        return float(qe.mean())

    @torch.no_grad()
    def assign_labels(self, images: torch.Tensor, labels: torch.Tensor) -> None:
        """Label each unit by the majority class of the training images it wins; units that win
        nothing take the class whose mean image is nearest."""
        flat = images.reshape(images.shape[0], -1)
        bmu = torch.cdist(flat, self.weight).argmin(dim=1)
        votes = torch.zeros(self.width, self.n_classes)
        votes.index_put_((bmu, labels), torch.ones(len(labels)), accumulate=True)
        means = torch.stack([flat[labels == c].mean(0) if (labels == c).any() else flat.mean(0) for c in range(self.n_classes)])
        nearest = torch.cdist(self.weight, means).argmin(dim=1)
        self.labels.copy_(torch.where(votes.sum(1) > 0, votes.argmax(1), nearest))


def build_model(params: TrainParams, n_classes: int) -> nn.Module:
    """The network a run of ``params`` trains (and a run file's weights are loaded into)."""
    if params.method == "som":
        return KohonenMap(params.som_width, n_classes)
    return TopoCNN(params.widths, n_classes)
