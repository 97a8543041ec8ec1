"""The running jobs' time in arrays (the engine's numpy path and its compiled twins) gives the floats of the
scalar loops bit for bit: the loops themselves on random rows, and whole replays, arrays against scalar loops,
compiled against numpy, for policies that scale, preempt, hide running jobs and pack."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from lyra_solver.bench.sim import data_dir, engine, get_policy, load_load_curve, load_philly, map_jobs
from lyra_solver.bench.sim.engine import SimConfig, simulate

DATA = data_dir()
PHILLY = DATA / "philly" / "philly.csv"
QPS = DATA / "alibaba" / "genai_qps.csv"
needs_data = pytest.mark.skipif(not PHILLY.exists() or not QPS.exists(), reason="shared/data not present")


def _kernels():
    """The compiled twins (numba is a test dependency, the ``[test]`` extra: they are tested, never skipped)."""
    from lyra_solver.bench.sim import _nbtime

    return _nbtime


def _rows(seed: int, n: int):
    """Random rows around ``t = 1000``: penalties ending before, at, between and after ``t`` and ``t2``."""
    rng = np.random.default_rng(seed)
    t, t2 = 1000.0, 1000.0 + float(rng.uniform(0.001, 900.0))
    blk = rng.choice([0.0, t, t2, t + (t2 - t) / 3, t2 + 5.0, 1e-3], size=n) + \
        (rng.random(n) < 0.5) * rng.uniform(0.0, 2000.0, n)
    rem = rng.uniform(1e-12, 1e7, n) * rng.choice([1.0, 1e-9, 1e3], size=n)
    rate = rng.uniform(0.01, 5000.0, n)
    wk = rng.integers(1, 65, n).astype(np.float64)
    att = rng.uniform(0.0, 1e8, n)
    return t, t2, rem, rate, blk, wk, att


def _scalar(t, t2, rem, rate, blk, wk, att):
    """The engine's scalar loops (_advance_jobs, _next_completion) on Python floats."""
    rem, att = rem.tolist(), att.tolist()
    dt = t2 - t
    for k, (b, r, w) in enumerate(zip(blk.tolist(), rate.tolist(), wk.tolist(), strict=True)):
        s = b if b > t else t
        if t2 > s:
            rem[k] -= r * (t2 - s)
        att[k] += int(w) * dt
    best = math.inf
    for b, r, q in zip(blk.tolist(), rate.tolist(), rem, strict=True):
        f = (b if b > t2 else t2) + q / r
        best = min(best, f)
    return rem, att, best


def _same(a, b) -> bool:
    return np.array_equal(np.asarray(a, np.float64).view(np.int64), np.asarray(b, np.float64).view(np.int64))


@pytest.mark.parametrize("seed", range(20))
def test_the_array_loops_give_the_scalar_floats(seed):
    t, t2, rem, rate, blk, wk, att = _rows(seed, 1 + 37 * seed)
    want_rem, want_att, want_next = _scalar(t, t2, rem, rate, blk, wk, att)
    nb = _kernels()
    twins = [engine._advance_np, engine._next_completion_np, nb.advance, nb.next_completion]
    for advance, nxt in zip(twins[::2], twins[1::2], strict=True):
        st = np.stack([rem, rate, blk, wk, att])
        r, a = st[0], st[4]
        n = len(r) - 1  # a row beyond n is left alone
        r_last, a_last = r[-1], a[-1]
        upto = advance(n, t, t2, t2 - t, st)
        assert _same(r[:n], want_rem[:n]) and _same(a[:n], want_att[:n]), advance
        assert _same([upto], [nxt(n, t2, st)]), advance  # the next completion of the rows advanced
        assert r[-1] == r_last and a[-1] == a_last
        r[n:], a[n:] = want_rem[n:], want_att[n:]
        got = nxt(len(r), t2, st)
        assert _same([got], [want_next]), nxt
    assert engine._next_completion_np(0, t, np.stack([rem, rate, blk, wk, att])) == math.inf


