"""The import graph of the installed package (every ``import`` statement of every module, function-level ones
included, by AST): no cycle between its modules, at any level.

The last two cycles were broken in issue 18: ``values <-> values_gpu`` (their shared types moved to
``value_types``) and the bench/cli group (the suites' declarations moved to ``bench.suites``, the report's command
to ``bench/report/__main__.py``, the parser pieces to ``argparsing``; ``bench fuzz`` is dispatched by the command
line, the fuzzer runs the command through its installed entry point, and the service gets the CLI's parser
from ``serve``'s caller).
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALLED = {"solver": "lyra_solver", "formulations": "lyra_solver.formulations",
             "heuristics": "lyra_solver.heuristics", "bench": "lyra_solver.bench"}


def modules() -> dict[str, tuple[Path, bool]]:
    """Installed module name -> (file, is a package), from the package-dir mapping of pyproject.toml."""
    out = {}
    for folder, package in INSTALLED.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            is_package = rel[-1] == "__init__"
            if is_package:
                rel.pop()
            out[".".join([package, *rel])] = (path, is_package)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``from a import b`` counts ``a`` and, if a module, ``a.b``)."""
    mods = modules()
    graph = {}
    for name, (path, is_package) in mods.items():
        package = name if is_package else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            found.update(n for n in names if n in mods and n != name)
        graph[name] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm), O(V + E)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()

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
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_cycles_finds_a_cycle_and_nothing_else():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {frozenset("abc")}
    assert cycles({"a": {"b"}, "b": set()}) == set()


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert "lyra_solver.steps.scale" in graph and "lyra_solver.formulations.mckp.core" in graph
    assert cycles(graph) == set(), sorted(sorted(c) for c in cycles(graph))
