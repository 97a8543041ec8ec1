"""MCKP heuristic: the convex-hull (LP) greedy, the integral part of the LP relaxation.

Returns a feasible choice with the LP relaxation's bound and gap; the status is ``optimal`` when the LP
relaxation is integral (to 1e-9 relative), else ``feasible``.

References
----------
Sinha, P., Zoltners, A. A. (1979). The multiple-choice knapsack problem. Operations Research 27(3).
Kellerer, H., Pferschy, U., Pisinger, D. (2004). Knapsack Problems, ch. 11. Springer.
"""
from __future__ import annotations

import time

import numpy as np
from lyra_solver.formulations.mckp._lp import lp_relaxation, undominated, upper_hull
from lyra_solver.formulations.mckp._types import MCKPProblem, MCKPResult, make_result

__all__ = ["solve_hull"]


def solve_hull(problem: MCKPProblem, *, time_limit: float | None = None) -> MCKPResult:
    """Convex-hull greedy: the integral part of the LP relaxation solved by slopes.

    Take hull increments in decreasing order of slope while they fit and stop at the first that does not (the
    fractional class). Classic guarantee: ``OPT - hull <= LP - hull = fraction * gain <=`` the largest single
    hull increment of one class (Sinha and Zoltners 1979).

    Parameters
    ----------
    problem : MCKPProblem
        At least one class, and the lightest items fit (:func:`~lyra_solver.formulations.mckp.solve_mckp`
        checks both before dispatch).
    time_limit : float, optional
        Accepted for a uniform interface; the method is polynomial.

    Returns
    -------
    MCKPResult
        ``method="hull"``; ``optimal`` when the LP relaxation is integral (to 1e-9 relative).

    Notes
    -----
    Running time :math:`O(N \\log N)` for ``N`` items, memory :math:`O(N)`.
    """
    start = time.perf_counter()
    red = undominated(problem)
    lp = lp_relaxation(red, upper_hull(red), problem.capacity)
    choice = red.items[np.arange(problem.n_classes), lp.lp_pos]
    return make_result(problem, choice, lp.bound, proven=lp.frac_class < 0, start=start, method="hull",
                       backend_status="lp-integral" if lp.frac_class < 0 else "lp-fractional")
