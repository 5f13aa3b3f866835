"""Real files: PLY with colours and normals, ASCII and binary, big-endian, PCD binary, XYZ with colours,
NPZ; budgets refused from the header; truncation, cancel and progress during a chunked read."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engines.core import CancelToken, Cancelled, EngineError
from engines.segmentation.pointio import PointCloud, read_cloud, write_cloud
from engines.segmentation.pointio import fields, text

N = 400


@pytest.fixture
def cloud() -> PointCloud:
    rng = np.random.default_rng(3)
    normals = rng.normal(size=(N, 3)).astype(np.float32)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    return PointCloud(rng.uniform(-3, 3, (N, 3)).astype(np.float32), rng.integers(0, 256, (N, 3)).astype(np.uint8),
                      rng.integers(0, 5, N).astype(np.int32), normals=normals)


def _ply(path: Path, fmt: str, cloud: PointCloud, extra_element: bool = False) -> Path:
    """A PLY written by hand (not by Open3D): x y z, normals, colours, an instance label; optionally a
    fixed-size element before the vertices, as some scanners write."""
    order = {"binary_little_endian": "<", "binary_big_endian": ">", "ascii": "<"}[fmt]
    dtype = np.dtype([(k, order + "f4") for k in ("x", "y", "z", "nx", "ny", "nz")] + [(k, "u1") for k in ("red", "green", "blue")]
                     + [("instance", order + "i4")])
    rows = np.zeros(len(cloud), dtype)
    for i, k in enumerate("xyz"):
        rows[k] = cloud.points[:, i]
    for i, k in enumerate(("nx", "ny", "nz")):
        rows[k] = cloud.normals[:, i]
    for i, k in enumerate(("red", "green", "blue")):
        rows[k] = cloud.colors[:, i]
    rows["instance"] = cloud.instance
    head = f"ply\nformat {fmt} 1.0\ncomment made by a test\n"
    if extra_element:
        head += "element camera 2\nproperty float px\nproperty float py\n"
    head += f"element vertex {len(cloud)}\n" + "".join(
        f"property {'float' if dtype[k].kind == 'f' else 'uchar' if dtype[k].itemsize == 1 else 'int'} {k}\n" for k in dtype.names)
    head += "end_header\n"
    if fmt == "ascii":
        body = "1 2\n3 4\n" * extra_element + "\n".join(" ".join(repr(v.item()) for v in row) for row in rows) + "\n"
        path.write_text(head + body)
    else:
        path.write_bytes(head.encode() + np.zeros(2, np.dtype([("a", order + "f4"), ("b", order + "f4")])).tobytes() * extra_element
                         + rows.tobytes())
    return path


@pytest.mark.parametrize("fmt", ["ascii", "binary_little_endian", "binary_big_endian"])
@pytest.mark.parametrize("extra_element", [False, True])
def test_ply_points_colours_normals_and_labels(tmp_path: Path, cloud: PointCloud, fmt: str, extra_element: bool) -> None:
    back = read_cloud(_ply(tmp_path / "c.ply", fmt, cloud, extra_element))
    assert np.allclose(back.points, cloud.points, atol=1e-5) and np.array_equal(back.colors, cloud.colors)
    assert np.allclose(back.normals, cloud.normals, atol=1e-5) and np.array_equal(back.instance, cloud.instance)


@pytest.mark.parametrize("suffix", [".ply", ".pcd", ".npz"])
def test_normals_round_trip(tmp_path: Path, cloud: PointCloud, suffix: str) -> None:
    back = read_cloud(write_cloud(tmp_path / f"n{suffix}", cloud))
    assert np.allclose(back.normals, cloud.normals, atol=1e-5) and np.array_equal(back.colors, cloud.colors)


def test_binary_pcd_is_read_by_numpy_with_its_fields(tmp_path: Path, cloud: PointCloud) -> None:
    path = write_cloud(tmp_path / "c.pcd", cloud)
    assert b"DATA binary" in path.read_bytes()[:600]
    seen: list[float] = []
    back = read_cloud(path, progress=lambda f, t: seen.append(f))
    assert np.allclose(back.points, cloud.points, atol=1e-6) and np.array_equal(back.instance, cloud.instance)
    assert seen and seen[-1] == 1.0


@pytest.mark.parametrize("rgb, expected", [("10 20 30", [10, 20, 30]), ("0.5 1.0 0.0", [127, 255, 0]), ("7 10 20 30", [10, 20, 30])])
def test_xyz_with_colours(tmp_path: Path, rgb: str, expected: list[int]) -> None:
    path = tmp_path / "c.xyz"
    path.write_text(f"1 2 3 {rgb}\n4 5 6 {rgb}\n")
    back = read_cloud(path)
    assert back.points.tolist() == [[1, 2, 3], [4, 5, 6]] and back.colors.tolist() == [expected, expected]


def test_xyz_round_trip_keeps_colours(tmp_path: Path, cloud: PointCloud) -> None:
    back = read_cloud(write_cloud(tmp_path / "c.xyz", cloud))
    assert np.allclose(back.points, cloud.points, atol=1e-5) and np.array_equal(back.colors, cloud.colors)


@pytest.mark.parametrize("name, header", [
    ("huge.ply", "ply\nformat binary_little_endian 1.0\nelement vertex 1000000000000\nproperty float x\nproperty float y\nproperty float z\nend_header\n"),
    ("huge.pcd", "VERSION .7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1000000000000\nHEIGHT 1\nPOINTS 1000000000000\nDATA binary\n"),
    ("huge.pts", "1000000000000\n1 2 3\n"),
    ("faces.ply", "ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
                  "element face 1000000000000\nproperty list uchar int vertex_indices\nend_header\n"),
])
def test_a_header_promising_a_trillion_points_is_refused_with_the_limit(tmp_path: Path, name: str, header: str) -> None:
    path = tmp_path / name
    path.write_bytes(header.encode() + (b" " if name.endswith(".pts") else b"\0") * 64)
    with pytest.raises(EngineError, match=r"too large \(1,000,000,000,000 (points|faces); the limit is 20,000,000\)"):
        read_cloud(path)


def test_npz_promising_too_many_points_is_refused_before_loading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.npz"
    np.savez(path, points=np.zeros((5000, 3), np.float32))
    loaded: list[str] = []
    real = np.lib.npyio.NpzFile.__getitem__
    monkeypatch.setattr(np.lib.npyio.NpzFile, "__getitem__", lambda self, key: loaded.append(key) or real(self, key))
    with pytest.raises(EngineError, match="too large .5,000 points; the limit is 1,000"):
        read_cloud(path, max_points=1000)
    assert loaded == []


@pytest.mark.parametrize("fmt", ["binary_little_endian", "binary_big_endian"])
def test_truncated_binary_ply_is_an_engine_error(tmp_path: Path, cloud: PointCloud, fmt: str) -> None:
    data = _ply(tmp_path / "full.ply", fmt, cloud).read_bytes()
    path = tmp_path / "cut.ply"
    for cut in (len(data) - 1, len(data) // 2):
        path.write_bytes(data[:cut])
        with pytest.raises(EngineError, match="cut.ply is corrupt or truncated"):
            read_cloud(path)


def _big_ply(path: Path, n: int) -> Path:
    pts = np.random.default_rng(0).uniform(0, 5, (n, 3)).astype("<f4")
    head = f"ply\nformat binary_little_endian 1.0\nelement vertex {n}\nproperty float x\nproperty float y\nproperty float z\nend_header\n"
    path.write_bytes(head.encode() + pts.tobytes())
    return path


@pytest.mark.parametrize("suffix", [".ply", ".xyz"])
def test_cancel_during_a_large_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """Chunks made small so a small file is 'large': the read stops at the first chunk after cancel."""
    monkeypatch.setattr(fields, "CHUNK_BYTES", 12 * 1000)
    monkeypatch.setattr(text, "CHUNK_ROWS", 1000)
    path = _big_ply(tmp_path / "big.ply", 20_000)
    if suffix == ".xyz":
        path = write_cloud(tmp_path / "big.xyz", read_cloud(path))
    token, seen = CancelToken(), []

    def progress(fraction: float, message: str) -> None:
        seen.append(fraction)
        if len(seen) == 3:
            token.cancel()

    with pytest.raises(Cancelled):
        read_cloud(path, progress=progress, cancel=token)
    assert 3 <= len(seen) <= 4 and seen[-1] < 0.5  # stopped within a chunk of the cancel, far from the end
    seen.clear()
    full = read_cloud(path, progress=lambda f, m: seen.append(f))
    assert len(full) == 20_000 and len(seen) >= 20 and seen == sorted(seen) and seen[-1] == 1.0


def test_open3d_stderr_is_caught_and_named_in_one_sentence(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    """A compressed PCD that is garbage: Open3D prints its complaint (to stdout); the user sees one sentence."""
    path = tmp_path / "bad.pcd"
    path.write_bytes(b"VERSION .7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 10\nHEIGHT 1\nPOINTS 10\nDATA binary_compressed\n"
                     + bytes(range(40)))
    with pytest.raises(EngineError, match=r"^bad.pcd could not be read") as info:
        read_cloud(path)
    out, err = capfd.readouterr()
    assert "Open3D" not in out + err and "\x1b" not in str(info.value) and "\n" not in str(info.value)
