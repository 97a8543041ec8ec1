"""Job packing (DESIGN "Packing"): the front door :func:`solve_packing` and its registry of methods.

Guests (jobs that would wait) join hosts (running jobs) on the GPUs the hosts hold, each pair with MPS shares;
the objective is one of Gimbal's policies (``jct``, ``deadline``, ``makespan``). The problem and result types
are in :mod:`~lyra_solver.formulations.packing._types`, the speed model in
:mod:`~lyra_solver.formulations.packing.speed`.

Methods (``solve_packing(..., method=...)``), every row of the method table
(:data:`lyra_solver.formulations.methods.PACKING`):

========== ==================================================================================
``exact``  our exact method (``cpsat``)
``cpsat``  assignment of guests to hosts over every undominated share pair, OR-Tools CP-SAT
           (:mod:`~lyra_solver.formulations.packing.cpsat`)
``brute``  enumeration of every assignment and share pair, tiny instances (the tests' reference)
``gimbal`` Gimbal's greedy squeeze/swell search (:func:`lyra_solver.heuristics.packing.gimbal_greedy`)
``lucid``  Lucid's threshold pairing (:func:`lyra_solver.heuristics.packing.lucid_pairing`)
``random`` Gandiva's random pairing, seeded (:func:`lyra_solver.heuristics.packing.random_pairing`)
========== ==================================================================================

The published heuristics live in :mod:`lyra_solver.heuristics.packing` (``formulations`` imports no other folder
of the project): their rows name them as strings, which the front door imports by name when one is asked for
(:mod:`lyra_solver.formulations._registry`). They take the same problem and return the same result, and the
engine (``lyra_solver.steps.pack``) calls each of them through :func:`solve_packing`, as it calls the exact one.
"""
from __future__ import annotations

from typing import Any, Literal

import lyra_solver.formulations.methods as _methods
from lyra_solver.formulations._registry import Registry, check_time_limit, resolve
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

#: The method table (:data:`lyra_solver.formulations.methods.PACKING`): the exact methods are this package's;
#: the heuristics' rows name their functions in :mod:`lyra_solver.heuristics.packing`.
TABLE = _methods.PACKING

#: Registry: method name -> (module, function, fixed keyword arguments), from :data:`TABLE`; imported when the
#: method runs. The exact methods take ``(problem, *, time_limit, **options)``, the heuristics
#: ``(problem, **options)``; each answers every problem (this front door has no trivial case to answer first).
_REGISTRY: Registry = TABLE.registry()

#: Other names accepted: ``exact`` is our exact method.
ALIASES: dict[str, str] = TABLE.aliases()

#: Every name accepted by :func:`solve_packing`.
METHODS: tuple[str, ...] = TABLE.names()

#: :data:`METHODS` as a type (kept equal to the table by a test).
PackingMethod = Literal["exact", "cpsat", "brute", "gimbal", "lucid", "random"]


def solve_packing(problem: PackingProblem, *, method: PackingMethod = "exact", time_limit: float | None = None,
                  **options: Any) -> PackingResult:
    """Solve a packing problem, exactly or by one of the published heuristics.

    The checks are done here once, before dispatch, for every method: the problem's type, the method, the time
    limit and the options (``ValueError`` naming the argument).

    Parameters
    ----------
    problem : PackingProblem
    method : str
        One of :data:`METHODS`.
    time_limit : float, optional
        Seconds for an exact method; a limit hit is a status (``feasible`` with a bound, or ``no_solution``).
        The heuristics take none (they run to their end; Gimbal's greedy takes a ``deadline`` option instead).
    **options
        Passed to the method (``num_workers``, ``seed``, ``hint``, ``deterministic_limit`` for CP-SAT;
        ``max_combinations`` for brute; ``patience``, ``max_steps``, ``deadline`` for gimbal; ``threshold`` for
        lucid; ``seed``, ``introspect`` for random); an option the method does not take is refused.

    Returns
    -------
    PackingResult
        The heuristics' status is ``feasible`` (no bound).

    Raises
    ------
    ValueError
        Unknown method or option, a negative time limit, not a :class:`PackingProblem`.

    Examples
    --------
    >>> p = PackingProblem.build(host_util=[0.9], host_time=[100.0], host_workers=[1], host_gpus=[1],
    ...     host_mem=[10.0], guest_util=[0.9], guest_time=[10.0], guest_gpus=[1], guest_mem=[10.0],
    ...     slot_host=[0], slot_capacity=[1], slot_mem=[80.0], candidates=[(0, 0, [(0, 1)])])
    >>> r = solve_packing(p)
    >>> r.status.value, r.assignment, r.guest_share, r.host_share
    ('optimal', (0,), (1.0,), (0.1,))
    >>> r = solve_packing(p, method="gimbal")
    >>> r.status.value, r.method, r.assignment, r.guest_share, r.host_share
    ('feasible', 'gimbal', (0,), (0.9,), (0.1,))
    """
    if not isinstance(problem, PackingProblem):
        raise ValueError(f"problem: expected a PackingProblem, got {type(problem).__name__}")
    check_time_limit(time_limit)
    function = resolve(__name__, _REGISTRY, method, options, names=METHODS, aliases=ALIASES)
    return function(problem, time_limit=time_limit, **options)
