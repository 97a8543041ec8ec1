"""Run every docstring example of the installed package, under its installed names only.

Each module of ``lyra_solver`` is imported by its installed name (``lyra_solver.formulations.mckp``, never
``formulations.mckp``: the two would be two copies of one module) and its examples run with
:mod:`doctest`. A module that needs an optional library which is not installed (torch, matplotlib, ...) is
skipped. The front doors must each carry at least one example.
"""
from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil

import lyra_solver
import pytest

#: The installed packages mapped from the repository's top-level folders (an editable install maps them
#: without nesting the folders, so each is walked from its own path).
ROOTS = ("lyra_solver", "lyra_solver.formulations", "lyra_solver.heuristics", "lyra_solver.bench")


def _module_names() -> list[str]:
    names = set(ROOTS)
    for root in ROOTS:
        package = importlib.import_module(root)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{root}."):
            if info.name.rsplit(".", 1)[-1] != "__main__":
                names.add(info.name)
    return sorted(names)


MODULES = _module_names()

#: Public front doors (module, function) that must show at least one example; add yours here once it has one
#: (``decide`` and ``check_decision`` are to follow). Every example of every module runs either way.
FRONT_DOORS = [
    ("lyra_solver.formulations.mckp", "solve_mckp"),
    ("lyra_solver.formulations.reclaim", "solve_reclaim"),
    ("lyra_solver.formulations.placement", "solve_placement"),
    ("lyra_solver.formulations.placement", "solve_joint"),
    ("lyra_solver.formulations.packing", "solve_packing"),
    ("lyra_solver.heuristics.reclaim", "greedy_reclaim"),
    ("lyra_solver.heuristics.reclaim", "fewest_jobs_reclaim"),
    ("lyra_solver.heuristics.reclaim", "random_reclaim"),
    ("lyra_solver.heuristics.placement", "best_fit_decreasing"),
    ("lyra_solver.heuristics.queue", "queue_order"),
    ("lyra_solver.apply", "apply_decision"),
    ("lyra_solver.pipeline", "decide"),
    ("lyra_solver.check", "check_decision"),
]


def _import(name: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and not exc.name.startswith(lyra_solver.__name__):
            pytest.skip(f"{name} needs the optional library {exc.name}")
        raise


@pytest.mark.parametrize("name", MODULES)
def test_examples(name: str) -> None:
    module = _import(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name, module=module):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name} (output above)"


def test_no_module_under_a_second_name() -> None:
    import sys

    for folder in ("solver", "formulations", "heuristics", "bench"):
        assert folder not in sys.modules, f"{folder!r} was imported as a top-level module"


@pytest.mark.parametrize(("module", "function"), FRONT_DOORS)
def test_front_door_has_an_example(module: str, function: str) -> None:
    obj = getattr(_import(module), function)
    tests = doctest.DocTestFinder().find(obj, function, module=inspect.getmodule(obj))
    assert any(t.examples for t in tests), f"{module}.{function} has no Examples section"
