import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lyra_solver.heuristics.queue import queue_order


def test_orders():
    submit = [5.0, 1.0, 3.0, 1.0]
    tmin = [10.0, 30.0, 10.0, 20.0]
    las = [0.0, 0.0, 100.0, 50.0]
    assert queue_order("fifo", submit_time=submit).tolist() == [1, 3, 2, 0]
    assert queue_order("sjf", submit_time=submit, min_time=tmin).tolist() == [2, 0, 3, 1]
    assert queue_order("las", submit_time=submit, attained_service=las).tolist() == [1, 0, 3, 2]


def test_ties_break_by_position_and_bad_order():
    assert queue_order("fifo", submit_time=np.zeros(4)).tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        queue_order("random", submit_time=[0.0])
    with pytest.raises(ValueError):
        queue_order("sjf", submit_time=[0.0])


_KEYS = (st.lists(st.sampled_from([0.0, -0.0, 1.0, 2.5, float("nan"), float("inf")]) | st.floats(-1e6, 1e6),
                  max_size=100)
         | st.lists(st.floats(-1e6, 1e6), min_size=64, max_size=100, unique=True)  # the default sort's case
         | st.builds(lambda keys, copies: _tie(keys, copies),  # the default sort with a few ties mended
                     st.lists(st.floats(-1e6, 1e6) | st.sampled_from([0.0, -0.0, float("inf"), -float("inf")]),
                              min_size=64, max_size=600, unique=True),
                     st.lists(st.tuples(st.integers(0, 599), st.integers(0, 599)), max_size=40)))


def _tie(keys: list[float], copies: list[tuple[int, int]]) -> list[float]:
    """``keys`` with ``keys[a]`` copied to position ``b`` for each pair of ``copies`` (ties, a few runs long)."""
    n = len(keys)
    for a, b in copies:
        keys[b % n] = keys[a % n]
    return keys


@settings(max_examples=400, deadline=None)
@given(key=_KEYS, data=st.data(), order=st.sampled_from(["fifo", "sjf", "las"]))
def test_every_order_is_the_lexicographic_sort(key, data, order):
    """Each order is one stable lexicographic sort by (its key, submit time, position), whichever way it is found
    (numpy's default sort where the key alone orders every job strictly): ties, nan, -0.0 and inf included."""
    submit = data.draw(st.lists(st.sampled_from([0.0, 1.0, float("nan")]) | st.floats(-10, 10),
                                min_size=len(key), max_size=len(key)))
    pos = np.arange(len(key))
    if order == "fifo":
        ref = np.lexsort((pos, np.asarray(submit, np.float64)))
        got = queue_order("fifo", submit_time=submit)
    else:
        ref = np.lexsort((pos, np.asarray(submit, np.float64), np.asarray(key, np.float64)))
        name = "min_time" if order == "sjf" else "attained_service"
        got = queue_order(order, submit_time=submit, **{name: key})
    assert got.tolist() == ref.tolist()
    assert got.dtype == ref.dtype


def test_distinct_keys_take_the_default_sort():
    """The fast path is taken where the key orders every job strictly (and agrees); on a few ties only the tied
    positions go to the lexicographic sort, on many ties all of them: 10,000 jobs."""
    rng = np.random.default_rng(3)
    key = rng.permutation(10_000).astype(np.float64)
    submit = rng.integers(0, 5, 10_000).astype(np.float64)
    ref = np.lexsort((np.arange(10_000), submit, key))
    tied = key.copy()
    tied[[7, 9, 11]] = tied[8]  # one run of four equal keys
    tied[100] = tied[200]  # and one of two
    ref_tied = np.lexsort((np.arange(10_000), submit, tied))
    many = np.floor(key / 4)  # every key four times
    ref_many = np.lexsort((np.arange(10_000), submit, many))
    sizes = []
    real = np.lexsort
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(np, "lexsort", lambda keys: sizes.append(len(keys[0])) or real(keys))
        assert queue_order("sjf", submit_time=submit, min_time=key).tolist() == ref.tolist()
        assert not sizes
        assert queue_order("sjf", submit_time=submit, min_time=tied).tolist() == ref_tied.tolist()
        assert sizes == [6]
        assert queue_order("sjf", submit_time=submit, min_time=many).tolist() == ref_many.tolist()
        assert sizes == [6, 10_000]
        with_nan = tied.copy()
        with_nan[5] = np.nan
        ref_nan = real((np.arange(10_000), submit, with_nan))
        assert queue_order("sjf", submit_time=submit, min_time=with_nan).tolist() == ref_nan.tolist()
        assert sizes == [6, 10_000, 10_000]
