"""Benchmark suites of :mod:`lyra_solver.bench.harness`, one module per family, and what a suite declares.

A suite module builds one :class:`Suite` from the declarations here (:class:`Method`, :class:`Instance`,
:class:`Outcome`, :class:`Target`, :class:`Config`) and is registered in :data:`SUITES` by one line; the harness
(which imports this package, never the reverse) runs them. The suite modules are imported by name when they run
(:func:`load_suite`).
"""
from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SUITES", "Config", "Instance", "Method", "Outcome", "Suite", "Target", "load_suite", "outcome_of",
           "register_suite"]

#: Name of every suite -> "module:attribute" of its :class:`Suite` (imported when the suite runs). One line
#: registers a suite; ``all`` runs every one of them, in this order.
SUITES: dict[str, str] = {
    "mckp": "lyra_solver.bench.suites.mckp:SUITE",
    "reclaim": "lyra_solver.bench.suites.reclaim:SUITE",
    "placement": "lyra_solver.bench.suites.placement:SUITE",
    "decide": "lyra_solver.bench.suites.decide:SUITE",
    "packing": "lyra_solver.bench.suites.packing:SUITE",
}

def register_suite(name: str, target: str) -> None:
    """Register a suite: ``name`` -> ``"module:attribute"`` of a :class:`Suite` (the one-line way)."""
    SUITES[name] = target


# ---------------------------------------------------------------------------------------------------------
# The declarations a suite makes


@dataclass(frozen=True)
class Method:
    """A method of a family, as the tables show it.

    Attributes
    ----------
    name : str
        As the family's front door names it.
    kind : {"exact", "heuristic"}
        Exact methods prove their answers (within their limits); heuristics get a gap CDF.
    reference : bool
        A reference solver (a third-party solver the others are compared with): every row gets its speed-up
        against each reference measured on the same instance.
    """

    name: str
    kind: str = "exact"
    reference: bool = False


@dataclass(frozen=True)
class Instance:
    """One instance, as a specification that a worker rebuilds (JSON-able, so it travels to any backend).

    Attributes
    ----------
    group : str
        The table the instance belongs to.
    name : str
        Unique within its suite.
    size : float
        The x axis of the time plot (e.g. classes x items, servers).
    spec : dict
        Passed to the suite's ``build``; plain JSON values.
    methods : tuple of str, optional
        The methods that run on it (default: every method of the suite).
    """

    group: str
    name: str
    size: float
    spec: dict
    methods: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Outcome:
    """What a suite reports of one solve (the harness adds the time).

    ``objective`` and ``bound`` are plain floats in the suite's direction (``sense``); ``stats`` are the
    result's own counters (shown as columns); ``extra`` are the suite's further figures (columns too).
    """

    status: str
    objective: float | None = None
    bound: float | None = None
    backend_status: str = ""
    stats: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class Target:
    """A speed or quality target of an issue, judged from the rows of a run.

    ``judge(rows, config)`` returns ``(verdict, detail)``, the verdict one of ``met``, ``not met``,
    ``not measured here``.
    """

    issue: int
    text: str
    judge: Callable[[list[dict], dict], tuple[str, str]]


@dataclass(frozen=True)
class Config:
    """Settings of a run (everything a task needs besides its instance and method)."""

    scale: str = "full"
    seed: int = 0
    repeat: int = 3
    time_limit: float = 60.0
    threads: int = 1
    options: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Suite:
    """A family's benchmark, declared in one place.

    Attributes
    ----------
    name : str
    title : str
        Section title of the tables.
    sense : {"max", "min"}
        Direction of the objective.
    methods : callable () -> list of Method
        The family's methods (read from its registry).
    instances : callable (Config) -> list of Instance
    build : callable (spec) -> problem
        Rebuilds an instance from its specification (cached per process).
    solve : callable (problem, method, Config) -> Outcome
    targets : tuple of Target
    detail_groups : callable (group) -> bool
        Whether a group gets a row per instance (else one summary row per method).
    time_plot_groups : tuple of str, optional
        The groups of the time-against-size plot (default all: instances of one family make a readable line).
    notes : str
        Markdown printed under the suite's tables.
    """

    name: str
    title: str
    sense: str
    methods: Callable[[], list[Method]]
    instances: Callable[[Config], list[Instance]]
    build: Callable[[dict], Any]
    solve: Callable[[Any, str, Config], Outcome]
    targets: tuple[Target, ...] = ()
    detail_groups: Callable[[str], bool] = lambda group: False
    time_plot_groups: tuple[str, ...] | None = None
    notes: str = ""


def outcome_of(result: Any, *, extra: dict | None = None, note: str = "") -> Outcome:
    """The :class:`Outcome` of a family's result (any object with the shared result fields).

    ``status``, ``objective``, ``bound`` and ``backend_status`` are read as they are; a ``stats`` mapping
    (when the result has one) becomes the outcome's stats.
    """
    stats = getattr(result, "stats", None)
    if dataclasses.is_dataclass(stats) and not isinstance(stats, type):
        stats = dataclasses.asdict(stats)
    elif stats is not None and not hasattr(stats, "items") and hasattr(stats, "__struct_fields__"):  # msgspec
        stats = {k: getattr(stats, k) for k in stats.__struct_fields__}
    stats = dict(stats.items()) if hasattr(stats, "items") else {}
    obj = getattr(result, "objective", None)
    bound = getattr(result, "bound", None)
    return Outcome(status=str(getattr(result, "status", "unknown")),
                   objective=None if obj is None else float(obj),
                   bound=None if bound is None else float(bound),
                   backend_status=str(getattr(result, "backend_status", "") or ""),
                   stats={str(k): _plain(v) for k, v in stats.items()}, extra=dict(extra or {}), note=note)


def _plain(v: Any) -> Any:
    """A JSON value for numpy scalars and the like."""
    if isinstance(v, bool | int | float | str) or v is None:
        return v
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


def load_suite(name: str) -> Suite:
    """The registered suite ``name`` (imports its module)."""
    if name not in SUITES:
        raise KeyError(name)
    module, _, attr = SUITES[name].partition(":")
    return getattr(importlib.import_module(module), attr or "SUITE")
