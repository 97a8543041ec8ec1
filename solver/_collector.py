"""The cyclic garbage collector paused around work that makes many acyclic containers (:class:`Paused`), and the
same as a decorator (:func:`paused`): the parse of a snapshot and the round both use it.

A round or a parse allocates hundreds of thousands of small acyclic objects (dicts, tuples, structs); their
allocation bursts trigger collections that rescan every live object, a tenth to a fifth of the work on 50,000
jobs. Neither makes reference cycles, so the pause frees nothing later than it would be freed anyway. A caller
who turned the collector off keeps it off; threads pausing at once leave it on when the first to pause it resumes
it (never off for good).
"""
from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["Paused", "paused"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class Paused:
    """``with Paused():`` the collector off for the duration (if it was on), on again after, whatever happens.

    ``promote``: the containers made inside then skip the young collections. The application's young objects are
    collected first (``gc.collect(1)``: what the young generations hold, a few thousand objects at the default
    thresholds, its survivors moved up as a collection moves them), and at the end everything tracked moves to the
    oldest generation (:func:`gc.freeze` then :func:`gc.unfreeze`: two list splices, O(1)). Otherwise the first
    allocation after a snapshot's parse starts a young collection that scans every container the parse made
    (27,000 on a 50,000-job snapshot: 10-18 ms, a tenth of the parse) only to find no garbage: the snapshot is
    acyclic and lives until its caller drops it, when reference counting frees it. Not done where the application
    keeps objects frozen itself (:func:`gc.get_freeze_count` not 0), which ``unfreeze`` would undo.

    One instance per ``with`` (it holds whether it paused). A class, not a generator context manager: entering and
    leaving cost about a third as much, on every simulator round.
    """

    __slots__ = ("_promote", "_paused")

    def __init__(self, *, promote: bool = False) -> None:
        self._promote = promote
        self._paused = False

    def __enter__(self) -> Paused:
        if gc.isenabled():
            self._promote = self._promote and gc.get_freeze_count() == 0
            if self._promote:
                gc.collect(1)
            gc.disable()
            self._paused = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._paused:
            if self._promote and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def paused(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """``func`` run inside :class:`Paused` (no promotion)."""
    @functools.wraps(func)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with Paused():
            return func(*args, **kwargs)
    return run
