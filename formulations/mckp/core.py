"""Exact MCKP by core expansion from the LP solution (after Pisinger's minimal algorithm).

Outline (Pisinger 1995, written from the published description, simplified):

1. **Reduction.** Per class, drop dominated items (:func:`._lp.undominated`) and compute the
   upper convex hull (:func:`lyra_solver.formulations.mckp._lp.upper_hull`).
2. **LP relaxation by slopes** (:func:`lyra_solver.formulations.mckp._lp.lp_relaxation`): the LP optimum ``U`` is the
   upper bound, its integral part ``x^LP`` (every class at the hull vertex reached) the first incumbent,
   together with the marginal-gain greedy. ``alpha`` is the slope of the break (fractional) increment.
3. **Regrets.** For class ``i`` with LP item ``l_i`` and ``L_ij = v_ij - alpha w_ij`` (``l_i`` maximises
   ``L_i.``), the regret ``r_i = L_il - max_{j != l} L_ij >= 0`` bounds how much the Lagrangian relaxation
   loses when class ``i`` leaves its LP item. Optionally (``use_window``), a third incumbent comes from a
   dense DP over the total weight change in a small window around ``x^LP`` (:func:`_window_incumbent`).
4. **Core expansion by dynamic programming over states.** Classes enter the core in order of increasing
   regret (the break class first). A state is a pair ``(W, V)``: total weight and value of a *complete*
   solution whose core classes are chosen freely and whose other classes sit at their LP items. Adding a
   class combines every state with the items of the class that can still matter (an item whose Lagrangian
   loss alone closes the gap is skipped); states are kept as arrays sorted by weight with strictly
   increasing values (dominated states dropped), and a state is fathomed when the smaller of two upper
   bounds does not exceed the incumbent:

   * the LP relaxation of the classes outside the core with free capacity ``c - W``,
     ``V + F(c - W)`` (:class:`_LPTail`; ``F`` is piecewise linear: their remaining hull increments by
     decreasing slope when ``W <= c``, minus the cheapest downgrades when ``W > c``);
   * ``V + alpha (c - W) - r_next``: Lagrangian bound of a completion that moves some class outside the
     core, ``r_next`` the smallest regret outside (the state itself, if feasible, is already counted).

   States with ``W <= c`` are feasible solutions and update the incumbent. One step is a numpy
   sort-and-filter, or a single-pass k-way merge in the optional numba kernel
   (:mod:`lyra_solver.formulations.mckp._numba`) on large steps.
5. **Termination.** Any solution that moves a class ``i`` outside the core from its LP item is worth at most
   ``V + alpha (c - W) - r_i`` for some state (Lagrangian bound), so the search stops, proven optimal, as
   soon as ``max_states(V + alpha (c - W)) - r_next <= incumbent`` (``r_next`` the smallest regret left), or
   when no state is left. On the engine's value tables only a few classes enter the core.

Nothing is ever sized by the capacity: memory is :math:`O(\\text{states} \\times \\text{items})`, so huge
capacities (``10**9``) are as cheap as small ones. Weights are exact integers; values are floats, and a bound
is trusted to ``tol = 1e-9 * max(1, |U|, sum_i |v_{i,l_i}|)`` (a solution better than the returned one by
less than ``tol`` may be missed; comparisons never fathom a state that is better by more than ``tol``).
When all values are integers (and ``tol < 1/2``), ``tol = 1/2`` is used instead: a better solution is better
by at least 1, so the proof stays exact while bounds are effectively rounded down, as in Pisinger's codes.

References
----------
Pisinger, D. (1995). A minimal algorithm for the multiple-choice knapsack problem. European Journal of
Operational Research 83(2), 394-410.
Dyer, M. E., Riha, W. O., Walker, J. (1995). A hybrid dynamic programming/branch-and-bound algorithm for the
multiple-choice knapsack problem. J. Comput. Appl. Math. 58, 43-54.
Kellerer, H., Pferschy, U., Pisinger, D. (2004). Knapsack Problems, ch. 11. Springer.
"""
from __future__ import annotations

import sys
import time

import numpy as np
from lyra_solver.formulations.mckp._lp import lp_relaxation, undominated, upper_hull
from lyra_solver.formulations.mckp._types import MCKPProblem, MCKPResult, make_result
from lyra_solver.formulations.mckp.greedy import greedy_positions

__all__ = ["solve_core"]

#: Relative tolerance of the optimality proof (see the module docstring).
REL_TOL = 1e-9

