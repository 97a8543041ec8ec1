"""MCKP heuristic: Lyra-style marginal-gain greedy.

Returns a feasible choice with the LP relaxation's bound and gap; the status is ``optimal`` when the choice
meets the LP bound (to 1e-9 relative), else ``feasible``. The convex-hull greedy is
:mod:`lyra_solver.formulations.mckp.hull`.

References
----------
Li, J. et al. (2023). Lyra: Elastic scheduling for deep learning clusters. EuroSys '23 (knapsack-driven
elastic scaling, greedy on marginal JCT reduction per GPU).
Sinha, P., Zoltners, A. A. (1979). The multiple-choice knapsack problem. Operations Research 27(3).
Kellerer, H., Pferschy, U., Pisinger, D. (2004). Knapsack Problems, ch. 11. Springer.
"""
from __future__ import annotations

import time

import numpy as np
from lyra_solver.formulations.mckp._lp import (
    FlatHulls,
    Undominated,
    fit_prefix,
    lp_flat,
    lp_relaxation,
    undominated,
    upper_hull,
)
from lyra_solver.formulations.mckp._numba import charge, kernels, loaded, want
from lyra_solver.formulations.mckp._types import MCKPProblem, MCKPResult, make_result

__all__ = ["greedy_choice", "greedy_positions", "solve_greedy", "table_choice"]

#: With ``use_numba=None``, the numba kernel (``greedy_scan``, :mod:`lyra_solver.formulations.mckp._numba`) is
#: used for scans at least this long, or when the kernels are loaded in the process already (loading them costs
#: about a second; the scan of a short list in Python, microseconds).
NUMBA_MIN_STEPS = 200_000


def _python_scan(cls_s: np.ndarray, dw_s: np.ndarray, start: int, room: int, n: int) -> np.ndarray:
    """Reference scan: take each step of a class not yet frozen if it fits, else freeze the class."""
    taken = np.zeros(cls_s.shape[0], dtype=np.bool_)
    frozen = bytearray(n)
    cl = cls_s.tolist()
    dw = dw_s.tolist()
    for j in range(start, len(cl)):
        c = cl[j]
        if frozen[c]:
            continue
        if dw[j] <= room:
            room -= dw[j]
            taken[j] = True
        else:
            frozen[c] = 1
    return taken


