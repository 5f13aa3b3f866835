"""Hand-made scenes for the planner tests: a straight two-lane road and trajectories on it."""
from __future__ import annotations

import numpy as np

from engines.planner.metrics import Track
from engines.planner.scenario import Agent, EgoStart, Lane, Scenario, StaticObject
from engines.planner.scene import Scene


def straight_road(length: float = 300.0, lanes: int = 2, limit: float = 15.0) -> list[Lane]:
    x = np.arange(0.0, length + 1e-9, 5.0)
    out = []
    for i in range(lanes):
        y = i * 3.5
        c = tuple((float(v), y) for v in x)
        out.append(Lane(f"L{i}", c, tuple((float(v), y + 1.75) for v in x), tuple((float(v), y - 1.75) for v in x), limit,
                        left_neighbor=f"L{i + 1}" if i + 1 < lanes else None, right_neighbor=f"L{i - 1}" if i > 0 else None))
    return out


def scenario(agents: tuple[Agent, ...] = (), statics: tuple[StaticObject, ...] = (), ego_speed: float = 10.0, ego_x: float = 50.0,
             duration: float = 15.0, lanes: int = 2) -> Scenario:
    return Scenario(name="test", lanes=tuple(straight_road(lanes=lanes)), route=("L0",), ego=EgoStart(ego_x, 0.0, 0.0, ego_speed),
                    agents=agents, static_objects=statics, duration=duration)


def agent(aid: int, x: float, y: float, speed: float, heading: float = 0.0, length: float = 4.5, width: float = 2.0) -> Agent:
    return Agent(aid, "vehicle", length, width, ((x, y, heading, speed),))


def line_trajectory(x0: float, speeds: np.ndarray, y: float = 0.0, dt: float = 0.1, heading: float = 0.0) -> np.ndarray:
    """(S, 4) x, y, heading, speed along a straight line with the given speed per step."""
    speeds = np.asarray(speeds, dtype=float)
    x = x0 + np.concatenate([[0.0], np.cumsum(0.5 * (speeds[1:] + speeds[:-1]) * dt)])
    return np.column_stack([x, np.full_like(x, y), np.full_like(x, heading), speeds])


def track(states: np.ndarray, sizes=((4.5, 2.0),), kinds=("vehicle",), ids=(1,)) -> Track:
    """Track of N agents from states (S, N, 4)."""
    states = np.asarray(states, dtype=float)
    if states.ndim == 2:
        states = states[:, None]
    return Track(states, np.ones(states.shape[:2], dtype=bool), np.array(ids), np.array(sizes, dtype=float), list(kinds))


def empty_track(steps: int) -> Track:
    return Track(np.zeros((steps, 0, 4)), np.zeros((steps, 0), dtype=bool), np.zeros(0, dtype=int), np.zeros((0, 2)), [])


def scene(**kwargs) -> Scene:
    return Scene(scenario(**kwargs))
