"""The vectorised value table against the plain scalar reference (hypothesis)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lyra_solver.throughput import rate, rate_one
from lyra_solver.types import PROFILE_MODELS, PowerThroughput, ProfileThroughput, TableThroughput
from lyra_solver.values import JobOptions, value_table, value_table_scalar


@st.composite
def job_options(draw, kinds=("power", "table", "profile")):
    lo = draw(st.integers(1, 12))
    hi = draw(st.integers(lo, lo + 40))
    kind = draw(st.sampled_from(kinds))
    if kind == "power":
        tp = PowerThroughput(rate_per_worker=draw(st.floats(0.1, 1e4)), exponent=draw(st.floats(0.05, 1.0)))
    elif kind == "table":
        inner = draw(st.lists(st.integers(lo, hi), max_size=5))
        pts = sorted({draw(st.integers(1, lo)), hi, *inner})
        rates = draw(st.lists(st.floats(0.1, 1e4), min_size=len(pts), max_size=len(pts)))
        tp = TableThroughput(workers=pts, rate=rates)
    else:
        tp = ProfileThroughput(model=draw(st.sampled_from(PROFILE_MODELS)))
    running = draw(st.booleans())
    return JobOptions(
        throughput=tp, min_workers=lo, max_workers=hi, remaining_work=draw(st.floats(0, 1e9)),
        gpus_per_worker=draw(st.sampled_from([1, 2, 4, 8])),
        current_workers=draw(st.integers(lo, hi)) if running else 0,
        restart_penalty=draw(st.floats(0, 1e3)),
    )


@settings(max_examples=60, deadline=None)
@given(jobs=st.lists(job_options(), min_size=1, max_size=12), server_gpus=st.sampled_from([4, 8, 16]))
def test_vectorised_table_matches_scalar(jobs, server_gpus):
    table = value_table(jobs, server_gpus=server_gpus)
    ref = value_table_scalar(jobs, server_gpus=server_gpus)
    assert table.values.shape[0] == len(jobs)
    for j, row in enumerate(ref):
        assert table.sizes[j] == len(row)
        for k, (w, v) in enumerate(row):
            assert table.weights[j, k] == w
            # V = T(min) - T(w) - penalty cancels: compare within the magnitudes it is computed from. The rates of
            # a table throughput agree to an ulp of its largest rate, not of the rate itself (the scalar
            # interpolation at a breakpoint next to a 40,000x steeper segment: 0.1 against 0.1 + 4e-13), so a
            # time may differ by 1e-11 of itself (hypothesis found 2.2e-6 s on 610,520 s)
            scale = abs(table.times[j, 0]) + abs(table.times[j, k]) + jobs[j].restart_penalty
            assert np.isclose(table.values[j, k], v, rtol=1e-9, atol=1e-6 * max(1.0, abs(v)) + 1e-10 * scale)
        assert np.all(np.isneginf(table.values[j, len(row):]))


def test_value_of_min_option_is_zero_or_restart():
    jobs = [JobOptions(PowerThroughput(rate_per_worker=10, exponent=1.0), 2, 4, 100.0, 1, 3, 7.0)]
    t = value_table(jobs)
    assert t.values[0, 0] == -7.0  # running at 3, going to 2 restarts it
    assert np.isclose(t.values[0, 1], 100 / 20 - 100 / 30)  # staying at 3 workers: no restart
    assert np.isclose(t.values[0, 2], 100 / 20 - 100 / 40 - 7.0)


@given(w=st.integers(1, 200), gpw=st.sampled_from([1, 2, 4, 8]), model=st.sampled_from(PROFILE_MODELS))
def test_profile_rate_vector_matches_scalar(w, gpw, model):
    tp = ProfileThroughput(model=model)
    assert np.isclose(rate(tp, [w], gpus_per_worker=gpw)[0], rate_one(tp, w, gpus_per_worker=gpw))


def test_profile_drops_when_spanning_another_server():
    tp = ProfileThroughput(model="bert")
    r = rate(tp, np.arange(1, 17), server_gpus=8)
    assert r[8] < r[7]  # 9 workers need two 8-GPU servers
    assert np.all(np.diff(r[:8]) > 0)


def test_table_interpolates_linearly():
    tp = TableThroughput(workers=[1, 3], rate=[10.0, 30.0])
    assert np.allclose(rate(tp, [1, 2, 3]), [10, 20, 30])


@settings(max_examples=40, deadline=None)
@given(jobs=st.lists(job_options(), min_size=1, max_size=12), server_gpus=st.sampled_from([4, 8, 16]))
def test_table_times_are_the_throughput_models_bit_for_bit(jobs, server_gpus):
    """Each row's times are ``work / rate`` with the rate of :func:`lyra_solver.throughput.rate` at the row's
    worker counts, exactly (the table gathers every profile job at once; decisions must not move by an ulp)."""
    from lyra_solver.values import TIME_CAP

    table = value_table(jobs, server_gpus=server_gpus)
    for j, job in enumerate(jobs):
        n = int(table.sizes[j])
        w = np.arange(job.min_workers, job.max_workers + 1)
        r = rate(job.throughput, w, gpus_per_worker=job.gpus_per_worker, server_gpus=server_gpus)
        with np.errstate(over="ignore", divide="ignore"):
            expected = np.minimum(job.remaining_work / r, TIME_CAP)
        if isinstance(job.throughput, ProfileThroughput):  # power and table rows are computed as before
            assert np.array_equal(table.times[j, :n], expected), (j, job)
        else:  # to an ulp of the largest rate of a table (see the test above)
            assert np.allclose(table.times[j, :n], expected, rtol=1e-10)


@settings(max_examples=40, deadline=None)
@given(jobs=st.lists(job_options(), min_size=0, max_size=12), server_gpus=st.sampled_from([4, 8, 16]),
       data=st.data())
def test_times_at_is_the_tables_cell_bit_for_bit(jobs, server_gpus, data):
    """:func:`times_at` (the admission's ``T(min)``, every kind at once) gives the float of the value table's
    cell at the same count, exactly: the sjf order must not move by an ulp."""
    from lyra_solver.values import times_at

    counts = [data.draw(st.integers(j.min_workers, j.max_workers)) for j in jobs]
    got = times_at([j.throughput for j in jobs], np.array(counts, np.int64), [j.remaining_work for j in jobs],
                   np.array([j.gpus_per_worker for j in jobs], np.int64), server_gpus=server_gpus)
    assert got.shape == (len(jobs),)
    if not jobs:
        return
    table = value_table(jobs, server_gpus=server_gpus)
    cells = table.times[np.arange(len(jobs)), np.array(counts) - table.min_workers]
    assert np.array_equal(got, cells)
    profiles = [j for j in jobs if isinstance(j.throughput, ProfileThroughput)]
    if profiles:  # and by the compiled table once the kernels are loaded (lyra_solver._nbvalues)
        from lyra_solver.formulations.mckp._numba import load

        assert load()
        keep = [i for i, j in enumerate(jobs) if isinstance(j.throughput, ProfileThroughput)]
        again = times_at([j.throughput for j in profiles], np.array(counts, np.int64)[keep],
                         [j.remaining_work for j in profiles],
                         np.array([j.gpus_per_worker for j in profiles], np.int64), server_gpus=server_gpus)
        assert np.array_equal(again, got[keep], equal_nan=True)


@settings(max_examples=40, deadline=None)
@given(jobs=st.lists(job_options(kinds=("profile",)), min_size=1, max_size=24),
       server_gpus=st.sampled_from([4, 8, 16]), data=st.data())
def test_times_at_of_a_few_profiles_is_the_tables_path(jobs, server_gpus, data):
    """A few profile jobs (values._SCALAR_MAX, a simulator round's jobs new to the queue) take one scalar rate
    each: the same floats as the table's paths, numpy's and the compiled one, on every count and work (zero
    work and huge work capped at TIME_CAP included), and times_at takes it up to _SCALAR_MAX jobs."""
    import lyra_solver.values as values
    from lyra_solver.formulations.mckp._numba import load

    counts = np.array([data.draw(st.integers(1, j.max_workers + 3)) for j in jobs], np.int64)
    work = [data.draw(st.sampled_from([0.0, j.remaining_work, 1e300])) for j in jobs]
    tps = [j.throughput for j in jobs]
    gpw = np.array([j.gpus_per_worker for j in jobs], np.int64)
    kinds = values._kinds(tps)
    scalar = values._times_scalar(tps, counts.tolist(), work, gpw.tolist(), server_gpus)
    assert scalar is not None
    with pytest.MonkeyPatch.context() as mp:  # the numpy table
        mp.setattr(values, "_numba_loaded", lambda: False)
        numpy_path = values._times_vector(tps, counts.reshape(-1, 1), work, gpw, server_gpus, kinds, None)
    assert load()  # the compiled table
    compiled = values._times_vector(tps, counts.reshape(-1, 1), work, gpw, server_gpus, kinds, None)
    assert scalar.tobytes() == numpy_path.tobytes() == compiled.tobytes()
    taken = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(values, "_times_scalar", lambda *a: taken.append(1) or scalar)
        got = values.times_at(tps, counts, work, gpw, server_gpus=server_gpus)
    assert got.tobytes() == scalar.tobytes() and bool(taken) is (len(jobs) <= values._SCALAR_MAX)


def _read_once_is_the_same(jobs, server_gpus, counts):
    from types import SimpleNamespace

    from lyra_solver.values import _kinds, read_columns, times_at

    structs = [SimpleNamespace(throughput=j.throughput, remaining_work=j.remaining_work, submit_time=i * 0.5)
               for i, j in enumerate(jobs)]
    read = read_columns(structs)
    tps = [j.throughput for j in jobs]
    assert all(a is b for a, b in zip(read.throughputs, tps, strict=True))
    assert np.array_equal(read.submit_time, [s.submit_time for s in structs])
    assert np.array_equal(read.remaining_work, [j.remaining_work for j in jobs])
    assert np.array_equal(read.kinds, _kinds(tps)) and read.kinds.dtype == np.int8
    gpw = np.array([j.gpus_per_worker for j in jobs], np.int64)
    want = times_at(tps, np.array(counts, np.int64), [j.remaining_work for j in jobs], gpw, server_gpus=server_gpus)
    got = times_at(read.throughputs, np.array(counts, np.int64), read.remaining_work, gpw, server_gpus=server_gpus,
                   read=read)
    assert np.array_equal(got, want, equal_nan=True)


@settings(max_examples=40, deadline=None)
@given(jobs=st.lists(job_options(), min_size=0, max_size=40), server_gpus=st.sampled_from([4, 8, 16]),
       data=st.data())
def test_times_at_on_columns_read_once_is_the_same(jobs, server_gpus, data):
    """The admission of a large queue reads the sjf key's columns in one pass (values.read_columns): the same
    columns, and the same floats from times_at, as the separate passes, every kind mixed ..."""
    _read_once_is_the_same(jobs, server_gpus, [data.draw(st.integers(j.min_workers, j.max_workers)) for j in jobs])


@settings(max_examples=20, deadline=None)
@given(jobs=st.lists(job_options(kinds=("table",)), min_size=16, max_size=30), server_gpus=st.sampled_from([4, 8, 16]),
       at_min=st.booleans(), data=st.data())
def test_times_at_on_columns_read_once_is_the_same_for_many_tables(jobs, server_gpus, at_min, data):
    """... and with enough measured tables for the batched interpolation (values._INTERP_ROWS_MIN), at each
    job's base demand (the key's count: a table's first point or not) or anywhere in its range."""
    counts = [j.min_workers if at_min else data.draw(st.integers(j.min_workers, j.max_workers)) for j in jobs]
    _read_once_is_the_same(jobs, server_gpus, counts)


@st.composite
def profile_options(draw):
    lo = draw(st.integers(1, 40))
    hi = draw(st.integers(lo, lo + 70))
    running = draw(st.booleans())
    return JobOptions(
        throughput=ProfileThroughput(model=draw(st.sampled_from(PROFILE_MODELS))), min_workers=lo, max_workers=hi,
        remaining_work=draw(st.sampled_from([0.0, 1e-300, 1.0, 3e7, 1e300])) if draw(st.booleans())
        else draw(st.floats(0, 1e9)),
        gpus_per_worker=draw(st.sampled_from([1, 2, 3, 4, 8, 16])),
        current_workers=draw(st.integers(max(lo - 2, 1), hi + 2)) if running else 0,
        restart_penalty=draw(st.floats(0, 1e3)),
    )


@settings(max_examples=80, deadline=None)
@given(jobs=st.lists(profile_options(), min_size=1, max_size=20), server_gpus=st.sampled_from([4, 8, 16]),
       objective=st.sampled_from(["jct-reduction", "hesrpt", "srpt", "pollux"]))
def test_compiled_profile_table_is_the_numpy_table_bit_for_bit(jobs, server_gpus, objective):
    """With the package's numba kernels loaded, a table of ``profile`` jobs is one compiled call
    (:mod:`lyra_solver._nbvalues`); every array equals the numpy path's exactly (nan where it has nan)."""
    import numba  # noqa: F401  (a test dependency: the kernels are tested, not skipped)
    from lyra_solver import values
    from lyra_solver.formulations.mckp._numba import load

    assert load()
    ages = [float(i * 37 + 1) for i in range(len(jobs))]
    taken = []
    real = values._compiled_profile_table
    with np.errstate(invalid="ignore", divide="ignore"):  # a job of no work and no penalty: 0 / 0 in both paths
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(values, "_compiled_profile_table", lambda *a: taken.append(real(*a)) or taken[-1])
            fast = value_table(jobs, server_gpus=server_gpus, backend="numpy", objective=objective, ages=ages)
        assert len(taken) == 1 and taken[0] is not None  # the compiled table was taken
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(values, "_numba_loaded", lambda: False)
            ref = value_table(jobs, server_gpus=server_gpus, backend="numpy", objective=objective, ages=ages)
    for name in ("values", "weights", "times", "sizes", "min_workers"):
        a, b = getattr(fast, name), getattr(ref, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
