"""The method tables (:mod:`lyra_solver.formulations.methods`) are the one place a method is named: every list of
method names is derived from them, and adding a method is one module and one table row.

The toy-method test shows it on a copy of the source tree: one new module (a heuristic) and one row in the MCKP
table, and the front door, the round options, the names a decision reports (with ``-thinned``), the command
line's choices, the JSON Schemas, the benchmark suites and the fuzzer's lists all pick it up; a round run with it
reports it and its decision parses and passes the checker. The same for a heuristic of ``lyra_solver.heuristics``:
one module there and one row in the reclaim table, and the reclaim front door runs it, ``decide`` reaches it
through that door (``reclaim="toy"``) and reports it. The only other lines to write are the ``Literal`` types
spelled out for type checkers, which :func:`test_the_static_literals_match_the_tables` keeps equal to the tables
(in the copy, it names exactly those). Here, in the real tree, the toy methods are nowhere.
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from lyra_solver.formulations import mckp, methods, packing, placement, reclaim, vocabulary

ROOT = Path(__file__).resolve().parents[2]

TOY_MODULE = '''"""A toy MCKP heuristic: every class's lightest item (feasible whenever the instance is)."""
from __future__ import annotations

import time

import numpy as np
from lyra_solver.formulations.mckp._types import MCKPProblem, MCKPResult, make_result


def solve_toy(problem: MCKPProblem, *, time_limit: float | None = None) -> MCKPResult:
    """The lightest item of each class, O(N)."""
    start = time.perf_counter()
    masked = np.where(problem.valid_mask(), problem.weights, np.iinfo(np.int64).max)
    return make_result(problem, np.argmin(masked, axis=1), None, proven=False, start=start, method="toy",
                       backend_status="lightest")
'''
TOY_ROW = '    _Row("toy", "toy:solve_toy", "heuristic", decide=True),\n'

TOY_RECLAIM_MODULE = '''"""A toy reclaim heuristic: the first servers by index."""
from __future__ import annotations

import time

from lyra_solver.formulations import Status
from lyra_solver.formulations.reclaim import ReclaimProblem, ReclaimResult, result_for, target_count


def toy_reclaim(problem: ReclaimProblem) -> ReclaimResult:
    """Servers 0, 1, ... up to the count asked, O(S)."""
    start = time.perf_counter()
    return result_for(problem, range(target_count(problem) or 0), status=Status.FEASIBLE, bound=None, gap=None,
                      start=start, method="toy", backend_status="first servers")
'''
TOY_RECLAIM_ROW = '    _Row("toy", "lyra_solver.heuristics.toy:toy_reclaim", "heuristic", decide=True),\n'

TOY_PLACEMENT_MODULE = '''"""A toy placement heuristic: best fit decreasing under another name."""
from __future__ import annotations

import dataclasses

from lyra_solver.formulations.placement import PlacementProblem, PlacementResult
from lyra_solver.heuristics.placement import best_fit_decreasing


def toy_place(problem: PlacementProblem, *, keep_current: bool = True, evaluate: bool = True) -> PlacementResult:
    """Best fit decreasing's answer, reported as the toy's."""
    res = best_fit_decreasing(problem, keep_current=keep_current, evaluate=evaluate)
    return dataclasses.replace(res, method="toyplace")
'''
TOY_PLACEMENT_ROW = '    _Row("toyplace", "lyra_solver.heuristics.toyplace:toy_place", "heuristic", decide=True),\n'

PROBE = r'''
import json, sys
from lyra_solver.formulations import methods, mckp, vocabulary
from lyra_solver.formulations.mckp import solve_mckp
from lyra_solver import cli, decide, io, types
from lyra_solver.check import check_decision
from lyra_solver.bench.suites import load_suite
from lyra_solver.bench import fuzz

def choices(command, option):
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices[command]
    return list(next(a for a in sub._actions if option in a.option_strings).choices)

snap = io.load_snapshot(sys.argv[1])
d = decide(snap, allocation="toy")
parsed = io.parse_decision(io.encode(d))
res = solve_mckp([[0, 1], [0, 2]], [[0.0, 4.0], [0.0, 3.0]], 2, method="toy")
from lyra_solver.formulations import reclaim
from lyra_solver.formulations.reclaim import ReclaimProblem, solve_reclaim
rp = ReclaimProblem.build(server_gpus=[8, 8, 8], job_workers=[1], job_min=[1], job_gpus_per_worker=[1],
                          restart_cost=[1.0], preempt_cost=[9.0], host_job=[0], host_server=[0], host_count=[1],
                          count=2)
