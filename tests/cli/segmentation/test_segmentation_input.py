"""`segmentation run --units/--up`: a millimetre, y-up scan is detected, said on stderr and in the JSON
record, segmented in metres z up, and labelled in its own coordinates; set values win."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from engines.segmentation.pointio import PointCloud, read_cloud, write_cloud


def _scan(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """A 5 x 4 m room with two boxes on its floor, in millimetres, y up (x, z, -y of z up)."""
    rng = np.random.default_rng(0)
    floor = np.column_stack([rng.uniform(0, 5, 4000), rng.uniform(0, 4, 4000), np.zeros(4000)])
    wall = np.column_stack([rng.uniform(0, 5, 1500), np.zeros(1500), rng.uniform(0, 2.5, 1500)])
    boxes = [np.column_stack([rng.uniform(x, x + 0.5, 600), rng.uniform(1.5, 2.0, 600), rng.uniform(0.02, 0.6, 600)]) for x in (1.0, 3.0)]
    room = np.concatenate([floor, wall, *boxes])
    stored = np.column_stack([room[:, 0], room[:, 2], -room[:, 1]]) * 1000.0
    return write_cloud(tmp_path / "scan.ply", PointCloud(stored)), stored


def test_a_millimetre_y_up_scan_is_detected_said_and_labelled_in_place(cli, tmp_path: Path) -> None:
    scan, stored = _scan(tmp_path)
    out = tmp_path / "labels.ply"
    proc = cli("segmentation", "run", str(scan), "--method", "dbscan", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["input_frame"]["units"] == "mm" and record["input_frame"]["up"] == "y"
    said = [line for line in proc.stderr.splitlines() if line.startswith("input: ")]
    assert len(said) == 1 and "read as millimetres (detected: " in said[0] and "y up (detected: " in said[0], proc.stderr
    assert record["input_frame"]["note"] in said[0]
    labelled = read_cloud(out)
    assert np.abs(labelled.file_points() - stored).max() < 0.05  # written back in millimetres, y up
    assert len([s for s in record["segments"] if s["points"] >= 400]) >= 2  # the boxes stand apart on a floor in metres

    proc = cli("segmentation", "run", str(scan), "--method", "dbscan", "--units", "m", "--up", "z", "--out", str(out), "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    frame = json.loads(proc.stdout)["input_frame"]
    assert (frame["units"], frame["up"], frame["note"]) == ("m", "z", "read as metres (set), z up (set)")
    assert "input:" not in proc.stderr


def test_a_bad_units_value_is_refused_by_the_parser(cli, tmp_path: Path) -> None:
    scan, _ = _scan(tmp_path)
    proc = cli("segmentation", "run", str(scan), "--units", "cm", "--out", str(tmp_path / "o.ply"))
    assert proc.returncode == 2 and "invalid choice: 'cm'" in proc.stderr
