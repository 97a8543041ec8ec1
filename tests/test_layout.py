"""The layout of DESIGN: one installed name (``lyra_solver``), and the import directions between folders.

``solver -> heuristics -> formulations``, ``solver -> formulations``, ``bench -> the rest``; ``formulations``
imports no other folder of the project; only ``solver/cli.py`` imports ``bench``.
"""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("solver", "formulations", "heuristics", "bench")
#: Installed package of each folder (setuptools package-dir in pyproject.toml).
INSTALLED = {"solver": "lyra_solver", "formulations": "lyra_solver.formulations",
             "heuristics": "lyra_solver.heuristics", "bench": "lyra_solver.bench"}
ALLOWED = {
    "formulations": set(),
    "heuristics": {"formulations"},
    "solver": {"heuristics", "formulations"},
    "bench": {"solver", "heuristics", "formulations"},
}


def folder_of(module: str) -> str | None:
    """The project folder that an installed module name lives in (None: not ours)."""
    parts = module.split(".")
    if parts[0] != "lyra_solver":
        return None
    if len(parts) > 1 and parts[1] in ("formulations", "heuristics", "bench"):
        return parts[1]
    return "solver"


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT)
    folder, rest = rel.parts[0], list(rel.with_suffix("").parts[1:])
    if rest and rest[-1] == "__init__":
        rest.pop()
    return ".".join([INSTALLED[folder], *rest])


def imported_modules(source: str, module: str, is_package: bool = False) -> set[str]:
    """Absolute names of every module that ``source`` (the text of ``module``) imports, relative ones resolved."""
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                found.add(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                found.add(node.module)
    return found


@pytest.mark.parametrize("folder", FOLDERS)
def test_import_directions(folder):
    for path in sorted((ROOT / folder).rglob("*.py")):
        mods = imported_modules(path.read_text(), module_name(path), path.name == "__init__.py")
        bare = sorted(m for m in mods if m.split(".")[0] in FOLDERS)
        assert not bare, f"{path.relative_to(ROOT)} imports {bare}: use the installed names (lyra_solver...)"
        others = {folder_of(m) for m in mods} - {None, folder}
        allowed = set(ALLOWED[folder])
        if path == ROOT / "solver" / "cli.py":
            allowed.add("bench")
        assert others <= allowed, f"{path.relative_to(ROOT)} imports {sorted(others - allowed)}"


def test_layout_checker_catches_a_wrong_direction():
    """The checker itself: a formulations module importing the engine is reported."""
    source = "from lyra_solver.pipeline import decide\nfrom ...heuristics import queue\nfrom . import _lp\n"
    mods = imported_modules(source, "lyra_solver.formulations.mckp.core")
    assert mods == {"lyra_solver.pipeline", "lyra_solver.heuristics", "lyra_solver.formulations.mckp"}
    assert {folder_of(m) for m in mods} - {None, "formulations"} == {"solver", "heuristics"}


def test_wheel_holds_only_lyra_solver(tmp_path):
    """A built wheel installs one top-level name, ``lyra_solver`` (and its dist-info), with package data."""
    src = tmp_path / "src"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    for name in files:
        if (ROOT / name).is_symlink():  # the package's links (pyproject.toml): copied as links
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).symlink_to(os.readlink(ROOT / name))
        elif (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    out = tmp_path / "dist"
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                          "-w", str(out), str(src)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    (wheel,) = out.glob("lyra_solver-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert tops - dist_info == {"lyra_solver"}, sorted(tops)
    for expected in ("lyra_solver/__init__.py", "lyra_solver/py.typed", "lyra_solver/data/profiles.json",
                     "lyra_solver/formulations/mckp/__init__.py", "lyra_solver/heuristics/__init__.py",
                     "lyra_solver/bench/__init__.py"):
        assert expected in names, expected
    entry = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "lyra-solver = lyra_solver.cli:main" in entry


def test_the_editable_install_is_a_plain_path_that_type_checkers_follow():
    """``lyra_solver`` lies at its own name in the repository (links to the folders), so the README's
    ``pip install -e .`` puts the repository on sys.path with a static .pth file, not an import hook."""
    assert (ROOT / "lyra_solver").resolve() == ROOT / "solver"
    for folder in ("formulations", "heuristics", "bench"):
        assert (ROOT / "solver" / folder).resolve() == ROOT / folder
    import lyra_solver

    assert Path(lyra_solver.__file__).resolve() == ROOT / "solver" / "__init__.py"
    import site

    pths = [p for d in site.getsitepackages() for p in Path(d).glob("__editable__*lyra_solver*.pth")]
    if pths:  # an editable install of this checkout: the .pth names the repository, no finder is imported
        text = pths[0].read_text()
        assert "import " not in text and Path(text.strip()).resolve() == ROOT
