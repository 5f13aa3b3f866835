"""The comparison's bookkeeping on constructed results (mean ± std, goals, saved files), and real
tiny runs on one and on two worker processes."""

from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import pytest

from engines.core import EngineError, to_jsonable
from engines.core.executor import ExecutorSpec
from engines.topomap.compare import CompareResult, _summarise_method, compare, evaluate_goals, format_table, load_compare
from engines.topomap.params import CompareParams, TrainParams
from engines.topomap.train import TrainResult
from tests.conftest import PROCESSES


def result(method: str, seed: int, accuracy: float, smooth: tuple[float, float, float]) -> TrainResult:
    layers = dict(zip(("conv1", "conv2", "conv3"), smooth))
    return TrainResult(
        method, "digits", seed, 40, accuracy, layers, {k: 0.05 for k in layers}, layers, layers, {k: 0 for k in layers}, 10.0, 100, 0, None
    )


def runs(method: str, accs: list[float], smooth: tuple[float, float, float]) -> list[TrainResult]:
    return [result(method, s, a, smooth) for s, a in enumerate(accs)]


def test_mean_and_sample_std_per_method() -> None:
    s = _summarise_method("cbsom", runs("cbsom", [98.0, 99.0, 100.0], (0.5, 0.6, 0.7)))
    assert s.accuracy_mean == pytest.approx(99.0) and s.accuracy_std == pytest.approx(1.0)
    assert s.smoothness_mean == pytest.approx({"conv1": 0.5, "conv2": 0.6, "conv3": 0.7}) and s.runs == 3


def test_goals_follow_the_spec() -> None:
    good = (
        _summarise_method("none", runs("none", [99.0, 99.2], (0.05, 0.1, 0.2))),
        _summarise_method("cbsom", runs("cbsom", [98.5, 98.7], (0.3, 0.55, 0.6))),
        _summarise_method("absom", runs("absom", [95.0, 96.0], (0.3, 0.5, 0.5))),
    )
    goals = evaluate_goals(good)
    assert all(g.met for g in goals.values()) and set(goals) == {"cbsom_accuracy", "absom_loses_more", "cbsom_smoothness", "none_smoothness"}
    bad = (
        _summarise_method("none", runs("none", [99.0], (0.05, 0.3, 0.2))),
        _summarise_method("cbsom", runs("cbsom", [97.5], (0.9, 0.45, 0.6))),  # conv1 does not count
        _summarise_method("absom", runs("absom", [97.0], (0.3, 0.5, 0.5))),
    )
    goals = evaluate_goals(bad)
    assert not any(g.met for g in goals.values())
    assert "lowest 0.45" in goals["cbsom_smoothness"].measured and "highest 0.30" in goals["none_smoothness"].measured


def test_table_and_saved_file_round_trip(tmp_path: Path) -> None:
    all_runs = runs("none", [99.0, 99.2], (0.05, 0.1, 0.2)) + runs("cbsom", [98.5, 98.7], (0.3, 0.55, 0.6))
    summaries = (_summarise_method("none", all_runs[:2]), _summarise_method("cbsom", all_runs[2:]))
    partial = CompareResult(CompareParams(seeds=2, methods=("none", "cbsom")), tuple(all_runs), summaries, evaluate_goals(summaries), 1.0, "")
    table = format_table(partial)
    assert "98.60 ± 0.14" in table and "met      CB-SOM accuracy" in table
    data = to_jsonable(partial)
    data["format"] = "workbench-topomap-compare"
    path = tmp_path / "cmp.topomap.json"
    path.write_text(json.dumps(data))
    loaded = load_compare(path)
    assert [(p.method, p.seed) for p in loaded.points] == [("none", 0), ("none", 1), ("cbsom", 0), ("cbsom", 1)]
    assert loaded.points[2].smoothness == pytest.approx((0.55 + 0.6) / 2)  # mean of the deeper layers


@pytest.mark.parametrize(
    "text, message",
    [
        ("{oops", "not valid JSON"),
        ("[" * 100000, "nest too deeply"),
        ('{"format": "other"}', "not a topomap comparison"),
        ('{"format": "workbench-topomap-compare", "runs": [{"method": "x"}]}', "damaged"),
        ('{"format": "workbench-topomap-compare", "runs": []}', "holds no runs"),
    ],
)
def test_bad_comparison_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.topomap.json"
    path.write_text(text)
    with pytest.raises(EngineError, match=message):
        load_compare(path)
    with pytest.raises(EngineError, match="no such"):
        load_compare(tmp_path / "missing.json")


def _flat(value: Any, key: str = "") -> dict[str, Any]:
    """A nested result as {dotted key: leaf}, wall-clock seconds left out."""
    if is_dataclass(value):
        value = asdict(value)
    if isinstance(value, list):
        value = dict(enumerate(value))
    if isinstance(value, dict):
        return {k: v for name, item in value.items() if "seconds" not in str(name) for k, v in _flat(item, f"{key}.{name}").items()}
    return {key: value}


@PROCESSES
def test_two_workers_give_the_runs_one_gives() -> None:
    """Every (method, seed) run is an independent task: on two worker processes the runs and their
    means are the ones one process gives. The networks train the same to the last digit; the
    analysis's float32 sums (shuffled and orientation smoothness) may differ in the sixth decimal,
    as this process and a worker use different torch thread counts."""
    params = CompareParams(
        seeds=2, methods=("none", "cbsom"), base=TrainParams(epochs=1, widths=(4, 9), batch_size=32, som_width=16, snapshots=2, tau=1.0)
    )
    one, two = compare(params, executor=ExecutorSpec("local", 1)), compare(params, executor=ExecutorSpec("local", 2))
    assert not one.failures and not two.failures and len(one.runs) == 4
    assert len({r.accuracy for r in one.runs}) > 1  # other seeds and methods, other networks
    assert [(r.accuracy, r.smoothness, r.steps) for r in two.runs] == [(r.accuracy, r.smoothness, r.steps) for r in one.runs]
    first, second = _flat(list(one.runs) + list(one.methods)), _flat(list(two.runs) + list(two.methods))
    assert second.keys() == first.keys()
    assert second == {k: pytest.approx(v, rel=1e-4) if isinstance(v, float) else v for k, v in first.items()}
