"""Types that hold for a user of the package: a typed script checked by ``mypy --strict``.

``decide`` keeps its signature for type checkers (its decorator is typed with ``ParamSpec``), its options are
``Literal`` types, and so is every front door's ``method=`` (``solve_mckp``, ``solve_reclaim``, ``solve_placement``,
``solve_joint``, ``solve_packing``): a misspelt option value or method is a type error. mypy finds the package as
installed (the README's ``pip install -e .`` puts the repository, where ``lyra_solver`` lies at its own name, on
sys.path with a plain .pth file), with no ``MYPYPATH``; ``--follow-imports=silent`` keeps the check to the user's
script.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = '''\
from lyra_solver import Decision, Snapshot, decide, parse_snapshot
from lyra_solver.formulations.mckp import MCKPResult, solve_mckp
from lyra_solver.formulations.packing import PackingProblem, solve_packing
from lyra_solver.formulations.placement import JointProblem, PlacementProblem, solve_joint, solve_placement
from lyra_solver.formulations.reclaim import ReclaimProblem, solve_reclaim


def run(data: bytes) -> int:
    snap: Snapshot = parse_snapshot(data)
    d: Decision = decide(snap, allocation="greedy", queue="fifo", packing="gimbal")
    r: MCKPResult = solve_mckp([[0, 1]], [[0.0, 1.0]], 1, method="hull")
    return d.summary.preemptions + len(r.choice or ())


def doors(rp: ReclaimProblem, pp: PlacementProblem, jp: JointProblem, kp: PackingProblem) -> None:
    solve_reclaim(rp, method="cbc")
    solve_reclaim(rp, method="greedy")
    solve_placement(pp, method="cpsat")
    solve_placement(pp, method="bfd")
    solve_joint(jp, method="cbc")
    solve_packing(kp, method="brute")
    solve_packing(kp, method="gimbal")


reveal_type(decide)
decide(parse_snapshot(b""), allocation="exactt")
solve_mckp([[0]], [[0.0]], 0, method="coree")
def misspelt(rp: ReclaimProblem, pp: PlacementProblem, jp: JointProblem, kp: PackingProblem) -> None:
    solve_reclaim(rp, method="cpsatt")
    solve_placement(pp, method="bfdd")
    solve_joint(jp, method="bfd")
    solve_packing(kp, method="gimball")
'''

#: The lines of :data:`SCRIPT` that must be type errors (1-based), and the misspelt value each names.
MISSPELT = {i: value for i, line in enumerate(SCRIPT.splitlines(), 1)
            for value in ('allocation="exactt"', 'method="coree"', 'method="cpsatt"', 'method="bfdd"',
                          'solve_joint(jp, method="bfd"', 'method="gimball"') if value in line}


def test_a_typed_user_script_passes_mypy_strict_and_a_misspelt_option_or_method_does_not(tmp_path):
    script = tmp_path / "user.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
                          "--cache-dir", str(tmp_path / "cache"), str(script)],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    lines = [line for line in out.stdout.splitlines() if line.startswith("user.py") or "user.py:" in line]
    revealed = [line for line in lines if "Revealed type" in line]
    errors = [line for line in lines if ": error:" in line]
    assert len(revealed) == 1 and '"Any"' not in revealed[0] and "Literal['greedy']" in revealed[0], out.stdout
    assert {int(e.split(":")[1]) for e in errors} == set(MISSPELT), out.stdout
    for e in errors:
        assert MISSPELT[int(e.split(":")[1])].split('"')[1] in e and "Literal" in e, e
    assert out.returncode == 1
