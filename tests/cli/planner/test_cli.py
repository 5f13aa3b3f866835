"""`workbench planner ...`: one JSON object with --json, files written, and exit 2 with one
`error:` line for each kind of bad input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engines.planner.planners.diffusion_planner import default_checkpoint
from engines.planner.procedural import generate
from engines.planner.scenario import scenario_to_dict


def one_error(out) -> str:
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in out.stderr, out.stderr
    return lines[0]


def test_run_scores_an_episode_and_writes_it_then_video(cli, tmp_path: Path) -> None:
    ep = tmp_path / "ep.json"
    out = cli("planner", "run", "--type", "lead_braking", "--seed", "2", "--planner", "idm", "--reactive", "--out", str(ep), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["planner"] == "idm" and 0.0 <= data["cls"] <= 100.0 and data["steps"] == 150
    assert set(data["multipliers"]) == {"no_at_fault_collisions", "drivable_area_compliance", "driving_direction_compliance", "making_progress"}
    assert set(data["weighted"]) == {"progress", "ttc", "speed_limit", "comfort"}
    saved = json.loads(ep.read_text())
    assert saved["format"] == "workbench-planner-episode" and len(saved["plans"]) == 150 and len(saved["ego"]) == 151
    gif = tmp_path / "ep.gif"
    out = cli("planner", "video", str(ep), str(gif), "--size", "200x150", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["frames"] == 151 and gif.stat().st_size > 1000


def test_run_diffusion_with_guidance_on_a_commonroad_file(cli, tmp_path: Path) -> None:
    xml = Path("resources/planner/commonroad/ZAM_Tutorial-1_2_T-1.xml")
    out = cli("planner", "run", "--scenario", str(xml), "--planner", "diffusion", "--guidance", "collision,drivable",
              "--samples", "4", "--steps", "4", "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["scenario"] == "ZAM_Tutorial-1_2_T-1" and data["planner"].startswith("diffusion+guidance")


@pytest.mark.parametrize("case,needle", [
    ("malformed_json", "not valid JSON"),
    ("deep_json", "nest too deeply"),
    ("malformed_xml", "not valid XML"),
    ("empty", "empty"),
    ("unreachable", "unreachable"),
    ("null_ego", "field 'ego' must be an object"),
    ("route_string", "field 'route' must be a list, got 'S0'"),
    ("nan_static", "static object"),
])
def test_bad_scenarios_are_one_error_line(cli, tmp_path: Path, case: str, needle: str) -> None:
    if case == "malformed_json":
        path = tmp_path / "s.json"
        path.write_text('{"lanes": [1, 2')
    elif case == "deep_json":  # a RecursionError inside json before
        path = tmp_path / "s.json"
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif case == "malformed_xml":
        path = tmp_path / "s.xml"
        path.write_text("<commonRoad><lanelet id='1'>")
    else:
        data = scenario_to_dict(generate("straight", 1))
        if case == "empty":
            data["lanes"] = []
        elif case == "null_ego":
            data["ego"] = None
        elif case == "route_string":
            data["route"] = "S0"
        elif case == "nan_static":
            data["static_objects"] = [{"id": 1, "kind": "cone", "x": None, "y": 0, "heading": 0, "length": 0.5, "width": 0.5}]
        else:
            data["ego"]["x"] += 500.0
        path = tmp_path / "s.json"
        path.write_text(json.dumps(data))
    line = one_error(cli("planner", "run", "--scenario", str(path), "--planner", "idm", "--json"))
    assert needle in line


def test_unknown_type_planner_and_guidance_are_one_error_line(cli) -> None:
    assert "unknown scenario type 'highway9'" in one_error(cli("planner", "run", "--type", "highway9", "--planner", "idm"))
    assert "unknown planner 'rrt'" in one_error(cli("planner", "run", "--type", "straight", "--planner", "rrt"))
    assert "unknown guidance term" in one_error(cli("planner", "run", "--type", "straight", "--planner", "diffusion", "--guidance", "magic"))
    assert "unknown guidance term" in one_error(cli("planner", "suite", "--n", "1", "--planners", "diffusion+guidance", "--guidance", "magic"))
    assert "--guidance needs at least one term" in one_error(cli("planner", "suite", "--n", "1", "--guidance", ""))
    assert "no such file" in one_error(cli("planner", "run", "--scenario", "/no/such/file.json"))


def test_suite_runs_every_planner_on_the_same_scenarios(cli) -> None:
    """`planner bench` (the old name `suite` still works: the other tests use it)."""
    out = cli("planner", "bench", "--n", "2", "--planners", "idm,constant_velocity", "--no-commonroad", "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    table = data["procedural"]
    assert set(table) == {"idm", "constant_velocity"} and table["idm"]["scenarios"] == 2
    assert {r["scenario"] for r in data["rows"] if r["planner"] == "idm"} == {r["scenario"] for r in data["rows"] if r["planner"] == "constant_velocity"}



def test_suite_refuses_no_planner_and_a_planner_named_twice(cli) -> None:
    """An empty list printed only the targets with exit 0; idm,idm counted every scenario twice."""
    assert "no planner to benchmark" in one_error(cli("planner", "suite", "--n", "1", "--planners", "", "--no-commonroad"))
    assert "idm listed more than once" in one_error(cli("planner", "suite", "--n", "1", "--planners", "idm,idm", "--no-commonroad"))


def test_video_of_a_damaged_episode_is_one_error_line(cli, tmp_path: Path) -> None:
    """A NaN ego row once rendered with exit 0, and 3 ego columns raised an IndexError."""
    ep = tmp_path / "ep.json"
    assert cli("planner", "run", "--type", "straight", "--planner", "constant_velocity", "--out", str(ep), "--quiet").returncode == 0
    data = json.loads(ep.read_text())
    nan_row = [list(row) for row in data["ego"]]
    nan_row[3][0] = float("nan")
    for name, ego in (("nan", nan_row), ("cols", [row[:3] for row in data["ego"]])):
        bad = tmp_path / f"{name}.json"
        bad.write_text(json.dumps({**data, "ego": ego}))
        line = one_error(cli("planner", "video", str(bad), str(tmp_path / f"{name}.gif")))
        assert "damaged planner episode: the ego track" in line and not (tmp_path / f"{name}.gif").exists()
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert "deep.json is not valid JSON here" in one_error(cli("planner", "video", str(deep), str(tmp_path / "deep.gif")))


def test_suite_latency_replans_zero_skips_the_latency_figure(cli) -> None:
    out = cli("planner", "suite", "--n", "1", "--planners", "diffusion", "--no-commonroad", "--latency-replans", "0", "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["procedural"]["diffusion"]["scenarios"] == 1 and not data.get("latency")
    assert "--latency-replans must be 0" in one_error(cli("planner", "suite", "--n", "1", "--latency-replans", "-1"))
    assert "--workers must be at least 1" in one_error(cli("planner", "suite", "--n", "1", "--workers", "0"))


def test_impossible_training_settings_fail_before_any_data_is_generated(cli, tmp_path: Path) -> None:
    data = tmp_path / "none-yet.npz"
    assert "--minutes must be positive" in one_error(cli("planner", "train", "--minutes", "-1", "--data", str(data), "--out", str(tmp_path / "m.pt")))
    assert "--batch must be at least 1" in one_error(cli("planner", "train", "--minutes", "1", "--batch", "0", "--data", str(data), "--out", str(tmp_path / "m.pt")))
    assert "--brake-weight must be positive" in one_error(cli("planner", "train", "--minutes", "1", "--brake-weight", "-2", "--data", str(data), "--out", str(tmp_path / "m.pt")))
    assert "--noise-draws must be at least 1" in one_error(cli("planner", "train", "--minutes", "1", "--noise-draws", "0", "--data", str(data), "--out", str(tmp_path / "m.pt")))
    assert "--lr must be positive" in one_error(cli("planner", "train", "--minutes", "1", "--lr", "0", "--data", str(data), "--out", str(tmp_path / "m.pt")))
    assert not data.exists()


def test_data_and_train_resume_and_export(cli, tmp_path: Path) -> None:
    data = tmp_path / "d.npz"
    out = cli("planner", "data", "--episodes", "1", "--out", str(data), "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["samples"] == 75
    ckpt = tmp_path / "m.pt"
    first = cli("planner", "train", "--minutes", "0.05", "--data", str(data), "--out", str(ckpt), "--batch", "16", "--json", "--quiet")
    assert first.returncode == 0, first.stderr
    steps1 = json.loads(first.stdout)["steps"]
    second = cli("planner", "train", "--minutes", "0.05", "--data", str(data), "--out", str(ckpt), "--batch", "16",
                 "--noise-draws", "3", "--slow-weight", "4", "--export", str(tmp_path / "small.pt"), "--json", "--quiet")
    assert second.returncode == 0, second.stderr
    info = json.loads(second.stdout)
    assert steps1 >= 1 and info["steps"] > steps1 and info["train_seconds"] > 0
    assert (tmp_path / "small.pt").stat().st_size < ckpt.stat().st_size
    meta = torch.load(ckpt, map_location="cpu", weights_only=False)["meta"]
    assert (meta["noise_draws"], meta["slow_weight"], meta["steps"]) == (3, 4.0, info["steps"])  # the latest run's settings
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    assert "bad.npz is corrupt or not a NumPy .npz archive" in one_error(cli("planner", "train", "--minutes", "0.05", "--data", str(bad), "--out", str(tmp_path / "x.pt")))


@pytest.mark.parametrize("content", [b"garbage", b"PK\x03\x04 a truncated zip"])
def test_a_foreign_or_truncated_checkpoint_is_one_error_line(cli, tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "model.pt"
    bad.write_bytes(content)
    assert "not a diffusion planner checkpoint" in one_error(cli("planner", "run", "--type", "straight", "--checkpoint", str(bad)))
    assert "not a diffusion planner checkpoint" in one_error(
        cli("planner", "data", "--episodes", "1", "--student", str(bad), "--out", str(tmp_path / "d.npz")))
    assert not (tmp_path / "d.npz").exists()
    assert "cannot resume from model.pt" in one_error(
        cli("planner", "train", "--minutes", "0.05", "--data", str(tmp_path / "d.npz"), "--out", str(bad)))
    assert "not a diffusion planner checkpoint" in one_error(
        cli("planner", "train", "--minutes", "0.05", "--init", str(bad), "--data", str(tmp_path / "d.npz"), "--out", str(tmp_path / "m.pt")))
    assert not (tmp_path / "d.npz").exists()  # refused before generating the missing data
    assert "model.pt is not a planner checkpoint" in one_error(
        cli("planner", "average", str(bad), str(default_checkpoint()), "--out", str(tmp_path / "avg.pt")))
    assert not (tmp_path / "avg.pt").exists()


def test_average_writes_a_checkpoint_the_planner_runs_and_refuses_mismatched_weights(cli, tmp_path: Path) -> None:
    ship = str(default_checkpoint())
    out = cli("planner", "average", ship, ship, "--weights", "1", "3", "--out", str(tmp_path / "avg.pt"), "--export", str(tmp_path / "small.pt"), "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert [s["weight"] for s in info["averaged"]] == [0.25, 0.75] and info["export"]["bytes"] > 0
    run = cli("planner", "run", "--type", "straight", "--checkpoint", str(tmp_path / "small.pt"), "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["cls"] > 50, run.stderr
    assert "1 weights for 2 checkpoints" in one_error(cli("planner", "average", ship, ship, "--weights", "1", "--out", str(tmp_path / "x.pt")))
    assert "averaging needs at least two checkpoints" in one_error(cli("planner", "average", ship, "--out", str(tmp_path / "x.pt")))


def test_suite_over_a_folder_tables_every_file_and_names_every_failure(cli, tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    xml = Path("resources/planner/commonroad/ZAM_Tutorial-1_2_T-1.xml")
    (folder / xml.name).write_bytes(xml.read_bytes())
    (folder / "straight.json").write_text(json.dumps(scenario_to_dict(generate("straight", 4))))
    (folder / "empty.xml").write_text("")
    (folder / "notes.txt").write_text("not a scenario")
    out = cli("planner", "suite", "--scenarios", str(folder), "--planners", "idm,constant_velocity", "--latency-replans", "0",
              "--workers", "1", "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data["per_file"]) == {"ZAM_Tutorial-1_2_T-1", "straight"}
    for modes in data["per_file"].values():
        assert set(modes) == {"replay", "reactive"} and all(set(m) == {"idm", "constant_velocity"} for m in modes.values())
    assert data["files_replay"]["idm"]["scenarios"] == data["files_reactive"]["idm"]["scenarios"] == 2
    assert [f["type"] for f in data["failures"]] == ["empty"] and not data["failures"][0]["crash"]
    assert data["checks"]["crashes"] == {"value": 0, "target": "0", "ok": True}
    assert "procedural" not in data
    text = cli("planner", "suite", "--scenarios", str(folder), "--planners", "idm", "--latency-replans", "0", "--workers", "1", "--quiet")
    assert "ZAM_Tutorial-1_2_T-1" in text.stdout and "empty:" in text.stdout and "log replay" in text.stdout


def test_suite_and_data_refuse_folders_they_cannot_use(cli, tmp_path: Path) -> None:
    assert "no such folder" in one_error(cli("planner", "suite", "--scenarios", str(tmp_path / "nope")))
    assert "holds no scenario files" in one_error(cli("planner", "suite", "--scenarios", str(tmp_path), "--planners", "idm"))
    assert "--split goes with --scenarios" in one_error(cli("planner", "suite", "--n", "1", "--split", "tune"))
    assert "--split goes with --from-logs" in one_error(cli("planner", "data", "--split", "tune", "--out", str(tmp_path / "d.npz")))
    assert "holds no CommonRoad (.xml) recordings" in one_error(
        cli("planner", "data", "--from-logs", str(_json_only(tmp_path)), "--out", str(tmp_path / "d.npz")))
    assert not (tmp_path / "d.npz").exists()


def _json_only(tmp_path: Path) -> Path:
    folder = tmp_path / "json-only"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(scenario_to_dict(generate("straight", 1))))
    return folder


def test_data_from_logs_writes_training_data_of_the_recorded_cars(cli, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    xml = Path("resources/planner/commonroad/USA_US101-4_1_T-1.xml")
    (logs / xml.name).write_bytes(xml.read_bytes())
    out = cli("planner", "data", "--from-logs", str(logs), "--out", str(tmp_path / "d.npz"), "--workers", "1", "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["files"] == 1 and info["vehicles"] > 10 and info["samples"] > info["vehicles"] and info["skipped"] == {}
    assert (tmp_path / "d.npz").stat().st_size > 10_000
