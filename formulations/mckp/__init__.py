"""Multiple-choice knapsack (MCKP): the front door :func:`solve_mckp` and its registry of methods.

The problem (DESIGN "Scale"): classes ``i = 0..n-1``, each with items ``k`` of integer weight ``w_ik >= 0``
and float value ``v_ik`` (may be negative); pick exactly one item per class so that the total weight is at
most ``capacity`` and the total value is maximal.

Methods (``solve_mckp(..., method=...)``):

========== ==================================================================================
``auto``   our fastest exact method (``core``)
``core``   Pisinger's minimal algorithm: LP bound by slopes over the classes' hulls, a greedily filled start,
           a core that classes enter lazily by gradient (reduced on entry), dynamic programming over sorted
           (weight, value) states with LP bounds (:mod:`lyra_solver.formulations.mckp.core`)
``bb``     alias of ``core`` (the state DP fathoms with LP bounds: a breadth-first branch and bound)
``dp``     plain dynamic programming over capacity (:mod:`lyra_solver.formulations.mckp.dp`), small capacities only
``cpsat``  OR-Tools CP-SAT on integer-scaled values (:mod:`lyra_solver.formulations.mckp.cpsat`)
``cbc``    CBC through PuLP (:mod:`lyra_solver.formulations.mckp.cbc`)
``highs``  HiGHS through :func:`scipy.optimize.milp` (:mod:`lyra_solver.formulations.mckp.highs`)
``greedy`` Lyra-style marginal-gain greedy (:mod:`lyra_solver.formulations.mckp.greedy`)
``hull``   convex-hull (LP) greedy (:mod:`lyra_solver.formulations.mckp.hull`)
``gpu``    dynamic programming over capacity on a GPU (torch or CuPy; :mod:`lyra_solver.formulations.mckp.gpu`)
========== ==================================================================================
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any, Literal

import lyra_solver.formulations.methods as _methods
import numpy as np
from lyra_solver.formulations._registry import Registry, check_time_limit, resolve
from lyra_solver.formulations.mckp import _numba
from lyra_solver.formulations.mckp._types import MCKPProblem, MCKPResult, infeasible_result, make_result

__all__ = ["ALIASES", "METHODS", "TABLE", "MCKPMethod", "MCKPProblem", "MCKPResult", "infeasible_result",
           "make_result", "solve_mckp"]

#: The method table (:data:`lyra_solver.formulations.methods.MCKP`): every name below is derived from it.
TABLE = _methods.MCKP

#: Registry: method name -> (module under this package, function, fixed arguments), from :data:`TABLE`. Modules
#: are imported on first use, so a backend's library (OR-Tools, PuLP, SciPy, numba) is loaded only when its method
#: runs. Every function takes ``(problem, *, time_limit, **options)`` and may assume what :func:`solve_mckp`
#: checked before dispatch: at least one class, the lightest items fit, a valid time limit and only its own options.
_REGISTRY: Registry = TABLE.registry()

#: Other names accepted for a method: ``auto`` is our fastest exact method; ``bb`` names the core search
#: (its state DP fathoms with LP bounds: a breadth-first branch and bound).
ALIASES: dict[str, str] = TABLE.aliases()

#: Every name accepted by :func:`solve_mckp` (the CLI's choices come from here).
METHODS: tuple[str, ...] = TABLE.names()

#: :data:`METHODS` as a type: a misspelt method is a type error (kept equal to the table by a test).
MCKPMethod = Literal["auto", "core", "bb", "dp", "cpsat", "cbc", "highs", "greedy", "hull", "gpu"]


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


#: Methods that hand the weights to a floating-point solver: exact only while every sum of weights is an
#: integer a double holds exactly (2**53).
FLOAT_METHODS = frozenset({"highs", "cbc"})
#: Largest sum of per-class largest absolute values accepted: objectives, bounds and gaps stay finite doubles.
MAX_VALUE_SUM = 1e300


def _check_numbers(problem: MCKPProblem, name: str, scans: tuple | None = None) -> None:
    """Refuse what the method would answer wrongly: values whose sums overflow a double (every method), weights
    beyond 2**53 for the floating-point solvers. O(n m). ``scans``: the compiled ``front_checks`` of the problem
    (the same per-class maxima), else numpy."""
    if problem.n_classes == 0:
        return
    if scans is None:
        valid = problem.valid_mask()
        top = np.where(valid, np.abs(problem.values), 0.0).max(axis=1)
        with np.errstate(over="ignore"):
            total = float(top.sum())
    else:
        total = scans[3]  # numpy's sum of the same maxima, computed by the kernel
    if not total <= MAX_VALUE_SUM:
        raise ValueError(f"values: the largest absolute values of the classes add up to {total:.3g}, beyond "
                         f"{MAX_VALUE_SUM:g} (sums would overflow a double); scale the values down")
    if name in FLOAT_METHODS:
        heaviest = int(np.where(valid, problem.weights, 0).max(axis=1).sum()) if scans is None else int(scans[2])
        if heaviest > 2**53:
            raise ValueError(f"weights: the heaviest items add up to {heaviest} > 2**53, which method {name!r} "
                             "(floating point) cannot represent exactly; use method 'core', 'cpsat' or 'dp'")


def solve_mckp(problem_or_weights: MCKPProblem | Sequence[Sequence[int]],
               values: Sequence[Sequence[float]] | None = None, capacity: int | None = None, *,
               method: MCKPMethod = "auto", time_limit: float | None = None, **options: Any) -> MCKPResult:
    """Solve a multiple-choice knapsack problem.

    The checks and trivial cases are done here once, before dispatch: the method name, the time limit and
    the method's options are checked (``ValueError`` naming the argument), an instance without classes is
    ``optimal`` with the empty choice, and one whose lightest items exceed the capacity is ``infeasible``;
    only the other instances reach the method.

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
        Passed to the method (e.g. ``num_workers`` for CP-SAT, ``threads`` for CBC, ``max_cells`` for DP);
        an option the method does not take is refused.

    Returns
    -------
    MCKPResult

    Raises
    ------
    ValueError
        Unknown method or option, negative time limit, invalid instance, or ``method="dp"`` on a capacity too
        large for a dense table.

    Notes
    -----
    Running time of the checks: :math:`O(N)` for ``N`` items; the method's own is in its module.

    Examples
    --------
    Two classes (a job at 0, 1 or 2 extra GPUs; another at 0 or 2) and 3 GPUs to share:

    >>> from lyra_solver.formulations.mckp import solve_mckp
    >>> res = solve_mckp([[0, 1, 2], [0, 2]], [[0.0, 4.0, 5.0], [0.0, 3.5]], 3)
    >>> str(res.status), res.objective, res.choice, res.method
    ('optimal', 7.5, (1, 1), 'core')
    >>> solve_mckp([[0, 1, 2], [0, 2]], [[0.0, 4.0, 5.0], [0.0, 3.5]], 3, method="greedy").choice
    (1, 1)
    >>> str(solve_mckp([[2], [3]], [[1.0], [1.0]], 4).status)
    'infeasible'
    >>> solve_mckp([[0, 1]], [[0.0, 1.0]], 1, method="dp", workers=2)
    Traceback (most recent call last):
    ...
    ValueError: workers: not an option of method 'dp' (its options: max_cells)
    """
    start = time.perf_counter()
    problem = _coerce_problem(problem_or_weights, values, capacity)
    check_time_limit(time_limit)
    function = resolve(__name__, _REGISTRY, method, options, names=METHODS, aliases=ALIASES)
    label = "bb" if method == "bb" else ALIASES.get(method, method)
    if problem.n_classes == 0:
        return make_result(problem, np.zeros(0, dtype=np.int64), 0.0, proven=True, start=start, method=label,
                           backend_status="empty")
    # the scans of the checks in one compiled pass once the kernels are loaded (they are not loaded for this)
    nb = _numba.kernels() if _numba.loaded() else None
    scans = None if nb is None else nb.front_checks(problem.weights, problem.values, problem.sizes)
    if not (problem.is_feasible() if scans is None else int(scans[0]) <= problem.capacity):
        return infeasible_result(start, label)
    _check_numbers(problem, ALIASES.get(method, method), scans)
    res = function(problem, time_limit=time_limit, **options)
    return dataclasses.replace(res, method=label) if res.method != label else res
