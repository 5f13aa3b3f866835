"""The house rules, checked: engines never import Qt or the GUI; the first paint needs no torch."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("PySide6", "pyqtgraph", "qasync", "workbench", "panels", "shiboken6", "OpenGL")


def engine_modules() -> list[str]:
    names = []
    for path in sorted((ROOT / "engines").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


def test_engine_modules_are_found() -> None:
    names = engine_modules()
    assert "engines.core" in names and "engines.core.progress" in names
    assert all(f"engines.{m}" in names for m in ("segmentation", "planner", "attention", "sketcher", "topomap"))


def test_engines_never_import_qt_or_gui() -> None:
    code = (
        "import importlib, json, sys\n"
        f"names = {engine_modules()!r}\n"
        "for n in names: importlib.import_module(n)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(json.dumps(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    bad = json.loads(out.stdout.strip().splitlines()[-1])
    assert bad == [], f"engine modules pulled in GUI modules: {bad}"


def test_window_and_panel_modules_do_not_import_torch_or_open3d() -> None:
    """Start-up path: building the main window and loading every panel module stays light."""
    code = (
        "import importlib, json, sys\n"
        "import workbench.mainwindow, workbench.app, workbench.cli.main\n"
        "from engines.core import METHODS\n"
        "for m in METHODS: importlib.import_module('panels.' + m)\n"
        "print(json.dumps(sorted(m for m in ('torch', 'open3d', 'sklearn', 'commonroad') if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_method_names_are_one_vocabulary() -> None:
    from engines.core import METHODS

    assert METHODS == ("segmentation", "planner", "attention", "sketcher", "topomap")
    for name in METHODS:
        assert (ROOT / "engines" / name / "__init__.py").exists(), f"engines/{name} missing"
        assert (ROOT / "panels" / name / "__init__.py").exists(), f"panels/{name} missing"


def test_open3d_is_imported_only_through_the_locked_import() -> None:
    """Two threads importing open3d at once can get a half-initialised pydantic (engines/core/imports.py)."""
    import re

    bare = re.compile(r"^\s*(import open3d|from open3d)", re.M)
    offenders = [str(p.relative_to(ROOT)) for folder in ("engines", "panels", "workbench") for p in (ROOT / folder).rglob("*.py")
                 if p.name != "imports.py" and bare.search(p.read_text())]
    assert offenders == [], f"import open3d through engines.core.imports.open3d(): {offenders}"


def test_torch_is_imported_before_any_of_its_submodules() -> None:
    """`import torch.nn.functional` (or `from torch.nn import ...`) as a module's first torch import
    holds that submodule's import lock while it waits for torch itself: if another worker thread is
    importing torch at that moment (the window's warm-up), torch's own import of the submodule
    deadlocks and one of them fails ("partially initialized module 'torch'"; reproduced with two
    threads in a fresh interpreter). `import torch` first makes the second thread simply wait."""
    import re

    any_torch = re.compile(r"^[ \t]*(import torch\b|from torch\b)", re.M)
    package_first = re.compile(r"^\s*(import torch(\s+as\s+\w+)?\s*(#.*)?$|from torch import )")
    offenders = []
    for folder in ("engines", "panels", "workbench"):
        for path in (ROOT / folder).rglob("*.py"):
            first = any_torch.search(path.read_text())
            if first:
                line = path.read_text()[first.start():].splitlines()[0]
                if not package_first.match(line):
                    offenders.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert offenders == [], f"import torch before its submodules: {offenders}"
