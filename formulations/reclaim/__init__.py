"""Server reclamation: the front door :func:`solve_reclaim` and its registry of exact methods.

Which loaned servers to give back at least cost, then with the fewest preemptions (DESIGN "Reclaim"); the
problem, result and cost function are in :mod:`lyra_solver.formulations.reclaim._types`.

Methods (``solve_reclaim(..., method=...)``):

========= ================================================================================================
``cpsat`` the x/z/y integer program (:mod:`lyra_solver.formulations.reclaim.ilp`) solved by OR-Tools CP-SAT
``cbc``   the same program solved by CBC through PuLP
========= ================================================================================================

The heuristics (Lyra's greedy and two baselines) are in :mod:`lyra_solver.heuristics.reclaim`; they return
the same :class:`ReclaimResult`.
"""
from __future__ import annotations

import time
from typing import Any, Literal

import lyra_solver.formulations.methods as _methods
from lyra_solver.formulations._registry import Registry, check_time_limit, resolve
from lyra_solver.formulations._result import Status
from lyra_solver.formulations.reclaim._types import (
    ReclaimProblem,
    ReclaimResult,
    evaluate_reclaim,
    gpus_unreachable,
    infeasible_result,
    result_for,
    target_count,
)

__all__ = ["METHODS", "TABLE", "ReclaimMethod", "ReclaimProblem", "ReclaimResult", "evaluate_reclaim",
           "gpus_unreachable", "infeasible_result", "result_for", "solve_reclaim", "target_count"]

#: The method table (:data:`lyra_solver.formulations.methods.RECLAIM`): the exact methods are this front door's;
#: the heuristics' rows name their functions in :mod:`lyra_solver.heuristics.reclaim`.
TABLE = _methods.RECLAIM

#: Registry: method name -> (module under this package, function, fixed keyword arguments), from :data:`TABLE`.
#: Modules are imported on first use. Every function takes ``(problem, *, time_limit, **options)`` and may assume
#: what :func:`solve_reclaim` checked before dispatch: a request that is neither empty, nor every server, nor
#: unreachable, a valid time limit and only its own options.
_REGISTRY: Registry = TABLE.registry()

#: Every name accepted by :func:`solve_reclaim`.
METHODS: tuple[str, ...] = TABLE.names(front_door=True)

#: :data:`METHODS` as a type (kept equal to the table by a test).
ReclaimMethod = Literal["cpsat", "cbc"]


def solve_reclaim(problem: ReclaimProblem, *, method: ReclaimMethod = "cpsat", time_limit: float | None = None,
                  **options: Any) -> ReclaimResult:
    """Exact reclamation: the cheapest set of servers to return, then the fewest preemptions.

    The checks and trivial cases are done here once, before dispatch: the method, the time limit and the
    options are checked (``ValueError`` naming the argument); returning no server (``count`` 0 or
    ``min_gpus <= 0``) or every server (``count >= S``) is ``optimal`` at once, and ``min_gpus`` above the
    candidates' total GPUs is ``infeasible``.

    Parameters
    ----------
    problem : ReclaimProblem
        ``count`` is clipped to ``[0, S]``; with ``min_gpus`` the chosen servers hold at least that many
        GPUs.
    method : str
        One of :data:`METHODS`.
    time_limit : float, optional
        Seconds for the whole (two-stage) solve; ``None`` solves to proven optimality.
    **options
        Passed to the method (``num_workers``: solver threads, default 1, deterministic).

    Returns
    -------
    ReclaimResult
        ``optimal``, ``feasible`` (a limit was hit: incumbent, proven ``bound`` and ``gap``), ``no_solution``
        (a limit was hit first) or ``infeasible``; see :func:`lyra_solver.formulations.reclaim.ilp.solve_ilp`.

    Raises
    ------
    ValueError
        Unknown method or option, negative time limit.

    Notes
    -----
    The checks take :math:`O(S)`; the integer program is NP-hard in general but solves in few nodes on
    cluster instances (see :mod:`lyra_solver.formulations.reclaim.ilp`).

    Examples
    --------
    Give back one of two loaned servers: server 0 only shrinks job 0 (restart 30), server 1 also preempts the
    rigid job 1 (300):

    >>> from lyra_solver.formulations.reclaim import ReclaimProblem, solve_reclaim
    >>> p = ReclaimProblem.build(server_gpus=[8, 8], job_workers=[4, 1], job_min=[2, 1],
    ...                          job_gpus_per_worker=[1, 1], restart_cost=[30.0, 30.0],
    ...                          preempt_cost=[300.0, 300.0], host_job=[0, 0, 1], host_server=[0, 1, 1],
    ...                          host_count=[2, 2, 1], count=1)
    >>> res = solve_reclaim(p)
    >>> str(res.status), res.servers, res.objective, res.shrunk, res.preempted
    ('optimal', (0,), 30.0, (0,), ())
    >>> solve_reclaim(p, method="cbc").servers
    (0,)
    """
    if not isinstance(problem, ReclaimProblem):
        raise TypeError("solve_reclaim: takes a ReclaimProblem (built with ReclaimProblem.build), "
                        f"got {type(problem).__name__}")
    start = time.perf_counter()
    check_time_limit(time_limit)
    function = resolve(__name__, _REGISTRY, method, options)
    if gpus_unreachable(problem):
        return infeasible_result(start, method)
    count = target_count(problem)
    if count == 0 or (count is None and problem.min_gpus <= 0):
        return _forced(problem, [], start, method, "trivial: nothing to return")
    if count == problem.n_servers:
        return _forced(problem, range(problem.n_servers), start, method, "trivial: every server returned")
    return function(problem, time_limit=time_limit, **options)


def _forced(problem: ReclaimProblem, servers, start: float, method: str, why: str) -> ReclaimResult:
    """The only server set that meets the request: optimal, its cost its own bound."""
    cost = evaluate_reclaim(problem, servers)[0]
    return result_for(problem, servers, status=Status.OPTIMAL, bound=cost, gap=0.0, start=start, method=method,
                      backend_status=why)
