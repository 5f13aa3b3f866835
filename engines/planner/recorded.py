"""Training samples from recorded traffic (Diffusion Planner learns from human driving logs).

Every recorded vehicle of a CommonRoad scenario becomes the ego in turn: at every few steps its
logged past and the other road users' logged pasts are the observation, its logged future is
the ego target and the nearest neighbours' logged futures are the neighbour targets (the
paper's joint prediction). The map is the scenario's lanelet network; the route is the lane
sequence the vehicle itself drove, extended along successors, so the route token says where
the driver went without saying how.

The observation is built exactly as the simulator builds it (engines/planner/simulation.py):
the same 2 s window over the same padded track array, agents that are there from the first
step carry the importer's extrapolated past, agents that enter later have none before.
"""
from __future__ import annotations

import json
import re
import time
import zlib
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.core import NEVER_CANCELLED, CancelToken, EngineError, ProgressFn, no_progress, pool_worker_setup, resource_path
from engines.core.executor import ExecutorSpec, run_tasks

from . import features as F
from .data import Episode
from .features import FeatureBuilder, Inputs, future_in_ego_frame
from .params import SPLITS
from .planners.base import HISTORY_STEPS, Observation
from .scenario import Scenario
from .scene import Scene
from .vehicle import EgoState

LABEL_STRIDE = int(round(F.FUTURE_DT / 0.1))  # the simulator runs at 10 Hz
SAMPLE_STRIDE = 5  # steps between two samples of one vehicle (0.5 s)
MIN_FUTURE = 10  # future waypoints (2 s) a sample needs at least
EGO_LENGTH = (3.0, 7.5)  # m: the egos are cars, vans and pick-ups (not trucks, buses or trains)
EGO_WIDTH = (1.4, 2.6)
ROUTE_POINT_STRIDE = 5  # steps between two lane look-ups along a vehicle's path
ROUTE_EXTENSION = 1000.0  # m of successors after the last lane a vehicle drove: in practice, to the map's end
END_MARGIN = 5.0  # m of mapped road a sample's logged future must leave before the route's end
COMFORT_BRAKE = 3.0  # m/s^2: a recorded car near the route's end could still stop at this
MAX_GAP_LANES = 4  # lanes a route may skip between two look-ups and stay connected
SPLIT_FILE = "recorded_split.json"


@dataclass(frozen=True)
class Tracks:
    """Every agent's states on the simulator's padded time axis: row HISTORY_STEPS + t is step t."""

    states: np.ndarray  # (HISTORY_STEPS + T, N, 4) x, y, heading, speed
    valid: np.ndarray  # (HISTORY_STEPS + T, N)

    @property
    def steps(self) -> int:
        return self.states.shape[0] - HISTORY_STEPS


def recorded_tracks(scenario: Scenario) -> Tracks:
    """The agents' logged states (log replay), with the importer's extrapolated 2 s before step 0."""
    n = len(scenario.agents)
    end = max([a.start_step + len(a.trajectory) + 1 for a in scenario.agents], default=1)
    states = np.zeros((HISTORY_STEPS + end, n, 4))
    valid = np.zeros((HISTORY_STEPS + end, n), dtype=bool)
    for i, agent in enumerate(scenario.agents):
        rows = np.asarray([agent.history[-1], *agent.trajectory], dtype=float)
        first = HISTORY_STEPS + agent.start_step
        states[first: first + len(rows), i] = rows
        valid[first: first + len(rows), i] = True
        if agent.start_step == 0:
            past = np.asarray(agent.history, dtype=float)[-(HISTORY_STEPS + 1): -1]
            states[HISTORY_STEPS - len(past): HISTORY_STEPS, i] = past
            valid[HISTORY_STEPS - len(past): HISTORY_STEPS, i] = True
    return Tracks(states, valid)


def _lane_graph(scene: Scene) -> dict[str, tuple[str, ...]]:
    return {lid: tuple(x for x in (*lane.successors, lane.left_neighbor, lane.right_neighbor) if x)
            for lid, lane in scene.lanes.items()}


def _connect(graph: dict[str, tuple[str, ...]], a: str, b: str) -> list[str] | None:
    """The lanes after ``a`` up to ``b`` (successors and same-direction neighbours), or None."""
    queue, seen = deque([(a, [])]), {a}
    while queue:
        lid, path = queue.popleft()
        if len(path) > MAX_GAP_LANES:
            continue
        for nxt in graph[lid]:
            if nxt == b:
                return path + [b]
            if nxt not in seen:
                seen.add(nxt)
                queue.append((nxt, path + [nxt]))
    return None


