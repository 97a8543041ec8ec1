"""Compiled kernels of the exact MCKP core (:mod:`lyra_solver.formulations.mckp.core`), numba (the ``fast`` extra).

Both kernels have the signature of their numpy twins in :mod:`lyra_solver.formulations.mckp.core` and return the
same arrays, element for element (the same candidates, compared and rounded by the same float expressions, ties
broken by the same rules), so the path taken changes the time, never the answer:

* ``count(W, V, dw, dv, cap, thr, alpha)``: how many candidates ``(state h, item j)`` pass the Lagrangian
  pre-test ``(V[h] + alpha (cap - W[h])) - (alpha dw[j] - dv[j]) > thr`` (the memory guard's input);
* ``step(W, V, dw, dv, cap, z, tol, alpha, lam_up, lam_dn, r_next, xu, yu, xd, yd, mod_g, mod_r)``: one core step (see
  :func:`lyra_solver.formulations.mckp.core.step_numpy` for the definition). Here it is a single k-way merge of
  the ``k`` weight-sorted candidate lists (one per item of the entering class) that updates the incumbent,
  fathoms by the upper bound and drops dominated candidates in one pass: :math:`O(S k^2)` time (a scan of the
  ``k`` list heads per candidate; ``k`` is small after the class's reduction), :math:`O(S + |K|)` resident
  memory for the ``|K|`` kept states (the outputs are reserved for all ``S k`` pairs but left uninitialised, so
  only the pages written are resident; the candidates are never materialised);
* ``scan(W, V, cap, alpha, lam_up, lam_dn, r_next, xu, yu, xd, yd, thr)``: the states' largest bound, whether an
  upgrade / a downgrade can still improve one, their largest Lagrangian value (twin of
  :func:`lyra_solver.formulations.mckp.core.scan_numpy`).

Imported lazily; :func:`get_kernels` returns ``None`` when numba is missing or ``LYRA_NO_NUMBA`` is set. The
compiled code is cached on disk (``cache=True``), so a new process loads it instead of compiling.
"""
from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["get_kernels", "get_phase_kernels", "get_prepare", "numba_available"]

_KERNELS: tuple[Callable, Callable, Callable] | None = None
_TRIED = False


def numba_available() -> bool:
    """Whether numba is installed and not disabled by the environment variable ``LYRA_NO_NUMBA``.

    Depends on the installation only (never on what ran before in the process).
    """
    if os.environ.get("LYRA_NO_NUMBA"):
        return False
    import importlib.util

    return importlib.util.find_spec("numba") is not None


def _make_kernels() -> tuple[Callable, Callable, Callable]:
    from lyra_solver.formulations.mckp import _nbkernels as nb

    return nb.count, nb.step, nb.scan


def get_kernels() -> tuple[Callable, Callable, Callable] | None:
    """The compiled ``(count, step, scan)`` kernels (loaded from numba's disk cache or compiled once per process), or
    ``None`` when :func:`numba_available` is false."""
    global _KERNELS, _TRIED
    if _TRIED:
        return _KERNELS
    _TRIED = True
    if not numba_available():
        return None
    try:
        _KERNELS = _make_kernels()
    except ImportError:
        _KERNELS = None
    return _KERNELS


_PREP: tuple[Callable, Callable, Callable] | None = None
_PREP_TRIED = False


def _make_prepare() -> tuple[Callable, Callable, Callable]:
    from lyra_solver.formulations.mckp import _nbkernels as nb

    return nb.prepare_hulls, nb.class_items, nb.select_items


def get_prepare() -> tuple[Callable, Callable, Callable] | None:
    """The compiled ``(prepare_hulls, class_items, select_items)`` kernels (hulls of every class in one pass; the
    undominated items of one entering class; its items kept for a core step), or ``None`` when
    :func:`numba_available` is false."""
    global _PREP, _PREP_TRIED
    if _PREP_TRIED:
        return _PREP
    _PREP_TRIED = True
    if not numba_available():
        return None
    try:
        _PREP = _make_prepare()
    except ImportError:
        _PREP = None
    return _PREP


_PHASE: tuple[Callable, Callable, Callable, Callable] | None = None
_PHASE_TRIED = False


def _make_phase_kernels() -> tuple[Callable, Callable, Callable, Callable]:
    from lyra_solver.formulations.mckp import _nbkernels as nb

    return nb.fit_prefix, nb.lp_levels, nb.regrets, nb.greedy_fill


def get_phase_kernels() -> tuple[Callable, Callable, Callable, Callable] | None:
    """The compiled ``(fit_prefix, lp_levels, regrets, greedy_fill)`` kernels of the core's prepare and start
    phases, or ``None`` when :func:`numba_available` is false."""
    global _PHASE, _PHASE_TRIED
    if _PHASE_TRIED:
        return _PHASE
    _PHASE_TRIED = True
    if not numba_available():
        return None
    try:
        _PHASE = _make_phase_kernels()
    except ImportError:
        _PHASE = None
    return _PHASE
