"""Preferences ▸ Batch runs: stored under the CLI's names and read back as the ExecutorSpec a panel's
next batch run gets; a malformed Ray address is refused in one sentence. No Ray starts here."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog

from engines.core.executor import ExecutorSpec


def make_dialog(qtbot, settings):
    from workbench.dialogs import PreferencesDialog

    dialog = PreferencesDialog(settings)
    qtbot.addWidget(dialog)
    return dialog


def test_batch_runs_round_trip_through_the_settings_file(qtbot, settings) -> None:
    from workbench.settings import Settings

    assert settings.executor_spec() == ExecutorSpec("local", 1, None)  # the default: here, one worker
    dialog = make_dialog(qtbot, settings)
    assert dialog.executor.currentText() == "this machine" and not dialog.ray_address.isEnabled()
    dialog.executor.setCurrentIndex(dialog.executor.findData("ray"))
    assert dialog.ray_address.isEnabled()
    dialog.workers.setValue(4)
    dialog.ray_address.setText(" auto ")
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Accepted
    settings.q.sync()
    again = Settings(settings.path)  # what the next start reads from the INI file
    assert [again.preference(k) for k in ("executor", "workers", "ray_address")] == ["ray", 4, "auto"]
    assert again.executor_spec() == ExecutorSpec("ray", 4, "auto")
    shown = make_dialog(qtbot, again)
    assert (shown.executor.currentData(), shown.workers.value(), shown.ray_address.text()) == ("ray", 4, "auto")
    shown.ray_address.clear()  # empty: a Ray started on this machine
    shown.accept()
    assert again.executor_spec() == ExecutorSpec("ray", 4, None)
    again.set_preference("ray_address", "10.0.0.5:6379")
    again.set_preference("executor", "local")  # the address is kept for later, unused by local runs
    assert again.executor_spec() == ExecutorSpec("local", 4, None)


def test_a_malformed_ray_address_is_one_sentence_and_not_stored(qtbot, settings) -> None:
    dialog = make_dialog(qtbot, settings)
    dialog.show()
    dialog.executor.setCurrentIndex(dialog.executor.findData("ray"))
    for bad in ("localhost", "head:99999", "ray://head:10001"):
        dialog.ray_address.setText(bad)
        dialog.accept()
        assert dialog.isVisible() and dialog.result() != QDialog.DialogCode.Accepted  # still open
        text = dialog.problem.text()
        assert dialog.problem.isVisible() and text == f"A Ray address is 'auto' or HOST:PORT (such as 10.0.0.5:6379), not {bad!r}."
        assert settings.preference("executor") == "local" and settings.preference("ray_address") == ""  # nothing stored
    dialog.ray_address.setText("head-node:6379")
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert settings.executor_spec() == ExecutorSpec("ray", 1, "head-node:6379")


def test_a_bare_panel_context_runs_batches_here_on_one_worker(jobs, settings) -> None:
    from panels import PanelContext

    assert PanelContext(jobs, settings).executor() == ExecutorSpec("local", 1, None)
