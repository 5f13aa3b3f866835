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

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QTableWidget, QTableWidgetItem, QWidget

from engines.core import EngineError
from engines.core.executor import ExecutorSpec

from ..folder_tab import FolderTab

MODES = ("replay", "reactive")  # the suite's two modes over scenario files: log replay, reactive agents
COLUMNS = ("file", "CLS log replay", "CLS reactive")


class ScenarioFolderTab(FolderTab):
    """A folder of scenario files, the suite over it, a click on a file to replay it (``fileChosen``)."""

    fileChosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(
            holds="CommonRoad .xml or scenario .json files",
            empty="No folder open: open one to list its scenario files.",
            run="Run suite on folder",
            run_tip="Every file with the planner chosen above, in log replay and with reactive agents",
            columns=COLUMNS,
            parent=parent,
        )
        self.files: list[Path] = []
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.cellClicked.connect(lambda row, _col: self.fileChosen.emit(str(self.files[row])))

    def open_folder(self, folder: Path) -> None:
        """List the folder's scenario files (no scores yet); EngineError when it holds none."""
        from engines.planner.recorded import scenario_files

        self.files = scenario_files(folder)
        count = len(self.files)
        self.opened(folder, f"{Path(folder).name}: {count} scenario file{'s' if count != 1 else ''}; click one to replay it.", bool(self.files))
        self.table.setRowCount(count)
        for r, path in enumerate(self.files):
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
                self.set_number(r, c, f"{cls:.1f}" if cls is not None else ("failed" if error else "–"), error or "")
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
