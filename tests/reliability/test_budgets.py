"""Budgets before allocation: a header promising more memory than the limit is one sentence naming
the limit, before NumPy or PIL allocate anything; thread counts are bounded."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from engines.core import EngineError
from engines.core.budget import array_limit, check_npy, check_npz, human_bytes


def _huge_header(shape=(10**6, 10**6), descr="<f8") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()  # the header alone: no data follows


@pytest.fixture
def huge_npy(tmp_path: Path) -> Path:
    path = tmp_path / "huge.npy"
    path.write_bytes(_huge_header(descr="|b1"))
    return path


@pytest.fixture
def huge_npz(tmp_path: Path) -> Path:
    path = tmp_path / "huge.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("points.npy", _huge_header(shape=(10**11, 3)))
    return path


def test_npy_header_over_the_limit(huge_npy: Path) -> None:
    with pytest.raises(EngineError, match=f"over the limit of {human_bytes(array_limit())}"):
        check_npy(huge_npy)


def test_npz_headers_over_the_limit(huge_npz: Path) -> None:
    with pytest.raises(EngineError, match="huge.npz would need 2.2 TiB of memory, over the limit"):
        check_npz(huge_npz)


def test_small_arrays_pass(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.zeros((4, 3)))
    np.savez(tmp_path / "b.npz", points=np.zeros((4, 3)))
    check_npy(tmp_path / "a.npy")
    check_npz(tmp_path / "b.npz")
    with pytest.raises(EngineError, match="over the limit of 10 bytes"):
        check_npz(tmp_path / "b.npz", limit=10)


def test_readers_check_before_loading(huge_npy: Path, huge_npz: Path) -> None:
    from engines.attention.export import load_dense
    from engines.planner.train import load_dataset
    from engines.segmentation.pointio import read_cloud

    for read, path in ((load_dense, huge_npy), (lambda p: load_dataset([p]), huge_npz)):
        with pytest.raises(EngineError, match="over the limit"):
            read(path)
    with pytest.raises(EngineError, match="too large .*the limit is"):  # the point-cloud reader's own budget, by points
        read_cloud(huge_npz)


def test_long_thin_picture_is_refused_before_padding(tmp_path: Path) -> None:
    from PIL import Image

    from engines.sketcher.image_input import load_target

    path = tmp_path / "strip.png"
    Image.new("L", (20000, 2), 255).save(path)
    with pytest.raises(EngineError, match="padded to a square it would be 20000x20000 pixels, over the limit of 64 megapixels"):
        load_target(path)


def test_absurd_thread_counts(monkeypatch, capsys) -> None:
    from engines.core.device import check_threads, max_threads
    from workbench.cli.main import main

    monkeypatch.setenv("WORKBENCH_THREADS", str(10**9))
    assert main(["info"]) == 2
    assert capsys.readouterr().err == f"error: WORKBENCH_THREADS must be a whole number from 1 to {max_threads()} (got 1000000000)\n"
    with pytest.raises(EngineError, match="--threads"):
        check_threads(0, "--threads")
    assert check_threads(2) == 2
