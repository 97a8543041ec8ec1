"""Backend statuses are read from status codes through one table per backend (HiGHS, CP-SAT, CBC), never from
message or log text: each backend's answer replaced by one with each status code of its table, and the
backend status, the solution and the proof follow the table."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from lyra_solver.formulations import Status
from lyra_solver.formulations import _status as tables
from lyra_solver.formulations.mckp import highs as highs_module
from lyra_solver.formulations.mckp import solve_mckp

WEIGHTS, VALUES, CAPACITY = [[0, 1, 2], [0, 2]], [[0.0, 4.0, 5.0], [0.0, 3.5]], 3
OPTIMUM = 7.5  # class 0 item 1, class 1 item 1: weight 3


@pytest.mark.parametrize("code", sorted(tables.HIGHS_STATUS))
def test_highs_status_comes_from_the_code_not_the_message(code, monkeypatch):
    """scipy's milp answer replaced by one with each status code, a feasible choice and a message that says
    nothing: the backend status and the proof follow the code through HIGHS_STATUS."""
    scipy_optimize = pytest.importorskip("scipy.optimize")
    row = tables.HIGHS_STATUS[code]

    def fake_milp(c, **kwargs):
        x = np.array([0.0, 1.0, 0.0, 0.0, 1.0])
        return scipy_optimize.OptimizeResult(status=code, x=x, message="(no status in here)", mip_dual_bound=-9.0)

    monkeypatch.setattr(scipy_optimize, "milp", fake_milp)
    res = solve_mckp(WEIGHTS, VALUES, CAPACITY, method="highs")
    assert highs_module.HIGHS_STATUS is tables.HIGHS_STATUS
    assert res.backend_status == row.name
    assert res.choice == (1, 1)
    assert (res.status == Status.OPTIMAL) == row.proven
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE)


@pytest.mark.parametrize("code", sorted(tables.CPSAT_STATUS))
def test_cpsat_status_comes_from_the_code(code, monkeypatch):
    """CP-SAT's solve replaced by one answering each status code (with the optimum's values and a bound above
    it): a solution is read only where the table says there is one, proven only where it says so."""
    cp_model = pytest.importorskip("ortools.sat.python.cp_model")
    row = tables.CPSAT_STATUS[code]
    assert row.name == type(cp_model.OPTIMAL)(code).name  # the table's names are CP-SAT's own

    class FakeSolver(cp_model.CpSolver):
        def solve(self, model, *args):
            return type(cp_model.OPTIMAL)(code)

        @property
        def best_objective_bound(self):
            return 9.0

        def boolean_value(self, v):
            return v.name in ("x0_1", "x1_1")

    monkeypatch.setattr(cp_model, "CpSolver", FakeSolver)
    res = solve_mckp(WEIGHTS, [[0.0, 4.0, 5.0], [0.0, 3.0]], CAPACITY, method="cpsat")  # integers: scale 1
    assert res.backend_status == row.name
    if row.solution:
        assert res.choice == (1, 1) and res.objective == 7.0
        assert res.status is (Status.OPTIMAL if row.proven else Status.FEASIBLE)
        assert res.bound == pytest.approx(9.0)
    else:
        assert res.status is Status.NO_SOLUTION and res.choice is None and res.bound is None


@pytest.mark.parametrize("sol_status", sorted(tables.CBC_SOLUTION))
def test_cbc_status_comes_from_pulps_codes_and_the_bound_from_the_lp(sol_status, monkeypatch):
    """CBC's run replaced by one leaving each PuLP solution status (and the optimum's values, and no log): the
    status follows CBC_SOLUTION; an answer not proven optimal carries the LP relaxation's bound, which is at
    least the optimum, and no number from any log."""
    pulp = pytest.importorskip("pulp")
    from lyra_solver.formulations import _cbc
    from lyra_solver.formulations.mckp import cbc as cbc_module

    row = tables.CBC_SOLUTION[sol_status]
    assert row.name == pulp.LpSolution[sol_status]

    def fake_run_cbc(prob, **kwargs):
        for v in prob.variables():
            v.varValue = 1.0 if v.name in ("x_0_1", "x_1_1") else 0.0
        prob.status = pulp.LpStatusOptimal if row.solution else pulp.LpStatusNotSolved
        prob.sol_status = sol_status
        return _cbc.CbcRun(True, False, "Upper bound: 123456\nbest possible -99999")

    monkeypatch.setattr(cbc_module, "run_cbc", fake_run_cbc)
    res = solve_mckp(WEIGHTS, VALUES, CAPACITY, method="cbc")
    assert res.backend_status == tables.cbc_outcome(int(pulp.LpStatusOptimal if row.solution else 0),
                                                    sol_status).name
    if row.solution:
        assert res.choice == (1, 1) and res.objective == OPTIMUM
    else:
        assert res.choice is None and res.status is Status.NO_SOLUTION
    if row.proven:
        assert res.status is Status.OPTIMAL and res.bound == OPTIMUM
    else:
        # the LP relaxation's bound: at least the optimum, and none of the (fake) log's numbers
        assert res.bound is not None and OPTIMUM <= res.bound < 100
        if row.solution:
            assert res.status is (Status.OPTIMAL if res.bound == OPTIMUM else Status.FEASIBLE)


def test_cbc_outcome_reads_infeasibility_from_either_status():
    assert tables.cbc_outcome(-1, 0).infeasible  # CBC's "Integer infeasible": only the problem status says so
    assert tables.cbc_outcome(0, -1).infeasible
    assert not tables.cbc_outcome(0, 0).infeasible and not tables.cbc_outcome(1, 2).proven
    assert tables.cbc_outcome(1, 1) == tables.Outcome("Optimal/Optimal Solution Found", True, True)
    assert tables.cpsat_outcome(17) == tables.Outcome("status 17", False, False)


BACKEND_MODULES = ["formulations/_cbc.py", "formulations/_lexilp.py", "formulations/mckp/highs.py",
                   "formulations/mckp/cbc.py", "formulations/mckp/cpsat.py", "formulations/packing/cpsat.py"]


@pytest.mark.parametrize("path", BACKEND_MODULES)
def test_no_backend_reads_statuses_from_message_or_log_text(path):
    """No backend module imports ``re`` or reads a solver's message, and only the CBC runner touches its log."""
    root = Path(__file__).resolve().parents[2]
    tree = ast.parse((root / path).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "re" not in imported
    attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert "message" not in attrs
    if path != "formulations/_cbc.py":
        assert "log" not in attrs
