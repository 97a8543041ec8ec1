"""Best-fit-decreasing placement: feasible, keeps current workers, and compared with the brute-force optimum."""
from __future__ import annotations

import itertools
import time

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from lyra_solver.formulations.placement import PlacementProblem
from lyra_solver.heuristics.placement import FreeIndex, best_fit_decreasing


def compositions(n: int, k: int):
    """All ways to put n identical workers on k servers."""
    for cuts in itertools.combinations(range(n + k - 1), k - 1):
        parts, prev = [], -1
        for c in (*cuts, n + k - 1):
            parts.append(c - prev - 1)
            prev = c
        yield tuple(parts)


def lex_objective(problem: PlacementProblem, per_job) -> tuple[int, int, int]:
    base_loaned = spans = moved = 0
    cur = {}
    for j, s, c in zip(problem.cur_job, problem.cur_server, problem.cur_count, strict=True):
        cur[(int(j), int(s))] = int(c)
    for j, counts in enumerate(per_job):
        training = sum(n for s, n in enumerate(counts) if not problem.server_loaned[s])
        base_loaned += max(0, int(problem.job_base[j]) - training)
        spans += sum(1 for n in counts if n)
        moved += sum(max(0, c - counts[s]) for (jj, s), c in cur.items() if jj == j)
    return base_loaned, spans, moved


def brute_force(problem: PlacementProblem):
    S = problem.n_servers
    options = [list(compositions(int(w), S)) for w in problem.job_workers]
    best = None
    for combo in itertools.product(*options):
        used = np.zeros(S, dtype=np.int64)
        for j, counts in enumerate(combo):
            used += np.asarray(counts) * int(problem.job_gpus_per_worker[j])
        if (used <= problem.server_free).all():
            obj = lex_objective(problem, combo)
            if best is None or obj < best:
                best = obj
    return best


def check(problem: PlacementProblem, out) -> None:
    used = np.zeros(problem.n_servers, dtype=np.int64)
    for j, pairs in enumerate(out.placement.per_job):
        assert sum(n for _, n in pairs) == out.placed[j] <= problem.job_workers[j]
        for s, n in pairs:
            assert n > 0
            used[s] += n * int(problem.job_gpus_per_worker[j])
    assert (used <= problem.server_free).all()


@st.composite
def tiny_problems(draw):
    S = draw(st.integers(1, 3))
    free = draw(st.lists(st.integers(0, 6), min_size=S, max_size=S))
    loaned = draw(st.lists(st.booleans(), min_size=S, max_size=S))
    J = draw(st.integers(1, 3))
    gpw = draw(st.lists(st.sampled_from([1, 2]), min_size=J, max_size=J))
    workers = draw(st.lists(st.integers(1, 3), min_size=J, max_size=J))
    base = [draw(st.integers(1, w)) for w in workers]
    return PlacementProblem.build(server_free=free, server_loaned=loaned, job_workers=workers, job_base=base,
                                  job_gpus_per_worker=gpw)


@settings(max_examples=150, deadline=None)
@given(tiny_problems())
def test_bfd_feasible_and_never_better_than_optimum(problem):
    out = best_fit_decreasing(problem)
    check(problem, out)
    opt = brute_force(problem)
    if (out.placed == problem.job_workers).all():
        assert opt is not None
        per_job = []
        for pairs in out.placement.per_job:
            counts = [0] * problem.n_servers
            for s, n in pairs:
                counts[s] = n
            per_job.append(counts)
        assert lex_objective(problem, per_job) >= opt
        # where the training servers can hold all base demand one job at a time, BFD matches the optimum's (a)
        if problem.n_jobs == 1:
            assert lex_objective(problem, per_job)[0] == opt[0]


def test_base_on_training_extras_on_loaned():
    problem = PlacementProblem.build(server_free=[8, 8], server_loaned=[False, True], job_workers=[6],
                                     job_base=[2], job_gpus_per_worker=[1])
    out = best_fit_decreasing(problem)
    assert dict(out.placement.per_job[0]) == {0: 2, 1: 4}


def test_keeps_current_and_drops_loaned_first_when_shrinking():
    problem = PlacementProblem.build(server_free=[8, 8], server_loaned=[False, True], job_workers=[3],
                                     job_base=[2], job_gpus_per_worker=[1], cur_job=[0, 0], cur_server=[0, 1],
                                     cur_count=[3, 3])
    out = best_fit_decreasing(problem)
    assert dict(out.placement.per_job[0]) == {0: 3}
    assert out.placement.moved(problem) == 3


def test_fragmentation_places_what_fits():
    problem = PlacementProblem.build(server_free=[3, 3], server_loaned=[False, False], job_workers=[3],
                                     job_base=[1], job_gpus_per_worker=[2])
    out = best_fit_decreasing(problem)
    assert int(out.placed[0]) == 2
    check(problem, out)


def test_free_index_capacity_and_best_fit():
    idx = FreeIndex(np.array([3, 8, 5, 0]), np.array([0, 0, 1, 0]), 2)
    assert idx.capacity(2, (0,)) == 1 + 4
    assert idx.best_fit(0, 2) == 0
    assert idx.largest(0) == 1
    idx.take(1, 7)
    assert idx.largest(0) == 0
    assert idx.capacity(1, (0, 1)) == 3 + 1 + 5