rres = solve_reclaim(rp, method="toy")
dr = decide(snap, reclaim="toy")
from lyra_solver.formulations import placement
dp = decide(snap, placement="toyplace")
print(json.dumps({
    "placement door": list(placement.METHODS), "PLACEMENTS": list(vocabulary.PLACEMENTS),
    "cli decide --placement": choices("decide", "--placement"),
    "decision placement": [io.parse_decision(io.encode(dp)).summary.methods.get("placement"),
                           list(check_decision(snap, dp)), io.encode(dp) == io.encode(decide(snap)).replace(
                               b'"placement":"bfd"', b'"placement":"toyplace"')],
    "reclaim door": list(reclaim.METHODS), "reclaim answer": [type(rres).__name__, rres.method, list(rres.servers)],
    "RECLAIMS": list(vocabulary.RECLAIMS), "cli decide --reclaim": choices("decide", "--reclaim"),
    "bench reclaim": [[m.name, m.kind] for m in load_suite("reclaim").methods()],
    "decision reclaim": [io.parse_decision(io.encode(dr)).summary.methods.get("reclaim"),
                         dr.servers.reclaim, list(check_decision(snap, dr))],
    "front door": list(mckp.METHODS), "answer": [res.method, list(res.choice)],
    "MCKP_METHODS": list(vocabulary.MCKP_METHODS), "ALLOCATIONS": list(vocabulary.ALLOCATIONS),
    "ALLOCATION_METHOD": vocabulary.ALLOCATION_METHOD, "STEP_METHODS": list(vocabulary.STEP_METHODS),
    "cli mckp --method": choices("mckp", "--method"), "cli decide --allocation": choices("decide", "--allocation"),
    "schema decision": json.dumps(types.json_schema("decision")),
    "schema mckp-answer": json.dumps(types.json_schema("mckp-answer")),
    "bench mckp": [[m.name, m.kind] for m in load_suite("mckp").methods()],
    "bench decide": [m.name for m in load_suite("decide").methods()],
    "fuzz overrun": list(fuzz.OVERRUN_MCKP_METHODS),
    "decision": [parsed.summary.methods.get("allocation"), list(check_decision(snap, d))],
}))
'''


def _copy_tree(dest: Path) -> None:
    """The repository's files as git lists them (links kept as links)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    for name in files:
        src, out = ROOT / name, dest / name
        if src.is_symlink():
            out.parent.mkdir(parents=True, exist_ok=True)
            out.symlink_to(os.readlink(src))
        elif src.is_file() and not name.startswith(("tests/", "docs/", "scripts/")):
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out)


def static_literals(path: Path) -> dict[str, tuple[str, ...]]:
    """The ``Literal[...]`` aliases spelled out in ``path`` (those under ``if TYPE_CHECKING:`` included)."""
    out = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Subscript) and getattr(node.value.value, "id", None) == "Literal"):
            items = node.value.slice.elts if isinstance(node.value.slice, ast.Tuple) else [node.value.slice]
            if all(isinstance(e, ast.Constant) for e in items):
                out[node.targets[0].id] = tuple(e.value for e in items)
    return out


def lagging_literals(root: Path) -> list[str]:
    """The spelled-out ``Literal`` types of ``root``'s tree that differ from the lists derived from the tables."""
    derived = {
        ("formulations/vocabulary.py", "QueueOrder"): vocabulary.QUEUE_ORDERS,
        ("formulations/vocabulary.py", "Allocation"): vocabulary.ALLOCATIONS,
        ("formulations/vocabulary.py", "ReclaimOption"): vocabulary.RECLAIMS,
        ("formulations/vocabulary.py", "PlacementOption"): vocabulary.PLACEMENTS,
        ("formulations/vocabulary.py", "Packing"): vocabulary.PACKINGS,
        ("formulations/mckp/__init__.py", "MCKPMethod"): mckp.METHODS,
        ("formulations/reclaim/__init__.py", "ReclaimMethod"): reclaim.METHODS,
        ("formulations/placement/__init__.py", "PlacementMethod"): placement.METHODS,
        ("formulations/placement/__init__.py", "JointMethod"): placement.JOINT_METHODS,
        ("formulations/packing/__init__.py", "PackingMethod"): packing.METHODS,
    }
    return sorted(f"{path}:{name}" for (path, name), values in derived.items()
                  if static_literals(root / path).get(name) != tuple(values))


def test_the_static_literals_match_the_tables():
    assert lagging_literals(ROOT) == []
    # and the run-time Literal types (what msgspec and the JSON Schemas read) are the derived tuples
    assert typing.get_args(vocabulary.Allocation) == vocabulary.ALLOCATIONS
    assert typing.get_args(vocabulary.QueueOrder) == vocabulary.QUEUE_ORDERS


@pytest.mark.parametrize("family", sorted(methods.TABLES))
def test_every_row_resolves_to_its_function(family):
    table = methods.TABLES[family]
    for name in table.names():
        assert callable(table.function(name)), name
    assert set(table.aliases()) <= set(table.names())


def test_the_lists_are_the_tables():
    assert vocabulary.STEP_METHODS[:9] == ("none", "greedy", "cpsat", "cbc", "bfd", "bfd-fallback", "gimbal",
                                           "lucid", "random")
    assert {f"mckp-{m}-thinned" for m in mckp.METHODS} <= set(vocabulary.STEP_METHODS)
    assert vocabulary.ALLOCATIONS == ("exact", "greedy", "hull") and vocabulary.PACKINGS[0] == "off"
    assert methods.MCKP.names() == mckp.METHODS and mckp.ALIASES == {"auto": "core", "bb": "core"}
    assert reclaim.METHODS == ("cpsat", "cbc", "greedy", "fewest-jobs", "random")
    assert methods.RECLAIM.names(kind="heuristic") == ("greedy", "fewest-jobs", "random")
    assert methods.RECLAIM.names(own=True) == ("cpsat", "cbc")  # the others: lyra_solver.heuristics
    assert placement.METHODS == ("cpsat", "cbc", "bfd") and placement.JOINT_METHODS == ("cpsat", "cbc")
    assert packing.METHODS == ("exact", "cpsat", "brute", "gimbal", "lucid", "random")


def test_a_toy_method_added_to_the_table_appears_in_every_list_and_nowhere_once_removed(tmp_path):
    tree = tmp_path / "tree"
    _copy_tree(tree)
    (tree / "formulations" / "mckp" / "toy.py").write_text(TOY_MODULE)  # one module ...
    table = tree / "formulations" / "methods.py"
    text = table.read_text()
    anchor = '    _Row("gpu", "gpu:solve_gpu", decide=True),\n'
    assert anchor in text
    text = text.replace(anchor, anchor + TOY_ROW)  # ... and one row
    (tree / "heuristics" / "toy.py").write_text(TOY_RECLAIM_MODULE)  # a heuristic: one module ...
    anchor = '    _Row("random", "lyra_solver.heuristics.reclaim:random_reclaim", "heuristic"),\n'
    assert anchor in text
    text = text.replace(anchor, anchor + TOY_RECLAIM_ROW)  # ... and one row
    (tree / "heuristics" / "toyplace.py").write_text(TOY_PLACEMENT_MODULE)  # a placement heuristic: one module ...
    anchor = '    _Row("bfd", "lyra_solver.heuristics.placement:best_fit_decreasing", "heuristic", decide=True),\n'
    assert anchor in text
    table.write_text(text.replace(anchor, anchor + TOY_PLACEMENT_ROW))  # ... and one row
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", PROBE, str(ROOT / "examples" / "cluster.json")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout)
    assert got["front door"][-1] == "toy" and got["answer"] == ["toy", [0, 0]]
    assert "toy" in got["MCKP_METHODS"] and got["ALLOCATIONS"][-1] == "toy" and got["ALLOCATION_METHOD"]["toy"] == "toy"
    assert {"mckp-toy", "mckp-toy-thinned"} <= set(got["STEP_METHODS"])
    assert "toy" in got["cli mckp --method"] and "toy" in got["cli decide --allocation"]
    assert '"mckp-toy-thinned"' in got["schema decision"] and '"toy"' in got["schema mckp-answer"]
    assert ["toy", "heuristic"] in got["bench mckp"] and "toy" in got["bench decide"]
    assert "toy" in got["fuzz overrun"]
    assert got["decision"] == ["mckp-toy", []]  # decide ran it, its decision parses and the checker passes it
    # the heuristic: its front door runs it, decide reaches it through that door and reports it
    assert got["reclaim door"][-1] == "toy" and got["reclaim answer"] == ["ReclaimResult", "toy", [0, 1]]
    assert got["RECLAIMS"] == ["greedy", "toy", "exact"] and "toy" in got["cli decide --reclaim"]
    assert ["toy", "heuristic"] in got["bench reclaim"]
    assert got["decision reclaim"] == ["toy", ["infer-0"], []]  # the first loaned server of the example
    # a placement heuristic: the option offers it and decide places with it (the same workers as bfd, its name)
    assert got["placement door"][-1] == "toyplace" and got["PLACEMENTS"] == ["bfd", "toyplace", "exact"]
    assert "toyplace" in got["cli decide --placement"]
    assert got["decision placement"] == ["toyplace", [], True]
    # what a type checker reads is spelled out: the copy's lagging Literal types are exactly these two
    stale = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[2]); "
                            "from test_method_tables import lagging_literals; from pathlib import Path; "
                            "print(lagging_literals(Path(sys.argv[1])))", str(tree), str(Path(__file__).parent)],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    lagging = ("['formulations/mckp/__init__.py:MCKPMethod', 'formulations/placement/__init__.py:PlacementMethod', "
               "'formulations/reclaim/__init__.py:ReclaimMethod', 'formulations/vocabulary.py:Allocation', "
               "'formulations/vocabulary.py:PlacementOption', 'formulations/vocabulary.py:ReclaimOption']")
    assert stale.stdout.strip() == lagging, stale.stderr[-2000:]
    # removed: the real tree has no toy anywhere
    assert "toy" not in mckp.METHODS and "toy" not in vocabulary.ALLOCATIONS
    assert "toy" not in reclaim.METHODS and "toy" not in vocabulary.RECLAIMS
    assert not any("toy" in m for m in vocabulary.STEP_METHODS)
    assert not (ROOT / "formulations" / "mckp" / "toy.py").exists()
    assert not (ROOT / "heuristics" / "toy.py").exists()
    assert "toyplace" not in placement.METHODS and "toyplace" not in vocabulary.PLACEMENTS
    assert not (ROOT / "heuristics" / "toyplace.py").exists()
