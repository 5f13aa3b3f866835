"""Segmentation rooms and benchmark on the project's executor (issue 58): the same files and numbers
for any worker count, and a room that fails is named and left out while the rest is measured."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from engines.core import EngineError
from engines.core.executor import ExecutorSpec
from engines.segmentation.bench import run_bench, write_scenes
from engines.segmentation.api import SegmentParams
from engines.segmentation.pointio import PointCloud, read_cloud, write_cloud
from tests.conftest import PROCESSES

TWO = ExecutorSpec("local", workers=2)
SMALL = SegmentParams()


@PROCESSES
def test_rooms_written_by_two_workers_are_the_rooms_one_writes(tmp_path: Path) -> None:
    one = write_scenes(tmp_path / "one", 3, 21, generator="eval", points=(2500, 3500))
    two = write_scenes(tmp_path / "two", 3, 21, generator="eval", points=(2500, 3500), executor=TWO)
    assert [p.name for p in one] == [p.name for p in two] == ["scene_000.ply", "scene_001.ply", "scene_002.ply"]
    for a, b in zip(one, two):
        ca, cb = read_cloud(a), read_cloud(b)
        assert len(ca) > 2000 and np.array_equal(ca.points, cb.points) and np.array_equal(ca.instance, cb.instance)
        assert a.with_suffix(".json").read_text() == b.with_suffix(".json").read_text()


@PROCESSES
def test_the_benchmark_gives_the_same_numbers_on_two_workers_and_names_a_room_that_fails(tmp_path: Path) -> None:
    rooms = tmp_path / "rooms"
    write_scenes(rooms, 2, 3, points=(4000, 4000))
    one = run_bench(rooms, SMALL, methods=("dbscan",))
    # a third room without ground truth: measured by no method, named in the record and the table
    bad = read_cloud(rooms / "scene_001.ply")
    write_cloud(rooms / "scene_002.ply", PointCloud(bad.points, bad.colors))
    two = run_bench(rooms, SMALL, methods=("dbscan",), executor=TWO)
    keys = ("ap", "ap50", "ap25", "confirmed_ap50", "gt_objects", "predictions", "touching_recall50")
    assert one["scenes"] == two["scenes"] == 2 and one["failed"] == []
    assert [two["methods"]["dbscan"][k] for k in keys] == [one["methods"]["dbscan"][k] for k in keys]
    assert [r["scene"] for r in two["per_scene"]] == ["scene_000.ply", "scene_001.ply"]
    assert two["failed"] == [{"scene": "scene_002.ply", "error": "scene_002.ply has no ground-truth 'instance' field"}]
    assert "1 room(s) failed" in two["table"] and "scene_002.ply: scene_002.ply has no ground-truth" in two["table"]


def test_a_benchmark_where_every_room_fails_is_refused_with_the_first_reason(tmp_path: Path) -> None:
    (room,) = write_scenes(tmp_path / "src", 1, 3, points=(3000, 3000))
    cloud = read_cloud(room)
    (tmp_path / "bare").mkdir()
    write_cloud(tmp_path / "bare" / "a.ply", PointCloud(cloud.points, cloud.colors))
    shutil.copy(room.with_suffix(".json"), tmp_path / "bare" / "a.json")
    with pytest.raises(EngineError, match="no room of .* could be measured; the first: a.ply: a.ply has no ground-truth"):
        run_bench(tmp_path / "bare", SMALL, methods=("dbscan",))
