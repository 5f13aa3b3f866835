"""Planner training on 2 processes (torch.distributed, gloo, launched as `torchrun --standalone`
launches them) follows the 1-process run at the same global batch: the same samples and draws,
split over the processes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engines.core import EngineError
from engines.core.distributed import finish, launch_local
from engines.planner.data import generate_dataset
from engines.planner.model import ModelConfig
from engines.planner.train import TrainParams, train
from tests.conftest import PROCESSES

pytestmark = PROCESSES

TINY = ModelConfig(dim=32, heads=2, encoder_layers=1, decoder_layers=1)
PARAMS = TrainParams(minutes=5.0, batch=16, max_steps=4, log_every=1)


def _process(data: str, out: str) -> int:
    """One training process, in the environment torchrun gives it (RANK, WORLD_SIZE, the store)."""
    torch.set_num_threads(1)
    try:
        return train([Path(data)], Path(out), PARAMS, model_config=TINY)["steps"]
    finally:
        finish()


def _losses(path: Path) -> list[tuple[float, float]]:
    history = torch.load(path, map_location="cpu", weights_only=False)["history"]
    return [(h["ego_loss"], h["neighbor_loss"]) for h in history]


def test_two_processes_train_like_one_at_the_same_global_batch(tmp_path: Path) -> None:
    data = tmp_path / "d.npz"
    generate_dataset(data, episodes=1, seed=3)
    train([data], tmp_path / "one.pt", PARAMS, model_config=TINY)
    assert launch_local(_process, 2, str(data), str(tmp_path / "two.pt")) == {0: PARAMS.max_steps, 1: PARAMS.max_steps}
    one, two = _losses(tmp_path / "one.pt"), _losses(tmp_path / "two.pt")
    assert len(one) == len(two) == PARAMS.max_steps
    assert one[0][0] > 0 and one[-1] != one[0]
    # the same samples, times and noise; only the masked means are taken per share, then averaged
    assert torch.allclose(torch.tensor(two), torch.tensor(one), rtol=0.05)


def test_a_batch_that_does_not_split_over_the_processes_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from engines.core.distributed import Group

    with pytest.raises(EngineError, match="does not split evenly over 3"):
        Group(rank=0, world=3).share(16)
    assert Group().share(16) == slice(0, 16)
