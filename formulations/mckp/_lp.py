"""MCKP reductions and the LP relaxation, vectorised over all classes.

* :func:`undominated`: per class, drop dominated items (an item is dominated when another item of the same
  class weighs no more and is worth at least as much); the survivors, sorted by weight, have strictly
  increasing weights and values.
* :func:`upper_hull`: per class, drop LP-dominated items (those on or below a segment between two other
  items): the vertices of the upper convex hull of the undominated items, with strictly decreasing slopes.
* :func:`lp_relaxation`: the LP relaxation of MCKP solved by slopes (Sinha and Zoltners 1979): start from
  every class's lightest hull vertex and take hull increments by decreasing slope until the capacity is
  reached; the first increment that does not fit is taken fractionally.

All three work on padded ``(n, m)`` arrays with numpy only (no per-class Python loop), so a 5,000 x 32 value
table is reduced and relaxed in a few milliseconds.

References
----------
Sinha, P., Zoltners, A. A. (1979). The multiple-choice knapsack problem. Operations Research 27(3).
Pisinger, D. (1995). A minimal algorithm for the multiple-choice knapsack problem. EJOR 83(2), 394-410.
Kellerer, H., Pferschy, U., Pisinger, D. (2004). Knapsack Problems, ch. 11. Springer.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from lyra_solver.formulations.mckp._numba import kernels, loaded
from lyra_solver.formulations.mckp._types import MCKPProblem

__all__ = ["FlatHulls", "Hull", "LPRelaxation", "Undominated", "fit_prefix", "flat_hulls", "lp_flat", "lp_relaxation",
           "undominated", "upper_hull"]

_BIG = np.iinfo(np.int64).max


@dataclass(frozen=True, eq=False)
class Undominated:
    """Undominated items of every class, sorted by weight.

    Attributes
    ----------
    weights, values : (n, u) arrays
        ``weights[i, :counts[i]]`` strictly increasing, ``values[i, :counts[i]]`` strictly increasing.
        Entries past ``counts[i]`` are padding (weight 0, value 0.0).
    items : (n, u) int64
        Original item index (into the problem's lists) of every entry.
    counts : (n,) int64
        Undominated items per class (``>= 1``).
    """

    weights: np.ndarray
    values: np.ndarray
    items: np.ndarray
    counts: np.ndarray


@dataclass(frozen=True, eq=False)
class Hull:
    """Vertices of each class's upper convex hull, as positions into the :class:`Undominated` lists.

    Attributes
    ----------
    pos : (n, h) int64
        ``pos[i, :counts[i]]``: increasing positions into the undominated lists of class ``i``.
    counts : (n,) int64
        Hull vertices per class (``>= 1``).
    weights, values : (n, h) arrays
        The vertices' weights and values (padding past ``counts``).
    """

    pos: np.ndarray
    counts: np.ndarray
    weights: np.ndarray
    values: np.ndarray


@dataclass(frozen=True, eq=False)
class LPRelaxation:
    """Solution of the LP relaxation by slopes.

    Attributes
    ----------
    feasible : bool
        Whether the lightest items fit (else every other field is meaningless).
    bound : float
        LP optimum, an upper bound on the MCKP optimum.
    levels : (n,) int64
        Hull increments fully taken in each class: the LP's integral item of class ``i`` is hull vertex
        ``levels[i]``.
    lp_pos : (n,) int64
        The same item as a position into the undominated lists.
    value, weight : float, int
        Value and weight of the integral part (every class at its ``lp_pos`` item): a feasible solution.
    frac_class : int
        Class of the first increment that does not fit (the fractional/break class), ``-1`` if none.
    alpha : float
        Slope of that increment (the LP's dual price of capacity); ``0.0`` if none.
    fraction : float
        Part of that increment the LP takes, in ``[0, 1)``.
    frac_gain : float
        Value of the whole break increment (``0.0`` if none).
    max_increment : float
        Largest value increment of a single hull step over all classes.
    up_slope : (n,) float64
        Largest slope of a hull step above ``levels[i]`` (``-inf`` at the top vertex).
    down_slope : (n,) float64
        Smallest slope of a hull step below ``levels[i]`` (``+inf`` at the lightest vertex).
    """

    feasible: bool
    bound: float
    levels: np.ndarray
    lp_pos: np.ndarray
    value: float
    weight: int
    frac_class: int
    alpha: float
    fraction: float
    frac_gain: float
    max_increment: float
    up_slope: np.ndarray
    down_slope: np.ndarray


@dataclass(frozen=True, eq=False)
class FlatHulls:
    """The upper hulls of every class in flat arrays (the exact core's layout: no ``n x m`` table).

    Attributes
    ----------
    start : (n + 1,) int64
        Class ``i``'s vertices are entries ``start[i]:start[i + 1]`` (at least one).
    items : (H,) int64
        Raw item index (into the problem's lists) of every vertex.
    weights, values : (H,) arrays
        The vertices' weights and values: strictly increasing within a class, slopes strictly decreasing.
    sorted_rows : (n,) bool
        Whether the class's raw weights strictly increase with the item index (value tables).
    """

    start: np.ndarray
    items: np.ndarray
    weights: np.ndarray
    values: np.ndarray
    sorted_rows: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        """Vertices per class."""
        return np.diff(self.start)


def flat_hulls(red: Undominated, hull: Hull, problem: MCKPProblem) -> FlatHulls:
    """The padded hulls of :func:`upper_hull` in the flat layout of :class:`FlatHulls` (vertex items mapped to
    raw item indices). Running time :math:`O(n h + n m)`."""
    n = hull.counts.shape[0]
    h = hull.pos.shape[1] if n else 0
    mask = np.arange(h)[None, :] < hull.counts[:, None]
    rows = np.broadcast_to(np.arange(n)[:, None], (n, h))
    items = red.items[rows[mask], hull.pos[mask]].astype(np.int64)
    start = np.concatenate([[0], np.cumsum(hull.counts)]).astype(np.int64)
    m = problem.weights.shape[1]
    if m > 1:
        valid = problem.valid_mask()
        srt = np.all((problem.weights[:, 1:] > problem.weights[:, :-1]) | ~valid[:, 1:], axis=1)
    else:
        srt = np.ones(n, dtype=bool)
    return FlatHulls(start, items, hull.weights[mask].astype(np.int64), hull.values[mask].astype(np.float64),
                     srt)


def _compact(keep: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Move the kept entries of every row to the front, in order; entries past the kept count are zero."""
    rows, cols = np.nonzero(keep)
    dest = (np.cumsum(keep, axis=1) - 1)[rows, cols]
    out = []
    for a in arrays:
        b = np.zeros_like(a)
        b[rows, dest] = a[rows, cols]
        out.append(b)
    return tuple(out)


def undominated(problem: MCKPProblem) -> Undominated:
    """Remove dominated items, class by class (vectorised).

    Item ``k`` is dominated when an item ``l`` of the same class has ``w_l <= w_k`` and ``v_l >= v_k`` (one
    of several identical items survives). Removing dominated items never changes the optimum.

    Parameters
    ----------
    problem : MCKPProblem

    Returns
    -------
    Undominated

    Notes
    -----
    Running time :math:`O(n m \\log m)` (one row-wise sort), memory :math:`O(n m)`.
    """
    n, m = problem.weights.shape
    if n == 0:
        z = np.zeros((0, 0), dtype=np.int64)
        return Undominated(z, np.zeros((0, 0)), z, np.zeros(0, dtype=np.int64))
    valid = problem.valid_mask()
    w = np.where(valid, problem.weights, _BIG)
    v = np.where(valid, problem.values, -np.inf)
    if m > 1 and bool(np.all((w[:, 1:] > w[:, :-1]) | ~valid[:, 1:])):
        # fast path (value tables): weights already strictly increasing in every class
        order = np.broadcast_to(np.arange(m, dtype=np.int64), (n, m))
        ws, vs = w, v
    else:
        order = np.lexsort((-v, w), axis=1)
        ws = np.take_along_axis(w, order, axis=1)
        vs = np.take_along_axis(v, order, axis=1)
    prev_max = np.empty_like(vs)
    prev_max[:, 0] = -np.inf
    if m > 1:
        prev_max[:, 1:] = np.maximum.accumulate(vs, axis=1)[:, :-1]
    keep = vs > prev_max
    keep[:, 0] = True
    counts = keep.sum(axis=1).astype(np.int64)
    u = int(counts.max())
    ws, vs, items = _compact(keep, ws, vs, order.astype(np.int64))
    ws, vs, items = ws[:, :u].copy(), vs[:, :u].copy(), items[:, :u].copy()
    pad = np.arange(u)[None, :] >= counts[:, None]
    ws[pad] = 0
    vs[pad] = 0.0
    items[pad] = 0
    return Undominated(ws, vs, items, counts)


def upper_hull(red: Undominated) -> Hull:
    """Vertices of the upper convex hull of every class's undominated items (vectorised).

    Andrew's monotone chain run on all classes at once: the items are swept by increasing weight (one column
    at a time) and every class keeps a stack of vertices; before item ``j`` is pushed, the top vertex ``b``
    is popped while it lies on or below the segment from the vertex under it, ``a``, to ``j``:
    ``(v_b - v_a) (w_j - w_b) <= (v_j - v_b) (w_b - w_a)``. The pops of all classes are done together, one
    round per pop depth.

    Parameters
    ----------
    red : Undominated

    Returns
    -------
    Hull
        Vertices with strictly decreasing slopes (collinear points are dropped).

    Notes
    -----
    Running time :math:`O(n u)` element operations (every item is pushed and popped at most once) in
    :math:`O(u + \text{pops})` numpy rounds; memory :math:`O(n u)`.
    """
    n, u = red.weights.shape
    W = red.weights.astype(np.float64)
    V = red.values
    cnt = red.counts
    stack = np.zeros((n, u), dtype=np.int64)
    top = np.ones(n, dtype=np.int64)
    # wide classes (many more items than the others) by whole-row elimination rounds instead of one numpy
    # round per column: a sweep over a million-item class would be a million Python-level rounds
    wide = np.flatnonzero(cnt > _WIDE_CLASS) if u > _WIDE_CLASS else np.zeros(0, dtype=np.int64)
    for i in wide.tolist():
        keep = _hull_positions(W[i, : cnt[i]], V[i, : cnt[i]])
        stack[i, : keep.size] = keep
        top[i] = keep.size
    narrow = cnt.copy()
    narrow[wide] = 1
    # the compiled sweep when the kernels are loaded (the same stacks: see _nbkernels.hull_stacks)
    nb = kernels() if loaded() else None
    for j in range(1, int(narrow.max()) if n and nb is None else 0):
        act = np.flatnonzero(narrow > j)
        if act.size == 0:
            break
        cand = act[top[act] >= 2]
        while cand.size:
            t = top[cand]
            a = stack[cand, t - 2]
            b = stack[cand, t - 1]
            wa, va = W[cand, a], V[cand, a]
            wb, vb = W[cand, b], V[cand, b]
            pop = (vb - va) * (W[cand, j] - wb) <= (V[cand, j] - vb) * (wb - wa)
            cand = cand[pop]
            top[cand] -= 1
            cand = cand[top[cand] >= 2]
        stack[act, top[act]] = j
        top[act] += 1
    if nb is not None and n:
        nb.hull_stacks(W, np.ascontiguousarray(V, dtype=np.float64), narrow, stack, top)
    h = int(top.max()) if n else 0
    pos = stack[:, :h].copy()
    pad = np.arange(h)[None, :] >= top[:, None]
    pos[pad] = 0
    r = np.arange(n)[:, None]
    hw = red.weights[r, pos]
    hv = red.values[r, pos]
    hw[pad] = 0
    hv[pad] = 0.0
    return Hull(pos, top, hw, hv)


#: Classes with more items than this get their hull by :func:`_hull_positions` (whole-row rounds).
_WIDE_CLASS = 256


def _hull_positions(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Upper-hull vertex positions of one class's items sorted by increasing weight (vectorised).

    Each round drops, all at once, every interior point lying on or below the segment joining its two
    surviving neighbours (the same test as the column sweep of :func:`upper_hull`). A point on or under a
    segment between two points of the set is never a hull vertex, whatever else is dropped, so simultaneous
    drops are exact; when none drops the slopes decrease strictly, which makes the rest the hull. Rounds repeat
    until none drops: O(k) work per round; value tables (concave or convex in the workers) need one to three
    rounds, an adversarial zigzag O(log k) to O(k) rounds.
    """
    idx = np.arange(w.shape[0], dtype=np.int64)
    while idx.size > 2:
        a, b, c = idx[:-2], idx[1:-1], idx[2:]
        below = (v[b] - v[a]) * (w[c] - w[b]) <= (v[c] - v[b]) * (w[b] - w[a])
        if not below.any():
            break
        mask = np.ones(idx.size, dtype=bool)
        mask[1:-1] = ~below
        idx = idx[mask]
    return idx


def fit_prefix(key: np.ndarray, weight: np.ndarray, room: int) -> tuple[np.ndarray, int, int]:
    """Scan items by decreasing ``key`` (ties: lower index first) and take them while the weights fit.

    Equivalent to a stable sort by ``-key`` followed by a cumulative-weight cut, but found by weighted
    selection (median pivots, each round keeps at most half of the candidates), so only the final handful of
    candidates is sorted.

    Parameters
    ----------
    key : (N,) float
    weight : (N,) int, positive
    room : int
        Capacity available.

    Returns
    -------
    taken : (N,) bool
        The items of the longest fitting prefix of the scan order.
    brk : int
        Index of the first item of the scan order that does not fit, ``-1`` if all fit.
    used : int
        Total weight taken.

    Notes
    -----
    Expected running time :math:`O(N)`.
    """
    n_items = key.shape[0]
    taken = np.zeros(n_items, dtype=bool)
    cand = np.arange(n_items)
    used = 0
    while cand.shape[0] > 256:
        kc = key[cand]
        piv = np.partition(kc, kc.shape[0] // 2)[kc.shape[0] // 2]
        gt = kc > piv
        w_gt = int(weight[cand[gt]].sum())
        if used + w_gt > room:
            cand = cand[gt]
            continue
        eq = kc == piv
        w_eq = int(weight[cand[eq]].sum())
        taken[cand[gt]] = True
        used += w_gt
        if used + w_eq <= room:
            taken[cand[eq]] = True
            used += w_eq
            cand = cand[kc < piv]
        else:
            cand = cand[eq]  # equal keys: index order is the scan order
            break
    c_sorted = cand[np.argsort(-key[cand], kind="stable")]
    cum = used + np.cumsum(weight[c_sorted])
    t = int(np.searchsorted(cum, room, side="right"))
    taken[c_sorted[:t]] = True
    if t > 0:
        used = int(cum[t - 1])
    brk = int(c_sorted[t]) if t < c_sorted.shape[0] else -1
    return taken, brk, used


def lp_relaxation(red: Undominated, hull: Hull, capacity: int, levels_fn: Callable | None = None) -> LPRelaxation:
    """Solve the LP relaxation of MCKP by slopes (greedy along the upper hulls).

    Parameters
    ----------
    red : Undominated
    hull : Hull
    capacity : int
    levels_fn : callable, optional
        The compiled twin of the slope scan (``lp_levels`` of :mod:`lyra_solver.formulations.mckp._numba`);
        ``None``: numpy. Both give the same arrays.

    Returns
    -------
    LPRelaxation

    Notes
    -----
    Expected running time :math:`O(N)` for ``N`` hull increments (:func:`fit_prefix`), memory
    :math:`O(N)`. The LP optimum is ``value + fraction * frac_gain``, and the integral part misses the MCKP
    optimum by at most ``frac_gain <= max_increment`` (Sinha and Zoltners 1979; Kellerer et al. 2004,
    sec. 11.2).
    """
    n = hull.counts.shape[0]
    base_w = int(hull.weights[:, 0].sum()) if n else 0
    empty_i = np.zeros(n, dtype=np.int64)
    if base_w > capacity:
        return LPRelaxation(False, -np.inf, empty_i, empty_i, -np.inf, base_w, -1, 0.0, 0.0, 0.0, 0.0,
                            np.full(n, -np.inf), np.full(n, np.inf))
    room = capacity - base_w
    rows = np.arange(n)
    if levels_fn is None:
        levels, up, down, b_cls, b_step, used, max_inc = _lp_levels_numpy(hull, room)
    else:
        levels, up, down, b_cls, b_step, used, max_inc = levels_fn(hull.weights, hull.values, hull.counts, room)
        b_cls, b_step, used, max_inc = int(b_cls), int(b_step), int(used), float(max_inc)
    lp_pos = hull.pos[rows, levels]
    weight = int(hull.weights[rows, levels].sum()) if n else 0
    value = float(hull.values[rows, levels].sum()) if n else 0.0
    if b_cls < 0:
        return LPRelaxation(True, value, levels, lp_pos, value, weight, -1, 0.0, 0.0, 0.0, max_inc, up, down)
    dw_b = int(hull.weights[b_cls, b_step + 1] - hull.weights[b_cls, b_step])
    gain = float(hull.values[b_cls, b_step + 1] - hull.values[b_cls, b_step])
    fraction = (room - used) / float(dw_b)
    alpha = gain / float(dw_b)
    return LPRelaxation(True, value + fraction * gain, levels, lp_pos, value, weight, b_cls, alpha, fraction,
                        gain, max_inc, up, down)


def lp_flat(hulls: FlatHulls, capacity: int, levels: tuple | None = None, levels_fn: Callable | None = None,
            hull: Hull | None = None) -> LPRelaxation:
    """:func:`lp_relaxation` on the flat hulls of the exact core; ``lp_pos`` holds raw item indices.

    The slope scan is the compiled ``levels_fn`` (``lp_levels`` of :mod:`lyra_solver.formulations.mckp._numba`)
    on the flat arrays or, when ``levels_fn`` is ``None``, the numpy scan on the padded ``hull`` (the same
    arrays); the rest is shared, so both give the same relaxation. Expected running time :math:`O(N)`.
    """
    n = hulls.start.shape[0] - 1
    first = hulls.start[:-1]
    base_w = int(hulls.weights[first].sum()) if n else 0
    empty_i = np.zeros(n, dtype=np.int64)
    if base_w > capacity:
        return LPRelaxation(False, -np.inf, empty_i, empty_i, -np.inf, base_w, -1, 0.0, 0.0, 0.0, 0.0,
                            np.full(n, -np.inf), np.full(n, np.inf))
    room = capacity - base_w
    if levels_fn is None:
        if hull is None:
            raise ValueError("hull: the numpy slope scan needs the padded hulls")
        lv, up, down, b_cls, b_step, used, max_inc = _lp_levels_numpy(hull, room)
    else:
        lv, up, down, b_cls, b_step, used, max_inc = levels_fn(hulls.weights, hulls.values, hulls.start, room)
        b_cls, b_step, used, max_inc = int(b_cls), int(b_step), int(used), float(max_inc)
    at = first + lv
    lp_pos = hulls.items[at]
    weight = int(hulls.weights[at].sum()) if n else 0
    value = float(hulls.values[at].sum()) if n else 0.0
    if b_cls < 0:
        return LPRelaxation(True, value, lv, lp_pos, value, weight, -1, 0.0, 0.0, 0.0, max_inc, up, down)
    s = int(hulls.start[b_cls]) + b_step
    dw_b = int(hulls.weights[s + 1] - hulls.weights[s])
    gain = float(hulls.values[s + 1] - hulls.values[s])
    fraction = (room - used) / float(dw_b)
    alpha = gain / float(dw_b)
    return LPRelaxation(True, value + fraction * gain, lv, lp_pos, value, weight, b_cls, alpha, fraction, gain,
                        max_inc, up, down)


def _lp_levels_numpy(hull: Hull, room: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int, int, float]:
    """The LP by slopes (numpy): levels, largest slope above / smallest below each level, break class and step
    (``-1`` when every increment fits), weight used by the increments taken, largest value increment. The numba
    twin is ``lp_levels`` in :mod:`lyra_solver.formulations.mckp._numba` (the same arrays)."""
    n = hull.counts.shape[0]
    h = hull.weights.shape[1] if n else 0
    dW = hull.weights[:, 1:] - hull.weights[:, :-1]
    dV = hull.values[:, 1:] - hull.values[:, :-1]
    inc_valid = np.arange(max(h - 1, 0))[None, :] < (hull.counts - 1)[:, None]
    slope = np.where(inc_valid, dV / np.where(inc_valid, dW, 1), -np.inf)
    # precedence-safe key (slopes are strictly decreasing in exact arithmetic; guard against rounding)
    key = np.minimum.accumulate(slope, axis=1) if h > 1 else slope
    cls_idx, step_idx = np.nonzero(inc_valid)
    # scan by decreasing key, ties in row-major (class, step) order
    taken, brk, used = fit_prefix(key[cls_idx, step_idx], dW[cls_idx, step_idx], room)
    levels = np.bincount(cls_idx[taken], minlength=n).astype(np.int64)
    rows = np.arange(n)
    max_inc = float(dV[inc_valid].max()) if inc_valid.any() else 0.0
    # slopes above / below the LP vertex, from the raw hull slopes (suffix max / prefix min)
    if h > 1:
        suf_max = np.maximum.accumulate(slope[:, ::-1], axis=1)[:, ::-1]
        suf_max = np.concatenate([suf_max, np.full((n, 1), -np.inf)], axis=1)
        up = suf_max[rows, levels]
        slope_lo = np.where(inc_valid, slope, np.inf)
        pre_min = np.minimum.accumulate(slope_lo, axis=1)
        pre_min = np.concatenate([np.full((n, 1), np.inf), pre_min], axis=1)
        down = pre_min[rows, levels]
    else:
        up = np.full(n, -np.inf)
        down = np.full(n, np.inf)
    if brk < 0:
        return levels, up, down, -1, -1, used, max_inc
    return levels, up, down, int(cls_idx[brk]), int(step_idx[brk]), used, max_inc
