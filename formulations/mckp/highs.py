"""MCKP with HiGHS through :func:`scipy.optimize.milp` (reference backend).

Model: binary ``x_ik``; ``sum_k x_ik = 1`` per class; ``sum w_ik x_ik <= c``; minimise ``-sum v_ik x_ik``.
Options ``mip_rel_gap=0`` (exact) and ``time_limit``; the bound is ``-mip_dual_bound``.

References
----------
Huangfu, Q., Hall, J. A. J. (2018). Parallelizing the dual revised simplex method. Mathematical Programming
Computation 10, 119-142. HiGHS, https://highs.dev.
"""
from __future__ import annotations

import math
import time

import numpy as np
from lyra_solver.formulations._forked import run_bounded
from lyra_solver.formulations._status import HIGHS_STATUS, highs_outcome
from lyra_solver.formulations.mckp._types import MCKPProblem, MCKPResult, check_float_solver_values, make_result

__all__ = ["HIGHS_STATUS", "solve_highs"]


#: Above this many variables HiGHS runs without presolve unless asked: its presolve of the MCKP rows grows
#: superlinearly and does not stop at the time limit (20,000 classes x 2 items: 35 s under a 3 s limit;
#: 5,000 x 2: 7.3 s under a 1 s limit; 3,000 x 2: 2.3 s, with no solution, where without presolve it
#: proves the optimum in 0.6 s; `python -m lyra_solver.bench.fuzz --overrun` measures it).
PRESOLVE_MAX_VARIABLES = 2_000


def solve_highs(problem: MCKPProblem, *, time_limit: float | None = None,
                presolve: bool | None = None) -> MCKPResult:
    """Solve MCKP with HiGHS (branch and cut) via ``scipy.optimize.milp``.

    Parameters
    ----------
    problem : MCKPProblem
        At least one class, and the lightest items fit (:func:`~lyra_solver.formulations.mckp.solve_mckp`
        checks both before dispatch).
    time_limit : float, optional
        Seconds for the whole call, model building included: HiGHS gets the time left, and runs in a forked
        process killed :data:`KILL_GRACE` s after the limit (its set-up before the search ignores the limit:
        200,000 variables once took 97 s under a 2 s limit on a loaded machine). When hit, HiGHS's incumbent
        comes back ``feasible`` with bound and gap, or ``no_solution`` (also when it had to be killed).
    presolve : bool, optional
        HiGHS presolve; by default on up to :data:`PRESOLVE_MAX_VARIABLES` variables, off above.

    Raises
    ------
    ValueError
        Values beyond :data:`~lyra_solver.formulations.mckp._types.FLOAT_SOLVER_MAX_VALUE_SUM` (the solver's
        absolute tolerances cannot hold them: it would answer "no solution" on a feasible instance).

    Returns
    -------
    MCKPResult
        ``method="highs"``; ``backend_status`` is the name of scipy's status code
        (:data:`~lyra_solver.formulations._status.HIGHS_STATUS`, e.g. ``Optimal``, ``Time or iteration limit
        reached``).

    Notes
    -----
    Exponential in the worst case (LP-based branch and cut).
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_array, vstack

    start = time.perf_counter()
    check_float_solver_values(problem, "highs")
    n = problem.n_classes
    rows, cols = np.nonzero(problem.valid_mask())
    nv = rows.shape[0]
    c = -problem.values[rows, cols]
    a_eq = csr_array((np.ones(nv), (rows, np.arange(nv))), shape=(n, nv))
    a_w = csr_array((problem.weights[rows, cols].astype(np.float64), (np.zeros(nv, dtype=np.int64),
                                                                       np.arange(nv))), shape=(1, nv))
    a = vstack([a_eq, a_w]).tocsr()
    lo = np.concatenate([np.ones(n), [-np.inf]])
    hi = np.concatenate([np.ones(n), [float(problem.capacity)]])
    if presolve is None:
        presolve = nv <= PRESOLVE_MAX_VARIABLES
    options: dict = {"disp": False, "mip_rel_gap": 0.0, "presolve": presolve}
    if time_limit is not None:  # model building counts: HiGHS gets the time left
        left = float(time_limit) - (time.perf_counter() - start)
        if left <= 0:
            return make_result(problem, None, None, proven=False, start=start, method="highs",
                               backend_status="time limit reached while building the model")
        options["time_limit"] = max(left, 1e-3)
    def run():
        res = milp(c, constraints=LinearConstraint(a, lo, hi), integrality=np.ones(nv), bounds=Bounds(0, 1),
                   options=options)
        return int(res.status), res.x, getattr(res, "mip_dual_bound", None)

    if time_limit is None:
        status, x, dual = run()
    else:  # HiGHS's set-up before its search ignores the limit: run it where it can be killed
        answer = run_bounded(run, start + float(time_limit) + KILL_GRACE, what="HiGHS", size=nv)
        if answer is None:
            return make_result(problem, None, None, proven=False, start=start, method="highs",
                               backend_status=f"killed {KILL_GRACE} s after the time limit")
        status, x, dual = answer
    outcome = highs_outcome(status)  # the status code's row of HIGHS_STATUS, never the message text
    # status == 2 (infeasible) cannot be a proof here: feasibility was established above
    bound = -float(dual) if dual is not None and math.isfinite(dual) else None
    choice = None
    if x is not None:
        xv = np.asarray(x)
        sel = xv > 0.5
        if np.bincount(rows[sel], minlength=n).tolist() == [1] * n:
            choice = np.zeros(n, dtype=np.int64)
            choice[rows[sel]] = cols[sel]
            if problem.choice_weight(choice) > problem.capacity:
                choice = None
    return make_result(problem, choice, bound, proven=outcome.proven and choice is not None, start=start,
                       method="highs", backend_status=outcome.name)


#: Seconds HiGHS may run past the time limit before its process is killed.
KILL_GRACE = 0.25
