"""Point-cloud files: every format round-trips; every bad file is one clear error; nothing is lost."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engines.core import EngineError
from engines.segmentation.pointio import SUFFIXES, PointCloud, read_cloud, write_cloud


@pytest.fixture
def cloud() -> PointCloud:
    rng = np.random.default_rng(0)
    return PointCloud(
        rng.uniform(-2, 2, (500, 3)).astype(np.float32),
        rng.integers(0, 256, (500, 3)).astype(np.uint8),
        rng.integers(0, 6, 500).astype(np.int32),
        rng.uniform(0, 1, 500).astype(np.float32),
    )


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_round_trip(tmp_path: Path, cloud: PointCloud, suffix: str) -> None:
    path = write_cloud(tmp_path / f"c{suffix}", cloud)
    back = read_cloud(path)
    assert np.allclose(back.points, cloud.points, atol=1e-5)
    if suffix in (".ply", ".pcd", ".npz"):
        assert np.array_equal(back.instance, cloud.instance)
        assert np.allclose(back.score, cloud.score)
    if suffix != ".xyz":
        assert np.array_equal(back.colors, cloud.colors)


def test_ply_header_names_instance_and_score(tmp_path: Path, cloud: PointCloud) -> None:
    header = (write_cloud(tmp_path / "c.ply", cloud)).read_bytes()[:400]
    assert b"property int instance" in header and b"property float score" in header
    assert b"property uchar red" in header


def test_nan_and_inf_points_are_dropped_and_counted(tmp_path: Path) -> None:
    pts = np.random.default_rng(1).uniform(0, 1, (100, 3)).astype(np.float32)
    pts[:7, 0] = np.nan
    pts[7:10, 2] = np.inf
    raw = tmp_path / "n.ply"  # Open3D refuses to write NaN, so write the PLY by hand
    header = "ply\nformat binary_little_endian 1.0\nelement vertex 100\nproperty float x\nproperty float y\nproperty float z\nend_header\n"
    raw.write_bytes(header.encode() + pts.astype("<f4").tobytes())
    text = tmp_path / "n.xyz"
    text.write_text("\n".join(" ".join(str(v) for v in row) for row in pts) + "\n")
    for path in (raw, text, write_cloud(tmp_path / "n.npz", PointCloud(pts))):
        back = read_cloud(path)
        assert len(back) == 90 and back.dropped == 10 and np.isfinite(back.points).all()


def test_all_nan_is_an_error(tmp_path: Path) -> None:
    pts = np.full((20, 3), np.nan, np.float32)
    path = write_cloud(tmp_path / "all.npz", PointCloud(pts))
    with pytest.raises(EngineError, match="no finite points"):
        read_cloud(path)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_empty_file(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"empty{suffix}"
    path.write_bytes(b"")
    with pytest.raises(EngineError, match="empty"):
        read_cloud(path)


def test_ply_with_zero_vertices(tmp_path: Path) -> None:
    path = tmp_path / "zero.ply"
    path.write_text("ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\nend_header\n")
    with pytest.raises(EngineError, match="no points"):
        read_cloud(path)


def test_truncated_binary_ply_is_corrupt(tmp_path: Path, cloud: PointCloud) -> None:
    data = write_cloud(tmp_path / "full.ply", cloud).read_bytes()
    path = tmp_path / "cut.ply"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(EngineError, match="corrupt or truncated"):
        read_cloud(path)


def test_ascii_ply_with_missing_rows_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "short.ply"
    path.write_text("ply\nformat ascii 1.0\nelement vertex 5\nproperty float x\nproperty float y\nproperty float z\nend_header\n0 0 0\n1 1 1\n")
    with pytest.raises(EngineError, match="corrupt"):
        read_cloud(path)


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("notes.ply", b"hello, this is text\n", "not a PLY"),
        ("image.pcd", b"\x89PNG\r\n\x1a\n" + bytes(200), "not a PCD"),
        ("words.xyz", b"the quick brown fox\njumps over\n", "no rows of x y z"),
        ("blob.pts", bytes(range(256)) * 4, "not a text point cloud"),
        ("archive.npz", b"PK\x03\x04 definitely not a zip", "not a NumPy"),
        ("mesh_without_xyz.ply", b"ply\nformat ascii 1.0\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n3 0 1 2\n", "no vertices"),
    ],
)
def test_files_that_are_not_point_clouds(tmp_path: Path, name: str, content: bytes, message: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(EngineError, match=message):
        read_cloud(path)


def test_npz_without_points(tmp_path: Path) -> None:
    path = tmp_path / "other.npz"
    np.savez(path, weights=np.zeros((3, 3)))
    with pytest.raises(EngineError, match="no 'points'"):
        read_cloud(path)


def test_unsupported_suffix_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "a.obj").write_text("v 0 0 0\n")
    with pytest.raises(EngineError, match="unsupported"):
        read_cloud(tmp_path / "a.obj")
    with pytest.raises(EngineError, match="no such file"):
        read_cloud(tmp_path / "missing.ply")


def test_huge_files_are_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.ply"
    path.write_text("ply\nformat binary_little_endian 1.0\nelement vertex 900000000\nproperty float x\nproperty float y\nproperty float z\nend_header\n")
    with pytest.raises(EngineError, match="too large"):
        read_cloud(path)
    sparse = tmp_path / "huge.xyz"
    with open(sparse, "wb") as fh:
        fh.truncate(3 * 1024**3)  # a sparse 3 GiB file: no disk used
    with pytest.raises(EngineError, match="too large"):
        read_cloud(sparse)


def test_failed_write_keeps_the_old_file(tmp_path: Path, cloud: PointCloud, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_cloud(tmp_path / "keep.ply", cloud)
    before = path.read_bytes()
    import open3d as o3d

    monkeypatch.setattr(o3d.t.io, "write_point_cloud", lambda *a, **k: False)
    with pytest.raises(EngineError, match="could not write"):
        write_cloud(path, PointCloud(cloud.points[:10]))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.ply"]  # no temporary left behind


def test_mesh_ply_vertices_are_points(tmp_path: Path) -> None:
    import open3d as o3d

    mesh = o3d.geometry.TriangleMesh.create_box()
    o3d.io.write_triangle_mesh(str(tmp_path / "box.ply"), mesh)
    assert len(read_cloud(tmp_path / "box.ply")) == 8


def test_float_and_16_bit_colours_become_bytes(tmp_path: Path) -> None:
    pts = np.zeros((4, 3), np.float32)
    np.savez(tmp_path / "f.npz", points=pts, colors=np.full((4, 3), 0.5))
    assert read_cloud(tmp_path / "f.npz").colors[0, 0] == 127
    np.savez(tmp_path / "s.npz", points=pts, colors=np.full((4, 3), 65535, np.uint16))
    assert read_cloud(tmp_path / "s.npz").colors[0, 0] == 255
    np.savez(tmp_path / "bad.npz", points=pts, colors=np.zeros((3, 3)))
    with pytest.raises(EngineError, match="rows"):
        read_cloud(tmp_path / "bad.npz")
