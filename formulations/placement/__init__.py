"""Worker placement: the front doors :func:`solve_placement` and :func:`solve_joint` and their registries.

:func:`solve_placement` puts each job's decided workers onto servers, minimising lexicographically
(a) base-demand workers on loaned servers, (b) servers spanned summed over jobs, (c) running workers moved.
:func:`solve_joint` is the true optimum of Scale + Place on small clusters (each job picks its worker count
and placement together). Problem and result types are in :mod:`lyra_solver.formulations.placement._types`.

Methods (``method=...``), every row of the method tables (:data:`lyra_solver.formulations.methods.PLACEMENT` and
``JOINT``):

========= ================================================================================================
``cpsat`` the integer program (:mod:`~lyra_solver.formulations.placement.ilp`,
          :mod:`~lyra_solver.formulations.placement.joint`) solved by OR-Tools CP-SAT (both front doors)
``cbc``   the same program solved by CBC through PuLP (both front doors)
``bfd``   best fit decreasing (:func:`lyra_solver.heuristics.placement.best_fit_decreasing`;
          :func:`solve_placement` only)
========= ================================================================================================

Best fit decreasing lives in :mod:`lyra_solver.heuristics.placement` (``formulations`` imports no other folder of
the project): its row names it as a string, which the front door imports by name when it is asked for
(:mod:`lyra_solver.formulations._registry`). The engine (``decide``) calls it through :func:`solve_placement`, as
it calls the integer program.
"""
from __future__ import annotations

import time
from typing import Any, Literal

import lyra_solver.formulations.methods as _methods
from lyra_solver.formulations._registry import Registry, check_time_limit, own, resolve
from lyra_solver.formulations._result import Status
from lyra_solver.formulations.placement._types import (
    JointProblem,
    JointResult,
    Placement,
    PlacementProblem,
    PlacementResult,
    joint_blocked_job,
    joint_value,
    unplaceable_job,
)

__all__ = ["JOINT_METHODS", "JOINT_TABLE", "METHODS", "TABLE", "JointMethod", "PlacementMethod", "JointProblem",
           "JointResult", "Placement", "PlacementProblem", "PlacementResult", "joint_value", "solve_joint",
           "solve_placement"]

#: The method tables (:data:`lyra_solver.formulations.methods.PLACEMENT` and ``JOINT``): the exact methods are
#: this package's; the heuristic's row names its function in :mod:`lyra_solver.heuristics.placement`.
TABLE = _methods.PLACEMENT
JOINT_TABLE = _methods.JOINT

#: Registries: method name -> (module, function, fixed keyword arguments), from the tables, imported when the
#: method runs. The exact methods (modules under this package) take ``(problem, *, time_limit, **options)`` and may
#: assume what the front door checked before dispatch (a valid time limit, only their own options, and a problem
#: that is not trivially infeasible). Best fit decreasing takes ``(problem, **options)`` and places what fits of
#: every problem (:func:`lyra_solver.formulations._registry.own`).
_REGISTRY: Registry = TABLE.registry()
_JOINT_REGISTRY: Registry = JOINT_TABLE.registry()
_OWN: frozenset[str] = own(_REGISTRY)

#: Every name accepted by :func:`solve_placement` / :func:`solve_joint`.
METHODS: tuple[str, ...] = TABLE.names()
JOINT_METHODS: tuple[str, ...] = JOINT_TABLE.names()

#: :data:`METHODS` and :data:`JOINT_METHODS` as types (kept equal to the tables by a test).
PlacementMethod = Literal["cpsat", "cbc", "bfd"]
JointMethod = Literal["cpsat", "cbc"]


