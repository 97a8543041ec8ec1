"""Reclamation instance generators (deterministic, realistic) and the reclaim suite of the harness on them."""
from __future__ import annotations

import numpy as np
from lyra_solver.bench.harness import Config, annotate
from lyra_solver.bench.reclaim_instances import (
    alibaba_load_curve,
    default_qps_path,
    generate_cluster,
    reclaim_events,
    with_count,
)
from lyra_solver.bench.suites import reclaim as suite
from lyra_solver.formulations import Status


def run_instance(problem, methods=("cpsat", "cbc")):
    """Every method of the reclaim suite on one problem: annotated rows by method."""
    cfg = Config(time_limit=60.0)
    rows = []
    for m in [*methods, *suite.HEURISTICS]:
        out = suite.solve((problem, 0), m, cfg)
        rows.append({"suite": "reclaim", "group": "g", "instance": "i", "size": 1, "method": m, "status": out.status,
                     "objective": out.objective, "bound": out.bound, "time_s": 1.0, "note": ""})
    return {r["method"]: r for r in annotate(rows, suite.SUITE)}


def test_generator_is_deterministic_and_consistent():
    a = generate_cluster(120, 4, count=10)
    b = generate_cluster(120, 4, count=10)
    pa, pb = a.problem, b.problem
    for name in ("server_gpus", "job_workers", "job_min", "restart_cost", "preempt_cost", "host_job",
                 "host_server", "host_count"):
        assert np.array_equal(getattr(pa, name), getattr(pb, name))
    assert pa.n_servers == 120 and pa.count == 10
    # Every job has workers on a candidate server, never more than it runs, and fits the 8-GPU servers.
    on = np.bincount(pa.host_job, weights=pa.host_count, minlength=pa.n_jobs)
    assert (on >= 1).all() and (on <= pa.job_workers).all()
    used = np.bincount(pa.host_server, weights=pa.host_count * pa.job_gpus_per_worker[pa.host_job],
                       minlength=pa.n_servers)
    assert (used <= pa.server_gpus).all()
    assert (pa.job_min >= 1).all() and (pa.job_min <= pa.job_workers).all()
    ratio = pa.preempt_cost / pa.restart_cost
    assert (pa.restart_cost >= 10).all() and (pa.restart_cost <= 60).all()
    assert (ratio >= 5 - 1e-6).all() and (ratio <= 20 + 1e-6).all()
    pairs = set(zip(pa.host_job.tolist(), pa.host_server.tolist(), strict=True))
    assert len(pairs) == pa.host_job.size
    assert not np.array_equal(generate_cluster(120, 5).problem.host_server, pa.host_server)


def test_with_count_clips():
    p = generate_cluster(30, 1).problem
    assert with_count(p, 99).count == 30 and with_count(p, -2).count == 0


def test_load_curve_and_events(tmp_path):
    csv = tmp_path / "qps.csv"
    csv.write_text("timestamp_anon,value,container_ip,request_type\n"
                   "0,1.0,a,x\n10,2.0,b,x\n400,1.0,a,x\n700,6.0,a,x\n710,2.0,b,x\nbad,1,a,x\n")
    load = alibaba_load_curve(csv, window_s=300)
    assert np.allclose(load, [3.0, 1.0, 8.0])
    ev = reclaim_events(load, 8)  # demand ceil(load / 8 * 8) = 3, 1, 8: one rise of 7
    assert ev.tolist() == [7]
    assert reclaim_events(np.array([5.0]), 10).size == 0


def test_real_load_curve_is_read():
    path = default_qps_path()
    if not path.exists():
        return
    load = alibaba_load_curve(path)
    assert load.size > 10 and (load >= 0).all() and load.max() > 0
    ev = reclaim_events(load, 100)
    assert ev.size > 0 and (ev >= 1).all() and (ev <= 100).all()


def test_suite_gaps_are_nonnegative_and_exact_methods_agree():
    p = with_count(generate_cluster(60, 2).problem, 9)
    rows = run_instance(p)
    assert rows["cpsat"]["status"] == Status.OPTIMAL and rows["cbc"]["status"] == Status.OPTIMAL
    assert abs(rows["cbc"]["objective"] - rows["cpsat"]["objective"]) < 1e-6
    assert rows["cpsat"]["gap"] == 0.0 and rows["cbc"]["gap"] == 0.0
    assert all(rows[h]["gap"] >= 0.0 for h in suite.HEURISTICS)


def test_scattered_stress_generator():
    from lyra_solver.bench.reclaim_instances import generate_scattered

    p = generate_scattered(40, 90, 3, count=5)
    q = generate_scattered(40, 90, 3, count=5)
    assert np.array_equal(p.host_server, q.host_server) and np.array_equal(p.preempt_cost, q.preempt_cost)
    assert p.n_servers == 40 and p.n_jobs == 90 and p.count == 5
    on = np.bincount(p.host_job, weights=p.host_count, minlength=p.n_jobs)
    assert (on >= 1).all() and (on <= p.job_workers).all()
    assert (p.job_min >= 1).all() and (p.job_min <= p.job_workers).all()
    assert len(set(zip(p.host_job.tolist(), p.host_server.tolist(), strict=True))) == p.host_job.size
    rows = run_instance(p, methods=("cpsat",))
    assert rows["cpsat"]["status"] == Status.OPTIMAL and rows["greedy"]["gap"] >= 0.0