#: With ``use_numba=None``, a step with at least this many candidate states loads the numba kernel
#: (:mod:`lyra_solver.formulations.mckp._numba`) when numba is installed, and once loaded it serves every step of 2,000
#: candidates or more; easy instances (the engine's value tables) never pay numba's import and compile time.
NUMBA_MIN_CANDIDATES = 200_000


def _kernel_loaded() -> bool:
    """Whether the numba step kernel is already compiled in this process (then it pays on small steps)."""
    mod = sys.modules.get("lyra_solver.formulations.mckp._numba")
    return mod is not None and getattr(mod, "_KERNEL", None) is not None


class _LPTail:
    """LP relaxation of the classes outside the core, as a function of the free capacity.

    With the classes of ``mask`` at their LP items and free capacity ``r`` (relative to those items), the
    LP optimum of their hulls is ``F(r)``: for ``r >= 0`` the upgrade increments taken by decreasing slope
    (concave, constant once all are taken), for ``r < 0`` minus the cheapest downgrades (by increasing
    slope) that free ``-r`` (``-inf`` when impossible). All up slopes are ``<= alpha <=`` all down slopes, so
    mixing upgrades and downgrades never pays. A state ``(W, V)`` is bounded by ``V + F(c - W)``. Using a
    superset of the classes outside the core (an older mask) still gives a valid bound.
    """

    def __init__(self, hull, levels: np.ndarray) -> None:
        n, h = hull.weights.shape
        steps = max(h - 1, 0)
        j = np.arange(steps)[None, :]
        inc = j < (hull.counts - 1)[:, None]
        dW = (hull.weights[:, 1:] - hull.weights[:, :-1]) if steps else np.zeros((n, 0), np.int64)
        dV = (hull.values[:, 1:] - hull.values[:, :-1]) if steps else np.zeros((n, 0))
        up = inc & (j >= levels[:, None])
        dn = inc & (j < levels[:, None])
        self.n_increments = int(inc.sum())
        cu, ju = np.nonzero(up)
        su = dV[cu, ju] / dW[cu, ju]
        o = np.argsort(-su, kind="stable")
        self.up_cls, self.up_w, self.up_v = cu[o], dW[cu, ju][o].astype(np.float64), dV[cu, ju][o]
        cd, jd = np.nonzero(dn)
        sd = dV[cd, jd] / dW[cd, jd]
        o = np.argsort(sd, kind="stable")
        self.dn_cls, self.dn_w, self.dn_v = cd[o], dW[cd, jd][o].astype(np.float64), dV[cd, jd][o]
        self.set_mask(np.ones(n, dtype=bool))

    def set_mask(self, mask: np.ndarray) -> None:
        """Restrict the relaxation to the classes in ``mask``."""
        mu = mask[self.up_cls]
        self.xu = np.concatenate([[0.0], np.cumsum(self.up_w[mu])])
        self.yu = np.concatenate([[0.0], np.cumsum(self.up_v[mu])])
        md = mask[self.dn_cls]
        self.xd = np.concatenate([[0.0], np.cumsum(self.dn_w[md])])
        self.yd = np.concatenate([[0.0], np.cumsum(self.dn_v[md])])

    def bound(self, W: np.ndarray, V: np.ndarray, capacity: int) -> np.ndarray:
        """Upper bound ``V + F(capacity - W)`` of every state."""
        r = (capacity - W).astype(np.float64)
        out = np.empty_like(V)
        pos = r >= 0
        if pos.all():
            return V + np.interp(r, self.xu, self.yu)
        out[pos] = V[pos] + np.interp(r[pos], self.xu, self.yu)
        neg = ~pos
        e = -r[neg]
        b = V[neg] - np.interp(e, self.xd, self.yd)
        b[e > self.xd[-1]] = -np.inf
        out[neg] = b
        return out


