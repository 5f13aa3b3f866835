"""Benchmark records (`--record`) and docs/benchmarks.md rendered from them alone."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from workbench.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]


def _renderer():
    spec = importlib.util.spec_from_file_location("render_benchmarks", ROOT / "scripts" / "render_benchmarks.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


MAKEFILE = """\
run:
\t$(WB)

bench: setup
\tmkdir -p $(BENCH_DIR)
\t$(WB) bench --record $(BENCH_DIR)/shell.json
\t$(WB) segmentation scenes --n 20 --seed 1000 --out bench-data/segmentation
\t$(WB) segmentation bench --scenes bench-data/segmentation --record $(BENCH_DIR)/segmentation.json
\t$(WB) topomap bench --seeds 3 --record $(BENCH_DIR)/topomap.json

demo: setup
\t$(WB) demo --out demo-output
"""


def _record(folder: Path, name: str, command: str, result: dict, table: str | None) -> None:
    data = {
        "format": "workbench-bench-record",
        "version": 1,
        "command": command,
        "date": "2026-12-07T08:00:00+00:00",
        "machine": {"cpu": "AMD EPYC 7B13", "cores": 2, "threads": "1", "load": 1.5},
        "commit": "abc1234",
        "result": result,
        "table": table,
    }
    (folder / f"{name}.json").write_text(json.dumps(data))


def test_the_page_holds_each_record_and_names_the_missing_ones(tmp_path: Path) -> None:
    render = _renderer()
    records = tmp_path / "bench-results"
    records.mkdir()
    (tmp_path / "Makefile").write_text(MAKEFILE)
    _record(records, "shell", "workbench bench", {"cold_start_s": 0.65, "stall_ms": 10, "nested": {"x": 1}}, "cold start  0.65 s")
    _record(records, "extra", "workbench attention bench --n 256", {}, "causal  1.23x")

    page = render.render(records, tmp_path / "Makefile")

    assert "| cold_start_s | 0.65 |" in page and "| stall_ms | 10 |" in page and "nested" not in page  # scalars only; tables say the rest
    assert "```text\ncold start  0.65 s\n```" in page and "causal  1.23x" in page  # a record outside the Makefile is shown too
    assert "2026-12-07 08:00:00+00:00 on AMD EPYC 7B13, 2 cores, torch threads 1, load 1.5 at the end, commit abc1234" in page
    assert page.index("## shell") < page.index("## extra") < page.index("## Not recorded yet")
    assert "busy machine" not in page  # load 1.5 on 2 cores
    missing = page[page.index("## Not recorded yet") :]
    assert "`workbench segmentation bench --scenes bench-data/segmentation --record bench-results/segmentation.json`" in missing
    assert "`workbench topomap bench --seeds 3 --record bench-results/topomap.json`" in missing
    assert "`workbench segmentation scenes --n 20 --seed 1000 --out bench-data/segmentation`" in missing  # its set-up
    assert "shell.json`" not in missing and "demo" not in page  # only the bench target counts


def test_a_file_that_is_no_record_is_refused(tmp_path: Path) -> None:
    render = _renderer()
    (tmp_path / "other.json").write_text(json.dumps({"format": "workbench-topomap-compare"}))
    (tmp_path / "Makefile").write_text(MAKEFILE)
    with pytest.raises(SystemExit, match="other.json is not a benchmark record"):
        render.render(tmp_path, tmp_path / "Makefile")


def test_the_makefile_bench_target_records_every_benchmark_command() -> None:
    """Every benchmark of `make bench` writes a record, and each command takes --record."""
    planned, setup = _renderer().planned_benchmarks(ROOT / "Makefile")
    assert len(planned) >= 8 and setup == [
        "workbench segmentation scenes --n 20 --seed 1000 --out bench-data/segmentation",
        "workbench segmentation scenes --generator eval --n 20 --seed 9000 --out bench-data/segmentation-eval",
    ]
    parser = build_parser()
    for item in planned:
        args = parser.parse_args([*item.command.split()[1:], "--record", "r.json"])
        assert args.record == Path("r.json"), item.command


def test_a_benchmark_writes_its_record(cli, tmp_path: Path) -> None:
    path = tmp_path / "attention.json"
    args = ("attention", "bench", "--mask", "causal", "--n", "128", "--heads", "1", "--dim", "16", "--repeats", "1", "--warmup", "0")
    out = cli(*args, "--backends", "sdpa_dense", "--record", str(path), "--json")
    assert out.returncode == 0, out.stderr
    record = json.loads(path.read_text())
    assert record["format"] == "workbench-bench-record" and record["command"] == "workbench " + " ".join(args) + " --backends sdpa_dense --json"
    assert record["result"] == json.loads(out.stdout)  # what --json printed, no more and no less
    assert "causal" in record["table"] and record["machine"]["cores"] >= 1 and record["date"].endswith("+00:00")


def test_a_record_must_be_json(cli, tmp_path: Path) -> None:
    out = cli("attention", "bench", "--mask", "causal", "--n", "128", "--record", str(tmp_path / "r.txt"))
    assert out.returncode == 2 and out.stderr.strip().splitlines()[-1].startswith("error: --record") and "Traceback" not in out.stderr
    assert not (tmp_path / "r.txt").exists()


def test_a_record_from_a_busy_machine_says_so(tmp_path: Path) -> None:
    render = _renderer()
    (tmp_path / "Makefile").write_text(MAKEFILE)
    _record(tmp_path, "shell", "workbench bench", {"cold_start_s": 60.4}, None)
    data = json.loads((tmp_path / "shell.json").read_text())
    data["machine"]["load"] = 21.25
    (tmp_path / "shell.json").write_text(json.dumps(data))
    page = render.render(tmp_path, tmp_path / "Makefile")
    assert "**Measured on a busy machine** (load 21.25 on 2 cores)" in page and "load 21.25 at the end (busy) |" in page
