"""The one loader of the package's numba kernels (the ``fast`` extra), and the rule that decides when to load them.

Every compiled kernel lives at module level in :mod:`lyra_solver.formulations.mckp._nbkernels` (so that numba's
disk cache holds every one of them: a kernel made in a closure is compiled again in every process) and is handed
out by :func:`kernels` only; each has a numpy twin in the module that calls it, which returns the same arrays,
element for element (the same candidates, compared and rounded by the same float expressions, ties broken by the
same rules), so the path taken changes the time, never the answer:

* the exact core's search (:mod:`lyra_solver.formulations.mckp.core`): ``count``, ``step``, ``scan`` (one core
  step is a single k-way merge of the ``k`` weight-sorted candidate lists, one per item of the entering class,
  that updates the incumbent, fathoms by the upper bound and drops dominated candidates in one pass:
  :math:`O(S k^2)` time, :math:`O(S + |K|)` resident memory for the ``|K|`` kept states), and ``select_items``;
  ``search``, the whole loop of core steps in one call (the same steps as the Python loop of ``core._search``,
  which it hands the search back to where links would be dropped or a limit may be hit; its steps run in
  ``_run_steps``, whose arrays never change, so that numba counts no reference in the loop);
* the front door's checks (:func:`lyra_solver.formulations.mckp.solve_mckp`): ``front_checks``, once loaded;
* the core's prepare and start phases: ``prepare_hulls``, ``class_items``, ``fit_prefix`` (and
  ``fit_prefix_short`` for the greedy rounds), ``lp_levels``, ``regrets``, ``greedy_fill``, ``face_fill``
  (twins ``core._face_fill_numpy`` and, with ``layers=1``, ``core._face_fill_loss1_numpy``);
* ``solve_compiled``, a solve without limits in one call (the prepare and start phases, the root test and the
  runs of ``search``; numpy's float sums by ``np_sum``, bit for bit), which the core takes whenever it can;
* the greedy heuristic's sequential scan (:mod:`lyra_solver.formulations.mckp.greedy`): ``greedy_scan``;
* the upper hulls' sweep of :func:`lyra_solver.formulations.mckp._lp.upper_hull` (the greedy's LP bound):
  ``hull_stacks``.

When to load (cold start, issue 22): importing numba and loading the kernels from their disk cache costs about
0.9 s of a new process (2 shared cores), far more than a solve of a thousand classes by the numpy twins (a few
milliseconds). So the default (``use_numba=None``) takes the compiled kernels only

* when they are loaded in this process already (:func:`loaded`: by :func:`load`, or by an earlier decision
  below), then for every size;
* when the problem has at least :data:`LOAD_MIN_ITEMS` items (the kernels pay on one solve of that size);
* once this process has spent :data:`LOAD_AFTER_S` seconds in completed numpy-path solves of the core or the
  greedy (:func:`charge`: a long-running caller, such as the simulator or a benchmark, gains from then on);
* within one solve, once its own numpy search has run :data:`SWITCH_AFTER_S` seconds (a search that long is
  likely to run longer: the load cost is then risked once, as in ski rental); the twins give the same arrays, so
  switching mid-search changes nothing but the time.

The answer never depends on the path; only ``stats["numba"]`` and the time do. ``LYRA_NO_NUMBA`` (any non-empty
value) disables the kernels.
"""
from __future__ import annotations

import os
from types import ModuleType

__all__ = ["LOAD_AFTER_S", "LOAD_MIN_ITEMS", "SWITCH_AFTER_S", "charge", "kernels", "load", "loaded",
           "numba_available", "want"]

#: Problems with at least this many items load the kernels on their first solve (a solve of that size by the
#: numpy twins costs about what loading the kernels does).
LOAD_MIN_ITEMS = 200_000

#: Seconds of completed numpy-path solves in a process after which the next solve loads the kernels: about what
#: loading them costs (ski rental: a process that has spent that much is likely to spend more, and it never pays
#: more than twice the better choice); a single command on a thousand classes or servers stays below it.
LOAD_AFTER_S = 0.5

#: Seconds of one solve's numpy search after which it loads the kernels and continues with them.
SWITCH_AFTER_S = 0.5

_MODULE: ModuleType | None = None
_TRIED = False
_SPENT = 0.0


def numba_available() -> bool:
    """Whether numba is installed and not disabled by the environment variable ``LYRA_NO_NUMBA``.

    Depends on the installation only (never on what ran before in the process); imports nothing.
    """
    if os.environ.get("LYRA_NO_NUMBA"):
        return False
    import importlib.util

    return importlib.util.find_spec("numba") is not None


def kernels() -> ModuleType | None:
    """The compiled kernels (the module :mod:`lyra_solver.formulations.mckp._nbkernels`), imported once per
    process (from numba's disk cache, or compiled on a kernel's first call), or ``None`` when
    :func:`numba_available` is false or numba fails to import."""
    global _MODULE, _TRIED
    if _TRIED:
        return _MODULE
    _TRIED = True
    if not numba_available():
        return None
    try:
        # the submodule by its full name: the package (whose front door imports this module) is not imported here
        import lyra_solver.formulations.mckp._nbkernels as _nbkernels
    except ImportError:
        return None
    _MODULE = _nbkernels
    return _MODULE


def load() -> bool:
    """Load the kernels now (e.g. at the start of a long-running process, so that every later solve, small ones
    included, takes them); ``True`` when they are available."""
    return kernels() is not None


def loaded() -> bool:
    """Whether the kernels are loaded in this process."""
    return _MODULE is not None


def want(n_items: int) -> bool:
    """The default path of a solve of ``n_items`` items: compiled when loaded already, when the problem is
    large (:data:`LOAD_MIN_ITEMS`) or when this process has spent :data:`LOAD_AFTER_S` in numpy-path solves
    (and numba is available). See the module docstring."""
    if _MODULE is not None:
        return True
    if _TRIED or not (n_items >= LOAD_MIN_ITEMS or _SPENT >= LOAD_AFTER_S):
        return False
    return numba_available()


def charge(seconds: float) -> None:
    """Record ``seconds`` of a completed numpy-path solve that took the default path (see :func:`want`)."""
    global _SPENT
    _SPENT += max(float(seconds), 0.0)
