"""MCKPProblem.from_table (the scale step's unchecked constructor) builds the problem from_padded builds."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from lyra_solver.formulations.mckp import MCKPProblem


@st.composite
def tables(draw):
    n = draw(st.integers(1, 6))
    m = draw(st.integers(1, 5))
    sizes = np.array(draw(st.lists(st.integers(1, m), min_size=n, max_size=n)), np.int64)
    weights = np.array(draw(st.lists(st.integers(0, 50), min_size=n * m, max_size=n * m)), np.int64).reshape(n, m)
    values = np.array(draw(st.lists(st.floats(-1e6, 1e6), min_size=n * m, max_size=n * m)), np.float64).reshape(n, m)
    padding = np.arange(m)[None, :] >= sizes[:, None]
    values[padding & draw(st.booleans())] = -np.inf  # the table's padding before the step zeroes it
    capacity = draw(st.sampled_from([0, 7, 60, 2**62, 2**70]))
    return weights, np.where(np.isfinite(values), values, 0.0), sizes, capacity


@settings(max_examples=200, deadline=None)
@given(tables())
def test_from_table_is_from_padded(args):
    weights, values, sizes, capacity = args
    ref = MCKPProblem.from_padded(weights, values, sizes, capacity)
    got = MCKPProblem.from_table(weights.copy(), values.copy(), sizes.copy(), capacity)
    assert got.capacity == ref.capacity
    for name in ("weights", "values", "sizes"):
        a, b = getattr(got, name), getattr(ref, name)
        assert a.dtype == b.dtype and np.array_equal(a, b)
        assert not a.flags.writeable
