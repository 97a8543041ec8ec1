"""Instance builders of the harness's suites: deterministic, valid, the right shape."""
from __future__ import annotations

import numpy as np
import pytest
from lyra_solver import io
from lyra_solver.bench.datapath import shared_data
from lyra_solver.bench.suites import decide, mckp, placement


def test_generated_snapshot_is_valid_and_deterministic():
    from lyra_solver.bench.generate import generate_snapshot

    a = io.encode(generate_snapshot(servers=60, jobs=200, seed=9))
    assert a == io.encode(generate_snapshot(servers=60, jobs=200, seed=9))
    snap = io.parse_snapshot(a)
    assert len(snap.jobs) == 200 and any(j.placement for j in snap.jobs)
    assert {type(j.throughput).__name__ for j in snap.jobs} == {"PowerThroughput", "TableThroughput",
                                                                 "ProfileThroughput"}


def test_profile_value_tables_are_valid_and_deterministic():
    from lyra_solver.formulations.mckp import solve_mckp

    a = mckp.build({"kind": "profile", "n": 30, "seed": 2})
    b = mckp.build({"kind": "profile", "n": 30, "seed": 2})
    assert np.array_equal(a.weights, b.weights) and np.array_equal(a.values, b.values)
    assert a.capacity > 0 and a.n_classes == 30
    exact = solve_mckp(a, method="core")
    assert exact.status == "optimal"
    assert solve_mckp(a, method="highs").objective == pytest.approx(exact.objective, rel=1e-9)


def test_placement_instances_fit_and_are_deterministic():
    p = placement.generate_placement(30, 4)
    q = placement.generate_placement(30, 4)
    assert np.array_equal(p.job_workers, q.job_workers) and np.array_equal(p.server_free, q.server_free)
    asked = int((p.job_workers * p.job_gpus_per_worker).sum())
    assert 0 < asked <= 0.85 * int(p.server_free.sum())
    assert (p.job_base >= 1).all() and (p.job_base <= p.job_workers).all()
    assert p.server_loaned.any() and not p.server_loaned.all()


def test_placement_objective_orders_base_on_loaned_first():
    from lyra_solver.bench.harness import Config

    p = placement.generate_placement(8, 1)
    out = placement.solve(p, "cpsat", Config(time_limit=30.0))
    assert out.status == "optimal" and out.objective == out.bound
    assert out.objective == out.extra["base on loaned"] * (int(p.job_workers.sum()) + 1) + out.extra["spans"]
    bfd = placement.solve(p, "bfd", Config())
    assert bfd.status == "no_solution" or bfd.objective >= out.objective


@pytest.mark.skipif(not shared_data("philly", "philly.csv").exists(), reason="shared data absent")
def test_philly_snapshot_is_valid_and_deterministic():
    a = io.encode(decide.philly_snapshot(0.5, 0, max_jobs=50))
    assert a == io.encode(decide.philly_snapshot(0.5, 0, max_jobs=50))
    snap = io.parse_snapshot(a)
    assert 0 < len(snap.jobs) <= 50
    assert any(j.placement for j in snap.jobs)
    assert all(j.min_workers <= j.max_workers <= 64 for j in snap.jobs)


def test_decide_methods_are_the_allocation_vocabulary():
    assert {m.name for m in decide.methods()} >= {"exact", "greedy", "hull"}
