"""The replay panel: run, scrub and play, camera and layers, re-run (guidance, drag, cut-in),
denoising animation, A/B, exports, bad input, sessions, and the replay frame rate."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from engines.planner.procedural import generate
from engines.planner.api import RunParams, run
from engines.planner.scenario import scenario_to_dict
from tests.conftest import wait_until
from workbench.screenshot import grab_image, is_blank


@pytest.fixture(scope="module")
def idm_episode():
    return run(RunParams(type="cut_in", seed=3, planner="idm", reactive=True)).episode


def make_panel(qtbot, panel_ctx):
    from panels.planner import create_panel

    panel = create_panel(panel_ctx)
    qtbot.addWidget(panel)
    panel.resize(1300, 850)
    panel.show()
    qtbot.waitExposed(panel)
    qtbot.waitUntil(lambda: not panel_ctx.jobs.running, timeout=60_000)  # the scene preview it opens on
    return panel


def finish(qapp, panel, timeout: float = 240.0) -> None:
    """Wait for the panel's job and for any job it superseded (still running, its result ignored)."""
    assert wait_until(qapp, lambda: not panel.runner.busy and not panel.ctx.jobs.running, timeout), "the job did not finish"


def load(panel, episode, compare=None) -> None:
    from panels.planner.work import loaded

    panel._on_result(loaded(episode, compare))


def test_default_run_draws_and_the_timeline_moves(qapp, qtbot, panel_ctx) -> None:
    panel = make_panel(qtbot, panel_ctx)
    assert panel.run_default()
    finish(qapp, panel)
    assert panel.loaded is not None and panel.loaded.episode.planner.startswith("diffusion")
    assert panel.loaded.episode.steps == 60 and panel.timeline.slider.maximum() == 60
    wait_until(qapp, lambda: False, 0.2)
    assert not is_blank(grab_image(panel.view))
    assert "CLS" in panel.summary.text()
    assert panel.table.rowCount() == 9
    # Keyboard: Right, End, Home.
    panel.view.setFocus()
    qtbot.keyClick(panel.view, Qt.Key.Key_Right)
    assert panel.frame == 1
    qtbot.keyClick(panel.view, Qt.Key.Key_End)
    assert panel.frame == 60
    qtbot.keyClick(panel.view, Qt.Key.Key_Home)
    assert panel.frame == 0
    # Play at 4x advances frames; pausing stops.
    panel.timeline.speed.setCurrentIndex(4)
    panel.toggle_play()
    assert panel.timer.interval() == 25
    assert wait_until(qapp, lambda: panel.frame >= 5, 5.0)
    panel.toggle_play()
    stopped = panel.frame
    wait_until(qapp, lambda: False, 0.2)
    assert panel.frame == stopped


def test_layers_camera_and_violation_jump(qapp, qtbot, panel_ctx, idm_episode) -> None:
    panel = make_panel(qtbot, panel_ctx)
    load(panel, idm_episode)
    layers = panel.controls.layers
    item = next(layers.item(i) for i in range(layers.count()) if layers.item(i).data(Qt.ItemDataRole.UserRole) == "agents")
    item.setCheckState(Qt.CheckState.Unchecked)
    assert not panel.view.agents.isVisible() and panel.view.visible["agents"] is False
    item.setCheckState(Qt.CheckState.Checked)
    assert panel.view.agents.isVisible()
    panel.set_frame(30)
    panel.controls.camera.setCurrentIndex(1)  # heading up
    assert not panel.view.vb.root.transform().isIdentity()
    panel.controls.camera.setCurrentIndex(0)
    assert panel.view.vb.root.transform().isIdentity()
    panel.jump_to_violation()
    first = idm_episode.metrics.first_violation
    assert panel.frame == (first.step if first else 30)
    rows = [panel.violations.item(i) for i in range(panel.violations.count())]
    if first is None:  # a note says so; clicking it goes nowhere
        assert [r.text() for r in rows] == ["No violation in this episode."]
        panel._violation_chosen(rows[0])
        assert panel.frame == 30
    else:
        assert rows and all(r.data(Qt.ItemDataRole.UserRole) is not None for r in rows)