def driven_route(scene: Scene, track: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The connected lane sequence a vehicle drove, and per track row the index of the route
    piece it belongs to (-1 where its path could not be joined to what came before).

    ``track`` (T, 4) are its valid states in order. Where two consecutive look-ups cannot be
    joined through the lane graph (a lane the recording leaves sideways, a map gap), the route
    starts again: the rows before the break belong to a piece with no road ahead of them."""
    graph = _lane_graph(scene)
    rows = list(range(0, len(track), ROUTE_POINT_STRIDE))
    if rows[-1] != len(track) - 1:
        rows.append(len(track) - 1)
    route: list[str] = []
    start_row = 0
    owner = np.zeros(len(track), dtype=int)
    for r in rows:
        lid = scene.closest_lane(track[r, :2], float(track[r, 2]))
        if not route:
            route = [lid]
        elif lid != route[-1] and lid not in route:
            link = _connect(graph, route[-1], lid)
            if link is None:  # start again from here: the piece before it ends
                owner[start_row: r] = -1
                route, start_row = [lid], r
            else:
                route.extend(link)
    return route, owner


def extended(scene: Scene, route: list[str]) -> tuple[str, ...]:
    """The route with ROUTE_EXTENSION metres of first successors after its last lane."""
    out, total = list(route), 0.0
    while total < ROUTE_EXTENSION:
        nxt = [s for s in scene.lanes[out[-1]].successors if s not in out]
        if not nxt:
            break
        out.append(nxt[0])
        total += scene.lanes[nxt[0]].center.length
    return tuple(out)


def extrapolated(plan: np.ndarray, known: int) -> np.ndarray:
    """An ego plan (T+1, 4: x, y, cos, sin) whose first ``known`` waypoints are logged, continued at
    the last logged velocity and heading: the network is shown whole plans, as at inference, while
    the loss is taught only the logged part (``diffusion_loss``'s ego mask)."""
    out = plan.copy()
    if known >= len(plan) or known < 2:
        return out
    step = plan[known - 1, :2] - plan[known - 2, :2]
    ahead = np.arange(1, len(plan) - known + 1)[:, None]
    out[known:, :2] = plan[known - 1, :2] + ahead * step
    out[known:, 2:] = plan[known - 1, 2:]
    return out


def _before_the_map_ends(scene: Scene, future: np.ndarray) -> int:
    """How many of a recorded car's label waypoints (rows from now) it reaches while it could
    still stop before the end of its route, as it must where the mapped road ends.

    The map's end is the end of the road in the simulator, and the rule-based planners stop
    there; the recorded driver had road beyond it. Waypoints from the first one that could no
    longer stop in time are left untaught: they would teach driving off the map."""
    s, _ = scene.route_path.project(future[:, :2])
    reach = s + future[:, 3] ** 2 / (2 * COMFORT_BRAKE) + END_MARGIN
    beyond = np.flatnonzero(reach > scene.route_path.length)
    return int(beyond[0]) if len(beyond) else len(future)


def is_ego_candidate(kind: str, length: float, width: float) -> bool:
    return kind == "vehicle" and EGO_LENGTH[0] <= length <= EGO_LENGTH[1] and EGO_WIDTH[0] <= width <= EGO_WIDTH[1]


@dataclass
class Samples:
    inputs: list[Inputs]
    future: np.ndarray  # (n, P+1, T+1, 4) ego frame metres
    valid: np.ndarray  # (n, P+1, T+1)
    egos: int  # vehicles that gave at least one sample
    sources: np.ndarray  # (n, 2) the ego's agent index in the scenario and the step of each sample


def recorded_samples(scenario: Scenario, stride: int = SAMPLE_STRIDE) -> Samples:
    """Samples of every recorded vehicle of ``scenario`` as the ego (see the module docstring)."""
    scene = Scene(scenario)
    base_features = FeatureBuilder(scene)
    tracks = recorded_tracks(scenario)
    agents = scenario.agents
    t1 = F.FUTURE_STEPS + 1
    p = F.N_NEIGHBORS + 1
    horizon = np.arange(t1) * LABEL_STRIDE
    inputs: list[Inputs] = []
    futures: list[np.ndarray] = []
    valids: list[np.ndarray] = []
    sources: list[tuple[int, int]] = []
    egos = 0
    ids = np.array([a.id for a in agents], dtype=int)
    kinds = [a.kind for a in agents]
    sizes = np.array([[a.length, a.width] for a in agents], dtype=float).reshape(-1, 2)
    for e, ego in enumerate(agents):
        if not is_ego_candidate(ego.kind, ego.length, ego.width):
            continue
        rows = np.flatnonzero(tracks.valid[HISTORY_STEPS:, e]) + HISTORY_STEPS
        if len(rows) < MIN_FUTURE * LABEL_STRIDE + 1 or np.any(np.diff(rows) != 1):
            continue
        track = tracks.states[rows, e]
        route, owner = driven_route(scene, track)
        if len(route) == 0:
            continue
        try:
            ego_scene = scene.with_route(extended(scene, route))
        except EngineError:
            continue
        features = base_features.rerouted(ego_scene)
        others = np.array([i for i in range(len(agents)) if i != e], dtype=int)
        speed = track[:, 3]
        accel = np.gradient(speed, 0.1) if len(speed) > 1 else np.zeros(1)
        gave = False
        last_start = len(rows) - 1 - MIN_FUTURE * LABEL_STRIDE
        for r in range(0, last_start + 1, stride):
            if owner[r] < 0:
                continue
            k = rows[r]  # padded row of "now"
            x, y, h, v = track[r]
            window = slice(k - HISTORY_STEPS, k + 1)
            obs = Observation(
                step=int(k - HISTORY_STEPS), time=(k - HISTORY_STEPS) * 0.1, dt=0.1,
                ego=EgoState(float(x), float(y), float(h), float(v), float(accel[r])),
                ego_history=tracks.states[window, e].copy(),
                agent_ids=ids[others], agent_kinds=[kinds[i] for i in others], agent_size=sizes[others],
                agent_history=tracks.states[window][:, others].transpose(1, 0, 2).copy(),
                agent_valid=tracks.valid[window][:, others].T.copy(),
                static_boxes=np.zeros((0, 4, 2)), scene=ego_scene,
            )
            on_map = _before_the_map_ends(ego_scene, track[r: r + F.FUTURE_STEPS * LABEL_STRIDE + 1: LABEL_STRIDE])
            if on_map < MIN_FUTURE + 1:
                continue
            inp = features.build(obs)
            origin, theta = np.array([x, y]), float(h)
            fut = np.zeros((p, t1, 4), dtype=np.float32)
            ok = np.zeros((p, t1), dtype=bool)
            label_rows = k + horizon
            inside = label_rows < tracks.states.shape[0]
            for j, column in enumerate([e, *(others[i] for i in inp.neighbor_index if i >= 0)]):
                lr = label_rows[inside]
                present = tracks.valid[lr, column]
                if not present.all():  # a track ends where it first disappears
                    present[int(np.argmin(present)):] = False
                fut[j, : len(lr)] = future_in_ego_frame(origin, theta, tracks.states[lr, column])
                ok[j, : len(lr)] = present
            ok[0, on_map:] = False
            fut[0] = extrapolated(fut[0], int(ok[0].sum()))
            inputs.append(inp)
            futures.append(fut)
            valids.append(ok)
            sources.append((e, int(k - HISTORY_STEPS)))
            gave = True
        egos += gave
    if not inputs:
        return Samples([], np.zeros((0, p, t1, 4), np.float32), np.zeros((0, p, t1), bool), 0, np.zeros((0, 2), int))
    return Samples(inputs, np.stack(futures), np.stack(valids), egos, np.array(sources))


# The split -------------------------------------------------------------------------------------
def map_id(name: str) -> str:
    """A CommonRoad scenario id's map: 'USA_US101-3' of 'USA_US101-3_3_T-1'."""
    m = re.match(r"([A-Z]{3}_[A-Za-z0-9]+-\d+)", Path(name).name)
    return m.group(1) if m else Path(name).stem


def split_files(split: str) -> list[str]:
    """The file names of one part of the shipped recorded-traffic split (train, tune, validation)."""
    if split not in SPLITS:
        raise EngineError(f"unknown split '{split}': choose from {', '.join(SPLITS)}")
    data = json.loads(resource_path("planner", SPLIT_FILE).read_text())
    return list(data[split])


def scenario_files(folder: Path, split: str | None = None) -> list[Path]:
    """The CommonRoad (.xml) and scenario (.json) files of ``folder``, only those of ``split`` when given."""
    folder = Path(folder)
    if not folder.is_dir():
        raise EngineError(f"{folder} is not a folder of scenario files")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".xml", ".json") and p.is_file())
    if split is not None:
        wanted = set(split_files(split))
        files = [p for p in files if p.name in wanted]
    if not files:
        raise EngineError(f"{folder} holds no scenario files (.xml, .json){'' if split is None else f' of the {split} split'}")
    return files


