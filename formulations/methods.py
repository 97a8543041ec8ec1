"""The method tables: one per family (MCKP, reclaim, placement, joint placement, packing, queue orders).

A row names a method, its entry point (``"module:function"``), whether it is exact or a heuristic, what other name
it answers to, and whether the engine (``decide``) may run it. Every list of method names is derived from these
tables: the front doors' registries, aliases and ``METHODS``; the round options' values and the method names a
decision reports (:mod:`lyra_solver.formulations.vocabulary`, including the derived ``mckp-<m>-thinned`` and
``bfd-fallback``); so the command line's choices and the JSON Schemas' enums; the benchmark suites' method lists;
and the tests' parametrisations. Adding a method is one module and one row here
(``tests/formulations/test_method_tables.py`` adds a toy one and checks that every list picks it up).

Entry points are strings, resolved only when a method runs: a row of a heuristic of :mod:`lyra_solver.heuristics`
is data here (``formulations`` imports no other folder), and the family's front door imports its module by name
when it is asked for it (:mod:`lyra_solver.formulations._registry`), so the front door runs every row of its table,
heuristics included, and ``decide`` calls every method through it. A relative module (no dot) is one of the
family's package, the front door's *own* methods, which may assume the door's checks and trivial answers; an
absolute one (``lyra_solver.heuristics.reclaim``) a heuristic of ``lyra_solver.heuristics``, a self-contained
public function that the door hands every instance (:meth:`MethodTable.is_own`).

This module imports nothing of the project beyond the standard library, so every layer may read it cheaply.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["JOINT", "MCKP", "PACKING", "PLACEMENT", "QUEUE", "RECLAIM", "TABLES", "MethodRow", "MethodTable",
           "unique"]


@dataclass(frozen=True)
class MethodRow:
    """One method of a family.

    Attributes
    ----------
    name : str
        The name a caller passes (``method=``) and a result reports.
    entry : str
        ``"module:function"``; a module without a dot is under the family's package. Empty for an alias.
    kind : {"exact", "heuristic"}
        Exact methods prove their answers (within their limits); heuristics are measured against them.
    alias_of : str, optional
        This name is another name of that row's method (its entry and kind are that row's).
    fixed : mapping
        Keyword arguments the entry point always gets (e.g. the ILP's backend).
    reference : bool
        A third-party solver: the benchmarks measure every other method's speed-up against it.
    decide : bool
        ``decide`` may run it (its name can appear in a decision's ``summary.methods``; a heuristic with it set is a
        value of the family's round option).
    """

    name: str
    entry: str = ""
    kind: Literal["exact", "heuristic"] = "exact"
    alias_of: str | None = None
    fixed: Mapping[str, Any] = field(default_factory=dict)
    reference: bool = False
    decide: bool = False


@dataclass(frozen=True)
class MethodTable:
    """The methods of one family, in the order every derived list shows them.

    Attributes
    ----------
    family : str
    package : str
        Where relative entry points live (the front door's package).
    rows : tuple of MethodRow
    """

    family: str
    package: str
    rows: tuple[MethodRow, ...]

    def row(self, name: str) -> MethodRow:
        """The row of ``name``, an alias resolved to the row it names (``KeyError`` if unknown)."""
        for r in self.rows:
            if r.name == name:
                return self.row(r.alias_of) if r.alias_of else r
        raise KeyError(name)

    def is_own(self, r: MethodRow) -> bool:
        """Whether ``r`` is one of the front door's own methods (its entry point is in the family's package): the
        door answers the trivial cases before it calls one. The other rows name self-contained functions of
        :mod:`lyra_solver.heuristics`, which the door runs on every instance (see
        :func:`lyra_solver.formulations._registry.own`)."""
        target = self.row(r.name)
        return "." not in target.entry.partition(":")[0]

    def names(self, *, kind: str | None = None, decide: bool | None = None, own: bool | None = None,
              aliases: bool = True) -> tuple[str, ...]:
        """The names of the rows that match every filter given (an alias by the row it names), in table order."""
        out = []
        for r in self.rows:
            target = self.row(r.name)
            if (r.alias_of and not aliases) or (kind is not None and target.kind != kind) or (
                    decide is not None and target.decide != decide) or (
                    own is not None and self.is_own(r) != own):
                continue
            out.append(r.name)
        return tuple(out)

    def aliases(self) -> dict[str, str]:
        """Alias -> the name of the row it stands for."""
        return {r.name: r.alias_of for r in self.rows if r.alias_of}

    def registry(self) -> dict[str, tuple[str, str, dict[str, Any]]]:
        """The front door's registry: name -> (module, function, fixed arguments), for every non-alias row; the
        module is under :attr:`package` when it has no dot (the door's own methods), else absolute (a heuristic of
        :mod:`lyra_solver.heuristics`)."""
        out = {}
        for r in self.rows:
            if not r.alias_of:
                module, _, function = r.entry.partition(":")
                out[r.name] = (module, function, dict(r.fixed))
        return out

    def function(self, name: str) -> Callable[..., Any]:
        """The entry point of ``name`` (imported now), with its fixed arguments bound."""
        import functools

        r = self.row(name)
        module, _, function = r.entry.partition(":")
        fn = getattr(importlib.import_module(module if "." in module else f"{self.package}.{module}"), function)
        return functools.partial(fn, **r.fixed) if r.fixed else fn


def unique(*groups: tuple[str, ...]) -> tuple[str, ...]:
    """The names of ``groups`` in order, each once."""
    seen: dict[str, None] = {}
    for g in groups:
        seen.update(dict.fromkeys(g))
    return tuple(seen)


_Row = MethodRow

#: Multiple-choice knapsack (:func:`lyra_solver.formulations.mckp.solve_mckp`); ``decide`` may run every method
#: (``allocation`` offers ``exact``, i.e. ``auto``, and the heuristics; a decision reports ``mckp-<name>``).
MCKP = MethodTable("mckp", "lyra_solver.formulations.mckp", (
    _Row("auto", alias_of="core"),
    _Row("core", "core:solve_core", decide=True),
    _Row("bb", alias_of="core"),
    _Row("dp", "dp:solve_dp", decide=True),
    _Row("cpsat", "cpsat:solve_cpsat", reference=True, decide=True),
    _Row("cbc", "cbc:solve_cbc", reference=True, decide=True),
    _Row("highs", "highs:solve_highs", reference=True, decide=True),
    _Row("greedy", "greedy:solve_greedy", "heuristic", decide=True),
    _Row("hull", "hull:solve_hull", "heuristic", decide=True),
    _Row("gpu", "gpu:solve_gpu", decide=True),
))

#: Server reclamation (:func:`lyra_solver.formulations.reclaim.solve_reclaim` runs every row).
RECLAIM = MethodTable("reclaim", "lyra_solver.formulations.reclaim", (
    _Row("cpsat", "ilp:solve_ilp", fixed={"backend": "cpsat"}, reference=True, decide=True),
    _Row("cbc", "ilp:solve_ilp", fixed={"backend": "cbc"}, reference=True, decide=True),
    _Row("greedy", "lyra_solver.heuristics.reclaim:greedy_reclaim", "heuristic", decide=True),
    _Row("fewest-jobs", "lyra_solver.heuristics.reclaim:fewest_jobs_reclaim", "heuristic"),
    _Row("random", "lyra_solver.heuristics.reclaim:random_reclaim", "heuristic"),
))

#: Placement (:func:`lyra_solver.formulations.placement.solve_placement` runs every row). When the exact model
#: gives no answer, ``decide`` keeps the heuristic's placement and reports ``<heuristic>-fallback``.
PLACEMENT = MethodTable("placement", "lyra_solver.formulations.placement", (
    _Row("cpsat", "ilp:solve_ilp", fixed={"backend": "cpsat"}, reference=True, decide=True),
    _Row("cbc", "ilp:solve_ilp", fixed={"backend": "cbc"}, reference=True, decide=True),
    _Row("bfd", "lyra_solver.heuristics.placement:best_fit_decreasing", "heuristic", decide=True),
))

#: Joint placement of a whole round (:func:`lyra_solver.formulations.placement.solve_joint`).
JOINT = MethodTable("joint", "lyra_solver.formulations.placement", (
    _Row("cpsat", "joint:solve_joint_ilp", fixed={"backend": "cpsat"}, reference=True),
    _Row("cbc", "joint:solve_joint_ilp", fixed={"backend": "cbc"}, reference=True),
))

#: GPU sharing (:func:`lyra_solver.formulations.packing.solve_packing` runs every row; ``decide``'s ``exact`` is
#: CP-SAT).
PACKING = MethodTable("packing", "lyra_solver.formulations.packing", (
    _Row("exact", alias_of="cpsat"),
    _Row("cpsat", "cpsat:solve_cpsat", decide=True),
    _Row("brute", "brute:solve_brute"),
    _Row("gimbal", "lyra_solver.heuristics.packing:gimbal_greedy", "heuristic", decide=True),
    _Row("lucid", "lyra_solver.heuristics.packing:lucid_pairing", "heuristic", decide=True),
    _Row("random", "lyra_solver.heuristics.packing:random_pairing", "heuristic", decide=True),
))

#: Admission orders of queued jobs (:func:`lyra_solver.heuristics.queue.queue_order`).
QUEUE = MethodTable("queue", "lyra_solver.heuristics", tuple(
    _Row(order, "lyra_solver.heuristics.queue:queue_order", "heuristic", fixed={"order": order}, decide=True)
    for order in ("sjf", "fifo", "las")))

#: Every table, by family.
TABLES: dict[str, MethodTable] = {t.family: t for t in (MCKP, RECLAIM, PLACEMENT, JOINT, PACKING, QUEUE)}
