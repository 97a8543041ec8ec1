"""The job columns that validation reads (validate.JobColumns) and the round's use of them: the index view, the
admission step's queue keys, the reclaim step's host pairs and the decision's ids, each the same as from the
job structs."""
from __future__ import annotations

import msgspec
import numpy as np
import pytest
from lyra_solver import decide, io, validate_snapshot
from lyra_solver.bench.generate import generate_snapshot
from lyra_solver.steps import _state, admit, decision, reclaim
from lyra_solver.steps._state import Cluster, used_gpus
from lyra_solver.types import PowerThroughput, ProfileThroughput, Snapshot, TableThroughput
from lyra_solver.validate import JobColumns, known_columns
from lyra_solver.values import _KIND, _profile_stack, known_throughputs, read_columns

_SEEDS = range(6)


def _data(seed: int, **kw) -> bytes:
    spec = {"servers": 40 + 10 * seed, "jobs": 150 + 40 * seed, "seed": seed, "running_share": 0.3 + 0.1 * seed,
            "reclaim": seed % 4}
    spec.update(kw)
    return io.encode(generate_snapshot(**spec))


def _structs(monkeypatch):
    """The round as if validation had read no columns (the steps read the job structs)."""
    monkeypatch.setattr(_state, "known_columns", lambda snap: None)


def test_the_columns_are_kept_for_the_validated_snapshot_only():
    data = _data(1)
    parsed = io.parse_snapshot(data)
    assert isinstance(known_columns(parsed), JobColumns)
    from_dict = validate_snapshot(msgspec.json.decode(data))
    assert isinstance(known_columns(from_dict), JobColumns)
    typed = msgspec.json.decode(data, type=Snapshot)  # typed, never validated
    assert known_columns(typed) is None
    copy = validate_snapshot(typed)
    assert copy is not typed
    assert known_columns(typed) is None  # the source of a checked copy: the copy holds them
    assert isinstance(known_columns(copy), JobColumns)
    assert Cluster.of(copy).columns is known_columns(copy)
    assert Cluster.of(typed).columns is None


@pytest.mark.parametrize("seed", _SEEDS)
def test_the_columns_are_the_structs_fields(seed):
    snap = io.parse_snapshot(_data(seed))
    cols = known_columns(snap)
    jobs = snap.jobs
    assert cols.ids == [j.id for j in jobs]
    assert cols.distinct == len(jobs)
    def same(a, values, dtype):
        assert a.dtype == dtype and not a.flags.writeable and a.tolist() == values

    same(cols.gpw, [j.gpus_per_worker for j in jobs], np.int64)
    same(cols.min_w, [j.min_workers for j in jobs], np.int64)
    same(cols.max_w, [j.max_workers for j in jobs], np.int64)
    same(cols.submit, [j.submit_time for j in jobs], np.float64)
    same(cols.work, [j.remaining_work for j in jobs], np.float64)
    assert all(a is j.throughput for a, j in zip(cols.throughputs, jobs, strict=True))
    assert cols.held == [i for i, j in enumerate(jobs) if j.placement is not None]
    same(cols.kinds, [_KIND[type(j.throughput)] for j in jobs], np.int8)
    powers = [j.throughput for j in jobs if type(j.throughput) is PowerThroughput]
    same(cols.rates, [tp.rate_per_worker for tp in powers], np.float64)
    same(cols.exps, [tp.exponent for tp in powers], np.float64)
    assert cols.models == [j.throughput.model for j in jobs if type(j.throughput) is ProfileThroughput]
    kinds = {type(j.throughput) for j in jobs}
    assert kinds == {PowerThroughput, TableThroughput, ProfileThroughput}  # every kind's branch is exercised
    # the placements' entries: server positions, workers, sizes, GPUs used per server
    where, counts, sizes, used = cols.entries
    sid = {s.id: i for i, s in enumerate(snap.servers)}
    placed = [j.placement for j in jobs if j.placement is not None]
    assert where.tolist() == [sid[k] for p in placed for k in p]
    assert counts.tolist() == [v for p in placed for v in p.values()]
    assert sizes.tolist() == [len(p) for p in placed]
    expect = np.zeros(len(snap.servers), np.int64)
    for j in jobs:
        for k, v in (j.placement or {}).items():
            expect[sid[k]] += v * j.gpus_per_worker
    assert used.dtype == np.int64 and np.array_equal(used, expect)
    assert any(size > 1 for size in sizes.tolist())  # multi-entry placements are exercised


