"""Plain dynamic programming over capacity for MCKP (small capacities only).

``f_i(d)`` = best value of classes ``0..i`` with total (shifted) weight at most ``d``; ``f_i(d) =
max_k f_{i-1}(d - w_ik) + v_ik``. Weights are first shifted by each class's lightest item
(``w'_ik = w_ik - min_k w_ik``, ``c' = c - sum_i min_k w_ik``), dominated items are dropped, and the
table is one numpy vector of length ``c' + 1`` updated once per item. The choices are kept in an
``(n, c' + 1)`` table of small integers for the backtrack, so the method refuses (``ValueError``) when
``n (c' + 1)`` exceeds ``max_cells`` (``c`` is first capped at the weight of the heaviest choice).

References
----------
Dudzinski, K., Walukiewicz, S. (1987). Exact methods for the knapsack problem and its generalizations. EJOR
28(1), 3-21.
Kellerer, H., Pferschy, U., Pisinger, D. (2004). Knapsack Problems, sec. 11.5. Springer.
"""
from __future__ import annotations

import time

import numpy as np
from lyra_solver.formulations.mckp._lp import undominated
from lyra_solver.formulations.mckp._types import MCKPProblem, MCKPResult, make_result

__all__ = ["DEFAULT_MAX_CELLS", "solve_dp"]

#: Default limit on ``n * (c' + 1)`` (the size of the backtrack table, one byte or two per cell).
DEFAULT_MAX_CELLS = 200_000_000


def solve_dp(problem: MCKPProblem, *, time_limit: float | None = None,
             max_cells: int = DEFAULT_MAX_CELLS) -> MCKPResult:
    """Solve MCKP exactly by dynamic programming over the capacity.

    Parameters
    ----------
    problem : MCKPProblem
        At least one class, and the lightest items fit (:func:`~lyra_solver.formulations.mckp.solve_mckp`
        checks both before dispatch).
    time_limit : float, optional
        Seconds, checked after every class. The DP has no incumbent before its last class; on a time limit
        the result carries the marginal-gain greedy's choice (status ``feasible``) and the smaller of the LP
        bound and the bound of the classes done plus each remaining class's best item.
    max_cells : int
        Refuse instances whose table ``n * (c' + 1)`` is larger.

    Returns
    -------
    MCKPResult
        ``method="dp"``.

    Raises
    ------
    ValueError
        When the capacity (after the shift) is too large for a dense table.

    Notes
    -----
    Running time :math:`O(N c')` for ``N`` undominated items, memory :math:`O(n c')` bytes.
    """
    start = time.perf_counter()
    deadline = None if time_limit is None else start + float(time_limit)
    n = problem.n_classes
    red = undominated(problem)
    base = red.weights[:, 0]
    # capacity beyond the heaviest choice is never binding
    top = int(red.weights[np.arange(n), red.counts - 1].sum())
    cap = min(problem.capacity, top) - int(base.sum())
    if n * (cap + 1) > max_cells:
        raise ValueError(f"capacity: {problem.capacity} is too large for method 'dp' ({n} classes x "
                         f"{cap + 1} capacity cells > max_cells={max_cells}); use method 'core' or 'auto'")
    u = red.weights.shape[1]
    choice_dtype = np.int8 if u <= 127 else np.int16 if u <= 32767 else np.int32
    take = np.zeros((n, cap + 1), dtype=choice_dtype)
    f = np.zeros(cap + 1, dtype=np.float64)
    best_rest = np.array([red.values[i, red.counts[i] - 1] for i in range(n)])
    for i in range(n):
        k = int(red.counts[i])
        g = f + red.values[i, 0]
        t_i = take[i]
        for j in range(1, k):
            d = int(red.weights[i, j] - base[i])
            if d > cap:
                break
            cand = f[: cap + 1 - d] + red.values[i, j]
            better = cand > g[d:]
            g[d:][better] = cand[better]
            t_i[d:][better] = j
        f = g
        if deadline is not None and i < n - 1 and time.perf_counter() > deadline:
            # no DP incumbent yet: fall back on the greedy's choice, never return empty-handed
            from lyra_solver.formulations.mckp._lp import lp_relaxation, upper_hull
            from lyra_solver.formulations.mckp.greedy import greedy_positions

            bound = min(float(f[cap] + best_rest[i + 1:].sum()),
                        lp_relaxation(red, upper_hull(red), problem.capacity).bound)
            g_pos = greedy_positions(red, problem.capacity)
            g_choice = None if g_pos is None else red.items[np.arange(n), g_pos]
            return make_result(problem, g_choice, bound, proven=False, start=start, method="dp",
                               backend_status="time_limit")
    # backtrack
    pos = np.zeros(n, dtype=np.int64)
    d = cap
    for i in range(n - 1, -1, -1):
        j = int(take[i, d])
        pos[i] = j
        d -= int(red.weights[i, j] - base[i])
    choice = red.items[np.arange(n), pos]
    return make_result(problem, choice, float(f[cap]), proven=True, start=start, method="dp",
                       backend_status="optimal")
