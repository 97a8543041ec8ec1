"""MCKP with CBC through PuLP (reference backend).

Model as in :mod:`lyra_solver.formulations.mckp.highs`. PuLP reports a time-limited CBC run with an incumbent as
``LpStatusOptimal``; the solution status ``prob.sol_status`` tells them apart (``LpSolutionOptimal`` = proven,
``LpSolutionIntegerFeasible`` = limit hit with an incumbent). The bound is read from CBC's log (``Upper
bound:`` for a maximisation, else ``best possible`` of the partial-search line); ``None`` when absent.

References
----------
Forrest, J., Lougee-Heimer, R. (2005). CBC user guide. COIN-OR, https://github.com/coin-or/Cbc.
Mitchell, S., O'Sullivan, M., Dunning, I. (2011). PuLP: a linear programming toolkit for Python.
"""
from __future__ import annotations

import math
import re
import time

import numpy as np
from lyra_solver.formulations._cbc import run_cbc
from lyra_solver.formulations.mckp._types import MCKPProblem, MCKPResult, check_float_solver_values, make_result

__all__ = ["parse_cbc_bound", "solve_cbc"]

_UPPER = re.compile(r"^Upper bound:\s*([-+0-9.eE]+)", re.MULTILINE)
_BEST_POSSIBLE = re.compile(r"best possible\s*([-+0-9.eE]+)")


def _safe_float(text: str) -> float:
    """A printed number, raised by one unit of its last printed digit (CBC rounds what it prints)."""
    x = float(text)
    mant = text.lower().split("e")[0]
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    exp = int(text.lower().split("e")[1]) if "e" in text.lower() else 0
    return x + 10.0 ** (exp - decimals)


def parse_cbc_bound(log: str) -> float | None:
    """The proven upper bound of a CBC maximisation run, from its log text (``None`` if not found).

    CBC prints rounded numbers, so the value is raised by one unit of its last printed digit to stay a
    valid bound.
    """
    m = _UPPER.search(log)
    if m:
        try:
            return _safe_float(m.group(1))
        except ValueError:
            pass
    hits = _BEST_POSSIBLE.findall(log)
    if hits:
        try:
            # CBC minimises the negated objective internally
            return -float(hits[-1]) + (_safe_float(hits[-1]) - float(hits[-1]))
        except ValueError:
            return None
    return None


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
        the bound from the log, or ``no_solution`` (also when CBC had to be killed).
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
    log = run.log
    sol = prob.sol_status
    name = f"{pulp.LpStatus.get(prob.status, prob.status)}/{pulp.LpSolution.get(sol, sol)}"
    if run.note:
        name += f" ({run.note})"
    # feasibility was established above (the lightest items fit): an "Infeasible" from PuLP here is a run
    # stopped before it found a solution, not a proof
    bound = parse_cbc_bound(log)
    if bound is not None and not math.isfinite(bound):
        bound = None
    choice = None
    if sol in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        choice = np.full(n, -1, dtype=np.int64)
        for i in range(n):
            for k, x in enumerate(xs[i]):
                val = x.value()
                if val is not None and val > 0.5:
                    choice[i] = k
                    break
        if np.any(choice < 0) or problem.choice_weight(choice) > problem.capacity:
            choice = None
    return make_result(problem, choice, bound, proven=sol == pulp.LpSolutionOptimal and choice is not None,
                       start=start, method="cbc", backend_status=name)
