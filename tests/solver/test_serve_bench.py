"""``lyra-solver bench serve`` end to end on a tiny plan: a real server, every answer compared with the CLI's."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

ROOT = Path(__file__).resolve().parents[2]


def test_bench_serve_tiny_plan(tmp_path):
    res = subprocess.run([sys.executable, "-m", "lyra_solver", "bench", "serve", "--workers", "1", "--concurrency",
                          "1,3", "--requests", "12", "--big", "20x60", "--big-requests", "3", "--cli-calls", "1",
                          "--out", str(tmp_path)], capture_output=True, cwd=ROOT, timeout=600)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    table = res.stdout.decode()
    assert "| example | 1 | 3 | 12 | 0 | 0 |" in table and "| 20 x 60 | 1 | 1 | 3 | 0 | 0 |" in table
    doc = json.loads((tmp_path / "results.json").read_text())
    assert len(doc["rows"]) == 4 and all(r["errors"] == 0 and r["mismatches"] == 0 for r in doc["rows"])
    assert all(r["p50_ms"] > 0 and r["rps"] > 0 for r in doc["rows"])


@pytest.mark.parametrize("args", [["--workers", "0"], ["--big", "3y4"], ["--snapshot", "/nonexistent.json"]])
def test_bench_serve_bad_usage_is_exit_2(args):
    res = subprocess.run([sys.executable, "-m", "lyra_solver", "bench", "serve", *args], capture_output=True, cwd=ROOT,
                         timeout=120)
    assert res.returncode == 2
    assert len(res.stderr.decode().strip().splitlines()) == 1
