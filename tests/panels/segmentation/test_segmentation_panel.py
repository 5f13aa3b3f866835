"""The GrabS panel under Xvfb: example run, views, picking, replay, thresholds, metrics, exports, bad files."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engines.segmentation.pointio import PointCloud, read_cloud, write_cloud
from tests.conftest import wait_until

pytestmark = pytest.mark.gl


@pytest.fixture
def panel(qapp, qtbot, panel_ctx):
    from panels.segmentation import create_panel

    p = create_panel(panel_ctx)
    qtbot.addWidget(p)
    p.resize(1300, 800)
    p.show()
    qtbot.waitExposed(p)
    # a new panel shows the example room (not yet segmented) instead of an empty view
    assert wait_until(qapp, lambda: p.scene is not None and not p.runner.busy, 60)
    assert p.view is None and len(p.pred_view.positions) > 1000
    yield p
    p.runner.cancel()
    for runner in p._exporters.values():
        runner.cancel()


def finish(qapp, p, timeout: float = 240) -> list:
    outcome: list = []
    p.runner.finished.connect(lambda r: outcome.append("finished"))
    p.runner.failed.connect(lambda t: outcome.append(f"failed: {t}"))
    p.runner.errored.connect(lambda t, tb: outcome.append(f"error: {t}\n{tb}"))
    assert wait_until(qapp, lambda: outcome and not p.runner.busy, timeout), "job did not finish"
    return outcome


@pytest.fixture
def ran(qapp, panel):
    panel.anchors.setValue(6)  # a short search keeps the suite fast
    assert panel.run_default()
    assert finish(qapp, panel) == ["finished"]
    return panel


def test_example_runs_and_draws(qapp, ran) -> None:
    p = ran
    assert p.scene is not None and p.view is not None and p.view.result.method == "grabs"
    assert p.scene.has_gt and p.gt_box.isVisible()
    assert sum(not c.second for c in p.view.result.candidates) == p.anchors.value() <= len(p.view.result.trajectories)
    assert p.segments.table.rowCount() == len(p.view.result.segments)
    assert p.metrics.table.rowCount() > 0  # the example carries ground truth: AP is shown
    image = p.pred_view.image()
    assert image.width() > 100
    arr = _pixels(image)
    assert arr.std() > 5, "the GL view drew something"
    from workbench.screenshot import grab_image, is_blank

    assert not is_blank(grab_image(p))


def test_unconfirmed_segments_are_marked_in_the_list(qapp, panel) -> None:
    from panels.segmentation.sidebar import NESTED_TIP, UNCONFIRMED_TIP

    panel.segments.fill([(1, 400, 0.9, True, 0), (2, 120, 0.01, False, 0), (3, 300, 0.5, True, 0), (4, 150, 0.005, False, 1)])
    table = panel.segments.table
    assert table.item(0, 0).text() == "#1" and not table.item(0, 0).toolTip()
    assert table.item(1, 0).text() == "#2 (unconfirmed)" and table.item(1, 2).toolTip() == UNCONFIRMED_TIP
    assert table.item(1, 0).foreground().color() != table.item(0, 0).foreground().color()
    assert table.item(3, 0).text() == "#4 (in #1)" and table.item(3, 1).toolTip() == NESTED_TIP.format(parent=1)
    assert "segment #1" in table.item(3, 0).toolTip()
    assert panel.segments.hidden() == set() and panel.segments.hide_unconfirmed.isEnabled()
    shown: list = []
    panel.segments.visibilityChanged.connect(shown.append)
    table.item(2, 0).setCheckState(table.item(2, 0).checkState().__class__.Unchecked)
    panel.segments.hide_unconfirmed.click()
    assert panel.segments.hidden() == {2, 3, 4} and shown[-1] == {2, 3, 4}  # a hidden confirmed row stays hidden
    panel.segments.show_all.click()
    assert panel.segments.hidden() == set()
    panel.segments.fill([(1, 400, 0.9, True, 0)])
    assert not panel.segments.hide_unconfirmed.isEnabled()


def _pixels(image) -> np.ndarray:
    from PySide6.QtGui import QImage

    img = image.convertToFormat(QImage.Format.Format_RGB32)
    ptr = img.constBits()
    return np.frombuffer(ptr, np.uint8).reshape(img.height(), img.bytesPerLine())[:, : img.width() * 4].astype(float)


def test_progress_bar_shows_only_while_a_job_runs(qapp, panel) -> None:
    assert not panel.progress.isVisible()
    panel.anchors.setValue(4)
    panel.run()
    assert panel.progress.isVisible() and panel.runner.busy
    assert finish(qapp, panel) == ["finished"]
    assert not panel.progress.isVisible()


def test_ppo_policy_runs_from_the_method_box(qapp, panel) -> None:
    panel.anchors.setValue(4)
    panel.method.setCurrentIndex(panel.method.findData("grabs_ppo"))
    assert panel.params().agent.policy == "ppo" and panel.params().method == "grabs"
    panel.run()
    assert finish(qapp, panel) == ["finished"]
    assert panel.view.result.agent == "ppo" and "PPO policy" in panel.status.text()
    assert len(panel.view.result.trajectories) >= 4 and panel.segments.table.rowCount() == len(panel.view.result.segments)


def test_colour_modes_point_size_and_cameras(qapp, ran) -> None:
    """Every colour mode repaints the points; instance and ground truth use the viewer's instance palette."""
    from engines.segmentation.viewer import instance_colors

    p = ran
    previous = p.pred_view.scatter.color.copy()
    for mode in ("ground truth", "score", "prior residual", "rgb", "errors", "instance"):
        p.controls.color.setCurrentText(mode)
        qapp.processEvents()
        colors = p.pred_view.scatter.color
        assert colors.shape == (len(p.scene.drawn), 4)
        assert not np.array_equal(colors, previous), f"{mode!r} drew the same colours as the mode before it"
        previous = colors.copy()
        if mode == "ground truth":
            np.testing.assert_array_equal(colors, instance_colors(p.scene.cloud.instance[p.scene.drawn]))
        elif mode == "instance":
            res, d = p.view.result, p.scene.drawn
            innermost = np.where(res.part[d] > 0, res.part[d], res.instance[d])  # a nested part's points in the part's colour
            np.testing.assert_array_equal(colors, instance_colors(innermost))
    p.controls.size.setValue(7)
    assert p.pred_view.scatter.size == 7.0 and p.gt_view.scatter.size == 7.0
    p.camera_preset("top")
    assert p.pred_view.opts["elevation"] == 90.0
    assert p.gt_view.opts["elevation"] == 90.0, "the ground-truth camera follows"
    p.controls.link.setChecked(False)
    p.camera_preset("front")
    assert p.gt_view.opts["elevation"] == 90.0 and p.pred_view.opts["elevation"] == 5.0


