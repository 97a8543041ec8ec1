"""bench/gpu_check runs end to end on torch's CPU at tiny sizes (skipped without torch), and its random
inputs keep the promises the GPU run relies on (no zeros, every throughput kind, widest row exact)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from lyra_solver.bench.gpu_check import Row, format_table, main, mckp_instance, random_job_arrays
from lyra_solver.values import value_table
from lyra_solver.values_gpu import jobs_of


def test_random_job_arrays_are_valid_jobs_of_every_kind():
    a = random_job_arrays(600, 40, np.random.default_rng(0))
    assert set(a.kind.tolist()) == {0, 1, 2}
    assert a.width == 40 and np.all(a.sizes >= 1)
    for name in ("remaining_work", "restart_penalty", "rate_per_worker", "exponent"):
        assert np.all(getattr(a, name) > 0), name
    jobs = jobs_of(a)  # through the validated types: knots strictly increasing, rates positive
    t = value_table(jobs, backend="numpy")
    assert np.all(np.isfinite(t.values[np.arange(40)[None, :] < t.sizes[:, None]]))
    tables = [j.throughput for j in jobs if type(j.throughput).__name__ == "TableThroughput"]
    assert all(np.all(np.diff(tp.workers) > 0) and tp.workers[0] <= 4 for tp in tables)
    assert all(r > 0 for tp in tables for r in tp.rate)


def test_mckp_instance_shape():
    p = mckp_instance(20, 8, 100, np.random.default_rng(1))
    assert p.n_classes == 20 and p.max_items == 8 and p.capacity == 100


def test_format_table_marks_failures():
    s = format_table([Row("a", "1", 1.0, "-", "0", True), Row("b", "2", None, "-", "-", False, "error")])
    assert "FAIL" in s and "| a " in s


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
def test_gpu_check_runs_on_cpu(capsys):
    rc = main(["--cpu", "--seed", "3", "--jobs", "200", "--options", "12", "--classes", "15", "--items", "5",
               "--capacity", "60", "--reps", "1", "--small", "3", "--check-rows", "50"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "torch.compile fused" in out and "MCKP gpu/torch" in out and "0 failed" in out
