"""Lyra's value table from columns (values.lyra_table, the scale step's path) against the table of JobOptions."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lyra_solver import io
from lyra_solver.bench.generate import generate_snapshot
from lyra_solver.steps._state import Scaled
from lyra_solver.values import ValueTable, lyra_table, lyra_table_of_jobs, value_table

from tests.solver.test_values import job_options, profile_options

_ARRAYS = ("values", "weights", "times", "sizes", "min_workers")


def _columns(jobs):
    ints = [np.array([getattr(j, f) for j in jobs], np.int64)
            for f in ("min_workers", "max_workers", "gpus_per_worker", "current_workers")]
    floats = [np.array([getattr(j, f) for j in jobs], np.float64) for f in ("remaining_work", "restart_penalty")]
    return [j.throughput for j in jobs], ints, floats


def _assert_same(a, b):
    for name in _ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name
    assert a.objective == b.objective and a.ages is None and a.job_weights is None


@settings(max_examples=60, deadline=None)
@given(jobs=st.one_of(st.lists(st.one_of(job_options(), profile_options()), min_size=1, max_size=15),
                   st.lists(profile_options(), min_size=1, max_size=15)),  # all profiles: the compiled table
       server_gpus=st.sampled_from([4, 8, 16]), compiled=st.booleans())
def test_lyra_table_is_value_table_bit_for_bit(jobs, server_gpus, compiled):
    """Every kind of throughput, with the package's compiled kernels loaded or not: the same arrays."""
    from lyra_solver import values
    from lyra_solver.formulations.mckp._numba import load

    if compiled:
        assert load()
    tps, (mins, maxs, gpw, cur), (work, pen) = _columns(jobs)
    with np.errstate(invalid="ignore", divide="ignore"), pytest.MonkeyPatch.context() as mp:
        if not compiled:
            mp.setattr(values, "_numba_loaded", lambda: False)
        got = lyra_table(tps, mins, maxs, gpw, cur, work, pen, server_gpus=server_gpus)
        ref = value_table(jobs, server_gpus=server_gpus, backend="numpy")
        # from the structs (JobOptions have the fields it reads), some rows' restart not charged
        charged = np.arange(len(jobs)) % 3 != 1
        of_jobs = lyra_table_of_jobs(jobs, mins, maxs, gpw, cur, charged, server_gpus=server_gpus)
        uncharged = lyra_table(tps, mins, maxs, gpw, cur, work, np.where(charged, pen, 0.0), server_gpus=server_gpus)
    _assert_same(got, ref)
    _assert_same(of_jobs, uncharged)
    if charged.all() or not (pen > 0).any():
        _assert_same(of_jobs, ref)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), reclaim=st.integers(0, 3), running=st.floats(0.5, 0.9))
def test_scale_step_from_columns_is_the_options_table(seed, reclaim, running):
    """The scale step takes Lyra's table from the index view's columns (:func:`lyra_table`), for the jobs with
    more than one option; building it from :func:`job_options` instead gives the same rows, the same first
    column (the values of the jobs left out) and the same worker counts, on rounds with shrunk jobs (a reclaim)
    and donors (a crowded queue)."""
    import lyra_solver.steps.scale as scale_mod

    state, opts = _admitted(seed, reclaim, running)
    taken = []
    real = scale_mod._lyra_table
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scale_mod, "_lyra_table", lambda *a: taken.append(real(*a)) or taken[-1])
        fast = scale_mod.scale(state, opts)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scale_mod, "_lyra_table", lambda *a: None)
        ref = scale_mod.scale(state, opts)
    assert fast.jobs == ref.jobs
    if fast.jobs:
        assert len(taken) == 1 and taken[0] is not None
        _assert_rows(fast, ref.table)
    assert fast.targets.tolist() == ref.targets.tolist() and fast.report == ref.report
    # and at any capacity (a wide one leaves the shrunk jobs' and donors' rows more than one option)
    admitted = set(state.admitted.admitted)
    jobs = tuple(j for j, p in enumerate(state.admitted.placement) if p)
    cur = {j: 0 if j in admitted else sum(state.admitted.placement[j].values()) for j in jobs}
    for capacity in (0, 7, 1000):
        if jobs:
            cols = _columns_at(state, capacity)
            assert cols.run.tolist() == list(jobs) and cols.held.tolist() == [cur[j] for j in jobs]
            table, rows, fixed = scale_mod._lyra_table(state.cluster, cols, "numpy")
            _assert_rows(Scaled(jobs, table, np.zeros(0), None, rows, fixed),
                         value_table(scale_mod.job_options(state, jobs, cur, capacity),
                                     server_gpus=state.cluster.server_gpus, backend="numpy"))


