"""The panel's Input tab: a millimetre, y-up scan is detected and said in the status; setting units and
up axis reads the file again with them; both travel in the session and bad values are refused."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engines.segmentation.pointio import PointCloud, write_cloud
from tests.panels.segmentation.test_segmentation_panel import finish, panel  # noqa: F401  (the shared fixture)

pytestmark = pytest.mark.gl


def _scan(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    floor = np.column_stack([rng.uniform(0, 5, 4000), rng.uniform(0, 4, 4000), np.zeros(4000)])
    wall = np.column_stack([rng.uniform(0, 5, 1500), np.zeros(1500), rng.uniform(0, 2.5, 1500)])
    room = np.concatenate([floor, wall])
    return write_cloud(tmp_path / "scan_mm.ply", PointCloud(np.column_stack([room[:, 0], room[:, 2], -room[:, 1]]) * 1000.0))


@pytest.mark.parametrize("state, needle", [
    ({"units": "cm"}, "unknown units 'cm' (choose auto, m, mm)"),
    ({"up": "x"}, "unknown up 'x' (choose auto, z, y)"),
])
def test_bad_units_or_up_in_a_session_change_nothing(qapp, panel, state: dict, needle: str) -> None:
    before = panel.state()
    panel.restore(state)
    assert panel.message.text == f"The session's segmentation settings are invalid: {needle}"
    assert panel.state() == before


def test_detected_then_set_units_and_up_axis(qapp, panel, tmp_path: Path) -> None:
    p = panel
    p.open_path(_scan(tmp_path))
    assert finish(qapp, p, 120) == ["finished"]
    assert p.status.text() == "scan_mm.ply: 5,500 points; millimetres, y up (detected)"
    assert "read as millimetres (detected: " in p.input.assumed.text() and np.ptp(p.scene.cloud.points[:, 2]) < 3.0
    p.input.set_values("m", "z")
    p.input.changed.emit()  # what a change of either box sends
    assert finish(qapp, p, 120)[-1] == "finished"
    assert p.status.text() == "scan_mm.ply: 5,500 points; metres, z up (set)" and np.ptp(p.scene.cloud.points[:, 2]) > 3000
    assert (p.state()["units"], p.state()["up"]) == ("m", "z")
