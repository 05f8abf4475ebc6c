"""No import circles in ``tfnumlint/``.

Read from the source (``ast``): module-level imports, imports inside functions and imports
under ``if TYPE_CHECKING`` all count, since each is a dependency a reader has to follow.  A
circle means two modules each need the other: one of them holds a piece that belongs
elsewhere (issue 26 removed provenance <-> transfer, domains <-> generic, slicer <-> uses,
repro <-> repro_training and the rules package <-> its families).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tfnumlint"


def module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``from . import x`` names module x)."""
    modules = {module_name(p, package): p for p in package.rglob("*.py")}
    root = package.name
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = here.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1])
                    base = f"{base}.{node.module}" if node.module else base
                else:
                    base = node.module or ""
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    deps.add(sub if sub in modules else base)
        graph[name] = {d for d in deps if d in modules and d != name and d.startswith(root)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with two or more modules (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 100  # the walk saw the package
    assert "tfnumlint.analysis.transfer" in graph["tfnumlint.analysis.provenance_calls"]
    assert cycles(graph) == []


def test_a_circle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("def load():\n    from . import fam\n")
    (pkg / "sub" / "fam.py").write_text("from . import load\n")
    (pkg / "a.py").write_text("from .b import thing\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.a import x\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import T\n"
    )
    (pkg / "d.py").write_text("from . import c\n")
    (pkg / "e.py").write_text("from . import a\n")  # imports into a circle, not part of one
    assert sorted(cycles(import_graph(pkg))) == [
        ["pkg.a", "pkg.b"],
        ["pkg.c", "pkg.d"],
        ["pkg.sub", "pkg.sub.fam"],
    ]
