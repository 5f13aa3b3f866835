"""Run files: a round trip keeps everything; anything else is one clear error."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from engines.core import EngineError
from engines.topomap.data import load_dataset
from engines.topomap.model import build_model
from engines.topomap.params import TrainParams
from engines.topomap.probe import accuracy
from engines.topomap.runfile import FORMAT, load_run
from engines.topomap.train import train


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, torch.Tensor]]:
    """A tiny run written to a file, with a copy of the weights training handed to save_run."""
    from engines.topomap import train as train_module

    out = tmp_path_factory.mktemp("run") / "tiny.topomap.pt"
    weights: dict[str, torch.Tensor] = {}
    save_run = train_module.save_run

    def keep_weights(path: Path, record):
        weights.update({k: v.detach().clone() for k, v in record.state.items()})
        return save_run(path, record)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(train_module, "save_run", keep_weights)
        train(TrainParams(epochs=1, widths=(4, 9), batch_size=64, snapshots=2), out=out)
    return out, weights


@pytest.fixture(scope="module")
def run_file(trained: tuple[Path, dict[str, torch.Tensor]]) -> Path:
    return trained[0]


def test_round_trip(trained: tuple[Path, dict[str, torch.Tensor]]) -> None:
    """The loaded run carries the trained weights exactly, and they score the recorded accuracy."""
    run_file, weights = trained
    record = load_run(run_file)
    assert record.params.widths == (4, 9) and record.classes == tuple("0123456789")
    assert len(record.snapshots) == 2 and record.snapshots[0].kernels.shape == (4, 5, 5)
    assert "convs.0.weight" in record.state and record.seconds > 0
    assert set(record.state) == set(weights)
    assert all(torch.equal(record.state[k], weights[k]) for k in weights)
    data = load_dataset(record.params.data)
    model = build_model(record.params, data.n_classes)
    model.load_state_dict(record.state)
    assert accuracy(model, data.x_test, data.y_test) == pytest.approx(record.accuracy)


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="no such run file"):
        load_run(tmp_path / "nothing.topomap.pt")
    with pytest.raises(EngineError, match="is a folder"):
        load_run(tmp_path)


def test_garbage_and_truncated_files(run_file: Path, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.topomap.pt"
    garbage.write_bytes(b"this is not a torch archive at all")
    with pytest.raises(EngineError, match="not a topomap run file"):
        load_run(garbage)
    truncated = tmp_path / "truncated.topomap.pt"
    truncated.write_bytes(run_file.read_bytes()[: run_file.stat().st_size // 2])
    with pytest.raises(EngineError, match="truncated or corrupt"):
        load_run(truncated)
    empty = tmp_path / "empty.topomap.pt"
    empty.write_bytes(b"")
    with pytest.raises(EngineError):
        load_run(empty)


def test_foreign_and_tampered_archives(run_file: Path, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.topomap.pt"
    torch.save({"weights": torch.zeros(3)}, foreign)
    with pytest.raises(EngineError, match="is not a topomap run file"):
        load_run(foreign)

    payload = torch.load(run_file, weights_only=True)
    newer = tmp_path / "newer.topomap.pt"
    torch.save({**payload, "version": 99}, newer)
    with pytest.raises(EngineError, match="version 99"):
        load_run(newer)

    bad_width = tmp_path / "bad-width.topomap.pt"
    torch.save({**payload, "params": {**payload["params"], "widths": [4, 10]}}, bad_width)
    with pytest.raises(EngineError, match="not a square number"):
        load_run(bad_width)

    missing = tmp_path / "missing.topomap.pt"
    torch.save({k: v for k, v in payload.items() if k != "snapshots"}, missing)
    with pytest.raises(EngineError, match="damaged"):
        load_run(missing)

    mismatched = tmp_path / "mismatched.topomap.pt"
    torch.save({**payload, "params": {**payload["params"], "widths": [4, 16]}}, mismatched)
    with pytest.raises(EngineError, match="do not match"):
        load_run(mismatched)


def test_run_files_cannot_smuggle_code(tmp_path: Path) -> None:
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    evil = tmp_path / "evil.topomap.pt"
    torch.save({"format": FORMAT, "version": 1, "x": Evil()}, evil)
    with pytest.raises(EngineError, match="asks to run code"):
        load_run(evil)


def test_params_round_trip_through_json() -> None:
    from engines.core import from_dict, to_jsonable

    params = replace(TrainParams(), widths=(16, 36), sigma0=3.0)
    assert from_dict(TrainParams, to_jsonable(params)) == params
