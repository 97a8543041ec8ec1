"""One parametrised suite over every MCKP method (DESIGN "Conventions").

The checker and the brute force below are written here from the problem statement; they share no code with
the solvers.
"""
from __future__ import annotations

import importlib.util
import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lyra_solver.formulations import Status
from lyra_solver.formulations.mckp import METHODS, TABLE, MCKPProblem, MCKPResult, solve_mckp

OPTIONS = {"cpsat": {"num_workers": 1}}
EXAMPLES = {"cbc": 25, "cpsat": 40, "highs": 40, "gpu": 40}
# method "gpu" needs torch or CuPy (the `gpu` extra), which CI does not install (see test_mckp_gpu.py)
METHODS = tuple(m for m in METHODS if m != "gpu" or importlib.util.find_spec("torch") is not None)
# from the method table: the exact methods (gpu among them when it can run) and the heuristics
EXACT = tuple(m for m in TABLE.names(kind="exact") if m in METHODS)
HEURISTIC = TABLE.names(kind="heuristic")


def brute_force(weights: list[list[int]], values: list[list[float]], capacity: int) -> float | None:
    """Best total value over all choices that fit, or None."""
    best = None
    for choice in itertools.product(*(range(len(w)) for w in weights)):
        if sum(weights[i][k] for i, k in enumerate(choice)) <= capacity:
            val = sum(values[i][k] for i, k in enumerate(choice))
            if best is None or val > best:
                best = val
    return best


def check(weights: list[list[int]], values: list[list[float]], capacity: int, res: MCKPResult) -> None:
    """Independent feasibility / objective / bound check of a result."""
    assert isinstance(res.status, Status)
    if res.status in (Status.INFEASIBLE, Status.NO_SOLUTION):
        assert res.choice is None and res.objective is None
        return
    assert res.choice is not None
    assert len(res.choice) == len(weights)
    for i, k in enumerate(res.choice):
        assert 0 <= k < len(weights[i])
    assert sum(weights[i][k] for i, k in enumerate(res.choice)) <= capacity
    val = sum(values[i][k] for i, k in enumerate(res.choice))
    assert math.isclose(res.objective, val, rel_tol=1e-9, abs_tol=1e-9)
    if res.bound is not None:
        assert res.bound >= res.objective - 1e-9 * max(1.0, abs(res.objective))
    if res.status is Status.OPTIMAL:
        assert res.gap is not None
    assert res.time_s >= 0


def tol(x: float) -> float:
    return 1e-6 * max(1.0, abs(x))


@st.composite
def instances(draw, max_classes: int = 5, max_items: int = 4):
    n = draw(st.integers(1, max_classes))
    weights, values = [], []
    for _ in range(n):
        k = draw(st.integers(1, max_items))
        weights.append(draw(st.lists(st.integers(0, 12), min_size=k, max_size=k)))
        values.append(draw(st.lists(st.integers(-20, 40).map(lambda x: x / 2), min_size=k, max_size=k)))
    capacity = draw(st.integers(0, 30))
    return weights, values, capacity


def _hull_max_increment(weights: list[list[int]], values: list[list[float]]) -> float:
    """Largest value step between consecutive vertices of any class's upper concave envelope."""
    best = 0.0
    for ws, vs in zip(weights, values, strict=True):
        pts = sorted(zip(ws, vs, strict=True), key=lambda p: (p[0], -p[1]))
        und = []
        for w, v in pts:
            if not und or v > und[-1][1]:
                if und and und[-1][0] == w:
                    continue
                und.append((w, v))
        hull: list[tuple[int, float]] = []
        for p in und:
            while len(hull) >= 2:
                (w1, v1), (w2, v2) = hull[-2], hull[-1]
                if (v2 - v1) * (p[0] - w2) <= (p[1] - v2) * (w2 - w1):
                    hull.pop()
                else:
                    break
            hull.append(p)
        for a, b in itertools.pairwise(hull):
            best = max(best, b[1] - a[1])
    return best


