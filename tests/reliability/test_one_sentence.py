"""One sentence, nothing else: what libraries print while a user's file is read (native stderr and
Python warnings) is captured, and the `error:` line names the file and the real problem."""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

from engines.core import EngineError
from engines.core.capture import captured


def test_native_stderr_and_warnings_are_captured(capfd) -> None:
    with captured("cloud.ply") as cap:
        os.write(2, b"[Open3D WARNING] Read PLY failed: unable to open file\n")
        warnings.warn("a library's warning", stacklevel=1)
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"  # fd 2 is back, and nothing leaked before it
    assert cap.text == "[Open3D WARNING] Read PLY failed: unable to open file\na library's warning"
    assert cap.last_line() == "a library's warning" and cap.path == Path("cloud.ply")


def test_overlapping_reads_in_threads_restore_stderr(capfd) -> None:
    barrier = threading.Barrier(4)

    def read(i: int) -> None:
        with captured(f"f{i}"):
            barrier.wait()
            os.write(2, f"noise {i}\n".encode())
            barrier.wait()

    threads = [threading.Thread(target=read, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    os.write(2, b"visible\n")
    assert capfd.readouterr().err == "visible\n"


def test_capture_survives_an_exception(capfd) -> None:
    with pytest.raises(EngineError):
        with captured("x"):
            os.write(2, b"native text\n")
            raise EngineError("x is broken")
    os.write(2, b"ok\n")
    assert capfd.readouterr().err == "ok\n"


def test_a_cloud_of_only_nan_points_says_so(tmp_path: Path) -> None:
    from engines.segmentation.pointio import read_cloud

    path = tmp_path / "nan.xyz"
    np.savetxt(path, np.full((20, 3), np.nan))
    with pytest.raises(EngineError, match=r"^nan.xyz has no finite points \(all 20 contain NaN or infinity\)$"):
        read_cloud(path)
    ply = tmp_path / "nan.npz"
    np.savez(ply, points=np.full((5, 3), np.inf), part_score=np.zeros(5))
    with pytest.raises(EngineError, match=r"^nan.npz has no finite points"):
        read_cloud(ply)


@pytest.mark.parametrize(
    "content",
    [
        b"ply\nformat binary_little_endian 1.0\nelement vertex 100\nproperty float x\nend_header\n\x00\x01",
        b"# .PCD v0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 5\nHEIGHT 1\nPOINTS 5\nDATA binary\n\x00",
    ],
)
def test_the_cli_prints_one_line_for_a_broken_cloud(content: bytes, tmp_path: Path, capfd) -> None:
    from workbench.cli.main import main

    path = tmp_path / ("bad.ply" if content.startswith(b"ply") else "bad.pcd")
    path.write_bytes(content)
    code = main(["segmentation", "run", str(path), "--out", str(tmp_path / "o.ply"), "--quiet"])
    err = capfd.readouterr().err
    assert code == 2 and err.startswith(f"error: {path.name}") and err.count("\n") == 1, err


def test_a_cloud_spread_over_1e30_is_one_sentence() -> None:
    from engines.segmentation.api import SegmentParams, segment
    from engines.segmentation.pointio import PointCloud

    points = np.random.default_rng(0).uniform(-1e30, 1e30, (300, 3)).astype(np.float32)
    for method in ("grabs", "dbscan"):
        with pytest.raises(EngineError, match=r"the cloud spans 2e\+30 m, over the 1e\+05 m a scene may span"):
            segment(PointCloud(points), SegmentParams(method=method))


def test_the_error_line_reaches_the_terminal_while_a_read_elsewhere_captures_stderr(capfd) -> None:
    """A panel's background read sends fd 2 to a scratch file; the command's error line, written
    meanwhile, still reaches the real stderr (in CI it was lost: exit code 2 and nothing said)."""
    import os

    from engines.core.capture import captured, say_to_terminal

    with captured() as capture:
        os.write(2, b"library noise\n")
        say_to_terminal("error: the one sentence\n")
    err = capfd.readouterr().err
    assert err == "error: the one sentence\n"
    assert capture.text == "library noise"
    say_to_terminal("error: and without a capture\n")
    assert capfd.readouterr().err == "error: and without a capture\n"
