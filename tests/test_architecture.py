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
        # one name for an engine's entry module (what its panel and CLI call), in every engine
        assert (ROOT / "engines" / name / "api.py").exists(), f"engines/{name}/api.py missing"


def test_open3d_is_imported_only_through_the_locked_import() -> None:
    """Two threads importing open3d at once can get a half-initialised pydantic (engines/core/imports.py)."""
    import re

    bare = re.compile(r"^\s*(import open3d|from open3d)", re.M)
    offenders = [
        str(p.relative_to(ROOT))
        for folder in ("engines", "panels", "workbench")
        for p in (ROOT / folder).rglob("*.py")
        if p.name != "imports.py" and bare.search(p.read_text())
    ]
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
                line = path.read_text()[first.start() :].splitlines()[0]
                if not package_first.match(line):
                    offenders.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert offenders == [], f"import torch before its submodules: {offenders}"


PACKAGES = ("engines", "panels", "workbench")
# Import cycles in code this branch may not touch, each to be broken by its owner (nothing else is allowed).
ALLOWED_CYCLES: set[frozenset[str]] = set()
# Panels that still import the shell, owned by another branch, to be moved onto PanelContext's services.
ALLOWED_SHELL_IMPORTS = {
    ("panels.planner.panel", "workbench.screenshot"),  # owned by the planner branch, to be replaced by ctx.save_png
}


def project_imports() -> dict[str, set[str]]:
    """Every project module and the project modules it imports, read from the source (imports
    inside functions included: a lazy import still makes a cycle, it only hides it), except those
    under ``if TYPE_CHECKING:`` (annotations only, never run)."""
    import ast

    modules: dict[str, tuple[Path, bool]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    def type_checking_only(tree: ast.AST) -> set[int]:
        skip = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
        return skip

    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = type_checking_only(tree)
        here = name if is_package else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                deps |= {d for a in node.names if (d := known(a.name))}
            elif isinstance(node, ast.ImportFrom):
                base = here
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                module = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
                if module.split(".")[0] in PACKAGES:
                    deps |= {d for a in node.names if (d := known(f"{module}.{a.name}"))}
        graph[name] = deps - {name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_the_import_graph_is_read_from_every_project_module() -> None:
    graph = project_imports()
    assert {"engines.core", "panels.base", "workbench.jobs", "workbench.cli.main"} <= set(graph)
    assert "engines.core" in graph["workbench.jobs"] and "panels" in graph["workbench.mainwindow"]  # the lazy one in _make_panel
    assert "workbench.jobs" not in graph["panels.base"]  # under TYPE_CHECKING only


def test_the_cycle_finder_finds_a_cycle_hidden_in_a_longer_loop() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    cycles = [c for c in import_cycles(project_imports()) if frozenset(c) not in ALLOWED_CYCLES]
    assert cycles == [], f"import cycles (lazy imports count): {cycles}"


def test_panels_reach_the_shell_only_through_their_context() -> None:
    graph = project_imports()
    shell = sorted((m, d) for m, deps in graph.items() if m.startswith("panels") for d in deps if d.startswith("workbench"))
    assert [pair for pair in shell if pair not in ALLOWED_SHELL_IMPORTS] == [], "panels import workbench: use PanelContext's services"


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    stack = [start]
    while stack:
        for dep in graph.get(stack.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen


SEG = "engines.segmentation"
# The training generator and what trains or tunes on it: the prior (and any prior* module), its data, the policy.
TRAINING_SIDE = tuple(f"{SEG}.{m}" for m in ("categories", "shapes", "scenes", "prior_data", "views", "train", "policy"))


def test_the_evaluation_generator_and_the_training_side_share_no_code() -> None:
    """Issue 55: a benchmark drawn by the training generator's object code measures the training
    distribution. The evaluation generator (`evalgen/`) reaches nothing of engines.segmentation
    outside itself, and nothing on the training side reaches it, directly or through others."""
    graph = project_imports()
    evalgen = {m for m in graph if m == f"{SEG}.evalgen" or m.startswith(f"{SEG}.evalgen.")}
    training = {m for m in graph if m in TRAINING_SIDE or m.startswith(f"{SEG}.prior")}
    assert {f"{SEG}.evalgen.scanner", f"{SEG}.evalgen.furniture"} <= evalgen and set(TRAINING_SIDE) <= training
    leaks = {m: sorted(d for d in reachable(graph, m) if d.startswith(SEG) and d not in evalgen) for m in evalgen}
    assert not any(leaks.values()), f"the evaluation generator imports project segmentation code: {leaks}"
    back = {m: sorted(reachable(graph, m) & evalgen) for m in training}
    assert not any(back.values()), f"the training side imports the evaluation generator: {back}"


def test_reachable_follows_imports_through_other_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": set(), "d": {"a"}}
    assert reachable(graph, "a") == {"b", "c"} and reachable(graph, "c") == set() and "c" in reachable(graph, "d")
