"""The engine's vocabularies, each defined once: server pools and states, placement tiers, queue orders and the
values of every round option.

Types (:mod:`lyra_solver.types`), the command line (:mod:`lyra_solver.cli`), the validator and the pipeline all
read them from here, so a new value is added in one place. Each vocabulary is a ``Literal`` type (what msgspec
decodes and what the JSON Schemas list as an ``enum``) with the tuple of its values beside it, or an ``IntEnum``
where the pipeline works on integer codes in arrays.

Values are case-sensitive: ``"Exact"`` is not ``"exact"`` (the formats are JSON, whose strings are exact; the
error names the allowed values).

The values that name methods (queue orders, allocation, reclaim, placement and packing options, and the method
names a decision reports) are derived from the method tables (:mod:`lyra_solver.formulations.methods`). Their
``Literal`` types are spelled out for type checkers (under ``TYPE_CHECKING``; a test keeps them equal to the
tables) and built from the tables at run time, which msgspec and the JSON Schemas read.

This module sits in ``formulations`` because every layer may import it (``heuristics`` uses the queue orders and
placement tiers); it imports only the solve statuses and the method tables.
"""
from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Literal, get_args

import lyra_solver.formulations.methods as _methods
from lyra_solver.formulations._result import Status
from lyra_solver.formulations.methods import unique

#: Every name the MCKP front door accepts (:data:`lyra_solver.formulations.methods.MCKP`).
MCKP_METHODS: tuple[str, ...] = _methods.MCKP.names()

__all__ = [
    "ALLOCATIONS", "ALLOCATION_METHOD", "MCKP_METHODS", "OBJECTIVES", "Objective", "PACKINGS", "PACKING_POLICIES",
    "PLACEMENTS", "QUEUE_ORDERS", "RECLAIMS", "SERVER_POOLS", "PackingPolicy",
    "SERVER_STATES", "STATUSES", "STEP_METHODS", "Allocation", "Packing", "PlacementOption", "QueueOrder",
    "ReclaimOption", "ServerKind", "ServerPool", "ServerState", "StatusName", "StepMethod", "Tier",
    "check_option",
]

# --------------------------------------------------------------------------------------------- servers
ServerPool = Literal["training", "inference"]
SERVER_POOLS: tuple[str, ...] = get_args(ServerPool)

#: State of an inference server: busy serving (unusable), idle (may be loaned) or loaned to training.
ServerState = Literal["serving", "idle", "loaned"]
SERVER_STATES: tuple[str, ...] = get_args(ServerState)


class ServerKind(IntEnum):
    """A server's pool and state as one integer code (the pipeline keeps them in an ``int8`` array)."""

    TRAINING = 0
    LOANED = 1
    IDLE = 2
    SERVING = 3

    @classmethod
    def of(cls, pool: str, state: str | None) -> ServerKind:
        return cls.TRAINING if pool == "training" else cls[state.upper()]


class Tier(IntEnum):
    """Placement tiers of the servers training may use, in the order base demand prefers them."""

    TRAINING = 0  # training servers
    LOANED = 1  # inference servers loaned before this round and not reclaimed
    BORROWED = 2  # idle inference servers borrowed this round


# --------------------------------------------------------------------------------------------- options
#: Admission order of queued jobs: shortest T(min) first, first in first out, least attained service.
QUEUE_ORDERS: tuple[str, ...] = _methods.QUEUE.names()

#: Elastic allocation: ``exact`` (the fastest exact MCKP method, ``auto`` of :data:`MCKP_METHODS`) or one of
#: the MCKP heuristics of the same names.
ALLOCATIONS: tuple[str, ...] = ("exact", *_methods.MCKP.names(kind="heuristic", decide=True))
#: The MCKP method that runs each allocation.
ALLOCATION_METHOD: dict[str, str] = {"exact": "auto", **{h: h for h in ALLOCATIONS[1:]}}

#: Server reclamation: Lyra's greedy or the exact ILP.
RECLAIMS: tuple[str, ...] = (*_methods.RECLAIM.names(kind="heuristic", decide=True), "exact")

#: Placement: best fit decreasing or the placement ILP.
PLACEMENTS: tuple[str, ...] = (*_methods.PLACEMENT.names(kind="heuristic", decide=True), "exact")

#: GPU sharing after placement (step 6): ``off`` (default), Gimbal's greedy, Lucid's threshold pairing,
#: Gandiva's random pairing, or the exact assignment (CP-SAT).
PACKINGS: tuple[str, ...] = ("off", *_methods.PACKING.names(kind="heuristic", decide=True), "exact")

if TYPE_CHECKING:  # the same values, spelled out for type checkers
    QueueOrder = Literal["sjf", "fifo", "las"]
    Allocation = Literal["exact", "greedy", "hull"]
    ReclaimOption = Literal["greedy", "exact"]
    PlacementOption = Literal["bfd", "exact"]
    Packing = Literal["off", "gimbal", "lucid", "random", "exact"]
else:
    QueueOrder = Literal[QUEUE_ORDERS]
    Allocation = Literal[ALLOCATIONS]
    ReclaimOption = Literal[RECLAIMS]
    PlacementOption = Literal[PLACEMENTS]
    Packing = Literal[PACKINGS]

#: Objective of packing (Gimbal's policies).
PackingPolicy = Literal["jct", "deadline", "makespan"]
PACKING_POLICIES: tuple[str, ...] = get_args(PackingPolicy)

#: The allocation objective (the value table's formula, :mod:`lyra_solver.objectives`); the first is the default,
#: Lyra's JCT reduction.
Objective = Literal["jct-reduction", "pollux", "srpt", "hesrpt"]
OBJECTIVES: tuple[str, ...] = get_args(Objective)

# --------------------------------------------------------------------------------------------- reports
#: Solve statuses as written in answers and decision summaries.
STATUSES: tuple[str, ...] = tuple(s.value for s in Status)
StatusName = Literal[STATUSES]  # type: ignore[valid-type]

#: Method names a decision's ``summary.methods`` may report, per step: ``none`` (nothing to do), the reclaim
#: methods, ``mckp-<method>`` for allocation and ``mckp-<method>-thinned`` when the value table was thinned, the
#: placement methods (``<heuristic>-fallback``: the ILP gave no answer), the packing methods (``cpsat`` for
#: ``exact``): every row of the tables that ``decide`` may run.
STEP_METHODS: tuple[str, ...] = unique(
    ("none",),
    _methods.RECLAIM.names(kind="heuristic", decide=True), _methods.RECLAIM.names(kind="exact", decide=True),
    _methods.PLACEMENT.names(kind="heuristic", decide=True),
    tuple(f"{h}-fallback" for h in _methods.PLACEMENT.names(kind="heuristic", decide=True)),
    _methods.PLACEMENT.names(kind="exact", decide=True),
    _methods.PACKING.names(kind="heuristic", decide=True), _methods.PACKING.names(kind="exact", decide=True,
                                                                                aliases=False),
    tuple(f"mckp-{m}{suffix}" for suffix in ("", "-thinned") for m in MCKP_METHODS))
StepMethod = Literal[STEP_METHODS]  # type: ignore[valid-type]


def check_option(name: str, value: object, allowed: tuple[str, ...]) -> str:
    """``value`` if it is one of ``allowed``; else :class:`ValueError` naming the option and the allowed values.

    The caller turns it into its own error type (``InputError`` with a field path in the engine).
    """
    if isinstance(value, str) and value in allowed:
        return value
    raise ValueError(f"{name}: unknown value {value!r}; expected one of {', '.join(allowed)}")
