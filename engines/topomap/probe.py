"""Run a network on stimuli and collect its unit responses per layer (torch, no gradients)."""

from __future__ import annotations

import numpy as np
import torch

BATCH = 256


@torch.no_grad()
def unit_responses(model: torch.nn.Module, images: np.ndarray, stage: str = "post", max_positions: int = 64) -> list[np.ndarray]:
    """Responses per layer, each [N, K, S] (S spatial positions, average-pooled to at most
    ``max_positions`` so large early maps stay cheap), in eval mode.

    ``stage`` "pre" is the convolution's output before normalisation (what the reference analysis
    measures d' on); "post" is the unit's rectified output after batch norm and ReLU.
    """
    was_training = model.training
    model.eval()
    chunks: list[list[torch.Tensor]] = []
    try:
        for start in range(0, len(images), BATCH):
            batch = torch.from_numpy(np.ascontiguousarray(images[start : start + BATCH], dtype=np.float32))
            _, pre, post = model(batch)
            chunks.append([_pool(r, max_positions) for r in (pre if stage == "pre" else post)])
    finally:
        model.train(was_training)
    return [torch.cat([c[i] for c in chunks]).numpy() for i in range(len(chunks[0]))]


def _pool(r: torch.Tensor, max_positions: int) -> torch.Tensor:
    side = r.shape[-1]
    while side * side > max_positions and side % 2 == 0:
        r = torch.nn.functional.avg_pool2d(r, 2)
        side //= 2
    return r.flatten(2)


@torch.no_grad()
def accuracy(model: torch.nn.Module, images: np.ndarray, labels: np.ndarray) -> float:
    """Held-out accuracy in percent."""
    was_training = model.training
    model.eval()
    correct = 0
    try:
        for start in range(0, len(images), BATCH):
            logits, _, _ = model(torch.from_numpy(images[start : start + BATCH]))
            correct += int((logits.argmax(1).numpy() == labels[start : start + BATCH]).sum())
    finally:
        model.train(was_training)
    return 100.0 * correct / max(len(labels), 1)
