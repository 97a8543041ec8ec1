"""Multiple-choice knapsack (MCKP): the problem type and the result type shared by every method.

The problem (DESIGN "Scale"): classes ``i = 0..n-1``, each with items ``k`` of integer weight ``w_ik >= 0``
and float value ``v_ik`` (may be negative); pick exactly one item per class so that the total weight is at
most ``capacity`` and the total value is maximal.
"""
from __future__ import annotations

import math
import numbers
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from lyra_solver.formulations._result import SolveResult, Status, relative_gap

__all__ = ["FLOAT_SOLVER_MAX_VALUE_SUM", "MCKPProblem", "MCKPResult", "check_float_solver_values", "exact_sum",
           "infeasible_result", "make_result"]

def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def _as_capacity(capacity: Any) -> int:
    if isinstance(capacity, bool) or capacity is None:
        raise ValueError(f"capacity: expected a non-negative integer, got {capacity!r}")
    integral_real = isinstance(capacity, numbers.Real) and math.isfinite(float(capacity)) \
        and float(capacity).is_integer()
    if isinstance(capacity, numbers.Integral) or integral_real:
        cap = int(capacity)
    else:
        raise ValueError(f"capacity: expected a non-negative integer, got {capacity!r}")
    if cap < 0:
        raise ValueError(f"capacity: must be >= 0, got {cap}")
    return cap


def _as_int_weights(arr: np.ndarray, name: str) -> np.ndarray:
    """Convert to int64, refusing non-integral or non-finite entries."""
    if arr.dtype.kind in "iu":
        if arr.size and arr.max() > 2**62:
            raise ValueError(f"{name}: entries too large for int64")
        return arr.astype(np.int64, copy=True)
    if arr.dtype.kind == "b":
        raise ValueError(f"{name}: expected integers, got booleans")
    try:
        f = arr.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected integers ({exc})") from None
    if not np.all(np.isfinite(f)) or not np.all(f == np.floor(f)):
        raise ValueError(f"{name}: expected integers, found a non-integral or non-finite entry")
    if f.size and np.max(np.abs(f)) > 2.0**62:
        raise ValueError(f"{name}: entries too large for int64")
    return f.astype(np.int64)


def exact_sum(arr: np.ndarray) -> int:
    """The exact integer sum of non-negative int64 entries of at most ``2**62`` each (fewer than ``2**32`` of them).

    Each entry is split at bit 31 and the two halves summed in int64, neither of which can overflow; a float sum
    would round (``2**62 - 1`` of weights summed to ``2**62``). O(n)."""
    a = np.asarray(arr, dtype=np.int64).reshape(-1)
    return (int((a >> 31).sum()) << 31) + int((a & (2**31 - 1)).sum())


#: Largest sum of per-class largest absolute values that the floating-point solvers (HiGHS, CBC) are given: their
#: tolerances and "infinite" costs are absolute (HiGHS treats a cost of 1e20 as infinite), and beyond about 5e14
#: they answered "no solution" on feasible instances; 1e12 keeps two orders of margin.
FLOAT_SOLVER_MAX_VALUE_SUM = 1e12


def check_float_solver_values(problem: MCKPProblem, method: str) -> None:
    """Refuse (``ValueError``) values a floating-point MIP solver cannot represent: per-class largest absolute
    values adding up beyond :data:`FLOAT_SOLVER_MAX_VALUE_SUM`. O(n m)."""
    if problem.n_classes == 0:
        return
    top = np.where(problem.valid_mask(), np.abs(problem.values), 0.0).max(axis=1)
    with np.errstate(over="ignore"):
        total = float(top.sum())
    if not total <= FLOAT_SOLVER_MAX_VALUE_SUM:
        raise ValueError(f"values: the largest absolute values of the classes add up to {total:.3g}, beyond "
                         f"{FLOAT_SOLVER_MAX_VALUE_SUM:g}, which method {method!r} (floating point, absolute "
                         "tolerances) cannot solve reliably; scale the values down or use method 'core', 'cpsat' "
                         "or 'dp'")


