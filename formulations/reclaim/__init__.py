"""Server reclamation: the front door :func:`solve_reclaim` and its registry of methods.

Which loaned servers to give back at least cost, then with the fewest preemptions (DESIGN "Reclaim"); the
problem, result and cost function are in :mod:`lyra_solver.formulations.reclaim._types`.

Methods (``solve_reclaim(..., method=...)``), every row of the method table
(:data:`lyra_solver.formulations.methods.RECLAIM`):

=============== ==========================================================================================
``cpsat``       the x/z/y integer program (:mod:`lyra_solver.formulations.reclaim.ilp`) solved by OR-Tools CP-SAT
``cbc``         the same program solved by CBC through PuLP
``greedy``      Lyra's greedy by server preemption cost (:func:`lyra_solver.heuristics.reclaim.greedy_reclaim`)
``fewest-jobs`` baseline: the servers hosting the fewest jobs first
                (:func:`lyra_solver.heuristics.reclaim.fewest_jobs_reclaim`)
``random``      baseline: servers in a seeded random order (:func:`lyra_solver.heuristics.reclaim.random_reclaim`)
=============== ==========================================================================================

The heuristics live in :mod:`lyra_solver.heuristics.reclaim` (``formulations`` imports no other folder of the
project): their rows name them as strings, which the front door imports by name when one is asked for
(:mod:`lyra_solver.formulations._registry`). The engine (``decide``) calls each of them through
:func:`solve_reclaim`, as it calls the exact ones.
"""
from __future__ import annotations

import time
from typing import Any, Literal

import lyra_solver.formulations.methods as _methods
from lyra_solver.formulations._registry import Registry, check_time_limit, own, resolve
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

#: The method table (:data:`lyra_solver.formulations.methods.RECLAIM`): the exact methods are this package's;
#: the heuristics' rows name their functions in :mod:`lyra_solver.heuristics.reclaim`.
TABLE = _methods.RECLAIM

#: Registry: method name -> (module, function, fixed keyword arguments), from :data:`TABLE`; imported when the
#: method runs. The exact methods (modules under this package) take ``(problem, *, time_limit, **options)`` and may
#: assume what :func:`solve_reclaim` checked and answered before dispatch: a request that is neither empty, nor
#: every server, nor unreachable, a valid time limit and only their own options. The heuristics take
#: ``(problem, **options)`` and answer every request themselves (:func:`lyra_solver.formulations._registry.own`).
_REGISTRY: Registry = TABLE.registry()
_OWN: frozenset[str] = own(_REGISTRY)

#: Every name accepted by :func:`solve_reclaim`.
METHODS: tuple[str, ...] = TABLE.names()

#: :data:`METHODS` as a type (kept equal to the table by a test).
ReclaimMethod = Literal["cpsat", "cbc", "greedy", "fewest-jobs", "random"]


def solve_reclaim(problem: ReclaimProblem, *, method: ReclaimMethod = "cpsat", time_limit: float | None = None,
                  **options: Any) -> ReclaimResult:
    """Reclamation: the cheapest set of servers to return, then the fewest preemptions, exactly or by a heuristic.

    The checks are done here once, before dispatch, for every method: the problem's type, the method, the time
    limit and the options (``ValueError`` naming the argument). For the exact methods the trivial cases are
    answered here too: returning no server (``count`` 0 or ``min_gpus <= 0``) or every server (``count >= S``) is
    ``optimal`` at once, and ``min_gpus`` above the candidates' total GPUs is ``infeasible``. A heuristic gets every
    request and answers it as when called directly: where every server is returned, Lyra's greedy reports
    ``feasible`` (``optimal`` only at cost 0), whichever way it is called.

    Parameters
    ----------
    problem : ReclaimProblem
        ``count`` is clipped to ``[0, S]``; with ``min_gpus`` the chosen servers hold at least that many
        GPUs.
    method : str
        One of :data:`METHODS`.
    time_limit : float, optional
        Seconds for the whole (two-stage) solve of an exact method; ``None`` solves to proven optimality. The
        heuristics take none (they run to their end, in polynomial time).
    **options
        Passed to the method (``num_workers``: solver threads, default 1, deterministic; ``seed`` of ``random``).

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
    cluster instances (see :mod:`lyra_solver.formulations.reclaim.ilp`); the heuristics' running times are in
    :mod:`lyra_solver.heuristics.reclaim`.

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
    >>> res = solve_reclaim(p, method="greedy")
    >>> str(res.status), res.servers, res.method
    ('feasible', (0,), 'greedy')
    """
    if not isinstance(problem, ReclaimProblem):
        raise TypeError("solve_reclaim: takes a ReclaimProblem (built with ReclaimProblem.build), "
                        f"got {type(problem).__name__}")
    start = time.perf_counter()
    check_time_limit(time_limit)
    function = resolve(__name__, _REGISTRY, method, options)
    if method not in _OWN:  # a heuristic: every request is its own to answer (see _registry.own)
        return function(problem, time_limit=time_limit, **options)
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