def solve_placement(problem: PlacementProblem, *, method: PlacementMethod = "cpsat", time_limit: float | None = None,
                    **options: Any) -> PlacementResult:
    """Place every job's workers, minimising (base on loaned, spans, moved) lexicographically.

    The checks are done here once, before dispatch, for every method: the problem's type, method, time limit and
    options (``ValueError`` naming the argument). For the exact methods a job whose worker fits on no server makes
    the problem ``infeasible`` at once; best fit decreasing gets every problem and places what fits (a job that
    fits nowhere gets no worker, the others are placed), as when called directly.

    Parameters
    ----------
    problem : PlacementProblem
    method : str
        One of :data:`METHODS`.
    time_limit : float, optional
        Seconds for the three stages of an exact method together; ``None`` solves to proven optimality. Best fit
        decreasing takes none (it runs to its end).
    **options
        Passed to the method (``num_workers``: solver threads, default 1, deterministic CP-SAT; ``keep_current``
        and ``evaluate`` of ``bfd``).

    Returns
    -------
    PlacementResult
        ``optimal`` when all three stages are proven, ``feasible`` with a placement otherwise,
        ``infeasible`` / ``no_solution`` without one; best fit decreasing gives ``feasible``, or ``no_solution``
        with the partial placement it made when fragmentation left workers out (``placed`` says how many
        each job got).

    Notes
    -----
    ``O(J S)`` variables; NP-hard (bin packing), meant for the engine's clusters and for reference (see
    :mod:`lyra_solver.formulations.placement.ilp`); best fit decreasing's running time is in
    :mod:`lyra_solver.heuristics.placement`.

    Examples
    --------
    Six 2-GPU workers, four of them base demand, on a training and a loaned server of 8 GPUs each:

    >>> from lyra_solver.formulations.placement import PlacementProblem, solve_placement
    >>> p = PlacementProblem.build(server_free=[8, 8], server_loaned=[False, True], job_workers=[6],
    ...                            job_base=[4], job_gpus_per_worker=[2])
    >>> res = solve_placement(p)
    >>> str(res.status), res.placement.per_job, res.objective
    ('optimal', (((0, 4), (1, 2)),), (0, 2, 0))
    >>> res = solve_placement(p, method="bfd")
    >>> str(res.status), res.placement.per_job, res.objective
    ('feasible', (((0, 4), (1, 2)),), (0, 2, 0))
    """
    if not isinstance(problem, PlacementProblem):
        raise TypeError("solve_placement: takes a PlacementProblem (built with PlacementProblem.build), "
                        f"got {type(problem).__name__}")
    start = time.perf_counter()
    check_time_limit(time_limit)
    function = resolve(__name__, _REGISTRY, method, options)
    if method not in _OWN:  # best fit decreasing places what fits of every problem (see _registry.own)
        return function(problem, time_limit=time_limit, **options)
    j = unplaceable_job(problem)
    if j is not None:
        return PlacementResult(status=Status.INFEASIBLE, objective=None, bound=None, gap=None,
                               time_s=time.perf_counter() - start, method=method,
                               backend_status=f"a job fits on no server (job {j})")
    return function(problem, time_limit=time_limit, **options)


def solve_joint(problem: JointProblem, *, method: JointMethod = "cpsat", time_limit: float | None = None,
                **options: Any) -> JointResult:
    """Choose every job's worker count and placement together, maximising the total value.

    The checks are done here once, before dispatch: method, time limit and options (``ValueError`` naming
    the argument), and a job without any allowed option on this cluster makes the problem ``infeasible``.

    Parameters
    ----------
    problem : JointProblem
    method : str
        One of :data:`JOINT_METHODS`.
    time_limit : float, optional
        Seconds; ``None`` solves to proven optimality.
    **options
        Passed to the method (``num_workers``).

    Returns
    -------
    JointResult
        ``infeasible`` when not every job can run its minimum; a limit hit gives ``feasible`` (incumbent,
        upper bound, gap) or ``no_solution``.

    Notes
    -----
    ``O(J (S + W K))`` variables (see :mod:`lyra_solver.formulations.placement.joint`). For small clusters.

    Examples
    --------
    Two 4-GPU servers: 6 workers must span both (value 5.0), 4 workers on one server are worth 5.5:

    >>> from lyra_solver.formulations.placement import JointProblem, solve_joint
    >>> p = JointProblem.build(server_free=[4, 4], job_min=[4], job_max=[6], job_gpus_per_worker=[1],
    ...                        value=[[[5.5, 4.0], [6.0, 4.8], [float("nan"), 5.0]]])
    >>> res = solve_joint(p)
    >>> str(res.status), res.workers, res.objective
    ('optimal', (4,), 5.5)
    """
    start = time.perf_counter()
    check_time_limit(time_limit)
    function = resolve(__name__, _JOINT_REGISTRY, method, options)
    j = joint_blocked_job(problem)
    if j is not None:
        return JointResult(status=Status.INFEASIBLE, objective=None, bound=None, gap=None,
                           time_s=time.perf_counter() - start, method=method,
                           backend_status=f"a job has no allowed option (job {j})")
    return function(problem, time_limit=time_limit, **options)
