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


def test_float_and_16_bit_colours_become_bytes(tmp_path: Path) -> None:
    pts = np.zeros((4, 3), np.float32)
    np.savez(tmp_path / "f.npz", points=pts, colors=np.full((4, 3), 0.5))
    assert read_cloud(tmp_path / "f.npz").colors[0, 0] == 127
    np.savez(tmp_path / "s.npz", points=pts, colors=np.full((4, 3), 65535, np.uint16))
    assert read_cloud(tmp_path / "s.npz").colors[0, 0] == 255
    np.savez(tmp_path / "bad.npz", points=pts, colors=np.zeros((3, 3)))
    with pytest.raises(EngineError, match="rows"):
        read_cloud(tmp_path / "bad.npz")


PLY_HEAD = "ply\nformat ascii 1.0\nelement vertex {n}\nproperty float x\nproperty float y\nproperty float z\nend_header\n"
PCD_HEAD = "VERSION .7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH {n}\nHEIGHT 1\nPOINTS {n}\nDATA ascii\n"


def _rows_text(n: int, bad_row: int | None = None, bad: str = "0.1 0.2 oops") -> str:
    rows = [f"{k / n:.4f} {k / n:.4f} 0.5" for k in range(n)]
    if bad_row is not None:
        rows[bad_row] = bad
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("name, text, line", [
    ("word.ply", PLY_HEAD.format(n=300) + _rows_text(300, 150), 158),
    ("short_row.ply", PLY_HEAD.format(n=300) + _rows_text(300, 150, "0.1 0.2"), 158),
    ("word.pcd", PCD_HEAD.format(n=300) + _rows_text(300, 150), 160),
    ("word.xyz", _rows_text(300, 150), 151),
    ("word.pts", "300\n" + _rows_text(300, 150), 152),
])
def test_text_rows_that_are_not_numbers_are_named(tmp_path: Path, name: str, text: str, line: int) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(EngineError, match=f"line {line} of {name} is not a row of"):
        read_cloud(path)


