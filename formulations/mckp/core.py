"""Exact MCKP by a lazily expanding core (after Pisinger's minimal algorithm, EJOR 1995).

Written from the published description of the algorithm (no code of its authors was used). Four phases:

1. **Prepare** (:func:`_prepare`). Per class, the upper convex hull of its undominated items, in one pass over
   the items into flat arrays (:class:`lyra_solver.formulations.mckp._lp.FlatHulls`; no reduced ``n x m`` table
   is written: at 10,000 x 64 writing one cost more than the rest of the solve); the LP relaxation by slopes,
   found by weighted selection over the hull increments (:func:`lyra_solver.formulations.mckp._lp.fit_prefix`,
   no full sort): the bound ``U``, the break gradient ``alpha`` and the LP's integral part ``x^LP`` (raw item
   indices). Each class ``i`` gets its
   *upgrade gradient* ``lam+_i`` (best value per unit of extra weight from its LP item, ``<= alpha``), its
   *downgrade gradient* ``lam-_i`` (least value lost per unit of weight freed, ``>= alpha``) and its regret
   ``r_i = L_i(LP item) - max_{other j} L_ij`` with ``L_ij = v_ij - alpha w_ij`` over all its items (dominated
   items can only lower it: still a valid bound).
2. **Start** (:func:`_greedy_fill`). The first incumbent is ``x^LP`` filled greedily: the free capacity is
   used by the moves that gain most, in rounds, best value per unit of weight first; on the classic instances
   it ends within a few units of the capacity, so the gap to ``U`` starts small. With integral values, when that
   start does not prove itself optimal, the *face fill* (:func:`_face_fill_numpy`) looks for a choice made of the
   LP items and moves of zero reduced cost (slope exactly ``alpha``) that fills the capacity exactly: such a
   choice reaches ``U`` and is optimal at the root (bitsets of the reachable sums, the classes with the smallest
   moves first); else the closest one below the capacity is offered as the incumbent, and with an integral break
   gradient a second fill allows one unit of loss (:func:`_face_fill_loss1_numpy`: the optimum one below ``U``).
   When the start is then ``U - 1`` (an integral ``U``), the *face bound* (:func:`_face_bound_numpy`) looks for a
   zero-loss fill of the capacity over every class, with no sum that could still reach it dropped: when there is
   none, no choice reaches ``U``, so the start is optimal, proven at the root (backend status ``face-bound``).
3. **Expand** (the loop of :func:`solve_core`). The core starts with the break class; the other classes wait in
   an upgrade list (by decreasing ``lam+``) and a downgrade list (by increasing ``lam-``), sorted lazily (only
   the prefix read so far, :class:`_LazyOrder`), and enter one at a time from the list whose head gradient is
   closer to ``alpha`` among those that can still improve a state (:func:`scan_numpy` and its numba twin read
   the states once per step). Only an entering class is reduced (:func:`select_numpy`): its dominated items and
   those whose Lagrangian loss alone closes the gap are dropped.
   A state ``(W, V)`` is a complete solution (core classes chosen, the others at their LP items); states are
   kept sorted by weight with strictly increasing values (dominated states dropped). Adding a class combines
   every state with its items in one *step kernel* (numba, :mod:`lyra_solver.formulations.mckp._numba`, or
   numpy, :func:`step_numpy`: same signature, same arrays out) that updates the incumbent and fathoms. With the
   numba kernels the whole loop is one compiled call (:func:`_search_compiled`: the same steps, the same answer
   and counters), which hands the search back to the Python loop where links would be dropped or a limit may be
   hit; without a time or state limit, phases 1 to 5 are one kernel call (:func:`_solve_compiled`).
   **Aspiration** (integral values only): the expansion runs first from a guessed incumbent value ``g`` just
   below the LP bound (:func:`first_guess`: the run must reach the bound rounded down), then from ``g - 1``,
   ``g - 3``, ``g - 7``, ... while above the start solution and while each failed run had more than
   :data:`GUESS_STOP_CLASSES` classes in its core, and last from the start solution. A run from a guess
   either finds a solution better than ``g``, which it then proves optimal as any run proves its incumbent, or
   proves that no solution beats ``g`` (the bound drops to ``g``; the next run starts over from the root, and
   ends as soon as its incumbent reaches ``g``: weakly correlated 100 x 10, seeds 1000-1099, 2,999 of 17,689
   state-item pairs were spent after the optimum was found, most of them such proofs). The
   start solution is often several units below the optimum, and the states a run keeps are those whose bound
   beats its incumbent: from a guess at the optimum less one they are a fraction (weakly correlated 100 x 10,
   seeds 1000-1099: median 6,243 state-item pairs from the start, 1,981 from the optimum less one), while a
   failed guess costs a proof at a high incumbent (1 pair in most seeds there). Float values run from the start
   solution alone, as before.
4. **Bound** (:func:`state_bounds`). A state can lead to a better solution only if its upper bound exceeds the
   incumbent. The bound is the least of: ``V + lam (c - W)`` with ``lam`` the head gradient of the upgrade list
   when ``W <= c`` and of the downgrade list when ``W > c`` (every class outside the core upgrades at most at
   ``lam+ <= alpha`` and downgrades at least at ``lam- >= alpha``); ``V + alpha (c - W) - r_next`` with
   ``r_next`` the least regret outside the core (a completion other than the state itself moves some class
   outside); and, once the state lists grow, the LP relaxation of the classes outside the core,
   ``V + F(c - W)`` (:class:`_LPTail`). The search stops, proven, when no state's bound exceeds the incumbent
   (by the tolerance below), when no state is left, or when both lists are empty.
5. **Finish** (:func:`_finish`): the incumbent's choice is read from the links between the states of
   successive steps; when those links were dropped to stay within the memory limit, it is rebuilt by replaying
   the recorded steps with the threshold fixed just below the incumbent (:func:`_rebuild`), which keeps only
   the states that can still reach it (on the classic instances, a few thousand where the search had millions).

Tolerance: weights are exact integers, values floats. A bound is trusted to
``tol = 1e-11 * max(1, |U|, sum_i |v_{i, LP}|)`` (a solution better than the returned one by less than ``tol``
may be missed; no state better by more than ``tol`` is fathomed). When all values are integers (and
``n max|v| < 2^50``, so sums are exact), ``tol = 1 - margin`` with ``margin = max(1e-6, 64 ulp(scale))``: a
better solution is better by at least 1, so a state whose bound is below ``z + 1`` by more than the bound's
rounding error is fathomed and the search stops as soon as the incumbent reaches the bound rounded down; the
proof stays exact. With integral data the Lagrangian tests are further lifted by a congruence that every
solution satisfies (:func:`congruence`, :func:`lift_threshold`, proof there): when ``v_ij - floor(alpha) w_ij``
takes one residue modulo ``g > 1`` in every class (e.g. strongly correlated classes, where ``v - w`` is a multiple
of 10), a state must reach the next integer of the right residue, not merely ``z + 1``; ``g = 1`` on most
instances, and then nothing changes.

Memory is bounded: before a step, the bytes of the links kept so far, the state list and the step's candidates
(counted exactly by the kernel's ``count`` when the estimate ``S k`` is too large) are compared with half of
``max_bytes`` (default 1 GiB, :data:`LINK_SHARE`); past it the links are dropped (the choice is rebuilt at the
end). If the state list and candidates alone exceed ``max_bytes``, the search stops as a limit does, with
status ``feasible``, the incumbent and a proven bound. Nothing is sized by the capacity, so huge capacities cost
what small ones do.

Determinism: the numba and numpy kernels compute the same candidates with the same float expressions and break
ties by the same rules (fewer weight, then lower item position), so they return the same arrays, and the answer
never depends on the path. The path, chosen by :func:`default_use_numba` (arguments, problem size, and whether
this process has loaded the kernels or spent long enough in numpy-path solves: the cold-start rule of
:mod:`lyra_solver.formulations.mckp._numba`), changes the time and ``stats["numba"]`` only.

References
----------
Pisinger, D. (1995). A minimal algorithm for the multiple-choice knapsack problem. European Journal of
Operational Research 83(2), 394-410.
Dyer, M. E., Riha, W. O., Walker, J. (1995). A hybrid dynamic programming/branch-and-bound algorithm for the
multiple-choice knapsack problem. J. Comput. Appl. Math. 58, 43-54.
Kellerer, H., Pferschy, U., Pisinger, D. (2004). Knapsack Problems, ch. 11. Springer.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from lyra_solver.formulations.mckp import _numba
from lyra_solver.formulations.mckp._lp import (
    FlatHulls,
    LPRelaxation,
    fit_prefix,
    flat_hulls,
    lp_flat,
    undominated,
    upper_hull,
)
from lyra_solver.formulations.mckp._numba import kernels
from lyra_solver.formulations.mckp._types import MCKPProblem, MCKPResult, make_result

__all__ = ["DEFAULT_MAX_BYTES", "NUMBA_MIN_ITEMS", "Incumbent", "count_numpy", "default_use_numba", "solve_core",
           "state_bounds", "step_numpy"]

#: Relative tolerance of the optimality proof (see the module docstring).
REL_TOL = 1e-11

#: Default memory limit of the state lists and of one step's candidates, in bytes (1 GiB).
DEFAULT_MAX_BYTES = 1 << 30

#: With ``use_numba=None``, problems with at least this many items load the numba kernels (when installed) on
#: their first solve; smaller ones take them once they are loaded (:mod:`lyra_solver.formulations.mckp._numba`).
NUMBA_MIN_ITEMS = _numba.LOAD_MIN_ITEMS

#: The LP relaxation of the classes outside the core (:class:`_LPTail`) joins the bound once a step would
#: create this many candidates, and is rebuilt each time the core has doubled since.
TAIL_MIN_CANDIDATES = 20_000

#: The tail is rebuilt (without the classes that entered since) once the core has grown by this factor.
TAIL_GROWTH = 2.0

#: Bytes per candidate of a step in the memory model (weights, values, parents, items and sort keys).
BYTES_PER_CANDIDATE = 48

#: The links between states are kept while they, the state list and a step's candidates take at most this
#: share of ``max_bytes`` (the rest stays for the search once they are dropped).
LINK_SHARE = 0.5

#: Least margin below 1 of the tolerance on integral values (see the module docstring).
INT_MARGIN = 1e-6

#: Rounds of the greedy fill of the start solution.
FILL_ROUNDS = 12

#: A guess whose run fails with at most this many classes in the core ends the guesses (the next run is from the
#: start solution): few classes near the bound mean the optimum is likely well below it, where each further guess
#: costs a run from the root. Uncorrelated 100 x 10 (the start mostly optimal, 2 to 8 below the bound): failed runs
#: of 1 to 10 classes; weakly 100 x 10 (seeds 1000-1099): failed runs of 6 to 26 classes, each followed by a run
#: that found the optimum. Seeds 1000-1099, worst uncorrelated / weakly-over-0.1-ms: 0.144 ms / 6 with 1, 0.130 /
#: 9 with 4, 0.123 / 8 with 8, 0.120 / 10 with a single guess (one noisy measurement each; 4 keeps every weakly
#: guess there).
GUESS_STOP_CLASSES = 4

#: The face fill (:func:`_face_fill_numpy`) tries targets up to this many bits of offsets (the window of partial
#: sums, ``target + 2 max(target, 64) + 1``) and at most this many classes with moves of zero reduced cost.
FACE_BITS = 1 << 16
FACE_CLASSES = 64


def default_use_numba(problem: MCKPProblem) -> bool:
    """The kernel path for ``use_numba=None``: numba when installed and either loaded in this process already,
    or the problem has at least :data:`NUMBA_MIN_ITEMS` items, or this process has spent
    :data:`lyra_solver.formulations.mckp._numba.LOAD_AFTER_S` in numpy-path solves (:func:`_numba.want`). The
    path changes the time only, never the answer."""
    return _numba.loaded() or _numba.want(problem.n_items)  # (loaded: no need to count the items)


@dataclass
class Incumbent:
    """The best complete solution found so far.

    Either a full choice (``positions``, one raw item index per class) or a state created by core step
    ``step`` from state ``parent`` and item ``item``. Its choice is read from the links between states while
    they fit the memory limit; once they do not, they are dropped and the choice is rebuilt at the end by
    replaying the steps (:func:`_rebuild`), so a long search needs the memory of its current state list only.
    """

    value: float
    positions: np.ndarray | None = None
    step: int = -1
    parent: int = -1
    item: int = -1

    def offer_full(self, value: float, positions: np.ndarray) -> None:
        """Take a full choice if it is strictly better."""
        if value > self.value:
            self.value, self.positions, self.step, self.parent, self.item = value, positions, -1, -1, -1

    def offer_state(self, value: float, step: int, parent: int, item: int) -> None:
        """Take the state of step ``step`` made of state ``parent`` and raw item ``item`` if strictly better."""
        if value > self.value:
            self.value, self.positions, self.step, self.parent, self.item = value, None, step, parent, item


@dataclass(frozen=True, eq=False)
class _StepRecord:
    """What a core step combined: the entering class, its kept items (raw indices, weights and values relative
    to its LP item) and the bound parameters of the classes outside the core (for :func:`_rebuild`)."""

    cls: int
    cand: np.ndarray
    dw: np.ndarray
    dv: np.ndarray
    bounds: tuple


@dataclass(frozen=True, eq=False)
class _Prepared:
    """Phase 1: reductions, LP relaxation, gradients and regrets."""

    hulls: FlatHulls
    lp: LPRelaxation
    base_w: np.ndarray
    base_v: np.ndarray
    tol: float
    lam_up: np.ndarray
    lam_dn: np.ndarray
    regret: np.ndarray
    mod_g: int = 1
    mod_r: int = 0


class _LazyOrder:
    """Classes by increasing key (ties: lower class first), sorted lazily: only a prefix long enough for the
    classes read so far is sorted (selection by :func:`numpy.partition`, then a sort of the prefix), and it is
    extended fourfold when the reader passes its end. Reads give what a full sort would give.

    Running time :math:`O(n)` per extension plus :math:`O(K \\log K)` for a prefix of length ``K``; the core
    reads a few classes of thousands, so this replaces three full sorts of the classes.
    """

    def __init__(self, cls: np.ndarray, key: np.ndarray) -> None:
        self.cls, self.key = cls, key
        self.n = int(cls.shape[0])
        self.prefix: list[int] = []
        self.want = 64

    def at(self, p: int) -> int:
        """The class at rank ``p``, ``-1`` past the end."""
        if p >= len(self.prefix):
            if p >= self.n:
                return -1
            while p >= len(self.prefix):
                self._extend()
        return self.prefix[p]

    def _extend(self) -> None:
        K = min(self.want, self.n)
        self.want *= 4
        if self.n <= K:
            sel = np.arange(self.n)
        else:
            thr = np.partition(self.key, K - 1)[K - 1]
            sel = np.flatnonzero(self.key <= thr)  # every class tied with the K-th key too
        o = np.lexsort((self.cls[sel], self.key[sel]))
        self.prefix = self.cls[sel[o]].tolist()


@dataclass
class _Lists:
    """Classes outside the core: the upgrade, downgrade and regret orders with a read pointer each.

    A list's head changes only when a class enters the core (:meth:`enter`), so the heads are cached until then
    (the search asks for them several times per step); membership is read from a ``bytearray`` (a Python-level
    scalar read), of which :attr:`in_core` is a boolean numpy view (for the tail's mask).
    """

    up: _LazyOrder
    dn: _LazyOrder
    by_regret: _LazyOrder
    n: int
    heads: list[int] = field(default_factory=lambda: [0, 0, 0])

    def __post_init__(self) -> None:
        self._member = bytearray(self.n)
        self.in_core = np.frombuffer(self._member, dtype=np.bool_)
        self._cached: list[int | None] = [None, None, None]

    def enter(self, i: int) -> None:
        """Class ``i`` joins the core."""
        self._member[i] = 1
        self._cached = [None, None, None]

    def _head(self, which: int) -> int:
        got = self._cached[which]
        if got is not None:
            return got
        order = (self.up, self.dn, self.by_regret)[which]
        member = self._member
        p = self.heads[which]
        c = order.at(p)
        while c >= 0 and member[c]:
            p += 1
            c = order.at(p)
        self.heads[which] = p
        self._cached[which] = c
        return c

    def head_up(self) -> int:
        """Next class of the upgrade list, ``-1`` when empty."""
        return self._head(0)

    def head_dn(self) -> int:
        """Next class of the downgrade list, ``-1`` when empty."""
        return self._head(1)

    def head_regret(self) -> int:
        """Class of least regret outside the core, ``-1`` when none."""
        return self._head(2)


class _LPTail:
    """LP relaxation of a set of classes (at least those outside the core) as a function of free capacity.

    With those classes at their LP items and free capacity ``r``, the LP optimum of their hulls is ``F(r)``:
    for ``r >= 0`` the upgrade increments by decreasing slope (concave), for ``r < 0`` minus the cheapest
    downgrades by increasing slope (``-inf`` when they cannot free ``-r``). Stored as breakpoints: ``xu, yu``
    (cumulative weights and values of the upgrades) and ``xd, yd`` (of the downgrades).
    """

    def __init__(self, hulls: FlatHulls, levels: np.ndarray, mask: np.ndarray) -> None:
        counts = hulls.counts
        n = counts.shape[0]
        cls = np.repeat(np.arange(n), counts)
        step = np.arange(hulls.weights.shape[0]) - hulls.start[cls]  # vertex rank within its class
        inc = (step < (counts - 1)[cls]) & mask[cls]  # vertex t starts increment t -> t + 1
        t = np.flatnonzero(inc)
        c, j = cls[t], step[t]
        dW = hulls.weights[t + 1] - hulls.weights[t]
        dV = hulls.values[t + 1] - hulls.values[t]
        s = dV / dW
        u = j >= levels[c]
        # by decreasing slope, ties by class then step: the increments are listed by (class, step), so a stable
        # sort on the slope alone gives that order (one key instead of a three-key lexsort: 3x faster at 10,000
        # classes)
        o = np.argsort(-s[u], kind="stable")
        self.xu = np.concatenate([[0.0], np.cumsum(dW[u][o].astype(np.float64))])
        self.yu = np.concatenate([[0.0], np.cumsum(dV[u][o])])
        d = np.flatnonzero(~u)
        # by increasing slope, ties by class then decreasing step: the stable sort over (class, step) order
        # keeps the classes in order; within a class the slopes strictly decrease with the step, so an equal pair
        # is a rounding tie, put in decreasing step order by reversing each class's run first
        cd = c[d]
        run_end = np.searchsorted(cd, cd, side="right")
        run_start = np.searchsorted(cd, cd, side="left")
        rev = d[run_start + run_end - 1 - np.arange(d.shape[0])]
        o = rev[np.argsort(s[rev], kind="stable")]
        self.xd = np.concatenate([[0.0], np.cumsum(dW[o].astype(np.float64))])
        self.yd = np.concatenate([[0.0], np.cumsum(dV[o])])


_NO_TAIL = np.zeros(0, dtype=np.float64)


def congruence(problem: MCKPProblem, alpha: float, compiled: bool = False) -> tuple[int, int]:
    """A congruence every solution's value satisfies, for the integral-value bound (``(1, 0)``: none found).

    With ``mu = floor(alpha) >= 0`` and ``d_ij = v_ij - mu w_ij`` (integers when values and weights are),
    ``g`` is the gcd over every class ``i`` and item ``j`` of ``d_ij - d_i0`` and ``r = (mu c + sum_i d_i0)
    mod g``.

    Lemma (validity of :func:`lift_threshold`). For every feasible choice ``x`` (weight ``w(x) <= c``, value
    ``v(x)``), ``T(x) = v(x) + mu (c - w(x))`` is an integer with ``T(x) = r (mod g)``, since
    ``v(x) - mu w(x) = sum_i d_{i x_i} = sum_i d_i0 (mod g)``, and ``T(x) >= v(x)`` as ``mu >= 0``. For a core
    state ``(W, V)`` (classes outside the core at their LP items, which maximise ``v_ij - alpha w_ij`` in their
    class) and any completion ``x`` of it, ``v(x) - alpha w(x) <= V - alpha W`` (a class moved from its LP item
    loses Lagrangian value), so ``T(x) <= v(x) + alpha (c - w(x)) <= V + alpha (c - W) = lag`` because
    ``mu <= alpha`` and ``c - w(x) >= 0``. Hence if ``x`` beats an integral incumbent ``z``, ``T(x) >= v(x) >
    z``, so ``T(x)`` is at least the least integer above ``z`` that is ``= r (mod g)``, and ``lag`` reaches it.
    A state (or item of an entering class, or candidate of a step) whose Lagrangian value stays below that
    integer by more than the rounding error is fathomed; with ``g = 1`` this is the plain integral test. No
    property of any generator is used: it holds for every instance with integral weights and values (the
    caller checks that); for most instances ``g = 1`` and nothing changes.

    Running time :math:`O(n m)` at worst, stopping at the first block of classes where the gcd reaches 1.
    With ``compiled`` (and the kernels loaded), the scan is the kernel ``congruence_gcd`` (the same result).
    """
    if not np.isfinite(alpha) or alpha < 0.0:
        return 1, 0
    mu = int(np.floor(alpha))
    w, v, sizes = problem.weights, problem.values, problem.sizes
    n, m = w.shape
    nb = kernels() if compiled and n and m and mu < 2**50 else None
    if nb is not None:
        g, acc = nb.congruence_gcd(w, v, sizes, mu)
        if g <= 1:
            return 1, 0
        return int(g), (mu * int(problem.capacity) + int(acc)) % int(g)
    if n == 0 or m == 0 or mu * float(np.abs(w).max(initial=0)) + float(np.abs(v).max(initial=0)) >= 2.0**50:
        return 1, 0
    g = 0
    lo = 0
    block = 1
    while lo < n:
        hi = min(n, lo + block)
        d = v[lo:hi].astype(np.int64) - mu * w[lo:hi].astype(np.int64)
        diff = d - d[:, :1]
        diff[np.arange(m)[None, :] >= sizes[lo:hi, None]] = 0
        g = int(np.gcd(g, np.gcd.reduce(np.abs(diff), axis=None)))
        if g == 1:
            return 1, 0
        lo, block = hi, block * 8
    if g <= 1:
        return 1, 0
    d0 = v[:, 0].astype(np.int64) - mu * w[:, 0].astype(np.int64)
    r = (mu * int(problem.capacity) + int((d0 % g).sum())) % g
    return g, int(r)


def lift_threshold(thr: float, mod_g: int, mod_r: int) -> float:
    """The Lagrangian fathoming threshold lifted to the congruence of :func:`congruence`.

    ``thr`` is ``z + tol`` with ``tol = 1 - margin`` (integral values), so ``ceil(thr) = z + 1`` is the least
    value that beats ``z``; the result is ``thr`` plus the distance from ``ceil(thr)`` up to the next integer
    ``= mod_r (mod mod_g)``: a Lagrangian value must exceed that integer less ``margin`` (lemma in
    :func:`congruence`). ``mod_g = 1`` returns ``thr``. The numba step kernel computes the same expression.
    """
    if mod_g <= 1:
        return thr
    return thr + float((mod_r - int(np.ceil(thr))) % mod_g)


def state_bounds(W: np.ndarray, V: np.ndarray, cap: int, alpha: float, lam_up: float, lam_dn: float,
                 r_next: float, xu: np.ndarray, yu: np.ndarray, xd: np.ndarray, yd: np.ndarray) -> np.ndarray:
    """Upper bound of every state ``(W, V)`` over its completions by the classes outside the core.

    The least of ``V + lam_up (c - W)`` (``W <= c``) or ``V + lam_dn (c - W)`` (``W > c``), of
    ``V + alpha (c - W) - r_next``, and, when ``xu`` is not empty, of ``V + F(c - W)`` (:class:`_LPTail`).
    Evaluated with the same float expressions as the numba step kernel.
    """
    r = (cap - W).astype(np.float64)
    pos = r >= 0.0
    ub = np.where(pos, V + lam_up * np.where(pos, r, 0.0), V + lam_dn * np.where(pos, -1.0, r))
    np.minimum(ub, V + alpha * r - r_next, out=ub)
    if xu.shape[0]:
        b3 = np.full(W.shape[0], -np.inf)
        if pos.any():
            rp, vp = r[pos], V[pos]
            p = np.searchsorted(xu, rp, side="right") - 1
            top = p == xu.shape[0] - 1
            q = np.minimum(p + 1, xu.shape[0] - 1)
            with np.errstate(invalid="ignore", divide="ignore"):
                mid = yu[p] + (rp - xu[p]) * (yu[q] - yu[p]) / (xu[q] - xu[p])
            b3[pos] = np.where(top, vp + yu[-1], vp + mid)
        neg = ~pos
        if neg.any():
            e, vn = -r[neg], V[neg]
            ok = e <= xd[-1]
            p = np.clip(np.searchsorted(xd, e, side="left") - 1, 0, max(xd.shape[0] - 2, 0))
            q = np.minimum(p + 1, xd.shape[0] - 1)
            with np.errstate(invalid="ignore", divide="ignore"):
                val = vn - (yd[p] + (e - xd[p]) * (yd[q] - yd[p]) / (xd[q] - xd[p]))
            b3[neg] = np.where(ok, val, -np.inf)
        np.minimum(ub, b3, out=ub)
    return ub


def scan_numpy(W: np.ndarray, V: np.ndarray, cap: int, alpha: float, lam_up: float, lam_dn: float, r_next: float,
               xu: np.ndarray, yu: np.ndarray, xd: np.ndarray, yd: np.ndarray,
               thr: float) -> tuple[float, bool, bool, float]:
    """What the search needs of the states before a step (numpy twin of the numba ``scan`` kernel).

    Returns ``(ub_max, need_up, need_dn, lag_max)``: the largest :func:`state_bounds`; whether a feasible state
    has ``V + lam_up (c - W) > thr`` (an upgrade can still improve it); whether an overfull state has
    ``V + lam_dn (c - W) > thr``; the largest Lagrangian value ``V + alpha (c - W)``.
    """
    r = (cap - W).astype(np.float64)
    feas = r >= 0.0
    ub = state_bounds(W, V, cap, alpha, lam_up, lam_dn, r_next, xu, yu, xd, yd)
    need_up = bool(np.any(feas & (V + lam_up * r > thr)))
    need_dn = bool(np.any(~feas & (V + lam_dn * r > thr)))
    return float(ub.max()), need_up, need_dn, float(np.max(V + alpha * r))


def select_numpy(problem: MCKPProblem, i: int, bw: int, bv: float, alpha: float, lag_ub: float,
                 thr: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reduce an entering class (numpy twin of the numba ``select_items`` kernel).

    Of class ``i``'s undominated items, those whose Lagrangian loss against the LP item ``(bw, bv)`` still
    leaves the best state's Lagrangian value ``lag_ub`` above ``thr`` (the LP item alone when none). Returns
    their raw indices and their weights and values relative to the LP item, by increasing weight.
    """
    iw, iv, ii = _class_items_numpy(problem, i)
    lag_i = iv - alpha * iw.astype(np.float64)
    lp_at = int(np.searchsorted(iw, bw))  # the LP item (a hull vertex, so undominated)
    sel = np.flatnonzero(lag_ub - (float(lag_i[lp_at]) - lag_i) > thr)
    if sel.shape[0] == 0:
        sel = np.array([lp_at])
    return ii[sel], (iw[sel] - bw).astype(np.int64), (iv[sel] - bv).astype(np.float64)


def count_numpy(W: np.ndarray, V: np.ndarray, dw: np.ndarray, dv: np.ndarray, cap: int, thr: float,
                alpha: float) -> int:
    """Candidates ``(h, j)`` with ``(V[h] + alpha (cap - W[h])) - (alpha dw[j] - dv[j]) > thr`` (numpy twin of
    the numba ``count`` kernel)."""
    lag = V + alpha * (cap - W).astype(np.float64)
    loss = alpha * dw.astype(np.float64) - dv
    return int(sum(int(np.count_nonzero(lag - loss[j] > thr)) for j in range(dw.shape[0])))


def step_numpy(W: np.ndarray, V: np.ndarray, dw: np.ndarray, dv: np.ndarray, cap: int, z: float, tol: float,
               alpha: float, lam_up: float, lam_dn: float, r_next: float, xu: np.ndarray, yu: np.ndarray,
               xd: np.ndarray, yd: np.ndarray, mod_g: int, mod_r: int):
    """One core step: combine the states with the items of the entering class (the kernels' definition).

    Parameters
    ----------
    W, V : (S,) int64, float64
        States sorted by weight, strictly increasing weights and values.
    dw, dv : (k,) int64, float64
        The entering class's items relative to its LP item, strictly increasing weights.
    cap : int
    z, tol : float
        Incumbent value and tolerance.
    alpha, lam_up, lam_dn, r_next, xu, yu, xd, yd
        Bound parameters of the classes still outside the core (:func:`state_bounds`).
    mod_g, mod_r : int
        The congruence of :func:`congruence` (``1, 0``: none); the Lagrangian pre-test compares with
        :func:`lift_threshold` of ``thr``.

    Returns
    -------
    (W', V', parent, item, best_v, best_p, best_j)
        The new states (sorted by weight, strictly increasing values), the state and item each comes from, and
        the best feasible candidate when it beats ``z`` (``best_p = -1`` otherwise; ties: less weight, then
        lower item).

    Notes
    -----
    Definition: the incumbent ``z'`` is updated first; with ``thr = z' + tol``, a candidate ``(h, j)``
    (weight ``W[h] + dw[j]``, value ``V[h] + dv[j]``) is considered when its Lagrangian value
    ``(V[h] + alpha (cap - W[h])) - (alpha dw[j] - dv[j])`` exceeds ``lift_threshold(thr, mod_g, mod_r)``;
    of the considered candidates, a candidate is kept when its bound exceeds ``thr`` and no considered candidate
    of no more weight has a larger value (of equal weight and value: the lowest item).
    Running time :math:`O(S k \\log(S k))`.
    """
    S, k = W.shape[0], dw.shape[0]
    best_v, best_p, best_j = z, -1, -1
    if S and k:
        h = np.searchsorted(W, cap - dw, side="right") - 1
        ok = h >= 0
        if ok.any():
            js = np.flatnonzero(ok)
            hv = V[h[js]] + dv[js]
            hw = W[h[js]] + dw[js]
            o = np.lexsort((js, hw, -hv))[0]
            if hv[o] > z:
                best_v, best_p, best_j = float(hv[o]), int(h[js[o]]), int(js[o])
    thr = best_v + tol
    thr_lag = lift_threshold(thr, mod_g, mod_r)
    lag = V + alpha * (cap - W).astype(np.float64)
    loss = alpha * dw.astype(np.float64) - dv
    parts_h, parts_j = [], []
    for j in range(k):
        hh = np.flatnonzero(lag - loss[j] > thr_lag)
        parts_h.append(hh)
        parts_j.append(np.full(hh.shape[0], j, dtype=np.int64))
    hh = np.concatenate(parts_h) if parts_h else np.zeros(0, np.int64)
    jj = np.concatenate(parts_j) if parts_j else np.zeros(0, np.int64)
    nW = W[hh] + dw[jj]
    nV = V[hh] + dv[jj]
    if nW.shape[0]:
        o = np.lexsort((jj, -nV, nW))
        nW, nV, hh, jj = nW[o], nV[o], hh[o], jj[o]
        prev = np.empty_like(nV)
        prev[0] = -np.inf
        np.maximum.accumulate(nV[:-1], out=prev[1:])
        keep = nV > prev
        nW, nV, hh, jj = nW[keep], nV[keep], hh[keep], jj[keep]
        keep = state_bounds(nW, nV, cap, alpha, lam_up, lam_dn, r_next, xu, yu, xd, yd) > thr
        nW, nV, hh, jj = nW[keep], nV[keep], hh[keep], jj[keep]
    return nW, nV, hh, jj, best_v, best_p, best_j


def _hulls(problem: MCKPProblem, use_numba: bool) -> tuple[FlatHulls, LPRelaxation, float, bool]:
    """The flat upper hulls of every class and the LP relaxation over them, plus the largest ``|value|`` and
    whether every value is integral: one compiled pass over the items (no ``n x m`` table is written), or the
    numpy functions of :mod:`lyra_solver.formulations.mckp._lp` (the same arrays either way)."""
    nb = kernels() if use_numba else None
    if nb is None or problem.n_classes == 0:
        red = undominated(problem)
        hull = upper_hull(red)
        hulls = flat_hulls(red, hull, problem)
        lp = lp_flat(hulls, problem.capacity, hull=hull)
        valid = problem.valid_mask()
        vals = problem.values[valid]
        vmax = float(np.abs(vals).max()) if vals.size else 0.0
        vmax = max(vmax, 0.0)
        return hulls, lp, vmax, bool(np.all(vals == np.floor(vals)))
    start, items, hw, hv, srt, vmax, integral = nb.prepare_hulls(problem.weights, problem.values, problem.sizes)
    hulls = FlatHulls(start, items, hw, hv, srt)
    return hulls, lp_flat(hulls, problem.capacity, levels_fn=nb.lp_levels), float(vmax), bool(integral)


def _hulls_lp_compiled(problem: MCKPProblem, nb) -> tuple:
    """:func:`_hulls` by the compiled path and what :func:`_prepare` reads of the LP's integral part, from one
    kernel call (``prepare_lp``: the same arrays as ``prepare_hulls``, :func:`lp_flat` with ``lp_levels`` and the
    numpy lines of :func:`_prepare`; the LP's value stays numpy's sum of the same array). Returns ``(hulls, lp,
    vmax, integral, base_w, base_v, lam_up, lam_dn, regret)``; the last five are ``None`` when the LP is
    infeasible (``regret`` is empty when the LP is integral)."""
    (feasible, start, items, hw, hv, srt, vmax, integral, room, lv, up, down, b_cls, b_step, used, max_inc, lp_pos,
     weight, hv_at, base_w, base_v, lam_up, lam_dn, regret) = nb.prepare_lp(problem.weights, problem.values,
                                                                            problem.sizes, problem.capacity)
    hulls = FlatHulls(start, items, hw, hv, srt)
    if not feasible:
        return hulls, lp_flat(hulls, problem.capacity, levels_fn=nb.lp_levels), float(vmax), bool(integral), \
            None, None, None, None, None
    value = float(hv_at.sum())
    weight, room, used, max_inc, b_cls = int(weight), int(room), int(used), float(max_inc), int(b_cls)
    if b_cls < 0:
        lp = LPRelaxation(True, value, lv, lp_pos, value, weight, -1, 0.0, 0.0, 0.0, max_inc, up, down)
    else:
        s = int(start[b_cls]) + int(b_step)
        dw_b = int(hw[s + 1] - hw[s])
        gain = float(hv[s + 1] - hv[s])
        fraction = (room - used) / float(dw_b)
        alpha = gain / float(dw_b)
        lp = LPRelaxation(True, value + fraction * gain, lv, lp_pos, value, weight, b_cls, alpha, fraction, gain,
                          max_inc, up, down)
    return hulls, lp, float(vmax), bool(integral), base_w, base_v, lam_up, lam_dn, regret


def _prepare(problem: MCKPProblem, use_numba: bool) -> _Prepared | LPRelaxation:
    """Phase 1 (see the module docstring); returns the LP alone when it is infeasible or integral (nothing
    left to search)."""
    n = problem.n_classes
    nb = kernels() if use_numba and n else None
    if nb is None:
        hulls, lp, vmax, integral = _hulls(problem, use_numba)
        lam_up = lam_dn = regret = None
    else:
        hulls, lp, vmax, integral, base_w, base_v, lam_up, lam_dn, regret = _hulls_lp_compiled(problem, nb)
    if not lp.feasible or lp.frac_class < 0:
        return lp
    if lam_up is None:
        rows = np.arange(n)
        base_w = problem.weights[rows, lp.lp_pos]
        base_v = problem.values[rows, lp.lp_pos]
    tol = REL_TOL * max(1.0, abs(lp.bound), float(np.abs(base_v).sum()))
    if tol < 0.5 and vmax * n < 2.0**50 and integral:
        # integral values: a better solution is better by at least 1, so a state whose bound is below z + 1 (by
        # more than the bound's rounding error) is fathomed (module docstring)
        scale = max(1.0, abs(lp.bound), float(np.abs(base_v).sum()), vmax * n)
        margin = max(INT_MARGIN, 64.0 * float(np.spacing(scale)))
        tol = 1.0 - margin if margin < 0.5 else 0.5
    mod_g, mod_r = congruence(problem, lp.alpha, use_numba) if tol > 0.5 else (1, 0)
    # gradients from the LP vertex: next hull step up / down (LP optimality: lam_up <= alpha <= lam_dn)
    if lam_up is None:
        lam_up = np.where(np.isfinite(lp.up_slope), lp.up_slope, -np.inf)
        lam_dn = np.where(np.isfinite(lp.down_slope), lp.down_slope, np.inf)
    # regrets with respect to alpha, over every item of the class
    if nb is None:
        regret = _regrets_numpy(problem, lp.lp_pos, lp.alpha)
    elif regret is None:
        regret = nb.regrets(problem.weights, problem.values, problem.sizes, lp.lp_pos, lp.alpha)
    return _Prepared(hulls, lp, base_w, base_v, tol, lam_up, lam_dn, regret, mod_g, mod_r)


def _regrets_numpy(problem: MCKPProblem, lp_item: np.ndarray, alpha: float) -> np.ndarray:
    """``r_i = max(0, L_i(lp_item[i]) - max_{other j} L_ij)`` with ``L_ij = v_ij - alpha w_ij`` over every item
    of the class (``+inf`` for a single item); the numba twin is ``regrets`` in
    :mod:`lyra_solver.formulations.mckp._numba`. Dominated items only lower a regret (a weaker, still valid
    bound), so the items need no reduction."""
    n, m = problem.weights.shape
    rows = np.arange(n)
    valid = problem.valid_mask()
    lag = np.where(valid, problem.values - alpha * problem.weights.astype(np.float64), -np.inf)
    lag_lp = lag[rows, lp_item]
    lag[rows, lp_item] = -np.inf
    return np.maximum(lag_lp - lag.max(axis=1), 0.0)


def _greedy_fill(prep: _Prepared, problem: MCKPProblem, cap: int,
                 use_numba: bool = False) -> tuple[np.ndarray, float, int]:
    """Phase 2 (see :func:`_greedy_fill_numpy`), by the numba twin ``greedy_fill`` when ``use_numba`` and it is
    available (the same positions)."""
    nb = kernels() if use_numba else None
    if nb is None:
        return _greedy_fill_numpy(prep, problem, cap)
    pos, room = nb.greedy_fill(problem.weights, problem.values, problem.sizes, prep.hulls.sorted_rows, prep.lp.lp_pos,
                         cap - prep.lp.weight, FILL_ROUNDS)
    value = float(problem.values[np.arange(problem.n_classes), pos].sum())
    return pos, value, int(room)


def _greedy_fill_numpy(prep: _Prepared, problem: MCKPProblem, cap: int) -> tuple[np.ndarray, float, int]:
    """Phase 2: the LP's integral part with its free capacity filled greedily.

    In each round every class offers its move of largest value gain among the heavier items that fit the free
    capacity (ties: the lighter item, then the lower index; this is the heaviest fitting undominated item, so
    dominated items need no removal); the offers are taken by decreasing gain per unit of weight while they fit
    (:func:`fit_prefix`). Returns ``(raw positions, value, free capacity)``. Running time :math:`O(n m)` per
    round (the numba twin scans a class with increasing weights only up to the free capacity).
    """
    W, V = problem.weights, problem.values
    n = problem.n_classes
    rows = np.arange(n)
    valid = problem.valid_mask()
    pos = prep.lp.lp_pos.copy()
    room = cap - prep.lp.weight
    for _ in range(FILL_ROUNDS):
        if room <= 0:
            break
        cur_w = W[rows, pos]
        cur_v = V[rows, pos]
        d = W - cur_w[:, None]
        ok = valid & (d > 0) & (d <= room)
        gain = np.where(ok, V - cur_v[:, None], -np.inf)
        g = gain.max(axis=1)
        has = g > 0.0
        tie = ok & (gain == g[:, None])
        wmin = np.where(tie, W, np.iinfo(np.int64).max).min(axis=1)
        first = np.argmax(tie & (wmin[:, None] == W), axis=1)
        cls = np.flatnonzero(has)
        if cls.shape[0] == 0:
            break
        best = first[cls]
        dW = W[cls, best] - cur_w[cls]
        taken, _, used = fit_prefix(g[cls] / dW, dW, room)
        pos[cls[taken]] = best[taken]
        room -= used
    value = float(V[rows, pos].sum())
    return pos, value, int(room)


def _face_fill(prep: _Prepared, problem: MCKPProblem, use_numba: bool = False, layers: int = 0) -> np.ndarray | None:
    """Phase 2's face fill (:func:`_face_fill_numpy`; with ``layers=1`` :func:`_face_fill_loss1_numpy`), by the
    numba twin ``face_fill`` when ``use_numba`` and it is available (the same positions)."""
    nb = kernels() if use_numba else None
    if nb is None:
        return (_face_fill_numpy, _face_fill_loss1_numpy)[layers](prep, problem)
    dw_b, gain, target = _break_edge(prep, problem)
    pos = nb.face_fill(problem.weights, problem.values, problem.sizes, prep.lp.lp_pos, prep.base_w, prep.base_v,
                       target, dw_b, gain, FACE_BITS, FACE_CLASSES, layers, prep.lam_up, prep.lam_dn)
    return pos if pos.shape[0] else None


def _break_edge(prep: _Prepared, problem: MCKPProblem) -> tuple[float, float, int]:
    """The LP's break edge for the face fills: its weight ``dw_b`` and value ``gain`` (the hull edge of the
    fractional class at its level, as floats) and ``target``, the capacity left over the LP items' weight. O(n)."""
    b, hulls = prep.lp.frac_class, prep.hulls
    s = int(hulls.start[b] + prep.lp.levels[b])
    return (float(hulls.weights[s + 1] - hulls.weights[s]), float(hulls.values[s + 1] - hulls.values[s]),
            problem.capacity - int(prep.base_w.sum()))


def _face_window(moves: np.ndarray, d: np.ndarray, target: int) -> tuple[np.ndarray, int, int] | None:
    """The classes of a face fill and its window of offsets: the classes with a move (``moves[i, j]``: item ``j``
    is a move, of weight change ``d[i, j]``), smallest move first (ties by class), at most
    :data:`FACE_CLASSES`; ``half``, the window's reach either side (at least ``target``, the largest move taken
    and 64); ``nbits``, the window's width. ``None`` when no class has a move or the window is wider than
    :data:`FACE_BITS`. The twin of the kernels' ``_face_window``. O(n m)."""
    cls = np.flatnonzero(moves.any(axis=1))
    if cls.shape[0] == 0:
        return None
    smallest = np.where(moves[cls], np.abs(d[cls]), np.iinfo(np.int64).max).min(axis=1)
    cls = cls[np.argsort(smallest, kind="stable")][:FACE_CLASSES]
    half = max(target, int(np.abs(np.where(moves[cls], d[cls], 0)).max()), 64)
    nbits = target + 2 * half + 1
    if nbits > FACE_BITS:
        return None
    return cls, half, nbits


def _face_fill_numpy(prep: _Prepared, problem: MCKPProblem) -> np.ndarray | None:
    """Phase 2, integral values: a solution on the LP's optimal face that fills the capacity exactly, which
    reaches the LP bound (so it is optimal), else the one of these that comes closest below the capacity.

    A move of class ``i`` from its LP item to item ``j`` has zero reduced cost when ``v_ij - alpha w_ij`` equals
    the LP item's, tested exactly as ``(v_ij - v_lp) dw_b == (w_ij - w_lp) gain`` (``alpha = gain / dw_b``, the
    break increment; integral products below ``2**52``, else the move is left out). A choice of the LP items
    with such moves of total weight ``T = c - W_LP`` (``W_LP`` the LP items' weight) has Lagrangian value ``U``
    and weight ``c``, hence value ``U``; one of weight ``W_LP + x`` (``0 < x < T``) has value
    ``U - alpha (T - x)``: the heaviest is returned when ``T`` is not reached (``None`` when none is above
    ``W_LP``, or ``T <= 0``). The classes with such moves are taken by their smallest ``|move|`` (ties: the lower
    class), at most :data:`FACE_CLASSES` of them, and the reachable sums of their moves are kept as bitsets over
    the offsets ``-H .. T + H`` (``H`` the largest of ``T``, 64 and the largest ``|move|`` of those classes; sums
    outside are dropped; at most :data:`FACE_BITS` bits, else nothing is tried) until ``T`` is reached (weakly
    correlated 100 x 10, seeds 1000-1099: reached in 80, every seed whose optimum is the LP bound at an integral
    break gradient; a narrower window ``H = max(T, 64)`` reached it in 55). The choice is read back from the last
    class to the first (a class keeps its LP item when the sum was reachable without it, else takes its first
    move, by item index, that was). On weakly correlated and subset-sum instances the break gradient is often
    integral (1) and many classes have such moves, where the core's states would enumerate the same sums one by
    one. The twin ``face_fill`` works on 64-bit words; this one on Python integers (the same sets).

    Running time :math:`O(n)` plus the items of the classes with a hull edge of slope ``alpha`` at the LP item
    (every item when ``alpha <= 0``; the numpy twin reads all ``N`` items) and :math:`O(K B / 64)` word operations
    (``K`` moves of the classes taken, ``B`` bits).
    """
    lp = prep.lp
    dw_b, gain, target = _break_edge(prep, problem)
    if target <= 0:
        return None
    n, m = problem.weights.shape
    alpha = gain / dw_b
    d = problem.weights - prep.base_w[:, None]
    a = (problem.values - prep.base_v[:, None]) * dw_b
    bb = d.astype(np.float64) * gain
    cols = np.arange(m)[None, :]
    # with alpha > 0 such items lie on a hull edge of slope alpha at the LP item (they maximise v - alpha w, and
    # none is dominated): other classes need no look at their items (the same doubles as the slopes' division)
    edge = (prep.lam_up == alpha) | (prep.lam_dn == alpha) if alpha > 0.0 else np.ones(n, dtype=np.bool_)
    zero = edge[:, None] & (cols < problem.sizes[:, None]) & (cols != lp.lp_pos[:, None]) & (d != 0) & \
        (a == bb) & (np.abs(a) < 2.0**52) & (np.abs(bb) < 2.0**52)
    window = _face_window(zero, d, target)
    if window is None:
        return None
    cls, half, nbits = window
    mask = (1 << nbits) - 1
    sets = [1 << half]
    tbit = target + half
    hit = -1
    for t, i in enumerate(cls.tolist()):
        cur = sets[-1]
        new = cur
        for dd in d[i][zero[i]].tolist():
            new |= (cur << dd) if dd > 0 else (cur >> -dd)
        sets.append(new & mask)
        if (sets[-1] >> tbit) & 1:
            hit = t
            break
    x = tbit
    if hit < 0:  # the heaviest sum below the target, when above the LP items' weight
        hit = len(sets) - 2
        x = (sets[-1] & ((1 << (tbit + 1)) - 1)).bit_length() - 1
        if x <= half:
            return None
    pos = lp.lp_pos.copy()
    for t in range(hit, -1, -1):
        if (sets[t] >> x) & 1:
            continue
        i = int(cls[t])
        for j in np.flatnonzero(zero[i]).tolist():
            y = x - int(d[i, j])
            if 0 <= y < nbits and (sets[t] >> y) & 1:
                pos[i] = j
                x = y
                break
    return pos


def _face_fill_loss1_numpy(prep: _Prepared, problem: MCKPProblem) -> np.ndarray | None:
    """The face fill with one unit of loss (integral values and an integral break gradient ``mu = gain / dw_b``
    only, else ``None``): moves of loss ``l = (v_lp - v_ij) - mu (w_lp - w_ij)`` 0 or 1 (``d = w_ij - w_lp != 0``),
    the reachable sums of two layers (total loss 0, total loss at most 1) as bitsets, the classes and the window
    as in :func:`_face_fill_numpy` (over these moves). A choice of loss ``l`` and weight ``W_LP + x`` (``x <= T``)
    has value ``U - l - mu (T - x)``: the least such deficit is returned (layer 0 on a tie), ``None`` when no sum
    above ``W_LP`` is reached. It runs when the fill at zero loss did not reach the bound: on weakly correlated
    instances whose optimum is the bound less one (100 x 10, seeds 1014 and 1067) the core needed thousands of
    state-item pairs to find it from a guess. Running time as :func:`_face_fill_numpy`'s, twice the words.
    """
    lp = prep.lp
    dw_b, gain, target = _break_edge(prep, problem)
    if target <= 0 or not (gain >= 0.0 and gain < 2.0**52 and gain % dw_b == 0.0):
        return None
    mu = gain / dw_b
    m = problem.weights.shape[1]
    d = problem.weights - prep.base_w[:, None]
    mw = d.astype(np.float64) * mu
    loss = (prep.base_v[:, None] - problem.values) + mw
    cols = np.arange(m)[None, :]
    ok = (cols < problem.sizes[:, None]) & (cols != lp.lp_pos[:, None]) & (d != 0) & (np.abs(mw) < 2.0**52) & \
        ((loss == 0.0) | (loss == 1.0))
    window = _face_window(ok, d, target)
    if window is None:
        return None
    cls, half, nbits = window
    mask = (1 << nbits) - 1
    s0, s1 = [1 << half], [1 << half]
    tbit = target + half
    for i in cls.tolist():
        c0, c1 = s0[-1], s1[-1]
        n0, n1 = c0, c1
        for j in np.flatnonzero(ok[i]).tolist():
            dd = int(d[i, j])
            if loss[i, j] == 0.0:
                n0 |= (c0 << dd) if dd > 0 else (c0 >> -dd)
                n1 |= (c1 << dd) if dd > 0 else (c1 >> -dd)
            else:
                n1 |= (c0 << dd) if dd > 0 else (c0 >> -dd)
        s0.append(n0 & mask)
        s1.append(n1 & mask)
        if (s0[-1] >> tbit) & 1:
            break
    below = (1 << (tbit + 1)) - 1
    x0 = (s0[-1] & below).bit_length() - 1
    x1 = (s1[-1] & below).bit_length() - 1
    best = None
    if x0 > half:
        best = (mu * (tbit - x0), 0, x0)
    if x1 > half and (best is None or 1.0 + mu * (tbit - x1) < best[0]):
        best = (1.0 + mu * (tbit - x1), 1, x1)
    if best is None:
        return None
    _, layer, x = best
    pos = lp.lp_pos.copy()
    for t in range(len(s0) - 2, -1, -1):
        if ((s1 if layer else s0)[t] >> x) & 1:
            continue
        i = int(cls[t])
        for j in np.flatnonzero(ok[i]).tolist():
            y = x - int(d[i, j])
            if not 0 <= y < nbits:
                continue
            if loss[i, j] == 0.0 and ((s1 if layer else s0)[t] >> y) & 1:
                pos[i], x = j, y
                break
            if loss[i, j] == 1.0 and layer == 1 and (s0[t] >> y) & 1:
                pos[i], x, layer = j, y, 0
                break
    return pos


def _face_bound(prep: _Prepared, problem: MCKPProblem, use_numba: bool = False) -> float:
    """The bound of :func:`_face_bound_numpy`, by the numba twin ``face_bound`` when ``use_numba`` and it is
    available (the same number); ``inf`` when the break gradient is not integral."""
    dw_b, gain, target = _break_edge(prep, problem)
    if not (gain >= 0.0 and gain < 2.0**52 and gain % dw_b == 0.0):
        return np.inf
    nb = kernels() if use_numba else None
    if nb is None:
        return _face_bound_numpy(prep, problem)
    return float(nb.face_bound(problem.weights, problem.values, problem.sizes, prep.base_w, prep.base_v, target,
                               gain / dw_b, FACE_BITS))


def _face_bound_numpy(prep: _Prepared, problem: MCKPProblem) -> float:
    """Phase 2, integral values and an integral break gradient ``mu >= 1``: ``U - 1`` when it is proven an upper
    bound of the optimum, else ``inf``.

    With ``v_ij - v_lp <= mu (w_ij - w_lp)`` for every item (checked: the LP items maximise ``v - mu w``), a choice
    of weight ``W <= c`` has value ``U - loss - mu (c - W)`` with ``U = V_LP + mu T`` (``T = c - W_LP``) and an
    integral ``loss >= 0``: it reaches ``U`` only with zero loss and ``W = c``, i.e. when the LP items and moves of
    zero loss (``v_ij - v_lp == mu d``, ``d = w_ij - w_lp != 0``) add exactly ``T``; otherwise its value is at
    most ``U - 1``. Unlike the face fill (:func:`_face_fill_numpy`, which stops at :data:`FACE_CLASSES` classes
    and a window that may clip sums), this takes every class with such moves, in index order, and keeps every
    sum that can still reach ``T``: the window ``max(-N, T - P) .. min(P, T + N)`` (``P`` and ``N`` the sums of
    the classes' largest moves up and down; a sum outside it cannot come back to ``T``), at most
    :data:`FACE_BITS` bits, else ``inf``; ``T > P`` proves it at once. Values not integral or past ``2**50``,
    products past ``2**52`` and a negative loss also give ``inf``. It runs when the start is the bound less one
    and the face fills did not reach the bound: weakly correlated 100 x 10, seeds 3003 and 1007, where the search
    spent thousands of state-item pairs proving what this proves. The twin ``face_bound`` works on 64-bit words,
    this one on Python integers (the same sets).

    Running time :math:`O(N)` plus :math:`O(K B / 64)` word operations (``K`` moves of zero loss, ``B`` bits).
    """
    dw_b, gain, target = _break_edge(prep, problem)
    mu = gain / dw_b
    lim = 2.0**52
    if target <= 0 or not (mu >= 1.0 and mu < lim and mu == np.floor(mu)):
        return np.inf
    cols = np.arange(problem.weights.shape[1])[None, :]
    valid = cols < problem.sizes[:, None]
    v = np.where(valid, problem.values, 0.0)
    bv = prep.base_v
    if not (np.all(np.abs(v) < 2.0**50) and np.all(v == np.floor(v)) and np.all(np.abs(bv) < 2.0**50)
            and np.all(bv == np.floor(bv))):
        return np.inf
    d = problem.weights - prep.base_w[:, None]
    a = v - bv[:, None]
    b = d.astype(np.float64) * mu
    if not (np.all(np.abs(b[valid]) < lim) and np.all(a[valid] <= b[valid])):
        return np.inf
    zero = valid & (a == b) & (d != 0)
    up = int(np.where(zero, np.maximum(d, 0), 0).max(axis=1).sum())
    dn = int(np.where(zero, np.maximum(-d, 0), 0).max(axis=1).sum())
    ub = float(bv.sum()) + mu * float(target) - 1.0
    if not abs(ub) < lim:
        return np.inf
    if target > up:
        return ub
    lo, hi = max(-dn, target - up), min(up, target + dn)
    nbits = hi - lo + 1
    if nbits > FACE_BITS:
        return np.inf
    mask = (1 << nbits) - 1
    cur = 1 << -lo
    for i in np.flatnonzero(zero.any(axis=1)).tolist():
        new = cur
        for dd in d[i][zero[i]].tolist():
            new |= (cur << dd) if dd > 0 else (cur >> -dd)
        cur = new & mask
        if (cur >> (target - lo)) & 1:
            return np.inf
    return ub


def _class_items_numpy(problem: MCKPProblem, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Undominated items of class ``i``: weights, values and raw indices sorted by weight (strictly increasing
    weights and values; of identical items the lowest index). The numba twin is ``class_items``."""
    k = int(problem.sizes[i])
    w, v = problem.weights[i, :k], problem.values[i, :k]
    o = np.lexsort((np.arange(k), -v, w))
    vs = v[o]
    prev = np.empty(k)
    prev[0] = -np.inf
    np.maximum.accumulate(vs[:-1], out=prev[1:])
    keep = vs > prev
    keep[0] = True
    o = o[keep]
    return w[o].astype(np.int64), v[o].astype(np.float64), o.astype(np.int64)


def _select_compiled(problem: MCKPProblem, i: int, bw: int, bv: float, alpha: float, lag_ub: float,
                     thr: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`select_numpy` by the compiled ``select_items`` (the same arrays)."""
    return kernels().select_items(problem.weights, problem.values, i, int(problem.sizes[i]), bw, bv, alpha, lag_ub,
                                  thr)


def _kernels(use_numba: bool) -> tuple[Callable, Callable, Callable, Callable, bool]:
    """``(count, step, scan, select, compiled)``: the numba kernels or their numpy twins (same signatures)."""
    nb = kernels() if use_numba else None
    if nb is not None:
        return nb.count, nb.step, nb.scan, _select_compiled, True
    return count_numpy, step_numpy, scan_numpy, select_numpy, False


def solve_core(problem: MCKPProblem, *, time_limit: float | None = None, use_greedy: bool = True,
               max_states: int | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
               use_numba: bool | None = None) -> MCKPResult:
    """Solve MCKP exactly with a lazily expanding core (see the module docstring).

    Parameters
    ----------
    problem : MCKPProblem
    time_limit : float, optional
        Seconds. When hit, the incumbent is returned with status ``feasible``, a proven bound and the gap.
    use_greedy : bool
        Fill the LP's integral part greedily for the first incumbent (phase 2); off, the start is the LP's
        integral part alone.
    max_states : int, optional
        Stop (like a limit, backend status ``state_limit``) before a step that would combine more than this
        many state-item pairs.
    max_bytes : int
        Memory limit of the links between states, the state list and one step's candidates (default
        :data:`DEFAULT_MAX_BYTES`); past it the links are dropped (the choice is rebuilt by a replay), and when
        the state list and candidates alone exceed it the search stops with status ``feasible`` (backend status
        ``memory_limit``), never a crash.
    use_numba : bool, optional
        Step kernels compiled by numba (``True``) or numpy (``False``); ``None``: :func:`default_use_numba`,
        and a numpy search that runs long switches to the compiled kernels. Every path gives the same answer,
        choice included.

    Returns
    -------
    MCKPResult
        ``method="core"``; ``optimal``, ``feasible`` (a limit hit) or ``infeasible``; ``stats`` holds
        ``classes`` (classes that entered the core), ``states`` (states created over all steps),
        ``max_states`` (longest state list), ``candidates`` (state-item pairs combined, ``sum_t S_t k_t``;
        these three summed over the runs of the aspiration guesses and the last run),
        ``free_start`` (free capacity of the start solution), ``rebuild_states`` (states kept by the replay
        of :func:`_rebuild`, 0 when the links sufficed) and ``numba`` (1 when the numba kernels ran).

    Notes
    -----
    Running time :math:`O(N)` for phase 1 on classes whose weights increase with the item index (value tables),
    :math:`O(N \\log m)` otherwise (``N`` items, ``m`` per class; the LP in expected :math:`O(H)` over the ``H``
    hull vertices), :math:`O(N)` per fill round (less on increasing weights), the replay of :func:`_rebuild` at
    most once more the steps' work, and :math:`O(\\sum_t S_t k_t \\log(S_t k_t))` for the core
    steps (numpy; :math:`O(\\sum_t S_t k_t^2)` with numba), ``S_t`` the states before step ``t`` and ``k_t`` the
    entering class's items left after its reduction, summed over the runs (with integral values, at most
    :math:`\\lceil \\log_2(U - z_0) \\rceil + 2` runs for the LP bound ``U`` and the start value ``z_0``, each from
    the root). ``S_t`` is bounded by the distinct state weights within the bounds, never by the capacity; it is
    exponential in the core size in the worst case, as for every exact method of this NP-hard problem, and the
    core stays small on the engine's tables (Pisinger 1995).
    """
    start = time.perf_counter()
    deadline = None if time_limit is None else start + float(time_limit)
    switch = use_numba is None  # the default path may load the kernels mid-search (module _numba)
    if use_numba is None:
        use_numba = default_use_numba(problem)
    switch = switch and not use_numba
    res = _search(problem, start, deadline, use_greedy, max_states, max_bytes, bool(use_numba), switch)
    if switch and not res.stats.get("numba"):
        _numba.charge(time.perf_counter() - start)
    return res


def _search(problem: MCKPProblem, start: float, deadline: float | None, use_greedy: bool, max_states: int | None,
            max_bytes: int, use_numba: bool, switch: bool) -> MCKPResult:
    """:func:`solve_core` once its path is chosen; ``switch``: take the compiled kernels once the numpy search has
    run :data:`lyra_solver.formulations.mckp._numba.SWITCH_AFTER_S` (the same arrays, so the same answer)."""
    if use_numba and deadline is None and max_states is None:
        got = _solve_compiled(problem, start, use_greedy, max_bytes)
        if got is not None:
            return got
    cap = problem.capacity
    stats = {"classes": 0, "states": 0, "max_states": 1, "candidates": 0, "free_start": 0, "rebuild_states": 0,
             "numba": 0}
    # the front door answered the empty and the infeasible instances
    prep = _prepare(problem, bool(use_numba))
    if isinstance(prep, LPRelaxation):
        stats["free_start"] = cap - prep.weight
        return make_result(problem, prep.lp_pos, prep.bound, proven=True, start=start, method="core",
                           backend_status="lp-integral", stats=stats)
    lp, tol, alpha = prep.lp, prep.tol, prep.lp.alpha

    # phase 2: start solution
    inc = Incumbent(lp.value, lp.lp_pos.copy())
    stats["free_start"] = cap - lp.weight
    if use_greedy:
        pos, value, room = _greedy_fill(prep, problem, cap, bool(use_numba))
        inc.offer_full(value, pos)
        if inc.positions is pos:
            stats["free_start"] = room
    mod = (prep.mod_g, prep.mod_r)
    # the root state's Lagrangian value is the LP bound (duality); with a congruence it may close the gap alone
    root_lag = float(prep.base_v.sum()) + alpha * float(cap - int(prep.base_w.sum()))
    if use_greedy and tol > 0.5 and not (lp.bound - inc.value <= tol or
                                         root_lag <= lift_threshold(inc.value + tol, *mod)):
        rows = np.arange(problem.n_classes)
        for layers in (0, 1):  # zero reduced cost; then also one unit of loss when the break gradient is integral
            pos = _face_fill(prep, problem, bool(use_numba), layers)
            if pos is not None:
                inc.offer_full(float(problem.values[rows, pos].sum()), pos)
                if inc.positions is pos:
                    stats["free_start"] = cap - int(problem.weights[rows, pos].sum())
            if lp.bound - inc.value <= tol:
                break
    if lp.bound - inc.value <= tol or root_lag <= lift_threshold(inc.value + tol, *mod):
        return _finish(problem, prep, inc, inc.positions, [], [], [], (step_numpy, count_numpy), max_bytes, lp.bound,
                       True, start, "lp-bound", stats)
    # the start is the bound less one and no zero-loss fill of the capacity reaches the bound: proven at the root
    if use_greedy and tol > 0.5 and lp.bound - inc.value < 1.5:
        face_ub = _face_bound(prep, problem, bool(use_numba))
        if inc.value >= face_ub:
            return _finish(problem, prep, inc, inc.positions, [], [], [], (step_numpy, count_numpy), max_bytes,
                           face_ub, True, start, "face-bound", stats)

    # phase 3: expand the core. With integral values, first from guessed incumbents just below the bound
    # (:func:`first_guess`): a run from a guess ``g`` either finds a solution better than ``g`` (then it
    # is proven optimal by that run) or proves that none exists (the bound drops to ``g``); then from the start
    # solution. Each run by one compiled loop when the kernels run (the same steps; it hands the run back, to be
    # run by the Python loop from its start, where the links would be dropped or a limit may be hit).
    ctx = {"switch": switch}
    start_pos = inc.positions
    known_ub = lp.bound
    guess = first_guess(lp.bound, tol)
    gap = 1.0
    while True:
        is_guess = guess > inc.value
        run = Incumbent(guess) if is_guess else inc
        classes_before = stats["classes"]
        ends = None
        z_stop = known_ub if tol > 0.5 else np.inf
        if use_numba and max_states is None:
            ends = _search_compiled(problem, prep, run, max_bytes, deadline, stats, z_stop)
        if ends is not None:
            code, pos, has_state = ends
            if has_state or not is_guess:
                if not has_state:
                    pos = np.asarray(start_pos, dtype=np.int64).copy()
                # proven: the bound is the choice's value, which make_result computes (as _finish does, once)
                return make_result(problem, pos, None, proven=True, start=start, method="core",
                                   backend_status=_SEARCH_ENDS[code], stats=stats)
            note = _SEARCH_ENDS[code]
        else:
            proven, note, records, parents, items, kern, open_ub = _expand(problem, prep, run, max_states,
                                                                           max_bytes, deadline, start, stats,
                                                                           bool(use_numba), ctx, z_stop)
            found = not is_guess or run.step >= 0
            if not proven or found:
                best = run if run.step >= 0 else inc
                bound = best.value if proven else \
                    max(best.value, min(known_ub, max(guess, open_ub) if is_guess else open_ub))
                return _finish(problem, prep, best, start_pos, records if best is run else [], parents,
                               items, kern, max_bytes, bound, proven, start, note, stats)
        # the guess failed: no solution is better than it (by the tolerance)
        known_ub = guess
        guess -= gap
        gap *= 2.0
        if stats["classes"] - classes_before <= GUESS_STOP_CLASSES:
            guess = -np.inf


def first_guess(bound: float, tol: float) -> float:
    """The first aspiration guess of :func:`_search` (``-inf``: none): with integral values (``tol > 0.5``), the
    largest integer ``g`` with ``g + tol < bound``, i.e. the incumbent from which a run must reach the largest
    integral value the LP bound allows. The guesses that follow are ``g - 1, g - 3, g - 7, ...`` (gaps doubling)
    while above the start solution's value and while no failed run had at most :data:`GUESS_STOP_CLASSES`
    classes in its core (the caller's rule): a failed guess costs the proof at a high incumbent (cheap), a
    successful one a search from an incumbent at most twice as far below the optimum as the last failed guess,
    where the start solution may be many units below it (weakly correlated 100 x 10: the optimum is the LP bound
    rounded down in 92 of 100 seeds, the start 0 to 12 below it). Float values keep the start solution alone."""
    if not tol > 0.5 or not np.isfinite(bound):
        return -np.inf
    return float(np.ceil(bound - tol)) - 1.0


def _expand(problem: MCKPProblem, prep: _Prepared, inc: Incumbent, max_states: int | None, max_bytes: int,
            deadline: float | None, start: float, stats: dict[str, int], use_numba: bool, ctx: dict,
            z_stop: float = np.inf):
    """One run of phase 3 by the Python loop from the incumbent ``inc`` (updated in place): the steps of the core
    until proven or a limit. Returns ``(proven, note, records, parents, items, (step, count), open_ub)`` with
    ``open_ub`` the largest bound of the open states (``-inf`` when proven); ``ctx["switch"]``: take the compiled
    kernels once the numpy search has run :data:`lyra_solver.formulations.mckp._numba.SWITCH_AFTER_S`; ``z_stop``: a
    proven upper bound of the optimum (integral values: the LP bound, then the last failed guess of
    :func:`_search`), the run ends proven after the step whose incumbent comes within ``tol`` of it (the incumbent
    only changes to a strictly better value, so the choice is the one the full run returns)."""
    n = problem.n_classes
    cap = problem.capacity
    lp, tol, alpha = prep.lp, prep.tol, prep.lp.alpha
    mod = (prep.mod_g, prep.mod_r)
    multi = prep.hulls.counts > 1  # more than one undominated item
    up_cls = np.flatnonzero(multi & np.isfinite(prep.lam_up))
    dn_cls = np.flatnonzero(multi & np.isfinite(prep.lam_dn))
    rg_cls = np.flatnonzero(multi)
    lists = _Lists(up=_LazyOrder(up_cls, -prep.lam_up[up_cls]), dn=_LazyOrder(dn_cls, prep.lam_dn[dn_cls]),
                   by_regret=_LazyOrder(rg_cls, prep.regret[rg_cls]), n=n)
    count, step, scan, select, compiled = _kernels(use_numba or ctx.get("switched", False))
    base_w, base_v = prep.base_w, prep.base_v

    stats["numba"] = max(stats["numba"], int(compiled))

    def outside_params() -> tuple[float, float, float]:
        a, b, c = lists.head_up(), lists.head_dn(), lists.head_regret()
        return (float(prep.lam_up[a]) if a >= 0 else 0.0, float(prep.lam_dn[b]) if b >= 0 else np.inf,
                float(prep.regret[c]) if c >= 0 else np.inf)

    W = np.array([int(prep.base_w.sum())], dtype=np.int64)
    V = np.array([float(prep.base_v.sum())], dtype=np.float64)
    order: list[int] = []
    records: list[_StepRecord] = []
    parents: list[np.ndarray] | None = []  # links between states while they fit the memory limit
    item_t = np.int16 if problem.weights.shape[1] < 2**15 else np.int64
    items: list[np.ndarray] = []
    hist_bytes = 0
    tail = None
    tail_core = 0
    proven = False
    note = "core"
    xu = yu = xd = yd = _NO_TAIL
    while True:
        if W.shape[0] == 0:
            proven, note = True, "fathomed"
            break
        lam_up, lam_dn, r_next = outside_params()
        thr = inc.value + tol
        ub_max, need_up, need_dn, lag_ub = scan(W, V, cap, alpha, lam_up, lam_dn, r_next, xu, yu, xd, yd, thr)
        if not order:
            i = lp.frac_class
        else:
            if ub_max <= thr:
                proven, note = True, "bound"
                break
            if lag_ub <= lift_threshold(thr, *mod):  # no state reaches the next value of the congruence class
                proven, note = True, "congruence"
                break
            a, b = lists.head_up(), lists.head_dn()
            need_up = a >= 0 and bool(need_up)
            need_dn = b >= 0 and bool(need_dn)
            if need_up and need_dn:
                d_up, d_dn = alpha - lam_up, lam_dn - alpha
                # the closer gradient first; on a tie, alternate so that the states stay around the capacity
                i = a if d_up < d_dn or (d_up == d_dn and len(order) % 2 == 1) else b
            elif need_up or need_dn:
                i = a if need_up else b
            else:
                i = a if a >= 0 else b
                if i < 0:
                    i = lists.head_regret()
            if i < 0:
                proven, note = True, "exhausted"
                break
        now = time.perf_counter()
        if deadline is not None and now > deadline:
            note = "time_limit"
            break
        if ctx["switch"] and now - start > _numba.SWITCH_AFTER_S and _numba.ready():
            ctx["switch"] = False
            ctx["switched"] = True
            count, step, scan, select, compiled = _kernels(True)
            stats["numba"] = max(stats["numba"], int(compiled))
        # reduce the entering class only: items whose Lagrangian loss alone closes the gap are dropped
        cand, dw, dv = select(problem, i, int(base_w[i]), float(base_v[i]), alpha, float(lag_ub),
                              lift_threshold(thr, *mod))
        lists.enter(i)
        order.append(i)
        t = len(order) - 1
        lam_up, lam_dn, r_next = outside_params()
        S, k = W.shape[0], cand.shape[0]
        if S * k >= TAIL_MIN_CANDIDATES and (tail is None or len(order) >= TAIL_GROWTH * tail_core):
            if compiled:  # the compiled twin of _LPTail (the same arrays)
                tail = kernels().lp_tail(prep.hulls.weights, prep.hulls.values, prep.hulls.start, lp.levels,
                                         ~lists.in_core)
            else:
                t_ = _LPTail(prep.hulls, lp.levels, ~lists.in_core)
                tail = (t_.xu, t_.yu, t_.xd, t_.yd)
            tail_core = len(order)
            xu, yu, xd, yd = tail
        if max_states is not None and S * k > max_states:
            note = "state_limit"
            order.pop()
            break
        n_cand = S * k  # candidates of the step: the estimate, counted exactly when it matters
        if parents is not None and hist_bytes + 16 * S + BYTES_PER_CANDIDATE * n_cand > LINK_SHARE * max_bytes:
            n_cand = count(W, V, dw, dv, cap, lift_threshold(thr, *mod), alpha)
            if hist_bytes + 16 * S + BYTES_PER_CANDIDATE * n_cand > LINK_SHARE * max_bytes:
                parents, items, hist_bytes = None, [], 0  # drop the links: the incumbent will be rebuilt
        if 16 * S + BYTES_PER_CANDIDATE * n_cand > max_bytes:
            if n_cand == S * k:
                n_cand = count(W, V, dw, dv, cap, lift_threshold(thr, *mod), alpha)
            if 16 * S + BYTES_PER_CANDIDATE * n_cand > max_bytes:
                note = "memory_limit"
                order.pop()
                break
        bounds = (lam_up, lam_dn, r_next, xu, yu, xd, yd, *mod)
        nW, nV, par, itm, best_v, best_p, best_j = step(W, V, dw, dv, cap, inc.value, tol, alpha, *bounds)
        records.append(_StepRecord(i, cand, dw, dv, bounds))
        if best_p >= 0:
            inc.offer_state(float(best_v), t, int(best_p), int(cand[best_j]))
        if parents is not None:
            parents.append(np.asarray(par).astype(np.int32 if S < 2**31 else np.int64))
            items.append(cand[np.asarray(itm)].astype(item_t))
            hist_bytes += parents[-1].nbytes + items[-1].nbytes
        W, V = np.asarray(nW), np.asarray(nV)
        stats["states"] += int(W.shape[0])
        stats["max_states"] = max(stats["max_states"], int(W.shape[0]))
        stats["candidates"] += S * k
        if z_stop - inc.value <= tol:  # the incumbent reaches a proven bound of the optimum
            proven, note = True, "bound"
            break
    stats["classes"] += len(order)

    # phase 4: the bound of the open states when stopped early
    open_ub = -np.inf
    if not proven and W.shape[0]:
        lam_up, lam_dn, r_next = outside_params()
        open_ub = float(np.max(state_bounds(W, V, cap, alpha, lam_up, lam_dn, r_next, xu, yu, xd, yd)))
    return proven, note, records, parents, items, (step, count), open_ub


#: How a compiled search ended (the codes of the kernel ``search``).
_SEARCH_ENDS = ("fathomed", "bound", "congruence", "exhausted")

#: Work units (``S k^2 + S`` per core step: ``S`` states, ``k`` items) that the compiled search is taken to do per
#: second, on the slow side (2.4e8 to 5e8 measured on the weakly classes, tail builds included): under a time limit
#: it runs at most half the time left at this rate before it hands the search back to the Python loop (which checks
#: the clock between steps); the kernel cannot read the clock.
COMPILED_WORK_PER_S = 1e8


def _search_compiled(problem: MCKPProblem, prep: _Prepared, inc: Incumbent, max_bytes: int, deadline: float | None,
                     stats: dict[str, int], z_stop: float = np.inf) -> tuple[int, np.ndarray, bool] | None:
    """One run of phase 3 from the incumbent ``inc`` by the compiled loop ``search`` (the steps of :func:`_expand`'s
    loop, in the same order, by the same kernels: the same incumbent, choice and counters, added to ``stats``).
    Returns ``(code, pos, has_state)``: how the run ended (an index into :data:`_SEARCH_ENDS`), and when
    ``has_state`` (a state beat ``inc.value``) the best state's choice; ``None`` when the kernels are not loaded or
    the loop handed the run back (links to drop, a memory limit, the work budget of a time limit), for the Python
    loop to run."""
    nb = kernels()
    if nb is None:
        return None
    budget = -1.0
    if deadline is not None:
        budget = max(deadline - time.perf_counter(), 0.0) * 0.5 * COMPILED_WORK_PER_S
    lp, hulls = prep.lp, prep.hulls
    item_bytes = 2 if problem.weights.shape[1] < 2**15 else 8
    code, pos, has_state, st = nb.search(
        problem.weights, problem.values, problem.sizes, problem.capacity, prep.base_w, prep.base_v,
        int(prep.base_w.sum()), float(prep.base_v.sum()), lp.lp_pos, lp.frac_class, lp.alpha, prep.tol, prep.mod_g,
        prep.mod_r, inc.value, prep.lam_up, prep.lam_dn, prep.regret, hulls.weights, hulls.values, hulls.start,
        lp.levels, max_bytes, LINK_SHARE, TAIL_MIN_CANDIDATES, TAIL_GROWTH, BYTES_PER_CANDIDATE, item_bytes, budget,
        float(z_stop))
    if code < 0:
        return None
    c, s, m, k = (int(x) for x in st)
    stats["classes"] += c
    stats["states"] += s
    stats["max_states"] = max(stats["max_states"], m)
    stats["candidates"] += k
    stats["numba"] = 1
    return int(code), pos, bool(has_state)


#: ``backend_status`` of the codes of the kernel ``solve_compiled``.
_SOLVED_ENDS = (*_SEARCH_ENDS, "lp-integral", "lp-bound", "face-bound")


def _solve_compiled(problem: MCKPProblem, start: float, use_greedy: bool, max_bytes: int) -> MCKPResult | None:
    """:func:`_search` without limits by one kernel call (``solve_compiled``: the prepare and start phases, the
    root test and the compiled search, with numpy's float sums computed bit for bit, so the same answer and
    counters as the calls from Python); ``None`` when the kernels are not loaded or the kernel leaves the answer
    to the Python path (an infeasible LP, a congruence beyond int64, a search handed back)."""
    nb = kernels()
    if nb is None or problem.n_classes == 0:
        return None
    item_bytes = 2 if problem.weights.shape[1] < 2**15 else 8
    code, pos, bound, obj, st = nb.solve_compiled(problem.weights, problem.values, problem.sizes, problem.capacity,
                                             use_greedy, REL_TOL, INT_MARGIN, FILL_ROUNDS, max_bytes, LINK_SHARE,
                                             TAIL_MIN_CANDIDATES, TAIL_GROWTH, BYTES_PER_CANDIDATE, item_bytes,
                                             FACE_BITS, FACE_CLASSES, GUESS_STOP_CLASSES)
    if code < 0:
        return None
    c, s, m, k, free, compiled = st.tolist()
    stats = {"classes": c, "states": s, "max_states": m, "candidates": k, "free_start": free, "rebuild_states": 0,
             "numba": compiled}
    return make_result(problem, pos, bound if code == nb.SOLVED_LP_INTEGRAL else None, proven=True, start=start,
                       method="core", backend_status=_SOLVED_ENDS[code], stats=stats, objective=obj)


def _rebuild(problem: MCKPProblem, prep: _Prepared, records: list[_StepRecord], target: float, last: int,
             step: Callable, count: Callable, max_bytes: int, stats: dict[str, int]) -> np.ndarray | None:
    """Rebuild the choice of an incumbent state of value ``target`` created by step ``last``.

    The steps ``0..last`` are replayed with their recorded items and bound parameters, now keeping parent links,
    but with the threshold fixed at ``target - tol`` (below the incumbent, so every state on its path, or one
    dominating it, survives; states that cannot reach ``target`` are dropped from the start, not only once the
    incumbent has grown). The replay stops at the first step whose best feasible state reaches ``target`` and
    follows the links back. Memory: the links of the states that can still reach ``target``, under
    ``max_bytes``; ``None`` when that would be exceeded. Records ``rebuild_states`` in ``stats``.
    """
    cap, tol, alpha = problem.capacity, prep.tol, prep.lp.alpha
    z = target - 2.0 * tol  # threshold z + tol = target - tol
    thr_lag = lift_threshold(z + tol, prep.mod_g, prep.mod_r)
    W = np.array([int(prep.base_w.sum())], dtype=np.int64)
    V = np.array([float(prep.base_v.sum())], dtype=np.float64)
    parents: list[np.ndarray] = []
    items: list[np.ndarray] = []
    hist = 0
    stats["rebuild_states"] = 0
    for s, rec in enumerate(records[: last + 1]):
        S, k = W.shape[0], rec.cand.shape[0]
        if hist + 16 * S + BYTES_PER_CANDIDATE * S * k > max_bytes and \
                hist + 16 * S + BYTES_PER_CANDIDATE * count(W, V, rec.dw, rec.dv, cap, thr_lag, alpha) > max_bytes:
            return None
        nW, nV, par, itm, best_v, best_p, best_j = step(W, V, rec.dw, rec.dv, cap, z, tol, alpha, *rec.bounds)
        if best_p >= 0 and best_v >= target:
            pos = prep.lp.lp_pos.copy()
            pos[rec.cls] = rec.cand[best_j]
            idx = int(best_p)
            for r in range(s - 1, -1, -1):
                pos[records[r].cls] = int(items[r][idx])
                idx = int(parents[r][idx])
            return pos
        parents.append(np.asarray(par).astype(np.int32 if S < 2**31 else np.int64))
        items.append(rec.cand[np.asarray(itm)].astype(np.int16 if problem.weights.shape[1] < 2**15 else np.int64))
        hist += parents[-1].nbytes + items[-1].nbytes
        W, V = np.asarray(nW), np.asarray(nV)
        stats["rebuild_states"] += int(W.shape[0])
    return None


def _finish(problem: MCKPProblem, prep: _Prepared, inc: Incumbent, fallback: np.ndarray, records: list[_StepRecord],
            parents: list[np.ndarray] | None, items: list[np.ndarray], kernels: tuple[Callable, Callable],
            max_bytes: int, bound: float, proven: bool, start: float, note: str,
            stats: dict[str, int]) -> MCKPResult:
    """Phase 5: the incumbent's choice (from the links between states, or rebuilt by :func:`_rebuild` when they
    were dropped) and the result.

    Should the rebuild not fit ``max_bytes``, the best full choice (``fallback``, the start solution) is
    returned, with status ``feasible`` and the proven bound (backend status ``rebuild_memory_limit``)."""
    rows = np.arange(problem.n_classes)
    if inc.positions is not None:
        pos = np.asarray(inc.positions, dtype=np.int64).copy()
    elif parents is not None:
        pos = prep.lp.lp_pos.copy()
        pos[records[inc.step].cls] = inc.item
        idx = inc.parent
        for s in range(inc.step - 1, -1, -1):
            pos[records[s].cls] = int(items[s][idx])
            idx = int(parents[s][idx])
    else:
        got = _rebuild(problem, prep, records, inc.value, inc.step, kernels[0], kernels[1], max_bytes, stats)
        if got is None:
            pos = np.asarray(fallback, dtype=np.int64).copy()
            bound = max(bound, inc.value)
            proven, note = False, "rebuild_memory_limit"
        else:
            pos = got
    if proven:
        bound = float(problem.values[rows, pos].sum())
    return make_result(problem, pos, bound, proven=proven, start=start, method="core", backend_status=note,
                       stats=stats)
