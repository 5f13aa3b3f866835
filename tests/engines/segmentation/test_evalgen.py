"""The evaluation generator: its rooms, its scanner, and the scene files `bench` reads."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engines.core import EngineError

from engines.segmentation.evalgen import EvalSceneParams, generate_eval_scene
from engines.segmentation.evalgen.mesh import box
from engines.segmentation.evalgen.scanner import Scanner, scan


@pytest.fixture(scope="module")
def rooms():
    return [generate_eval_scene(seed, EvalSceneParams(n_points=4000)) for seed in (11, 12, 13)]


def test_rooms_are_reproducible_and_labelled(rooms) -> None:
    again = generate_eval_scene(11, EvalSceneParams(n_points=4000))
    assert np.array_equal(again.points, rooms[0].points) and np.array_equal(again.instance, rooms[0].instance)
    for scene in rooms:
        assert len(scene.points) == 4000 and scene.points.dtype == np.float32 and scene.colors.dtype == np.uint8
        meta = scene.meta()
        assert meta["generator"] == "eval" and meta["scanner"] in ("tripod", "handheld") and meta["kind"] in ("bedroom", "office", "living room")
        ids = [o["instance"] for o in meta["objects"]]
        assert ids == list(range(1, len(ids) + 1)) and len(ids) >= 5
        assert set(np.unique(scene.instance)) <= {0, *ids} and (scene.instance == 0).any()  # 0: floor and walls
        assert sum(o["points"] for o in meta["objects"]) == int((scene.instance > 0).sum())
        assert all(a in ids and b in ids and a < b for a, b in meta["touching"])
        width, depth = scene.room
        assert scene.points[:, 0].min() > -0.2 and scene.points[:, 0].max() < width + 0.2 and scene.points[:, 2].min() > -0.1
    categories = {o["category"] for scene in rooms for o in scene.meta()["objects"]}
    assert categories - {"chair", "table", "stool", "sofa", "cabinet", "lamp", "bed", "shelf", "bench", "vase"}, "families training never draws"


def test_point_counts_span_sparse_to_dense_scans() -> None:
    sparse, dense = generate_eval_scene(21, EvalSceneParams(n_points=5000)), generate_eval_scene(21, EvalSceneParams(n_points=60000))
    assert (len(sparse.points), len(dense.points)) == (5000, 60000)
    assert [o["instance"] for o in sparse.meta()["objects"]] == [o["instance"] for o in dense.meta()["objects"]]  # the same room
    with pytest.raises(EngineError, match="n_points"):
        EvalSceneParams(n_points=10)


def _one_station(meshes, origin=(0.0, 0.0, 1.5), n=3000):
    scanner = Scanner(np.array([origin]), "tripod", (0.0, 0.0), 0.0, 20.0)
    return scan(meshes, scanner, n, np.random.default_rng(0))


def test_the_scanner_sees_no_hidden_faces_and_no_undersides() -> None:
    floor = box((-6, -6, -0.05), (6, 6, 0.0), (100, 100, 100))
    near = box((1.0, -0.3, 0.0), (1.4, 0.3, 1.4), (200, 0, 0))
    far = box((2.5, -0.2, 0.0), (2.9, 0.2, 0.8), (0, 200, 0))  # wholly behind ``near``, seen from the station
    top = box((-2.0, -0.5, 0.70), (-1.0, 0.5, 0.74), (0, 0, 200))  # a table top: the sensor is above it
    points, colors, labels = _one_station([(0, [floor]), (1, [near]), (2, [far]), (3, [top])])
    assert (labels == 1).any() and (labels == 3).any()
    assert not (labels == 2).any(), "the box behind the near one is hidden"
    table = points[labels == 3]
    inside = (np.abs(table[:, 0] + 1.5) < 0.49) & (np.abs(table[:, 1]) < 0.49)  # off the side faces
    assert inside.sum() > 0.5 * len(table) and (table[inside, 2] > 0.739).all(), "the top's upper face, never its underside"
    assert not ((np.abs(points[:, 0] - 1.4) < 0.005) & (labels == 1)).any(), "the near box's far face is hidden"


def test_density_falls_with_distance() -> None:
    floor = box((-6, -6, -0.05), (6, 6, 0.0), (100, 100, 100))
    points, _, _ = _one_station([(0, [floor])], n=20000)
    r = np.hypot(points[:, 0], points[:, 1])
    near = ((r > 1.0) & (r < 2.0)).sum() / (np.pi * (2.0**2 - 1.0**2))
    far = ((r > 4.0) & (r < 5.0)).sum() / (np.pi * (5.0**2 - 4.0**2))
    assert near > 4 * far


def test_bench_reads_the_evaluation_rooms_like_the_training_ones(tmp_path) -> None:
    from engines.core import EngineError
    from engines.segmentation.bench import generator_of, run_bench, run_benches, write_scenes
    from engines.segmentation.pointio import read_cloud

    (ply,) = write_scenes(tmp_path / "eval", 1, 11, generator="eval", points=(3000, 3000))
    write_scenes(tmp_path / "train", 1, 3, generator="train", points=(4000, 4000))
    cloud = read_cloud(ply)
    meta = json.loads(ply.with_suffix(".json").read_text())
    assert len(cloud) == 3000 and np.array_equal(np.unique(cloud.instance), np.unique(generate_eval_scene(11, EvalSceneParams(3000)).instance))
    assert generator_of(tmp_path / "eval") == "eval" and generator_of(tmp_path / "train") == "train" and meta["touching"] is not None
    one = run_bench(tmp_path / "eval", methods=("dbscan",))
    assert one["generator"] == "eval" and "eval" in one["table"] and one["methods"]["dbscan"]["confirmed_ap25"] == one["methods"]["dbscan"]["ap25"]
    both = run_benches({"train": tmp_path / "train", "eval": tmp_path / "eval"}, methods=("dbscan",))
    assert set(both["sets"]) == {"train", "eval"}
    keys = ("ap", "ap50", "ap25", "confirmed_ap25", "gt_objects", "predictions")
    assert [both["sets"]["eval"]["methods"]["dbscan"][k] for k in keys] == [one["methods"]["dbscan"][k] for k in keys]
    assert both["table"].index("training generator") < both["table"].index("evaluation generator")
    with pytest.raises(EngineError, match="generator"):
        write_scenes(tmp_path / "x", 1, 0, generator="other")
