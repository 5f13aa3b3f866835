"""The planner panel's saved state (panels/planner/session.py), read without any widget: a good
session round-trips, a bad value of each kind is refused with its name, an older one keeps defaults."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from engines.core import EngineError, to_jsonable
from engines.planner.guidance_config import TERMS
from engines.planner.params import PLANNERS
from panels.planner.session import CAMERAS, COMPARE, LAYERS, SPEEDS, PlannerSession, read_session

GOOD = {
    "source": "file: mine.json", "file": "/tmp/mine.json", "seed": 7, "reactive": False, "planner": "pdm", "samples": 4,
    "steps": 3, "compare": "diffusion+guidance", "guidance": {t: [t == "speed", 0.8] for t in TERMS},
    "layers": {key: key != "agents" for key in LAYERS}, "camera": 2, "speed": 4, "loop": True, "frame": 31,
}


@pytest.mark.parametrize("name,allowed", [("session.py", ("engines", "panels.session_checks")), ("work.py", ("engines",))])
def test_the_session_and_the_jobs_import_no_qt(name: str, allowed: tuple[str, ...]) -> None:
    """The session is read by from_dict and the jobs run in worker threads: neither module imports
    Qt, nor any module of the panel (all of them do) besides these."""
    tree = ast.parse((Path(__file__).resolve().parents[3] / "panels" / "planner" / name).read_text(encoding="utf-8"))
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += ["." * n.level + (n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    project = [m for m in imported if m.startswith(".") or m.split(".")[0] in ("engines", "panels", "workbench")]
    assert imported and not [m for m in imported if m.split(".")[0] in ("PySide6", "pyqtgraph", "qasync", "shiboken6")]
    assert [m for m in project if not m.startswith(allowed)] == []


def test_a_good_session_round_trips() -> None:
    session = read_session(json.loads(json.dumps(GOOD)))
    assert session.planner == "pdm" and session.samples == 4 and session.reactive is False and session.frame == 31
    assert session.guidance["speed"] == (True, 0.8) and session.guidance["collision"] == (False, 0.8)
    assert session.layers["agents"] is False and session.layers["lanes"] is True
    assert to_jsonable(session) == GOOD
    assert list(to_jsonable(session)) == list(GOOD)  # the keys sessions have always been written with, in order


def test_an_older_session_without_some_keys_keeps_the_defaults() -> None:
    session = read_session({"seed": 3, "planner": "idm"})
    assert (session.seed, session.planner) == (3, "idm")
    defaults = PlannerSession()
    assert (session.samples, session.steps, session.compare, session.reactive) == (defaults.samples, defaults.steps, "none", True)
    assert (session.camera, session.speed, session.loop) == (0, SPEEDS.index(1.0), False)
    assert session.source is None and session.file is None and session.guidance is None and session.layers is None  # left as they are
    assert read_session({}) == defaults
    partial = read_session({"guidance": {"speed": [True, 2.5]}, "layers": {"route": False}, "file": None, "source": None})
    assert partial.guidance == {"speed": (True, 2.5)} and partial.layers == {"route": False}  # only the terms and layers named


@pytest.mark.parametrize("key,value,needle", [
    ("source", 3, "source must be text, not 3"),
    ("file", ["a"], "file must be text, not ['a']"),
    ("seed", -1, "seed must be a whole number from 0 to 1000000, not -1"),
    ("seed", True, "seed must be a whole number from 0 to 1000000, not True"),
    ("samples", 33, "samples must be a whole number from 1 to 32, not 33"),
    ("steps", 0, "steps must be a whole number from 1 to 30, not 0"),
    ("camera", len(CAMERAS), f"camera must be a whole number from 0 to {len(CAMERAS) - 1}, not {len(CAMERAS)}"),
    ("speed", 1.0, f"speed must be a whole number from 0 to {len(SPEEDS) - 1}, not 1.0"),
    ("reactive", "false", "reactive must be true or false, not 'false'"),
    ("loop", None, "loop must be true or false, not None"),
    ("planner", "diffusion+guidance", f"unknown planner 'diffusion+guidance' (choose {', '.join(PLANNERS)})"),
    ("compare", "rrt", f"unknown compare 'rrt' (choose {', '.join(COMPARE)})"),
    ("guidance", {"speed": [True, 11]}, "guidance 'speed' weight must be a number from 0 to 10, not 11"),
    ("guidance", {"speed": [True, "1"]}, "guidance 'speed' weight must be a number from 0 to 10, not '1'"),
    ("guidance", {"speed": "on"}, "guidance 'speed' must be [on, weight], not 'on'"),
    ("guidance", {"speed": [None, 1.0]}, "guidance 'speed' on must be true or false, not None"),
    ("layers", {"lanez": True}, "unknown layers 'lanez' (choose lanes,"),
    ("layers", [], "layers must be an object of name: value, not []"),
    ("layers", {"route": 0}, "layer 'route' must be true or false, not 0"),
    ("frame", "end", "field 'frame' must be int, got 'end'"),
    ("colour", "red", "unknown PlannerSession field(s): colour"),
])
def test_a_bad_value_of_each_kind_is_refused_with_its_name(key: str, value, needle: str) -> None:
    with pytest.raises(EngineError) as err:
        read_session({**GOOD, key: value})
    assert needle in str(err.value), str(err.value)


@pytest.mark.parametrize("state", [None, [], "seed=1", 3])
def test_a_session_that_is_no_object_is_one_sentence(state) -> None:
    with pytest.raises(ValueError, match="they must be an object of name: value, not "):
        read_session(state)
