"""Smoke test of the decide benchmark command and the report (small sizes; no timing is asserted)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_decide_prints_a_row_per_method():
    res = subprocess.run([sys.executable, "-m", "lyra_solver", "bench", "decide", "--servers", "40", "--jobs", "80",
                          "--repeat", "1"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    rows = [line for line in res.stdout.splitlines() if line.startswith("| ") and "median" not in line]
    assert [r.split("|")[1].strip() for r in rows] == ["exact", "greedy", "hull"]


def test_generated_snapshot_is_valid_and_deterministic():
    from lyra_solver import io
    from lyra_solver.bench.generate import generate_snapshot

    a = io.encode(generate_snapshot(servers=60, jobs=200, seed=9))
    assert a == io.encode(generate_snapshot(servers=60, jobs=200, seed=9))
    snap = io.parse_snapshot(a)
    assert len(snap.jobs) == 200 and any(j.placement for j in snap.jobs)
    assert {type(j.throughput).__name__ for j in snap.jobs} == {"PowerThroughput", "TableThroughput",
                                                                 "ProfileThroughput"}
