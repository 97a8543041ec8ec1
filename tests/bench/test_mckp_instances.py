"""MCKP instance generators and the benchmark command (``--quick``)."""
from __future__ import annotations

import numpy as np
import pytest
from lyra_solver.bench.mckp_instances import PISINGER_KINDS, cluster, pisinger, pisinger_capacity
from lyra_solver.formulations import Status
from lyra_solver.formulations.mckp import solve_mckp


@pytest.mark.parametrize("kind", PISINGER_KINDS)
@pytest.mark.parametrize("R", [1000, 10000])
def test_pisinger_deterministic_and_in_range(kind: str, R: int) -> None:
    a = pisinger(kind, 30, 7, R=R, seed=3)
    b = pisinger(kind, 30, 7, R=R, seed=3)
    c = pisinger(kind, 30, 7, R=R, seed=4)
    assert np.array_equal(a.weights, b.weights) and np.array_equal(a.values, b.values)
    assert not (np.array_equal(a.weights, c.weights) and np.array_equal(a.values, c.values))
    assert a.weights.shape == (30, 7) and a.sizes.tolist() == [7] * 30
    assert a.weights.min() >= 1 and a.values.min() >= 1
    wmin, wmax = a.weights.min(axis=1), a.weights.max(axis=1)
    if kind == "uncorrelated_binding":
        # the weight of each class's most valuable item replaces the largest weight: the capacity binds
        w_best = a.weights[np.arange(30), np.argmax(a.values, axis=1)]
        assert a.capacity == (wmin.sum() + w_best.sum()) // 2 < w_best.sum()
    else:
        assert a.capacity == (wmin.sum() + wmax.sum()) // 2 == pisinger_capacity(a.weights, a.sizes)
    if kind in ("uncorrelated", "weakly", "subset_sum", "uncorrelated_binding"):
        assert a.weights.max() <= R
    if kind == "subset_sum":
        assert np.array_equal(a.values, a.weights.astype(float))
    if kind == "weakly":
        assert np.all(np.abs(a.values - a.weights) <= 10)
    if kind in ("strongly", "strongly_kp"):
        # prefix sums of items with p' = w' + d (d = 10, or R/10 for the knapsack definition): p_j - w_j = d (j + 1)
        d = 10.0 if kind == "strongly" else R // 10
        assert np.array_equal(a.values - a.weights, np.tile(d * np.arange(1, 8), (30, 1)))
        inc = np.diff(a.weights, axis=1)
        assert np.all(np.diff(inc, axis=1) >= 0)


def test_pisinger_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError, match="kind"):
        pisinger("hard", 3, 3)


@pytest.mark.parametrize("concave", [True, False])
def test_cluster_tables_have_engine_shape(concave: bool) -> None:
    p = cluster(200, 32, concave=concave, seed=9)
    q = cluster(200, 32, concave=concave, seed=9)
    assert np.array_equal(p.values, q.values) and p.capacity == q.capacity
    valid = p.valid_mask()
    assert np.all(p.weights[:, 0] == 0) and np.all(p.values[:, 0] <= 0.0)
    w = np.where(valid, p.weights, np.iinfo(np.int64).max)
    assert np.all((np.diff(w, axis=1) > 0) | ~valid[:, 1:])
    assert p.sizes.min() >= 2 and p.sizes.max() <= 32
    assert p.capacity == int(0.3 * float(np.where(valid, p.weights, 0).max(axis=1).sum()))
    vals = np.where(valid, p.values, np.nan)
    steps = np.diff(vals, axis=1)
    if concave:
        # power-law rates: JCT reduction increases with every extra worker
        assert np.all((steps > 0) | np.isnan(steps))
    else:
        # restart penalties and server spans make some tables dip
        assert np.any(steps < 0)


def test_cluster_instances_solve_optimally() -> None:
    p = cluster(150, 16, seed=2)
    exact = solve_mckp(p, method="auto")
    dp = solve_mckp(p, method="dp")
    assert exact.status is Status.OPTIMAL
    assert exact.objective == pytest.approx(dp.objective, rel=1e-9)