@dataclass(frozen=True, eq=False)
class MCKPProblem:
    """A multiple-choice knapsack instance as padded, read-only arrays.

    Attributes
    ----------
    weights : (n, m) int64
        ``weights[i, k]`` is the weight of item ``k`` of class ``i``; entries with ``k >= sizes[i]`` are
        padding (stored as 0) and ignored.
    values : (n, m) float64
        Item values (padding stored as 0.0).
    sizes : (n,) int64
        Number of items of each class, ``1 <= sizes[i] <= m``.
    capacity : int
        Knapsack capacity (``>= 0``; may be huge, e.g. ``10**9``; values of ``2**62`` or more, never binding,
        are stored as ``2**62``).

    Build with :meth:`from_ragged` or :meth:`from_padded`; both validate and raise ``ValueError`` naming the
    offending argument.
    """

    weights: np.ndarray
    values: np.ndarray
    sizes: np.ndarray
    capacity: int

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_padded(cls, weights: Any, values: Any, sizes: Any, capacity: Any) -> MCKPProblem:
        """Build from padded ``(n, m)`` weight and value arrays and the per-class item counts.

        Parameters
        ----------
        weights : array_like, (n, m)
            Integer weights (``>= 0`` where valid). Padding entries may hold anything.
        values : array_like, (n, m)
            Finite values where valid. Padding entries may hold anything (NaN included).
        sizes : array_like, (n,)
            Items per class, ``1 <= sizes[i] <= m``.
        capacity : int
            ``>= 0``.

        Raises
        ------
        ValueError
            On a shape mismatch, an empty class, a negative or non-integral weight, a NaN/inf value or a
            negative capacity; the message names the argument.
        """
        cap = _as_capacity(capacity)
        v_raw = np.asarray(values)
        w_raw = np.asarray(weights)
        s_raw = np.asarray(sizes)
        if w_raw.ndim != 2:
            raise ValueError(f"weights: expected a 2-D (n, m) array, got shape {w_raw.shape}")
        if v_raw.shape != w_raw.shape:
            raise ValueError(f"values: shape {v_raw.shape} does not match weights shape {w_raw.shape}")
        n, m = w_raw.shape
        if s_raw.shape != (n,):
            raise ValueError(f"sizes: expected shape ({n},), got {s_raw.shape}")
        s = _as_int_weights(s_raw, "sizes")
        if n and (np.any(s < 1)):
            i = int(np.flatnonzero(s < 1)[0])
            raise ValueError(f"sizes[{i}]: class {i} is empty (sizes must be >= 1)")
        if n and np.any(s > m):
            i = int(np.flatnonzero(s > m)[0])
            raise ValueError(f"sizes[{i}]: {int(s[i])} exceeds the padded width {m}")
        valid = np.arange(m)[None, :] < s[:, None]
        try:
            v = np.array(v_raw, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"values: expected real numbers ({exc})") from None
        v[~valid] = 0.0
        if not np.all(np.isfinite(v)):
            i, k = (int(t[0]) for t in np.nonzero(~np.isfinite(v)))
            raise ValueError(f"values[{i}][{k}]: must be finite, got {v[i, k]}")
        if w_raw.dtype.kind == "f":
            w_f = np.where(valid, w_raw, 0.0)
            w = _as_int_weights(w_f, "weights")
        else:
            w = _as_int_weights(w_raw, "weights")
            w[~valid] = 0
        if np.any(w < 0):
            i, k = (int(t[0]) for t in np.nonzero(w < 0))
            raise ValueError(f"weights[{i}][{k}]: must be >= 0, got {int(w[i, k])}")
        if n and exact_sum(w.max(axis=1)) >= 2**62:
            raise ValueError("weights: the heaviest items add up to 2**62 or more (int64 sums overflow)")
        if cap >= 2**62:
            # any capacity this large is non-binding (the total weight is below 2**62): keep int64 arithmetic
            cap = 2**62
        return cls(weights=_readonly(w), values=_readonly(v), sizes=_readonly(s), capacity=cap)

    @classmethod
    def from_table(cls, weights: np.ndarray, values: np.ndarray, sizes: np.ndarray, capacity: int) -> MCKPProblem:
        """:meth:`from_padded` for arrays that their caller built and vouches for, such as the scale step's value
        table: nothing is checked.

        The caller guarantees int64 ``(n, m)`` weights ``>= 0`` where valid, whose heaviest items add up to less
        than ``2**62``; float64 values, finite where valid; int64 sizes in ``1..m``; an integer capacity
        ``>= 0``. The arrays become the problem's own (read-only; the padding is set to 0 in place) and a
        capacity of ``2**62`` or more is stored as ``2**62``: the problem :meth:`from_padded` builds from the
        same arguments. Running time O(n m), a few array operations.
        """
        valid = np.arange(weights.shape[1])[None, :] < sizes[:, None]
        weights[~valid] = 0
        values[~valid] = 0.0
        return cls(weights=_readonly(weights), values=_readonly(values), sizes=_readonly(sizes),
                   capacity=min(int(capacity), 2**62))

    @classmethod
    def from_ragged(cls, weights: Sequence[Sequence[int]], values: Sequence[Sequence[float]],
                    capacity: Any) -> MCKPProblem:
        """Build from per-class sequences: ``weights[i]`` and ``values[i]`` list the items of class ``i``.

        Raises
        ------
        ValueError
            As :meth:`from_padded`, plus a class whose weights and values differ in length.
        """
        if isinstance(weights, np.ndarray) and weights.ndim == 2:
            weights = list(weights)
        if isinstance(values, np.ndarray) and values.ndim == 2:
            values = list(values)
        try:
            n = len(weights)
        except TypeError:
            raise ValueError("weights: expected a sequence of per-class sequences") from None
        try:
            nv = len(values)
        except TypeError:
            raise ValueError("values: expected a sequence of per-class sequences") from None
        if nv != n:
            raise ValueError(f"values: {nv} classes, but weights has {n}")
        sizes = np.zeros(n, dtype=np.int64)
        for i in range(n):
            try:
                lw, lv = len(weights[i]), len(values[i])
            except TypeError:
                raise ValueError(f"weights[{i}]: expected a sequence of items") from None
            if lw != lv:
                raise ValueError(f"values[{i}]: {lv} items, but weights[{i}] has {lw}")
            if lw == 0:
                raise ValueError(f"weights[{i}]: class {i} is empty")
            sizes[i] = lw
        m = int(sizes.max()) if n else 0
        w = np.zeros((n, m), dtype=np.int64)
        v = np.zeros((n, m), dtype=np.float64)
        for i in range(n):
            k = int(sizes[i])
            try:
                wi = np.asarray(weights[i])
            except (TypeError, ValueError, OverflowError) as exc:
                raise ValueError(f"weights[{i}]: expected integers ({exc})") from None
            if wi.dtype == object:
                try:
                    wi = np.asarray(wi.tolist(), dtype=np.float64)
                except (TypeError, ValueError, OverflowError) as exc:
                    raise ValueError(f"weights[{i}]: expected integers ({exc})") from None
            w[i, :k] = _as_int_weights(wi.reshape(-1), f"weights[{i}]")
            try:
                v[i, :k] = np.asarray(values[i], dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"values[{i}]: expected real numbers ({exc})") from None
        return cls.from_padded(w, v, sizes, capacity)

    # ------------------------------------------------------------------ helpers
    @property
    def n_classes(self) -> int:
        """Number of classes ``n``."""
        return int(self.sizes.shape[0])

    @property
    def max_items(self) -> int:
        """Padded width ``m``."""
        return int(self.weights.shape[1])

    @property
    def n_items(self) -> int:
        """Total number of (non-padding) items."""
        return int(self.sizes.sum())

    def valid_mask(self) -> np.ndarray:
        """``(n, m)`` boolean mask of the non-padding entries."""
        return np.arange(self.max_items)[None, :] < self.sizes[:, None]

    def min_weight(self) -> int:
        """Sum over classes of the lightest item's weight (the instance is feasible iff this fits)."""
        if self.n_classes == 0:
            return 0
        w = np.where(self.valid_mask(), self.weights, np.iinfo(np.int64).max)
        return int(w.min(axis=1).sum())

    def is_feasible(self) -> bool:
        """Whether some choice fits the capacity."""
        return self.min_weight() <= self.capacity

    def choice_weight(self, choice: Sequence[int]) -> int:
        """Total weight of a choice (one item index per class)."""
        c = np.asarray(choice, dtype=np.int64)
        if self.n_classes == 0:
            return 0
        return int(self.weights[np.arange(self.n_classes), c].sum())

    def choice_value(self, choice: Sequence[int]) -> float:
        """Total value of a choice (summed in class order, deterministic)."""
        c = np.asarray(choice, dtype=np.int64)
        if self.n_classes == 0:
            return 0.0
        return float(self.values[np.arange(self.n_classes), c].sum())

    def to_ragged(self) -> tuple[list[list[int]], list[list[float]]]:
        """Per-class lists of weights and values (padding removed)."""
        ws = [self.weights[i, : self.sizes[i]].tolist() for i in range(self.n_classes)]
        vs = [self.values[i, : self.sizes[i]].tolist() for i in range(self.n_classes)]
        return ws, vs


