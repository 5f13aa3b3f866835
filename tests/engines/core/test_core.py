"""The engine protocol: cancellation, throttled progress, atomic writes, JSON round trips."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from engines.core import (
    Cancelled,
    CancelToken,
    EngineError,
    atomic_path,
    atomic_write,
    from_dict,
    scaled,
    throttled,
    to_jsonable,
    write_json,
)


def test_cancel_token_raises_only_after_cancel() -> None:
    token = CancelToken()
    token.raise_if_cancelled()
    token.cancel()
    assert token.cancelled()
    with pytest.raises(Cancelled):
        token.raise_if_cancelled()


def test_throttled_progress_keeps_the_ends_and_drops_the_flood() -> None:
    calls: list[float] = []
    progress = throttled(lambda f, t: calls.append(f), min_interval=10.0)
    for i in range(1000):
        progress(i / 1000, "step")
    progress(1.0, "done")
    assert calls[0] == 0.0 and calls[-1] == 1.0 and len(calls) == 2


def test_scaled_progress_maps_into_a_sub_range() -> None:
    calls: list[float] = []
    scaled(lambda f, t: calls.append(f), 0.5, 0.75)(0.5, "")
    assert calls == [0.625]


def test_atomic_write_replaces_only_on_success(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as fh:
            fh.write("half")
            raise RuntimeError("crash in the middle")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"], "no temporary file may be left behind"
    with atomic_write(target) as fh:
        fh.write("new")
    assert target.read_text() == "new"


def test_atomic_path_keeps_the_suffix_for_format_sniffing_libraries(tmp_path: Path) -> None:
    with atomic_path(tmp_path / "cloud.ply") as tmp:
        assert tmp.suffix == ".ply" and tmp.parent == tmp_path
        tmp.write_bytes(b"ply\n")
    assert (tmp_path / "cloud.ply").read_bytes() == b"ply\n"


def test_atomic_path_refuses_an_empty_result(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="nothing was written"):
        with atomic_path(tmp_path / "image.png"):
            pass
    assert not (tmp_path / "image.png").exists()


def test_writing_over_a_folder_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="folder"):
        write_json(tmp_path, {"a": 1})


def test_a_folder_that_takes_no_files_is_a_user_error_naming_the_target() -> None:
    """/proc exists but no file can be created in it (as root too): the message names the file asked for."""
    with pytest.raises(EngineError, match=r"cannot write /proc/result.json"):
        write_json("/proc/result.json", {"a": 1})


@dataclass(frozen=True)
class Inner:
    x: float = 0.0


@dataclass(frozen=True)
class Params:
    n: int = 4
    name: str = "causal"
    sizes: tuple[int, ...] = (1, 2)
    inner: Inner = field(default_factory=Inner)
    seed: int | None = None


def test_dataclass_json_round_trip() -> None:
    p = Params(n=8, sizes=(3, 4, 5), inner=Inner(2.5), seed=3)
    data = json.loads(json.dumps(to_jsonable(p)))
    assert from_dict(Params, data) == p


def test_to_jsonable_handles_numpy_and_nan() -> None:
    data = to_jsonable({"a": np.arange(3), "b": np.float32(1.5), "c": float("nan"), "d": Path("x")})
    assert data == {"a": [0, 1, 2], "b": 1.5, "c": None, "d": "x"}


def test_from_dict_names_unknown_and_mistyped_fields() -> None:
    with pytest.raises(EngineError, match="unknown Params field"):
        from_dict(Params, {"n": 1, "nn": 2})
    with pytest.raises(EngineError, match="'n' must be int"):
        from_dict(Params, {"n": "eight"})


def test_device_is_cpu_without_a_gpu_preference() -> None:
    from engines.core import device, set_device_preference

    set_device_preference("cpu")
    try:
        assert device().type == "cpu"
    finally:
        set_device_preference(os.environ.get("WORKBENCH_DEVICE", "auto"))


def test_atomic_files_get_the_usual_permissions(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    try:
        path = write_json(tmp_path / "out.json", {"a": 1})
    finally:
        os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o644


def test_import_once_lets_one_thread_import_at_a_time(monkeypatch) -> None:
    """The second thread waits for the first import to finish instead of seeing it half done."""
    import threading
    import time

    from engines.core import imports

    inside, most = [0], [0]
    guard = threading.Lock()

    def slow_import(name: str):
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.05)
        with guard:
            inside[0] -= 1
        return name

    monkeypatch.setattr(imports.importlib, "import_module", slow_import)
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(imports.import_once("pkg"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["pkg"] * 4
    assert most[0] == 1


def test_open3d_comes_from_the_locked_import() -> None:
    from engines.core.imports import open3d

    o3d = open3d()
    assert o3d.__name__ == "open3d" and hasattr(o3d, "geometry")
