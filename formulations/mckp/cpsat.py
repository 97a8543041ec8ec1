"""MCKP with OR-Tools CP-SAT (reference backend).

Model: one Boolean ``x_ik`` per item, ``add_exactly_one`` per class, ``sum w_ik x_ik <= c``, maximise
``sum q_ik x_ik`` where ``q_ik = round(s v_ik)`` are the values scaled to integers. Integral values of
moderate size are used as they are (``s = 1``, exact); otherwise ``s`` is a power of two such that
``max |v| s`` is about ``2**30`` (~1e9). The objective is recomputed from the original values; the bound is
converted back to original units and made safe for the rounding: ``(B + n/2) / s`` for the scaled bound
``B`` (each class's rounding error is at most ``1/(2s)``). A CP-SAT ``OPTIMAL`` status is reported as
``optimal``: the proof holds for the scaled values, i.e. up to ``n / (2s)`` in original units (zero when the
values are integers), which the reported bound and gap show.

References
----------
Perron, L., Didier, F. (2024). CP-SAT. Google OR-Tools, https://developers.google.com/optimization.
"""
from __future__ import annotations

import math
import time

import numpy as np
from lyra_solver.formulations._forked import run_bounded
from lyra_solver.formulations._status import cpsat_outcome
from lyra_solver.formulations.mckp._types import MCKPProblem, MCKPResult, exact_sum, make_result

#: Seconds CP-SAT may run past the time limit (under a limit) before its process is killed.
KILL_GRACE = 0.25

#: CP-SAT validates a linear constraint by the sum of its coefficients' magnitudes: 2**62 or more is an invalid model.
CPSAT_MAX_WEIGHT_SUM = 2**62

__all__ = ["scale_values", "solve_cpsat"]


def scale_values(values: np.ndarray, n_classes: int) -> tuple[np.ndarray, float]:
    """Scale float values to integers for CP-SAT.

    Parameters
    ----------
    values : array of float
        The (valid) item values.
    n_classes : int
        Used to keep ``n * max|q|`` well inside int64.

    Returns
    -------
    q : array of int64
        ``round(s * values)``.
    s : float
        The scale, ``1.0`` when the values are integers with ``n * max|v| <= 2**52``, else a power of two
        with ``max|v| * s`` close to ``2**30``.
    """
    vmax = float(np.max(np.abs(values))) if values.size else 0.0
    if vmax == 0.0:
        return np.zeros(values.shape, dtype=np.int64), 1.0
    if np.all(values == np.round(values)) and vmax * max(n_classes, 1) <= 2.0**52:
        return values.astype(np.int64), 1.0
    exp = 30 - math.ceil(math.log2(vmax))
    # keep the objective sum inside int64 with margin
    while exp > -1074 and vmax * 2.0**exp * max(n_classes, 1) > 2.0**60:
        exp -= 1
    s = 2.0**exp
    return np.round(values * s).astype(np.int64), s


