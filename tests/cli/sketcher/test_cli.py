"""`workbench sketcher ...`: results as one JSON object, user mistakes as one error line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image


def _error_line(proc) -> str:
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_render_png_and_svg(cli, tmp_path: Path) -> None:
    out = tmp_path / "shape.png"
    proc = cli("sketcher", "render", "--program", "(- (Circle 6 8 8) (Quad 8 8 2 2 H))", "--size", "100", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"out": str(out), "size": 100}
    image = Image.open(out)
    assert image.size == (100, 100) and image.getpixel((50, 50)) == 255 and image.getpixel((50, 20)) == 0
    svg = tmp_path / "shape.svg"
    proc = cli("sketcher", "render", "--program", "(Circle 6 8 8)", "--out", str(svg))
    assert proc.returncode == 0 and "<circle" in svg.read_text()


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--program", "(Circle 6 8)", "--out", "x.png"], "syntax error at position 12"),
        (["--program", "(Circle 6 8 8)", "--size", "0", "--out", "x.png"], "out of range"),
        (["--program", "(Circle 6 8 8)", "--size", "99999", "--out", "x.png"], "out of range"),
        (["--program", "(Circle 6 8 8)", "--size", "big", "--out", "x.png"], "whole number"),
        (["--program", "(Circle 6 8 8)", "--out", "x.xyz"], "written as .png"),
    ],
)
def test_render_refuses_bad_input(cli, tmp_path: Path, args: list[str], fragment: str) -> None:
    args = [str(tmp_path / a) if a.startswith("x.") else a for a in args]
    assert fragment in _error_line(cli("sketcher", "render", *args))
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "x.xyz").exists()


def test_solve_prints_program_iou_renders_seconds(cli, tmp_path: Path) -> None:
    """A single rectangle is solved, and the printed program really draws it (IoU recomputed here)."""
    from engines.sketcher.image_input import load_target
    from engines.sketcher.language import parse
    from engines.sketcher.render import render

    target = tmp_path / "target.png"
    assert cli("sketcher", "render", "--program", "(Quad 8 8 6 4 G)", "--size", "300", "--out", str(target)).returncode == 0
    proc = cli("sketcher", "solve", "--target", str(target), "--budget", "600", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {"program", "iou", "renders", "seconds"} <= set(data)
    assert data["renders"] <= 600 and data["seconds"] >= 0
    assert data["solved"] and data["iou"] >= 0.98
    goal = load_target(target)
    drawn = render(parse(data["program"]), goal.shape[0])
    iou = np.count_nonzero(drawn & goal) / np.count_nonzero(drawn | goal)
    assert goal.any() and iou >= 0.98 and iou == pytest.approx(data["iou"], abs=1e-4)


def test_solve_refuses_unusable_images(cli, tmp_path: Path) -> None:
    blank = tmp_path / "blank.png"
    Image.new("L", (50, 50), 255).save(blank)
    junk = tmp_path / "junk.png"
    junk.write_text("no picture here")
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    for path, fragment in [(blank, "no drawing"), (junk, "cannot read"), (empty, "empty"), (tmp_path / "nope.png", "no such file")]:
        assert fragment in _error_line(cli("sketcher", "solve", "--target", str(path), "--json"))
    assert "budget" in _error_line(cli("sketcher", "solve", "--target", str(blank), "--budget", "0"))


def test_bench_compares_model_and_baseline(cli) -> None:
    proc = cli("sketcher", "bench", "--targets", "1", "--primitives", "1-2", "--budget", "60", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data["per_primitives"]) == {"1", "2"}
    assert {"model", "random", "ratio"} <= set(data["per_primitives"]["1"])
    assert set(data["curves"]) == {"model", "random"}
    for method in ("model", "random"):  # Wilson intervals bracket every solve rate
        row = data["overall"][method]
        low, high = row["solve_rate_ci95"]
        assert 0.0 <= low <= row["solve_rate"] <= high <= 1.0 and high - low > 0.1  # two targets tell little
    assert "range" in _error_line(cli("sketcher", "bench", "--primitives", "4-1"))


def test_train_refuses_nonsense(cli, tmp_path: Path) -> None:
    assert "positive" in _error_line(cli("sketcher", "train", "--minutes", "0", "--out", str(tmp_path / "m.pt")))
    junk = tmp_path / "junk.pt"
    junk.write_text("not a checkpoint")
    assert "checkpoint" in _error_line(cli("sketcher", "train", "--minutes", "1", "--out", str(junk)))
    out = str(tmp_path / "m.pt")
    assert "whole numbers" in _error_line(cli("sketcher", "train", "--minutes", "1", "--out", out, "--primitive-weights", "4,a"))
    assert "not all zero" in _error_line(cli("sketcher", "train", "--minutes", "1", "--out", out, "--primitive-weights", "0,0"))
    assert "between 0 and 1" in _error_line(cli("sketcher", "train", "--minutes", "1", "--out", out, "--sketch-fraction", "1.5"))
    assert not (tmp_path / "m.pt").exists()


def test_train_records_the_data_mix_it_was_given(cli, tmp_path: Path) -> None:
    from engines.sketcher.train import load_checkpoint

    out = tmp_path / "m.pt"
    proc = cli(
        "sketcher",
        "train",
        "--minutes",
        "0.02",
        "--out",
        str(out),
        "--batch-size",
        "4",
        "--threads",
        "1",
        "--data-workers",
        "0",
        "--primitive-weights",
        "0,1,2",
        "--sketch-fraction",
        "0.5",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = load_checkpoint(out)["data"]
    assert tuple(data["primitive_weights"]) == (0, 1, 2) and data["sketch_fraction"] == 0.5


@pytest.mark.parametrize("command", [["solve", "--target", "x.png"], ["bench", "--targets", "1"], ["train", "--minutes", "1", "--out", "m.pt"]])
@pytest.mark.parametrize("seed", ["99999999999999999999", "-9223372036854775809", "-1", "abc"])
def test_seeds_out_of_range_are_one_error_line(cli, tmp_path: Path, command: list[str], seed: str) -> None:
    Image.new("L", (64, 64), 255).save(tmp_path / "x.png")
    args = [str(tmp_path / a) if a in ("x.png", "m.pt") else a for a in command]
    assert "seed must be an integer from 0 to 2^31-1" in _error_line(cli("sketcher", *args, f"--seed={seed}"))
    assert not (tmp_path / "m.pt").exists()
