"""The shared training loop on tiny configurations: every method runs, resumes and writes run files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from engines.core import Cancelled, CancelToken, EngineError
from engines.topomap.data import load_dataset
from engines.topomap.params import METHODS, TrainParams
from engines.topomap.runfile import load_run
from engines.topomap.train import checkpoint_path, snapshot_epochs, train

TINY = TrainParams(epochs=2, widths=(4, 9), batch_size=32, som_width=16, snapshots=3, tau=1.0)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_trains_and_writes_a_run(method: str, tmp_path: Path) -> None:
    out = tmp_path / f"{method}.topomap.pt"
    seen: list[float] = []
    result = train(replace(TINY, method=method), out=out, progress=lambda f, t: seen.append(f))
    assert out.exists() and not checkpoint_path(out).exists()
    assert 0.0 <= result.accuracy <= 100.0 and result.accuracy > 15.0  # better than chance (10 classes)
    layers = ("som",) if method == "som" else ("conv1", "conv2")
    assert tuple(result.smoothness) == layers
    assert all(0.0 <= v <= 1.0 for v in result.smoothness.values())
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)
    record = load_run(out)
    assert [s.epoch for s in record.snapshots] == [0, 1, 2]
    assert len(record.history) == 2 and record.history[-1].test_accuracy == pytest.approx(result.accuracy)
    assert record.snapshots[-1].layers[0].dprime.shape == (10, 16 if method == "som" else 4)


@pytest.mark.parametrize("data, classes", [("gratings", 8), ("shapes", 8)])
def test_procedural_data_sets_train(data: str, classes: int) -> None:
    """One seeded epoch learns: held-out accuracy clears chance (1/classes) by 5 points, which is
    also above the largest class's share (about 16%); seeds 0-3 measured 22-37%."""
    assert len(load_dataset(data).classes) == classes
    result = train(replace(TINY, data=data, epochs=1, snapshots=2))
    assert result.data == data and result.seed == 0
    assert 100.0 / classes + 5.0 < result.accuracy <= 100.0
    assert set(result.pinwheels) == {"conv1", "conv2"}


def test_cbsom_step_updates_every_conv_layer_around_its_credit_bmu() -> None:
    """One step from the same weights and batch: CB-SOM = plain SGD + the neighbourhood rule per layer."""
    from engines.topomap.model import build_model
    from engines.topomap.selforg import credit_bmu, neighbourhood_update
    from engines.topomap.train import _sgd_step

    params = replace(TINY, widths=(4, 9, 16))
    torch.manual_seed(0)
    xb, yb = torch.randn(8, 1, 16, 16), torch.arange(8) % 10
    nets = {}
    for method in ("none", "cbsom"):
        torch.manual_seed(1)
        model = build_model(replace(params, method=method), 10)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        _sgd_step(model, opt, xb, yb, replace(params, method=method), step=0, total=100)
        nets[method] = model
    for i, (plain, som) in enumerate(zip(nets["none"].convs, nets["cbsom"].convs)):
        assert torch.allclose(plain.weight.grad, som.weight.grad)
        expected = plain.weight.detach().clone()
        sigma = float(plain.out_channels) ** 0.5
        neighbourhood_update(expected, credit_bmu(plain.weight.grad), nets["none"].positions(i), params.alpha0, sigma)
        assert not torch.allclose(som.weight, plain.weight), f"conv{i + 1} was not self-organised"
        assert torch.allclose(som.weight, expected, atol=1e-6), f"conv{i + 1}"


def test_cancel_then_resume_gives_the_same_run(tmp_path: Path) -> None:
    params = replace(TINY, method="cbsom")
    straight = tmp_path / "straight.topomap.pt"
    train(params, out=straight)

    out = tmp_path / "resumed.topomap.pt"
    cancel = CancelToken()

    def stop_after_first(update) -> None:
        if len(update.history) == 1:
            cancel.cancel()

    with pytest.raises(Cancelled):
        train(params, out=out, cancel=cancel, partial=stop_after_first)
    assert checkpoint_path(out).exists() and not out.exists()
    result = train(params, out=out)
    assert result.resumed_from_epoch == 1
    a, b = load_run(straight), load_run(out)
    for key in a.state:
        assert torch.equal(a.state[key], b.state[key]), key
    assert [h.test_accuracy for h in a.history] == [h.test_accuracy for h in b.history]


def test_a_checkpoint_of_other_parameters_is_not_resumed(tmp_path: Path) -> None:
    out = tmp_path / "run.topomap.pt"
    cancel = CancelToken()
    with pytest.raises(Cancelled):
        train(TINY, out=out, cancel=cancel, partial=lambda u: cancel.cancel())
    result = train(replace(TINY, seed=5), out=out)
    assert result.resumed_from_epoch == 0


def test_snapshot_epochs_cover_both_ends() -> None:
    assert snapshot_epochs(40, 10) == [0, 4, 9, 13, 18, 22, 27, 31, 36, 40]
    assert snapshot_epochs(2, 10) == [0, 1, 2]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"widths": (16, 30)}, "not a square number"),
        ({"som_width": 50, "method": "som"}, "not a square number"),
        ({"epochs": 0}, "epochs"),
        ({"method": "kohonen"}, "unknown method"),
        ({"data": "mnist"}, "unknown data set"),
        ({"lr": -1.0}, "learning rate"),
        ({"alpha0": 2.0}, "alpha0"),
        ({"alpha0": float("nan")}, "alpha0"),
        ({"method": "topoloss", "topo_factor": 3.0, "widths": (4, 9)}, "larger than conv1"),
        ({"widths": ()}, "layer widths"),
        ({"widths": (16, 16, 16, 16, 16)}, "layer widths"),
        ({"widths": (400,)}, "at most"),
        ({"batch_size": 1}, "batch size"),
        ({"lr_schedule": "linear"}, "learning-rate schedule"),
    ],
)
def test_impossible_parameters_are_one_clear_error(change: dict, message: str) -> None:
    with pytest.raises(EngineError, match=message):
        train(replace(TINY, **change))


def test_compare_parameters_are_checked_before_any_training() -> None:
    from engines.topomap.compare import compare
    from engines.topomap.params import CompareParams

    with pytest.raises(EngineError, match="seeds"):
        compare(CompareParams(seeds=0))
    with pytest.raises(EngineError, match="first seed"):
        compare(CompareParams(first_seed=-1))
    with pytest.raises(EngineError, match="not a square number"):
        compare(CompareParams(base=replace(TINY, widths=(8,))))
    assert CompareParams(first_seed=100).run_params("absom", 101) == replace(TrainParams(), method="absom", seed=101)


def test_training_data_sets_are_fixed_and_standardised() -> None:
    from engines.topomap.data import load_dataset

    for name, classes in (("digits", 10), ("gratings", 8), ("shapes", 8)):
        data = load_dataset(name)
        assert data.x_train.shape[1:] == (1, 16, 16) and data.n_classes == classes
        assert abs(float(data.x_train.mean())) < 1e-3 and abs(float(data.x_train.std()) - 1.0) < 1e-3
        assert set(np.unique(data.y_test)) == set(range(classes))
