"""The engine calls every method of a family through the family's front door (DESIGN "Each family of methods has one
front door"), the heuristics of ``lyra_solver.heuristics`` included: ``solve_reclaim(problem, method="greedy")``,
``solve_placement(problem, method="bfd")``, ``solve_packing(problem, method="gimbal")``, never
``greedy_reclaim(problem)``.

Two checks: no module of the engine (``solver/``, the round's steps included) imports a function that a row of a
front door's method table names in ``lyra_solver.heuristics``, or that function's module (a static scan); and a round
run with each heuristic calls the function the table names at run time (a spy put in its module's place is called,
which a name the step imported itself would bypass).
"""
from __future__ import annotations

import ast
import importlib
import inspect
import os
from pathlib import Path

import pytest
from lyra_solver import decide, load_snapshot
from lyra_solver.formulations.methods import TABLES

ROOT = Path(__file__).resolve().parents[2]

#: (module, function) of every row of a front door's table that is not the door's own method: the heuristics of
#: lyra_solver.heuristics. (The queue orders' table has no door in formulations: ``queue_order`` is its entry.)
ENTRIES = frozenset(tuple(table.row(r.name).entry.split(":")) for table in TABLES.values()
                    if table.package.startswith("lyra_solver.formulations.") for r in table.rows
                    if not table.is_own(r))


def direct_uses(source: str, module: str) -> list[str]:
    """The imports in ``source`` (the text of ``module``) that reach a heuristic of :data:`ENTRIES` past its door:
    its function by name (from its module or a package above it), or its module."""
    package = module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            for alias in node.names:
                for m, f in ENTRIES:
                    if (alias.name == f and (m == base or m.startswith(base + "."))) or f"{base}.{alias.name}" == m:
                        found.append(f"from {base} import {alias.name}")
        elif isinstance(node, ast.Import):
            found.extend(f"import {a.name}" for a in node.names if any(a.name == m for m, _ in ENTRIES))
    return sorted(set(found))


def engine_modules() -> list[tuple[str, Path]]:
    """(installed name, file) of every module of ``solver/`` (its links to the other folders not followed)."""
    out = []
    for folder, _dirs, files in os.walk(ROOT / "solver"):  # os.walk does not enter linked folders
        rel = Path(folder).relative_to(ROOT / "solver").parts
        for name in sorted(files):
            if name.endswith(".py"):
                parts = [*rel] if name == "__init__.py" else [*rel, name[:-3]]
                out.append((".".join(["lyra_solver", *parts]), Path(folder) / name))
    return out


def test_the_entries_are_the_heuristics_of_the_front_doors() -> None:
    assert {f for _, f in ENTRIES} == {"greedy_reclaim", "fewest_jobs_reclaim", "random_reclaim",
                                       "best_fit_decreasing", "gimbal_greedy", "lucid_pairing", "random_pairing"}


def test_the_scan_catches_a_heuristic_called_past_its_door() -> None:
    source = ("from lyra_solver.heuristics.reclaim import greedy_reclaim\n"
              "from lyra_solver.heuristics import best_fit_decreasing\n"
              "from lyra_solver.heuristics import packing\n"
              "import lyra_solver.heuristics.packing\n"
              "from ..heuristics.reclaim import random_reclaim\n"
              "from lyra_solver.heuristics.placement import FreeIndex\n"
              "from lyra_solver.heuristics.queue import queue_order\n"
              "from lyra_solver.formulations.reclaim import solve_reclaim\n")
    assert direct_uses(source, "lyra_solver.steps.reclaim") == [
        "from lyra_solver.heuristics import best_fit_decreasing", "from lyra_solver.heuristics import packing",
        "from lyra_solver.heuristics.reclaim import greedy_reclaim",
        "from lyra_solver.heuristics.reclaim import random_reclaim", "import lyra_solver.heuristics.packing"]


def test_no_engine_module_calls_a_heuristic_past_its_front_door() -> None:
    modules = engine_modules()
    assert "lyra_solver.steps.reclaim" in dict(modules) and len(modules) > 20
    bad = {name: uses for name, path in modules if (uses := direct_uses(path.read_text(), name))}
    assert bad == {}


def crowded():
    """A snapshot where every packing method packs guests (waiting jobs with profiles beside running ones)."""
    import json

    import numpy as np
    from lyra_solver import parse_snapshot
    from lyra_solver.bench.generate import generate_snapshot

    raw = generate_snapshot(servers=6, jobs=40, seed=5, running_share=0.8)
    rng = np.random.default_rng(5)
    for job in raw["jobs"]:
        job["packing"] = {"gpu_util": float(rng.choice([0.23, 0.32, 0.47, 0.65])),
                          "gpu_mem_gb": float(np.round(rng.uniform(1, 30), 1))}
    return parse_snapshot(json.dumps(raw).encode())


def test_the_rounds_below_run_each_method() -> None:
    """The snapshots of the round test: the example reclaims a server, the crowded one packs with every method."""
    assert decide(load_snapshot(ROOT / "examples" / "cluster.json")).summary.methods["reclaim"] == "greedy"
    for method, name in (("gimbal", "gimbal"), ("lucid", "lucid"), ("random", "random"), ("exact", "cpsat")):
        d = decide(crowded(), packing=method, deterministic=True)
        assert d.packing and d.summary.methods["packing"] == name, method


#: Option sets of ``decide`` and the heuristic (module, function) each must reach through its front door.
ROUNDS = [
    ({"reclaim": "greedy"}, ("lyra_solver.heuristics.reclaim", "greedy_reclaim")),
    ({"placement": "bfd"}, ("lyra_solver.heuristics.placement", "best_fit_decreasing")),
    ({"placement": "exact", "deterministic": True}, ("lyra_solver.heuristics.placement", "best_fit_decreasing")),
    ({"packing": "gimbal"}, ("lyra_solver.heuristics.packing", "gimbal_greedy")),
    ({"packing": "lucid"}, ("lyra_solver.heuristics.packing", "lucid_pairing")),
    ({"packing": "random"}, ("lyra_solver.heuristics.packing", "random_pairing")),
    ({"packing": "exact", "deterministic": True}, ("lyra_solver.heuristics.packing", "gimbal_greedy")),
]


@pytest.mark.parametrize(("options", "entry"), ROUNDS, ids=[str(o) for o, _ in ROUNDS])
def test_a_round_reaches_each_heuristic_through_the_table(options, entry, monkeypatch) -> None:
    module = importlib.import_module(entry[0])
    real = getattr(module, entry[1])
    calls = []

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    spy.__signature__ = inspect.signature(real)  # the door reads the options from the signature
    monkeypatch.setattr(module, entry[1], spy)
    snap = crowded() if "packing" in options else load_snapshot(ROOT / "examples" / "cluster.json")
    expected = decide(snap, **options)
    assert calls, f"decide({options}) did not call {entry[1]} through its front door"
    monkeypatch.setattr(module, entry[1], real)
    assert decide(snap, **options) == expected  # the spy changed nothing
