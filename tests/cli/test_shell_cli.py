"""The shell's headless commands and the rules every command follows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from engines.core import METHODS, resource_path


def test_info_json_is_exactly_one_object(cli) -> None:
    out = cli("info", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["device"] == "cpu" and data["torch_threads"] >= 1
    assert "torch" in data["versions"] and "PySide6-Essentials" in data["versions"]


def test_unknown_command_is_one_error_line_and_exit_2(cli) -> None:
    out = cli("frobnicate")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in out.stderr


def test_screenshot_writes_a_png_of_the_window(cli, tmp_path: Path) -> None:
    target = tmp_path / "shot.png"
    out = cli("screenshot", "--out", str(target), "--size", "1300x820", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["out"] == str(target)
    image = QImage(str(target))
    assert (image.width(), image.height()) == (data["width"], data["height"]) == (1300, 820)


def test_screenshot_rejects_absurd_sizes(cli, tmp_path: Path) -> None:
    out = cli("screenshot", "--out", str(tmp_path / "x.png"), "--size", "100000x3")
    assert out.returncode == 2 and out.stderr.startswith("error:") and not (tmp_path / "x.png").exists()


def test_screenshot_refuses_a_non_png_name_before_opening_the_window(cli, tmp_path: Path) -> None:
    out = cli("screenshot", "--out", str(tmp_path / "shot.jpg"))
    assert out.returncode == 2 and "written as .png" in out.stderr and not list(tmp_path.iterdir())
    out = cli("screenshot", "--out", str(tmp_path / "shot"), "--json")  # a bare name becomes a .png
    assert out.returncode == 0 and json.loads(out.stdout)["out"] == str(tmp_path / "shot.png")
    assert QImage(str(tmp_path / "shot.png")).width() > 0


def test_an_unwritable_output_is_one_error_line_before_any_work(cli, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    out = cli("demo", "--out", str(blocker / "sub"), "--methods", "sketcher")
    assert out.returncode == 2 and out.stderr.strip() == f"error: cannot write {blocker / 'sub'}: {blocker} is a file, not a folder"
    # /proc takes no new files, even from root: refused before the segmentation runs (no progress line).
    out = cli("segmentation", "run", str(resource_path("segmentation", "example_scene.ply")), "--out", "/proc/labelled.ply")
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        "error: cannot write /proc/labelled.ply: no file can be created in /proc (No such file or directory)"
    ]


def test_output_paths_are_checked_without_leaving_anything_behind(tmp_path: Path) -> None:
    from engines.core import EngineError
    from workbench.cli.common import output_file, output_folder

    assert output_file(str(tmp_path / "new" / "deeper" / "x.json")) == tmp_path / "new" / "deeper" / "x.json"
    assert output_folder(str(tmp_path / "runs")) == tmp_path / "runs"
    assert list(tmp_path.iterdir()) == []  # nothing created by the check (the command creates what it writes)
    with pytest.raises(EngineError, match="it is a folder"):
        output_file(str(tmp_path))
    (tmp_path / "f").write_text("x")
    with pytest.raises(EngineError, match="is a file, not a folder"):
        output_folder(str(tmp_path / "f"))


def test_gui_without_a_display_says_so(cli) -> None:
    out = cli("gui", env={"DISPLAY": "", "QT_QPA_PLATFORM": "", "WAYLAND_DISPLAY": ""})
    assert out.returncode == 2 and "no display" in out.stderr


def test_demo_reports_every_method(cli, tmp_path: Path) -> None:
    """Every method ships a CLI with a demo: all of them run it and get a panel screenshot."""
    out = cli("demo", "--out", str(tmp_path / "demo"), "--json", "--quiet", timeout=1500)
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads(out.stdout)
    assert (tmp_path / "demo" / "window.png").stat().st_size > 1000
    assert {name: entry["status"] for name, entry in data["methods"].items()} == dict.fromkeys(METHODS, "ok")
    for name, entry in data["methods"].items():
        assert entry["seconds"] >= 0, name
        assert Path(entry["screenshot"]).stat().st_size > 1000, name
        assert "panel_problem" not in entry, entry


def test_shell_bench_runs_and_reports_against_its_targets(cli) -> None:
    """The benchmark itself (not a timing assertion): it measures and names its targets."""
    out = cli("bench", "--starts", "1", "--seconds", "0.5", "--json", "--quiet", timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout)
    assert data["cold_start_s"]["target"] == 2.5 and data["ui_stall_ms"]["target"] == 50.0
    assert 0 < data["cold_start_s"]["median"] < 60
    assert data["ui_stall_ms"]["torch_job"] > 0 and set(data["pass"]) == {"cold_start", "ui_stall"}