def _step_numpy(W: np.ndarray, V: np.ndarray, dw: np.ndarray, dv: np.ndarray, cap: int, tail: _LPTail,
                alpha: float, r_next: float, inc_val: float, tol: float, *, check_incumbent: bool = True):
    """One core step with numpy: combine states and items, fathom, drop dominated states.

    Returns ``(W', V', keep)`` with ``keep`` the flat candidate index (``state * k + item``) of every kept
    state, or ``((value, flat index), None, None)`` when a feasible candidate beats the incumbent (the caller
    records it and calls again with ``check_incumbent=False``).
    """
    nW = (W[:, None] + dw[None, :]).ravel()
    nV = (V[:, None] + dv[None, :]).ravel()
    if check_incumbent:
        # feasible states are complete solutions: update the incumbent
        feas = nW <= cap
        if feas.any():
            fv = np.where(feas, nV, -np.inf)
            j = int(np.argmax(fv))
            if fv[j] > inc_val:
                return (float(fv[j]), j), None, None
    ub = tail.bound(nW, nV, cap)
    if np.isfinite(r_next):
        # a completion other than the state itself moves a class outside the core: Lagrangian bound
        # minus the smallest regret left (the state itself, if feasible, is already in the incumbent)
        np.minimum(ub, nV + alpha * (cap - nW).astype(np.float64) - r_next, out=ub)
    keep = np.flatnonzero(ub > inc_val + tol)
    nW, nV = nW[keep], nV[keep]
    # dominance: sort by weight (stable sort merges the k sorted runs), keep strictly increasing
    # values, then of equal weights keep the last (largest value)
    if nW.shape[0] > 1:
        srt = np.argsort(nW, kind="stable")
        nW, nV, keep = nW[srt], nV[srt], keep[srt]
        prev = np.empty_like(nV)
        prev[0] = -np.inf
        np.maximum.accumulate(nV[:-1], out=prev[1:])
        nd = nV > prev
        nW, nV, keep = nW[nd], nV[nd], keep[nd]
        # survivors of equal weight have increasing values: keep the last of each run
        last = np.ones(nW.shape[0], dtype=bool)
        last[:-1] = nW[:-1] != nW[1:]
        nW, nV, keep = nW[last], nV[last], keep[last]
    return nW, nV, keep


def _window_incumbent(red, lag: np.ndarray, lag_lp: np.ndarray, lp_pos: np.ndarray, order: np.ndarray,
                      room: int, slack: float, *, max_cells: int = 1 << 16, max_work: float = 5e7,
                      max_items: int = 20_000) -> tuple[np.ndarray, float] | None:
    """Heuristic incumbent: dense DP over the total weight change in a window around the LP solution.

    Starting from the LP's integral part (free capacity ``room``), class by class (in ``order``) every item
    whose Lagrangian loss is below ``slack`` (the others cannot belong to a better solution) moves the total
    weight change ``d``; ``f(d)`` keeps the best value change for ``d`` in ``[-D, room]`` with ``D`` the
    largest weight decrease of a candidate item. Solutions whose running weight change leaves the window are
    missed, so this is a heuristic; it returns ``(positions, value change)`` or ``None`` when the window or
    the work is too large. Running time :math:`O(\text{items} \times (room + D))`.
    """
    n, u = red.weights.shape
    rows = np.arange(n)
    loss = lag_lp[:, None] - lag
    ok = loss < slack
    ok &= np.arange(u)[None, :] < red.counts[:, None]
    ok[rows, lp_pos] = False
    cls = order[ok[order].any(axis=1)]
    if cls.shape[0] == 0:
        return None
    dW = red.weights - red.weights[rows, lp_pos][:, None]
    dV = red.values - red.values[rows, lp_pos][:, None]
    neg = ok & (dW < 0)
    D = int(-dW[neg].min()) if neg.any() else 0
    M = room + D + 1
    n_items = int(ok.sum())
    if max_cells < M or n_items > max_items or n_items * M > max_work:
        return None
    f = np.full(M, -np.inf)
    f[D] = 0.0
    take = np.empty((cls.shape[0], M), dtype=np.int16 if u < 2**15 else np.int64)
    for t, i in enumerate(cls.tolist()):
        g = f.copy()
        tk = take[t]
        tk[:] = lp_pos[i]
        for j in np.flatnonzero(ok[i]).tolist():
            d = int(dW[i, j])
            if d >= M or -d >= M:
                continue
            src = f[: M - d] if d >= 0 else f[-d:]
            dst = slice(d, M) if d >= 0 else slice(0, M + d)
            cand = src + dV[i, j]
            better = cand > g[dst]
            g[dst][better] = cand[better]
            tk[dst][better] = j
        f = g
    best = int(np.argmax(f))
    if not np.isfinite(f[best]):
        return None
    pos = lp_pos.copy()
    idx = best
    for t in range(cls.shape[0] - 1, -1, -1):
        i = int(cls[t])
        j = int(take[t, idx])
        pos[i] = j
        idx -= int(dW[i, j])
    return pos, float(f[best])