def greedy_positions(red: Undominated, capacity: int, *, use_numba: bool | None = None) -> np.ndarray | None:
    """Lyra-style greedy on marginal gain over the undominated item lists.

    Start from every class's lightest undominated item; repeatedly take, among the classes still open, the
    upgrade to the class's next heavier undominated item with the best marginal value per marginal weight;
    when that upgrade does not fit, the class is closed (its later upgrades can never fit either, as the free
    capacity only shrinks). Ties go to the lower class index.

    Parameters
    ----------
    red : Undominated
    capacity : int
    use_numba : bool, optional
        Use the numba kernel for the sequential part (default: for scans of at least
        :data:`NUMBA_MIN_STEPS` steps or when the kernels are loaded already, when numba is importable and the
        environment variable ``LYRA_NO_NUMBA`` is unset). Both paths give identical results.

    Returns
    -------
    (n,) int64 array or None
        Chosen position in each class's undominated list, or ``None`` if even the lightest items do not fit.

    Notes
    -----
    The frontier greedy pops steps in decreasing order of their *prefix-minimum* ratio (the smallest ratio of
    the steps up to and including it in its class): a step is popped when its ratio is the best of the
    frontier, and by induction no remaining step of any class has a larger prefix-minimum. So a scan in
    that order replaces the priority queue. The prefix of the scan that fits before the first closed class
    is found by weighted selection (:func:`lyra_solver.formulations.mckp._lp.fit_prefix`, expected :math:`O(N)` for
    ``N`` undominated items); after it, a step heavier than the free capacity closes its class, so only the
    lighter steps before it are sorted and scanned: :math:`O(N + K \\log K)` for ``K`` such steps.
    """
    n = red.counts.shape[0]
    base_w = int(red.weights[:, 0].sum()) if n else 0
    if base_w > capacity:
        return None
    u = red.weights.shape[1] if n else 0
    levels = np.zeros(n, dtype=np.int64)
    if u <= 1:
        return levels
    dw = red.weights[:, 1:] - red.weights[:, :-1]
    dv = red.values[:, 1:] - red.values[:, :-1]
    valid = np.arange(u - 1)[None, :] < (red.counts - 1)[:, None]
    ratio = np.where(valid, dv / np.where(valid, dw, 1), -np.inf)
    key = np.minimum.accumulate(ratio, axis=1)
    cls_idx, step_idx = np.nonzero(valid)
    room = capacity - base_w
    # the prefix of the scan that fits before any class closes (weighted selection, no full sort)
    taken, brk, used = fit_prefix(key[cls_idx, step_idx], dw[cls_idx, step_idx], room)
    levels += np.bincount(cls_idx[taken], minlength=n)
    if brk < 0:
        return levels
    rest = room - used
    # after the first failure at most ``rest`` is free: a step heavier than that closes its class whenever it
    # is reached, so each class keeps only its untaken steps before its first such step; the break class is
    # closed at once
    cand = valid.copy()
    cand[cls_idx[taken], step_idx[taken]] = False
    cand[int(cls_idx[brk]), :] = False
    big = cand & (dw > rest)
    first_big = np.where(big.any(axis=1), np.argmax(big, axis=1), u - 1)
    cand &= np.arange(u - 1)[None, :] < first_big[:, None]
    c_cls, c_step = np.nonzero(cand)
    if c_cls.shape[0] == 0:
        return levels
    order = np.argsort(-key[c_cls, c_step], kind="stable")
    cls_s = c_cls[order].astype(np.int64)
    dw_s = dw[cls_s, c_step[order]].astype(np.int64)
    scan = None
    if use_numba or (use_numba is None and (cls_s.shape[0] >= NUMBA_MIN_STEPS or loaded())):
        nb = kernels()
        scan = None if nb is None else nb.greedy_scan
    tail = (scan or _python_scan)(cls_s, dw_s, 0, rest, n)
    levels += np.bincount(cls_s[tail], minlength=n)
    return levels


def solve_greedy(problem: MCKPProblem, *, time_limit: float | None = None,
                 use_numba: bool | None = None) -> MCKPResult:
    """Lyra-style marginal-gain greedy (see :func:`greedy_positions`), with the LP bound and gap.

    Parameters
    ----------
    problem : MCKPProblem
        At least one class, and the lightest items fit (:func:`~lyra_solver.formulations.mckp.solve_mckp`
        checks both before dispatch).
    time_limit : float, optional
        Accepted for a uniform interface; the greedy is polynomial and finishes in milliseconds.
    use_numba : bool, optional
        See :func:`greedy_positions`.

    Returns
    -------
    MCKPResult
        ``feasible`` (``optimal`` when the LP bound proves it); ``method="greedy"``.

    Notes
    -----
    Running time :math:`O(N \\log N)` for ``N`` items; on non-concave classes the greedy can be arbitrarily
    far from the optimum (it may stall below a dip of the marginal ratio), which the reported gap exposes.
    """
    start = time.perf_counter()
    choice, bound = _greedy(problem, use_numba, with_bound=True)
    return make_result(problem, choice, bound, proven=False, start=start, method="greedy",
                       backend_status="greedy")