@pytest.mark.parametrize("name, text", [
    ("short.ply", PLY_HEAD.format(n=300) + _rows_text(150)),
    ("short.pcd", PCD_HEAD.format(n=5) + "1 2 3\n"),
    ("short.pts", "1000\n" + _rows_text(500)),
])
def test_text_clouds_with_fewer_rows_than_their_header_are_truncated(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(EngineError, match="truncated or corrupt: its header promises .* points but it holds"):
        read_cloud(path)


def test_ascii_ply_nan_and_inf_rows_are_dropped_not_garbage(tmp_path: Path) -> None:
    path = tmp_path / "inf.ply"
    path.write_text(PLY_HEAD.format(n=300) + _rows_text(300, 150, "inf 0.5 0.5"))
    cloud = read_cloud(path)
    assert len(cloud) == 299 and cloud.dropped == 1 and np.abs(cloud.points).max() <= 1.0
    path.write_text(PLY_HEAD.format(n=3) + "nan nan nan\nnan 1 1\ninf 0 0\n")
    with pytest.raises(EngineError, match="no finite points"):
        read_cloud(path)


def test_negative_header_counts_are_corrupt(tmp_path: Path) -> None:
    (tmp_path / "neg.ply").write_text(PLY_HEAD.format(n=-5))
    (tmp_path / "neg.pcd").write_text(PCD_HEAD.format(n=-5))
    (tmp_path / "neg.pts").write_text("-5\n1 2 3\n")
    for name in ("neg.ply", "neg.pcd", "neg.pts"):
        with pytest.raises(EngineError, match="corrupt") as info:
            read_cloud(tmp_path / name)
        assert "\x1b" not in str(info.value) and "Open3D" not in str(info.value)


@pytest.mark.parametrize("suffix", [".ply", ".pcd"])
def test_ascii_ply_and_pcd_keep_colours_instance_and_score(tmp_path: Path, cloud: PointCloud, suffix: str) -> None:
    import open3d as o3d

    pc = o3d.t.geometry.PointCloud()
    pc.point.positions = o3d.core.Tensor(cloud.points)
    pc.point.colors = o3d.core.Tensor(cloud.colors)
    pc.point["instance"] = o3d.core.Tensor(cloud.instance.reshape(-1, 1))
    pc.point["score"] = o3d.core.Tensor(cloud.score.reshape(-1, 1))
    path = tmp_path / f"a{suffix}"
    assert o3d.t.io.write_point_cloud(str(path), pc, write_ascii=True)
    back = read_cloud(path)
    assert np.allclose(back.points, cloud.points, atol=1e-5)
    assert np.array_equal(back.colors, cloud.colors) and np.array_equal(back.instance, cloud.instance)
    assert np.allclose(back.score, cloud.score, atol=1e-6)


def test_pcd_colours_packed_in_a_float(tmp_path: Path) -> None:
    packed = np.array([(10 << 16) | (20 << 8) | 30], np.uint32).view(np.float32)
    path = tmp_path / "f.pcd"
    path.write_text(PCD_HEAD.format(n=1).replace("x y z", "x y z rgb").replace("4 4 4", "4 4 4 4").replace("F F F", "F F F F")
                    .replace("COUNT 1 1 1", "COUNT 1 1 1 1") + f"1 2 3 {packed[0].item()!r}\n")
    assert read_cloud(path).colors.tolist() == [[10, 20, 30]]


def test_pts_needs_its_count_line_and_reads_colours(tmp_path: Path) -> None:
    path = tmp_path / "c.pts"
    path.write_text("2\n1 2 3 7 10 20 30\n4 5 6 7 40 50 60\n")
    back = read_cloud(path)
    assert back.points.tolist() == [[1, 2, 3], [4, 5, 6]] and back.colors.tolist() == [[10, 20, 30], [40, 50, 60]]
    path.write_text("1 2 3\n4 5 6\n")
    with pytest.raises(EngineError, match="first line must be the number of points"):
        read_cloud(path)


@pytest.mark.parametrize("arrays, message", [
    ({"colors": np.array(["x"] * 4)}, "'colors' must be an N x 3 numeric array"),
    ({"colors": np.zeros((4, 4), np.uint8)}, "'colors' must be an N x 3 numeric array"),
    ({"instance": np.int32(3)}, "'instance' must be a length-N numeric array"),
    ({"instance": np.zeros((4, 2), np.int32)}, "'instance' must be a length-N numeric array"),
    ({"instance": np.array([0, 1.5, 2, np.nan])}, "'instance' must hold whole numbers"),
    ({"score": np.zeros((4, 2))}, "'score' must be a length-N numeric array"),
])
def test_npz_extra_arrays_are_checked(tmp_path: Path, arrays: dict, message: str) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, points=np.zeros((4, 3), np.float32), **arrays)
    with pytest.raises(EngineError, match=message):
        read_cloud(path)


def test_npy_renamed_to_npz_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "plain.npz"
    with open(path, "wb") as fh:
        np.save(fh, np.zeros((4, 3), np.float32))
    with pytest.raises(EngineError, match=r"single NumPy array \(.npy\), not an .npz archive"):
        read_cloud(path)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_georeferenced_clouds_keep_their_millimetres(tmp_path: Path, cloud: PointCloud, suffix: str) -> None:
    """UTM coordinates (millions of metres) keep millimetres: float32 there would round to half a
    metre. The cloud is read relative to a whole-metre corner and written back at its place."""
    offset = np.array([450_123.0, 5_401_234.0, 212.0])
    world = cloud.points.astype(np.float64) + offset
    path = write_cloud(tmp_path / f"utm{suffix}", PointCloud(world, cloud.colors, cloud.instance, cloud.score))
    back = read_cloud(path)
    assert back.points.dtype == np.float32 and np.abs(back.points).max() < 10
    assert np.all(np.asarray(back.origin) == np.floor(world.min(axis=0)))
    assert np.abs(back.file_points() - world).max() < 1e-5
    again = read_cloud(write_cloud(tmp_path / f"again{suffix}", back.subset(np.arange(100))))
    assert np.abs(again.file_points() - world[:100]).max() < 1e-5


def test_clouds_near_zero_are_not_moved(tmp_path: Path, cloud: PointCloud) -> None:
    back = read_cloud(write_cloud(tmp_path / "c.ply", cloud))
    assert back.origin == (0.0, 0.0, 0.0) and back.file_points() is back.points
