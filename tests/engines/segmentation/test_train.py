"""The prior's training command: a few seconds of real training, resuming, and the loss pieces."""
from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from engines.core import EngineError
from engines.core.batch_stream import BatchStream
from engines.segmentation.prior import ObjectPrior, count_parameters, load_checkpoint, load_prior
from engines.segmentation.prior_data import ObjectPool, make_sample
from engines.segmentation.train import TrainParams, train_prior, training_samples, yaw_loss


def test_yaw_loss_respects_symmetry() -> None:
    target = torch.tensor([0.3, 0.3, 0.3, 0.3])
    pred = target + torch.tensor([math.pi, math.pi, math.pi / 2, 1.0])
    sym = torch.tensor([1, 2, 4, 0])
    loss = yaw_loss(pred, target, sym)
    assert loss[0] == pytest.approx(2.0, abs=1e-5)  # no symmetry: half a turn is the worst
    assert loss[1] == pytest.approx(0.0, abs=1e-5)  # 2-fold: half a turn is the same shape
    assert loss[2] == pytest.approx(0.0, abs=1e-5)  # 4-fold: a quarter turn too
    assert loss[3] == 0.0  # round: any yaw


def test_samples_are_normalised_crops_with_clean_targets() -> None:
    rng = np.random.default_rng(0)
    pool = ObjectPool(8, rng)
    s = make_sample(pool, rng)
    assert s.inputs.shape == (512, 3) and np.abs(s.inputs).max() <= 0.5 + 1e-5
    assert s.queries.shape == (1024, 3) and s.sdf.shape == (1024,)
    uniform = s.queries[-102:]
    assert np.abs(uniform).max() <= 0.55 + 1e-5
    assert np.median(np.abs(s.sdf[:600])) < 0.05  # most queries near the surface
    assert abs(s.pitch) <= math.radians(15) + 1e-9 and abs(s.roll) <= math.radians(15) + 1e-9


def test_model_size_is_a_few_hundred_thousand_parameters() -> None:
    n = count_parameters(ObjectPrior())
    assert 100_000 <= n <= 500_000


def test_short_training_writes_and_resumes(tmp_path: Path) -> None:
    ckpt = tmp_path / "p.pt"
    params = TrainParams(minutes=0.04, batch=4, pool=6, inputs=128, queries=128, val_size=8, save_every_s=1.0)
    first = train_prior(ckpt, params)
    assert ckpt.exists() and first.steps > 0 and {"l1_near_surface", "mask_iou"} <= set(first.metrics)
    second = train_prior(ckpt, params)
    assert second.steps > first.steps and second.wall_seconds > first.wall_seconds
    _, payload = load_checkpoint(ckpt)
    assert payload["state"]["step"] == second.steps and "optimizer" in payload
    with pytest.raises(EngineError, match="seed"):
        train_prior(ckpt, TrainParams(minutes=0.01, seed=5, batch=2, pool=4, val_size=4))


def _samples(workers: int, clutter: float) -> list:
    params = TrainParams(batch=3, pool=4, inputs=64, queries=64)
    with BatchStream(training_samples, ((0, 0), params, params.batch), workers, knob=clutter) as stream:
        return [s for batch in itertools.islice(stream, 3) for s in batch]


def test_samples_made_in_a_worker_are_those_made_here_and_follow_the_curriculum() -> None:
    local, remote = _samples(0, 1.0), _samples(1, 1.0)
    assert len(local) == len(remote) == 9
    for a, b in zip(local, remote):
        assert np.array_equal(a.inputs, b.inputs) and np.array_equal(a.sdf, b.sdf)
    assert any(s.clutter.any() for s in local)  # all cluttered (some crops have no neighbour in reach)
    assert not any(s.clutter.any() for s in _samples(0, 0.0))  # the clean start


def test_bad_checkpoint_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(EngineError, match="not a segmentation prior"):
        load_prior(bad)
    with pytest.raises(EngineError, match="not found"):
        load_prior(tmp_path / "missing.pt")


def test_fine_tuning_an_old_checkpoint_takes_this_runs_input_normalisation(tmp_path: Path) -> None:
    from dataclasses import asdict

    from engines.segmentation.prior import PriorConfig

    old = tmp_path / "old.pt"
    cfg = asdict(PriorConfig())
    del cfg["voxel"]  # written before the field existed
    torch.save({"config": cfg, "model": ObjectPrior().state_dict(), "state": {"step": 3, "elapsed_s": 1.0, "seed": 0}}, old)
    assert load_prior(old).config.voxel == 0.0  # old checkpoints keep plain subsampling at inference
    params = TrainParams(minutes=0.02, batch=2, pool=4, inputs=64, queries=64, val_size=4, voxel=0.05)
    result = train_prior(old, params)
    assert result.steps > 3 and load_checkpoint(old)[0].config.voxel == 0.05
    assert {"held_out_mask_iou", "held_out_trivial_iou", "trivial_iou"} <= set(result.metrics)
    with pytest.raises(EngineError, match="model must be one of"):
        TrainParams(model="huge")
    with pytest.raises(EngineError, match="pool"):
        TrainParams(pool=1)


def test_check_priors_measures_each_prior_on_the_same_held_out_crops(tmp_path: Path) -> None:
    from engines.segmentation.prior import MODEL_SIZES, save_checkpoint
    from engines.segmentation.train import check_priors

    torch.manual_seed(0)
    blank = save_checkpoint(tmp_path / "blank.pt", ObjectPrior(MODEL_SIZES["large"]), None, {})
    result = check_priors({"shipped": None, "untrained": blank}, n=4)
    assert result.categories == ("plant", "rack", "ladder_like") and result.samples == 4
    assert 0 < result.trivial_iou < 1 and set(result.mask_iou) == {"shipped", "untrained"}
    assert result.mask_iou["shipped"] != result.mask_iou["untrained"]
