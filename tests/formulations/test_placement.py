"""Placement and joint allocation-and-placement ILPs against an independent checker and brute force."""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lyra_solver.formulations import Status, placement
from lyra_solver.formulations.placement import JointProblem, PlacementProblem, solve_joint, solve_placement

METHODS = list(placement.TABLE.names(kind="exact"))  # the front door's exact methods, from the method table


def compositions(total: int, parts: int):
    """All ways to write ``total`` as an ordered sum of ``parts`` non-negative integers."""
    if parts == 0:
        if total == 0:
            yield ()
        return
    for first in range(total + 1):
        for rest in compositions(total - first, parts - 1):
            yield (first, *rest)


def place_key(problem: PlacementProblem, alloc) -> tuple[int, int, int]:
    """(base on loaned, spans, moved) of a dense allocation ``alloc[j][s]``, from the definitions."""
    base = spans = moved = 0
    for j, row in enumerate(alloc):
        on_training = sum(n for s, n in enumerate(row) if not problem.server_loaned[s])
        base += max(0, int(problem.job_base[j]) - on_training)
        spans += sum(1 for n in row if n > 0)
    for j, s, c in zip(problem.cur_job, problem.cur_server, problem.cur_count, strict=True):
        moved += max(0, int(c) - alloc[int(j)][int(s)])
    return base, spans, moved


def fits(free, gpw, alloc) -> bool:
    return all(sum(gpw[j] * alloc[j][s] for j in range(len(alloc))) <= free[s] for s in range(len(free)))


def brute_place(problem: PlacementProblem):
    free = [int(f) for f in problem.server_free]
    gpw = [int(g) for g in problem.job_gpus_per_worker]
    per_job = [list(compositions(int(w), problem.n_servers)) for w in problem.job_workers]
    best = None
    for alloc in itertools.product(*per_job):
        if fits(free, gpw, alloc):
            key = place_key(problem, alloc)
            best = key if best is None or key < best else best
    return best


def dense(placement, n_jobs, n_servers):
    alloc = [[0] * n_servers for _ in range(n_jobs)]
    for j, pairs in enumerate(placement.per_job):
        for s, n in pairs:
            alloc[j][s] += n
    return alloc


def check_placement(problem: PlacementProblem, res) -> None:
    pl = res.placement
    assert len(pl.per_job) == problem.n_jobs
    for j, pairs in enumerate(pl.per_job):
        servers = [s for s, _ in pairs]
        assert servers == sorted(set(servers)) and all(n > 0 for _, n in pairs)
        assert sum(n for _, n in pairs) == int(problem.job_workers[j])
    alloc = dense(pl, problem.n_jobs, problem.n_servers)
    assert fits([int(f) for f in problem.server_free], [int(g) for g in problem.job_gpus_per_worker], alloc)
    assert res.objective == place_key(problem, alloc)


@st.composite
def placement_problems(draw):
    n_s = draw(st.integers(1, 3))
    n_j = draw(st.integers(0, 3))
    free = [draw(st.integers(0, 6)) for _ in range(n_s)]
    loaned = [draw(st.booleans()) for _ in range(n_s)]
    workers = [draw(st.integers(0, 3)) for _ in range(n_j)]
    base = [draw(st.integers(0, w)) for w in workers]
    gpw = [draw(st.sampled_from([1, 2])) for _ in range(n_j)]
    cur = []
    for j in range(n_j):
        for s in draw(st.sets(st.integers(0, n_s - 1), max_size=2)):
            cur.append((j, s, draw(st.integers(1, 2))))
    return PlacementProblem.build(server_free=free, server_loaned=loaned, job_workers=workers, job_base=base,
                                  job_gpus_per_worker=gpw, cur_job=[c[0] for c in cur],
                                  cur_server=[c[1] for c in cur], cur_count=[c[2] for c in cur])


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=35, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=placement_problems())
def test_placement_matches_brute_force(method, problem):
    res = solve_placement(problem, method=method)
    best = brute_place(problem)
    if best is None:
        assert res.status == Status.INFEASIBLE and res.placement is None
        return
    assert res.status == Status.OPTIMAL, res.backend_status
    check_placement(problem, res)
    assert res.objective == best


@pytest.mark.parametrize("method", METHODS)
def test_placement_priorities(method):
    # Base demand goes to the training server even though it splits job 0 over two servers, and the
    # running worker of job 1 stays where it is.
    p = PlacementProblem.build(server_free=[2, 8, 4], server_loaned=[False, True, True], job_workers=[4, 2],
                               job_base=[2, 0], job_gpus_per_worker=[1, 2], cur_job=[1], cur_server=[2],
                               cur_count=[1])
    res = solve_placement(p, method=method)
    assert res.status == Status.OPTIMAL
    check_placement(p, res)
    assert res.objective == (0, 3, 0)
    assert res.placement.per_job[0] == ((0, 2), (1, 2))
    assert res.placement.per_job[1] == ((2, 2),)


def test_placement_infeasible_is_a_status():
    p = PlacementProblem.build(server_free=[3, 3], server_loaned=[False, False], job_workers=[2],
                               job_base=[1], job_gpus_per_worker=[4])
    assert solve_placement(p).status == Status.INFEASIBLE
    q = PlacementProblem.build(server_free=[4, 4], server_loaned=[False, True], job_workers=[3, 2],
                               job_base=[1, 1], job_gpus_per_worker=[2, 2])
    for m in METHODS:
        assert solve_placement(q, method=m).status == Status.INFEASIBLE


