"""Units and up axis: millimetres and y up detected or set, converted to metres z up, said in one
line, and written back in the file's own coordinates; mesh PLYs sampled by area."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engines.core import EngineError
from engines.segmentation.pointio import InputFrame, PointCloud, read_cloud, write_cloud
from engines.segmentation.pointio import frame as frames
from engines.segmentation.pointio import mesh as meshes
from engines.segmentation.pointio.cloud import from_engine_axes


def _room(seed: int = 0) -> np.ndarray:
    """A 6 x 5 m room in metres, z up: floor, two 2.5 m walls, a table top; scanner noise."""
    rng = np.random.default_rng(seed)
    u = lambda n, lo, hi: rng.uniform(lo, hi, n)  # noqa: E731
    floor = np.column_stack([u(6000, 0, 6), u(6000, 0, 5), np.zeros(6000)])
    wall_a = np.column_stack([u(3000, 0, 6), np.zeros(3000), u(3000, 0, 2.5)])
    wall_b = np.column_stack([np.zeros(2500), u(2500, 0, 5), u(2500, 0, 2.5)])
    table = np.column_stack([u(600, 2, 3.5), u(600, 2, 2.8), np.full(600, 0.75)])
    pts = np.concatenate([floor, wall_a, wall_b, table])
    return (pts + rng.normal(0, 0.004, pts.shape)).astype(np.float32)


def _file(tmp_path: Path, points: np.ndarray, name: str = "scan.npz") -> Path:
    return write_cloud(tmp_path / name, PointCloud(points.astype(np.float64)))


@pytest.mark.parametrize("units, up", [("m", "z"), ("mm", "z"), ("m", "y"), ("mm", "y")])
def test_units_and_up_axis_are_detected_and_converted(tmp_path: Path, units: str, up: str) -> None:
    room = _room()
    stored = from_engine_axes(room.astype(np.float64), up) * (1000.0 if units == "mm" else 1.0)
    cloud = read_cloud(_file(tmp_path, stored), frame=InputFrame())
    assert (cloud.placement.scale, cloud.placement.up) == (1000.0 if units == "mm" else 1.0, up)
    assert np.abs(cloud.points - room).max() < 1e-3  # back in metres, z up
    note = cloud.placement.note
    assert note.startswith(f"read as {'millimetres' if units == 'mm' else 'metres'} (detected: ") and f", {up} up (detected: " in note
    assert ("converted to metres, z up" in note) == ((units, up) != ("m", "z")) and "\n" not in note


def test_results_are_written_back_in_the_files_units_and_axes(tmp_path: Path) -> None:
    stored = from_engine_axes(_room().astype(np.float64), "y") * 1000.0 + [250_000.0, 12.0, -4_000_000.0]
    cloud = read_cloud(_file(tmp_path, stored, "scan.ply"), frame=InputFrame())
    assert cloud.placement.scale == 1000.0 and cloud.placement.up == "y" and np.ptp(cloud.points[:, 2]) < 3.0
    labelled = PointCloud(cloud.points, instance=np.arange(len(cloud), dtype=np.int32), origin=cloud.origin, placement=cloud.placement)
    back = read_cloud(write_cloud(tmp_path / "labels.ply", labelled))
    assert np.abs(back.file_points() - stored).max() < 0.05  # float32 keeps 0.05 mm of a room in millimetres


def test_explicit_settings_are_obeyed_without_detecting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frames, "detect_up", lambda *a, **k: pytest.fail("the up axis was set"))
    monkeypatch.setattr(frames, "detect_units", lambda *a, **k: pytest.fail("the units were set"))
    room = _room()
    cloud = read_cloud(_file(tmp_path, room), frame=InputFrame(units="mm", up="y"))  # wrong, but the user said so
    assert np.abs(cloud.points - np.column_stack([room[:, 0], -room[:, 2], room[:, 1]]) / 1000.0).max() < 1e-6  # y up turned to z up
    assert cloud.placement.note == "read as millimetres (set), y up (set); converted to metres, z up"
    assert read_cloud(_file(tmp_path, room), frame=InputFrame("m", "z")).placement.note == "read as metres (set), z up (set)"


def test_large_flat_survey_in_metres_is_not_millimetres() -> None:
    rng = np.random.default_rng(1)
    survey = np.column_stack([rng.uniform(0, 500, 5000), rng.uniform(0, 400, 5000), rng.uniform(0, 4, 5000)])
    assert frames.detect_units(survey)[0] == "m"
    assert frames.detect_units(_room() * 1000)[0] == "mm" and frames.detect_units(_room())[0] == "m"


def test_stray_returns_do_not_make_metres_millimetres() -> None:
    room = _room()
    room[:20] = 900.0  # a few far-away reflections
    assert frames.detect_units(room)[0] == "m"


def test_bad_frame_values_are_refused() -> None:
    with pytest.raises(EngineError, match="units must be one of auto, m, mm"):
        InputFrame(units="cm")
    with pytest.raises(EngineError, match="up must be one of auto, z, y"):
        InputFrame(up="x")


def _mesh_file(path: Path, scale: float = 1.0, colours: bool = True) -> Path:
    import open3d as o3d

    mesh = o3d.geometry.TriangleMesh.create_box(4.0, 3.0, 2.5)  # 59 m² of surface
    mesh.vertices = o3d.utility.Vector3dVector(np.asarray(mesh.vertices) * scale)
    if colours:
        mesh.vertex_colors = o3d.utility.Vector3dVector(np.tile([1.0, 0.5, 0.0], (len(mesh.vertices), 1)))
    assert o3d.io.write_triangle_mesh(str(path), mesh, write_ascii=False)
    return path


def test_a_mesh_is_sampled_by_area_reproducibly(tmp_path: Path) -> None:
    path = _mesh_file(tmp_path / "room.ply")
    cloud = read_cloud(path, frame=InputFrame())
    area = 2 * (4 * 3 + 4 * 2.5 + 3 * 2.5)
    assert len(cloud) == round(area * meshes.POINTS_PER_M2) and cloud.sampled_from == 12
    p = cloud.points
    on_a_face = np.isclose(p, 0, atol=1e-5) | np.isclose(p, [4.0, 3.0, 2.5], atol=1e-5)
    assert on_a_face.any(axis=1).all() and (p >= -1e-5).all() and (p <= np.array([4, 3, 2.5]) + 1e-5).all()
    assert cloud.normals is not None and np.allclose(np.linalg.norm(cloud.normals, axis=1), 1.0, atol=1e-4)
    assert np.abs(cloud.colors.astype(int) - [255, 128, 0]).max() <= 1  # the vertex colour, interpolated over each face
    assert np.array_equal(read_cloud(path, frame=InputFrame()).points, p)  # seeded: the same points every time


def test_a_millimetre_mesh_gets_the_same_density(tmp_path: Path) -> None:
    metres = read_cloud(_mesh_file(tmp_path / "m.ply"), frame=InputFrame())
    mm = read_cloud(_mesh_file(tmp_path / "mm.ply", 1000.0, colours=False), frame=InputFrame())
    assert len(mm) == len(metres) and mm.placement.scale == 1000.0 and np.abs(mm.points).max() <= 4.0 + 1e-3


def test_a_truncated_mesh_is_an_engine_error(tmp_path: Path) -> None:
    data = _mesh_file(tmp_path / "room.ply").read_bytes()
    cut = tmp_path / "cut.ply"
    cut.write_bytes(data[: len(data) - 40])
    with pytest.raises(EngineError, match="cut.ply is corrupt or truncated"):
        read_cloud(cut)
