"""Lyra's greedy reclaiming and the baselines: feasible, never below the optimum, greedy == its definition."""
from __future__ import annotations

import dataclasses

import lyra_solver.heuristics.reclaim as reclaim_module
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lyra_solver.bench.reclaim_instances import generate_cluster, with_count
from lyra_solver.formulations import Status
from lyra_solver.formulations.reclaim import ReclaimProblem
from lyra_solver.heuristics.reclaim import fewest_jobs_reclaim, greedy_reclaim, random_reclaim

from tests.formulations.test_reclaim import brute_force, check_result, reclaim_problems, true_cost


def naive_greedy(problem: ReclaimProblem) -> list[int]:
    """Lyra's rule recomputed from scratch at every pick (the definition, O(S^2 H))."""
    picks: list[int] = []
    gpus = 0
    while True:
        if problem.count is not None and len(picks) >= min(problem.count, problem.n_servers):
            return picks
        if problem.count is None and gpus >= problem.min_gpus:
            return picks
        base_cost, base_pre = true_cost(problem, picks)
        best = None
        for s in range(problem.n_servers):
            if s in picks:
                continue
            cost, pre = true_cost(problem, picks + [s])
            key = (round(cost - base_cost, 6), pre - base_pre, s)
            if best is None or key < best:
                best = key
        picks.append(best[2])
        gpus += int(problem.server_gpus[best[2]])


def feasible(problem: ReclaimProblem) -> bool:
    return problem.count is not None or int(problem.server_gpus.sum()) >= problem.min_gpus


@settings(max_examples=150, deadline=None)
@given(problem=reclaim_problems(max_servers=6, max_jobs=5))
def test_greedy_follows_lyra_rule(problem):
    res = greedy_reclaim(problem)
    if not feasible(problem):
        assert res.status == Status.INFEASIBLE
        return
    assert res.servers == tuple(sorted(naive_greedy(problem)))
    check_result(problem, res)


@given(problem=reclaim_problems(max_servers=6, max_jobs=5), data=st.data())
def test_greedy_on_flat_host_lists_follows_lyra_rule(problem, data):
    """The greedy's flat host lists (a large problem's, here forced on every problem) give Lyra's picks too, the
    host pairs in any order (the lists sort them by server and by job)."""
    order = data.draw(st.permutations(range(problem.host_job.shape[0])))
    problem = dataclasses.replace(problem, host_job=problem.host_job[order], host_server=problem.host_server[order],
                                  host_count=problem.host_count[order])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reclaim_module, "_FLAT_MIN_PAIRS", 0)
        res = greedy_reclaim(problem)
    if not feasible(problem):
        assert res.status == Status.INFEASIBLE
        return
    assert res.servers == tuple(sorted(naive_greedy(problem)))


def test_greedy_flat_and_listed_hosts_agree_on_a_large_cluster():
    """Above _FLAT_MIN_PAIRS host pairs (flat lists) and below it (lists of pairs): the same picks and cost."""
    p = with_count(generate_cluster(300, 11).problem, 60)
    assert p.host_job.shape[0] >= reclaim_module._FLAT_MIN_PAIRS  # the flat lists by default
    flat = greedy_reclaim(p)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reclaim_module, "_FLAT_MIN_PAIRS", 1 << 62)
        listed = greedy_reclaim(p)
    assert flat.servers == listed.servers and flat.objective == listed.objective


@settings(max_examples=100, deadline=None)
@given(problem=reclaim_problems(), seed=st.integers(0, 3))
def test_heuristics_never_beat_the_optimum(problem, seed):
    best = brute_force(problem)
    for res in (greedy_reclaim(problem), fewest_jobs_reclaim(problem), random_reclaim(problem, seed)):
        if best is None:
            assert res.status == Status.INFEASIBLE
            continue
        check_result(problem, res)
        assert res.objective >= best[0] - 1e-6
        assert res.status in (Status.FEASIBLE, Status.OPTIMAL)
        if res.status == Status.OPTIMAL:
            assert res.objective == pytest.approx(best[0], abs=1e-9)


def test_greedy_incremental_matches_definition_on_a_cluster():
    p = with_count(generate_cluster(40, 3).problem, 12)
    assert greedy_reclaim(p).servers == tuple(sorted(naive_greedy(p)))


def test_greedy_on_a_large_cluster_is_feasible_and_deterministic():
    p = with_count(generate_cluster(300, 11).problem, 60)
    a, b = greedy_reclaim(p), greedy_reclaim(p)
    assert a.servers == b.servers and a.objective == b.objective
    check_result(p, a)


def test_greedy_prefers_fewer_preemptions_on_cost_ties():
    # Server 0 preempts job 0 (cost 10), server 1 shrinks job 1 (cost 10): equal cost, so the server
    # with fewer new preemptions wins over the lower index.
    p = ReclaimProblem.build(server_gpus=[8, 8], job_workers=[1, 4], job_min=[1, 2],
                             job_gpus_per_worker=[1, 1], restart_cost=[5.0, 10.0], preempt_cost=[10.0, 50.0],
                             host_job=[0, 1], host_server=[0, 1], host_count=[1, 1], count=1)
    res = greedy_reclaim(p)
    assert res.servers == (1,) and res.preemptions == 0 and res.objective == 10.0


def test_random_is_seeded():
    p = with_count(generate_cluster(50, 2).problem, 10)
    assert random_reclaim(p, 4).servers == random_reclaim(p, 4).servers
    assert len({random_reclaim(p, s).servers for s in range(5)}) > 1


def test_fewest_jobs_picks_emptiest_servers():
    p = ReclaimProblem.build(server_gpus=[8, 8, 8], job_workers=[4, 4, 4], job_min=[1, 1, 1],
                             job_gpus_per_worker=[1, 1, 1], restart_cost=[1.0, 1.0, 1.0],
                             preempt_cost=[9.0, 9.0, 9.0], host_job=[0, 1, 2, 2], host_server=[0, 0, 1, 2],
                             host_count=[1, 1, 1, 1], count=2)
    assert fewest_jobs_reclaim(p).servers == (1, 2)


def test_min_gpus_mode():
    p = ReclaimProblem.build(server_gpus=[4, 8, 8], job_workers=[2], job_min=[1], job_gpus_per_worker=[1],
                             restart_cost=[3.0], preempt_cost=[30.0], host_job=[0], host_server=[1],
                             host_count=[1], min_gpus=12)
    res = greedy_reclaim(p)
    assert res.servers == (0, 2) and res.objective == 0.0 and res.status == Status.OPTIMAL
    assert np.isclose(fewest_jobs_reclaim(p).objective, 0.0)
