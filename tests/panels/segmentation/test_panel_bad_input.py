"""The GrabS panel with bad input: broken clouds, bad session values, exports that cannot be written."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engines.segmentation.pointio import PointCloud, write_cloud
from tests.conftest import wait_until
from tests.panels.segmentation.test_segmentation_panel import finish, panel  # noqa: F401  (the shared fixture)

pytestmark = pytest.mark.gl

PLY = "ply\nformat ascii 1.0\nelement vertex {n}\nproperty float x\nproperty float y\nproperty float z\nend_header\n"


def _bad_files(folder: Path) -> dict[str, str]:
    """File name -> words of the one sentence the panel must show for it."""
    (folder / "trunc.pcd").write_text("VERSION .7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 5\nHEIGHT 1\nPOINTS 5\nDATA ascii\n1 2 3\n")
    (folder / "allnan.ply").write_text(PLY.format(n=3) + "nan nan nan\nnan 1 1\ninf 0 0\n")
    (folder / "word.ply").write_text(PLY.format(n=3) + "0 0 0\n0.1 0.2 oops\n1 1 1\n")
    (folder / "neg.ply").write_text(PLY.format(n=-5))
    points = np.zeros((4, 3), np.float32)
    np.savez(folder / "colors_str.npz", points=points, colors=np.array(["x"] * 4))
    np.savez(folder / "scalar_inst.npz", points=points, instance=np.int32(3))
    with open(folder / "plain.npz", "wb") as fh:
        np.save(fh, points)
    return {"trunc.pcd": "truncated", "allnan.ply": "no finite points", "word.ply": "line 9 of word.ply",
            "neg.ply": "corrupt", "colors_str.npz": "'colors'", "scalar_inst.npz": "'instance'", "plain.npz": ".npy"}


def test_broken_clouds_are_one_sentence_and_keep_scene_and_status(qapp, panel, tmp_path: Path) -> None:
    p = panel
    scene, status = p.scene, p.status.text()
    for name, words in _bad_files(tmp_path).items():
        p.open_path(tmp_path / name)
        outcome = finish(qapp, p, 30)
        assert outcome and outcome[0].startswith("failed"), (name, outcome)
        assert words in p.message.text and "\n" not in p.message.text and "\x1b" not in p.message.text, (name, p.message.text)
        assert p.scene is scene and p.status.text() == status, (name, p.status.text())


@pytest.mark.parametrize("state, needle", [
    ({"anchors": "many"}, "anchors must be a whole number from 1 to 128, not 'many'"),
    ({"anchors": 10**20}, "anchors must be a whole number from 1 to 128, not 100000000000000000000"),  # overflowed Qt's int half-way
    ({"thresholds": {"mask_threshold": "abc"}}, "mask_threshold must be a number, not 'abc'"),
    ({"thresholds": {"mask_thresh": 0.03}}, "unknown thresholds 'mask_thresh' (choose mask_threshold, found_threshold, dedup_iou, min_points, join_coverage)"),
    ({"point_size": "big"}, "point_size must be a whole number from 1 to 12, not 'big'"),
    ({"thresholds": [1, 2]}, "thresholds must be an object of name: value, not [1, 2]"),
    ({"path": 5}, "path must be text, not 5"),
    ({"thresholds": {"mask_threshold": float("nan")}}, "mask_threshold must be a number, not nan"),
    ({"method": "magic"}, "unknown method 'magic' (choose grabs, grabs_ppo, dbscan)"),
    ({"color_mode": "rainbow"}, "unknown color_mode 'rainbow' (choose instance, ground truth, score, prior residual, rgb, errors)"),
    ({"side_by_side": "yes"}, "side_by_side must be true or false, not 'yes'"),
    ({"anchors": 7, "unclaimed": 0}, "unclaimed must be true or false, not 0"),
    ({"anchors": 7, "point_size": 5.5}, "point_size must be a whole number from 1 to 12, not 5.5"),
])
def test_restore_refuses_bad_session_values_and_changes_nothing(qapp, panel, state: dict, needle: str) -> None:
    p = panel
    before = p.state()
    p.restore(state)
    assert p.message.text == f"The session's segmentation settings are invalid: {needle}", p.message.text
    assert p.state() == before and not p.runner.busy



def test_thresholds_are_the_engines_names_and_defaults_and_old_sessions_still_open(qapp, panel) -> None:
    from engines.segmentation.objectness import RewardParams
    from engines.segmentation.params import THRESHOLDS

    p = panel
    assert list(p.thresholds.values()) == list(THRESHOLDS) == ["mask_threshold", "found_threshold", "dedup_iou", "min_points", "join_coverage"]
    assert p.thresholds.value("found_threshold") == pytest.approx(RewardParams().found_threshold)
    assert p.params().reward.found_threshold == pytest.approx(RewardParams().found_threshold)
    p.restore({"thresholds": {"merge_coverage": 0.95}})  # a session saved before the key took the CLI's name
    assert not p.message.text and p.thresholds.value("join_coverage") == pytest.approx(0.95)
    assert p.params().merge.coverage == pytest.approx(0.95)

@pytest.fixture
def segmented(qapp, panel, tmp_path: Path):
    """The panel with a DBSCAN result for a cloud whose name is not plain ASCII."""
    rng = np.random.default_rng(0)
    boxes = [rng.uniform(0, 0.4, (800, 3)) + offset for offset in ((0, 0, 0), (2, 0, 0), (0, 2, 0))]
    path = write_cloud(tmp_path / "scène room-1.ply", PointCloud(np.concatenate(boxes).astype(np.float32)))
    panel.open_path(path)
    assert finish(qapp, panel, 60) == ["finished"]
    panel.method.setCurrentIndex(panel.method.findData("dbscan"))
    panel.run()
    assert finish(qapp, panel, 120) == ["finished"]
    return panel


def test_scannet_export_uses_the_clis_scene_name(qapp, segmented, tmp_path: Path) -> None:
    from engines.segmentation.export import scannet_scene_name

    p = segmented
    p.export_scannet(tmp_path / "sn")
    assert wait_until(qapp, lambda: (tmp_path / "sn").exists() and not p.exporting, 30)
    assert scannet_scene_name(p.scene.path) == "scene_room-1"
    assert (tmp_path / "sn" / "scene_room-1.txt").exists(), sorted(x.name for x in (tmp_path / "sn").iterdir())
    assert p.message.text.startswith("Wrote")


def test_scannet_export_onto_a_file_is_one_sentence(qapp, segmented, tmp_path: Path) -> None:
    p = segmented
    target = tmp_path / "a_file.txt"
    target.write_text("keep me")
    p.export_scannet(target)
    assert wait_until(qapp, lambda: not p.exporting and p.message.text, 30)
    assert "is a file, not a folder" in p.message.text and p.message.level == "error", p.message.text
    assert target.read_text() == "keep me"
