"""The planner panel's folder tab: a user's folder of scenario files, each file's CLS after a suite
run over the folder, and a click on a file to replay it in the view.

The suite itself is the engine's (``engines.planner.suite.run_suite``); this tab only lists the
files, starts the job on its own slot (so a suite never cancels a replay, nor a replay the suite)
and shows the per-file scores the engine returns. The files run where Preferences ▸ Batch runs
says (the ``ExecutorSpec`` the panel's context gives at each run): here or on a Ray cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QHeaderView, QLabel, QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from engines.core import EngineError
from engines.core.executor import ExecutorSpec

from ..run_controls import RunControls

MODES = ("replay", "reactive")  # the suite's two modes over scenario files: log replay, reactive agents
COLUMNS = ("file", "CLS log replay", "CLS reactive")


class FolderTab(QWidget):
    """Open a folder (``folderChosen``), run the suite over it, click a file to replay it (``fileChosen``)."""

    fileChosen = Signal(str)
    folderChosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.folder: Path | None = None
        self.files: list[Path] = []
        self.open_button = QPushButton("Open folder…")
        self.open_button.setToolTip("A folder of CommonRoad .xml or scenario .json files")
        self.open_button.clicked.connect(self._ask_folder)
        self.label = QLabel("No folder open: open one to list its scenario files.")
        self.label.setWordWrap(True)
        self.controls = RunControls("Run suite on folder")
        self.controls.run_button.setToolTip("Every file with the planner chosen above, in log replay and with reactive agents")
        self.controls.run_button.setEnabled(False)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for c in range(1, len(COLUMNS)):
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.cellClicked.connect(lambda row, _col: self.fileChosen.emit(str(self.files[row])))
        top = QHBoxLayout()
        top.addWidget(self.open_button)
        top.addWidget(self.label, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addWidget(self.controls)
        lay.addWidget(self.table, 1)

    def _ask_folder(self) -> None:
        dialog = QFileDialog(self, "Open a folder of scenarios", str(self.folder or Path.home()))
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.fileSelected.connect(self.folderChosen.emit)  # the panel opens it and says what is wrong with it
        dialog.open()

    def open_folder(self, folder: Path) -> None:
        """List the folder's scenario files (no scores yet); EngineError when it holds none."""
        from engines.planner.recorded import scenario_files

        files = scenario_files(folder)
        self.folder, self.files = folder, files
        self.label.setText(f"{folder.name}: {len(files)} scenario file{'s' if len(files) != 1 else ''}; click one to replay it.")
        self.controls.run_button.setEnabled(bool(files))
        self.table.setRowCount(len(files))
        for r, path in enumerate(files):
            self.table.setItem(r, 0, QTableWidgetItem(path.name))
            for c in range(1, len(COLUMNS)):
                self.table.setItem(r, c, QTableWidgetItem("–"))

    def show_scores(self, result: dict[str, Any]) -> None:
        """Fill the CLS columns from a suite result over this folder (``per_file`` and ``failures``;
        ``where``: where it ran, added by ``suite_job``)."""
        planner = result["params"]["planners"][0]
        failed = {(f["type"], f.get("reactive")): f["error"] for f in result.get("failures", [])}
        for r, path in enumerate(self.files):
            scores = result["per_file"].get(path.stem, {})
            for c, mode in enumerate(MODES, start=1):
                cls = scores.get(mode, {}).get(planner)
                error = failed.get((path.stem, mode == "reactive")) or failed.get((path.stem, None))
                item = QTableWidgetItem(f"{cls:.1f}" if cls is not None else ("failed" if error else "–"))
                if error:
                    item.setToolTip(error)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)
        means = [result[f"files_{mode}"].get(planner, {}).get("cls") for mode in MODES]
        scores = " / ".join("–" if m is None else f"{m:.1f}" for m in means)
        self.controls.say(f"{planner}: mean CLS {scores} (log replay / reactive), {result['where']}")


def suite_job(folder: Path, planner: str, guidance: str, checkpoint: str | None, executor: ExecutorSpec, job) -> dict[str, Any]:
    """One planner over every file of the folder, in both modes, on ``executor`` (the engine's suite:
    each file's progress comes back as it finishes, and the job's cancel stops the tasks, remote ones too)."""
    from engines.planner.suite import GUIDED_TERMS, SuiteParams, run_suite

    if planner == "expert":
        raise EngineError("the suite scores planners against the expert: choose another planner to run over the folder")
    params = SuiteParams(planners=(planner,), guidance=guidance or GUIDED_TERMS, latency_replans=0, checkpoint=checkpoint,
                         scenarios=str(folder), workers=executor.workers, executor=executor.kind, ray_address=executor.address)
    job.progress(0.0, f"starting {executor.describe()}…")  # joining or starting a Ray can take a minute
    return {**run_suite(params, progress=job.progress, cancel=job.cancel), "where": executor.describe()}