def test_click_selects_the_segment_under_the_cursor(qapp, qtbot, panel) -> None:
    # A tiny hand-made result so the test does not depend on what the prior finds.
    from engines.segmentation.api import SegmentationResult, _segments
    from engines.segmentation.viewer import result_view, scene_view
    from panels.segmentation import work

    rng = np.random.default_rng(0)
    pts = np.concatenate([rng.uniform(0, 1, (400, 3)), rng.uniform(0, 1, (400, 3)) + [3, 0, 0]]).astype(np.float32)
    inst = np.repeat([1, 2], 400).astype(np.int32)
    score = np.where(inst == 1, 0.8, 0.6).astype(np.float32)
    res = SegmentationResult("dbscan", inst, score, np.full(800, np.nan, np.float32), _segments(pts.astype(float), inst, score), (), (), np.zeros((0, 3)))
    scene = scene_view(PointCloud(pts, None, inst), "toy.ply")
    panel._on_finished(work.Segmented(scene, result_view(scene, res)))
    panel.camera_preset("top")
    qapp.processEvents()
    # Project a point of segment 2 with the view's own matrices and click there.
    target = pts[600]
    clip = panel.pred_view.mvp() @ np.append(target, 1.0)
    x = (clip[0] / clip[3] + 1) / 2 * panel.pred_view.width()
    y = (1 - clip[1] / clip[3]) / 2 * panel.pred_view.height()
    panel.pick(x, y)
    assert panel.selected == 2
    assert panel.segments.selected_id() == 2
    assert "segment #2" in panel.controls.info.text()
    panel.pick(2, 2)  # empty corner
    assert "No point" in panel.controls.info.text()
    # Hiding segment 2 removes its points from the drawing.
    panel.segments.table.item(1, 0).setCheckState(panel.segments.table.item(1, 0).checkState().__class__.Unchecked)
    qapp.processEvents()
    assert len(panel.pred_view.positions) == 400
    panel.segments.show_all.click()
    assert len(panel.pred_view.positions) == 800
    panel.selected = 1
    panel.camera_preset("fit")
    assert panel.pred_view.opts["distance"] < 4


