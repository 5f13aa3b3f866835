"""The segmentation panel's Bench tab: a folder of labelled rooms (PLY with an 'instance' field, as
`workbench segmentation scenes` writes them, or the user's own), every chosen method over it, AP
with every proposal and with the confirmed segments only.

The benchmark is the engine's (``engines.segmentation.bench.run_bench``, what `segmentation bench`
prints); this tab lists the rooms, starts the job on its own slot (a benchmark never cancels a
segmentation, nor a segmentation the benchmark) and shows the numbers it returns. The rooms run
where Preferences ▸ Batch runs says (the ``ExecutorSpec`` the panel's context gives at each run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engines.core import EngineError
from engines.core.executor import ExecutorSpec

from ..run_controls import RunControls

METHODS = {"grabs": "GrabS search", "grabs_ppo": "GrabS PPO", "dbscan": "DBSCAN"}  # the bench's method names
COLUMNS = ("method", "AP50", "AP25", "AP", "conf. AP50", "s / room")


class BenchTab(QWidget):
    """Open a folder of labelled rooms (``folderChosen``), run the benchmark over it, read the table."""

    folderChosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.folder: Path | None = None
        self.rooms: list[Path] = []
        self.open_button = QPushButton("Open folder…")
        self.open_button.setToolTip("A folder of labelled rooms: PLY files with a ground-truth 'instance' field")
        self.open_button.clicked.connect(self._ask_folder)
        self.label = QLabel("No folder open: open one of labelled rooms to measure AP on them.")
        self.label.setWordWrap(True)
        self.methods = {name: QCheckBox(text) for name, text in METHODS.items()}
        for name in ("grabs", "dbscan"):
            self.methods[name].setChecked(True)
        self.controls = RunControls("Run benchmark")
        self.controls.run_button.setToolTip("Every checked method on every room, with the thresholds of the Thresholds tab")
        self.controls.run_button.setEnabled(False)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.horizontalHeaderItem(4).setToolTip("AP50 of the segments the prior confirmed only (no unconfirmed or nested proposals)")
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for c in range(1, len(COLUMNS)):
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.failures = QLabel("")
        self.failures.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(self.open_button)
        top.addWidget(self.label, 1)
        checks = QHBoxLayout()
        for box in self.methods.values():
            checks.addWidget(box)
        checks.addStretch(1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addLayout(checks)
        lay.addWidget(self.controls)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.failures)

    def _ask_folder(self) -> None:
        dialog = QFileDialog(self, "Open a folder of labelled rooms", str(self.folder or Path.home()))
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.fileSelected.connect(self.folderChosen.emit)  # the panel opens it and says what is wrong with it
        dialog.open()

    def open_folder(self, folder: Path) -> None:
        """List the folder's rooms (no numbers yet); EngineError when it holds no PLY file."""
        rooms = sorted(Path(folder).glob("*.ply"))
        if not rooms:
            raise EngineError(f"{Path(folder).name} holds no .ply rooms (write some with 'workbench segmentation scenes')")
        self.folder, self.rooms = Path(folder), rooms
        self.label.setText(f"{self.folder.name}: {len(rooms)} room{'s' if len(rooms) != 1 else ''}.")
        self.controls.run_button.setEnabled(True)
        self.table.setRowCount(0)
        self.failures.setText("")

    def chosen_methods(self) -> tuple[str, ...]:
        return tuple(name for name, box in self.methods.items() if box.isChecked())

    def show_result(self, result: dict[str, Any]) -> None:
        """Fill the table from a `run_bench` result (``where``: where it ran, added by ``bench_job``)."""
        rows = list(result["methods"].items())
        self.table.setRowCount(len(rows))
        for r, (method, m) in enumerate(rows):
            cells = (
                METHODS.get(method, method),
                f"{m['ap50']:.3f}",
                f"{m['ap25']:.3f}",
                f"{m['ap']:.3f}",
                f"{m['confirmed_ap50']:.3f}",
                f"{m['seconds_per_scene']:.1f}",
            )
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)
        failed = result.get("failed", [])
        names = "; ".join(f"{f['scene']}: {f['error']}" for f in failed)
        self.failures.setText(f"{len(failed)} room{'s' if len(failed) != 1 else ''} left out: {names}" if failed else "")
        self.controls.say(f"{result['scenes']} rooms measured {result['where']}")


def bench_job(folder: Path, params, methods: tuple[str, ...], executor: ExecutorSpec, job) -> dict[str, Any]:
    """Every method on every room of ``folder`` on ``executor`` (the engine's benchmark: each room's
    progress comes back as it finishes, and the job's cancel stops the tasks, remote ones too)."""
    from engines.segmentation.bench import run_bench

    if not methods:
        raise EngineError("tick at least one method to benchmark")
    job.progress(0.0, f"starting {executor.describe()}…")  # joining or starting a Ray can take a minute
    result = run_bench(folder, params, methods, progress=job.progress, cancel=job.cancel, executor=executor)
    result.pop("table", None)
    return {**result, "where": executor.describe()}