def test_rerun_with_guidance_drag_and_cut_in(qapp, qtbot, panel_ctx, idm_episode) -> None:
    panel = make_panel(qtbot, panel_ctx)
    load(panel, idm_episode)
    panel.set_frame(50)
    panel.controls.planner.setCurrentText("pdm")
    panel.rerun_clicked()
    finish(qapp, panel)
    ep = panel.loaded.episode
    assert ep.extras["rerun_from"] == 50 and ep.planner == "pdm" and panel.frame == 50
    # Drag an agent: the view reports the drop, the re-run applies it.
    aid = int(ep.agent_ids[0])
    j = 0
    x, y = ep.agents[50, j, :2]
    assert panel.view._can_grab(float(x), float(y))
    panel.view._drag_end(float(x) + 3.0, float(y))
    assert panel.pending == (aid, float(x) + 3.0, float(y)) and str(aid) in panel.controls.pending_label.text()
    panel.rerun_clicked()
    finish(qapp, panel)
    moved = panel.loaded.episode
    assert abs(moved.agents[50, j, 0] - (x + 3.0)) < 0.5
    panel.cut_in_clicked()
    finish(qapp, panel)
    cut = panel.loaded.episode
    assert len(cut.agent_ids) == len(ep.agent_ids) + 1 and "cut-in" in panel.message.text


def test_denoising_animation_and_a_b(qapp, qtbot, panel_ctx, idm_episode) -> None:
    panel = make_panel(qtbot, panel_ctx)
    load(panel, idm_episode)
    panel.set_frame(20)
    panel.denoise_clicked()
    finish(qapp, panel)
    assert panel.denoise is not None and len(panel.denoise) == 10
    assert panel.denoise_bar.isVisible()
    panel.denoise_bar.slider.setValue(9)
    assert "10/10" in panel.denoise_bar.label.text()
    assert len(panel.view.x0.getData()[0]) > 0
    panel._close_denoise()
    assert len(panel.view.x0.getData()[0]) == 0
    # A/B: two planners on one scenario, side by side in the table.
    panel.controls.source.setCurrentText("procedural: lead_braking")
    panel.controls.planner.setCurrentText("idm")
    panel.controls.compare.setCurrentText("constant_velocity")
    panel.run_clicked()
    finish(qapp, panel)
    assert panel.loaded.compare is not None and panel.loaded.compare.planner == "constant_velocity"
    assert panel.table.horizontalHeaderItem(2).text() == "B" and "B: constant_velocity" in panel.summary.text()


def test_exports(qapp, qtbot, panel_ctx, idm_episode, tmp_path: Path) -> None:
    panel = make_panel(qtbot, panel_ctx)
    assert [a.text() for a in panel.export_actions()] == ["view as PNG…", "replay as GIF…", "replay as MP4…", "episode as JSON…", "episode as CSV…"]
    load(panel, idm_episode)
    panel.export_png(tmp_path / "view.png")
    assert (tmp_path / "view.png").stat().st_size > 1000
    for name, fn in (("ep.json", panel.export_episode), ("ep.csv", panel.export_csv), ("ep.mp4", panel.export_video)):
        fn(tmp_path / name)
        finish(qapp, panel)
        assert (tmp_path / name).stat().st_size > 1000, name
    assert json.loads((tmp_path / "ep.json").read_text())["format"] == "workbench-planner-episode"


@pytest.mark.parametrize("content,expected", [
    ('{"name": "x", "lanes": [', "not valid JSON"),
    ("NOLANES", "empty"),
    ("UNREACHABLE", "unreachable"),
])
def test_bad_files_show_one_clear_message(qapp, qtbot, panel_ctx, tmp_path: Path, content: str, expected: str) -> None:
    panel = make_panel(qtbot, panel_ctx)
    path = tmp_path / "scene.json"
    if content in ("NOLANES", "UNREACHABLE"):
        data = scenario_to_dict(generate("straight", 0))
        if content == "NOLANES":
            data["lanes"] = []
        else:
            data["route"] = [data["route"][0], "missing-lane"]
        content = json.dumps(data)
    path.write_text(content)
    panel.open_path(path)
    finish(qapp, panel)
    assert expected in panel.message.text and panel.loaded is None


def test_bad_xml_and_unknown_type_messages(qapp, qtbot, panel_ctx, tmp_path: Path) -> None:
    """Broken XML and a JSON file of another type (not a scenario, not an episode) each get one clear message."""
    panel = make_panel(qtbot, panel_ctx)
    path = tmp_path / "scene.xml"
    path.write_text("<commonRoad><lanelet>")
    panel.open_path(path)
    finish(qapp, panel)
    assert "not valid XML" in panel.message.text and panel.loaded is None
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**scenario_to_dict(generate("straight", 0)), "format": "workbench-topomap-compare"}))
    panel.open_path(other)
    finish(qapp, panel)
    assert "other.json is not a planner scenario (format 'workbench-topomap-compare')" in panel.message.text
    assert panel.loaded is None


def test_opening_an_episode_file_replays_it(qapp, qtbot, panel_ctx, idm_episode, tmp_path: Path) -> None:
    from engines.planner.episode import save_episode

    save_episode(idm_episode, tmp_path / "episode.json")
    panel = make_panel(qtbot, panel_ctx)
    panel.open_path(tmp_path / "episode.json")
    finish(qapp, panel)
    assert panel.loaded is not None and panel.loaded.episode.steps == idm_episode.steps


