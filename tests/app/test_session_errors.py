"""The shell stays up and says one sentence when what it is given is bad: session files, a panel
that cannot take its part of a session, a WORKBENCH_THREADS torch cannot use, a bad file at start-up."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from PySide6.QtCore import QTimer

from engines.core import EngineError

from ..conftest import wait_until


@pytest.mark.parametrize("version", ['"abc"', "[1]", "{}", "true", "1.5", "null"])
def test_a_session_with_a_malformed_version_is_not_a_session_file(tmp_path: Path, version: str) -> None:
    from workbench.session import load_session

    path = tmp_path / "odd.wbsession.json"
    path.write_text(f'{{"format": "workbench-session", "version": {version}, "panels": {{}}}}')
    with pytest.raises(EngineError, match="odd.wbsession.json is not a Workbench session file"):
        load_session(path)


def test_deeply_nested_json_is_not_a_session_file(tmp_path: Path) -> None:
    from workbench.session import load_session

    path = tmp_path / "deep.wbsession.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(EngineError, match="not a Workbench session file"):
        load_session(path)


def test_a_malformed_session_is_one_message_in_the_window(tmp_path: Path, main_window) -> None:
    path = tmp_path / "odd.wbsession.json"
    path.write_text('{"format": "workbench-session", "version": [1], "panels": {}}')
    assert not main_window.open_session(path)
    assert main_window.statusBar().currentMessage() == "odd.wbsession.json is not a Workbench session file"


def test_a_panel_that_cannot_restore_does_not_stop_the_others(qapp, tmp_path: Path, main_window, monkeypatch) -> None:
    segmentation = main_window.panel("segmentation")

    def broken(state: dict) -> None:
        raise RuntimeError("anchors must be a number")

    monkeypatch.setattr(segmentation, "restore", broken)
    path = tmp_path / "mixed.wbsession.json"
    path.write_text(
        json.dumps({"format": "workbench-session", "version": 1, "panels": {"segmentation": {"anchors": "many"}, "topomap": {"epochs": 7}}})
    )
    assert main_window.open_session(path)
    assert main_window.panel("topomap").controls.epochs.value() == 7
    assert main_window.statusBar().currentMessage() == "Could not restore the segmentation panel: anchors must be a number"
    assert wait_until(qapp, lambda: not main_window.jobs.running, 60)


def test_a_bad_thread_count_is_said_in_the_status_bar(qapp, main_window, monkeypatch) -> None:
    device = importlib.import_module("engines.core.device")  # the module, not the function of that name

    monkeypatch.setenv("WORKBENCH_THREADS", "abc")
    monkeypatch.setattr(device, "_threads_applied", False)  # as in a fresh process: the variable is read
    unexpected = []
    main_window.jobs.unexpectedError.connect(lambda msg, tb: unexpected.append(msg))
    main_window.start_warmup()
    assert wait_until(qapp, lambda: not main_window.jobs.running, 60)
    assert main_window.device_label.text() == "torch: not loaded"
    assert main_window.statusBar().currentMessage() == "WORKBENCH_THREADS must be a whole number of at least 1 (got 'abc')"
    assert not unexpected


def test_a_bad_attention_file_opened_at_start_up_stays_said(qapp, tmp_path: Path, main_window) -> None:
    """As `workbench gui bad.flashmask.json` does: the open is queued after the first paint, and the
    panel's own first analysis must not wipe the sentence about the file."""
    bad = tmp_path / "bad.flashmask.json"
    bad.write_text("{}")
    QTimer.singleShot(0, lambda: main_window.open_path(bad))
    assert wait_until(qapp, lambda: main_window.docks["attention"].panel is not None, 30)
    panel = main_window.docks["attention"].panel
    assert wait_until(qapp, lambda: bool(panel.message.text), 60)
    assert wait_until(qapp, lambda: not main_window.jobs.running, 60)
    wait_until(qapp, lambda: False, 1.5)  # past the panel's first-view delay
    assert wait_until(qapp, lambda: not main_window.jobs.running, 60)
    assert "bad.flashmask.json" in panel.message.text or "vectors" in panel.message.text, panel.message.text
