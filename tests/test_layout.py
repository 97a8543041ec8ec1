"""The import directions of the design: solver -> heuristics -> formulations, bench -> the rest;
formulations imports no other package of the project; only solver/cli.py imports bench."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("solver", "formulations", "heuristics", "bench")
ALLOWED = {
    "formulations": set(),
    "heuristics": {"formulations"},
    "solver": {"heuristics", "formulations"},
    "bench": {"solver", "heuristics", "formulations"},
}


def imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found.update(n.split(".")[0] for n in names if n.split(".")[0] in PACKAGES)
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_import_directions(package):
    for path in sorted((ROOT / package).rglob("*.py")):
        others = imported_packages(path) - {package}
        allowed = set(ALLOWED[package])
        if path == ROOT / "solver" / "cli.py":
            allowed.add("bench")
        assert others <= allowed, f"{path.relative_to(ROOT)} imports {sorted(others - allowed)}"
