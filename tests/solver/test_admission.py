"""Admission (step 3 of the round): its rules as properties, and the same answers as the straightforward
implementation it replaced (kept here as the reference: it sorts every usable server for each job that waits).

Rules: base demand is placed whole (``min_workers`` workers) or not at all; nothing lands on a server training
may not use or beyond a server's GPUs; a job running before the round is never preempted by admission and a donor
keeps at least its ``min_workers``; only jobs running before the round donate; donors do not grow back in the
same round's scaling.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lyra_solver import io
from lyra_solver.bench.generate import generate_snapshot
from lyra_solver.heuristics.placement import FreeIndex
from lyra_solver.heuristics.queue import queue_order
from lyra_solver.pipeline import decide, settings_of
from lyra_solver.steps import RoundState
from lyra_solver.steps._state import Admitted, Cluster, usable_servers, used_gpus
from lyra_solver.steps.admit import admit, times_at_min
from lyra_solver.steps.loan import loan
from lyra_solver.steps.reclaim import reclaim

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def reference_admit(cl, rec, borrowed, queued, settings, times_min) -> Admitted:
    """The former implementation of :func:`lyra_solver.steps.admit.admit`, verbatim but for names."""
    snap = cl.snap
    order = queue_order(
        settings.queue,
        submit_time=[snap.jobs[j].submit_time for j in queued],
        min_time=[times_min[j] for j in queued],
        attained_service=[snap.jobs[j].attained_service for j in queued],
    )
    usable = usable_servers(cl, rec, borrowed)
    tier = np.full(cl.gpus.shape[0], -1, dtype=np.int64)
    tier[cl.kind == 0] = 0
    tier[cl.kind == 1] = 1
    tier[list(borrowed)] = 2
    tier[~usable] = -1
    free = np.where(usable, cl.gpus - used_gpus(cl, rec.placement), 0)
    index = FreeIndex(free, np.maximum(tier, 0), 3)
    placement = list(rec.placement)
    admitted, failed = [], []
    tiers = (0, 1, 2)
    for q in order:
        j = queued[int(q)]
        n, g = int(cl.min_w[j]), int(cl.gpw[j])
        if index.capacity(g, tiers) >= n:
            out: dict[int, int] = {}
            index.place(n, g, tiers, out)
            placement[j] = out
            admitted.append(j)
        else:
            failed.append(j)
    donors: set[int] = set()
    if failed:
        pool = _DonorPool(cl, np.array(index.free, dtype=np.int64), tier, placement)
        for j in failed:
            out = pool.admit(j)
            if out is not None:
                placement[j] = out
                admitted.append(j)
        donors = pool.donors
    return Admitted(tuple(placement), tuple(admitted), frozenset(donors))


class _DonorPool:
    """Free GPUs plus the extra workers of running elastic jobs, for admitting base demand by donation.

    Local mutable state of the reference admission only. ``room[s]`` bounds what server ``s`` can offer (free GPUs
    plus its donors' removable workers); ``total`` is the exact GPUs offered cluster-wide, so a job that
    cannot fit is rejected in O(1).
    """

    def __init__(self, cl: Cluster, free: np.ndarray, tier: np.ndarray, placement: list) -> None:
        self.cl, self.free, self.tier, self.placement = cl, free, tier, placement
        self.usable = np.flatnonzero(tier >= 0)
        self.spare: dict[int, int] = {}
        self.hosts: dict[int, list[int]] = {}
        for d, pl in enumerate(placement):
            if pl and cl.snap.jobs[d].placement is not None:
                extra = sum(pl.values()) - int(cl.min_w[d])
                if extra > 0:
                    self.spare[d] = extra
                    for srv in pl:
                        self.hosts.setdefault(srv, []).append(d)
        self.room = free.copy()
        for srv, ds in self.hosts.items():
            self.room[srv] += sum(min(self.spare[d], placement[d].get(srv, 0)) * int(cl.gpw[d]) for d in ds)
        self.total = int(free[self.usable].sum()) + sum(e * int(cl.gpw[d]) for d, e in self.spare.items())
        self.donors: set[int] = set()

    def _refresh(self, servers) -> None:
        for srv in servers:
            self.room[srv] = self.free[srv] + sum(
                min(self.spare[d], self.placement[d].get(srv, 0)) * int(self.cl.gpw[d])
                for d in self.hosts.get(srv, ()))

    def admit(self, j: int) -> dict[int, int] | None:
        """Place job ``j``'s base demand (all or nothing), taking donors' extra workers where needed."""
        cl = self.cl
        n, g = int(cl.min_w[j]), int(cl.gpw[j])
        if n * g > self.total:
            return None
        cand = self.usable[self.room[self.usable] >= g]
        cand = cand[np.lexsort((cand, -self.room[cand], self.tier[cand]))]
        free = {}
        changed: dict[int, dict[int, int]] = {}
        spare = {}
        out: dict[int, int] = {}
        left = n
        for srv in cand.tolist():
            f = free.get(srv, int(self.free[srv]))
            while left > 0:
                if f >= g:
                    f -= g
                    out[srv] = out.get(srv, 0) + 1
                    left -= 1
                    continue
                # free one more worker of a donor here: the donor with most spare, then lowest index
                best = None
                for d in self.hosts.get(srv, ()):
                    sp = spare.get(d, self.spare[d])
                    if sp > 0 and changed.get(d, self.placement[d]).get(srv, 0) > 0 and (
                            best is None or (-sp, d) < best[0]):
                        best = ((-sp, d), d)
                if best is None:
                    break
                d = best[1]
                pl = dict(changed.get(d, self.placement[d]))
                pl[srv] -= 1
                if pl[srv] == 0:
                    del pl[srv]
                changed[d] = pl
                spare[d] = spare.get(d, self.spare[d]) - 1
                f += int(cl.gpw[d])
            free[srv] = f
            if left == 0:
                break
        if left > 0:
            return None
        touched = set(free)
        for srv, f in free.items():
            self.free[srv] = f
        for d, pl in changed.items():
            touched.update(self.placement[d])
            self.placement[d] = pl
            self.spare[d] = spare[d]
            self.donors.add(d)
        self.total -= n * g
        self._refresh(touched)
        return out


def _steps(snap: dict, **options):
    s = io.parse_snapshot(io.encode(snap))
    settings = settings_of(s, **options)
    cl = Cluster.of(s)
    state = RoundState(cl)
    rec = reclaim(state, settings)
    state = RoundState(cl, reclaim=rec)
    borrowed = loan(state, settings)
    state = RoundState(cl, reclaim=rec, loan=borrowed)
    queued = rec.queued
    return state, cl, rec, borrowed, queued, settings, dict(zip(queued, times_at_min(cl, queued).tolist(), strict=True))


def _crowded(seed: int, servers: int, jobs: int, gpus: int, reclaim: int) -> dict:
    """Most jobs running and elastic, the rest queued: admission needs donors."""
    return generate_snapshot(servers=servers, jobs=jobs, seed=seed, gpus=gpus, running_share=0.9,
                             elastic_share=0.9, reclaim=reclaim)


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), servers=st.integers(1, 40), jobs=st.integers(1, 200),
       gpus=st.sampled_from([2, 4, 8]), reclaim=st.integers(0, 4), queue=st.sampled_from(["sjf", "fifo", "las"]))
def test_admission_keeps_its_rules_and_matches_the_reference(seed, servers, jobs, gpus, reclaim, queue):
    state, cl, rec, borrowed, queued, settings, times_min = _steps(_crowded(seed, servers, jobs, gpus, reclaim),
                                                                   queue=queue)
    adm = admit(state, settings)
    ref = reference_admit(cl, rec, borrowed, queued, settings, times_min)
    assert adm.placement == ref.placement
    assert adm.admitted == ref.admitted
    assert adm.donors == ref.donors

    usable = usable_servers(cl, rec, borrowed)
    assert (used_gpus(cl, adm.placement) <= cl.gpus).all()
    # the GPUs per server that admission keeps for the later steps (from the changed jobs) are the full count's
    assert np.array_equal(used_gpus(cl, adm.placement), used_gpus(cl, list(adm.placement)))
    for j in adm.admitted:
        assert rec.placement[j] is None
        assert sum(adm.placement[j].values()) == cl.min_w[j]
        assert all(usable[s] and n > 0 for s, n in adm.placement[j].items())
    for j, before in enumerate(rec.placement):
        if before is not None:  # admission never preempts and only takes extra workers
            after = adm.placement[j]
            assert after and cl.min_w[j] <= sum(after.values()) <= sum(before.values())
            assert all(after[s] <= before.get(s, 0) for s in after)
            if sum(after.values()) < sum(before.values()):
                assert j in adm.donors
    for d in adm.donors:
        assert cl.snap.jobs[d].placement is not None


@pytest.mark.parametrize("seed", range(6))
def test_donors_do_not_grow_back_in_the_same_round(seed):
    snap = _crowded(seed, 12, 120, 8, 1)
    state, cl, rec, borrowed, queued, settings, times_min = _steps(snap)
    adm = admit(state, settings)
    decision = decide(io.parse_snapshot(io.encode(snap)))
    ids = [j["id"] for j in snap["jobs"]]
    for d in adm.donors:
        jd = decision.jobs[ids[d]]
        if jd.action == "run":
            assert jd.workers <= sum(adm.placement[d].values())


def test_some_generated_rounds_admit_by_donation():
    """The comparisons above are not vacuous: crowded snapshots do admit jobs with donors."""
    donors = 0
    for seed in range(10):
        state, *_, settings, _times = _steps(_crowded(seed, 12, 120, 8, 1))
        donors += len(admit(state, settings).donors)
    assert donors > 0


def test_decide_leaves_the_garbage_collector_as_it_found_it():
    import gc

    snap = io.parse_snapshot(io.encode(_crowded(1, 8, 40, 8, 1)))
    assert gc.isenabled()
    decide(snap)
    assert gc.isenabled()
    gc.disable()
    try:
        decide(snap)
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(TypeError):
        decide(None)
    assert gc.isenabled()


@st.composite
def _tables(draw):
    """Table throughputs (strictly increasing positive worker counts, positive rates, equal rates included) and
    worker counts inside, at and outside each table's points."""
    from lyra_solver.types import TableThroughput

    rows = draw(st.integers(1, 24))
    tables, xs = [], []
    cols = draw(st.integers(1, 6))
    for _ in range(rows):
        workers = sorted(draw(st.sets(st.integers(1, 40), min_size=1, max_size=6)))
        rate = draw(st.lists(st.sampled_from([1.0, 2.5, 3e-300, 1e308]) | st.floats(1e-3, 1e6),
                             min_size=len(workers), max_size=len(workers)))
        tables.append(TableThroughput(workers=tuple(workers), rate=tuple(rate)))
        xs.append(draw(st.lists(st.integers(0, 45), min_size=cols, max_size=cols)))
    return tables, np.array(xs, dtype=np.int64)


@settings(max_examples=300, deadline=None)
@given(case=_tables())
def test_table_rates_in_one_pass_are_np_interp_bit_for_bit(case):
    """The sjf key (and the value table) interpolate all table rows at once (``values._interp_rows``): the same
    floats as one ``np.interp`` per row, ties of equal rates and points outside the table included."""
    from lyra_solver.values import _interp_rows

    tables, x = case
    got = _interp_rows(tables, x)
    ref = np.array([np.interp(x[i], t.workers, t.rate) for i, t in enumerate(tables)])
    assert got.tobytes() == ref.tobytes()


@settings(max_examples=200, deadline=None)
@given(case=_tables(), first=st.lists(st.booleans(), min_size=48, max_size=48), copies=st.integers(1, 3))
def test_table_rates_at_one_count_are_np_interp_bit_for_bit(case, first, copies):
    """At one count per row (the sjf key's ``T(min)``), :func:`lyra_solver.values._rates` reads a table's first
    rate where the count is its first point and interpolates the others at once: on enough rows for that path
    (copies of the drawn tables, counts moved onto the first point or left anywhere), the floats of one
    ``np.interp`` per row."""
    from lyra_solver.values import _INTERP_ROWS_MIN, _rates

    tables, x = case
    tables = tables * (copies + _INTERP_ROWS_MIN // len(tables))  # at least _INTERP_ROWS_MIN rows
    x = np.array([t.workers[0] if first[i % len(first)] else int(x[i % x.shape[0], 0])
                  for i, t in enumerate(tables)], np.int64).reshape(-1, 1)
    got = _rates(tables, x, np.ones(len(tables), np.int64), 8)
    ref = np.array([np.interp(x[i], t.workers, t.rate) for i, t in enumerate(tables)])
    assert len(tables) >= _INTERP_ROWS_MIN
    assert got.tobytes() == ref.tobytes()


def _mixed(seed: int, servers: int, jobs: int, gpus: int, reclaim: int, grow: int) -> dict:
    """A crowded snapshot whose servers got up to ``grow`` GPUs more each (seeded): free counts and rooms of every
    size, and ties among servers left as generated."""
    snap = _crowded(seed, servers, jobs, gpus, reclaim)
    rng = np.random.default_rng(seed)
    for s in snap["servers"]:
        if grow and rng.random() < 0.5:
            s["gpus"] += int(rng.integers(1, grow + 1))
    return snap


def _both_paths(state, settings):
    """Admission by the Python twin and by the compiled one (forced at every size), and how often the compiled
    kernel ran."""
    from lyra_solver.formulations.mckp import _numba
    from lyra_solver.heuristics import placement as hp

    # numba is a test dependency (the [test] extra): the compiled twin is tested, never skipped
    assert _numba.load(), "numba did not load: install the [test] extra"
    nb = hp._kernels()
    calls = []
    real = nb.admit_all
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(nb, "admit_all", lambda *a: calls.append(1) or real(*a))
        mp.setattr(hp, "COMPILED_MIN_JOBS", 10**18)
        python = admit(state, settings)
        mp.setattr(hp, "COMPILED_MIN_JOBS", 0)
        fast = admit(state, settings)
    return python, fast, len(calls)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), servers=st.integers(1, 40), jobs=st.integers(1, 200),
       gpus=st.sampled_from([1, 2, 4, 8]), reclaim=st.integers(0, 4), grow=st.sampled_from([0, 0, 3, 9]),
       queue=st.sampled_from(["sjf", "fifo", "las"]), zeros=st.booleans())
