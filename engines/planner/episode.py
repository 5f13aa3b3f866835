"""An episode: the scenario, what every step held (ego, agents, the plan and its samples) and its
score. It is what the CLI writes, the video renders and the panel replays; JSON and CSV."""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engines.core import EngineError, json_loads, to_jsonable, write_text

from .metrics import CLSResult, Collision, Violation
from .scenario import Scenario, scenario_from_dict, scenario_to_dict

FORMAT = "workbench-planner-episode"
VERSION = 1


@dataclass
class StepPlan:
    trajectory: np.ndarray  # (T+1, 4) x, y, heading, speed
    samples: np.ndarray | None = None  # (K, T+1, 2)
    chosen: int = 0
    sample_dt: float = 0.1
    predictions: np.ndarray | None = None  # (P, T+1, 2)
    prediction_ids: np.ndarray | None = None
    ms: float = 0.0


@dataclass
class Episode:
    scenario: Scenario
    planner: str
    settings: dict[str, Any]
    reactive: bool
    dt: float
    ego: np.ndarray  # (S+1, 7) x, y, heading, speed, acceleration, steering, yaw rate
    agent_ids: np.ndarray  # (N,)
    agent_kinds: list[str]
    agent_size: np.ndarray  # (N, 2)
    agents: np.ndarray  # (S+1, N, 4)
    valid: np.ndarray  # (S+1, N)
    plans: list[StepPlan]
    metrics: CLSResult
    expert: np.ndarray | None = None  # (S+1, 4) the expert's drive in the same scene
    trace: dict[str, Any] | None = None  # denoising trace of one replan: {"step": k, "steps": [...]}
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return len(self.ego) - 1

    @property
    def score(self) -> float:
        return 100.0 * self.metrics.score


def _r(a: np.ndarray | None, nd: int = 3) -> Any:
    return None if a is None else np.round(np.asarray(a, dtype=float), nd).tolist()


def episode_to_dict(ep: Episode) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "scenario": scenario_to_dict(ep.scenario),
        "planner": ep.planner,
        "settings": to_jsonable(ep.settings),
        "reactive": ep.reactive,
        "dt": ep.dt,
        "ego": _r(ep.ego, 4),
        "agents": {"ids": ep.agent_ids.tolist(), "kinds": list(ep.agent_kinds), "size": _r(ep.agent_size),
                   "states": _r(np.where(ep.valid[..., None], ep.agents, 0.0)), "valid": ep.valid.astype(int).tolist()},
        "plans": [
            {"trajectory": _r(p.trajectory, 2), "samples": _r(p.samples, 2), "chosen": p.chosen, "sample_dt": p.sample_dt,
             "predictions": _r(p.predictions, 2), "prediction_ids": None if p.prediction_ids is None else [int(i) for i in p.prediction_ids],
             "ms": round(float(p.ms), 2)}
            for p in ep.plans
        ],
        "metrics": to_jsonable(ep.metrics),
        "expert": _r(ep.expert, 3),
        "trace": to_jsonable(ep.trace) if ep.trace else None,
        "extras": to_jsonable(ep.extras),
    }


class _Damaged(ValueError):
    """One broken part of an episode file, named so the sentence can say which."""


def _checked(v: Any, what: str, shape: tuple[int | None, ...], finite: bool = True) -> np.ndarray:
    """``v`` as a float array of ``shape`` (None: any length), finite unless told otherwise.

    The replay and the video index these arrays by column and step, so a wrong shape or a NaN
    would surface much later as a crash while scrubbing; it is caught here instead.
    """
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        raise _Damaged(f"{what} is not a table of numbers") from None
    if a.size == 0:  # JSON drops the trailing sizes of an empty table: (0, 2) comes back as (0,)
        dims = [n if n is not None else (a.shape[i] if i < a.ndim else 0) for i, n in enumerate(shape)]
        if not np.prod(dims):
            a = a.reshape(dims)
    if a.ndim != len(shape) or any(n is not None and n != m for n, m in zip(shape, a.shape)):
        want = " x ".join("N" if n is None else str(n) for n in shape)
        raise _Damaged(f"{what} has shape {' x '.join(map(str, a.shape)) or 'scalar'}, expected {want}")
    if finite and not np.isfinite(a).all():
        raise _Damaged(f"{what} holds values that are not finite numbers")
    return a


def _number(v: Any, what: str) -> float:
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v):
        raise _Damaged(f"{what} is not a finite number")
    return float(v)


