"""What the viewer draws (decimation, colours, picking, error colouring) and the export formats."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engines.segmentation import viewer
from engines.segmentation.export import export_json, export_ply, export_scannet
from engines.segmentation.api import SegmentationResult, _segments
from engines.segmentation.pointio import PointCloud, read_cloud


def test_decimation_caps_the_drawn_points() -> None:
    assert len(viewer.decimate(1_000_000)) == viewer.MAX_DRAWN == 200_000
    idx = viewer.decimate(1000, 200)
    assert len(idx) == 200 and np.all(np.diff(idx) > 0)
    assert len(viewer.decimate(50)) == 50


def test_colours_are_rgba_and_distinct_per_instance() -> None:
    inst = np.array([0, 1, 1, 2, 3])
    c = viewer.instance_colors(inst)
    assert c.shape == (5, 4) and c.dtype == np.float32
    assert np.allclose(c[1], c[2]) and not np.allclose(c[1], c[3]) and np.allclose(c[0], viewer.GREY)
    s = viewer.scalar_colors(np.array([0.0, np.nan, 1.0]))
    assert np.allclose(s[1], viewer.GREY) and not np.allclose(s[0], s[2])


def test_pick_returns_the_point_under_the_cursor() -> None:
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, -3]], np.float32)
    # Orthographic-like MVP: x, y straight to NDC, z to depth.
    mvp = np.diag([0.5, 0.5, 0.1, 1.0])
    w = h = 200
    # Point 1 sits at NDC (0.5, 0) -> pixel (150, 100).
    assert viewer.pick(pts, mvp, w, h, 150, 100) == 1
    assert viewer.pick(pts, mvp, w, h, 100, 50) == 2
    # Points 0 and 3 project to the same pixel: the front-most (smaller depth) wins.
    assert viewer.pick(pts, mvp, w, h, 100, 100) == 3
    assert viewer.pick(pts, mvp, w, h, 5, 5) is None


def test_error_labels() -> None:
    gt = np.array([1] * 10 + [2] * 10 + [0] * 5)
    pred = np.array([1] * 8 + [0] * 2 + [0] * 10 + [2] * 5)  # object 1 found (IoU 0.8), object 2 missed, a FP on background
    lab = viewer.error_labels(pred, gt)
    assert (lab[:8] == 1).all() and (lab[8:10] == 3).all() and (lab[10:20] == 3).all() and (lab[20:] == 2).all()


def test_error_labels_judge_a_nested_part_as_its_own_mask() -> None:
    gt = np.array([1] * 20 + [2] * 8 + [0] * 2)  # a table and the chair pushed under it
    pred = np.array([1] * 30)  # one segment holds both (IoU 20/30 with the table)
    part = np.array([0] * 20 + [2] * 8 + [0] * 2)  # the nested proposal: the chair
    without = viewer.error_labels(pred, gt)
    assert (without[:20] == 1).all() and (without[20:] == 2).all()
    lab = viewer.error_labels(pred, gt, part)
    assert (lab[:20] == 1).all() and (lab[20:28] == 1).all() and (lab[28:] == 2).all()
    wrong = np.array([0] * 14 + [3] * 6 + [0] * 10)  # a part of the table's own points (its legs) matches nothing
    assert np.array_equal(viewer.error_labels(pred, gt, wrong), without)
    legs = np.array([0] * 6 + [3] * 14 + [0] * 10)  # matches the table better than the segment does (14/20 vs 20/30)
    assert np.array_equal(viewer.error_labels(pred, gt, legs), without)  # but the segment ranks first and took it


def test_cylinder_lines_and_cameras() -> None:
    lines = viewer.cylinder_lines(1.0, 2.0, 0.5, 0.0, 2.2)
    assert lines.shape[1] == 3 and len(lines) % 2 == 0
    r = np.hypot(lines[:, 0] - 1.0, lines[:, 1] - 2.0)
    assert np.allclose(r, 0.5, atol=1e-5)
    assert np.allclose(sorted(set(np.round(lines[:, 2].astype(float), 3))), [0.0, 2.2])
    top = viewer.camera_preset("top", (0, 0, 0), 10.0)
    assert top["elevation"] == 90.0 and 5 < top["distance"] < 15
    with pytest.raises(ValueError):
        viewer.camera_preset("under", (0, 0, 0), 1.0)


def _result(n: int = 300) -> tuple[PointCloud, SegmentationResult]:
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 1, (n, 3)).astype(np.float32)
    inst = np.zeros(n, np.int32)
    inst[:120] = 1
    inst[150:260] = 2
    score = np.where(inst == 1, 0.9, np.where(inst == 2, 0.6, 0.0)).astype(np.float32)
    res = SegmentationResult("grabs", inst, score, np.full(n, np.nan, np.float32), _segments(pts.astype(np.float64), inst, score), (), (), np.zeros((0, 3)))
    return PointCloud(pts, None, inst.copy()), res


def test_scannet_layout(tmp_path: Path) -> None:
    cloud, res = _result()
    export_scannet(tmp_path, res, "scene0001")
    lines = (tmp_path / "scene0001.txt").read_text().splitlines()
    assert lines == ["pred_mask/scene0001_001.txt 1 0.900000", "pred_mask/scene0001_002.txt 1 0.600000"]
    mask = np.loadtxt(tmp_path / "pred_mask" / "scene0001_002.txt", dtype=int)
    assert mask.shape == (300,) and mask.sum() == 110 and set(np.unique(mask)) == {0, 1}
    with pytest.raises(Exception, match="scene name"):
        export_scannet(tmp_path, res, "bad name/..")


def test_labelled_ply_and_json(tmp_path: Path) -> None:
    cloud, res = _result()
    back = read_cloud(export_ply(tmp_path / "pred.ply", cloud, res))
    assert np.array_equal(back.instance, res.instance) and np.allclose(back.score, res.score)
    data = json.loads(export_json(tmp_path / "s.json", res).read_text())
    assert [s["id"] for s in data["segments"]] == [1, 2]
    seg = data["segments"][0]
    assert seg["points"] == 120 and seg["score"] == pytest.approx(0.9) and len(seg["bbox"]) == 2 and len(seg["centroid"]) == 3


def test_grid_stays_small_for_far_or_huge_coordinates() -> None:
    from engines.segmentation.viewer import grid_lines

    for pts in (np.array([[5e6, 5e6, 0.0], [5e6 + 30, 5e6 + 40, 1.0]]), np.array([[-7e31, 0, 0], [7e31, 1e-3, 1e30]]),
                np.array([[0.0, 0.0, 0.0], [np.nan, 1.0, 1.0]])):
        grid = grid_lines(pts.astype(np.float32), float(np.linalg.norm(np.nanmax(pts, 0) - np.nanmin(pts, 0))))
        assert 2 <= len(grid) <= 4 * 200 and grid.shape[1] == 3


def test_scene_view_carries_its_grid() -> None:
    from engines.segmentation.viewer import scene_view

    scene = scene_view(PointCloud(np.random.default_rng(0).uniform(0, 4, (500, 3)).astype(np.float32)), "toy.ply")
    assert len(scene.grid) > 4 and np.isfinite(scene.grid).all()