# The data file ----------------------------------------------------------------------------------
LOG_DURATION = 120.0  # s: the longest recording a scenario file may hold (Scenario's own bound)


@dataclass
class FileSamples:
    """One file's samples: its recorded cars as egos, then the expert on its planning problem."""

    recorded: Samples
    expert: list[Episode]


def _file_job(path: Path) -> FileSamples | str:
    """One file's samples, or the sentence that says why it gave none.

    Besides every recorded car, the expert drives the file's own planning problem twice (log
    replay with DART noise, reactive agents without), up to its first failure: real roads with the
    expert's manners where the recordings have none (stopping where the mapped road ends)."""
    from .commonroad_import import load_commonroad
    from .data import labelled_episode

    try:
        recorded = recorded_samples(load_commonroad(path, duration=LOG_DURATION))
        episode = load_commonroad(path)
    except EngineError as exc:
        return str(exc)
    seed = zlib.crc32(path.name.encode())
    expert = [labelled_episode(episode, seed, noise=True, reactive=False), labelled_episode(episode, seed, noise=False, reactive=True)]
    return FileSamples(recorded, expert)


def generate_recorded_dataset(path: Path, folder: Path, split: str | None = None, progress: ProgressFn = no_progress,
                              cancel: CancelToken = NEVER_CANCELLED, workers: int = 1, executor: str = "local",
                              ray_address: str | None = None) -> dict:
    """Write an .npz of samples from every recorded vehicle of the CommonRoad files in ``folder``
    (only the files of ``split`` when given); returns counts, the files that gave nothing and why.

    Files are independent, so ``workers`` processes read them side by side, here or on Ray
    (``executor``, ``ray_address``); results are gathered in file order, so the data file is the
    same for any number of workers. A file whose task fails (a bug, a dead worker) is skipped with its error."""
    from .data import save_samples

    if workers < 1:
        raise EngineError("the number of data workers must be at least 1")
    files = [p for p in scenario_files(folder, split) if p.suffix.lower() == ".xml"]
    if not files:
        raise EngineError(f"{folder} holds no CommonRoad (.xml) recordings to learn from")
    t0 = time.perf_counter()
    items: list[Inputs] = []
    futures, valids, skipped = [], [], {}
    egos = expert_samples = 0
    unrecorded: list[str] = []  # files whose cars gave nothing (too short, parked, off the lane graph): only the expert's samples
    spec = ExecutorSpec(executor, workers, ray_address)
    spec.check()
    for i, task in enumerate(run_tasks(_file_job, files, spec, cancel, initializer=pool_worker_setup)):
        cancel.raise_if_cancelled()
        file, result = task.item, task.value if task.ok else task.error
        if isinstance(result, str):
            skipped[file.name] = result
            continue
        parts = [(result.recorded.inputs, result.recorded.future, result.recorded.valid)]
        parts += [(ep.inputs, ep.future, ep.valid) for ep in result.expert]
        for inputs, future, valid in parts:
            if inputs:
                items.extend(inputs)
                futures.append(future)
                valids.append(valid)
        egos += result.recorded.egos
        expert_samples += sum(len(ep.inputs) for ep in result.expert)
        if not result.recorded.inputs:
            unrecorded.append(file.name)
        progress((i + 1) / len(files), f"{file.name}: {len(items)} samples, {egos} recorded vehicles")
    seconds = time.perf_counter() - t0
    used = [f.name for f in files if f.name not in skipped]
    save_samples(path, items, futures, valids, {"meta": np.array([len(used), 0, seconds]), "recorded_files": np.array(used)})
    return {"files": len(used), "vehicles": egos, "samples": len(items), "expert_samples": expert_samples, "seconds": round(seconds, 1),
            "path": str(path), "split": split, "skipped": skipped, "without_recorded_cars": unrecorded}