def test_session_state_round_trip(qtbot, panel_ctx) -> None:
    a = make_panel(qtbot, panel_ctx)
    a.controls.source.setCurrentText("procedural: merge")
    a.controls.seed.setValue(7)
    a.controls.planner.setCurrentText("pdm")
    a.controls.term_box["speed"].setChecked(True)
    a.controls.term_weight["speed"].setValue(0.8)
    a.controls.camera.setCurrentIndex(1)
    state = json.loads(json.dumps(a.state()))
    b = make_panel(qtbot, panel_ctx)
    b.restore(state)
    assert b.state() == state
    qtbot.waitUntil(lambda: not panel_ctx.jobs.running, timeout=60_000)  # the previews the new controls started
    assert "merge-7 at t = 0" in b.summary.text()


def test_replay_steps_and_paints_a_dense_scene_with_16_samples(qapp, qtbot, panel_ctx) -> None:
    """What `workbench planner replay-fps` times (its speed is a benchmark, not asserted here)."""
    ep = run(RunParams(type="dense_traffic", seed=0, planner="pdm", reactive=True)).episode
    panel = make_panel(qtbot, panel_ctx)
    panel.show_episode(ep, max_samples=16)
    drawn = max(len(f.labels) for f in panel.loaded.replay.frames)
    assert drawn >= 30 and ep.plans[0].samples is not None and len(ep.plans[0].samples) >= 17
    assert max(f.sample_lines for f in panel.loaded.replay.frames) == 16
    fps = panel.measure_fps(25)
    assert fps > 0 and panel.frame == 24


def test_opens_on_the_scene_at_t0_until_the_first_run(qapp, qtbot, panel_ctx, idm_episode) -> None:
    panel = make_panel(qtbot, panel_ctx)
    finish(qapp, panel)
    first = panel.controls.source.currentText().split(": ", 1)[1]
    assert panel.view.replay is not None and len(panel.view.replay.frames) == 1
    assert "t = 0" in panel.summary.text() and first in panel.summary.text()
    assert not panel.timeline.slider.isEnabled() and panel.loaded is None
    wait_until(qapp, lambda: False, 0.2)
    assert not is_blank(grab_image(panel.view))
    # Another scenario or seed redraws the preview.
    panel.controls.source.setCurrentIndex(panel.controls.source.findText("procedural: merge"))
    finish(qapp, panel)
    assert "merge-0 at t = 0" in panel.summary.text()
    panel.controls.seed.setValue(4)
    finish(qapp, panel)
    assert "merge-4 at t = 0" in panel.summary.text()
    # Once a run is shown, changing the controls leaves it alone.
    load(panel, idm_episode)
    panel.controls.seed.setValue(5)
    finish(qapp, panel)
    assert panel.loaded.episode is idm_episode and "CLS" in panel.summary.text()
    assert len(panel.view.replay.frames) == idm_episode.steps + 1


def test_an_export_does_not_cancel_a_running_simulation(qapp, qtbot, panel_ctx, idm_episode, tmp_path: Path) -> None:
    panel = make_panel(qtbot, panel_ctx)
    load(panel, idm_episode)
    panel.controls.planner.setCurrentText("idm")
    panel.run_clicked()
    panel.export_csv(tmp_path / "ep.csv")
    finish(qapp, panel)
    assert (tmp_path / "ep.csv").stat().st_size > 1000
    assert panel.loaded.episode is not idm_episode and panel.loaded.episode.planner == "idm"  # the run finished too


def test_a_folder_of_scenarios_gets_each_files_cls_and_a_click_replays_it(qapp, qtbot, panel_ctx, tmp_path: Path) -> None:
    from engines.core import resource_path

    folder = tmp_path / "mine"
    folder.mkdir()
    shipped = resource_path("planner", "commonroad") / "ZAM_Tutorial-1_2_T-1.xml"
    (folder / shipped.name).write_bytes(shipped.read_bytes())
    (folder / "broken.xml").write_text("<commonRoad><lanelet")
    panel = make_panel(qtbot, panel_ctx)
    panel.open_folder_in(panel.folder, folder)
    assert panel.tabs.currentWidget() is panel.folder
    assert [panel.folder.table.item(r, 0).text() for r in range(2)] == ["ZAM_Tutorial-1_2_T-1.xml", "broken.xml"]
    panel.controls.planner.setCurrentText("idm")
    panel.run_folder()
    assert wait_until(qapp, lambda: not panel.ctx.jobs.running, 300)
    good = [float(panel.folder.table.item(0, c).text()) for c in (1, 2)]
    assert all(0.0 <= v <= 100.0 for v in good)
    assert [panel.folder.table.item(1, c).text() for c in (1, 2)] == ["failed", "failed"]
    assert panel.folder.table.item(1, 1).toolTip()  # the reason, on hover
    assert "idm: mean CLS" in panel.folder.controls.progress.format() + panel.folder.controls.status.text()
    panel.folder.table.cellClicked.emit(0, 0)  # a click replays the file
    finish(qapp, panel)
    assert panel.loaded is not None and panel.loaded.episode.scenario.name.startswith("ZAM_Tutorial")


