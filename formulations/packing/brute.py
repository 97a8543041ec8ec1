"""Exhaustive packing: every assignment of guests to candidates and every share pair (tiny instances only).

The reference that the exact model is tested against: it enumerates, per guest, "not packed" or any of its
candidates with any of the 100 share pairs, skips what breaks a slot's capacity and keeps the best objective
(the first found among equals, in enumeration order). Nothing is pruned, so it shares no reasoning with
:mod:`~lyra_solver.formulations.packing.cpsat`.
"""
from __future__ import annotations

import itertools
import time

from lyra_solver.formulations.packing._types import (
    N_SHARES,
    PackingProblem,
    PackingResult,
    evaluate_packing,
    feasibility_error,
    make_result,
)

__all__ = ["solve_brute"]


def solve_brute(problem: PackingProblem, *, time_limit: float | None = None,
                max_combinations: int = 200_000) -> PackingResult:
    """Best packing by enumeration.

    Parameters
    ----------
    problem : PackingProblem
    time_limit : float, optional
        Seconds; when hit, the best solution so far comes back ``feasible`` (no bound).
    max_combinations : int
        Refuse instances with more combinations than this.

    Returns
    -------
    PackingResult
        ``method="brute"``, ``steps`` = combinations evaluated.

    Raises
    ------
    ValueError
        More than ``max_combinations`` combinations.

    Notes
    -----
    ``prod_g (1 + 100 C_g)`` combinations for ``C_g`` candidates of guest ``g``.
    """
    start = time.perf_counter()
    Q = problem.n_guests
    options = []
    total = 1
    for g in range(Q):
        opts = [(-1, 0, 0)] + [(c, k, l) for c in problem.candidates_of_guest(g) for k in range(N_SHARES)
                               for l in range(N_SHARES)]
        options.append(opts)
        total *= len(opts)
        if total > max_combinations:
            raise ValueError(f"problem: more than max_combinations={max_combinations} combinations")
    best, best_val, steps = None, None, 0
    timed_out = False
    for combo in itertools.product(*options):
        steps += 1
        a = [c for c, _, _ in combo]
        gk = [k for _, k, _ in combo]
        hk = [l for _, _, l in combo]
        if feasibility_error(problem, a, gk, hk) is not None:
            continue
        val = evaluate_packing(problem, a, gk, hk)
        if best_val is None or val > best_val + 1e-12:
            best, best_val = (a, gk, hk), val
        if time_limit is not None and steps % 1024 == 0 and time.perf_counter() - start > time_limit:
            timed_out = True
            break
    a, gk, hk = best
    return make_result(problem, a, gk, hk, None if timed_out else best_val, proven=not timed_out, start=start,
                       method="brute", backend_status="time_limit" if timed_out else "exhausted", steps=steps)
