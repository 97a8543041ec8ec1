"""Declared dependencies match the imports: every runtime dependency and every extra is imported by the package
(lazily is fine), and every third-party module the package imports is declared (runtime or an extra)."""
from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("solver", "formulations", "heuristics", "bench")
#: Distribution name -> the module it installs, where the two differ (CuPy ships one wheel per CUDA version).
MODULE_OF = {"pyyaml": "yaml", "cupy_cuda12x": "cupy", "cupy_cuda13x": "cupy"}
#: Extras whose library is imported by work announced in the design but not landed yet (name -> where).
PENDING: dict[str, str] = {}
#: Extras used as tools or by the tests, not imported by the package.
TOOLS = {"test"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].strip().lower().replace("-", "_")


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _imports() -> dict[str, set[str]]:
    """Top-level module name -> files of the package that import it (function-level imports included)."""
    found: dict[str, set[str]] = {}
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [node.module]
                for name in names:
                    found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


def _third_party(imports: dict[str, set[str]]) -> set[str]:
    return {m for m in imports if m not in sys.stdlib_module_names and m not in ("lyra_solver", "__future__")}


def test_every_runtime_dependency_is_imported():
    imports = _imports()
    for requirement in _project()["dependencies"]:
        name = _name(requirement)
        module = MODULE_OF.get(name, name)
        assert module in imports, f"{requirement} is declared but nothing in {FOLDERS} imports {module}"


def test_every_extra_is_imported_or_pending():
    imports = _imports()
    for extra, requirements in _project()["optional-dependencies"].items():
        if extra in TOOLS:
            continue
        for requirement in requirements:
            name = _name(requirement)
            module = MODULE_OF.get(name, name)
            assert module in imports or module in PENDING, f"extra {extra!r}: {requirement} is imported nowhere"


def test_every_third_party_import_is_declared():
    project = _project()
    declared = {_name(r) for r in project["dependencies"]}
    for extra, requirements in project["optional-dependencies"].items():
        if extra not in TOOLS:
            declared |= {_name(r) for r in requirements}
    declared = {MODULE_OF.get(d, d) for d in declared}
    missing = {m: sorted(files) for m, files in _imports().items() if m in _third_party({m: files})
               and m not in declared}
    assert not missing, f"imported but not declared: {missing}"


def test_lower_bounds_are_stated():
    for requirement in _project()["dependencies"]:
        assert ">=" in requirement, f"{requirement}: give the lowest release with the APIs the code calls"
