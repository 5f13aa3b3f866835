"""The replay panel under bad input: session settings of the wrong type or range, damaged episode
files, and the actions at the last frame (where the planner has nothing left to plan)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.planner.episode import episode_to_dict
from engines.planner.api import RunParams, run
from tests.engines.planner.helpers import agent, scenario

from .test_panel import finish, load, make_panel


@pytest.fixture(scope="module")
def short_episode():
    """2 s of idm driving beside one agent: enough frames for the end-frame actions, quick to re-run."""
    return run(RunParams(planner="idm", reactive=True), scenario=scenario(agents=(agent(1, 80.0, 3.5, 10.0),), duration=2.0)).episode


@pytest.mark.parametrize("state,needle", [
    ({"seed": "abc"}, "seed must be a whole number from 0 to 1000000, not 'abc'"),
    ({"samples": None}, "samples must be a whole number from 1 to 32, not None"),
    ({"steps": 5.0}, "steps must be a whole number from 1 to 30, not 5.0"),
    ({"guidance": {"collision": [True]}}, "guidance 'collision' must be [on, weight], not [True]"),
    ({"guidance": {"collision": [True, float("nan")]}}, "guidance 'collision' weight must be a number from 0 to 10, not nan"),
    ({"guidance": {"collision": [1, 2.0]}}, "guidance 'collision' on must be true or false, not 1"),
    ({"guidance": ["collision"]}, "guidance must be an object of name: value, not ['collision']"),
    ({"guidance": {"colision": [True, 1.0]}}, "unknown guidance 'colision' (choose collision, drivable, speed, comfort)"),
    ({"layers": {"lanes": "yes"}}, "layer 'lanes' must be true or false, not 'yes'"),
    ({"camera": 99, "speed": 99}, "camera must be a whole number from 0 to 2, not 99"),
    ({"speed": 99}, "speed must be a whole number from 0 to 4, not 99"),
    ({"reactive": 3}, "reactive must be true or false, not 3"),
    ({"file": 5}, "file must be text, not 5"),
    ({"planner": "rrt"}, "unknown planner 'rrt' (choose diffusion, idm, pdm, frenet, constant_velocity, expert)"),
])
def test_a_bad_session_is_one_message_and_changes_nothing(qtbot, panel_ctx, state: dict, needle: str) -> None:
    """These raised ValueError/TypeError/AttributeError, or left the combos blank without a word."""
    panel = make_panel(qtbot, panel_ctx)
    panel.controls.seed.setValue(5)
    before = panel.state()
    panel.restore({"seed": 9, **state} if "seed" not in state else state)
    assert panel.message.text.startswith("The session's planner settings are invalid: ") and needle in panel.message.text
    assert panel.state() == before  # nothing half-applied (the valid seed 9 included)
    assert panel.controls.camera.currentIndex() >= 0 and panel.timeline.speed.currentIndex() >= 0
    qtbot.waitUntil(lambda: not panel_ctx.jobs.running, timeout=60_000)  # the preview the seed edit started


def test_a_damaged_episode_file_is_named_not_an_unexpected_error(qapp, qtbot, panel_ctx, short_episode, tmp_path: Path) -> None:
    data = json.loads(json.dumps(episode_to_dict(short_episode)))
    data["metrics"]["signals"] = {k: v[:3] for k, v in data["metrics"]["signals"].items()}
    path = tmp_path / "short.json"
    path.write_text(json.dumps(data))
    panel = make_panel(qtbot, panel_ctx)
    panel.open_path(path)
    finish(qapp, panel)
    assert panel.loaded is None and "short.json is a damaged planner episode: the metric signal" in panel.message.text


@pytest.mark.parametrize("action", ["rerun", "cut_in", "denoise"])
def test_actions_at_the_last_frame_use_the_last_replan_and_say_so(qapp, qtbot, panel_ctx, short_episode, action: str) -> None:
    """End shows frame 20 of 20, but the planner last plans at 19: re-run and cut-in said "frame 20
    is outside the episode (0-19)" while denoising silently used 19. All three now agree."""
    panel = make_panel(qtbot, panel_ctx)
    load(panel, short_episode)
    panel.set_frame(panel._n() - 1)
    assert panel.frame == short_episode.steps == 20
    panel.controls.planner.setCurrentText("idm")
    panel.controls.samples.setValue(2)
    panel.controls.steps.setValue(2)
    {"rerun": panel.rerun_clicked, "cut_in": panel.cut_in_clicked, "denoise": panel.denoise_clicked}[action]()
    finish(qapp, panel)
    text = panel.message.text
    assert "outside the episode" not in text and "frame 19, the last replan: frame 20 is the episode's end" in text, text
    if action == "denoise":
        assert panel.denoise is not None and len(panel.denoise) == 2
    else:
        assert panel.loaded.episode.extras["rerun_from"] == 19 and panel.frame == 19