def greedy_choice(problem: MCKPProblem) -> np.ndarray:
    """The choice of :func:`solve_greedy` alone (item index per class, int64), without its LP bound, status and
    result: for a caller that reports none of them (the simulator's rounds through
    :func:`lyra_solver.pipeline.changes_built`). The same choice by the same paths (:func:`_greedy`); the bound,
    which that caller would not read, was about half of the greedy's time on the simulator's tables (49 of 117 us,
    the result's assembly 30 more).

    ``problem`` must be one that :func:`~lyra_solver.formulations.mckp.solve_mckp` dispatches (at least one class,
    the lightest items within the capacity, finite numbers): no check is made here. Running time
    :math:`O(N \\log N)` for ``N`` items.
    """
    return _greedy(problem, None, with_bound=False)[0]


def table_choice(weights: np.ndarray, values: np.ndarray, sizes: np.ndarray, capacity: int) -> np.ndarray | None:
    """:func:`greedy_choice` of ``MCKPProblem.from_table(weights, values, sizes, capacity)`` by the compiled kernel
    alone, without building the problem: for a value table whose rows all have a choice and whose caller reads
    the choice only (the scale step on the simulator's rounds, where the problem's masks, copies and checks were
    about half of the greedy's time). The arrays are taken as :meth:`~MCKPProblem.from_table` takes them (int64
    weights strictly increasing along each row, float64 values finite where valid, int64 sizes; the padding is
    not read) and are made read-only (the kernel's signature of the problem's arrays); ``capacity >= 0``.

    ``None`` where the kernels are not loaded in this process or the kernel leaves the problem to the numpy path
    (the caller then builds the problem and calls :func:`greedy_choice`). Running time :math:`O(N \\log N)` for
    ``N`` items."""
    if not loaded():
        return None
    for a in (weights, values, sizes):
        a.setflags(write=False)
    choice, ok = kernels().greedy_choice(weights, values, sizes, min(int(capacity), 2**62))
    return choice if ok else None


def _greedy(problem: MCKPProblem, use_numba: bool | None, *, with_bound: bool) -> tuple[np.ndarray, float | None]:
    """The greedy's choice and (``with_bound``) its LP bound: by the compiled kernels (:func:`_compiled`) when the
    load rules of :mod:`._numba` take them (``use_numba``: :func:`greedy_positions`'), else by numpy; numpy time
    is charged to the ski rental."""
    start = time.perf_counter()
    numpy_path = use_numba is None and not loaded()
    if numpy_path and want(problem.n_items):  # a long-running caller (the simulator) loads the kernels once
        numpy_path = kernels() is None
    if use_numba is not False and not numpy_path:
        compiled = _compiled(problem, with_bound=with_bound)
        if compiled is not None:
            return compiled
    red = undominated(problem)
    choice = red.items[np.arange(problem.n_classes), greedy_positions(red, problem.capacity, use_numba=use_numba)]
    bound = lp_relaxation(red, upper_hull(red), problem.capacity).bound if with_bound else None
    if numpy_path:
        charge(time.perf_counter() - start)
    return choice, bound


def _compiled(problem: MCKPProblem, *, with_bound: bool = True) -> tuple[np.ndarray, float | None] | None:
    """The greedy's choice and LP bound by the compiled kernels: ``greedy_choice``, then the exact core's hulls
    (``prepare_hulls``) and LP by slopes (:func:`lp_flat` over ``lp_levels``), the numbers of the numpy path: the
    same choice, and the bound of :func:`lp_relaxation` (the same hull vertices and float expressions). ``None``
    when the kernels are not available or ``greedy_choice`` does not apply (a class whose weights do not
    strictly increase). ``with_bound=False``: the choice alone (``None`` for the bound)."""
    nb = kernels()
    if nb is None:
        return None
    choice, ok = nb.greedy_choice(problem.weights, problem.values, problem.sizes, problem.capacity)
    if not ok:
        return None
    if not with_bound:
        return choice, None
    start, items, hw, hv, srt, _vmax, _integral = nb.prepare_hulls(problem.weights, problem.values, problem.sizes)
    lp = lp_flat(FlatHulls(start, items, hw, hv, srt), problem.capacity, levels_fn=nb.lp_levels)
    return (choice, lp.bound) if lp.feasible else None
