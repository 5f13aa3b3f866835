"""End to end: the window opens every dock, runs each panel's example, and draws something."""

from __future__ import annotations

from pathlib import Path

import pytest

from engines.core import METHODS
from workbench.screenshot import grab_image, grab_to_png, is_blank

from ..conftest import wait_until


@pytest.mark.gl
def test_every_dock_opens_runs_its_example_and_is_not_blank(qapp, qtbot, main_window, tmp_path: Path) -> None:
    for name in METHODS:
        panel = main_window.show_panel(name)
        qtbot.waitUntil(lambda: main_window.docks[name].isVisible())
        outcome: list[str] = []
        panel.runner.finished.connect(lambda r: outcome.append("finished"))
        panel.runner.failed.connect(lambda text: outcome.append(f"failed: {text}"))
        panel.runner.errored.connect(lambda text, tb: outcome.append(f"error: {text}\n{tb}"))
        assert main_window.run_panel(name), f"{name}: no example to run"
        assert wait_until(qapp, lambda: outcome and not panel.runner.busy, 600), f"{name}: example did not finish"
        assert outcome == ["finished"], f"{name}: {outcome}"
        wait_until(qapp, lambda: False, 0.2)
        image = grab_image(main_window.docks[name])
        assert not is_blank(image), f"the {name} dock rendered blank"
        grab_to_png(main_window.docks[name], tmp_path / f"{name}.png")
    whole = grab_image(main_window)
    assert not is_blank(whole)
