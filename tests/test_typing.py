"""Types that hold for a user of the package: a typed script checked by ``mypy --strict``.

``decide`` keeps its signature for type checkers (its decorator is typed with ``ParamSpec``), its options are
``Literal`` types, so a misspelt option value is a type error. mypy finds the package as installed (the README's
``pip install -e .`` puts the repository, where ``lyra_solver`` lies at its own name, on sys.path with a plain
.pth file), with no ``MYPYPATH``; ``--follow-imports=silent`` keeps the check to the user's script.
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


def run(data: bytes) -> int:
    snap: Snapshot = parse_snapshot(data)
    d: Decision = decide(snap, allocation="greedy", queue="fifo", packing="gimbal")
    return d.summary.preemptions


reveal_type(decide)
decide(parse_snapshot(b""), allocation="exactt")
'''


def test_a_typed_user_script_passes_mypy_strict_and_a_misspelt_option_does_not(tmp_path):
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
    assert len(errors) == 1 and ":11: error:" in errors[0] and "exactt" in errors[0], out.stdout
    assert out.returncode == 1