def test_compiled_admission_is_the_python_twins(seed, servers, jobs, gpus, reclaim, grow, queue, zeros):
    """The compiled admission (:func:`lyra_solver.heuristics._nbadmit.admit_all`) gives the Python passes'
    placements (the same dicts, in the same order), admitted jobs in the same order and donors, on crowded
    clusters of equal servers (ties everywhere) and of mixed sizes, and where running jobs list a usable server
    with no worker (a placement that ``decide_built`` does not refuse: kept as the Python passes keep it); the GPUs
    used that it leaves for the later steps are the full count's."""
    state, cl, rec, borrowed, *_rest, settings, _times = _steps(_mixed(seed, servers, jobs, gpus, reclaim, grow),
                                                               queue=queue)
    if zeros:
        import dataclasses

        usable = np.flatnonzero(usable_servers(cl, rec, borrowed)).tolist()
        placement = [p if not p or j % 3 else {**p, usable[j % len(usable)]: p.get(usable[j % len(usable)], 0)}
                     for j, p in enumerate(rec.placement)]
        state = dataclasses.replace(state, reclaim=dataclasses.replace(rec, placement=tuple(placement)))
    python, fast, calls = _both_paths(state, settings)
    assert calls == (1 if state.reclaimed.queued else 0)
    assert [None if p is None else list(p.items()) for p in fast.placement] == \
           [None if p is None else list(p.items()) for p in python.placement]
    assert fast.admitted == python.admitted
    assert fast.donors == python.donors
    full = used_gpus(cl, list(python.placement))
    assert np.array_equal(used_gpus(cl, fast.placement), full)
    assert np.array_equal(fast.used_after(cl), full) and np.array_equal(python.used_after(cl), full)
    if fast.admitted:  # their dicts made only where the placement is read, once
        assert fast.made is not None and fast.used is not None and not fast.used.flags.writeable
        assert all(fast.base[j] is state.reclaimed.placement[j] for j in fast.admitted)
        assert fast.placement is fast.placement
        # the admitted jobs' GPUs per server that it keeps for the place step: their dicts' sum
        taken = [0] * cl.gpus.shape[0]
        for j in fast.admitted:
            for s, n in fast.placement[j].items():
                taken[s] += n * int(cl.gpw[j])
        assert fast.taken.tolist() == taken and not fast.taken.flags.writeable
    assert python.taken is None and python.made is None and python.placement is python.base


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), servers=st.integers(1, 40), jobs=st.integers(1, 200),
       gpus=st.sampled_from([1, 2, 4, 8]), reclaim=st.integers(0, 4), grow=st.sampled_from([0, 3, 9]),
       objective=st.sampled_from(["jct-reduction", "hesrpt"]))