def _columns_at(state, capacity: int, compiled: bool = False):
    """The scale step's columns (:func:`lyra_solver.steps.scale._columns`) of ``state`` after admission, with the
    used GPUs and usable servers set so that the capacity is ``capacity``: the first server alone usable, its free
    GPUs the capacity less the GPUs held above base demand."""
    import lyra_solver.steps.scale as scale_mod
    from lyra_solver._nbvalues import scale_columns
    from lyra_solver.steps._state import worker_counts

    cl, adm, rec = state.cluster, state.admitted, state.reclaimed
    counts = worker_counts(cl, adm.placement, adm.admitted)
    marks = [np.fromiter(sorted(a), np.int64, len(a)) for a in (adm.admitted, rec.shrunk, adm.donors)]
    usable = np.zeros(cl.gpus.shape[0], bool)
    extra = scale_mod._columns_numpy(cl, counts.copy(), *marks, cl.gpus, usable).capacity  # nothing free
    usable[0] = True
    used = cl.gpus.copy()
    used[0] -= capacity - extra
    if compiled:
        return scale_mod._Columns(*scale_columns(counts, *marks, cl.min_w, cl.max_w, cl.gpw, cl.gpus, used, usable))
    cols = scale_mod._columns_numpy(cl, counts, *marks, used, usable)
    assert cols.capacity == capacity
    return cols


def _assert_rows(scaled, ref) -> None:
    """The scale step's table is the rows of ``ref`` (the whole table) with more than one option, and its fixed
    values are ``ref``'s first column for every job, bit for bit."""
    assert scaled.rows is not None and scaled.fixed is not None
    assert scaled.rows.tolist() == np.flatnonzero(ref.sizes > 1).tolist()
    assert scaled.fixed.tobytes() == ref.values[:, 0].tobytes()
    if scaled.rows.size:
        m = int(ref.sizes[scaled.rows].max())
        part = ValueTable(ref.values[scaled.rows, :m], ref.weights[scaled.rows, :m], ref.times[scaled.rows, :m],
                          ref.sizes[scaled.rows], ref.min_workers[scaled.rows])
        _assert_same(scaled.table, part)
    else:
        assert scaled.table.values.shape[0] == 0


def _admitted(seed: int, reclaim: int, running: float, servers: int = 6, jobs: int = 30):
    """The round state of a generated snapshot after its first three steps (reclaim, loan, admit), and its
    settings (deterministic)."""
    from lyra_solver.pipeline import settings_of
    from lyra_solver.steps import STEPS, RoundState
    from lyra_solver.steps._state import Cluster

    snap = io.parse_snapshot(json.dumps(generate_snapshot(servers=servers, jobs=jobs, seed=seed, reclaim=reclaim,
                                                          running_share=running)).encode())
    state = RoundState(Cluster.of(snap))
    opts = dataclasses.replace(settings_of(snap), deterministic=True)
    for name, step in STEPS[:3]:
        state = dataclasses.replace(state, **{name: step(state, opts)})
    return state, opts


#: How many examples of the test below had shrunk jobs and donors (the test of the counts checks both occur)
_MARKS_SEEN = {"shrunk": 0, "donors": 0}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), reclaim=st.integers(0, 3), running=st.floats(0.3, 0.95),
       capacity=st.integers(-5, 400), size=st.sampled_from([(6, 30), (12, 90)]))
def test_compiled_scale_columns_are_the_numpy_columns(seed, reclaim, running, capacity, size):
    """The scale step's columns by the compiled twin (:func:`lyra_solver._nbvalues.scale_columns`) equal numpy's
    (:func:`lyra_solver.steps.scale._columns_numpy`), array for array, dtype included, at any capacity (the
    options' cut and the width follow it), with shrunk jobs and donors."""
    from lyra_solver.formulations.mckp._numba import load

    assert load()
    state, _ = _admitted(seed, reclaim, running, *size)
    if not any(state.admitted.placement):
        return
    _MARKS_SEEN["shrunk"] += bool(state.reclaimed.shrunk)
    _MARKS_SEEN["donors"] += bool(state.admitted.donors)
    ref, got = _columns_at(state, capacity), _columns_at(state, capacity, compiled=True)
    for name, a, b in zip(ref._fields, ref, got, strict=True):
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.tolist() == b.tolist(), name
        else:
            assert int(a) == int(b), name


def test_the_columns_test_met_shrunk_jobs_and_donors():
    """The examples above covered a reclaim that shrank jobs and an admission with donors (else the marks were
    not compared)."""
    if not any(_MARKS_SEEN.values()):
        test_compiled_scale_columns_are_the_numpy_columns()
    assert _MARKS_SEEN["shrunk"] and _MARKS_SEEN["donors"], _MARKS_SEEN
