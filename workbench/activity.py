"""The status bar's activity list: one row per running job, with its progress and a Cancel button."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QToolButton, QWidget

from .jobs import Job, JobManager, JobRunner


class ActivityItem(QWidget):
    def __init__(self, job: Job, runner: JobRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.job = job
        self.setObjectName(f"activity-{job.id}")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        self.label = QLabel(f"{runner.name}: {job.label}")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setFixedWidth(120)
        self.bar.setTextVisible(False)
        self.cancel = QToolButton()
        self.cancel.setText("Cancel")
        self.cancel.setToolTip(f"Cancel {job.label}")
        self.cancel.clicked.connect(lambda: runner.cancel() if runner.current is job else job.cancel.cancel())
        layout.addWidget(self.label)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel)

    def set_progress(self, fraction: float, text: str) -> None:
        self.bar.setValue(int(1000 * fraction))
        if text:
            self.bar.setToolTip(text)
            self.label.setToolTip(text)


class ActivityList(QWidget):
    """Lives in the status bar; shows nothing when idle."""

    def __init__(self, jobs: JobManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("activityList")
        self.items: dict[int, ActivityItem] = {}
        self.layout_ = QHBoxLayout(self)
        self.layout_.setContentsMargins(0, 0, 0, 0)
        jobs.jobAdded.connect(self._add)
        jobs.jobProgress.connect(self._progress)
        jobs.jobRemoved.connect(self._remove)
        self.setVisible(False)

    def _add(self, job: Job, runner: JobRunner) -> None:
        item = ActivityItem(job, runner, self)
        self.items[job.id] = item
        self.layout_.addWidget(item)
        self.setVisible(True)

    def _progress(self, job_id: int, fraction: float, text: str) -> None:
        if job_id in self.items:
            self.items[job_id].set_progress(fraction, text)

    def _remove(self, job_id: int) -> None:
        item = self.items.pop(job_id, None)
        if item is not None:
            item.setParent(None)
            item.deleteLater()
        self.setVisible(bool(self.items))