def test_place_step_with_the_admitted_gpus_kept_is_the_sum_over_dicts(seed, servers, jobs, gpus, reclaim, grow,
                                                                      objective):
    """The place step gives back the admitted jobs' GPUs by the per-server count the compiled admission keeps
    (``Admitted.taken``) instead of reading their dicts, which it has not made (``Admitted.made``): the same
    placements as with every dict made and the count unknown (a wrong count would move best fit decreasing's
    choices or its feasibility)."""
    import dataclasses

    from lyra_solver.steps.place import place
    from lyra_solver.steps.scale import scale

    state, *_rest, settings, _times = _steps(_mixed(seed, servers, jobs, gpus, reclaim, grow), objective=objective)
    _python, fast, _calls = _both_paths(state, settings)
    state = dataclasses.replace(state, admit=fast)
    sc = scale(state, settings)
    state = dataclasses.replace(state, scale=sc)
    got = place(state, settings)
    made = dataclasses.replace(fast, base=fast.placement, taken=None, made=None, used=None)
    ref = place(dataclasses.replace(state, admit=made), settings)
    assert [None if p is None else list(p.items()) for p in got.placement] == \
           [None if p is None else list(p.items()) for p in ref.placement]


def test_compiled_admission_is_not_compared_on_empty_rounds_only():
    """The comparison above sees both passes at work: jobs admitted into free GPUs and by donation."""
    donors = admitted = 0
    for seed in range(6):
        state, *_rest, settings, _times = _steps(_mixed(seed, 12, 120, 8, 1, 3))
        python, fast, _calls = _both_paths(state, settings)
        assert fast.placement == python.placement and fast.donors == python.donors
        donors += len(fast.donors)
        admitted += len(fast.admitted) - len(fast.donors)
    assert donors > 0 and admitted > 0