@pytest.mark.parametrize("seed", range(20))
def test_the_completions_found_by_the_twins_are_the_same(seed):
    """engine._due_np and its compiled twin _nbtime.due pick the same rows, in order, and each is the scalar rule
    of _complete: past the penalty, with the work within its threshold or below what the clock resolves."""
    rng = np.random.default_rng(100 + seed)
    n = 1 + 41 * seed
    t = (1000.0, 9.4e6, 3.0e7)[seed % 3]  # late in a replay the clock resolves a few nanoseconds at best
    blk = rng.choice([0.0, t, t + 1.0, t - 1e-6, np.nextafter(t, np.inf)], size=n)
    work = rng.uniform(1.0, 1e7, n)
    work[rng.random(n) < 0.3] = 1.0  # a second's job: work left past its threshold that the clock cannot resolve
    thr = 1e-9 * np.maximum(1.0, work)
    rem = rng.choice([1.0, 1e-9, 1e-12, 1e-15, 0.0, -1e-12], size=n) * work * rng.choice([1.0, 0.5, 1.5], size=n)
    at = rng.random(n) < 0.1
    rem[at] = thr[at]  # exactly at the threshold
    rate = rng.uniform(0.01, 5000.0, n)
    st = np.stack([rem, rate, blk, np.ones(n), np.zeros(n)])
    want = [k for k in range(n - 1) if blk[k] <= t and (rem[k] <= thr[k] or t + rem[k] / rate[k] <= t)]
    got_np = engine._due_np(n - 1, t, st, thr, np.zeros(n)).tolist()
    out = np.full(n, -1, np.int64)
    m = _kernels().due(n - 1, t, st, thr, out)
    assert got_np == want and out[:m].tolist() == want and (out[m:] == -1).all()
    clock = [k for k in want if rem[k] > thr[k]]  # due only because the clock cannot resolve the time left
    assert (0 < len(clock) < len(want) < n - 1) or n < 300 or t < 1e6  # every kind of row drawn, late and large


@pytest.mark.parametrize("seed", range(10))
def test_the_unkept_rows_found_by_the_twins_are_the_same(seed):
    """quiet._unkept_np and its compiled twin _nbtime.unkept list the same rows, in order: those of an elastic job
    not found kept at its size (another size, or none found: -1) or at a work at least its own."""
    from lyra_solver.bench.sim import quiet

    rng = np.random.default_rng(200 + seed)
    jobs, n = 50 + 97 * seed, 1 + 83 * seed
    idx = rng.permutation(jobs)[:n].astype(np.int64)
    wk = rng.integers(1, 9, n).astype(np.float64)
    rem = rng.choice([-1e-12, 0.0, 5.0, 1e3, 1e6], size=n) * rng.choice([1.0, 1.0000001], size=n)
    elastic = rng.random(jobs) < 0.7
    kept_w = np.where(rng.random(jobs) < 0.2, -1.0, rng.integers(1, 9, jobs).astype(np.float64))
    kept_w[idx] = np.where(rng.random(n) < 0.6, wk, kept_w[idx])  # most at their size: the work decides
    kept_r = rng.choice([0.0, 5.0, 1e3, 1e6], size=jobs)
    want = [k for k in range(n) if elastic[idx[k]] and (kept_w[idx[k]] != wk[k] or max(rem[k], 0.0) > kept_r[idx[k]])]
    out = np.full(jobs, -1, np.int64)
    m = _kernels().unkept(n, idx, wk, rem, elastic, kept_w, kept_r, out)
    assert quiet._unkept_np(idx, wk, rem, elastic, kept_w, kept_r).tolist() == want
    assert out[:m].tolist() == want and (out[m:] == -1).all()
    by_work = [k for k in want if kept_w[idx[k]] == wk[k]]  # listed for their work alone
    assert (0 < len(by_work) < len(want) < n) or n < 100


def _replay(policy: str, monkeypatch, *, arrays: bool, compiled: bool, check: bool = True):
    monkeypatch.setattr(engine, "ARRAYS", arrays)
    if compiled:
        _kernels()
        monkeypatch.setattr(engine._mckp_numba, "loaded", lambda: True)
    else:
        monkeypatch.setattr(engine, "_time_kernels", lambda: None)
    specs = map_jobs(load_philly(PHILLY, start="2017-10-09 06:00", limit=60), seed=2, restart_penalty=30.0,
                     preemption_penalty=300.0)
    cfg = SimConfig(training_servers=2, inference_servers=3, interval=300.0, load=load_load_curve(QPS),
                    tiresias_threshold=600.0, check=check)
    res = simulate(specs, get_policy(policy), cfg)
    return dataclasses.replace(res, decide_ms=[])


@needs_data
@pytest.mark.parametrize("policy", ["lyra", "elastic", "tiresias", "optimus", "lyra-pack"])
def test_a_replay_with_time_in_arrays_is_the_scalar_replay(policy, monkeypatch):
    scalar = _replay(policy, monkeypatch, arrays=False, compiled=False)
    assert scalar.counters["rounds"] > 10
    # with check (rows compared with the records at every advance, the next completion kept since the advance
    # with the one found again) and without (the next completion kept is taken)
    for check in (True, False):
        assert _replay(policy, monkeypatch, arrays=True, compiled=False, check=check) == scalar
    _kernels()
    for check in (True, False):
        assert _replay(policy, monkeypatch, arrays=True, compiled=True, check=check) == scalar
