"""Writing results: labelled PLY, the JSON summary, and the ScanNet benchmark layout."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from engines.core import EngineError, write_json, write_text

from .api import SegmentationResult
from .pointio import PointCloud, write_cloud


def labelled_cloud(cloud: PointCloud, result: SegmentationResult) -> PointCloud:
    """The input points and colours with per-point int32 `instance` and float32 `score`, and where
    the result has nested parts, int32 `part` and float32 `part_score` (`nested.py`)."""
    if len(cloud.points) != len(result.instance):
        raise EngineError("the result does not belong to this point cloud (different point counts)")
    nested = result.part is not None and bool((result.part > 0).any())
    return replace(cloud, instance=result.instance.astype(np.int32), score=result.score.astype(np.float32),
                   part=result.part.astype(np.int32) if nested else None, part_score=result.part_score.astype(np.float32) if nested else None)


def export_ply(path: Path, cloud: PointCloud, result: SegmentationResult) -> Path:
    if Path(path).suffix.lower() not in (".ply", ".pcd", ".npz"):
        raise EngineError(f"{Path(path).name}: labelled results need .ply (or .pcd / .npz) to keep instance and score")
    return write_cloud(path, labelled_cloud(cloud, result))


def export_json(path: Path, result: SegmentationResult, extra: dict | None = None) -> Path:
    return write_json(path, {**result.summary(), **(extra or {})})


def scannet_scene_name(path: str | Path) -> str:
    """The ScanNet scene name for a cloud file: its stem in ASCII letters, digits, '_', '-' and '.'.

    The panel and the CLI both name their ScanNet files with this, so the same input gives the same
    files; accents are dropped ('scène' -> 'scene') and other characters become '_'.
    """
    import unicodedata

    stem = unicodedata.normalize("NFKD", Path(path).stem).encode("ascii", "ignore").decode()
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", stem).lstrip(".")
    return name if name.strip("_.-") else "scene"


def check_scannet_folder(folder: str | Path) -> Path:
    """Refuse a ScanNet target that cannot take the layout (it, or its pred_mask, is a file) before any work."""
    folder = Path(folder)
    for path in (folder, folder / "pred_mask"):
        if path.exists() and not path.is_dir():
            raise EngineError(f"cannot write the ScanNet layout into {folder}: {path} is a file, not a folder")
    return folder


def export_scannet(folder: Path, result: SegmentationResult, scene: str = "scene", label_id: int = 1) -> Path:
    """`<scene>.txt` listing `pred_mask/<scene>_NNN.txt label_id confidence`, one 0/1 file per mask.

    Class-agnostic: every mask gets the same ``label_id``, so the ScanNet script scores objects
    regardless of their class when its class list is reduced to that one id.
    """
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", scene):
        raise EngineError(f"scene name {scene!r} may only hold letters, digits, '_', '-' and '.'")
    folder = check_scannet_folder(folder)
    (folder / "pred_mask").mkdir(parents=True, exist_ok=True)
    lines = []
    for seg in result.segments:
        name = f"pred_mask/{scene}_{seg.id:03d}.txt"
        mask = ((result.part if seg.parent else result.instance) == seg.id).astype(np.uint8)
        write_text(folder / name, "\n".join(map(str, mask.tolist())) + "\n")
        lines.append(f"{name} {label_id} {seg.score:.6f}")
    return write_text(folder / f"{scene}.txt", "\n".join(lines) + ("\n" if lines else ""))