def _reference_loan(cl, rec) -> tuple[int, ...]:
    """The former loan step (per-job loops over the queued and the running jobs), for comparison."""
    idle = [int(s) for s in np.flatnonzero(cl.kind == 2)]
    usable = usable_servers(cl, rec, ())
    free = int((cl.gpus - used_gpus(cl, list(rec.placement)))[usable].sum())
    demand = 0
    for j in rec.queued:
        demand += int(cl.max_w[j]) * int(cl.gpw[j])
    for j, pl in enumerate(rec.placement):
        if pl:
            demand += (int(cl.max_w[j]) - sum(pl.values())) * int(cl.gpw[j])
    deficit, borrowed = demand - free, []
    for s in sorted(idle, key=lambda s: (-int(cl.gpus[s]), s)):
        if deficit <= 0:
            break
        borrowed.append(s)
        deficit -= int(cl.gpus[s])
    return tuple(sorted(borrowed))


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("empty", [False, True])
def test_loan_demand_is_the_per_job_sum(seed, empty):
    """The loan step's demand summed over every job at once is the per-job sum of queued and running jobs; a job
    whose placement is empty (neither queued nor running) counts for nothing either way."""
    import dataclasses

    from lyra_solver.formulations.vocabulary import ServerKind

    assert int(ServerKind.IDLE) == 2
    snap = generate_snapshot(servers=30, jobs=60 + 20 * seed, seed=seed, running_share=0.5, elastic_share=0.8)
    state, cl, rec, *_rest = _steps(snap)
    if empty:
        running = [j for j, p in enumerate(rec.placement) if p]
        placement = list(rec.placement)
        placement[running[seed % len(running)]] = {}
        rec = dataclasses.replace(rec, placement=tuple(placement))
        state = RoundState(cl, reclaim=rec)
    assert loan(state, None) == _reference_loan(cl, rec)
