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
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engines.core import default_threads

from . import __version__
from .settings import Settings
from .theme import THEMES


class PreferencesDialog(QDialog):
    """Device, torch threads and theme. Threads apply at the next start (torch allows it once)."""

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
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(note)
        layout.addWidget(buttons)

    def values(self) -> dict[str, Any]:
        return {"device": self.device.currentText(), "threads": self.threads.value(), "theme": self.theme.currentText()}

    def accept(self) -> None:
        values = self.values()
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
