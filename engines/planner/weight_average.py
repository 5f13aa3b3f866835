"""Weight averaging of planner checkpoints that share a starting point (WiSE-FT, model soups).

A model fine-tuned from the shipped one stays in its basin, so a weighted mean of the two
keeps much of the fine-tune's gain on the training distribution and much of the start's
robustness away from it (Wortsman et al., 2022). Checkpoints with other architectures or
another waypoint normalisation cannot be averaged: their weights live in different units.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from engines.core import EngineError, atomic_path
from engines.core.checkpoint import read_checkpoint

from .planners.diffusion_planner import FORMAT

NORMALISATION = ("ego_mean", "ego_std", "nb_mean", "nb_std")


def _load(path: Path) -> dict:
    state = read_checkpoint(path, "planner checkpoint", keys=("config", "model"), fmt=FORMAT)
    if not isinstance(state["model"], dict) or not all(torch.is_tensor(v) for v in state["model"].values()):
        raise EngineError(f"{Path(path).name} is not a planner checkpoint: its 'model' entry is not a set of weights")
    return state


def average_checkpoints(paths: Sequence[Path], out: Path, weights: Sequence[float] | None = None) -> dict:
    """Write the weighted mean of the checkpoints' (EMA) weights to ``out``; weights default to equal and are normalised."""
    if len(paths) < 2:
        raise EngineError("averaging needs at least two checkpoints")
    weights = [1.0] * len(paths) if weights is None else [float(w) for w in weights]
    if len(weights) != len(paths):
        raise EngineError(f"{len(weights)} weights for {len(paths)} checkpoints: give one weight per checkpoint")
    if any(not w >= 0 for w in weights) or not sum(weights) > 0:
        raise EngineError("the weights must be zero or positive, and not all zero")
    total = sum(weights)
    states = [_load(Path(p)) for p in paths]
    first, name0 = states[0], Path(paths[0]).name
    for path, state in zip(paths[1:], states[1:]):
        name = Path(path).name
        if state["config"] != first["config"] or state["model"].keys() != first["model"].keys():
            raise EngineError(f"{name} and {name0} are different networks: only fine-tunes of one model can be averaged")
        for key in NORMALISATION:
            if not torch.allclose(state["model"][key].float(), first["model"][key].float(), rtol=1e-3, atol=1e-4):
                raise EngineError(f"{name} and {name0} normalise waypoints differently ({key}): only fine-tunes of one model can be averaged")
    mean = {}
    for key, value in first["model"].items():
        if not value.is_floating_point() or key in NORMALISATION:  # counters and units are kept, not averaged
            mean[key] = value.clone()
        else:
            mean[key] = sum(w / total * s["model"][key].float() for w, s in zip(weights, states))
    sources = [{"file": Path(p).name, "weight": round(w / total, 6), "steps": s.get("meta", {}).get("steps")} for p, w, s in zip(paths, weights, states)]
    meta = {"averaged": sources, "parameters": first.get("meta", {}).get("parameters")}
    with atomic_path(out) as tmp:
        torch.save({"format": FORMAT, "config": first["config"], "model": mean, "meta": meta, "history": []}, tmp)
    return {"out": str(out), "averaged": sources}