def _plan(p: dict[str, Any], k: int) -> StepPlan:
    traj = _checked(p["trajectory"], f"the plan of step {k}", (None, 4))
    if not len(traj):
        raise _Damaged(f"the plan of step {k} is empty")
    samples = None if p["samples"] is None else _checked(p["samples"], f"the samples of step {k}", (None, None, 2), finite=False)
    chosen = p["chosen"]
    if not isinstance(chosen, int) or isinstance(chosen, bool) or (samples is not None and not 0 <= chosen < len(samples)):
        raise _Damaged(f"the chosen sample of step {k} ({chosen!r}) is not one of its samples")
    preds = None if p["predictions"] is None else _checked(p["predictions"], f"the predictions of step {k}", (None, None, 2), finite=False)
    ids = None if p["prediction_ids"] is None else np.asarray(p["prediction_ids"], dtype=int)
    return StepPlan(traj, samples, chosen, _number(p["sample_dt"], f"the sample dt of step {k}"), preds, ids,
                    _number(p["ms"], f"the planning time of step {k}"))


def episode_from_dict(data: Any, origin: str = "the episode") -> Episode:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise EngineError(f"{origin} is not a planner episode")
    try:
        scenario = scenario_from_dict(data["scenario"], origin)
        dt = _number(data["dt"], "its time step")
        if dt <= 0:
            raise _Damaged(f"its time step {dt:g} s is not positive")
        ego = _checked(data["ego"], "the ego track", (None, 7))
        if len(ego) < 2:
            raise _Damaged("the ego track has fewer than two steps")
        frames = len(ego)
        ag = data["agents"]
        ids = _checked(ag["ids"], "the agent ids", (None,))
        n = len(ids)
        kinds = ag["kinds"]
        if not isinstance(kinds, list) or len(kinds) != n or not all(isinstance(k, str) for k in kinds):
            raise _Damaged(f"the agent kinds are not {n} names, one per agent")
        size = _checked(ag["size"], "the agent sizes", (n, 2))
        states = _checked(ag["states"], "the agent states", (frames, n, 4), finite=False)
        valid = _checked(ag["valid"], "the agent validity", (frames, n)).astype(bool)
        if not np.isfinite(states[valid]).all():
            raise _Damaged("the agent states hold values that are not finite numbers")
        m = data["metrics"]
        if not isinstance(m, dict):
            raise _Damaged("its metrics are missing")
        signals = {k: [np.nan if x is None else x for x in v] for k, v in m.get("signals", {}).items()}
        for name, values in signals.items():
            _checked(values, f"the metric signal '{name}'", (frames,), finite=False)
        metrics = CLSResult(
            float(m["score"]), dict(m["multipliers"]), dict(m["weighted"]),
            tuple(Collision(**c) for c in m["collisions"]), tuple(Violation(**v) for v in m["violations"]),
            float(m["ego_progress"]), float(m["expert_progress"]), signals,
        )
        plans = data["plans"]
        if not isinstance(plans, list) or len(plans) > frames:
            raise _Damaged(f"it has more plans than its {frames} steps")
        plans = [_plan(p, k) for k, p in enumerate(plans)]
        expert = None if data.get("expert") is None else _checked(data["expert"], "the expert track", (None, 4), finite=False)
        trace = data.get("trace")
        if trace:
            trace = {"step": trace["step"], "steps": [{k: (np.asarray(v, dtype=float) if k != "t" else float(v)) for k, v in s.items()} for s in trace["steps"]]}
        return Episode(
            scenario, str(data["planner"]), dict(data.get("settings", {})), bool(data["reactive"]), dt,
            ego, ids.astype(int), list(kinds), size, states, valid, plans, metrics, expert, trace, dict(data.get("extras", {})),
        )
    except EngineError:
        raise
    except _Damaged as exc:
        raise EngineError(f"{origin} is a damaged planner episode: {exc}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise EngineError(f"{origin} is a damaged planner episode ({type(exc).__name__}: {exc})") from None


def save_episode(ep: Episode, path: Path) -> Path:
    return write_text(path, json.dumps(episode_to_dict(ep), separators=(",", ":")) + "\n")


def load_episode(path: Path) -> Episode:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise EngineError(f"{path.name} is not a text file") from None
    except OSError as exc:
        raise EngineError(f"cannot read {path}: {exc.strerror or exc}") from None
    data = json_loads(text, path.name)
    return episode_from_dict(data, path.name)


def episode_csv(ep: Episode) -> str:
    """One row per step: time, ego state, the plan's latency and the metric's per-step signals."""
    sig = ep.metrics.signals
    buf = io.StringIO()
    w = csv.writer(buf)
    names = [k for k in ("acceleration", "lateral_acceleration", "jerk", "ttc", "progress", "speed_limit", "off_road") if k in sig]
    w.writerow(["step", "time", "x", "y", "heading", "speed", "steering", "plan_ms", *names])
    for k in range(len(ep.ego)):
        e = ep.ego[k]
        ms = ep.plans[k].ms if k < len(ep.plans) else ""
        w.writerow([k, round(k * ep.dt, 2), *(round(float(v), 4) for v in (e[0], e[1], e[2], e[3], e[5])), ms,
                    *("" if not np.isfinite(sig[n][k]) else round(float(sig[n][k]), 4) for n in names)])
    return buf.getvalue()


def save_csv(ep: Episode, path: Path) -> Path:
    return write_text(path, episode_csv(ep))
