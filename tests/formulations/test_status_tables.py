"""Backend statuses are read from status codes through one table per backend, never from message text."""
from __future__ import annotations

import numpy as np
import pytest
from lyra_solver.formulations import Status
from lyra_solver.formulations.mckp import highs as highs_module
from lyra_solver.formulations.mckp import solve_mckp

scipy_optimize = pytest.importorskip("scipy.optimize")


@pytest.mark.parametrize("code", sorted(highs_module.HIGHS_STATUS))
def test_highs_status_comes_from_the_code_not_the_message(code, monkeypatch):
    """scipy's milp answer replaced by one with each status code, a feasible choice and a message that says
    nothing: the backend status and the proof follow the code through HIGHS_STATUS."""
    text, proven = highs_module.HIGHS_STATUS[code]

    def fake_milp(c, **kwargs):
        x = np.array([0.0, 1.0, 0.0, 0.0, 1.0])  # class 0 item 1, class 1 item 1: weight 3, value 7.5
        return scipy_optimize.OptimizeResult(status=code, x=x, message="(no status in here)", mip_dual_bound=-9.0)

    monkeypatch.setattr(scipy_optimize, "milp", fake_milp)
    res = solve_mckp([[0, 1, 2], [0, 2]], [[0.0, 4.0, 5.0], [0.0, 3.5]], 3, method="highs")
    assert res.backend_status == text
    assert res.choice == (1, 1)
    assert (res.status == Status.OPTIMAL) == proven
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE)


def test_no_backend_reads_statuses_from_message_text():
    from pathlib import Path

    source = Path(highs_module.__file__).read_text()
    assert "import re" not in source and "message" not in source.replace("message text", "")