def shipped_folder(tmp_path: Path, *names: str) -> Path:
    from engines.core import resource_path

    folder = tmp_path / "mine"
    folder.mkdir()
    for name in names:
        (folder / name).write_bytes((resource_path("planner", "commonroad") / name).read_bytes())
    return folder


def test_the_folder_suite_runs_where_the_preferences_say_at_each_run(qapp, qtbot, panel_ctx, settings, monkeypatch, tmp_path: Path) -> None:
    """The shell's executor reaches the engine's suite; a preference changed between runs applies to the next."""
    import engines.planner.suite

    seen: list = []

    def fake_suite(params, progress, cancel):
        seen.append(params)
        scores = {"replay": {"idm": 50.0}, "reactive": {"idm": 75.0}}
        return {"params": {"planners": list(params.planners)}, "per_file": {"ZAM_Tutorial-1_2_T-1": scores}, "failures": [],
                "files_replay": {"idm": {"cls": 50.0}}, "files_reactive": {"idm": {"cls": 75.0}}}

    monkeypatch.setattr(engines.planner.suite, "run_suite", fake_suite)
    panel = make_panel(qtbot, replace(panel_ctx, executor=settings.executor_spec))
    panel.open_folder_in(panel.folder, shipped_folder(tmp_path, "ZAM_Tutorial-1_2_T-1.xml"))
    panel.controls.planner.setCurrentText("idm")
    texts: list[str] = []
    panel.folder_runner.progress.connect(lambda fraction, text: texts.append(text))
    for executor, workers, address in (("ray", 3, "auto"), ("local", 2, "")):
        settings.set_preference("executor", executor)
        settings.set_preference("workers", workers)
        settings.set_preference("ray_address", address)
        panel.run_folder()
        assert wait_until(qapp, lambda: not panel.ctx.jobs.running, 30)
    assert [(p.executor, p.workers, p.ray_address, p.planners) for p in seen] == [("ray", 3, "auto", ("idm",)), ("local", 2, None, ("idm",))]
    assert texts == ["starting on Ray (auto), 3 workers…", "starting on this machine, 2 workers…"]
    assert panel.folder.controls.status.text() == "idm: mean CLS 50.0 / 75.0 (log replay / reactive), on this machine, 2 workers"
    assert panel.folder.table.item(0, 1).text() == "50.0"


def test_a_ray_cluster_that_cannot_be_reached_is_one_sentence(qapp, qtbot, panel_ctx, tmp_path: Path) -> None:
    import socket

    from engines.core.executor import ExecutorSpec

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    panel = make_panel(qtbot, replace(panel_ctx, executor=lambda: ExecutorSpec("ray", 2, address)))
    panel.open_folder_in(panel.folder, shipped_folder(tmp_path, "ZAM_Tutorial-1_2_T-1.xml"))
    panel.controls.planner.setCurrentText("idm")
    panel.run_folder()
    assert wait_until(qapp, lambda: not panel.ctx.jobs.running, 60)
    assert panel.message.text == f"cannot reach a Ray cluster at {address}: connection refused"
    assert panel.folder.controls.status.text() == "failed" and panel.folder.controls.run_button.isEnabled()


def test_an_empty_folder_is_one_sentence(qtbot, panel_ctx, tmp_path: Path) -> None:
    panel = make_panel(qtbot, panel_ctx)
    panel.folder.folderChosen.emit(str(tmp_path))  # what the tab's folder dialog sends
    assert "holds no scenario files" in panel.message.text and panel.folder.folder is None


def test_the_planner_choices_are_the_engines_names(qtbot) -> None:
    from engines.planner.params import GUIDED, PLANNERS
    from engines.planner.procedural import TYPES
    from panels.planner.controls import PlannerControls
    from panels.planner.session import COMPARE

    controls = PlannerControls()
    qtbot.addWidget(controls)

    def items(combo) -> list[str]:
        return [combo.itemText(i) for i in range(combo.count())]

    assert items(controls.planner) == list(PLANNERS) and "frenet" in PLANNERS
    assert set(COMPARE) == {"none", GUIDED, *PLANNERS} and items(controls.compare) == list(COMPARE)
    assert [t.removeprefix("procedural: ") for t in items(controls.source) if t.startswith("procedural: ")] == list(TYPES)