def _same_view(a: Cluster, b: Cluster) -> None:
    for name in ("gpus", "kind", "gpw", "min_w", "max_w", "workers"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert not a.workers.flags.writeable
    assert a.held == b.held and a.server_gpus == b.server_gpus and a.sid == b.sid
    assert a.placement == b.placement
    # the same keys in the same order (the decision writes a placement no step replaced in this order)
    assert [list(p.items()) for p in a.placement if p is not None] == \
        [list(p.items()) for p in b.placement if p is not None]
    ua, ub = used_gpus(a, a.placement), used_gpus(b, b.placement)
    assert ua.dtype == ub.dtype and np.array_equal(ua, ub)


@pytest.mark.parametrize("seed", _SEEDS)
@pytest.mark.parametrize("entries", [True, False])
def test_the_index_view_from_the_columns_is_the_structs_view(seed, entries, monkeypatch):
    snap = io.parse_snapshot(_data(seed))
    cols = known_columns(snap)
    if not entries:  # as after a snapshot the quick rules pass left to the full check
        monkeypatch.setattr(cols, "entries", None)
    view = Cluster.of(snap)
    assert view.columns is cols
    _structs(monkeypatch)
    plain = Cluster.of(snap)
    assert plain.columns is None
    _same_view(view, plain)


@pytest.mark.parametrize("seed", _SEEDS)
def test_known_throughputs_are_read_columns(seed):
    snap = io.parse_snapshot(_data(seed))
    cols = known_columns(snap)
    rng = np.random.default_rng(seed)
    for share in (0.0, 0.3, 1.0):
        jobs = sorted(rng.choice(len(snap.jobs), int(share * len(snap.jobs)), replace=False).tolist())
        if seed % 2:
            rng.shuffle(jobs)  # any order of the jobs
        a = known_throughputs(cols, jobs, np.array(jobs, np.int64))
        b = read_columns([snap.jobs[j] for j in jobs])
        assert all(x is y for x, y in zip(a.throughputs, b.throughputs, strict=True))
        assert len(a.throughputs) == len(b.throughputs)
        for name in ("submit_time", "remaining_work", "kinds", "rate_per_worker", "exponent", "model"):
            x, y = getattr(a, name), getattr(b, name)
            assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert set(_profile_stack()[0]) >= set(cols.models)


@pytest.mark.parametrize("seed", _SEEDS)
@pytest.mark.parametrize("options", [
    {"allocation": "exact"},
    {"allocation": "greedy", "reclaim": "exact"},
    # (a CP-SAT limit on wall time varies; half the default deterministic limit still gives CP-SAT's placement on
    # every seed, not the fallback, in under half the time: with the default this option was a twelfth of the suite)
    {"queue": "fifo", "placement": "exact", "deterministic": True, "time_limit": 0.5},
    {"queue": "las", "allocation": "hull"},
])
def test_the_decision_is_the_same_with_and_without_the_columns(seed, options, monkeypatch):
    """Every large-round path that reads the columns taken on a small snapshot (the thresholds lowered): the same
    decision bytes as from the structs."""
    monkeypatch.setattr(admit, "_READ_ONCE_MIN", 1)
    monkeypatch.setattr(decision, "_ARRAYS_MIN_JOBS", 1)
    monkeypatch.setattr(reclaim, "_ARRAYS_MIN_JOBS", 1)
    snap = io.parse_snapshot(_data(seed, reclaim=1 + seed % 3))
    decided = decide(snap, **options)
    if options.get("placement") == "exact":  # the placement ILP's answer, not best fit decreasing's fallback
        assert decided.summary.methods["placement"] == "cpsat"
    got = io.encode(decided)
    with monkeypatch.context() as m:
        _structs(m)
        want = io.encode(decide(snap, **options))
    assert got == want