@dataclass(frozen=True, kw_only=True)
class MCKPResult(SolveResult):
    """Answer of an MCKP solver: the :class:`~lyra_solver.formulations._result.SolveResult` fields plus the choice.

    Attributes
    ----------
    status : Status
        ``optimal`` (proven), ``feasible`` (a choice, not proven optimal), ``infeasible`` (proven: the
        lightest items exceed the capacity) or ``no_solution`` (a limit was hit before any choice).
    objective : float or None
        Total value of ``choice``, recomputed from the problem's values.
    bound : float or None
        Proven upper bound on the optimum (original units), when known.
    gap : float or None
        :func:`~lyra_solver.formulations._result.relative_gap` of objective and bound.
    time_s : float
        Wall-clock seconds spent in the solver.
    method : str
        Method that produced the answer (``"core"``, ``"dp"``, ``"cpsat"``, ...).
    backend_status : str
        The backend's own status string (e.g. CP-SAT ``"OPTIMAL"``, ``"time_limit"``).
    choice : tuple of int or None
        Item index (into the problem's item list) chosen in each class.
    stats : Mapping[str, int]
        Counters of the search, when the method reports them (the core: classes that entered the core,
        states created, largest state list...); empty otherwise.
    """

    choice: tuple[int, ...] | None
    stats: Mapping[str, int] = field(default_factory=dict)


