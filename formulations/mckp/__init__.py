"""Multiple-choice knapsack (MCKP): the front door :func:`solve_mckp` and its registry of methods.

The problem (DESIGN "Scale"): classes ``i = 0..n-1``, each with items ``k`` of integer weight ``w_ik >= 0``
and float value ``v_ik`` (may be negative); pick exactly one item per class so that the total weight is at
most ``capacity`` and the total value is maximal.

Methods (``solve_mckp(..., method=...)``):

========== ==================================================================================
``auto``   our fastest exact method (``core``)
``core``   dominance + LP-dominance reduction, LP bound by slopes, core expansion by regret with
           dynamic programming over sorted (weight, value) states (:mod:`lyra_solver.formulations.mckp.core`)
``bb``     alias of ``core`` (the state DP fathoms with LP bounds: a breadth-first branch and bound)
``dp``     plain dynamic programming over capacity (:mod:`lyra_solver.formulations.mckp.dp`), small capacities only
``cpsat``  OR-Tools CP-SAT on integer-scaled values (:mod:`lyra_solver.formulations.mckp.cpsat`)
``cbc``    CBC through PuLP (:mod:`lyra_solver.formulations.mckp.cbc`)
``highs``  HiGHS through :func:`scipy.optimize.milp` (:mod:`lyra_solver.formulations.mckp.highs`)
``greedy`` Lyra-style marginal-gain greedy (:mod:`lyra_solver.formulations.mckp.greedy`)
``hull``   convex-hull (LP) greedy (:mod:`lyra_solver.formulations.mckp.greedy`)
========== ==================================================================================
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from lyra_solver.formulations.mckp._types import MCKPProblem, MCKPResult, infeasible_result, make_result

__all__ = ["ALIASES", "METHODS", "MCKPProblem", "MCKPResult", "infeasible_result", "make_result", "solve_mckp"]

#: Registry: method name -> (module under this package, function). Modules are imported on first use, so a
#: backend's library (OR-Tools, PuLP, SciPy, numba) is loaded only when its method runs.
_REGISTRY: dict[str, tuple[str, str]] = {
    "core": ("core", "solve_core"),
    "dp": ("dp", "solve_dp"),
    "cpsat": ("cpsat", "solve_cpsat"),
    "cbc": ("cbc", "solve_cbc"),
    "highs": ("highs", "solve_highs"),
    "greedy": ("greedy", "solve_greedy"),
    "hull": ("greedy", "solve_hull"),
}

#: Other names accepted for a method: ``auto`` is our fastest exact method; ``bb`` names the core search
#: (its state DP fathoms with LP bounds: a breadth-first branch and bound).
ALIASES: dict[str, str] = {"auto": "core", "bb": "core"}

#: Every name accepted by :func:`solve_mckp` (the CLI's choices come from here).
METHODS: tuple[str, ...] = ("auto", "core", "bb", "dp", "cpsat", "cbc", "highs", "greedy", "hull")


def _method_function(name: str) -> Callable[..., MCKPResult]:
    module, function = _REGISTRY[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), function)


def _coerce_problem(problem_or_weights: Any, values: Any, capacity: Any) -> MCKPProblem:
    if isinstance(problem_or_weights, MCKPProblem):
        if values is not None or capacity is not None:
            raise ValueError("values/capacity: give them only with ragged weights, not with an MCKPProblem")
        return problem_or_weights
    if isinstance(problem_or_weights, str | bytes | dict | type(None)) or not hasattr(problem_or_weights, "__len__"):
        raise TypeError("solve_mckp: takes an MCKPProblem, or per-class weights with values= and capacity=; "
                        f"got {type(problem_or_weights).__name__}")
    if values is None:
        raise ValueError("values: required when the first argument is not an MCKPProblem")
    if capacity is None:
        raise ValueError("capacity: required when the first argument is not an MCKPProblem")
    return MCKPProblem.from_ragged(problem_or_weights, values, capacity)


def solve_mckp(problem_or_weights: MCKPProblem | Sequence[Sequence[int]],
               values: Sequence[Sequence[float]] | None = None, capacity: int | None = None, *,
               method: str = "auto", time_limit: float | None = None, **options: Any) -> MCKPResult:
    """Solve a multiple-choice knapsack problem.

    Parameters
    ----------
    problem_or_weights : MCKPProblem or sequence of sequences of int
        The problem, or the per-class weights (then ``values`` and ``capacity`` are required).
    values : sequence of sequences of float, optional
        Per-class values (ragged form only).
    capacity : int, optional
        Capacity (ragged form only).
    method : str
        One of :data:`METHODS`; ``"auto"`` is the fastest exact method (``core``).
    time_limit : float, optional
        Seconds; when hit, the best choice found so far is returned with status ``feasible`` plus bound and
        gap (or ``no_solution`` when there is none).
    **options
        Passed to the method (e.g. ``num_workers`` for CP-SAT, ``threads`` for CBC, ``max_cells`` for DP).

    Returns
    -------
    MCKPResult

    Raises
    ------
    ValueError
        Unknown method, invalid instance, or ``method="dp"`` on a capacity too large for a dense table.
    """
    problem = _coerce_problem(problem_or_weights, values, capacity)
    if time_limit is not None and not (time_limit >= 0):
        raise ValueError(f"time_limit: must be >= 0 seconds, got {time_limit!r}")
    if method not in METHODS:
        raise ValueError(f"method: unknown method {method!r}; expected one of {', '.join(METHODS)}")
    name = ALIASES.get(method, method)
    res = _method_function(name)(problem, time_limit=time_limit, **options)
    if method == "bb":
        res = MCKPResult(res.status, res.objective, res.bound, res.gap, res.choice, res.time_s, "bb",
                         res.backend_status)
    return res
