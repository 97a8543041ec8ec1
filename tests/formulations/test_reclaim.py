"""Exact reclamation ILP against brute force over all server subsets (independent cost evaluation)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lyra_solver.formulations import Status, reclaim
from lyra_solver.formulations.reclaim import ReclaimProblem, evaluate_reclaim, solve_reclaim

METHODS = list(reclaim.TABLE.names(kind="exact"))  # the front door's exact methods, from the method table


# --------------------------------------------------------------------------------------------------------
# Independent reference, written from the problem statement (not from the library).
# --------------------------------------------------------------------------------------------------------

def true_cost(problem: ReclaimProblem, servers) -> tuple[float, int]:
    chosen = set(int(s) for s in servers)
    removed = [0] * problem.n_jobs
    for j, s, n in zip(problem.host_job, problem.host_server, problem.host_count, strict=True):
        if int(s) in chosen:
            removed[int(j)] += int(n)
    cost, pre = 0.0, 0
    for j in range(problem.n_jobs):
        r = removed[j]
        if r == 0:
            continue
        if int(problem.job_workers[j]) - r >= int(problem.job_min[j]):
            cost += float(problem.restart_cost[j])
            if problem.shrink_loss is not None:
                row = problem.shrink_loss[j]
                cost += float(row[min(r, len(row) - 1)])
        else:
            cost += float(problem.preempt_cost[j])
            pre += 1
    return cost, pre


def feasible_sets(problem: ReclaimProblem):
    n = problem.n_servers
    if problem.count is not None:
        yield from itertools.combinations(range(n), max(0, min(problem.count, n)))
        return
    for k in range(n + 1):
        for c in itertools.combinations(range(n), k):
            if sum(int(problem.server_gpus[s]) for s in c) >= problem.min_gpus:
                yield c


def brute_force(problem: ReclaimProblem) -> tuple[float, int] | None:
    best = None
    for c in feasible_sets(problem):
        cost, pre = true_cost(problem, c)
        key = (round(cost, 9), pre)
        if best is None or key < best:
            best = key
    return best


@st.composite
def reclaim_problems(draw, max_servers: int = 5, max_jobs: int = 4, allow_loss: bool = True,
                     allow_gpus: bool = True):
    n_s = draw(st.integers(0, max_servers))
    n_j = draw(st.integers(0, max_jobs))
    hosts = {}
    if n_s:
        for j in range(n_j):
            for s in draw(st.sets(st.integers(0, n_s - 1), max_size=n_s)):
                hosts[(j, s)] = draw(st.integers(1, 3))
    on = [sum(n for (jj, _), n in hosts.items() if jj == j) for j in range(n_j)]
    workers = [on[j] + draw(st.integers(0, 3)) for j in range(n_j)]
    workers = [max(1, w) for w in workers]
    mins = [draw(st.integers(0, w)) for w in workers]
    cents = st.integers(0, 10_000).map(lambda c: c / 100)
    restart = [draw(cents) for _ in range(n_j)]
    # preempt may be below restart: the model must still count a forced preemption as one.
    preempt = [draw(cents) for _ in range(n_j)]
    loss = None
    if allow_loss and n_j and draw(st.booleans()):
        k = draw(st.integers(1, 6))
        loss = [[0.0] + [draw(cents) for _ in range(k - 1)] for _ in range(n_j)]
    gpus = [draw(st.sampled_from([4, 8])) for _ in range(n_s)]
    if allow_gpus and draw(st.booleans()):
        count, min_gpus = None, draw(st.integers(0, sum(gpus) + 4))
    else:
        count, min_gpus = draw(st.integers(0, n_s + 1)), None
    keys = sorted(hosts)
    return ReclaimProblem.build(
        server_gpus=gpus, job_workers=workers, job_min=mins, job_gpus_per_worker=[1] * n_j,
        restart_cost=restart, preempt_cost=preempt, host_job=[k[0] for k in keys],
        host_server=[k[1] for k in keys], host_count=[hosts[k] for k in keys], count=count,
        min_gpus=min_gpus, shrink_loss=loss)


def check_result(problem: ReclaimProblem, res) -> None:
    """Independent check of a returned server set: size / GPUs, cost, preemptions, job lists."""
    assert list(res.servers) == sorted(set(res.servers))
    assert all(0 <= s < problem.n_servers for s in res.servers)
    if problem.count is not None:
        assert len(res.servers) == max(0, min(problem.count, problem.n_servers))
    else:
        assert sum(int(problem.server_gpus[s]) for s in res.servers) >= problem.min_gpus
    cost, pre = true_cost(problem, res.servers)
    assert res.objective == pytest.approx(cost, abs=1e-6)
    assert res.preemptions == pre == len(res.preempted)
    assert not set(res.preempted) & set(res.shrunk)


# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=reclaim_problems())
def test_exact_matches_brute_force(method, problem):
    res = solve_reclaim(problem, method=method)
    best = brute_force(problem)
    if best is None:
        assert res.status == Status.INFEASIBLE
        assert res.servers == ()
        return
    assert res.status == Status.OPTIMAL, res.backend_status
    check_result(problem, res)
    assert res.objective == pytest.approx(best[0], abs=1e-6)
    assert res.preemptions == best[1]  # lexicographic: fewest preemptions among the cheapest sets
    assert res.bound == pytest.approx(res.objective, abs=1e-6)
    assert res.gap == 0.0


@settings(max_examples=60, deadline=None)
@given(problem=reclaim_problems(), data=st.data())
def test_evaluate_reclaim_matches_reference(problem, data):
    servers = set()
    if problem.n_servers:
        servers = data.draw(st.sets(st.integers(0, problem.n_servers - 1)))
    cost, pre, preempted, shrunk = evaluate_reclaim(problem, servers)
    ref_cost, ref_pre = true_cost(problem, servers)
    assert cost == pytest.approx(ref_cost, abs=1e-9)
    assert pre == ref_pre == len(preempted)
    pairs = zip(problem.host_job, problem.host_server, strict=True)
    touched = {int(j) for j, s in pairs if int(s) in servers}
    assert set(preempted) | set(shrunk) == touched


def _problem(**kw):
    base = dict(server_gpus=[8, 8, 8], job_workers=[4, 2], job_min=[2, 2], job_gpus_per_worker=[1, 1],
                restart_cost=[10.0, 10.0], preempt_cost=[100.0, 100.0], host_job=[0, 0, 1],
                host_server=[0, 1, 2], host_count=[2, 2, 1], count=1)
    base.update(kw)
    return ReclaimProblem.build(**base)


@pytest.mark.parametrize("method", METHODS)
def test_forced_preemption_counts_even_when_cheaper(method):
    # Job 0 (4 workers, min 2) loses all 4 workers when servers 0 and 1 go: a preemption, though
    # preempting costs less than restarting here; job 1 (rigid) is preempted by server 2.
    p = _problem(restart_cost=[50.0, 10.0], preempt_cost=[5.0, 100.0], count=2)
    res = solve_reclaim(p, method=method)
    assert res.status == Status.OPTIMAL
    assert res.servers == (0, 1)
    assert res.objective == pytest.approx(5.0)
    assert res.preempted == (0,) and res.preemptions == 1


@pytest.mark.parametrize("method", METHODS)
def test_unforced_preemption_is_not_taken_to_save_cost(method):
    # Taking server 0 alone shrinks job 0 (4 -> 2 >= min 2): it must cost the restart, not the cheaper
    # preemption.
    p = _problem(restart_cost=[50.0, 10.0], preempt_cost=[5.0, 100.0], count=1,
                 host_job=[0, 0, 1], host_server=[0, 1, 2], host_count=[2, 2, 1])
    res = solve_reclaim(p, method=method)
    assert res.servers in ((0,), (1,))
    assert res.objective == pytest.approx(50.0)
    assert res.preemptions == 0 and res.shrunk == (0,)


@pytest.mark.parametrize("method", METHODS)
def test_edge_cases(method):
    p0 = _problem(count=0)
    r0 = solve_reclaim(p0, method=method)
    assert r0.status == Status.OPTIMAL and r0.servers == () and r0.objective == 0.0
    pall = _problem(count=7)
    rall = solve_reclaim(pall, method=method)
    assert rall.status == Status.OPTIMAL and rall.servers == (0, 1, 2)
    assert rall.objective == pytest.approx(200.0) and rall.preemptions == 2
    empty = ReclaimProblem.build(server_gpus=[8, 4], job_workers=[], job_min=[], job_gpus_per_worker=[],
                                 restart_cost=[], preempt_cost=[], host_job=[], host_server=[], host_count=[],
                                 count=1)
    re_ = solve_reclaim(empty, method=method)
    assert re_.status == Status.OPTIMAL and len(re_.servers) == 1 and re_.objective == 0.0
    too_many = _problem(count=None, min_gpus=25)
    ri = solve_reclaim(too_many, method=method)
    assert ri.status == Status.INFEASIBLE and ri.objective is None


def test_unknown_method_is_rejected():
    with pytest.raises(ValueError):
        solve_reclaim(_problem(), method="simplex")


def test_non_decimal_costs_keep_a_valid_bound():
    rng = np.random.default_rng(3)
    p = _problem(restart_cost=rng.uniform(1, 50, 2) / 3.0, preempt_cost=rng.uniform(60, 300, 2) / 7.0,
                 count=2)
    res = solve_reclaim(p)
    best = brute_force(p)
    assert res.objective == pytest.approx(best[0], abs=1e-6)
    assert res.bound <= res.objective + 1e-12
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE)


def test_time_limit_is_a_status_not_an_exception():
    from lyra_solver.bench.reclaim_instances import generate_cluster

    p = generate_cluster(150, 7, count=40).problem
    res = solve_reclaim(p, time_limit=1e-3)
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE, Status.NO_SOLUTION)
    if res.status != Status.NO_SOLUTION:
        check_result(p, res)
        assert res.bound is None or res.bound <= res.objective + 1e-9


@pytest.mark.parametrize("seed", [0, 1])
def test_methods_agree_on_generated_clusters(seed):
    from lyra_solver.bench.reclaim_instances import generate_cluster

    p = generate_cluster(60, seed, count=12).problem
    a = solve_reclaim(p, method="cpsat")
    b = solve_reclaim(p, method="cbc")
    assert a.status == b.status == Status.OPTIMAL
    assert a.objective == pytest.approx(b.objective, abs=1e-6)
    assert a.preemptions == b.preemptions
    check_result(p, a)
    check_result(p, b)


def test_deterministic():
    from lyra_solver.bench.reclaim_instances import generate_cluster

    p = generate_cluster(80, 5, count=20).problem
    assert solve_reclaim(p).servers == solve_reclaim(p).servers


@settings(max_examples=60, deadline=None)
@given(problem=reclaim_problems(allow_loss=False, allow_gpus=False), as_arrays=st.booleans())
def test_trusted_is_build_without_the_checks(problem, as_arrays):
    """ReclaimProblem.trusted (the round's reclaim step) makes the very arrays build makes (values, dtypes,
    read-only), from lists or from arrays of other dtypes, so every method answers the same."""
    from dataclasses import fields

    from lyra_solver.heuristics import greedy_reclaim

    names = ("server_gpus", "job_workers", "job_min", "job_gpus_per_worker", "restart_cost", "preempt_cost",
             "host_job", "host_server", "host_count")
    given_ = {n: (getattr(problem, n).astype(np.int32 if getattr(problem, n).dtype.kind == "i" else np.float32)
                  if as_arrays and n.startswith(("server", "job", "host")) else getattr(problem, n).tolist())
              for n in names}
    built = ReclaimProblem.build(**given_, count=problem.count)
    fast = ReclaimProblem.trusted(**given_, count=problem.count)
    for f in fields(ReclaimProblem):
        a, b = getattr(built, f.name), getattr(fast, f.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), f.name
            assert not b.flags.writeable, f.name
        else:
            assert a == b and type(a) is type(b), f.name
    one, two = greedy_reclaim(built), greedy_reclaim(fast)
    assert (one.servers, one.objective, one.preempted, one.shrunk) == (two.servers, two.objective, two.preempted,
                                                                        two.shrunk)