@pytest.mark.parametrize("method", METHODS)
def test_against_brute_force(method: str) -> None:
    @settings(max_examples=EXAMPLES.get(method, 80), deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(instances())
    def run(inst):
        weights, values, capacity = inst
        opt = brute_force(weights, values, capacity)
        res = solve_mckp(weights, values, capacity, method=method, **OPTIONS.get(method, {}))
        check(weights, values, capacity, res)
        if opt is None:
            assert res.status is Status.INFEASIBLE
            return
        assert res.status in (Status.OPTIMAL, Status.FEASIBLE)
        assert res.objective <= opt + tol(opt)
        assert res.bound is not None and res.bound >= opt - tol(opt)
        if method in EXACT:
            assert res.status is Status.OPTIMAL
            assert res.objective == pytest.approx(opt, rel=1e-9, abs=1e-9)
        elif res.status is Status.OPTIMAL:
            assert res.objective == pytest.approx(opt, rel=1e-9, abs=1e-9)
        if method == "hull":
            assert opt - res.objective <= _hull_max_increment(weights, values) + tol(opt)

    run()


def _random_problem(rng: np.random.Generator, n: int, m: int, wmax: int, frac: float) -> MCKPProblem:
    sizes = rng.integers(1, m + 1, n)
    w = rng.integers(0, wmax + 1, (n, m))
    w[:, 0] = rng.integers(0, 3, n)
    v = np.round(rng.normal(0.0, 100.0, (n, m)), 3)
    cap = int(frac * w.max(axis=1).sum())
    return MCKPProblem.from_padded(w, v, sizes, cap)


@pytest.mark.parametrize("seed", range(4))
def test_exact_methods_agree(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = _random_problem(rng, 25, 6, 50, 0.4)
    ws, vs = p.to_ragged()
    results = {m: solve_mckp(p, method=m, **OPTIONS.get(m, {})) for m in EXACT}
    for res in results.values():
        check(ws, vs, p.capacity, res)
        assert res.status is Status.OPTIMAL
    ref = results["dp"].objective
    for m, res in results.items():
        # cpsat proves optimality of integer-scaled values: agreement to its scaling resolution
        assert res.objective == pytest.approx(ref, rel=1e-9 if m != "cpsat" else 1e-6, abs=1e-6), m
    for m in HEURISTIC:
        res = solve_mckp(p, method=m)
        check(ws, vs, p.capacity, res)
        assert res.objective <= ref + tol(ref)
        assert res.bound >= ref - tol(ref)


@pytest.mark.parametrize("method", METHODS)
def test_infeasible(method: str) -> None:
    res = solve_mckp([[5, 7], [3]], [[1.0, 2.0], [0.0]], 7, method=method, **OPTIONS.get(method, {}))
    assert res.status is Status.INFEASIBLE
    assert res.choice is None


@pytest.mark.parametrize("method", METHODS)
def test_edge_items(method: str) -> None:
    """Negative values, zero weights, duplicate items and single-item classes in one instance."""
    weights = [[0, 0, 3], [2, 2, 2], [4], [0, 1, 5, 5], [1, 3]]
    values = [[-5.0, -1.0, 2.5], [1.0, 1.0, 1.0], [-3.0], [-2.0, -2.0, 4.0, 4.0], [-7.5, -1.0]]
    capacity = 12
    opt = brute_force(weights, values, capacity)
    res = solve_mckp(weights, values, capacity, method=method, **OPTIONS.get(method, {}))
    check(weights, values, capacity, res)
    assert res.objective <= opt + tol(opt)
    if method in EXACT:
        assert res.objective == pytest.approx(opt)


@pytest.mark.parametrize("method", METHODS)
def test_empty_problem(method: str) -> None:
    p = MCKPProblem.from_ragged([], [], 0)
    res = solve_mckp(p, method=method)
    assert res.status is Status.OPTIMAL and res.choice == () and res.objective == 0.0


@pytest.mark.parametrize("method", ["greedy", "hull", "core"])
@pytest.mark.parametrize("seed", range(3))
def test_greedy_optimal_on_concave_unit_steps(method: str, seed: int) -> None:
    """Unit weight steps with strictly decreasing positive increments: the marginal greedy is optimal."""
    rng = np.random.default_rng(100 + seed)
    n, m = 12, 6
    inc = -np.sort(-rng.uniform(0.5, 10.0, (n, m - 1)), axis=1)
    values = np.concatenate([np.zeros((n, 1)), np.cumsum(inc, axis=1)], axis=1)
    weights = np.tile(np.arange(m), (n, 1))
    cap = int(rng.integers(0, n * (m - 1)))
    p = MCKPProblem.from_padded(weights, values, np.full(n, m), cap)
    exact = solve_mckp(p, method="dp")
    res = solve_mckp(p, method=method)
    assert res.objective == pytest.approx(exact.objective, rel=1e-12)
    assert res.status is Status.OPTIMAL


def test_huge_capacity_exact_and_memory_safe() -> None:
    rng = np.random.default_rng(7)
    n, m = 40, 8
    w = np.sort(rng.integers(0, 10**8, (n, m)), axis=1)
    v = np.round(rng.uniform(0, 1000, (n, m)), 2)
    cap = 10**9
    p = MCKPProblem.from_padded(w, v, np.full(n, m), cap)
    with pytest.raises(ValueError, match="capacity"):
        solve_mckp(p, method="dp")
    core = solve_mckp(p, method="auto")
    ref = solve_mckp(p, method="highs")
    assert core.status is Status.OPTIMAL and ref.status is Status.OPTIMAL
    ws, vs = p.to_ragged()
    check(ws, vs, cap, core)
    assert core.objective == pytest.approx(ref.objective, rel=1e-9)


def test_huge_capacity_brute_force() -> None:
    weights = [[0, 400_000_000, 900_000_000], [100_000_000, 600_000_000], [0, 500_000_000]]
    values = [[0.0, 3.0, 5.5], [1.0, 4.0], [0.0, 3.5]]
    cap = 10**9
    opt = brute_force(weights, values, cap)
    res = solve_mckp(weights, values, cap)
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(opt)


def _hard_problem() -> MCKPProblem:
    rng = np.random.default_rng(3)
    n, m = 150, 10
    wk = np.sort(rng.integers(1, 1001, (n, m)), axis=1)
    w = np.cumsum(wk, axis=1)
    v = np.cumsum(wk + 10, axis=1).astype(float)
    cap = int((w[:, 0].sum() + w[:, -1].sum()) // 2)
    return MCKPProblem.from_padded(w, v, np.full(n, m), cap)


@pytest.mark.parametrize("method", ["core", "dp", "cpsat", "highs", "cbc"])
def test_time_limit_returns_incumbent(method: str) -> None:
    p = _hard_problem()
    res = solve_mckp(p, method=method, time_limit=0.0, **OPTIONS.get(method, {}))
    ws, vs = p.to_ragged()
    check(ws, vs, p.capacity, res)
    opt = solve_mckp(p, method="core").objective
    if res.bound is not None:
        assert res.bound >= opt - tol(opt)
    if method in ("core", "dp"):
        # our methods always keep an incumbent (LP integral part / greedy)
        assert res.status in (Status.FEASIBLE, Status.OPTIMAL)
        assert res.choice is not None and res.bound is not None
        if res.status is Status.FEASIBLE:
            assert res.gap is not None and res.gap >= 0
    else:
        assert res.status in (Status.FEASIBLE, Status.OPTIMAL, Status.NO_SOLUTION)


def test_state_limit_keeps_incumbent() -> None:
    from lyra_solver.formulations.mckp.core import solve_core

    p = _hard_problem()
    res = solve_core(p, max_states=1)
    assert res.status is Status.FEASIBLE and res.backend_status == "state_limit"
    full = solve_core(p)
    assert full.status is Status.OPTIMAL
    assert res.objective <= full.objective + tol(full.objective)
    assert res.bound >= full.objective - tol(full.objective)


def test_core_matches_dp_on_cluster_like_tables() -> None:
    """Engine-shaped tables (item 0 weight 0, increasing weights, restart-penalty dips)."""
    rng = np.random.default_rng(11)
    n, m = 60, 12
    g = rng.choice([1, 2, 4], n)
    w = g[:, None] * np.arange(m)[None, :]
    rate = rng.uniform(50, 200, (n, 1)) * (np.arange(1, m + 1)[None, :] ** rng.uniform(0.5, 1, (n, 1)))
    rate = rate * 0.85 ** (np.ceil(w / 8))
    t = 1e5 / rate
    v = t[:, :1] - t - 20.0 * (np.arange(m)[None, :] != rng.integers(0, m, (n, 1)))
    sizes = rng.integers(1, m + 1, n)
    p = MCKPProblem.from_padded(w, v, sizes, int(0.3 * (g * (sizes - 1)).sum()))
    dp = solve_mckp(p, method="dp")
    for m_ in ("auto", "greedy", "hull"):
        res = solve_mckp(p, method=m_)
        ws, vs = p.to_ragged()
        check(ws, vs, p.capacity, res)
        if m_ == "auto":
            assert res.objective == pytest.approx(dp.objective, rel=1e-9)
        else:
            assert res.objective <= dp.objective + tol(dp.objective)


def test_greedy_numba_and_python_paths_agree() -> None:
    import numba  # noqa: F401  (a test dependency: the numba kernels are tested, not skipped)
    from lyra_solver.formulations.mckp._lp import undominated
    from lyra_solver.formulations.mckp.greedy import greedy_positions

    rng = np.random.default_rng(5)
    for _ in range(5):
        p = _random_problem(rng, 200, 8, 40, 0.3)
        red = undominated(p)
        a = greedy_positions(red, p.capacity, use_numba=True)
        b = greedy_positions(red, p.capacity, use_numba=False)
        assert np.array_equal(a, b)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n=st.integers(1, 300), m=st.integers(1, 12), ties=st.booleans(),
       frac=st.floats(0.05, 1.2))
def test_greedy_compiled_whole_equals_the_numpy_path(seed, n, m, ties, frac) -> None:
    """The compiled greedy (``greedy_choice`` and ``prepare_lp``: value tables, whose weights strictly increase)
    gives the numpy path's result bit for bit: choice, objective, bound, gap and status; with ``ties`` the
    values are coarse, so keys tie across classes and within a class (equal and dominated items)."""
    import numba  # noqa: F401  (a test dependency: the numba kernels are tested, not skipped)
    from lyra_solver.formulations.mckp.greedy import _compiled, solve_greedy

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, m + 1, n)
    w = np.cumsum(rng.integers(1, 4, (n, m)), axis=1) - 1  # strictly increasing, from 0..2
    if ties:
        v = np.cumsum(rng.integers(-1, 3, (n, m)), axis=1).astype(np.float64)
    else:
        v = np.cumsum(rng.normal(5.0, 10.0, (n, m)), axis=1)
    cap = max(int(frac * w[np.arange(n), sizes - 1].sum()), int(w[:, 0].sum()))
    p = MCKPProblem.from_padded(w, v, sizes, cap)
    assert _compiled(p) is not None  # the compiled path applies to such a problem
    a = solve_greedy(p, use_numba=True)
    b = solve_greedy(p, use_numba=False)
    assert a.choice == b.choice
    assert (a.objective, a.bound, a.gap, a.status) == (b.objective, b.bound, b.gap, b.status)


def test_greedy_compiled_declines_what_it_does_not_cover() -> None:
    """A class whose weights do not strictly increase: the compiled greedy declines (the numpy path answers,
    through the same call)."""
    from lyra_solver.formulations.mckp.greedy import _compiled, solve_greedy

    p = MCKPProblem.from_padded(np.array([[0, 2, 1], [0, 1, 1]]), np.array([[0.0, 3.0, 2.0], [0.0, 1.0, 5.0]]),
                                np.array([3, 3]), 2)
    assert _compiled(p) is None
    assert solve_greedy(p, use_numba=True).choice == solve_greedy(p, use_numba=False).choice


@pytest.mark.parametrize("kernels", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_greedy_choice_is_solve_greedys_choice(seed, kernels, monkeypatch) -> None:
    """greedy_choice (the simulator's greedy without the LP bound) makes solve_greedy's choice on every path:
    numpy (kernels not loaded), the compiled kernel, and the numpy fallback of a class whose weights do not
    strictly increase (which the compiled kernel declines)."""
    from lyra_solver.formulations.mckp import _numba
    from lyra_solver.formulations.mckp.greedy import greedy_choice, solve_greedy

    if kernels:
        pytest.importorskip("numba")
        assert _numba.load()
    else:
        monkeypatch.setattr("lyra_solver.formulations.mckp.greedy.loaded", lambda: False)
        monkeypatch.setattr("lyra_solver.formulations.mckp.greedy.want", lambda n: False)
    rng = np.random.default_rng(seed)
    n, m = 120, 8
    sizes = rng.integers(1, m + 1, n)
    w = np.cumsum(rng.integers(1, 4, (n, m)), axis=1) - 1
    if seed % 2:  # some classes with a repeated weight: the compiled kernel declines the whole problem
        w[: n // 4, 2:] = w[: n // 4, 1:-1]
    v = np.cumsum(rng.normal(5.0, 10.0, (n, m)), axis=1)
    p = MCKPProblem.from_padded(w, v, sizes, int(0.4 * w[np.arange(n), sizes - 1].sum()))
    got = greedy_choice(p)
    assert got.dtype == np.int64 and tuple(got.tolist()) == solve_greedy(p).choice


@pytest.mark.parametrize("seed", range(8))
def test_table_choice_is_greedy_choice_of_the_table(seed, monkeypatch) -> None:
    """table_choice (the scale step's greedy on Lyra's table, without the problem) chooses what greedy_choice
    chooses on MCKPProblem.from_table of the same arrays, whatever the padding holds (-inf values and repeated
    weights there, as the value table pads; it is not read), and declines (None) where the kernel does (a class
    whose weights repeat) or where the kernels are not loaded."""
    pytest.importorskip("numba")
    from lyra_solver.formulations.mckp import _numba
    from lyra_solver.formulations.mckp.greedy import greedy_choice, table_choice

    assert _numba.load()
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 200)), int(rng.integers(2, 10))
    sizes = rng.integers(2, m + 1, n)
    w = np.cumsum(rng.integers(1, 5, (n, m)), axis=1)
    w -= w[:, :1]  # each class's lightest item weighs 0, as a value table's does
    v = np.cumsum(rng.normal(5.0, 10.0, (n, m)), axis=1) if seed % 2 else \
        np.cumsum(rng.integers(-1, 3, (n, m)), axis=1).astype(np.float64)  # ties across and within classes
    pad = np.arange(m)[None, :] >= sizes[:, None]
    w[pad] = np.repeat(w[np.arange(n), sizes - 1][:, None], m, axis=1)[pad]  # padding repeats the last option
    v[pad] = -np.inf
    cap = int(rng.uniform(0.0, 1.1) * w[np.arange(n), sizes - 1].sum())
    got = table_choice(w.copy(), np.where(np.isfinite(v), v, 0.0), sizes.copy(), cap)
    want = greedy_choice(MCKPProblem.from_table(w.copy(), np.where(np.isfinite(v), v, 0.0), sizes.copy(), cap))
    assert got is not None and got.tolist() == want.tolist()
    rep = w.copy()
    rep[0, 1] = rep[0, 0]  # a repeated weight: the kernel declines, greedy_choice's numpy path answers
    assert table_choice(rep, np.where(np.isfinite(v), v, 0.0), sizes.copy(), cap) is None
    monkeypatch.setattr("lyra_solver.formulations.mckp.greedy.loaded", lambda: False)
    assert table_choice(w.copy(), np.where(np.isfinite(v), v, 0.0), sizes.copy(), cap) is None


def test_greedy_matches_priority_queue_definition() -> None:
    """The sort-based greedy equals the textbook frontier greedy with a priority queue."""
    import heapq

    from lyra_solver.formulations.mckp._lp import undominated
    from lyra_solver.formulations.mckp.greedy import greedy_positions

    rng = np.random.default_rng(9)
    for it in range(30):
        # every third instance is large enough for the weighted selection of fit_prefix to kick in
        n_cls = 300 if it % 3 == 0 else 15
        p = _random_problem(rng, n_cls, 6, 20, float(rng.uniform(0.1, 0.9)))
        red = undominated(p)
        got = greedy_positions(red, p.capacity, use_numba=False)
        if got is None:
            continue
        n = p.n_classes
        ws, vs = p.to_ragged()
        lists = []
        for i in range(n):
            items = sorted(zip(ws[i], vs[i], strict=True), key=lambda t: (t[0], -t[1]))
            und = []
            for w, v in items:
                if not und or v > und[-1][1]:
                    if und and und[-1][0] == w:
                        continue
                    und.append((w, v))
            lists.append(und)
        level = [0] * n
        room = p.capacity - sum(lst[0][0] for lst in lists)
        heap = []
        for i in range(n):
            if len(lists[i]) > 1:
                (w0, v0), (w1, v1) = lists[i][0], lists[i][1]
                heapq.heappush(heap, (-(v1 - v0) / (w1 - w0), i))
        while heap:
            _, i = heapq.heappop(heap)
            k = level[i]
            dw = lists[i][k + 1][0] - lists[i][k][0]
            if dw > room:
                continue  # class closed
            room -= dw
            level[i] = k + 1
            if k + 2 < len(lists[i]):
                (w0, v0), (w1, v1) = lists[i][k + 1], lists[i][k + 2]
                heapq.heappush(heap, (-(v1 - v0) / (w1 - w0), i))
        assert [int(x) for x in got] == level


def test_dp_time_limit_uses_greedy_incumbent() -> None:
    p = _hard_problem()
    small = MCKPProblem.from_padded(p.weights[:, :4] // 100, p.values[:, :4], np.full(p.n_classes, 4),
                                    int(p.weights[:, :4].sum() // 300))
    res = solve_mckp(small, method="dp", time_limit=0.0)
    assert res.status in (Status.FEASIBLE, Status.OPTIMAL) and res.choice is not None


def test_result_fields_and_methods() -> None:
    res = solve_mckp([[0, 1]], [[0.0, 1.0]], 1)
    assert res.status == "optimal" and res.choice == (1,) and res.objective == 1.0 and res.success
    assert res.method == "core"
    assert solve_mckp([[0, 1]], [[0.0, 1.0]], 1, method="bb").method == "bb"
    with pytest.raises(ValueError, match="method"):
        solve_mckp([[0, 1]], [[0.0, 1.0]], 1, method="magic")
    with pytest.raises(ValueError, match="time_limit"):
        solve_mckp([[0, 1]], [[0.0, 1.0]], 1, time_limit=-1)
    with pytest.raises(ValueError, match="capacity"):
        solve_mckp([[0, 1]], [[0.0, 1.0]])


def test_cpsat_scaling() -> None:
    from lyra_solver.formulations.mckp.cpsat import scale_values

    q, s = scale_values(np.array([1.0, -3.0, 7.0]), 3)
    assert s == 1.0 and q.tolist() == [1, -3, 7]
    q, s = scale_values(np.array([0.1, -2.5, 1e-3]), 3)
    assert 2**29 <= np.max(np.abs(q)) <= 2**31
    assert np.allclose(q / s, [0.1, -2.5, 1e-3], atol=1 / s)


def _medium_instance(seed: int) -> MCKPProblem:
    """Mixed medium instances: random, engine-shaped and strongly correlated, small enough for the DP."""
    rng = np.random.default_rng(1000 + seed)
    kind = seed % 3
    if kind == 0:
        return _random_problem(rng, int(rng.integers(5, 60)), int(rng.integers(2, 10)), 30,
                               float(rng.uniform(0.1, 0.9)))
    if kind == 1:
        n, m = int(rng.integers(5, 60)), int(rng.integers(2, 16))
        g = rng.choice([1, 2, 4, 8], n)
        w = g[:, None] * np.arange(m)[None, :]
        t = 1e5 / (rng.uniform(50, 200, (n, 1)) * np.arange(1, m + 1)[None, :] ** rng.uniform(0.5, 1, (n, 1))
                   * 0.8 ** np.ceil(w / 8))
        v = t[:, :1] - t - rng.uniform(5, 50, (n, 1)) * (np.arange(m)[None, :] != rng.integers(0, m, (n, 1)))
        sizes = rng.integers(1, m + 1, n)
        return MCKPProblem.from_padded(w, v, sizes, int(rng.uniform(0.05, 0.8) * (g * (sizes - 1)).sum()))
    n, m = int(rng.integers(5, 40)), int(rng.integers(2, 8))
    wk = np.sort(rng.integers(1, 101, (n, m)), axis=1)
    w, v = np.cumsum(wk, axis=1), np.cumsum(wk + 10, axis=1).astype(float)
    return MCKPProblem.from_padded(w, v, np.full(n, m), int((w[:, 0].sum() + w[:, -1].sum()) // 2))


@pytest.mark.parametrize("use_numba", [False, True])
@pytest.mark.parametrize("seed", range(18))
def test_core_matches_dp_on_medium_instances(seed: int, use_numba: bool) -> None:
    """Both core step paths (numpy, numba kernel) against the plain DP, on many mid-size instances."""
    from lyra_solver.formulations.mckp.core import solve_core

    if use_numba:
        import numba  # noqa: F401  (a test dependency)
    p = _medium_instance(seed)
    dp = solve_mckp(p, method="dp")
    res = solve_core(p, use_numba=use_numba)
    ws, vs = p.to_ragged()
    check(ws, vs, p.capacity, res)
    assert res.status is dp.status
    if dp.objective is not None:
        assert res.objective == pytest.approx(dp.objective, rel=1e-9, abs=1e-9)
    for ablation in ({"use_greedy": False},):
        alt = solve_core(p, use_numba=use_numba, **ablation)
        check(ws, vs, p.capacity, alt)
        if dp.objective is not None:
            assert alt.objective == pytest.approx(dp.objective, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_non_binding_astronomical_capacity(method: str) -> None:
    weights, values = [[0, 5, 9], [3, 4]], [[0.0, 2.5, 2.0], [1.0, 3.0]]
    res = solve_mckp(weights, values, 10**30, method=method, **OPTIONS.get(method, {}))
    assert res.status is Status.OPTIMAL and res.choice == (1, 1) and res.objective == pytest.approx(5.5)


def test_results_are_deterministic() -> None:
    p = _hard_problem()
    for method in ("auto", "greedy", "hull", "dp"):
        a, b = solve_mckp(p, method=method), solve_mckp(p, method=method)
        assert a.choice == b.choice and a.objective == b.objective and a.bound == b.bound


def test_hull_fills_on_past_the_break():
    """Class 0's only upgrade (10 GPUs, slope 10) does not fit in 5: the LP's integral part takes nothing,
    and the hull greedy goes on to class 1's upgrade (1 GPU, slope 5), the optimum here."""
    p = MCKPProblem.from_padded(np.array([[0, 10], [0, 1]]), np.array([[0.0, 100.0], [0.0, 5.0]]),
                                np.array([2, 2]), 5)
    got = solve_mckp(p, method="hull")
    assert tuple(got.choice) == (0, 1) and got.objective == 5.0 == solve_mckp(p, method="core").objective
    assert got.status == Status.FEASIBLE and got.bound == pytest.approx(100.0 * 5 / 10)  # the LP: half of it


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
def test_hull_is_never_below_the_lp_integral_part(seed):
    from lyra_solver.formulations.mckp._lp import lp_relaxation, undominated, upper_hull

    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 8)), int(rng.integers(1, 6))
    w = np.sort(rng.integers(0, 20, size=(n, m)), axis=1)
    v = rng.uniform(0, 50, size=(n, m))
    cap = int(w[:, 0].sum() + rng.integers(0, 40))
    p = MCKPProblem.from_padded(w, v, np.full(n, m), cap)
    red = undominated(p)
    lp = lp_relaxation(red, upper_hull(red), cap)
    got = solve_mckp(p, method="hull")
    assert got.objective >= lp.value - 1e-9 * (1 + abs(lp.value))
    assert got.objective <= solve_mckp(p, method="core").objective + 1e-9 * (1 + abs(lp.value))
    assert int(p.weights[np.arange(n), got.choice].sum()) <= cap