def make_result(problem: MCKPProblem, choice: Sequence[int] | np.ndarray | None, bound: float | None, *,
                proven: bool, start: float, method: str, backend_status: str,
                stats: Mapping[str, int] | None = None, objective: float | None = None) -> MCKPResult:
    """Assemble a result: recompute the objective from the problem, derive status and gap.

    ``proven`` marks a choice proven optimal by the method. Without a choice the status is ``no_solution``.
    A choice whose objective meets the bound (to :func:`relative_gap`'s 1e-9) is reported ``optimal``.
    ``objective``: the choice's value when the caller has it already, summed exactly as here (numpy's sum of
    the chosen values in class order; the compiled core's ``np_sum``).
    """
    elapsed = time.perf_counter() - start
    if choice is None:
        return MCKPResult(status=Status.NO_SOLUTION, objective=None, bound=bound, gap=None, choice=None,
                          time_s=elapsed, method=method, backend_status=backend_status, stats=dict(stats or {}))
    c = np.asarray(choice, dtype=np.int64).reshape(-1)
    ch = tuple(c.tolist())
    # problem.choice_value(ch), from the array (the same sum; converting the tuple back cost more than the sum)
    if objective is not None:
        obj = float(objective)
    else:
        obj = float(problem.values[np.arange(problem.n_classes), c].sum()) if problem.n_classes else 0.0
    if proven and (bound is None or bound < obj):
        bound = obj
    gap = relative_gap(obj, bound)
    status = Status.OPTIMAL if (proven or gap == 0.0) else Status.FEASIBLE
    if status is Status.OPTIMAL and gap is None:
        gap = 0.0
    return MCKPResult(status=status, objective=obj, bound=bound, gap=gap, choice=ch, time_s=elapsed, method=method,
                      backend_status=backend_status, stats=dict(stats or {}))


def infeasible_result(start: float, method: str, backend_status: str = "infeasible") -> MCKPResult:
    """The result for a proven-infeasible instance."""
    return MCKPResult(status=Status.INFEASIBLE, objective=None, bound=None, gap=None, choice=None,
                      time_s=time.perf_counter() - start, method=method, backend_status=backend_status)
