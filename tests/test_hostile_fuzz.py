"""The fuzzer's new surfaces (issue 23): the simulator's trace and load CSVs and flags, and the packing options;
its forked runner and the judge of clean exits."""
from __future__ import annotations

import json
import random
import time

import pytest


def test_forked_runner_reports_exit_codes_tracebacks_and_hangs(tmp_path):
    from lyra_solver.bench.fuzz import judge, run_forked

    def ok():
        print("out")
        return 0

    def crash():
        raise RuntimeError("boom")

    def hang():
        time.sleep(30)
        return 0

    def hog():
        return len(bytearray(3 * 2**30))

    code, out, err, _, _ = run_forked(ok, memory_mb=2048, timeout=20, cwd=str(tmp_path))
    assert (code, out, err) == (0, b"out\n", b"")
    code, _, err, _, _ = run_forked(crash, memory_mb=2048, timeout=20, cwd=str(tmp_path))
    assert code == 3 and judge(code, err, 0.1, 10, memory_mb=2048) == "traceback"
    code, _, _, secs, _ = run_forked(hang, memory_mb=2048, timeout=1, cwd=str(tmp_path))
    assert code is None and secs < 20
    code, _, err, _, _ = run_forked(hog, memory_mb=1024, timeout=20, cwd=str(tmp_path))
    assert code == 3 and b"MemoryError" in err
    code, out, _, _, _ = run_forked(lambda: int(input() == "fed"), memory_mb=2048, timeout=20, cwd=str(tmp_path),
                                    stdin=b"fed\n")
    assert code == 1


def test_clean_exits_are_judged_for_warnings_and_extra_lines():
    from lyra_solver.bench.fuzz import _judge_clean

    assert _judge_clean(0, b"") is None
    assert _judge_clean(0, b"3 jobs, 1 runs, 0.3 s wall (2026-12-01)\n") is None
    assert _judge_clean(0, b"lyra-solver: WARNING: exact reclaim gave no_solution; falling back to greedy\n") is None
    assert _judge_clean(0, b"x.py:3: RuntimeWarning: overflow encountered in divide\n  y = a / b\n").startswith(
        "a warning")
    assert _judge_clean(0, b"one\ntwo\n").startswith("2 lines")
    assert _judge_clean(2, b"error: a\nb\n") is None  # refusals are the other judge's


def test_csv_mutations_are_seeded():
    from lyra_solver.bench.fuzz import mutate_csv, random_load_rows, random_trace_rows

    for make in (random_trace_rows, random_load_rows):
        a = [mutate_csv(make(random.Random(5)), random.Random(k)) for k in range(20)]
        b = [mutate_csv(make(random.Random(5)), random.Random(k)) for k in range(20)]
        assert a == b and len(set(a)) > 10


@pytest.mark.parametrize("surface", ["packing", "trace", "load", "sim-flags"])
def test_each_new_surface_runs_clean(tmp_path, surface):
    from lyra_solver.bench.fuzz import fuzz

    cases, findings = fuzz(seconds=600, seed=4, max_cases=6, out_dir=tmp_path, timeout=120, surfaces=(surface,))
    assert cases == 6 and findings == [], findings
    assert json.loads((tmp_path / "findings.json").read_text()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exits.json", "findings.json"]  # passing cases: nothing
    assert sum(json.loads((tmp_path / "exits.json").read_text())[surface].values()) == 6


def test_a_broken_case_is_kept_with_its_finding(tmp_path, monkeypatch):
    """The trace surface's first finding (an integer too large for a double, exit 3), reproduced by a loader that
    raises it: the case is reported and its input kept."""
    import lyra_solver.bench.sim.traces as traces
    from lyra_solver.bench.fuzz import fuzz

    def broken(*args, **kw):
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(traces, "load_philly", broken)
    cases, findings = fuzz(seconds=600, seed=4, max_cases=1, out_dir=tmp_path, timeout=120, surfaces=("trace",))
    assert cases == 1 and len(findings) == 1 and "exit 3" in findings[0].problem
    assert (tmp_path / "case00000.csv").exists()


def test_surface_flag():
    from lyra_solver.bench.fuzz import main

    assert main(["--surface", "bogus"]) == 2


def test_csv_mutations_never_fail_themselves():
    """A mutation once removed every column and then asked for one (the fuzzer stopped at case 366)."""
    from lyra_solver.bench.fuzz import mutate_csv, random_load_rows, random_trace_rows

    for k in range(3000):
        rng = random.Random(k)
        assert isinstance(mutate_csv((random_trace_rows if k % 2 else random_load_rows)(rng), rng), bytes)
