"""Preferences and About. Both open non-modally-blocking (``open()``), never ``exec()``."""

from __future__ import annotations

import platform
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engines.core import default_threads
from engines.core.executor import ray_address_problem

from . import __version__
from .settings import Settings
from .theme import THEMES

BATCH_RUNS = {"local": "this machine", "ray": "Ray cluster"}  # the executor preference and what the dialog calls it


class PreferencesDialog(QDialog):
    """Device, torch threads, theme and where batch runs go. Threads apply at the next start (torch
    allows it once); the rest at once. A bad Ray address is refused here, in one sentence, rather
    than at the next run."""

    applied = Signal(dict)

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("preferencesDialog")
        self.setWindowTitle("Preferences")
        self.settings = settings
        self.device = QComboBox()
        self.device.addItems(["auto", "cpu", "cuda"])
        self.device.setCurrentText(settings.preference("device"))
        self.threads = QSpinBox()
        self.threads.setRange(0, 256)
        self.threads.setSpecialValueText(f"automatic ({default_threads()})")
        self.threads.setValue(settings.preference("threads"))
        self.theme = QComboBox()
        self.theme.addItems(list(THEMES))
        self.theme.setCurrentText(settings.preference("theme"))
        form = QFormLayout()
        form.addRow("Compute device", self.device)
        form.addRow("Torch threads", self.threads)
        form.addRow("Theme", self.theme)
        note = QLabel("A new thread count takes effect at the next start.")
        note.setWordWrap(True)
        self.executor = QComboBox()
        for kind, text in BATCH_RUNS.items():
            self.executor.addItem(text, kind)
        self.executor.setCurrentIndex(max(0, self.executor.findData(settings.preference("executor"))))
        self.executor.setToolTip("Where the planner's suite on a folder and the segmentation benchmark run; their results do not depend on it")
        self.workers = QSpinBox()
        self.workers.setRange(1, 4096)
        self.workers.setValue(max(1, settings.preference("workers")))
        self.workers.setToolTip("Tasks run at once: processes on this machine, or Ray tasks")
        self.ray_address = QLineEdit(settings.preference("ray_address"))
        self.ray_address.setPlaceholderText("empty: start a Ray here")
        self.ray_address.setToolTip("auto (the cluster this machine belongs to) or HOST:PORT of its head; empty: start a Ray on this machine")
        self.executor.currentIndexChanged.connect(self._kind_changed)
        batch = QFormLayout()
        batch.addRow("Run on", self.executor)
        batch.addRow("Workers", self.workers)
        batch.addRow("Ray address", self.ray_address)
        group = QGroupBox("Batch runs")
        group.setLayout(batch)
        self.problem = QLabel()
        self.problem.setObjectName("preferencesProblem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #b3261e;")
        self.problem.hide()
        self._kind_changed()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(note)
        layout.addWidget(group)
        layout.addWidget(self.problem)
        layout.addWidget(buttons)

    def _kind_changed(self, *_: Any) -> None:
        self.ray_address.setEnabled(self.executor.currentData() == "ray")

    def values(self) -> dict[str, Any]:
        return {
            "device": self.device.currentText(),
            "threads": self.threads.value(),
            "theme": self.theme.currentText(),
            "executor": self.executor.currentData(),
            "workers": self.workers.value(),
            "ray_address": self.ray_address.text().strip(),
        }

    def accept(self) -> None:
        """Store the values, unless the Ray address of a Ray choice is malformed: then say why and stay open."""
        values = self.values()
        problem = ray_address_problem(values["ray_address"]) if values["executor"] == "ray" and values["ray_address"] else None
        if problem:
            self.problem.setText(f"{problem[:1].upper()}{problem[1:]}.")
            self.problem.show()
            self.ray_address.setFocus()
            return
        for key, value in values.items():
            self.settings.set_preference(key, value)
        self.applied.emit(values)
        super().accept()


def version_table(torch_info: dict[str, Any] | None) -> dict[str, str]:
    """Versions shown in About; torch facts arrive from the background warm-up job."""
    import numpy
    import pyqtgraph
    import PySide6

    rows = {
        "Workbench": __version__,
        "Python": platform.python_version(),
        "PySide6 / Qt": f"{PySide6.__version__} / {PySide6.QtCore.qVersion()}",
        "pyqtgraph": pyqtgraph.__version__,
        "NumPy": numpy.__version__,
    }
    if torch_info:
        rows["torch"] = str(torch_info.get("torch"))
        rows["Device"] = str(torch_info.get("device")) + (f" ({torch_info['gpu']})" if torch_info.get("gpu") else "")
        rows["Torch threads"] = str(torch_info.get("torch_threads"))
    else:
        rows["torch"] = "loading…"
    return rows


class AboutDialog(QDialog):
    def __init__(self, torch_info: dict[str, Any] | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("aboutDialog")
        self.setWindowTitle("About Workbench")
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.set_torch_info(torch_info)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)
        layout.addWidget(buttons)

    def set_torch_info(self, torch_info: dict[str, Any] | None) -> None:
        """Fill the table; called again when the background torch warm-up reports."""
        rows = version_table(torch_info)
        table = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in rows.items())
        self.label.setText(
            "<h2>Workbench</h2><p>Five ICLR 2025 methods to try hands-on: GrabS segmentation, "
            "Diffusion Planner, FlashMask, tree-diffusion sketching and CB-SOM topographic maps.</p>"
            f"<table cellspacing=6>{table}</table>"
        )