@st.composite
def cluster_problems(draw):
    """Placement problems of up to 30 servers and 40 jobs: free counts from a few values (ties between servers
    everywhere), mixed tiers and sizes of worker, and current workers (unique servers per job) that may exceed
    the free GPUs."""
    S = draw(st.integers(1, 30))
    sizes = draw(st.lists(st.integers(0, 16), min_size=1, max_size=4))
    free = draw(st.lists(st.sampled_from(sizes), min_size=S, max_size=S))
    loaned = draw(st.lists(st.booleans(), min_size=S, max_size=S))
    J = draw(st.integers(1, 40))
    gpw = draw(st.lists(st.sampled_from([1, 1, 2, 4]), min_size=J, max_size=J))
    workers = draw(st.lists(st.integers(1, 8), min_size=J, max_size=J))
    base = [draw(st.integers(1, w)) for w in workers]
    cj, cs, cc = [], [], []
    for j in range(J):
        if draw(st.booleans()):
            for s in sorted(draw(st.sets(st.integers(0, S - 1), max_size=3))):
                cj.append(j)
                cs.append(s)
                cc.append(draw(st.integers(1, 3)))
    return PlacementProblem.build(server_free=free, server_loaned=loaned, job_workers=workers, job_base=base,
                                  job_gpus_per_worker=gpw, cur_job=cj, cur_server=cs, cur_count=cc)


def _bfd_both(problem: PlacementProblem, keep_current: bool):
    """Best fit decreasing by the Python loop and by the compiled twin (forced at every size); each result, or the
    ValueError it raised."""
    import pytest
    from lyra_solver.formulations.mckp import _numba
    from lyra_solver.heuristics import placement as hp

    # numba is a test dependency (the [test] extra): the compiled twin is tested, never skipped
    assert _numba.load(), "numba did not load: install the [test] extra"
    answers = []
    for threshold in (10**18, 0):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(hp, "COMPILED_MIN_JOBS", threshold)
            try:
                answers.append(best_fit_decreasing(problem, keep_current=keep_current))
            except ValueError as err:
                answers.append(str(err))
    return answers


@settings(max_examples=300, deadline=None)
@given(problem=cluster_problems(), keep_current=st.booleans())
def test_compiled_bfd_is_the_python_loop(problem, keep_current):
    """The compiled best fit decreasing (:func:`lyra_solver.heuristics._nbadmit.bfd_place`) gives the Python
    loop's placement, workers placed, status and objective (or refuses current placements beyond the free GPUs
    with the same error), ties between servers included."""
    python, fast = _bfd_both(problem, keep_current)
    if isinstance(python, str):
        assert fast == python
        return
    assert fast.placement.per_job == python.placement.per_job
    assert fast.placed.tolist() == python.placed.tolist()
    assert (fast.status, fast.objective, fast.backend_status) == (python.status, python.objective,
                                                                  python.backend_status)


def test_compiled_bfd_comparison_sees_every_case():
    """The comparison above is not vacuous: seeded problems where afresh places every worker, leaves some out, and
    keeps current workers, each the same both ways."""
    import random

    rng = random.Random(7)
    seen = set()
    for _ in range(200):
        S, J = rng.randint(4, 40), rng.randint(32, 40)
        free = [rng.choice([0, 4, 8, 8]) for _ in range(S)]
        workers = [rng.randint(1, 3) for _ in range(J)]
        cj = [j for j in range(J) if rng.random() < 0.2]
        problem = PlacementProblem.build(
            server_free=free, server_loaned=[rng.random() < 0.4 for _ in range(S)], job_workers=workers,
            job_base=[rng.randint(1, w) for w in workers],
            job_gpus_per_worker=[rng.choice([1, 1, 2]) for _ in range(J)], cur_job=cj,
            cur_server=[rng.randrange(S) for _ in cj], cur_count=[1 for _ in cj])
        for keep in (False, True):
            python, fast = _bfd_both(problem, keep)
            if isinstance(python, str):
                seen.add("refused")
                assert fast == python
                continue
            assert fast.placement.per_job == python.placement.per_job
            seen.add((str(python.status), keep))
    assert {("feasible", False), ("no_solution", False), ("feasible", True)} <= seen


def test_a_round_loads_the_twins_only_when_it_pays(monkeypatch):
    """Ski rental (:func:`lyra_solver.heuristics.placement.compiled`): in a process without the kernels loaded, a
    round under ``LOAD_MIN_JOBS`` runs the Python twins (a one-shot call does not pay the loading) and charges
    its time (:func:`charges_twins`); once the charges reach what loading costs, the next round loads them. A
    process with them loaded takes them from ``COMPILED_MIN_JOBS`` on."""
    from lyra_solver.formulations.mckp import _numba
    from lyra_solver.heuristics import placement as hp

    state = {"loaded": False, "spent": 0.0, "loads": 0}

    def load():
        state["loads"] += 1
        state["loaded"] = True
        return True

    monkeypatch.setattr(_numba, "loaded", lambda: state["loaded"])
    monkeypatch.setattr(_numba, "load", load)
    monkeypatch.setattr(_numba, "want", lambda n: state["spent"] >= _numba.LOAD_AFTER_S)
    monkeypatch.setattr(_numba, "charge", lambda s: state.__setitem__("spent", state["spent"] + s))
    free = np.full(4, 8, np.int64)
    assert hp.compiled(hp.LOAD_MIN_JOBS - 1, free) is None and state["loads"] == 0
    twin = hp.charges_twins(lambda: time.sleep(0.01) or "python")
    assert twin() == "python" and state["spent"] >= 0.01  # the Python twin's time is charged
    state["spent"] = _numba.LOAD_AFTER_S  # a process that has spent what loading costs
    assert hp.compiled(hp.COMPILED_MIN_JOBS, free) is not None and state["loads"] == 1
    spent = state["spent"]
    assert twin() == "python" and state["spent"] == spent  # loaded: nothing charged
    assert hp.compiled(hp.COMPILED_MIN_JOBS - 1, free) is None  # a tiny round: the Python twin
    state.update(loaded=False, spent=0.0)
    assert hp.compiled(hp.LOAD_MIN_JOBS, free) is not None and state["loads"] == 2  # one round that pays alone
