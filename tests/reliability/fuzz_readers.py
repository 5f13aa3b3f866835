"""Every parser and reader a user's file reaches, by name, with a valid sample of what it reads.

The fuzz tests (test_fuzz.py) and the hostile corpus (test_hostile_corpus.py) share this table:
a reader must give a result or an EngineError for any bytes, never another exception.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Reader:
    name: str
    suffix: str  # the file name the reader is given ends so
    read: Callable[[Path], Any]
    sample: Callable[[], bytes]  # a small valid file, the seed of mutations


def _cloud_sample(suffix: str) -> Callable[[], bytes]:
    def make() -> bytes:
        import tempfile

        from engines.segmentation.pointio import PointCloud, write_cloud

        rng = np.random.default_rng(0)
        cloud = PointCloud(
            rng.uniform(-1, 1, (12, 3)).astype(np.float32),
            rng.integers(0, 255, (12, 3)).astype(np.uint8),
            rng.integers(0, 3, 12).astype(np.int32),
            rng.uniform(0, 1, 12).astype(np.float32),
        )
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"s{suffix}"
            if suffix == ".npz":
                np.savez(path, points=cloud.points, colors=cloud.colors, instance=cloud.instance)
            else:
                write_cloud(path, cloud)
            return path.read_bytes()

    return make


def _read_cloud(path: Path) -> Any:
    from engines.segmentation.pointio import read_cloud

    return read_cloud(path)


def _scenario(path: Path) -> Any:
    from engines.planner.scenario import load_scenario_json

    return load_scenario_json(path)


def _commonroad(path: Path) -> Any:
    from engines.planner.commonroad_import import load_commonroad

    return load_commonroad(path)


def _program(path: Path) -> Any:
    from engines.sketcher.language import parse

    return parse(path.read_bytes().decode("utf-8", "replace"))


def _vectors(path: Path) -> Any:
    from engines.attention.export import load_vectors

    return load_vectors(path)


def _vectors_sample_json() -> bytes:
    return json.dumps({"startend_row_indices": [[[[3], [4], [4], [4]]]], "causal": True, "n_q": 4}).encode()


def _vectors_sample_npy() -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.array([[[[3], [4], [4], [4]]]], dtype=np.int32))
    return buf.getvalue()


def _dense(path: Path) -> Any:
    from engines.attention.export import load_dense

    return load_dense(path)


def _dense_sample() -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.tril(np.ones((6, 6), bool)))
    return buf.getvalue()


def _session(path: Path) -> Any:
    from workbench.session import load_session

    return load_session(path)


def _session_sample() -> bytes:
    from workbench.session import FORMAT, FORMAT_VERSION

    panels = {"segmentation": {"file": "scene.ply", "anchors": 40}, "planner": {"scenario": "s.json", "seed": 1}}
    return json.dumps({"format": FORMAT, "version": FORMAT_VERSION, "panels": panels}).encode()


def _image(path: Path) -> Any:
    from engines.sketcher.image_input import load_target

    return load_target(path)


def _image_sample() -> bytes:
    from PIL import Image, ImageDraw

    im = Image.new("L", (24, 16), 255)
    ImageDraw.Draw(im).ellipse((4, 2, 14, 12), fill=0)
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def _checkpoint(path: Path) -> Any:
    from engines.core.checkpoint import read_checkpoint

    return read_checkpoint(path, "checkpoint", keys=("config", "model"))


def _checkpoint_sample(fmt: str = "x") -> Callable[[], bytes]:
    def make() -> bytes:
        import torch

        buf = io.BytesIO()
        torch.save({"format": fmt, "config": {"width": 4}, "model": {"w": torch.arange(6.0).reshape(2, 3)}, "history": [1, 2.5, "a"]}, buf)
        return buf.getvalue()

    return make


def _planner_checkpoint(path: Path) -> Any:
    from engines.planner.planners.diffusion_planner import load_model

    return load_model(path)


def _sketcher_checkpoint(path: Path) -> Any:
    from engines.sketcher.train import load_checkpoint

    return load_checkpoint(path)


def _topomap_run(path: Path) -> Any:
    from engines.topomap.runfile import load_run

    return load_run(path)


def _episode(path: Path) -> Any:
    from engines.planner.episode import load_episode

    return load_episode(path)


def _episode_sample() -> bytes:
    return json.dumps({"format": "workbench-planner-episode", "scenario": "x", "frames": [{"t": 0.0, "ego": [0, 0, 0, 1]}]}).encode()


READERS: tuple[Reader, ...] = (
    *(Reader(f"point cloud {s}", s, _read_cloud, _cloud_sample(s)) for s in (".ply", ".pcd", ".xyz", ".pts", ".npz")),
    Reader("planner scenario JSON", ".json", _scenario, lambda: (ROOT / "resources/planner/example_scenario.json").read_bytes()),
    Reader("CommonRoad XML", ".xml", _commonroad, lambda: (ROOT / "tests/data/commonroad/goal_lanelet.xml").read_bytes()),
    Reader("planner episode JSON", ".json", _episode, _episode_sample),
    Reader("sketcher program text", ".txt", _program, lambda: b"(- (+ (Circle 6 8 8) (Quad 8 8 2 2 H)) (Circle 2 4 4))"),
    Reader("attention mask vectors .json", ".json", _vectors, _vectors_sample_json),
    Reader("attention mask vectors .npy", ".npy", _vectors, _vectors_sample_npy),
    Reader("attention dense mask .npy", ".npy", _dense, _dense_sample),
    Reader("session file", ".wbsession.json", _session, _session_sample),
    Reader("image (sketcher target)", ".png", _image, _image_sample),
    Reader("checkpoint (safe loader)", ".pt", _checkpoint, _checkpoint_sample()),
    Reader("planner checkpoint", ".pt", _planner_checkpoint, _checkpoint_sample("workbench-planner-checkpoint")),
    Reader("sketcher checkpoint", ".pt", _sketcher_checkpoint, _checkpoint_sample("sketcher-edit-model/1")),
    Reader("topomap run file", ".topomap.pt", _topomap_run, lambda: (ROOT / "resources/topomap/cbsom.topomap.pt").read_bytes()),
)
