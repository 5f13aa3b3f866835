"""Inputs are never outputs: every command's output flags are checked against its inputs (any
spelling: `..`, symbolic and hard links) and against device files, before any work."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from engines.core import EngineError
from engines.core.paths import check_output, same_file
from workbench.cli.common import OUTPUTS
from workbench.cli.main import build_parser, main

# command line with {i} = an input file (absent: the command reads none) and {o} = the output under test
CASES = {
    ("screenshot", "out"): "screenshot --out {o}",
    ("demo", "out"): "demo --out {o}",
    ("segmentation scenes", "out"): "segmentation scenes --out {o}",
    ("segmentation run", "out"): "segmentation run {i} --out {o}",
    ("segmentation run", "summary"): "segmentation run {i} --out x.ply --summary {o}",
    ("segmentation run", "scannet"): "segmentation run {i} --out x.ply --scannet {o}",
    ("segmentation train-prior", "out"): "segmentation train-prior --out {o}",
    ("segmentation train-policy", "out"): "segmentation train-policy --prior {i} --out {o}",
    ("planner run", "out"): "planner run --scenario {i} --out {o}",
    ("planner bench", "out"): "planner bench --checkpoint {i} --out {o}",
    ("planner suite", "out"): "planner suite --checkpoint {i} --out {o}",  # the old name of bench
    ("planner crosscheck", "out"): "planner crosscheck --scenarios . --out {o}",
    ("segmentation bench", "out"): "segmentation bench --scenes . --out {o}",
    ("planner video", "out"): "planner video {i} {o}",
    ("planner data", "out"): "planner data --student {i} --out {o}",
    ("planner train", "out"): "planner train --minutes 1 --data {i} --out {o}",
    ("planner train", "export"): "planner train --minutes 1 --init {i} --out x.pt --export {o}",
    ("planner average", "out"): "planner average {i} {i} --out {o}",
    ("planner average", "export"): "planner average {i} {i} --out x.pt --export {o}",
    ("attention export", "out"): "attention export --vectors {i} --out {o}",
    ("attention from-dense", "out"): "attention from-dense {i} --out {o}",
    ("attention bench", "csv"): "attention bench --csv {o}",
    ("sketcher train", "out"): "sketcher train --minutes 1 --out {o}",
    ("sketcher solve", "out"): "sketcher solve --target {i} --out {o}",
    ("sketcher bench", "save"): "sketcher bench --checkpoint {i} --save {o}",
    ("sketcher bench", "curves"): "sketcher bench --checkpoint {i} --curves {o}",
    ("sketcher render", "out"): "sketcher render --program x --out {o}",
    ("topomap train", "out"): "topomap train --out {o}",
    ("topomap bench", "out"): "topomap bench --out {o}",
    ("topomap bench", "save"): "topomap bench --save {o}",
    ("topomap compare", "out"): "topomap compare --out {o}",
    ("topomap compare", "save"): "topomap compare --save {o}",
    ("topomap maps", "out"): "topomap maps {i} --out {o}",
}


def _output_flags() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*prefix, name])
            elif action.dest in OUTPUTS:
                found.add((" ".join(prefix), action.dest))

    walk(build_parser(), [])
    return found


def test_every_output_flag_has_a_case() -> None:
    assert _output_flags() == set(CASES), "a command writes to a flag this test does not try"


def _run(line: str, i: Path, o: str, capsys) -> tuple[int, str]:
    code = main([*line.format(i=i, o=o).split(), "--quiet"])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("case", sorted(CASES), ids=" ".join)
def test_output_is_never_an_input_or_a_device(case, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    line = CASES[case]
    source = tmp_path / "in.dat"
    source.write_bytes(b"the user's data")
    if "{i}" in line:
        spelled = f"{tmp_path}/sub/../{source.name}"
        (tmp_path / "sub").mkdir()
        code, err = _run(line, source, spelled, capsys)
        assert code == 2 and err.startswith("error:") and err.count("\n") == 1, err
        assert source.read_bytes() == b"the user's data"
    code, err = _run(line, source, os.devnull, capsys)
    assert code == 2 and err.startswith("error:") and err.count("\n") == 1, err
    assert "special file" in err or "not a folder" in err, err


@pytest.mark.parametrize("spelling", ["same", "dots", "symlink", "hardlink"])
def test_every_spelling_of_the_input_is_refused(spelling: str, tmp_path: Path, capsys) -> None:
    scene = tmp_path / "S.ply"
    scene.write_bytes(b"ply with ground truth")
    out = {"same": scene, "dots": tmp_path / "." / "x" / ".." / "S.ply", "symlink": tmp_path / "link.ply", "hardlink": tmp_path / "hard.ply"}[
        spelling
    ]
    if spelling == "symlink":
        out.symlink_to(scene)
    elif spelling == "hardlink":
        os.link(scene, out)
    code = main(["segmentation", "run", str(scene), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "is the input" in err, err
    assert scene.read_bytes() == b"ply with ground truth"


def test_two_outputs_may_not_be_one_file(tmp_path: Path, capsys) -> None:
    ckpt = tmp_path / "a.pt"
    ckpt.write_bytes(b"x")
    code = main(["planner", "average", str(ckpt), str(ckpt), "--out", str(tmp_path / "o.pt"), "--export", str(tmp_path / "o.pt")])
    assert code == 2 and "same file as --out" in capsys.readouterr().err


def test_engine_check(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.write_text("x")
    assert same_file(a, tmp_path / "b" / ".." / "a") and not same_file(a, tmp_path / "c")
    assert check_output(tmp_path / "c", [a]) == tmp_path / "c"
    with pytest.raises(EngineError, match="special file"):
        check_output("/dev/null")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(EngineError, match="special file"):
        check_output(fifo)
