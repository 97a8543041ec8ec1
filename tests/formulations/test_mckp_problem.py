"""MCKPProblem construction and validation, and the LP / reduction helpers."""
from __future__ import annotations

import numpy as np
import pytest
from lyra_solver.formulations.mckp import MCKPProblem
from lyra_solver.formulations.mckp._lp import lp_relaxation, undominated, upper_hull


def test_from_ragged_and_padded_agree() -> None:
    p = MCKPProblem.from_ragged([[0, 2, 4], [1]], [[0.0, 5.5, 7.0], [-1.0]], 10)
    q = MCKPProblem.from_padded([[0, 2, 4], [1, 99, -5]], [[0.0, 5.5, 7.0], [-1.0, np.nan, np.inf]],
                                [3, 1], 10)
    for a, b in ((p.weights, q.weights), (p.values, q.values), (p.sizes, q.sizes)):
        assert np.array_equal(a, b)
    assert p.capacity == q.capacity == 10
    assert p.weights.dtype == np.int64 and p.values.dtype == np.float64 and p.sizes.dtype == np.int64
    assert not p.weights.flags.writeable and not p.values.flags.writeable
    assert p.n_classes == 2 and p.max_items == 3 and p.n_items == 4
    assert p.min_weight() == 1 and p.is_feasible()
    assert p.choice_weight([2, 0]) == 5 and p.choice_value([2, 0]) == 6.0
    assert p.to_ragged() == ([[0, 2, 4], [1]], [[0.0, 5.5, 7.0], [-1.0]])


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"weights": [[0, -1]], "values": [[0.0, 1.0]], "capacity": 3}, "weights"),
        ({"weights": [[0, 1]], "values": [[0.0, float("nan")]], "capacity": 3}, "values"),
        ({"weights": [[0, 1]], "values": [[0.0, float("inf")]], "capacity": 3}, "values"),
        ({"weights": [[0, 1], []], "values": [[0.0, 1.0], []], "capacity": 3}, "weights"),
        ({"weights": [[0, 1]], "values": [[0.0]], "capacity": 3}, "values"),
        ({"weights": [[0, 1]], "values": [[0.0, 1.0], [2.0]], "capacity": 3}, "values"),
        ({"weights": [[0, 1]], "values": [[0.0, 1.0]], "capacity": -1}, "capacity"),
        ({"weights": [[0, 1.5]], "values": [[0.0, 1.0]], "capacity": 3}, "weights"),
        ({"weights": [[0, 1]], "values": [[0.0, 1.0]], "capacity": 2.5}, "capacity"),
    ],
)
def test_ragged_validation(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        MCKPProblem.from_ragged(**kwargs)


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (([[0, 1]], [[0.0, 1.0, 2.0]], [2], 3), "values"),
        (([[0, 1]], [[0.0, 1.0]], [2, 1], 3), "sizes"),
        (([[0, 1]], [[0.0, 1.0]], [0], 3), "sizes"),
        (([[0, 1]], [[0.0, 1.0]], [3], 3), "sizes"),
        (([0, 1], [0.0, 1.0], [2], 3), "weights"),
        (([[0, -2]], [[0.0, 1.0]], [2], 3), "weights"),
    ],
)
def test_padded_validation(args: tuple, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        MCKPProblem.from_padded(*args)


def test_reductions_and_lp() -> None:
    # class 0: (0,0) (1,1) (2,3) (3,3.5) (3,2) (4,6) -> undominated (0,0) (1,1) (2,3) (3,3.5) (4,6)
    # hull: (0,0) (2,3) (4,6)? slopes 1.5 and 1.5 -> (2,3) collinear, removed -> (0,0) (4,6)
    p = MCKPProblem.from_ragged([[0, 1, 2, 3, 3, 4], [5, 5]], [[0, 1, 3, 3.5, 2, 6], [1, 2]], 7)
    red = undominated(p)
    assert red.counts.tolist() == [5, 1]
    assert red.weights[0, :5].tolist() == [0, 1, 2, 3, 4]
    assert red.items[1, 0] == 1  # the better of two equal-weight items
    hull = upper_hull(red)
    assert hull.counts.tolist() == [2, 1]
    assert hull.weights[0, :2].tolist() == [0, 4]
    lp = lp_relaxation(red, hull, p.capacity)
    # room 2 of the (0,0)->(4,6) step: fraction 0.5, bound 2 + 3
    assert lp.feasible and lp.frac_class == 0 and lp.fraction == pytest.approx(0.5)
    assert lp.bound == pytest.approx(5.0) and lp.value == pytest.approx(2.0)
    assert lp.alpha == pytest.approx(1.5)
    infeasible = lp_relaxation(red, hull, 4)
    assert not infeasible.feasible


def test_weight_overflow_and_huge_capacity() -> None:
    with pytest.raises(ValueError, match="weights"):
        MCKPProblem.from_ragged([[2**61], [2**61, 1]], [[0.0], [0.0, 1.0]], 1)
    p = MCKPProblem.from_ragged([[1]], [[0.0]], 10**40)
    assert p.capacity == 2**62


@pytest.mark.parametrize("seed", range(6))
def test_fit_prefix_matches_stable_sort(seed: int) -> None:
    from lyra_solver.formulations.mckp._lp import fit_prefix

    rng = np.random.default_rng(seed)
    n_items = int(rng.integers(1, 5000))
    # few distinct keys: many ties, which must be scanned in index order
    key = rng.integers(0, 1 + int(rng.integers(1, 50)), n_items).astype(float) / 7.0
    weight = rng.integers(1, 20, n_items)
    room = int(rng.integers(0, int(weight.sum()) + 5))
    taken, brk, used = fit_prefix(key, weight, room)
    order = np.argsort(-key, kind="stable")
    cum = np.cumsum(weight[order])
    t = int(np.searchsorted(cum, room, side="right"))
    expect = np.zeros(n_items, dtype=bool)
    expect[order[:t]] = True
    assert np.array_equal(taken, expect)
    assert brk == (int(order[t]) if t < n_items else -1)
    assert used == (int(cum[t - 1]) if t > 0 else 0)
