"""Job packing (DESIGN "Packing"): the front door :func:`solve_packing` and its registry of exact methods.

Guests (jobs that would wait) join hosts (running jobs) on the GPUs the hosts hold, each pair with MPS shares;
the objective is one of Gimbal's policies (``jct``, ``deadline``, ``makespan``). The problem and result types
are in :mod:`~lyra_solver.formulations.packing._types`, the speed model in
:mod:`~lyra_solver.formulations.packing.speed`.

Methods (``solve_packing(..., method=...)``):

========= ==================================================================================
``exact`` our exact method (``cpsat``)
``cpsat`` assignment of guests to hosts over every undominated share pair, OR-Tools CP-SAT
          (:mod:`~lyra_solver.formulations.packing.cpsat`)
``brute`` enumeration of every assignment and share pair, tiny instances (the tests' reference)
========= ==================================================================================

The published heuristics (Gimbal's greedy squeeze/swell search, Lucid's threshold pairing, Gandiva's random
pairing) are in :mod:`lyra_solver.heuristics.packing`: they take the same problem and return the same result,
and the engine (``lyra_solver.steps.pack``) dispatches to them by the same names; they are not registered here
because ``formulations`` imports nothing of the project.
"""
from __future__ import annotations

from typing import Any, Literal

import lyra_solver.formulations.methods as _methods
from lyra_solver.formulations.packing._types import (
    POLICIES,
    Member,
    PackingProblem,
    PackingResult,
    evaluate_packing,
    feasibility_error,
    make_result,
    set_value,
)
from lyra_solver.formulations.packing.speed import SHARES, job_rate, pair_speed

__all__ = ["ALIASES", "METHODS", "POLICIES", "TABLE", "PackingMethod", "SHARES", "Member", "PackingProblem",
           "PackingResult", "evaluate_packing", "feasibility_error", "job_rate", "make_result", "pair_speed",
           "set_value", "solve_packing"]

#: The method table (:data:`lyra_solver.formulations.methods.PACKING`): the exact methods are this front door's;
#: the heuristics' rows name their functions in :mod:`lyra_solver.heuristics.packing`.
TABLE = _methods.PACKING

#: Other names accepted: ``exact`` is our exact method.
ALIASES: dict[str, str] = TABLE.aliases()

#: Every name accepted by :func:`solve_packing`.
METHODS: tuple[str, ...] = TABLE.names(front_door=True)

#: :data:`METHODS` as a type (kept equal to the table by a test).
PackingMethod = Literal["exact", "cpsat", "brute"]


def solve_packing(problem: PackingProblem, *, method: PackingMethod = "exact", time_limit: float | None = None,
                  **options: Any) -> PackingResult:
    """Solve a packing problem exactly.

    Parameters
    ----------
    problem : PackingProblem
    method : str
        One of :data:`METHODS`.
    time_limit : float, optional
        Seconds; a limit hit is a status (``feasible`` with a bound, or ``no_solution``).
    **options
        Passed to the method (``num_workers``, ``seed`` for CP-SAT; ``max_combinations`` for brute).

    Returns
    -------
    PackingResult

    Raises
    ------
    ValueError
        Unknown method, a negative time limit, not a :class:`PackingProblem`.

    Examples
    --------
    >>> p = PackingProblem.build(host_util=[0.9], host_time=[100.0], host_workers=[1], host_gpus=[1],
    ...     host_mem=[10.0], guest_util=[0.9], guest_time=[10.0], guest_gpus=[1], guest_mem=[10.0],
    ...     slot_host=[0], slot_capacity=[1], slot_mem=[80.0], candidates=[(0, 0, [(0, 1)])])
    >>> r = solve_packing(p)
    >>> r.status.value, r.assignment, r.guest_share, r.host_share
    ('optimal', (0,), (1.0,), (0.1,))
    """
    if not isinstance(problem, PackingProblem):
        raise ValueError(f"problem: expected a PackingProblem, got {type(problem).__name__}")
    if time_limit is not None and not (time_limit >= 0):
        raise ValueError(f"time_limit: must be >= 0 seconds, got {time_limit!r}")
    if method not in METHODS:
        raise ValueError(f"method: unknown method {method!r}; expected one of {', '.join(METHODS)}")
    return TABLE.function(method)(problem, time_limit=time_limit, **options)
