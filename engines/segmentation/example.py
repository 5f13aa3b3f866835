"""The embedded example: a small procedural room shipped in resources/ (with its ground truth)."""
from __future__ import annotations

from engines.core import resource_path

from .pointio import PointCloud, read_cloud

EXAMPLE_SEED = 12  # a room where GrabS scores near its benchmark mean: chairs under a table, a shelf on a wall, stools
EXAMPLE_POINTS = 12000


def example_path():
    return resource_path("segmentation", "example_scene.ply")


def example_cloud() -> PointCloud:
    """The example room: points, colours and ground-truth `instance` (for the viewer's comparison)."""
    return read_cloud(example_path())


def write_example() -> None:
    """Regenerate the shipped example (maintainers only; the file is committed)."""
    from .bench import write_scenes
    from .scenes import SceneParams

    import shutil
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        (ply,) = write_scenes(Path(tmp), 1, EXAMPLE_SEED, SceneParams(n_points=EXAMPLE_POINTS))
        shutil.copy(ply, example_path())
        shutil.copy(ply.with_suffix(".json"), example_path().with_suffix(".json"))
