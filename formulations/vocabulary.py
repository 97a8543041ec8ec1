"""The engine's vocabularies, each defined once: server pools and states, placement tiers, queue orders and the
values of every round option.

Types (:mod:`lyra_solver.types`), the command line (:mod:`lyra_solver.cli`), the validator and the pipeline all
read them from here, so a new value is added in one place. Each vocabulary is a ``Literal`` type (what msgspec
decodes and what the JSON Schemas list as an ``enum``) with the tuple of its values beside it, or an ``IntEnum``
where the pipeline works on integer codes in arrays.

Values are case-sensitive: ``"Exact"`` is not ``"exact"`` (the formats are JSON, whose strings are exact; the
error names the allowed values).

This module sits in ``formulations`` because every layer may import it (``heuristics`` uses the queue orders and
placement tiers); it imports only the solve statuses and the MCKP method registry.
"""
from __future__ import annotations

from enum import IntEnum
from typing import Literal, get_args

from lyra_solver.formulations._result import Status
from lyra_solver.formulations.mckp import METHODS as MCKP_METHODS

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
QueueOrder = Literal["sjf", "fifo", "las"]
QUEUE_ORDERS: tuple[str, ...] = get_args(QueueOrder)

#: Elastic allocation: ``exact`` (the fastest exact MCKP method, ``auto`` of :data:`MCKP_METHODS`) or one of
#: the two MCKP heuristics of the same names.
Allocation = Literal["exact", "greedy", "hull"]
ALLOCATIONS: tuple[str, ...] = get_args(Allocation)
#: The MCKP method that runs each allocation.
ALLOCATION_METHOD: dict[str, str] = {"exact": "auto", "greedy": "greedy", "hull": "hull"}

#: Server reclamation: Lyra's greedy or the exact ILP.
ReclaimOption = Literal["greedy", "exact"]
RECLAIMS: tuple[str, ...] = get_args(ReclaimOption)

#: Placement: best fit decreasing or the placement ILP.
PlacementOption = Literal["bfd", "exact"]
PLACEMENTS: tuple[str, ...] = get_args(PlacementOption)

#: GPU sharing after placement (step 6): ``off`` (default), Gimbal's greedy, Lucid's threshold pairing,
#: Gandiva's random pairing, or the exact assignment (CP-SAT).
Packing = Literal["off", "gimbal", "lucid", "random", "exact"]
PACKINGS: tuple[str, ...] = get_args(Packing)

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
#: placement methods (``bfd-fallback``: the ILP gave no answer), the packing methods (``cpsat`` for ``exact``).
STEP_METHODS: tuple[str, ...] = ("none", "greedy", "cpsat", "cbc", "bfd", "bfd-fallback", "gimbal", "lucid",
                                 "random") + tuple(
    f"mckp-{m}{suffix}" for suffix in ("", "-thinned") for m in MCKP_METHODS)
StepMethod = Literal[STEP_METHODS]  # type: ignore[valid-type]


def check_option(name: str, value: object, allowed: tuple[str, ...]) -> str:
    """``value`` if it is one of ``allowed``; else :class:`ValueError` naming the option and the allowed values.

    The caller turns it into its own error type (``InputError`` with a field path in the engine).
    """
    if isinstance(value, str) and value in allowed:
        return value
    raise ValueError(f"{name}: unknown value {value!r}; expected one of {', '.join(allowed)}")