def test_agent_replay_shows_the_cylinder(qapp, ran) -> None:
    p = ran
    found = [i for i, t in enumerate(p.view.result.trajectories) if t.found]
    assert found and p.replay.trajectory.currentIndex() == found[0], "the replay opens on a trajectory that found an object"
    p.tabs.setCurrentWidget(p.replay)
    p.replay.trajectory.setCurrentIndex(0)
    p.replay.slider.setValue(0)
    qapp.processEvents()
    assert p.pred_view.cylinder.visible()
    assert "radius 1.50" in p.replay.text.text() and "reward" in p.replay.text.text()
    steps = len(p.view.result.trajectories[0].steps)
    assert p.replay.slider.maximum() == steps - 1
    p.replay.slider.setValue(steps - 1)
    assert f"step {steps - 1}/{steps - 1}" in p.replay.text.text()
    p.replay.show_cylinder.setChecked(False)
    assert not p.pred_view.cylinder.visible()


def test_threshold_change_rescores_in_the_background(qapp, ran) -> None:
    p = ran
    old = p.view
    p.thresholds.set_value("join_coverage", 0.95, emit=False)
    p.thresholds.set_value("found_threshold", 0.30)
    assert p.params().merge.coverage == pytest.approx(0.95) and p.params().reward.found_threshold == pytest.approx(0.30)
    assert wait_until(qapp, lambda: p.runner.busy, 5), "a re-score job started"
    assert finish(qapp, p) == ["finished"]
    assert p.view is not old
    result = p.view.result
    assert result.segments and result.trajectories == old.result.trajectories  # re-scored, not searched again
    # What the panel shows is the engine's re-scoring of the old search with the new thresholds.
    from engines.segmentation.api import resegment

    expected = resegment(old.result, p.scene.cloud, p.params(method="grabs"))
    np.testing.assert_array_equal(result.instance, expected.instance)
    np.testing.assert_allclose(result.score, expected.score)


def test_unclaimed_box_rescores_without_the_unconfirmed_segments(qapp, ran) -> None:
    p = ran
    p.thresholds.set_value("found_threshold", 0.04, emit=False)  # few found: most object points left unclaimed
    p.thresholds.unclaimed.setChecked(False)
    assert not p.params().unclaimed.enabled
    assert wait_until(qapp, lambda: p.runner.busy, 5), "a re-score job started"
    assert finish(qapp, p) == ["finished"]
    assert all(s.confirmed for s in p.view.result.segments if not s.parent)
    p.thresholds.unclaimed.setChecked(True)
    assert wait_until(qapp, lambda: p.runner.busy, 5)
    assert finish(qapp, p) == ["finished"]
    assert any(not s.confirmed for s in p.view.result.segments)
    assert p.segments.table.rowCount() == len(p.view.result.segments) and p.segments.hide_unconfirmed.isEnabled()


def test_nested_proposals_are_drawn_listed_and_switched_off_in_the_background(qapp, ran) -> None:
    """The example room's short search leaves segments with parts beneath their tops: each part is
    listed inside its segment and its points are drawn as the part; the box re-scores without them."""
    p = ran
    nested = [s for s in p.view.result.segments if s.parent]
    assert nested, "the example room has objects beneath a segment's top"
    labels = [p.segments.table.item(r, 0).text() for r in range(p.segments.table.rowCount())]
    for s in nested:
        assert f"#{s.id} (in #{s.parent})" in labels
        drawn = p.view.drawn_instance == s.id
        assert drawn.any() and (p.view.result.instance[p.scene.drawn][drawn] == s.parent).all()
    p.thresholds.nested.setChecked(False)
    assert not p.params().nested.enabled
    assert wait_until(qapp, lambda: p.runner.busy, 5), "a re-score job started"
    assert finish(qapp, p) == ["finished"]
    assert not any(s.parent for s in p.view.result.segments) and not p.view.result.part.any()
    assert p.segments.table.rowCount() == len(p.view.result.segments)


def test_exports(qapp, qtbot, ran, tmp_path: Path) -> None:
    p = ran
    p.export_ply(tmp_path / "pred.ply")
    assert wait_until(qapp, lambda: (tmp_path / "pred.ply").exists() and not p.exporting, 30)
    back = read_cloud(tmp_path / "pred.ply")
    assert back.instance is not None and back.score is not None and len(back) == p.scene.points
    p.export_json(tmp_path / "s.json")
    p.export_scannet(tmp_path / "scannet")
    assert wait_until(qapp, lambda: (tmp_path / "s.json").exists() and (tmp_path / "scannet").exists() and not p.exporting, 30)
    assert list((tmp_path / "scannet").glob("*.txt"))
    p.export_png(tmp_path / "view.png")
    from PySide6.QtGui import QImage

    img = QImage(str(tmp_path / "view.png"))
    assert img.width() > p.pred_view.width()  # prediction and ground truth side by side
    assert [a.text() for a in p.export_actions()][0].startswith("Labelled PLY")