def solve_core(problem: MCKPProblem, *, time_limit: float | None = None, use_greedy: bool = True,
               use_window: bool = False,
               max_states: int = 20_000_000, use_numba: bool | None = None) -> MCKPResult:
    """Solve MCKP exactly by core expansion from the LP solution (see the module docstring).

    Parameters
    ----------
    problem : MCKPProblem
    time_limit : float, optional
        Seconds. When hit, the incumbent is returned with status ``feasible``, the best bound over the open
        states, and the gap.
    use_greedy : bool
        Seed the incumbent with the marginal-gain greedy as well as the LP's integral part.
    use_window : bool
        Also seed it with a dense DP over the weight change in a small window around the LP solution
        (:func:`_window_incumbent`; skipped when the window or the work would be large). Off by default: on
        the benchmark instances the better first incumbent did not pay for its cost.
    max_states : int
        Memory guard: if a core step would create more candidate states than this, the search stops like a
        time limit (incumbent, bound and gap are returned). Never hit on the benchmark instances.
    use_numba : bool, optional
        ``True``: use the numba step kernel for every step; ``False``: never; ``None`` (default): for steps
        with at least :data:`NUMBA_MIN_CANDIDATES` candidate states, when numba is installed. The
        greedy follows the same setting. Both paths are exact.

    Returns
    -------
    MCKPResult
        ``method="core"``; ``optimal``, ``feasible`` (limit hit), or ``infeasible``.

    Notes
    -----
    Running time: :math:`O(N \\log N)` for the reduction and LP (``N`` items), plus
    :math:`O(\\sum_t S_t k_t \\log(S_t k_t))` for the core steps, where ``S_t`` is the number of states
    before step ``t`` and ``k_t`` the undominated items of the class added. ``S_t`` is bounded by the number
    of distinct state weights inside the bound window (never by the capacity), which in the worst case is
    exponential in the core size, as for every exact method of this NP-hard problem; in practice the core
    holds a few classes (Pisinger 1995).
    """
    start = time.perf_counter()
    deadline = None if time_limit is None else start + float(time_limit)
    n = problem.n_classes
    cap = problem.capacity
    red = undominated(problem)
    hull = upper_hull(red)
    lp = lp_relaxation(red, hull, cap)
    rows = np.arange(n)
    lp_pos = lp.lp_pos
    if lp.frac_class < 0:
        return make_result(problem, red.items[rows, lp_pos], lp.bound, proven=True, start=start,
                           method="core", backend_status="lp-integral")

    base_w = red.weights[rows, lp_pos]
    base_v = red.values[rows, lp_pos]
    tol = REL_TOL * max(1.0, abs(lp.bound), float(np.abs(base_v).sum()))
    vmax = float(np.abs(red.values).max())
    if tol < 0.5 and vmax * n < 2.0**50 and bool(np.all(red.values == np.round(red.values))):
        # integral values: any better solution is better by at least 1, so bounds below inc + 1 fathom
        # (half a unit of margin absorbs the rounding of the bound arithmetic)
        tol = 0.5
    # incumbent: ("full", positions) or ("state", step, parent index, item position)
    inc_val = lp.value
    inc_ref: tuple = ("full", lp_pos.copy())
    if use_greedy:
        g = greedy_positions(red, cap, use_numba=use_numba)
        if g is not None:
            gv = float(red.values[rows, g].sum())
            if gv > inc_val:
                inc_val, inc_ref = gv, ("full", g)
    if lp.bound - inc_val <= tol:
        return _finish(problem, red, lp_pos, inc_ref, [], [], np.zeros(0, np.int64), lp.bound, True, start,
                       "lp-bound")

    # regrets with respect to alpha
    alpha = lp.alpha
    u = red.weights.shape[1]
    valid = np.arange(u)[None, :] < red.counts[:, None]
    lag = np.where(valid, red.values - alpha * red.weights, -np.inf)
    lag_lp = lag[rows, lp_pos]
    lag_other = lag.copy()
    lag_other[rows, lp_pos] = -np.inf
    regret = np.maximum(lag_lp - lag_other.max(axis=1), 0.0)  # -inf other -> +inf regret (single item)
    regret[lp.frac_class] = -1.0  # break class first
    order = np.argsort(regret, kind="stable")
    regret[lp.frac_class] = 0.0
    # classes with a single undominated item never change: drop them from the expansion order
    order = order[red.counts[order] > 1]
    reg_o = regret[order]
    k_o = order.shape[0]
    if use_window and lp.bound - inc_val > tol:
        win = _window_incumbent(red, lag, lag_lp, lp_pos, order, cap - lp.weight, lp.bound - inc_val)
        if win is not None:
            w_pos, _ = win
            wv = float(red.values[rows, w_pos].sum())
            if wv > inc_val and int(red.weights[rows, w_pos].sum()) <= cap:
                inc_val, inc_ref = wv, ("full", w_pos)
    tail = _LPTail(hull, lp.levels)
    outside = np.ones(n, dtype=bool)
    refresh_every = 1 if tail.n_increments <= 50_000 else 32

    W = np.array([int(base_w.sum())], dtype=np.int64)
    V = np.array([float(base_v.sum())], dtype=np.float64)
    parents: list[np.ndarray] = []
    items: list[np.ndarray] = []
    proven = False
    status_note = "core"
    t = 0
    while True:
        if W.shape[0] == 0:
            proven = True
            status_note = "fathomed"
            break
        if t >= k_o:
            proven = True
            status_note = "exhausted"
            break
        lag_ub = float(np.max(V + alpha * (cap - W).astype(np.float64)))
        if lag_ub - reg_o[t] <= inc_val + tol:
            proven = True
            status_note = "regret"
            break
        if deadline is not None and time.perf_counter() > deadline:
            status_note = "time_limit"
            break
        i = int(order[t])
        k = int(red.counts[i])
        if W.shape[0] * k > max_states:
            status_note = "state_limit"
            break
        # items whose Lagrangian loss alone closes the gap cannot be part of a better solution
        cand = np.flatnonzero(lag_ub - (lag_lp[i] - lag[i, :k]) > inc_val + tol)
        dw = red.weights[i, cand] - base_w[i]
        dv = red.values[i, cand] - base_v[i]
        k = cand.shape[0]
        outside[i] = False
        if t < 8 or t % refresh_every == 0:
            tail.set_mask(outside)
        r_next = float(reg_o[t + 1]) if t + 1 < k_o else -np.inf
        idx_t = np.int32 if W.shape[0] < 2**31 else np.int64
        item_t = np.int16 if u < 2**15 else np.int64
        kernel = None
        n_cand = W.shape[0] * k
        if use_numba or (use_numba is None and (n_cand >= NUMBA_MIN_CANDIDATES
                                                or (n_cand >= 2_000 and _kernel_loaded()))):
            from lyra_solver.formulations.mckp._numba import get_step_kernel

            kernel = get_step_kernel()
        if kernel is not None:
            nW, nV, par, itm, best_v, best_p, best_i = kernel(
                W, V, dw.astype(np.int64), dv.astype(np.float64), cap, inc_val + tol, alpha, r_next,
                tail.xu, tail.yu, tail.xd, tail.yd, inc_val)
            if best_p >= 0 and best_v > inc_val:
                inc_val = float(best_v)
                inc_ref = ("state", t, int(best_p), int(cand[best_i]))
            parents.append(par.astype(idx_t))
            items.append(cand[itm].astype(item_t))
        else:
            nW, nV, keep = _step_numpy(W, V, dw, dv, cap, tail, alpha, r_next, inc_val, tol)
            if keep is None:  # incumbent improved: (value, flat index) in nV
                inc_val, j = nW
                inc_ref = ("state", t, j // k, int(cand[j % k]))
                nW, nV, keep = _step_numpy(W, V, dw, dv, cap, tail, alpha, r_next, inc_val, tol,
                                           check_incumbent=False)
            parents.append((keep // k).astype(idx_t))
            items.append(cand[keep % k].astype(item_t))
        W, V = nW, nV
        t += 1

    if proven:
        bound = inc_val
    else:
        open_ub = -np.inf
        if W.shape[0]:
            ub_open = tail.bound(W, V, cap)
            if t < k_o:
                np.minimum(ub_open, V + alpha * (cap - W).astype(np.float64) - reg_o[t], out=ub_open)
            open_ub = float(np.max(ub_open))
        bound = min(lp.bound, max(inc_val, open_ub))
        bound = max(bound, inc_val)
    return _finish(problem, red, lp_pos, inc_ref, parents, items, order, bound, proven, start, status_note)


def _finish(problem: MCKPProblem, red, lp_pos: np.ndarray, inc_ref: tuple, parents: list[np.ndarray],
            items: list[np.ndarray], order: np.ndarray, bound: float, proven: bool, start: float,
            note: str) -> MCKPResult:
    """Rebuild the incumbent's choice from the stored parent links and assemble the result."""
    n = problem.n_classes
    rows = np.arange(n)
    if inc_ref[0] == "full":
        pos = np.asarray(inc_ref[1], dtype=np.int64).copy()
    else:
        _, t, parent, item = inc_ref
        pos = lp_pos.copy()
        pos[order[t]] = item
        idx = parent
        for s in range(t - 1, -1, -1):
            pos[order[s]] = int(items[s][idx])
            idx = int(parents[s][idx])
    choice = red.items[rows, pos]
    if proven:
        # proven (to tol; exactly for integral values): the optimum is the incumbent's value
        bound = float(red.values[rows, pos].sum())
    return make_result(problem, choice, bound, proven=proven, start=start, method="core", backend_status=note)