# --------------------------------------------------------------------------------------------------------
# Joint allocation and placement.
# --------------------------------------------------------------------------------------------------------

def brute_joint(problem: JointProblem):
    free = [int(f) for f in problem.server_free]
    gpw = [int(g) for g in problem.job_gpus_per_worker]
    options = []
    for j in range(problem.n_jobs):
        opts = []
        for w in range(int(problem.job_min[j]), int(problem.job_max[j]) + 1):
            for comp in compositions(w, problem.n_servers):
                k = sum(1 for n in comp if n > 0)
                table = problem.value[j]
                r, c = w - int(problem.job_min[j]), k - 1
                if c < table.shape[1] and math.isfinite(float(table[r, c])):
                    opts.append((comp, float(table[r, c])))
        options.append(opts)
    best = None
    for combo in itertools.product(*options):
        alloc = [c for c, _ in combo]
        if fits(free, gpw, alloc):
            v = sum(v for _, v in combo)
            best = v if best is None or v > best else best
    return best


@st.composite
def joint_problems(draw):
    n_s = draw(st.integers(1, 3))
    n_j = draw(st.integers(1, 2))
    free = [draw(st.integers(0, 6)) for _ in range(n_s)]
    mins = [draw(st.integers(1, 2)) for _ in range(n_j)]
    maxs = [m + draw(st.integers(0, 2)) for m in mins]
    gpw = [draw(st.sampled_from([1, 2])) for _ in range(n_j)]
    cents = st.integers(0, 5000).map(lambda c: c / 100)
    value = []
    for j in range(n_j):
        k = draw(st.integers(1, 3))
        rows = [[draw(cents) if draw(st.integers(0, 9)) else float("nan") for _ in range(k)]
                for _ in range(maxs[j] - mins[j] + 1)]
        value.append(rows)
    return JointProblem.build(server_free=free, job_min=mins, job_max=maxs, job_gpus_per_worker=gpw,
                              value=value)


def check_joint(problem: JointProblem, res) -> float:
    alloc = dense(res.placement, problem.n_jobs, problem.n_servers)
    assert fits([int(f) for f in problem.server_free], [int(g) for g in problem.job_gpus_per_worker], alloc)
    total = 0.0
    for j, row in enumerate(alloc):
        w = sum(row)
        assert res.workers[j] == w and int(problem.job_min[j]) <= w <= int(problem.job_max[j])
        k = sum(1 for n in row if n > 0)
        v = float(problem.value[j][w - int(problem.job_min[j]), k - 1])
        assert math.isfinite(v)
        total += v
    assert res.objective == pytest.approx(total, abs=1e-9)
    return total


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=joint_problems())
def test_joint_matches_brute_force(method, problem):
    res = solve_joint(problem, method=method)
    best = brute_joint(problem)
    if best is None:
        assert res.status == Status.INFEASIBLE and res.placement is None
        return
    assert res.status == Status.OPTIMAL, res.backend_status
    check_joint(problem, res)
    assert res.objective == pytest.approx(best, abs=1e-6)
    assert res.bound == pytest.approx(best, abs=1e-6)


def test_joint_trades_span_against_workers():
    # Two 4-GPU servers: 6 workers must span two servers (value 5); 4 workers on one server are worth 5.5.
    p = JointProblem.build(server_free=[4, 4], job_min=[4], job_max=[6], job_gpus_per_worker=[1],
                           value=[[[5.5, 4.0], [6.0, 4.8], [float("nan"), 5.0]]])
    res = solve_joint(p)
    assert res.status == Status.OPTIMAL and res.workers == (4,) and res.objective == pytest.approx(5.5)
    assert len(res.placement.per_job[0]) == 1


def test_joint_validates_shapes():
    with pytest.raises(ValueError):
        JointProblem.build(server_free=[4], job_min=[1], job_max=[2], job_gpus_per_worker=[1],
                           value=[[[1.0]]])


@settings(max_examples=60, deadline=None)
@given(problem=placement_problems(), as_arrays=st.booleans())
def test_trusted_is_build_without_the_checks(problem, as_arrays):
    """PlacementProblem.trusted (the round's place step) makes the very arrays build makes (values, dtypes,
    read-only), from lists or from arrays of other dtypes, so best fit decreasing answers the same."""
    from dataclasses import fields

    import numpy as np
    from lyra_solver.heuristics.placement import best_fit_decreasing

    given_ = {}
    for f in fields(PlacementProblem):
        a = getattr(problem, f.name)
        given_[f.name] = (a.astype(np.int32) if a.dtype.kind == "i" else a.astype(np.int8)) if as_arrays else a.tolist()
    built = PlacementProblem.build(**given_)
    fast = PlacementProblem.trusted(**given_)
    for f in fields(PlacementProblem):
        a, b = getattr(built, f.name), getattr(fast, f.name)
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), f.name
        assert not b.flags.writeable, f.name
    for keep in (True, False):
        try:
            one = best_fit_decreasing(built, keep_current=keep)
        except ValueError as err:  # e.g. current placements over the free GPUs: the same refusal
            with pytest.raises(ValueError) as again:
                best_fit_decreasing(fast, keep_current=keep)
            assert str(again.value) == str(err)
            continue
        two = best_fit_decreasing(fast, keep_current=keep)
        assert one.placement.per_job == two.placement.per_job and np.array_equal(one.placed, two.placed)
