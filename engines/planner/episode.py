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

from engines.core import EngineError, to_jsonable, write_text

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


def _arr(v: Any, shape_tail: tuple[int, ...] = ()) -> np.ndarray | None:
    if v is None:
        return None
    a = np.asarray(v, dtype=float)
    return a.reshape(-1, *shape_tail) if shape_tail and a.size == 0 else a


def episode_from_dict(data: Any, origin: str = "the episode") -> Episode:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise EngineError(f"{origin} is not a planner episode")
    try:
        scenario = scenario_from_dict(data["scenario"], origin)
        ag = data["agents"]
        n = len(ag["ids"])
        states = np.asarray(ag["states"], dtype=float).reshape(len(data["ego"]), n, 4)
        m = data["metrics"]
        metrics = CLSResult(
            float(m["score"]), dict(m["multipliers"]), dict(m["weighted"]),
            tuple(Collision(**c) for c in m["collisions"]), tuple(Violation(**v) for v in m["violations"]),
            float(m["ego_progress"]), float(m["expert_progress"]),
            {k: [np.nan if x is None else x for x in v] for k, v in m.get("signals", {}).items()},
        )
        plans = [
            StepPlan(np.asarray(p["trajectory"], dtype=float), _arr(p["samples"]), int(p["chosen"]), float(p["sample_dt"]),
                     _arr(p["predictions"]), None if p["prediction_ids"] is None else np.asarray(p["prediction_ids"], dtype=int), float(p["ms"]))
            for p in data["plans"]
        ]
        trace = data.get("trace")
        if trace:
            trace = {"step": trace["step"], "steps": [{k: (np.asarray(v, dtype=float) if k != "t" else float(v)) for k, v in s.items()} for s in trace["steps"]]}
        return Episode(
            scenario, str(data["planner"]), dict(data.get("settings", {})), bool(data["reactive"]), float(data["dt"]),
            np.asarray(data["ego"], dtype=float), np.asarray(ag["ids"], dtype=int), list(ag["kinds"]),
            np.asarray(ag["size"], dtype=float).reshape(n, 2), states, np.asarray(ag["valid"], dtype=bool).reshape(len(data["ego"]), n),
            plans, metrics, _arr(data.get("expert")), trace, dict(data.get("extras", {})),
        )
    except EngineError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise EngineError(f"{origin} is a damaged planner episode ({type(exc).__name__}: {exc})") from None


def save_episode(ep: Episode, path: Path) -> Path:
    return write_text(path, json.dumps(episode_to_dict(ep), separators=(",", ":")) + "\n")


def load_episode(path: Path) -> Episode:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise EngineError(f"{path.name} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except UnicodeDecodeError:
        raise EngineError(f"{path.name} is not a text file") from None
    except OSError as exc:
        raise EngineError(f"cannot read {path}: {exc.strerror or exc}") from None
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
