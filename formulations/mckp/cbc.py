"""MCKP with CBC through PuLP (reference backend).

Model as in :mod:`lyra_solver.formulations.mckp.highs`. PuLP reports a time-limited CBC run with an incumbent as
``LpStatusOptimal``; the solution status ``prob.sol_status`` tells them apart (``LpSolutionOptimal`` = proven,
``LpSolutionIntegerFeasible`` = limit hit with an incumbent), read through the CBC status table
(:func:`~lyra_solver.formulations._status.cbc_outcome`). CBC's own best bound is not exposed: PuLP reads only
CBC's solution file, which has none, and the bound appears only in CBC's log text, which is not parsed. A
limit-hit answer therefore carries the LP relaxation's bound (Sinha and Zoltners' slopes, computed here in
:math:`O(N \\log N)`): proven, but weaker than CBC's.

References
----------
Forrest, J., Lougee-Heimer, R. (2005). CBC user guide. COIN-OR, https://github.com/coin-or/Cbc.
Mitchell, S., O'Sullivan, M., Dunning, I. (2011). PuLP: a linear programming toolkit for Python.
"""
from __future__ import annotations

import time

import numpy as np
from lyra_solver.formulations._cbc import run_cbc
from lyra_solver.formulations._status import cbc_outcome
from lyra_solver.formulations.mckp._lp import lp_relaxation, undominated, upper_hull
from lyra_solver.formulations.mckp._types import MCKPProblem, MCKPResult, check_float_solver_values, make_result

__all__ = ["solve_cbc"]


#: CBC starts only when the time left is at least this many times what building the model took: writing the
#: model file (PuLP, pure Python, about the building time again) cannot be interrupted, and CBC's reading it
#: and its root LP come out of the time left (CBC is killed when it runs past the limit).
CBC_SETUP_FACTOR = 3.0


def solve_cbc(problem: MCKPProblem, *, time_limit: float | None = None, threads: int = 1) -> MCKPResult:
    """Solve MCKP with CBC via PuLP.

    Parameters
    ----------
    problem : MCKPProblem
        At least one class, and the lightest items fit (:func:`~lyra_solver.formulations.mckp.solve_mckp`
        checks both before dispatch).
    time_limit : float, optional
        Seconds for the whole call, model building included: CBC gets the time left (``sec``, elapsed time)
        and is killed :data:`~lyra_solver.formulations._cbc.KILL_GRACE` s after the limit
        (:func:`~lyra_solver.formulations._cbc.run_cbc`). When hit, the incumbent comes back ``feasible`` with
        the LP relaxation's bound, or ``no_solution`` (also when CBC had to be killed).
    threads : int
        CBC threads.

    Raises
    ------
    ValueError
        Values beyond :data:`~lyra_solver.formulations.mckp._types.FLOAT_SOLVER_MAX_VALUE_SUM` (the solver's
        absolute tolerances cannot hold them: it would answer "no solution" on a feasible instance).

    Returns
    -------
    MCKPResult
        ``method="cbc"``; ``backend_status`` is ``"<LpStatus>/<LpSolution status>"``.

    Notes
    -----
    Exponential in the worst case (LP-based branch and cut); model building in PuLP is pure Python.
    """
    import pulp

    start = time.perf_counter()
    check_float_solver_values(problem, "cbc")
    n = problem.n_classes
    deadline = None if time_limit is None else start + float(time_limit)

    def out_of_time() -> MCKPResult | None:  # model building counts against the limit
        if deadline is not None and time.perf_counter() >= deadline:
            return make_result(problem, None, None, proven=False, start=start, method="cbc",
                               backend_status="time limit reached while building the model")
        return None

    # expressions from (variable, coefficient) lists: products of variables and numbers build one temporary
    # expression per term (several times slower); the limit is checked every 1,024 classes
    prob = pulp.LpProblem("mckp", pulp.LpMaximize)
    xs: list[list[pulp.LpVariable]] = []
    values, weights, sizes = problem.values.tolist(), problem.weights.tolist(), problem.sizes.tolist()
    objective: list[tuple[pulp.LpVariable, float]] = []
    load: list[tuple[pulp.LpVariable, int]] = []
    for i in range(n):
        row = [prob.add_variable(f"x_{i}_{k}", 0, 1, cat="Binary") for k in range(sizes[i])]
        xs.append(row)
        objective.extend(zip(row, values[i], strict=False))
        load.extend(zip(row, weights[i], strict=False))
        prob += pulp.LpConstraint(pulp.LpAffineExpression([(x, 1) for x in row]), pulp.LpConstraintEQ,
                                  f"class_{i}", 1)
        if i % 1024 == 1023 and (late := out_of_time()):
            return late
    prob.setObjective(pulp.LpAffineExpression(objective))
    prob += pulp.LpConstraint(pulp.LpAffineExpression(load), pulp.LpConstraintLE, "capacity", int(problem.capacity))
    if late := out_of_time():
        return late
    built = time.perf_counter() - start
    if deadline is not None and deadline - time.perf_counter() < CBC_SETUP_FACTOR * built:
        # writing the model file costs about the building again and cannot be interrupted; CBC's reading it
        # and its root LP come next: starting now would overrun the limit or leave CBC no time to search
        return make_result(problem, None, None, proven=False, start=start, method="cbc",
                           backend_status="time limit: too little time left for CBC's set-up")
    run = run_cbc(prob, deadline=deadline, threads=threads, gap_rel=0.0)  # CBC gets the time left, hard-killed
    outcome = cbc_outcome(prob.status, prob.sol_status)  # the status codes' rows, never CBC's log text
    name = outcome.name + (f" ({run.note})" if run.note else "")
    # feasibility was established above (the lightest items fit): an "Infeasible" from PuLP here is a run
    # stopped before it found a solution, not a proof
    choice = None
    if outcome.solution:
        choice = np.full(n, -1, dtype=np.int64)
        for i in range(n):
            for k, x in enumerate(xs[i]):
                val = x.value()
                if val is not None and val > 0.5:
                    choice[i] = k
                    break
        if np.any(choice < 0) or problem.choice_weight(choice) > problem.capacity:
            choice = None
    proven = outcome.proven and choice is not None
    bound = None
    if not proven:  # CBC's bound is in its log only: the LP relaxation's is proven too
        red = undominated(problem)
        bound = lp_relaxation(red, upper_hull(red), problem.capacity).bound
    return make_result(problem, choice, bound, proven=proven, start=start, method="cbc", backend_status=name)
