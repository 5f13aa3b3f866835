"""One Run / Cancel / progress row, the same in every panel.

``follow(runner)`` ties it to a job slot: while a job runs, Run is disabled, Cancel enabled and the
bar shows the fraction with the engine's status text (in the bar, or in the line under it); after
the job the text says how it ended, until the panel says something of its own (``say``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

if TYPE_CHECKING:
    from workbench.jobs import JobRunner

STEPS = 1000  # bar resolution


class RunControls(QWidget):
    """``run_button`` (the panel connects it to what it runs), ``cancel_button``, ``progress`` and,
    unless the text goes in the bar (``text_in_bar``), a word-wrapped ``status`` line under them."""

    def __init__(self, run_text: str, parent: QWidget | None = None, *, text_in_bar: bool = False) -> None:
        super().__init__(parent)
        self.run_button = QPushButton(run_text)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, STEPS)
        self.progress.setTextVisible(text_in_bar)
        self.progress.setFormat("")
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setVisible(not text_in_bar)
        self.text_in_bar = text_in_bar
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)
        row.addWidget(self.progress, 1)
        column.addLayout(row)
        column.addWidget(self.status)

    def follow(self, runner: JobRunner) -> None:
        """Show ``runner``'s jobs here; Cancel cancels its current one."""
        self.cancel_button.clicked.connect(runner.cancel)
        runner.started.connect(lambda *_: self._busy(True, "starting…"))
        runner.progress.connect(self._progress)
        runner.finished.connect(lambda _: self.progress.setValue(STEPS))
        runner.failed.connect(lambda _: self.say("failed"))
        runner.errored.connect(lambda *_: self.say("failed"))
        runner.cancelled.connect(lambda: self.say("cancelled"))
        runner.done.connect(lambda: self._busy(False))

    def say(self, text: str) -> None:
        """Put a short text where the progress text goes (a result's summary, a hint)."""
        if self.text_in_bar:
            self.progress.setFormat(text)
        else:
            self.status.setText(text)

    def _busy(self, on: bool, text: str | None = None) -> None:
        self.run_button.setEnabled(not on)
        self.cancel_button.setEnabled(on)
        if on:
            self.progress.setValue(0)
        if text is not None:
            self.say(text)

    def _progress(self, fraction: float, text: str) -> None:
        self.progress.setValue(int(STEPS * fraction))
        self.say(text)
