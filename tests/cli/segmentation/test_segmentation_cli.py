"""`workbench segmentation ...` end to end: scenes, run, eval, bench, and one clear error per bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engines.segmentation.metrics import ScenePrediction, evaluate
from engines.segmentation.pointio import PointCloud, read_cloud, write_cloud


@pytest.fixture(scope="module")
def scene_dir(tmp_path_factory) -> Path:
    from tests.conftest import run_cli_here

    out = tmp_path_factory.mktemp("scenes")
    proc = run_cli_here("segmentation", "scenes", "--n", "1", "--seed", "3", "--points", "6000", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert len(data["scenes"]) == 1
    return out


def test_scenes_carry_ground_truth(scene_dir: Path) -> None:
    cloud = read_cloud(scene_dir / "scene_000.ply")
    assert len(cloud) == 6000 and cloud.instance is not None and cloud.instance.max() >= 4
    meta = json.loads((scene_dir / "scene_000.json").read_text())
    assert meta["seed"] == 3 and len(meta["objects"]) >= 4


def test_run_dbscan_then_eval(cli, scene_dir: Path, tmp_path: Path) -> None:
    pred = tmp_path / "pred.ply"
    proc = cli(
        "segmentation",
        "run",
        str(scene_dir / "scene_000.ply"),
        "--method",
        "dbscan",
        "--out",
        str(pred),
        "--summary",
        str(tmp_path / "s.json"),
        "--scannet",
        str(tmp_path / "scannet"),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["method"] == "dbscan" and summary["segments"] and {"id", "points", "score", "bbox", "centroid"} <= set(summary["segments"][0])
    out = read_cloud(pred)
    assert out.instance is not None and out.score is not None and len(out) == 6000
    assert (tmp_path / "scannet" / "scene_000.txt").exists()
    proc = cli("segmentation", "eval", "--pred", str(pred), "--gt", str(scene_dir / "scene_000.ply"), "--json")
    assert proc.returncode == 0, proc.stderr
    ap = json.loads(proc.stdout)
    # the same two files scored in-process by the engine's metrics: the CLI reads and passes them right
    gt = read_cloud(scene_dir / "scene_000.ply")
    expected = evaluate([ScenePrediction.from_labels(gt.instance, out.instance, out.score)])
    assert (ap["ap"], ap["ap50"], ap["ap25"]) == pytest.approx((expected.ap, expected.ap50, expected.ap25))
    assert (ap["gt_objects"], ap["predictions"]) == (expected.n_gt, expected.n_pred)
    assert 0.0 <= ap["ap"] <= ap["ap50"] <= ap["ap25"] <= 1.0 and ap["ap25"] > 0.0


def test_run_grabs_writes_instance_and_score(cli, scene_dir: Path, tmp_path: Path) -> None:
    pred = tmp_path / "grabs.ply"
    proc = cli("segmentation", "run", str(scene_dir / "scene_000.ply"), "--anchors", "4", "--out", str(pred), "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["method"] == "grabs" and summary["trajectories"] in (4, 6)  # 4 anchors, 2 more in the second search
    out = read_cloud(pred)
    assert out.instance.dtype == np.int32 and out.score.dtype == np.float32


def test_run_takes_the_panels_thresholds(cli, scene_dir: Path, tmp_path: Path) -> None:
    pred = tmp_path / "strict.ply"
    proc = cli(
        "segmentation",
        "run",
        str(scene_dir / "scene_000.ply"),
        "--anchors",
        "4",
        "--min-points",
        "150",
        "--found-threshold",
        "0.2",
        "--out",
        str(pred),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["segments"] and all(s["points"] >= 150 for s in summary["segments"])
    for flag, value, words in (
        ("--min-points", "0", "at least 1 point"),
        ("--mask-threshold", "2", "thresholds"),
        ("--dedup-iou", "1.5", "duplicate IoU"),
        ("--join-coverage", "0", "coverage"),
    ):
        line = _one_error(cli("segmentation", "run", str(scene_dir / "scene_000.ply"), flag, value, "--out", str(tmp_path / "x.ply")))
        assert words in line, (flag, line)
    assert not (tmp_path / "x.ply").exists()


def test_bench_reports_every_method(cli, scene_dir: Path) -> None:
    record = scene_dir.parent / "bench-record.json"
    proc = cli("segmentation", "bench", "--scenes", str(scene_dir), "--anchors", "4", "--json", "--out", str(record), timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert json.loads(record.read_text()) == data and data["generator"] == "train"
    grabs = data["methods"]["grabs"]
    assert {"confirmed_ap", "confirmed_ap50", "confirmed_ap25"} <= set(grabs) and grabs["confirmed_predictions"] <= grabs["predictions"]
    assert set(data["methods"]) == {"grabs", "grabs_ppo", "dbscan"}
    for m in data["methods"].values():
        assert {"ap", "ap50", "ap25", "seconds_per_scene"} <= set(m)
        assert m["ap50_ci95"] == m["ap25_ci95"] == [None, None]  # one room: nothing to resample (tests/engines: more)
    assert data["comparison"]["ap50_minus_dbscan_ci95"] == [None, None]
    assert "ap50_minus_dbscan" in data["comparison"] and len(data["targets"]) == 4
    assert "ppo_minus_search_ap50" in data["comparison"]


def test_unclaimed_parts_are_unconfirmed_segments_unless_switched_off(cli, scene_dir: Path, tmp_path: Path) -> None:
    """With a found threshold nothing passes, every object point is unclaimed: the run keeps
    those parts as unconfirmed segments, or none with --no-unclaimed."""
    args = ("segmentation", "run", str(scene_dir / "scene_000.ply"), "--anchors", "2", "--found-threshold", "0.0001", "--json")
    kept = json.loads(cli(*args, "--out", str(tmp_path / "a.ply")).stdout)["segments"]
    assert kept and not any(s["confirmed"] for s in kept)
    none = cli(*args, "--no-unclaimed", "--out", str(tmp_path / "b.ply"))
    assert none.returncode == 0, none.stderr
    assert json.loads(none.stdout)["segments"] == [] and not read_cloud(tmp_path / "b.ply").instance.any()


def test_nested_proposals_are_listed_inside_their_segment_unless_switched_off(cli, scene_dir: Path, tmp_path: Path) -> None:
    args = ("segmentation", "run", str(scene_dir / "scene_000.ply"), "--anchors", "4", "--json")
    segments = json.loads(cli(*args, "--out", str(tmp_path / "a.ply")).stdout)["segments"]
    top = {s["id"] for s in segments if "inside" not in s}
    assert all(s["inside"] in top and not s["confirmed"] for s in segments if "inside" in s)
    none = cli(*args, "--no-nested", "--out", str(tmp_path / "b.ply"))
    assert none.returncode == 0, none.stderr
    assert not any("inside" in s for s in json.loads(none.stdout)["segments"])
    assert read_cloud(tmp_path / "b.ply").part is None


def test_eval_scores_the_nested_proposals_of_a_prediction(cli, tmp_path: Path) -> None:
    """A table segment holding a chair: the chair is found only through the nested proposal."""
    rng = np.random.default_rng(0)
    points = rng.uniform(0, 1, (400, 3)).astype(np.float32)
    chair = np.arange(400) >= 250
    write_cloud(tmp_path / "gt.ply", PointCloud(points, instance=np.where(chair, 2, 1).astype(np.int32)))
    ones = np.ones(400, np.int32)
    write_cloud(tmp_path / "flat.ply", PointCloud(points, instance=ones, score=np.full(400, 0.8, np.float32)))
    write_cloud(
        tmp_path / "nested.ply",
        PointCloud(
            points,
            instance=ones,
            score=np.full(400, 0.8, np.float32),
            part=np.where(chair, 2, 0).astype(np.int32),
            part_score=np.where(chair, 0.4, 0).astype(np.float32),
        ),
    )
    scores = {}
    for name in ("flat", "nested"):
        proc = cli("segmentation", "eval", "--pred", str(tmp_path / f"{name}.ply"), "--gt", str(tmp_path / "gt.ply"), "--json")
        assert proc.returncode == 0, proc.stderr
        scores[name] = json.loads(proc.stdout)["ap25"]
    assert scores == {"flat": pytest.approx(0.5), "nested": pytest.approx(1.0)}


def test_run_with_the_ppo_policy(cli, scene_dir: Path, tmp_path: Path) -> None:
    proc = cli(
        "segmentation", "run", str(scene_dir / "scene_000.ply"), "--anchors", "4", "--agent", "ppo", "--out", str(tmp_path / "p.ply"), "--json"
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["method"] == "grabs" and summary["agent"] == "ppo" and summary["trajectories"] in (4, 6)


def _one_error(proc) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = [l for l in proc.stderr.strip().splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_bad_inputs_get_one_clear_error(cli, tmp_path: Path) -> None:
    out = tmp_path / "out.ply"
    out.write_bytes(b"precious")  # nothing may overwrite it on failure
    cases = {}
    (tmp_path / "empty.ply").write_bytes(b"")
    cases["empty.ply"] = "empty"
    (tmp_path / "notes.ply").write_text("just some notes\n")
    cases["notes.ply"] = "not a PLY"
    full = write_cloud(tmp_path / "full.ply", PointCloud(np.random.default_rng(0).uniform(0, 1, (2000, 3)).astype(np.float32)))
    (tmp_path / "cut.ply").write_bytes(full.read_bytes()[:3000])
    cases["cut.ply"] = "corrupt"
    np.savez(tmp_path / "nan.npz", points=np.full((500, 3), np.nan))
    cases["nan.npz"] = "no finite points"
    (tmp_path / "huge.ply").write_text(
        "ply\nformat binary_little_endian 1.0\nelement vertex 999999999\nproperty float x\nproperty float y\nproperty float z\nend_header\n"
    )
    cases["huge.ply"] = "too large"
    (tmp_path / "words.xyz").write_text("no numbers here\n")
    cases["words.xyz"] = "not a point cloud"
    for name, message in cases.items():
        line = _one_error(cli("segmentation", "run", str(tmp_path / name), "--method", "dbscan", "--out", str(out)))
        assert message in line, (name, line)
    assert out.read_bytes() == b"precious"
    assert message in _one_error(cli("segmentation", "eval", "--pred", str(tmp_path / "words.xyz"), "--gt", str(full)))
    assert "no such file" in _one_error(cli("segmentation", "run", str(tmp_path / "missing.ply"), "--out", str(out)))
    assert "instance" in _one_error(cli("segmentation", "eval", "--pred", str(full), "--gt", str(full)))
    assert "minutes" in _one_error(cli("segmentation", "train-prior", "--minutes", "500", "--out", str(tmp_path / "p.pt")))
    assert "anchors must be 1 to 1000" in _one_error(cli("segmentation", "run", str(full), "--anchors", "100000000000", "--out", str(out)))
    assert "--threads" in _one_error(cli("segmentation", "train-prior", "--threads", "-1", "--out", str(tmp_path / "p.pt")))
    assert "minutes" in _one_error(cli("segmentation", "train-policy", "--minutes", "0", "--out", str(tmp_path / "q.pt")))
    (tmp_path / "policy.pt").write_text("not a policy")
    line = _one_error(cli("segmentation", "run", str(full), "--agent", "ppo", "--policy", str(tmp_path / "policy.pt"), "--out", str(out)))
    assert "not a segmentation policy" in line
    assert out.read_bytes() == b"precious"


def test_nan_points_are_dropped_and_counted(cli, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 3, (3000, 3))
    pts[:25] = np.nan
    np.savez(tmp_path / "holes.npz", points=pts)
    proc = cli("segmentation", "run", str(tmp_path / "holes.npz"), "--method", "dbscan", "--out", str(tmp_path / "o.ply"), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["dropped_non_finite"] == 25
    assert len(read_cloud(tmp_path / "o.ply")) == 2975


def test_seeds_outside_the_32_bit_range_are_one_error(cli, scene_dir: Path, tmp_path: Path) -> None:
    scene = str(scene_dir / "scene_000.ply")
    for seed in ("-1", "2147483648", "4294967296", "abc"):
        line = _one_error(cli("segmentation", "run", scene, "--method", "dbscan", "--seed", seed, "--out", str(tmp_path / "o.ply")))
        assert "seed must be an integer from 0 to 2^31-1" in line, line
    assert "seed must be" in _one_error(cli("segmentation", "scenes", "--seed", "-1", "--out", str(tmp_path / "rooms")))
    assert not (tmp_path / "o.ply").exists() and not (tmp_path / "rooms").exists()


def test_run_checks_every_output_before_any_work(cli, scene_dir: Path, tmp_path: Path) -> None:
    scene = str(scene_dir / "scene_000.ply")
    same = tmp_path / "same.ply"
    assert "is the same file as --out" in _one_error(cli("segmentation", "run", scene, "--method", "dbscan", "--out", str(same), "--summary", str(same)))
    assert ".json" in _one_error(cli("segmentation", "run", scene, "--method", "dbscan", "--out", str(same), "--summary", str(tmp_path / "s.txt")))
    blocked = tmp_path / "scannet"
    blocked.mkdir()
    (blocked / "pred_mask").write_text("a file where the mask folder goes")
    line = _one_error(
        cli("segmentation", "run", scene, "--method", "dbscan", "--out", str(same), "--summary", str(tmp_path / "s.json"), "--scannet", str(blocked))
    )
    assert "pred_mask is a file" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scannet"] and sorted(p.name for p in blocked.iterdir()) == ["pred_mask"]


def test_scannet_files_are_named_from_an_ascii_scene_name(cli, tmp_path: Path) -> None:
    scene = write_cloud(tmp_path / "scène.ply", PointCloud(np.random.default_rng(0).uniform(0, 3, (3000, 3)).astype(np.float32)))
    proc = cli("segmentation", "run", str(scene), "--method", "dbscan", "--out", str(tmp_path / "o.ply"), "--scannet", str(tmp_path / "sn"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sn" / "scene.txt").exists()


def test_eval_without_ground_truth_objects_is_an_error(cli, tmp_path: Path) -> None:
    pts = np.random.default_rng(0).uniform(0, 3, (3000, 3)).astype(np.float32)
    gt = write_cloud(tmp_path / "gt.ply", PointCloud(pts, instance=np.zeros(3000, np.int32)))
    pred = write_cloud(tmp_path / "pred.ply", PointCloud(pts, instance=np.ones(3000, np.int32), score=np.ones(3000, np.float32)))
    line = _one_error(cli("segmentation", "eval", "--pred", str(pred), "--gt", str(gt)))
    assert "holds no ground-truth objects of at least 100 points: nothing to evaluate" in line


def test_scenes_of_the_evaluation_generator_and_bench_takes_each_set_by_its_flag(cli, scene_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    proc = cli("segmentation", "scenes", "--generator", "eval", "--n", "2", "--seed", "11", "--points", "3000-4000", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["generator"] == "eval"
    for k in range(2):
        meta = json.loads((out / f"scene_{k:03d}.json").read_text())
        assert meta["generator"] == "eval" and meta["seed"] == 11 + k and 3000 <= len(read_cloud(out / f"scene_{k:03d}.ply")) <= 4000
    assert "--eval-scenes" in _one_error(cli("segmentation", "bench", "--scenes", str(out)))
    assert "--scenes" in _one_error(cli("segmentation", "bench", "--eval-scenes", str(scene_dir)))
    assert "give --scenes" in _one_error(cli("segmentation", "bench"))
    for points in ("5000-1000", "many"):
        assert "--points" in _one_error(cli("segmentation", "scenes", "--points", points, "--out", str(tmp_path / "x")))
    assert not (tmp_path / "x").exists()


def test_bench_limit_must_be_positive(cli, scene_dir: Path) -> None:
    for limit in ("0", "-1"):
        assert "--limit must be at least 1" in _one_error(cli("segmentation", "bench", "--scenes", str(scene_dir), "--limit", limit))
