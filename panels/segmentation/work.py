"""What the panel runs in its background jobs: each function calls the engine and returns data to draw.

Nothing here runs on the UI thread; torch and Open3D are imported inside the engine calls.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Loaded:
    scene: Any  # engines.segmentation.viewer.SceneView


@dataclass
class Segmented:
    scene: Any
    view: Any  # engines.segmentation.viewer.ResultView


def load(path: Path, job, units: str = "auto", up: str = "auto") -> Loaded:
    from engines.segmentation.pointio import InputFrame
    from engines.segmentation.viewer import load_view

    return Loaded(load_view(path, progress=job.progress, cancel=job.cancel, frame=InputFrame(units, up)))


def segment(scene, params, job, load_first: Path | None = None) -> Segmented:
    from engines.core import configure_threads, scaled
    from engines.segmentation.api import segment as run
    from engines.segmentation.viewer import load_view, result_view

    configure_threads()
    if load_first is not None:
        scene = load_view(load_first, progress=scaled(job.progress, 0.0, 0.1), cancel=job.cancel)
    result = run(scene.cloud, params, scaled(job.progress, 0.1, 0.97), job.cancel)
    job.progress(0.98, "colouring")
    return Segmented(scene, result_view(scene, result))


def recompute(scene, previous, params, job) -> Segmented:
    from engines.core import configure_threads
    from engines.segmentation.api import resegment
    from engines.segmentation.viewer import result_view

    configure_threads()
    result = resegment(previous, scene.cloud, params, job.progress, job.cancel)
    return Segmented(scene, result_view(scene, result))


def export(kind: str, path: Path, scene, result, job) -> str:
    from engines.segmentation import export as ex

    job.progress(0.1, f"writing {Path(path).name}")
    if kind == "ply":
        ex.export_ply(path, scene.cloud, result)
    elif kind == "json":
        ex.export_json(path, result, {"input": scene.path})
    elif kind == "scannet":
        # The CLI's scene name: the same cloud gives the same files from both.
        ex.export_scannet(path, result, ex.scannet_scene_name(scene.path))
    else:
        raise ValueError(kind)
    return str(path)
