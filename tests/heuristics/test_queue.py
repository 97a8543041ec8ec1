import numpy as np
import pytest
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
