"""Run files whose weights, accuracy or classes contradict the network they describe are one clear
error naming the real problem, never torch's state-dict report; typed widths are parsed strictly."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch

from engines.core import EngineError
from engines.topomap.api import with_widths
from engines.topomap.params import TrainParams, parse_widths
from engines.topomap.runfile import load_run
from engines.topomap.runview import open_run
from engines.topomap.train import train


@pytest.fixture(scope="module")
def payload(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("run") / "tiny.topomap.pt"
    train(TrainParams(epochs=1, widths=(4, 9), batch_size=64, snapshots=2), out=out)
    return torch.load(out, weights_only=True)


def tampered(payload: dict[str, Any], folder: Path, **changes: Any) -> Path:
    path = folder / "tampered.topomap.pt"
    torch.save({**payload, **changes}, path)
    return path


def damaged_states(payload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    state = payload["state"]
    return {
        "empty": {},
        "truncated kernel": {**state, "convs.0.weight": state["convs.0.weight"][:, :, :3, :3].clone()},
        "extra key": {**state, "stray.weight": torch.zeros(2)},
        "not tensors": {k: 1 for k in state},
    }


@pytest.mark.parametrize("case", ["empty", "truncated kernel", "extra key", "not tensors"])
def test_weights_that_do_not_fit_are_one_sentence(payload, tmp_path: Path, case: str) -> None:
    path = tampered(payload, tmp_path, state=damaged_states(payload)[case])
    for opener in (load_run, open_run):
        with pytest.raises(EngineError, match="tampered.topomap.pt is damaged: its weights do not fit the network it describes"):
            opener(path)


def test_weights_that_are_not_finite_are_one_sentence(payload, tmp_path: Path) -> None:
    state = dict(payload["state"])
    state["convs.0.weight"] = torch.full_like(state["convs.0.weight"], math.nan)
    path = tampered(payload, tmp_path, state=state)
    for opener in (load_run, open_run):
        with pytest.raises(EngineError, match="tampered.topomap.pt is damaged: some of its weights are not finite numbers"):
            opener(path)


def test_weights_for_another_data_set_do_not_fit(payload, tmp_path: Path) -> None:
    # digits weights (10 outputs) under a file that claims 8-class gratings
    path = tampered(payload, tmp_path, params={**payload["params"], "data": "gratings"})
    with pytest.raises(EngineError, match="its weights do not fit the network it describes"):
        open_run(path)


def test_classes_that_are_not_the_data_sets_are_named(payload, tmp_path: Path) -> None:
    path = tampered(payload, tmp_path, classes=list("abcdefghij"))
    with pytest.raises(EngineError, match=r"its classes do not match its data set \(digits\)"):
        load_run(path)


@pytest.mark.parametrize("accuracy", [math.nan, math.inf])
def test_a_non_finite_accuracy_is_named_as_such(payload, tmp_path: Path, accuracy: float) -> None:
    path = tampered(payload, tmp_path, accuracy=accuracy)
    with pytest.raises(EngineError, match="its accuracy is not a finite number"):
        load_run(path)


def test_a_run_without_snapshots_still_says_so(payload, tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="it holds no map snapshots"):
        load_run(tampered(payload, tmp_path, snapshots=[]))


@pytest.mark.parametrize("text", ["16,,36", "16,36,", ",16", "", "16,a"])
def test_widths_with_an_empty_or_bad_item_are_refused(text: str) -> None:
    with pytest.raises(EngineError, match="must be comma-separated integers such as 16,36,64"):
        parse_widths(text)
    with pytest.raises(EngineError, match="must be comma-separated integers"):
        with_widths(TrainParams(), text)


def test_widths_allow_spaces_around_items() -> None:
    assert parse_widths(" 16, 36 ,64") == (16, 36, 64)
    assert with_widths(TrainParams(), "4, 9").widths == (4, 9)
