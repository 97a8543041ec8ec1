"""The exact MCKP core (formulations/mckp/core.py): brute force, kernel paths, limits, determinism.

The brute force and the checker here are written from the problem statement and share no code with the core.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lyra_solver.formulations import Status
from lyra_solver.formulations.mckp import MCKPProblem, solve_mckp
from lyra_solver.formulations.mckp.core import count_numpy, scan_numpy, select_numpy, solve_core, step_numpy

pytest.importorskip("numba")  # a test dependency: both kernel paths are compared, not skipped


def brute(weights, values, capacity):
    best = None
    for choice in itertools.product(*(range(len(w)) for w in weights)):
        if sum(weights[i][k] for i, k in enumerate(choice)) <= capacity:
            val = sum(values[i][k] for i, k in enumerate(choice))
            if best is None or val > best:
                best = val
    return best


def checked(weights, values, capacity, res):
    """Feasibility and objective of a result, recomputed here; returns the objective."""
    assert res.choice is not None and len(res.choice) == len(weights)
    assert sum(weights[i][k] for i, k in enumerate(res.choice)) <= capacity
    val = sum(values[i][k] for i, k in enumerate(res.choice))
    assert math.isclose(res.objective, val, rel_tol=1e-9, abs_tol=1e-9)
    return val


@st.composite
def instances(draw):
    """Small instances rich in ties, negative values, zero weights and, sometimes, a huge capacity."""
    n = draw(st.integers(1, 6))
    weights, values = [], []
    for _ in range(n):
        k = draw(st.integers(1, 5))
        weights.append(draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 5, 8, 13]), min_size=k, max_size=k)))
        values.append(draw(st.lists(st.sampled_from([-7.0, -1.5, 0.0, 1.0, 2.5, 4.0, 9.0]), min_size=k,
                                    max_size=k)))
    capacity = draw(st.one_of(st.integers(0, 40), st.just(10**15)))
    return weights, values, capacity


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.booleans())
def test_core_against_brute_force(inst, use_greedy):
    _check_core_against_brute_force(inst, use_greedy)


def _check_core_against_brute_force(inst, use_greedy: bool, *, bound_is_optimum: bool = False) -> None:
    """Both paths of the core (numpy, numba) through the front door, which answers the infeasible instances
    before dispatch: the brute-force optimum, a checked choice, and the same choice, bound and state count."""
    weights, values, capacity = inst
    opt = brute(weights, values, capacity)
    p = MCKPProblem.from_ragged(weights, values, capacity)
    a = solve_mckp(p, method="core", use_numba=False, use_greedy=use_greedy)
    b = solve_mckp(p, method="core", use_numba=True, use_greedy=use_greedy)
    if opt is None:
        assert a.status is Status.INFEASIBLE and b.status is Status.INFEASIBLE
        return
    assert a.status is Status.OPTIMAL
    if bound_is_optimum:
        assert a.bound == pytest.approx(opt, abs=1e-9)
    assert checked(weights, values, capacity, a) == pytest.approx(opt, abs=1e-9)
    assert a.choice == b.choice and a.bound == b.bound and a.stats["states"] == b.stats["states"]
    # the default path of a cold process: numpy, switching to the compiled kernels mid-search (here at once)
    with _switch_at_once():
        c = solve_mckp(p, method="core", use_greedy=use_greedy)
    assert c.choice == a.choice and c.bound == a.bound and c.stats["states"] == a.stats["states"]
    assert c.stats["numba"] == int(c.stats["classes"] > 0)


@contextlib.contextmanager
def _switch_at_once():
    """The default path as a new process takes it (numpy: the kernels not loaded), with the mid-search switch to
    the compiled kernels due at the first step."""
    from lyra_solver.formulations.mckp import _numba

    saved = _numba.want, _numba.SWITCH_AFTER_S
    _numba.want, _numba.SWITCH_AFTER_S = (lambda n_items: False), -1.0
    try:
        yield
    finally:
        _numba.want, _numba.SWITCH_AFTER_S = saved


def _random(seed: int) -> MCKPProblem:
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(20, 120)), int(rng.integers(2, 12))
    kind = seed % 3
    if kind == 0:  # weakly correlated, integer values, many ties on the break gradient
        w = rng.integers(0, 200, (n, m))
        v = (w + rng.integers(-5, 6, (n, m))).astype(float)
    elif kind == 1:  # strongly correlated profiles
        w = np.cumsum(np.sort(rng.integers(1, 100, (n, m)), axis=1), axis=1)
        v = np.cumsum(np.sort(rng.integers(1, 100, (n, m)), axis=1) + 10, axis=1).astype(float)
    else:  # float values, some negative
        w = rng.integers(0, 60, (n, m))
        v = np.round(rng.normal(0.0, 50.0, (n, m)), 4)
    sizes = rng.integers(1, m + 1, n)
    valid = np.arange(m)[None, :] < sizes[:, None]
    lo = int(np.where(valid, w, 10**9).min(axis=1).sum())
    hi = int(np.where(valid, w, 0).max(axis=1).sum())
    return MCKPProblem.from_padded(w, v, sizes, lo + int(rng.uniform(0.2, 0.7) * (hi - lo)))


@pytest.mark.parametrize("seed", range(12))
def test_kernel_paths_same_answer_and_match_dp(seed):
    """numba and numpy kernels: same choice, bound and counts; the objective is the DP's."""
    p = _random(seed)
    a = solve_core(p, use_numba=False)
    b = solve_core(p, use_numba=True)
    assert a.choice == b.choice and a.bound == b.bound
    assert {k: v for k, v in a.stats.items() if k != "numba"} == {k: v for k, v in b.stats.items() if k != "numba"}
    assert a.stats.get("numba", 0) == 0 and b.stats.get("numba", 0) == int(b.stats.get("classes", 0) > 0)
    dp = solve_mckp(p, method="dp")
    assert a.status is Status.OPTIMAL and dp.status is Status.OPTIMAL
    assert a.objective == pytest.approx(dp.objective, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_step_kernels_return_the_same_arrays(seed):
    """One step on random sorted states: the numba kernel's arrays equal the numpy definition's."""
    from lyra_solver.formulations.mckp._numba import kernels

    nb = kernels()
    count_nb, step_nb, scan_nb = nb.count, nb.step, nb.scan
    rng = np.random.default_rng(100 + seed)
    S = int(rng.integers(1, 400))
    W = np.unique(rng.integers(0, 5000, S)).astype(np.int64)
    V = np.cumsum(rng.uniform(0.0, 3.0, W.shape[0]).round(1) + 0.1)
    k = int(rng.integers(1, 8))
    dw = np.unique(rng.integers(-200, 300, k)).astype(np.int64)
    dv = np.sort(rng.uniform(-200, 300, dw.shape[0]).round(0))
    dv = dv + np.arange(dv.shape[0]) * 1e-3
    cap = int(rng.integers(500, 4000))
    xu = np.concatenate([[0.0], np.cumsum(rng.integers(1, 50, 30).astype(float))])
    yu = np.concatenate([[0.0], np.cumsum(np.sort(rng.uniform(0.1, 1.0, 30))[::-1] * np.diff(xu))])
    xd = np.concatenate([[0.0], np.cumsum(rng.integers(1, 50, 30).astype(float))])
    yd = np.concatenate([[0.0], np.cumsum(np.sort(rng.uniform(1.0, 2.0, 30)) * np.diff(xd))])
    z = float(V[np.searchsorted(W, cap, side="right") - 1]) if W[0] <= cap else -1e9
    for tail in ((xu, yu, xd, yd), (np.zeros(0),) * 4):
        for mod in ((1, 0), (7, 3), (10, 0)):  # with and without a congruence lifting the Lagrangian test
            args = (W, V, dw, dv, cap, z, 0.5, 1.0, 0.8, 1.3, 0.25, *tail, *mod)
            got, ref = step_nb(*args), step_numpy(*args)
            for x, y in zip(got[:4], ref[:4], strict=True):
                assert np.array_equal(np.asarray(x), np.asarray(y))
            assert got[4:] == ref[4:]
        for thr in (z + 0.5, z - 50.0, -np.inf):
            s_args = (W, V, cap, 1.0, 0.8, 1.3, 0.25, *tail, thr)
            assert tuple(scan_nb(*s_args)) == scan_numpy(*s_args)
    assert count_nb(W, V, dw, dv, cap, z, 1.0) == count_numpy(W, V, dw, dv, cap, z, 1.0)


def _strongly(n: int, m: int, seed: int, congruent: bool = False) -> MCKPProblem:
    """Strongly correlated classes (value = weight + 10 per step); unless ``congruent``, one value is moved by 1
    so that no congruence (``core.congruence``) helps and the search stays hard (the memory tests need that)."""
    rng = np.random.default_rng(seed)
    wk = np.sort(rng.integers(1, 1001, (n, m)), axis=1)
    w = np.cumsum(wk, axis=1)
    v = np.cumsum(wk + 10, axis=1).astype(float)
    if not congruent:
        v[0, 0] -= 1.0
    return MCKPProblem.from_padded(w, v, np.full(n, m), int((w[:, 0].sum() + w[:, -1].sum()) // 2))


@pytest.mark.parametrize("seed", range(4))
def test_congruence_bound_proves_strongly_correlated(seed):
    """value - weight is a multiple of 10 in every class: the congruence (g = 10) closes a gap the LP bound
    leaves; both paths agree with each other and with the DP, and fewer states are needed than without it."""
    from lyra_solver.formulations.mckp.core import _prepare, congruence

    p = _strongly(60, 6, seed, congruent=True)
    prep = _prepare(p, False)
    g, r = congruence(p, prep.lp.alpha)
    assert prep.lp.alpha >= 1.0 and g == 10 and (g, r) == (prep.mod_g, prep.mod_r)
    a, b = solve_core(p, use_numba=False), solve_core(p, use_numba=True)
    dp = solve_mckp(p, method="dp")
    assert a.status is Status.OPTIMAL and a.objective == dp.objective and a.choice == b.choice
    assert a.stats == {**b.stats, "numba": 0}
    ws, vs = p.to_ragged()
    assert checked(ws, vs, p.capacity, a) == dp.objective
    assert congruence(_strongly(60, 6, seed), prep.lp.alpha) == (1, 0)
    assert congruence(p, prep.lp.alpha, True) == (g, r)
    assert congruence(_strongly(60, 6, seed), prep.lp.alpha, True) == (1, 0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.sampled_from([1, 2, 3, 10, 12]), st.integers(0, 5), st.integers(1, 40))
def test_compiled_congruence_equals_numpy(seed, g, mu, n):
    """The compiled congruence scan against numpy's on integral instances built with a congruence modulo ``g``
    (and ragged classes, negative values, sometimes one item that breaks it)."""
    from lyra_solver.formulations.mckp.core import congruence

    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 7))
    sizes = rng.integers(1, m + 1, n)
    w = rng.integers(0, 50, (n, m))
    v = (mu * w + g * rng.integers(-20, 20, (n, m)) + rng.integers(-9, 9, n)[:, None]).astype(float)
    if seed % 3 == 0:
        v[int(rng.integers(n)), int(rng.integers(m))] += 1.0
    p = MCKPProblem.from_padded(w, v, sizes, int(rng.integers(0, 10**6)))
    for alpha in (float(mu), mu + 0.5, 0.0):
        assert congruence(p, alpha, True) == congruence(p, alpha)


@st.composite
def congruent_instances(draw):
    """Small integral instances whose values are ``mu w + g k + r_i`` (a congruence modulo ``g`` at
    ``mu``), so that the lifted Lagrangian test is exercised against brute force."""
    n = draw(st.integers(1, 5))
    mu = draw(st.sampled_from([0, 1, 2]))
    g = draw(st.sampled_from([2, 3, 10]))
    weights, values = [], []
    for _ in range(n):
        k = draw(st.integers(1, 5))
        r = draw(st.integers(-3, 3))
        w = draw(st.lists(st.integers(0, 20), min_size=k, max_size=k))
        q = draw(st.lists(st.integers(-2, 4), min_size=k, max_size=k))
        weights.append(w)
        values.append([float(mu * wj + g * qj + r) for wj, qj in zip(w, q, strict=True)])
    capacity = draw(st.integers(0, 60))
    return weights, values, capacity


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(congruent_instances(), st.booleans())
def test_core_with_congruence_against_brute_force(inst, use_greedy):
    _check_core_against_brute_force(inst, use_greedy, bound_is_optimum=True)


@pytest.mark.parametrize("use_numba", [False, True])
def test_memory_limit_returns_feasible_with_valid_bound(use_numba):
    p = _strongly(150, 10, 3)
    full = solve_core(p)
    assert full.status is Status.OPTIMAL
    res = solve_core(p, max_bytes=20_000, use_numba=use_numba)
    assert res.status is Status.FEASIBLE and res.backend_status == "memory_limit"
    ws, vs = p.to_ragged()
    checked(ws, vs, p.capacity, res)
    assert res.objective <= full.objective
    assert res.bound >= full.objective and res.gap is not None and res.gap > 0
    other = solve_core(p, max_bytes=20_000, use_numba=not use_numba)
    assert other.choice == res.choice and other.bound == res.bound


@pytest.mark.parametrize(("seed", "max_bytes"), [(3, 3_000_000), (9, 1_000_000)])
def test_links_dropped_under_the_memory_limit_choice_rebuilt(seed, max_bytes):
    """A limit that holds the state lists but not the links between them: the links are dropped, the search
    still proves the optimum and the incumbent's choice is rebuilt by replaying the steps (both paths alike)."""
    p = _strongly(150, 10, seed)
    full = solve_core(p)
    ws, vs = p.to_ragged()
    got = [solve_core(p, max_bytes=max_bytes, use_numba=nb) for nb in (False, True)]
    for res in got:
        assert res.status is Status.OPTIMAL and res.stats["rebuild_states"] > 0
        assert checked(ws, vs, p.capacity, res) == full.objective
    assert got[0].choice == got[1].choice and full.stats["rebuild_states"] == 0


_ORDER_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from lyra_solver.formulations.mckp import MCKPProblem, solve_mckp
    from lyra_solver.formulations.mckp.core import solve_core

    def inst(seed):
        rng = np.random.default_rng(seed)
        n, m = 300, 8
        wk = np.sort(rng.integers(1, 200, (n, m)), axis=1)
        w = np.cumsum(wk, axis=1)
        v = (np.cumsum(wk, axis=1) + rng.integers(-3, 4, (n, m))).astype(float)
        return MCKPProblem.from_padded(w, v, np.full(n, m), int((w[:, 0].sum() + w[:, -1].sum()) // 2))

    out = []
    for first in sys.argv[1].split(","):
        for seed in range(3):
            if first == "default":
                out.append(list(solve_mckp(inst(seed)).choice))
            else:
                out.append(list(solve_core(inst(seed), use_numba=first == "numba").choice))
    print(json.dumps(out))
""")


def test_path_does_not_depend_on_what_ran_before():
    """Same instances, numba first or numpy first, in fresh processes: the same choices (issue 7 item 5; the
    default path may now depend on what ran before, its answer never does)."""
    runs = []
    for order in ("numba,numpy,default", "numpy,numba,default", "default,numpy,numba"):
        proc = subprocess.run([sys.executable, "-c", _ORDER_SCRIPT, order], capture_output=True, text=True,
                              check=True)
        choices = json.loads(proc.stdout)
        runs.append(dict(zip(order.split(","), (choices[i * 3:(i + 1) * 3] for i in range(3)), strict=True)))
    first = runs[0]["numpy"]
    for run in runs:
        for key in ("numba", "numpy", "default"):
            assert run[key] == first


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_compiled_reduction_equals_numpy_reduction(inst):
    """Flat hulls and the undominated items of each class from the compiled pass: the same arrays as numpy."""
    from lyra_solver.formulations.mckp import core
    from lyra_solver.formulations.mckp._lp import flat_hulls, undominated, upper_hull
    from lyra_solver.formulations.mckp._numba import kernels

    nb = kernels()
    weights, values, capacity = inst
    p = MCKPProblem.from_ragged(weights, values, capacity)
    red = undominated(p)
    ref = flat_hulls(red, upper_hull(red), p)
    start, items, hw, hv, srt, vmax, integral = nb.prepare_hulls(p.weights, p.values, p.sizes)
    for a, b in zip((start, items, hw, hv, srt), (ref.start, ref.items, ref.weights, ref.values, ref.sorted_rows),
                    strict=True):
        assert a.shape == b.shape and np.array_equal(a, b)
    vals = [x for row in values for x in row]
    assert vmax == max(abs(x) for x in vals) and bool(integral) == all(float(x).is_integer() for x in vals)
    for i in range(p.n_classes):
        got = nb.class_items(p.weights, p.values, i, int(p.sizes[i]))
        want = core._class_items_numpy(p, i)
        k = int(red.counts[i])
        assert np.array_equal(want[0], red.weights[i, :k]) and np.array_equal(want[2], red.items[i, :k])
        for a, b in zip(got, want, strict=True):
            assert a.shape == b.shape and np.array_equal(a, b)
        lp = int(len(want[0]) // 2)  # any undominated item may be the LP item
        bw, bv = int(want[0][lp]), float(want[1][lp])
        # alpha >= 0: the Lagrangian test first, on the raw items (_select_survivors); alpha < 0: sort first
        for alpha, lag_ub, thr in ((0.5, 3.0, 1.0), (2.0, 0.0, 5.0), (1.0, 10.0, -10.0), (0.0, 1.0, 0.5),
                                   (1.0, 0.5, 0.0), (-0.5, 2.0, 1.0)):
            got = nb.select_items(p.weights, p.values, i, int(p.sizes[i]), bw, bv, alpha, lag_ub, thr)
            ref = select_numpy(p, i, bw, bv, alpha, lag_ub, thr)
            for a, b in zip(got, ref, strict=True):
                assert a.shape == b.shape and np.array_equal(a, b)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_compiled_phases_equal_numpy_phases(inst):
    """LP relaxation, regrets and greedy fill from the numba kernels: the same arrays as the numpy twins, and the
    flat LP the same relaxation as the padded one."""
    from lyra_solver.formulations.mckp import core
    from lyra_solver.formulations.mckp._lp import lp_relaxation, undominated, upper_hull

    weights, values, capacity = inst
    p = MCKPProblem.from_ragged(weights, values, capacity)
    red = undominated(p)
    hull = upper_hull(red)
    ref = lp_relaxation(red, hull, p.capacity)
    _, got, _, _ = core._hulls(p, True)
    for f in ("feasible", "bound", "value", "weight", "frac_class", "alpha", "fraction", "frac_gain",
              "max_increment"):
        assert getattr(got, f) == getattr(ref, f), f
    for f in ("levels", "up_slope", "down_slope"):
        assert np.array_equal(getattr(got, f), getattr(ref, f)), f
    rows = np.arange(p.n_classes)
    assert not ref.feasible or np.array_equal(got.lp_pos, red.items[rows, ref.lp_pos])
    a = core._prepare(p, False)
    b = core._prepare(p, True)  # one kernel call for hulls, LP and the LP part's arrays (prepare_lp)
    assert type(a) is type(b)
    la, lb = (a.lp, b.lp) if isinstance(a, core._Prepared) else (a, b)
    for f in ("feasible", "bound", "value", "weight", "frac_class", "alpha", "fraction", "frac_gain",
              "max_increment"):
        assert getattr(la, f) == getattr(lb, f), f
    if la.feasible:
        for f in ("levels", "lp_pos", "up_slope", "down_slope"):
            assert np.array_equal(getattr(la, f), getattr(lb, f)), f
    if isinstance(a, core._Prepared):
        assert np.array_equal(a.regret, b.regret) and a.tol == b.tol
        for f in ("base_w", "base_v", "lam_up", "lam_dn"):
            assert np.array_equal(getattr(a, f), getattr(b, f)) and getattr(a, f).dtype == getattr(b, f).dtype, f
        assert (a.mod_g, a.mod_r) == (b.mod_g, b.mod_r)
        for cap in (p.capacity, p.capacity + 7, p.capacity + 10**6):
            pa, va, ra = core._greedy_fill_numpy(a, p, cap)
            pb, vb, rb = core._greedy_fill(b, p, cap, True)
            assert np.array_equal(pa, pb) and va == vb and ra == rb


@pytest.mark.parametrize("seed", range(6))
def test_compiled_fit_prefix_bucket_rounds_equal_numpy(seed):
    """Keys over many orders of magnitude, of both signs, with signed zeros, ties and one infinite key: the
    compiled bucket and pivot rounds give numpy's prefix."""
    from lyra_solver.formulations.mckp._lp import fit_prefix
    from lyra_solver.formulations.mckp._numba import kernels

    rng = np.random.default_rng(50 + seed)
    n = int(rng.integers(3000, 40000))
    key = np.exp(rng.uniform(-30, 30, n)) * rng.choice([-1.0, 1.0], n, p=[0.3, 0.7])
    key[rng.integers(0, n, n // 10)] = 0.0
    key[rng.integers(0, n, n // 10)] = -0.0
    key[rng.integers(0, n, n // 20)] = 7.25
    if seed % 2:
        key[rng.integers(0, n)] = np.inf
    weight = rng.integers(1, 50, n).astype(np.int64)
    total = int(weight.sum())
    for room in (0, total // 7, total // 2, total - 3, total + 1):
        t_ref, b_ref, u_ref = fit_prefix(key, weight, room)
        t_got, b_got, u_got = kernels().fit_prefix(key, weight, room)
        assert np.array_equal(t_ref, t_got) and int(b_got) == b_ref and int(u_got) == u_ref


@pytest.mark.parametrize("seed", range(6))
def test_compiled_fit_prefix_equals_numpy(seed):
    """The weighted selection on large inputs with many ties (the partition rounds run) agrees with numpy."""
    from lyra_solver.formulations.mckp._lp import fit_prefix
    from lyra_solver.formulations.mckp._numba import kernels

    rng = np.random.default_rng(seed)
    n = int(rng.integers(300, 5000))
    key = rng.integers(0, [3, 50, 10**6][seed % 3], n).astype(np.float64) / 7.0
    weight = rng.integers(1, 20, n).astype(np.int64)
    for room in (0, int(weight.sum()) // 3, int(weight.sum()) - 1, int(weight.sum()) + 5):
        t_ref, b_ref, u_ref = fit_prefix(key, weight, room)
        t_got, b_got, u_got = kernels().fit_prefix(key, weight, room)
        assert np.array_equal(t_ref, t_got) and int(b_got) == b_ref and int(u_got) == u_ref


_CACHE_SCRIPT = textwrap.dedent("""
    import json
    import numpy as np
    from lyra_solver.formulations.mckp import MCKPProblem
    from lyra_solver.formulations.mckp import _nbkernels as nb
    from lyra_solver.formulations.mckp.core import solve_core

    rng = np.random.default_rng(7)
    w = np.cumsum(rng.integers(1, 50, (800, 8)), axis=1)
    v = (w + rng.integers(-5, 6, (800, 8))).astype(float)
    p = MCKPProblem.from_padded(w, v, np.full(800, 8), int(w[:, 3].sum()))
    solve_core(p, use_numba=True, max_bytes=200_000)  # links dropped: the replay runs too
    misses = {name: sum(f.stats.cache_misses.values()) for name, f in vars(nb).items()
              if hasattr(f, "stats") and f.signatures}
    print(json.dumps(misses))
""")


def test_compiled_kernels_load_from_the_disk_cache():
    """A second process loads every kernel it calls from numba's disk cache instead of compiling it (a kernel
    calling another held in a closure was compiled again in every process: seconds on each first solve)."""
    runs = [json.loads(subprocess.run([sys.executable, "-c", _CACHE_SCRIPT], capture_output=True, text=True,
                                      check=True).stdout) for _ in range(2)]
    assert runs[1] and all(m == 0 for m in runs[1].values()), runs[1]


@pytest.mark.parametrize("kind", ["weakly", "strongly", "zigzag", "uncorrelated_binding"])
def test_compiled_lp_tail_equals_numpy_tail(kind):
    """The LP tail of the classes outside the core: the compiled kernel's breakpoints equal ``_LPTail``'s, element
    for element, on random subsets of classes (ties among equal slopes included: R = 100 makes many)."""
    from lyra_solver.bench import mckp_instances as gen
    from lyra_solver.formulations.mckp import core
    from lyra_solver.formulations.mckp._numba import kernels

    rng = np.random.default_rng(PISINGER_SEED := 11)
    checked = 0
    for it in range(12):
        p = gen.pisinger(kind, int(rng.integers(2, 300)), int(rng.integers(2, 12)), R=(100, 10_000)[it % 2],
                         seed=PISINGER_SEED + it)
        prep = core._prepare(p, False)
        if not isinstance(prep, core._Prepared):
            continue
        mask = rng.random(p.n_classes) < 0.8
        ref = core._LPTail(prep.hulls, prep.lp.levels, mask)
        got = kernels().lp_tail(prep.hulls.weights, prep.hulls.values, prep.hulls.start, prep.lp.levels, mask)
        for a, b in zip((ref.xu, ref.yu, ref.xd, ref.yd), got, strict=True):
            assert a.shape == b.shape and np.array_equal(a, b)
        checked += 1
    assert checked >= 6


_COLD_SCRIPT = textwrap.dedent("""
    import contextlib, io, json, sys
    import numpy as np
    from lyra_solver.bench import mckp_instances as gen
    from lyra_solver.cli import main
    from lyra_solver.formulations.mckp import _numba
    from lyra_solver.formulations.mckp.core import default_use_numba

    p = gen.cluster(1000, 32, seed=3)
    classes = [{"weights": [int(x) for x in p.weights[i, :p.sizes[i]]],
                "values": [float(x) for x in p.values[i, :p.sizes[i]]]} for i in range(p.n_classes)]
    with open(sys.argv[1], "w") as f:
        json.dump({"capacity": int(p.capacity), "classes": classes}, f)
    heavy = ("numba", "llvmlite", "scipy", "ortools", "pulp", "torch", "cupy", "matplotlib", "ray")
    out = {}
    argv = {"mckp": ["mckp", sys.argv[1]], "decide": ["decide", sys.argv[2]]}[sys.argv[3]]
    with contextlib.redirect_stdout(io.TextIOWrapper(io.BytesIO())):
        code = main(argv)
    out[argv[0]] = [code, sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in heavy})]
    small = gen.cluster(20, 8, seed=1)
    out["small_default"] = default_use_numba(small)
    _numba.charge(_numba.LOAD_AFTER_S)
    out["after_charge"] = default_use_numba(small)
    out["loaded_before_solve"] = _numba.loaded()
    out["stats_numba"] = __import__("lyra_solver.formulations.mckp", fromlist=["x"]).solve_mckp(
        gen.pisinger("weakly", 100, 10, seed=107)).stats["numba"]  # (a search: not closed by the face fill)
    out["loaded_after_solve"] = _numba.loaded()
    print(json.dumps(out))
""")


def test_cold_process_imports_no_heavy_library_and_loads_kernels_when_they_pay(tmp_path):
    """Issue 22 (cold start): in a new process, `lyra-solver mckp` on a 1,000 x 32 instance and `decide` on the
    example import neither numba nor any solver library; a small problem takes the numpy path until the process
    has spent LOAD_AFTER_S in numpy-path solves, then the kernels load and stay."""
    example = Path(__file__).resolve().parents[2] / "examples" / "cluster.json"
    for command in ("mckp", "decide"):  # one command per process, as on the command line
        proc = subprocess.run([sys.executable, "-c", _COLD_SCRIPT, str(tmp_path / "inst.json"), str(example),
                               command], capture_output=True, text=True, check=True,
                              env={**os.environ, "LYRA_NO_NUMBA": ""})
        out = json.loads(proc.stdout)
        assert out[command] == [0, []]
        assert out["small_default"] is False and out["after_charge"] is True
        assert out["loaded_before_solve"] is False
        assert out["stats_numba"] == 1 and out["loaded_after_solve"] is True


def test_default_path_loads_kernels_for_large_problems_only():
    """The size rule alone (nothing loaded, nothing charged): numpy below LOAD_MIN_ITEMS, compiled from it."""
    script = textwrap.dedent("""
        import json
        import numpy as np
        from lyra_solver.formulations.mckp import MCKPProblem, _numba
        from lyra_solver.formulations.mckp.core import default_use_numba

        def p(n):
            return MCKPProblem.from_padded(np.zeros((n, 1), dtype=np.int64), np.zeros((n, 1)), np.ones(n, int), 0)

        print(json.dumps([default_use_numba(p(_numba.LOAD_MIN_ITEMS - 1)), _numba.loaded(),
                          default_use_numba(p(_numba.LOAD_MIN_ITEMS))]))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          env={**os.environ, "LYRA_NO_NUMBA": ""})
    assert json.loads(proc.stdout) == [False, False, True]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 25), m=st.integers(1, 30), seed=st.integers(0, 2**31 - 1), collinear=st.booleans())
def test_compiled_hull_sweep_gives_the_numpy_hull(n, m, seed, collinear):
    """upper_hull with the kernels loaded (hull_stacks) returns the numpy sweep's arrays exactly, collinear and
    equal-slope points included (the greedy's LP bound, and so every greedy decision, cannot depend on the path)."""
    from lyra_solver.formulations.mckp import _lp, _numba

    rng = np.random.default_rng(seed)
    w = np.sort(rng.integers(0, 40, (n, m)), axis=1)
    steps = rng.integers(0, 3, (n, m)) if collinear else rng.integers(-3, 6, (n, m))
    v = (steps * (w if collinear else 1)).astype(np.float64).cumsum(axis=1)
    problem = MCKPProblem.from_padded(w, v, rng.integers(1, m + 1, n), 10**6)
    red = _lp.undominated(problem)
    assert _numba.load()
    compiled = _lp.upper_hull(red)
    saved = _lp.loaded
    _lp.loaded = lambda: False
    try:
        reference = _lp.upper_hull(red)
    finally:
        _lp.loaded = saved
    for name in ("pos", "counts", "weights", "values"):
        got, want = getattr(compiled, name), getattr(reference, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name


@pytest.mark.parametrize("kind", ["weakly", "strongly", "zigzag", "uncorrelated_binding"])
def test_sorted_tail_increments_filtered_equal_lp_tail(kind):
    """The compiled search's tail: the increments sorted once (``_tail_orders``) and filtered by the classes
    outside the core (``_tail_filter``) give the numpy reference's breakpoints (``core._LPTail``), element for
    element, for any subset."""
    from lyra_solver.bench import mckp_instances as gen
    from lyra_solver.formulations.mckp import core
    from lyra_solver.formulations.mckp._numba import kernels

    nb = kernels()
    rng = np.random.default_rng(13)
    for it in range(8):
        p = gen.pisinger(kind, int(rng.integers(2, 300)), int(rng.integers(2, 12)), R=(100, 10_000)[it % 2],
                         seed=31 + it)
        prep = core._prepare(p, True)
        if not isinstance(prep, core._Prepared):
            continue
        h = prep.hulls
        orders = nb._tail_orders(h.weights, h.values, h.start, prep.lp.levels)
        for share in (0.0, 0.5, 0.95, 1.0):
            mask = rng.random(p.n_classes) < share
            ref = core._LPTail(h, prep.lp.levels, mask)
            got = nb._tail_filter(*orders, mask)
            for a, b in zip((ref.xu, ref.yu, ref.xd, ref.yd), got, strict=True):
                assert a.shape == b.shape and np.array_equal(a, b)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([0.0, -0.0, 1.5, -1.5, 2.0, -2.5, 1e-300, -1e300, np.inf, -np.inf, 7.25]),
                max_size=60),
       st.lists(st.floats(allow_nan=False), max_size=300))
def test_stable_radix_argsort_equals_mergesort(ties, others):
    """The compiled search's radix argsort: ``np.argsort(kind="mergesort")``'s order (ties in index order, -0.0
    equal to 0.0, infinities) on keys without NaN."""
    from lyra_solver.formulations.mckp._numba import kernels

    key = np.array(ties + others, dtype=np.float64)
    assert np.array_equal(kernels()._stable_argsort(key), np.argsort(key, kind="mergesort"))


def test_compiled_search_handed_back_under_a_time_limit_gives_the_same_answer(monkeypatch):
    """A time limit's work budget spent: the compiled search hands the search back to the Python loop, which
    answers as the compiled search does without a limit (the same choice and counters)."""
    from lyra_solver.bench import mckp_instances as gen
    from lyra_solver.formulations.mckp import core

    p = gen.pisinger("weakly", 100, 10, R=1000, seed=107)
    free = solve_core(p, use_numba=True)
    assert free.stats["classes"] > 2
    from lyra_solver.formulations.mckp._numba import kernels

    nb, codes = kernels(), []
    search = nb.search
    monkeypatch.setattr(nb, "search", lambda *a: codes.append((got := search(*a))[0]) or got)
    monkeypatch.setattr(core, "COMPILED_WORK_PER_S", 0.0)  # no work allowed: handed back before the second step
    limited = solve_core(p, use_numba=True, time_limit=60.0)
    assert codes == [-1]
    assert limited.status is Status.OPTIMAL
    assert (limited.choice, limited.stats, limited.backend_status) == (free.choice, free.stats, free.backend_status)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300), max_size=400),
       st.integers(0, 2))
def test_compiled_sum_is_numpys_sum_bit_for_bit(xs, reps):
    """``np_sum``: numpy's pairwise float sum, the same double (sign of zero included), so that the one-call solve
    sets the same tolerance and compares the same values as the numpy lines of ``core._prepare``."""
    from lyra_solver.formulations.mckp._numba import kernels

    a = np.array(xs * (1 + 40 * reps), dtype=np.float64)  # lengths past 128 and several halvings
    want, got = float(a.sum()), kernels().np_sum(a)
    assert got == want and math.copysign(1.0, got) == math.copysign(1.0, want)


def test_compiled_sum_long_arrays():
    from lyra_solver.formulations.mckp._numba import kernels

    rng = np.random.default_rng(5)
    for n in (0, 1, 7, 8, 9, 127, 128, 129, 255, 256, 1000, 8191, 8192, 8193, 70_001, 300_000):
        for a in (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 16, n), rng.random(n), np.full(n, -0.0)):
            want, got = float(a.sum()), kernels().np_sum(a)
            assert got == want and math.copysign(1.0, got) == math.copysign(1.0, want), n


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([0.0, -0.0, 1.0, 2.0, -3.5, 1e300, np.inf, -np.inf]), min_size=1, max_size=50),
       st.lists(st.floats(allow_nan=True), max_size=300), st.data())
def test_kth_smallest_equals_partition(ties, others, data):
    """The lazy orders' threshold: ``np.partition(key, K - 1)[K - 1]`` (NaN keys included)."""
    from lyra_solver.formulations.mckp._numba import kernels

    key = np.array(ties + others, dtype=np.float64)
    K = data.draw(st.integers(1, key.shape[0]))
    got, want = kernels()._kth_smallest(key, K), np.partition(key, K - 1)[K - 1]
    assert got == want or (np.isnan(got) and np.isnan(want))


def _solve_instances():
    from lyra_solver.bench import mckp_instances as gen

    for kind in ("uncorrelated", "weakly", "strongly", "subset_sum"):
        for s in range(4):
            yield gen.pisinger(kind, (30, 100, 400)[s % 3], (5, 10)[s % 2], R=(100, 1000)[s % 2], seed=200 + s)
    for s in range(3):
        yield gen.cluster(300, 16, seed=300 + s)
    rng = np.random.default_rng(17)
    for it in range(60):
        n, m = int(rng.integers(1, 30)), int(rng.integers(1, 9))
        w = rng.integers(0, 20, (n, m))
        v = rng.integers(-3, 40, (n, m)).astype(float) if it % 2 else np.round(rng.random((n, m)) * 9, 2)
        yield MCKPProblem.from_padded(w, v, rng.integers(1, m + 1, n), int(rng.integers(0, 10 * n + 1)))


@pytest.mark.parametrize("use_greedy", [True, False])
def test_one_call_solve_equals_the_kernel_calls(monkeypatch, use_greedy):
    """``solve_compiled`` (the prepare and start phases, the root test and the search in one kernel call) answers
    as the same kernels called one by one from Python do: status, objective, bound, choice, backend status and
    counters."""
    from lyra_solver.formulations.mckp import core

    fused = []
    for p in _solve_instances():
        fused.append(solve_core(p, use_numba=True, use_greedy=use_greedy))
    monkeypatch.setattr(core, "_solve_compiled", lambda *a: None)
    for p, got in zip(_solve_instances(), fused, strict=True):
        want = solve_core(p, use_numba=True, use_greedy=use_greedy)
        assert (got.status, got.objective, got.bound, got.choice, got.backend_status, dict(got.stats)) == \
            (want.status, want.objective, want.bound, want.choice, want.backend_status, dict(want.stats))


def test_step_kernel_equals_numpy_on_many_small_steps():
    """The step kernel (pairwise merges of the items' candidate lists into a Pareto front) against the numpy
    definition on many small random steps: ties of weight and value between items, states below and above the
    capacity, with and without the tail and a congruence, integral and fractional values."""
    from lyra_solver.formulations.mckp._numba import kernels

    nb = kernels()
    rng = np.random.default_rng(3)
    for t in range(1500):
        W = np.unique(rng.integers(0, 200, int(rng.integers(0, 60)))).astype(np.int64)
        pool = np.arange(-50, 400) if t % 2 else np.round(rng.random(600) * 300, 1)
        V = np.unique(rng.choice(pool, W.shape[0], replace=False)).astype(float)
        W = W[: V.shape[0]]
        dw = np.unique(rng.integers(-40, 40, int(rng.integers(0, 9)))).astype(np.int64)
        k = dw.shape[0]
        dv = ((dw * rng.uniform(0.5, 2.0) + rng.integers(-10, 10, k)).astype(float) if t % 3
              else np.round(rng.random(k) * 50 - 10))
        alpha = float(rng.uniform(0.3, 2.5))
        if t % 4 == 0:
            xu = np.concatenate([[0.0], np.cumsum(rng.integers(1, 30, 6)).astype(float)])
            yu = np.concatenate([[0.0], np.cumsum(np.sort(rng.random(6) * 40)[::-1])])
            xd = np.concatenate([[0.0], np.cumsum(rng.integers(1, 30, 6)).astype(float)])
            yd = np.concatenate([[0.0], np.cumsum(np.sort(rng.random(6) * 60))])
        else:
            xu = yu = xd = yd = np.zeros(0)
        mod = (1, 0) if t % 5 else (int(rng.integers(2, 5)), int(rng.integers(0, 2)))
        args = (W, V, dw, dv, int(rng.integers(50, 250)), float(rng.integers(-50, 300)),
                0.999999 if t % 2 else 1e-9, alpha, alpha * rng.uniform(0.3, 1), alpha * rng.uniform(1, 2),
                float(rng.integers(0, 20)), xu, yu, xd, yd, *mod)
        got, ref = nb.step(*args), step_numpy(*args)
        for x, y in zip(got[:4], ref[:4], strict=True):
            assert np.array_equal(np.asarray(x), np.asarray(y)), t
        assert got[4:] == ref[4:], t


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([0.0, -0.0, 0.5, 1.0, 1.0, 2.5, 3.0, 1e-300, 7.0]), min_size=0, max_size=40),
       st.lists(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6), max_size=200),
       st.data())
def test_short_prefix_equals_fit_prefix(ties, others, data):
    """The greedy start's ``fit_prefix_short`` (one pass per element of a short prefix) gives ``fit_prefix``'s
    taken elements, break element and weight used, for short and long prefixes and tied keys."""
    from lyra_solver.formulations.mckp._numba import kernels

    nb = kernels()
    key = np.array(ties + others, dtype=np.float64)
    weight = np.array(data.draw(st.lists(st.integers(1, 50), min_size=key.shape[0], max_size=key.shape[0])),
                      dtype=np.int64)
    room = data.draw(st.integers(0, int(weight.sum()) + 5))
    taken, brk, used = nb.fit_prefix_short(key, weight, room, np.empty(key.shape[0] + 3, dtype=np.bool_))
    want = nb.fit_prefix(key, weight, room)
    assert np.array_equal(taken, want[0]) and (brk, used) == (want[1], want[2])


@pytest.mark.parametrize("seed", range(4))
def test_both_compiled_selections_equal_numpy(seed):
    """``fit_prefix``'s two compiled selections (bit buckets for finite keys, the float bucketing and pivot rounds
    for the others) each give numpy's prefix on finite keys with ties, signed zeros and several magnitudes."""
    from lyra_solver.formulations.mckp._lp import fit_prefix
    from lyra_solver.formulations.mckp._numba import kernels

    nb = kernels()
    rng = np.random.default_rng(70 + seed)
    n = int(rng.integers(1, 30000))
    key = np.exp(rng.uniform(-20, 20, n)) * rng.choice([-1.0, 1.0], n, p=[0.2, 0.8])
    key[rng.integers(0, n, n // 8 + 1)] = -0.0
    key[rng.integers(0, n, n // 8 + 1)] = 0.0
    key[rng.integers(0, n, n // 5 + 1)] = 3.5
    weight = rng.integers(1, 40, n).astype(np.int64)
    total = int(weight.sum())
    for room in (0, 1, total // 5, total // 2, total - 1, total):
        want = fit_prefix(key, weight, room)
        for got in (nb.fit_prefix(key, weight, room), nb._fit_prefix_general(key, weight, room)):
            assert np.array_equal(want[0], got[0]) and (int(got[1]), int(got[2])) == (want[1], want[2])


@pytest.mark.parametrize(("seed", "runs"), [(107, 1), (1065, 2), (1033, 2)])
def test_aspiration_guesses_runs_and_answer(monkeypatch, seed, runs):
    """Integral values: the search runs first from the guess just below the LP bound (``first_guess``), then
    from ``g - 1``, ... while a guess fails (seeds 1065 and 1033: the optimum is the bound rounded down less 1);
    the answer is the DP's optimum and both kernel paths give the same choice, bound and counters."""
    from lyra_solver.bench import mckp_instances as gen
    from lyra_solver.formulations.mckp import core
    from lyra_solver.formulations.mckp._numba import kernels

    p = gen.pisinger("weakly", 100, 10, R=1000, seed=seed)
    nb, z0s = kernels(), []
    search = nb.search
    monkeypatch.setattr(nb, "search", lambda *a: z0s.append(a[14]) or search(*a))
    monkeypatch.setattr(core, "_solve_compiled", lambda *a: None)  # the runs one by one through _search_compiled
    a = solve_core(p, use_numba=True)
    prep = core._prepare(p, True)
    g = core.first_guess(prep.lp.bound, prep.tol)
    assert prep.tol > 0.5 and g == np.floor(prep.lp.bound) - 1.0
    assert z0s == [g - x for x in (0.0, 1.0, 3.0)[:runs]]
    b = solve_core(p, use_numba=False)
    monkeypatch.undo()
    c = solve_core(p, use_numba=True)  # the one-call solve
    assert a.status is Status.OPTIMAL and a.objective == solve_mckp(p, method="dp").objective
    assert a.objective == g + 1.0 - (runs - 1)
    for other in (b, c):
        assert (other.choice, other.bound, other.backend_status) == (a.choice, a.bound, a.backend_status)
        assert {k: v for k, v in other.stats.items() if k != "numba"} == \
            {k: v for k, v in a.stats.items() if k != "numba"}


@pytest.mark.parametrize(("kind", "n", "seed"), [("strongly", 200, 4), ("strongly", 100, 4), ("weakly", 100, 3081)])
@pytest.mark.parametrize(("tail_min", "growth"), [(20_000, 2.0), (0, 1.1)])
def test_compiled_search_events_give_the_numpy_answer(monkeypatch, kind, n, seed, tail_min, growth):
    """The compiled run returns from its step loop to replace an array (the tail built and rebuilt, a step's buffers
    or the links grown: strongly 200 x 10 seed 4 keeps 6,105 states, more than the first 4,096 links, and steps of
    up to 2,827 states) and resumes where it stopped: the same choice, bound and counters as the numpy path, with
    the tail from the first step and rebuilt at every 10% of growth of the core, or as the defaults have it."""
    from lyra_solver.bench import mckp_instances as gen
    from lyra_solver.formulations.mckp import core

    monkeypatch.setattr(core, "TAIL_MIN_CANDIDATES", tail_min)
    monkeypatch.setattr(core, "TAIL_GROWTH", growth)
    p = gen.pisinger(kind, n, 10, R=1000, seed=seed)
    a = solve_core(p, use_numba=True)
    b = solve_core(p, use_numba=False)
    assert a.status is Status.OPTIMAL and a.stats["numba"] == 1 and a.stats["classes"] > 0
    assert (a.choice, a.bound, a.objective, a.backend_status) == (b.choice, b.bound, b.objective, b.backend_status)
    assert {k: v for k, v in a.stats.items() if k != "numba"} == {k: v for k, v in b.stats.items() if k != "numba"}
    assert a.objective == solve_mckp(p, method="dp").objective


def test_aspiration_guess_stopped_by_a_limit_keeps_a_valid_bound():
    """A limit hit during a run from a guess (after a failed guess): status feasible, the start solution, and a
    bound at least the optimum (the failed guess's, or the open states'); both kernel paths agree."""
    from lyra_solver.bench import mckp_instances as gen

    p = gen.pisinger("weakly", 100, 10, R=1000, seed=1065)
    full = solve_core(p)
    for max_states in (50, 200):
        a = solve_core(p, use_numba=True, max_states=max_states)
        b = solve_core(p, use_numba=False, max_states=max_states)
        assert a.status is Status.FEASIBLE and a.backend_status == "state_limit"
        assert a.objective < full.objective <= a.bound <= full.objective + 1.0
        ws, vs = p.to_ragged()
        checked(ws, vs, p.capacity, a)
        assert (b.choice, b.bound, b.objective) == (a.choice, a.bound, a.objective)


def test_first_guess_only_for_integral_values():
    """The first guess: the largest integer ``g`` with ``g + tol < bound`` under the integral tolerance; none
    (``-inf``) under a float tolerance or an infinite bound."""
    from lyra_solver.formulations.mckp.core import first_guess

    tol = 1.0 - 1e-6
    assert first_guess(10.0, tol) == 9.0 and first_guess(10.5, tol) == 9.0 and first_guess(10.9999999, tol) == 10.0
    assert first_guess(-3.25, tol) == -5.0
    assert first_guess(10.5, 1e-9) == -np.inf and first_guess(np.inf, tol) == -np.inf


@st.composite
def _face_instances(draw):
    """Integral instances with many moves of zero reduced cost: values ``mu w + noise`` with little noise,
    sometimes negative weights' offsets from the LP item, and windows past a 64-bit word."""
    n = draw(st.integers(1, 40))
    m = draw(st.integers(1, 8))
    mu = draw(st.sampled_from([0, 1, 2, 3]))
    scale = draw(st.sampled_from([5, 60, 400]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    w = rng.integers(0, scale, (n, m))
    v = (mu * w + rng.integers(-1, 2, (n, m))).astype(float)
    sizes = rng.integers(1, m + 1, n)
    valid = np.arange(m)[None, :] < sizes[:, None]
    lo = int(np.where(valid, w, 10**9).min(axis=1).sum())
    hi = int(np.where(valid, w, 0).max(axis=1).sum())
    return MCKPProblem.from_padded(w, v, sizes, lo + int(draw(st.floats(0.0, 1.0)) * (hi - lo)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_face_instances())
def test_face_fill_compiled_equals_numpy_and_is_on_the_face(p):
    """The face fill: the numba twin returns the numpy positions; a choice found is feasible, made of the LP items
    and moves of zero reduced cost (value ``U - alpha (c - W)``), and at the capacity when it reaches the bound."""
    from lyra_solver.formulations.mckp import core

    prep = core._prepare(p, True)
    if not isinstance(prep, core._Prepared):
        return
    a = core._face_fill_numpy(prep, p)
    b = core._face_fill(prep, p, True)
    assert (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
    if a is None:
        return
    rows = np.arange(p.n_classes)
    weight, value = int(p.weights[rows, a].sum()), float(p.values[rows, a].sum())
    assert int(prep.base_w.sum()) < weight <= p.capacity
    assert value == pytest.approx(prep.lp.bound - prep.lp.alpha * (p.capacity - weight), abs=1e-6)
    lag = p.values[rows, a] - prep.lp.alpha * p.weights[rows, a]
    assert np.allclose(lag, prep.base_v - prep.lp.alpha * prep.base_w, atol=1e-9)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_face_instances())
def test_face_fill_with_one_unit_of_loss_compiled_equals_numpy(p):
    """The face fill with one unit of loss: the numba twin returns the numpy positions; a choice found is feasible,
    heavier than the LP items, loses at most one unit of Lagrangian value at the integral gradient ``mu``, and its
    value is ``U - loss - mu (c - W)``."""
    from lyra_solver.formulations.mckp import core

    prep = core._prepare(p, True)
    if not isinstance(prep, core._Prepared):
        return
    a = core._face_fill_loss1_numpy(prep, p)
    b = core._face_fill(prep, p, True, 1)
    assert (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
    if a is None:
        return
    mu = prep.lp.alpha
    assert mu == np.floor(mu)
    rows = np.arange(p.n_classes)
    weight, value = int(p.weights[rows, a].sum()), float(p.values[rows, a].sum())
    assert int(prep.base_w.sum()) < weight <= p.capacity
    loss = float(((prep.base_v - mu * prep.base_w) - (p.values[rows, a] - mu * p.weights[rows, a])).sum())
    assert loss in (0.0, 1.0)
    assert value == pytest.approx(prep.lp.bound - loss - mu * (p.capacity - weight), abs=1e-6)


@pytest.mark.parametrize("seed", [1014, 1067, 1007, 3003, 3014, 3067, 3079])
def test_face_fill_with_one_unit_of_loss_and_the_face_bound_prove_at_the_root(seed):
    """Weakly 100 x 10 seeds whose optimum is the bound less one at the gradient 1: the fills find it (the greedy
    start or the fill with one unit of loss) and the face bound proves it at the root (backend status
    ``face-bound``, no state: seed 3003's search had spent 7,404 state-item pairs on that proof); the DP's
    optimum, bound = objective, both paths the same answer."""
    from lyra_solver.bench import mckp_instances as gen
    from lyra_solver.formulations.mckp import core

    p = gen.pisinger("weakly", 100, 10, R=1000, seed=seed)
    a, b = solve_core(p, use_numba=True), solve_core(p, use_numba=False)
    assert a.status is Status.OPTIMAL and a.objective == a.bound == solve_mckp(p, method="dp").objective
    assert a.backend_status == "face-bound" and a.stats["states"] == 0 and a.stats["candidates"] == 0
    assert (b.choice, b.bound, b.backend_status, b.stats["candidates"]) == \
        (a.choice, a.bound, a.backend_status, a.stats["candidates"])
    prep = core._prepare(p, True)
    assert core._face_bound(prep, p, True) == core._face_bound_numpy(prep, p) == prep.lp.bound - 1.0 == a.objective


@pytest.mark.parametrize("seed", [1004, 1009, 1042])
def test_face_bound_is_not_proven_where_a_fill_reaches_the_bound(seed):
    """Where the face fill reaches the LP bound (a zero-loss fill of the capacity exists), the face bound proves
    nothing: ``inf`` from both twins."""
    from lyra_solver.bench import mckp_instances as gen
    from lyra_solver.formulations.mckp import core

    p = gen.pisinger("weakly", 100, 10, R=1000, seed=seed)
    prep = core._prepare(p, True)
    assert core._face_fill_numpy(prep, p) is not None
    assert core._face_bound(prep, p, True) == core._face_bound_numpy(prep, p) == np.inf


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_face_instances())
def test_face_bound_compiled_equals_numpy_and_bounds_the_optimum(p):
    """The face bound: the numba twin returns the numpy number; when finite it is the LP bound less one, at least
    the DP's optimum, and no zero-loss fill of the capacity exists (checked by a set of reachable sums)."""
    from lyra_solver.formulations.mckp import core

    prep = core._prepare(p, True)
    if not isinstance(prep, core._Prepared):
        return
    a = core._face_bound_numpy(prep, p)
    b = core._face_bound(prep, p, True)
    assert a == b
    if not np.isfinite(a):
        return
    assert a == pytest.approx(prep.lp.bound - 1.0, abs=1e-6)
    assert solve_mckp(p, method="dp").objective <= a
    mu = prep.lp.alpha
    sums = {0}
    for i in range(p.n_classes):
        k = int(p.sizes[i])
        d = p.weights[i, :k] - prep.base_w[i]
        ok = (p.values[i, :k] - prep.base_v[i] == mu * d)
        sums = {x + int(dd) for x in sums for dd in d[ok]} | sums
    assert p.capacity - int(prep.base_w.sum()) not in sums


@pytest.mark.parametrize("seed", [1004, 1009, 1042])
def test_face_fill_proves_the_bound_at_the_root(seed):
    """Weakly 100 x 10 seeds whose optimum is the LP bound at the break gradient 1: the face fill reaches it, so no
    state is created (backend status ``lp-bound``); the DP's optimum; both paths the same choice."""
    from lyra_solver.bench import mckp_instances as gen

    p = gen.pisinger("weakly", 100, 10, R=1000, seed=seed)
    a, b = solve_core(p, use_numba=True), solve_core(p, use_numba=False)
    assert a.status is Status.OPTIMAL and a.backend_status == "lp-bound" and a.stats["states"] == 0
    assert a.objective == a.bound == solve_mckp(p, method="dp").objective
    assert (b.choice, b.bound, b.backend_status) == (a.choice, a.bound, a.backend_status)
    assert solve_core(p, use_numba=True, use_greedy=False).stats["states"] > 0  # the start heuristics at work


def test_a_guess_failed_with_few_classes_ends_the_guesses(monkeypatch):
    """Uncorrelated 100 x 10, seed 1003: the first guess fails with at most GUESS_STOP_CLASSES classes in its core,
    so the next run is from the start solution (not from ``g - 1``); the DP's optimum, both paths alike."""
    from lyra_solver.bench import mckp_instances as gen
    from lyra_solver.formulations.mckp import core
    from lyra_solver.formulations.mckp._numba import kernels

    p = gen.pisinger("uncorrelated", 100, 10, R=1000, seed=1003)
    nb, runs = kernels(), []
    search = nb.search
    monkeypatch.setattr(nb, "search", lambda *a: (got := search(*a), runs.append((a[14], int(got[3][0]))))[0])
    monkeypatch.setattr(core, "_solve_compiled", lambda *a: None)
    a = solve_core(p, use_numba=True)
    prep = core._prepare(p, True)
    start_value = float(p.values[np.arange(p.n_classes), core._greedy_fill(prep, p, p.capacity, True)[0]].sum())
    assert len(runs) == 2 and runs[0][0] == core.first_guess(prep.lp.bound, prep.tol)
    assert runs[0][1] <= core.GUESS_STOP_CLASSES and runs[1][0] == start_value < runs[0][0] - 1.0
    monkeypatch.undo()
    b, c = solve_core(p, use_numba=False), solve_core(p, use_numba=True)
    assert a.status is Status.OPTIMAL and a.objective == solve_mckp(p, method="dp").objective
    for other in (b, c):
        assert (other.choice, other.bound, other.backend_status) == (a.choice, a.bound, a.backend_status)
        assert {k: v for k, v in other.stats.items() if k != "numba"} == \
            {k: v for k, v in a.stats.items() if k != "numba"}


def test_run_after_a_failed_guess_ends_when_its_incumbent_reaches_that_guess():
    """Weakly 100 x 10 seed 1065: the first guess (the LP bound rounded down) fails, so the optimum is at most that
    guess; the next run finds a solution of that value and ends there (backend status ``bound``), without proving
    it again, on both paths alike (the same choice and counters), and the value is the optimum (plain DP)."""
    from lyra_solver.bench import mckp_instances as gen

    p = gen.pisinger("weakly", 100, 10, R=1000, seed=1065)
    a = solve_core(p, use_numba=True)
    b = solve_core(p, use_numba=True, max_states=10**12)  # the Python loop (the compiled run takes no limit)
    c = solve_core(p, use_numba=False)
    assert a.status is Status.OPTIMAL and a.backend_status == "bound"
    assert (b.choice, b.backend_status, b.stats["candidates"]) == (a.choice, a.backend_status, a.stats["candidates"])
    assert (c.choice, c.backend_status, c.stats["candidates"]) == (a.choice, a.backend_status, a.stats["candidates"])
    assert a.stats["candidates"] == 3_142  # 3,260 when the run proved its incumbent again
    assert a.objective == solve_mckp(p, method="dp").objective == math.floor(a.objective)
    ws, vs = p.to_ragged()
    assert checked(ws, vs, p.capacity, a) == a.objective