def solve_cpsat(problem: MCKPProblem, *, time_limit: float | None = None, num_workers: int = 1,
                seed: int = 0) -> MCKPResult:
    """Solve MCKP with CP-SAT.

    Parameters
    ----------
    problem : MCKPProblem
        At least one class, and the lightest items fit (:func:`~lyra_solver.formulations.mckp.solve_mckp`
        checks both before dispatch).
    time_limit : float, optional
        Seconds for the whole call, model building included (it stops at the limit); CP-SAT gets the time left
        (``max_time_in_seconds``). When hit, the incumbent comes back ``feasible`` with bound and gap, or
        ``no_solution``. Under a limit CP-SAT runs in a forked child process killed :data:`KILL_GRACE` s after
        it (its presolve ignores the limit on large models: 100,000 classes x 2 items once took 4.8 s under a
        0.8 s limit); a killed run answers ``no_solution`` with ``killed`` in its backend status.
    num_workers : int
        CP-SAT search workers (1 keeps runs deterministic).
    seed : int
        ``random_seed``.

    Returns
    -------
    MCKPResult
        ``method="cpsat"``; ``backend_status`` is CP-SAT's status name
        (:data:`~lyra_solver.formulations._status.CPSAT_STATUS`).

    Raises
    ------
    ValueError
        When all items' weights together reach ``2**62``: CP-SAT refuses such a constraint as an invalid model
        (its sums must stay within ``2**62 - 1``), which would read as "no solution" on a feasible instance.

    Notes
    -----
    Exponential in the worst case (branch and bound with clause learning and LP relaxations).
    """
    from ortools.sat.python import cp_model

    start = time.perf_counter()
    n = problem.n_classes
    valid = problem.valid_mask()
    rows, cols = np.nonzero(valid)
    w = problem.weights[rows, cols]
    if exact_sum(w) >= CPSAT_MAX_WEIGHT_SUM:
        raise ValueError(f"weights: all items' weights add up to {exact_sum(w)}, at least 2**62, beyond what CP-SAT's "
                         "linear constraints hold; use method 'core'")
    q, s = scale_values(problem.values[rows, cols], n)
    deadline = None if time_limit is None else start + float(time_limit)

    def late() -> bool:  # model building (Python, O(items)) counts against the limit
        return deadline is not None and time.perf_counter() >= deadline

    def out_of_time() -> MCKPResult:
        return make_result(problem, None, None, proven=False, start=start, method="cpsat",
                           backend_status="time limit reached while building the model")

    model = cp_model.CpModel()
    x = [model.new_bool_var(f"x{i}_{k}") for i, k in zip(rows.tolist(), cols.tolist(), strict=True)]
    if late():
        return out_of_time()
    first = np.concatenate([[0], np.cumsum(problem.sizes)])
    for i in range(n):
        model.add_exactly_one(x[first[i]:first[i + 1]])
        if i % 4096 == 4095 and late():
            return out_of_time()
    model.add(cp_model.LinearExpr.weighted_sum(x, w.tolist()) <= problem.capacity)
    model.maximize(cp_model.LinearExpr.weighted_sum(x, q.tolist()))
    if late():
        return out_of_time()
    solver = cp_model.CpSolver()
    if time_limit is not None:  # the model building counts: CP-SAT gets the time left
        solver.parameters.max_time_in_seconds = max(float(time_limit) - (time.perf_counter() - start), 1e-3)
    solver.parameters.num_workers = int(num_workers)
    solver.parameters.random_seed = int(seed)

    def run():
        outcome = cpsat_outcome(solver.solve(model))
        return (outcome, float(solver.best_objective_bound) if outcome.solution else math.nan,
                np.array([solver.boolean_value(v) for v in x], dtype=bool) if outcome.solution else None)

    if time_limit is None:
        outcome, best_bound, vals = run()
    else:  # CP-SAT's presolve can run seconds past its limit on large models: run it where it can be killed
        answer = run_bounded(run, start + float(time_limit) + KILL_GRACE, what="CP-SAT", size=len(x))
        if answer is None:
            return make_result(problem, None, None, proven=False, start=start, method="cpsat",
                               backend_status=f"killed {KILL_GRACE} s after the time limit")
        outcome, best_bound, vals = answer
    # INFEASIBLE cannot be a proof here: feasibility was established above (the lightest items fit)
    if not outcome.solution:
        # (without a solution, CP-SAT may report a bound it never proved, e.g. 0 when stopped before presolve)
        return make_result(problem, None, None, proven=False, start=start, method="cpsat",
                           backend_status=outcome.name)
    slack = 0.0 if s == 1.0 else n / 2.0
    bound: float | None = None
    if math.isfinite(best_bound):
        bound = (best_bound + slack) / s
        bound += 1e-12 * max(1.0, abs(bound))
    choice = np.zeros(n, dtype=np.int64)
    choice[rows[vals]] = cols[vals]
    return make_result(problem, choice, bound, proven=outcome.proven, start=start, method="cpsat",
                       backend_status=outcome.name)