def test_opening_another_cloud_replaces_the_result(qapp, ran, tmp_path: Path) -> None:
    p = ran
    rng = np.random.default_rng(1)
    path = write_cloud(tmp_path / "other.xyz", PointCloud(rng.uniform(0, 2, (3000, 3)).astype(np.float32)))
    p.open_path(path)
    assert finish(qapp, p, 60) == ["finished"]
    assert p.view is None and p.scene.points == 3000
    assert len(p.pred_view.scatter.color) == len(p.pred_view.positions) == 3000
    assert not p.gt_box.isVisible() and p.segments.table.rowCount() == 0


def test_slider_during_a_run_does_not_cancel_it(qapp, ran) -> None:
    p = ran
    cancelled: list = []
    p.runner.cancelled.connect(lambda: cancelled.append(True))
    p.run()
    assert p.runner.busy
    p.thresholds.set_value("found_threshold", 0.2)
    p.recompute()
    outcome = finish(qapp, p)
    # The run ends normally; the re-score the slider asked for may follow it (and may land in time).
    assert outcome[0] == "finished" and set(outcome) == {"finished"} and not cancelled, outcome


def test_bad_files_keep_the_current_scene(qapp, ran, tmp_path: Path) -> None:
    p = ran
    scene, view = p.scene, p.view
    bad = {"empty.ply": b"", "notes.pcd": b"hello\n", "junk.npz": b"PK\x03\x04 nope"}
    for name, data in bad.items():
        (tmp_path / name).write_bytes(data)
        p.open_path(tmp_path / name)
        outcome = finish(qapp, p, 30)
        assert outcome and outcome[0].startswith("failed"), outcome
        assert p.message.text and p.scene is scene and p.view is view
    np.savez(tmp_path / "nan.npz", points=np.full((10, 3), np.nan))
    p.open_path(tmp_path / "nan.npz")
    finish(qapp, p, 30)
    assert "no finite points" in p.message.text


def test_large_file_loads_without_freezing(qapp, qtbot, panel, tmp_path: Path) -> None:
    from PySide6.QtCore import QElapsedTimer, QTimer

    rng = np.random.default_rng(0)
    n = 1_000_000
    pts = rng.uniform(0, 10, (n, 3)).astype(np.float32)
    path = write_cloud(tmp_path / "big.ply", PointCloud(pts, rng.integers(0, 255, (n, 3)).astype(np.uint8)))
    clock = QElapsedTimer()
    gaps, last = [], [0]

    def tick() -> None:
        now = clock.elapsed()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(tick)
    clock.start()
    timer.start()
    panel.open_path(path)
    outcome = finish(qapp, panel, 120)
    timer.stop()
    assert outcome == ["finished"]
    assert panel.scene.points == n and len(panel.pred_view.positions) == 200_000
    assert "200,000 drawn" in panel.status.text()
    # While the mouse orbits, a 50k subset is drawn; at rest all 200k again.
    from PySide6.QtCore import QPoint, Qt

    qtbot.mousePress(panel.pred_view, Qt.MouseButton.LeftButton, pos=QPoint(100, 100))
    assert len(panel.pred_view.scatter.pos) == 50_000
    qtbot.mouseRelease(panel.pred_view, Qt.MouseButton.LeftButton, pos=QPoint(160, 120))
    assert len(panel.pred_view.scatter.pos) == 200_000
    # The UI kept ticking while the worker read the file (the drawing itself is one short step).
    # (a warm worker reads the million points in a few hundred ms: a handful of ticks)
    assert len(gaps) >= 5 and sorted(gaps)[-2] < 1000, f"UI stalls: {sorted(gaps)[-5:]} ms"


def test_state_round_trip(qapp, panel_ctx, panel, tmp_path: Path) -> None:
    from engines.segmentation.example import example_path
    from panels.segmentation import create_panel

    panel.anchors.setValue(12)
    panel.method.setCurrentIndex(panel.method.findData("dbscan"))
    panel.thresholds.set_value("mask_threshold", 0.03, emit=False)
    panel.thresholds.unclaimed.setChecked(False)
    panel.thresholds.nested.setChecked(False)
    panel.controls.color.setCurrentText("score")
    panel.open_path(example_path())
    assert finish(qapp, panel, 60) == ["finished"]
    state = panel.state()
    assert state["path"] == str(example_path()) and state["anchors"] == 12 and state["method"] == "dbscan" and state["unclaimed"] is False
    assert state["nested"] is False
    other = create_panel(panel_ctx)
    other.restore(state)
    assert finish(qapp, other, 60) == ["finished"]
    assert other.state() == state
    other.restore({"path": str(tmp_path / "gone.ply")})
    assert "no longer exists" in other.message.text
