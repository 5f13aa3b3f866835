"""The segmentation panel's Bench tab: a folder of labelled rooms (PLY with an 'instance' field, as
`workbench segmentation scenes` writes them, or the user's own), every chosen method over it, AP
with every proposal and with the confirmed segments only.

The benchmark is the engine's (``engines.segmentation.bench.run_bench``, what `segmentation bench`
prints); this tab counts the rooms and shows the numbers it returns, and the panel runs it on a slot
of its own (a benchmark never cancels a segmentation, nor a segmentation the benchmark). The rooms run
where Preferences ▸ Batch runs says (the ``ExecutorSpec`` the panel's context gives at each run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QTableWidgetItem, QWidget

from engines.core import EngineError
from engines.core.executor import ExecutorSpec

from ..folder_tab import FolderTab

METHODS = {"grabs": "GrabS search", "grabs_ppo": "GrabS PPO", "dbscan": "DBSCAN"}  # the bench's method names
COLUMNS = ("method", "AP50", "AP25", "AP", "conf. AP50", "s / room")


class BenchTab(FolderTab):
    """A folder of labelled rooms, the benchmark over it with the checked methods, its table."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(
            holds="labelled rooms: PLY files with a ground-truth 'instance' field",
            empty="No folder open: open one of labelled rooms to measure AP on them.",
            run="Run benchmark",
            run_tip="Every checked method on every room, with the thresholds of the Thresholds tab",
            columns=COLUMNS,
            parent=parent,
        )
        self.table.horizontalHeaderItem(4).setToolTip("AP50 of the segments the prior confirmed only (no unconfirmed or nested proposals)")
        self.methods = {name: QCheckBox(text) for name, text in METHODS.items()}
        for name in ("grabs", "dbscan"):
            self.methods[name].setChecked(True)
        checks = QHBoxLayout()
        for box in self.methods.values():
            checks.addWidget(box)
        checks.addStretch(1)
        self.body.insertLayout(1, checks)
        self.failures = QLabel("")
        self.failures.setWordWrap(True)
        self.body.addWidget(self.failures)

    def open_folder(self, folder: Path) -> None:
        """Count the folder's rooms (no numbers yet); EngineError when it holds no PLY file."""
        count = len(list(Path(folder).glob("*.ply")))
        if not count:
            raise EngineError(f"{Path(folder).name} holds no .ply rooms (write some with 'workbench segmentation scenes')")
        self.opened(folder, f"{Path(folder).name}: {count} room{'s' if count != 1 else ''}.", True)
        self.failures.setText("")

    def chosen_methods(self) -> tuple[str, ...]:
        return tuple(name for name, box in self.methods.items() if box.isChecked())

    def show_result(self, result: dict[str, Any]) -> None:
        """Fill the table from a `run_bench` result (``where``: where it ran, added by ``bench_job``)."""
        rows = list(result["methods"].items())
        self.table.setRowCount(len(rows))
        for r, (method, m) in enumerate(rows):
            self.table.setItem(r, 0, QTableWidgetItem(METHODS.get(method, method)))
            numbers = (f"{m['ap50']:.3f}", f"{m['ap25']:.3f}", f"{m['ap']:.3f}", f"{m['confirmed_ap50']:.3f}", f"{m['seconds_per_scene']:.1f}")
            for c, text in enumerate(numbers, start=1):
                self.set_number(r, c, text)
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
