"""Edit-model training on 2 processes (torch.distributed, gloo, launched as `torchrun --standalone`
launches them) follows the 1-process run at the same global batch: every process makes the same
batches and trains on its rows."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engines.core import EngineError
from engines.core.distributed import finish, launch_local
from engines.sketcher.train import TrainParams, load_checkpoint, train
from tests.conftest import PROCESSES

pytestmark = PROCESSES

# a large lr: the first steps' warm-up would otherwise barely move the weights
SETTINGS = {"minutes": 5.0, "batch_size": 8, "lr": 0.05, "validation_size": 8, "max_steps": 4, "log_every": 1}


def _process(out: str) -> dict[str, int]:
    """One training process, in the environment torchrun gives it, its batches made by a data
    worker; what it did: steps, checkpoint writes, progress reports."""
    import engines.sketcher.train as module

    torch.set_num_threads(1)
    torch.manual_seed(0)  # the model's first weights (DDP gives every process rank 0's)
    writes, reports = [], []
    atomic_path = module.atomic_path

    def counted(path):
        writes.append(path)
        return atomic_path(path)

    module.atomic_path = counted
    try:
        result = train(TrainParams(out=out, data_workers=1, **SETTINGS), progress=lambda f, t: reports.append(t))
        return {"steps": result.steps, "writes": len(writes), "reports": len(reports), "metrics": len(result.metrics)}
    finally:
        finish()


def test_two_processes_train_like_one_at_the_same_global_batch(tmp_path: Path) -> None:
    torch.manual_seed(0)
    one = train(TrainParams(out=str(tmp_path / "one.pt"), data_workers=0, **SETTINGS))
    done = launch_local(_process, 2, str(tmp_path / "two.pt"))
    steps = SETTINGS["max_steps"]
    # rank 0 alone reported, validated and wrote the checkpoint (once, at the end); rank 1 only trained
    assert done[0]["steps"] == done[1]["steps"] == one.steps == steps
    assert done[0]["writes"] == 1 and done[0]["reports"] > steps and done[0]["metrics"] > 0
    assert done[1] == {"steps": steps, "writes": 0, "reports": 0, "metrics": 0}
    first, second = load_checkpoint(tmp_path / "one.pt"), load_checkpoint(tmp_path / "two.pt")
    losses = torch.tensor([[h[2] for h in ckpt["history"]] for ckpt in (first, second)])
    assert losses.shape == (2, steps) and bool(torch.isfinite(losses).all())
    assert (losses[0].max() - losses[0].min()) / losses[0].mean() > 0.002  # other batches, other losses
    # the same examples, each process's sums divided by the counts of the whole batch, the gradients
    # averaged: float round-off apart (2.4e-7 here; training on each process's rows alone: 0.07)
    assert torch.allclose(losses[1], losses[0], rtol=1e-4)
    assert second["step"] == steps and set(second["metrics"]) == set(first["metrics"])


def test_impossible_settings_fail_before_any_data_is_made(tmp_path: Path) -> None:
    for bad, message in (({"max_steps": 0}, "max_steps"), ({"log_every": 0}, "recorded every"), ({"batch_size": 0}, "batch size")):
        with pytest.raises(EngineError, match=message):
            train(TrainParams(minutes=1.0, out=str(tmp_path / "m.pt"), **bad))
    assert not (tmp_path / "m.pt").exists()
