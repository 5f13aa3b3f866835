"""`workbench topomap ...` end to end on tiny runs: one JSON object, files written, exit 2 on mistakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TINY = ["--epochs", "1", "--widths", "4,9", "--batch-size", "64", "--som-width", "16", "--quiet"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    from tests.conftest import run_cli_here

    out = tmp_path_factory.mktemp("cli") / "tiny.topomap.pt"
    proc = run_cli_here("topomap", "train", "--method", "cbsom", "--out", str(out), "--json", *TINY)
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(proc.stdout)


def test_train_prints_one_json_object_and_writes_the_run(tiny_run) -> None:
    out, data = tiny_run
    assert out.exists()
    assert data["method"] == "cbsom" and data["epochs"] == 1 and data["out"] == str(out)
    assert set(data["smoothness"]) == {"conv1", "conv2"}
    assert 0 <= data["accuracy"] <= 100 and data["seconds"] > 0


def test_maps_writes_png_npz_csv_and_weights(tiny_run, cli, tmp_path: Path) -> None:
    import numpy as np

    out, _ = tiny_run
    proc = cli("topomap", "maps", str(out), "--out", str(tmp_path / "maps"), "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    files = {Path(p).name for group in data["files"].values() for p in group}
    assert {"conv1-orientation.png", "conv2-category.png", "kernels.png", "maps.npz", "units.csv", "weights.npz"} <= files
    maps = np.load(tmp_path / "maps" / "maps.npz")
    assert maps["conv2/dprime"].shape == (10, 3, 3) and maps["conv1/orientation"].shape == (2, 2)
    rows = (tmp_path / "maps" / "units.csv").read_text().splitlines()
    assert len(rows) == 1 + 4 + 9 and rows[0].startswith("layer,unit,row,col")
    assert all(p.is_file() and not p.name.startswith(".") for p in (tmp_path / "maps").iterdir())  # no temp files, no folders


def test_compare_reports_every_method_with_mean_and_std(cli, tmp_path: Path) -> None:
    save = tmp_path / "cmp.topomap.json"
    proc = cli("topomap", "compare", "--seeds", "2", "--methods", "none,cbsom", "--save", str(save), "--json", *TINY)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [m["method"] for m in data["methods"]] == ["none", "cbsom"]
    assert all(m["runs"] == 2 and m["accuracy_std"] >= 0 for m in data["methods"])
    assert len(data["runs"]) == 4 and "cbsom_accuracy" in data["goals"]
    assert json.loads(save.read_text())["format"] == "workbench-topomap-compare"


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "--out", "x.topomap.pt", "--widths", "16,30"], "not a square number"),
        (["train", "--out", "x.topomap.pt", "--widths", "16,a"], "comma-separated integers"),
        (["train", "--out", "x.topomap.pt", "--epochs", "0"], "epochs"),
        (["train", "--out", "x.topomap.pt", "--alpha0", "5"], "alpha0"),
        (["train", "--out", "x.pt"], "must end in .topomap.pt"),
        (["train", "--out", "x.topomap.pt", "--method", "kohonen"], "invalid choice"),
        (["compare", "--seeds", "0"], "seeds"),  # the old name of bench, kept as an alias
        (["bench", "--seeds", "0"], "seeds"),
        (["bench", "--methods", "none,magic"], "unknown method"),
        (["compare", "--methods", "none,magic"], "unknown method"),
        (["maps", "missing.topomap.pt", "--out", "m"], "no such file"),
    ],
)
def test_user_mistakes_exit_2_with_one_error_line(cli, args: list[str], message: str, tmp_path: Path) -> None:
    proc = cli("topomap", *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_corrupt_run_file_is_one_error(cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.topomap.pt"
    bad.write_bytes(b"\x00\x01 not a run")
    proc = cli("topomap", "maps", str(bad), "--out", str(tmp_path / "m"))
    assert proc.returncode == 2 and "not a topomap run file" in proc.stderr
    assert "Traceback" not in proc.stderr


def one_error_line(proc) -> str:
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    return lines[0]


def test_a_run_whose_weights_do_not_fit_is_one_error(tiny_run, cli, tmp_path: Path) -> None:
    import torch

    payload = torch.load(tiny_run[0], weights_only=True)
    bad = tmp_path / "nostate.topomap.pt"
    torch.save({**payload, "state": {}}, bad)
    line = one_error_line(cli("topomap", "maps", str(bad), "--out", str(tmp_path / "m"), "--quiet"))
    assert "nostate.topomap.pt is damaged: its weights do not fit the network it describes" in line
    assert not (tmp_path / "m").exists()


def test_compare_refuses_a_save_folder_before_training(cli, tmp_path: Path) -> None:
    runs, folder = tmp_path / "runs", tmp_path / "taken"
    folder.mkdir()
    proc = cli("topomap", "compare", "--seeds", "1", "--methods", "som", "--out", str(runs), "--save", str(folder), *TINY)
    assert "it is a folder" in one_error_line(proc)
    assert not runs.exists() or not any(runs.iterdir())  # nothing was trained


def test_maps_with_a_blocked_target_writes_nothing(tiny_run, cli, tmp_path: Path) -> None:
    out = tmp_path / "maps"
    (out / "maps.npz").mkdir(parents=True)
    line = one_error_line(cli("topomap", "maps", str(tiny_run[0]), "--out", str(out), "--quiet"))
    assert "maps.npz" in line and "it is a folder" in line
    assert [p.name for p in out.iterdir()] == ["maps.npz"]  # no PNGs left behind


def test_widths_with_an_empty_item_are_refused(cli, tmp_path: Path) -> None:
    proc = cli("topomap", "train", "--out", str(tmp_path / "x.topomap.pt"), "--widths", "16,,36", "--quiet")
    assert "comma-separated integers" in one_error_line(proc)
    assert not list(tmp_path.iterdir())
