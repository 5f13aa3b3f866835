"""A scene's map as a CommonRoad scenario (lanelet network only), for CommonRoad's own tools: the
Frenet planner's road boundary and the drivability checker's cross-check on scenes that came
from this project's JSON format or the procedural generator."""

from __future__ import annotations

from typing import Any

import numpy as np

from .scene import Scene


def _resample(line: np.ndarray, n: int) -> np.ndarray:
    """``n`` points evenly spaced by arc length along a polyline."""
    seg = np.linalg.norm(np.diff(line, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    t = np.linspace(0.0, s[-1], n)
    return np.column_stack([np.interp(t, s, line[:, 0]), np.interp(t, s, line[:, 1])])


def _bounds(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = max(len(left), len(right), 2)
    left, right = _resample(left, n), _resample(right, n)
    return left, (left + right) / 2.0, right


def commonroad_scenario(scene: Scene) -> Any:
    """A commonroad-io Scenario whose lanelets are the scene's lanes (and one per drivable area)."""
    from commonroad.scenario.lanelet import Lanelet, LaneletNetwork
    from commonroad.scenario.scenario import Scenario, ScenarioID

    ids = {lane_id: k + 1 for k, lane_id in enumerate(scene.lanes)}
    preds: dict[str, list[int]] = {lane_id: [] for lane_id in scene.lanes}
    for lane in scene.lanes.values():
        for succ in lane.successors:
            if succ in preds:
                preds[succ].append(ids[lane.id])
    lanelets = []
    for lane in scene.lanes.values():
        left, center, right = _bounds(np.asarray(lane.left, float), np.asarray(lane.right, float))
        lanelets.append(
            Lanelet(left, center, right, ids[lane.id], predecessor=preds[lane.id], successor=[ids[s] for s in lane.successors if s in ids])
        )
    for k, area in enumerate(scene.areas):
        ring = np.asarray(area.exterior.coords, dtype=float)[:-1] if area.geom_type == "Polygon" else None
        if ring is None or len(ring) < 3:
            continue
        half = len(ring) // 2
        # A lanelet's outline is its left bound and its reversed right bound: split the ring in two.
        left, center, right = _bounds(ring[: half + 1], np.concatenate([ring[half:], ring[:1]])[::-1])
        lanelets.append(Lanelet(left, center, right, len(ids) + k + 1))
    net = LaneletNetwork.create_from_lanelet_list(lanelets, cleanup_ids=False)
    cr = Scenario(dt=scene.scenario.dt, scenario_id=ScenarioID())
    cr.add_objects(net)
    return cr
