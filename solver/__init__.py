"""lyra-solver: the engine's face. Snapshot and decision types, JSON I/O and validation, value tables,
``decide`` and its steps (:mod:`lyra_solver.steps`: reclaim, loan, admit, scale, place, pack), applying a decision,
the checker.

Everything a scheduler needs is importable from here::

    from lyra_solver import Snapshot, Server, Job, PowerThroughput, decide, encode, check_decision

The library logs to the ``lyra_solver`` logger and, as a library should, writes nothing unless the application
configures logging (a ``NullHandler`` is attached).
"""
import logging

from lyra_solver.apply import apply_decision
from lyra_solver.check import Violation, check_decision, check_decision_text, format_violations
from lyra_solver.errors import InputError
from lyra_solver.formulations.vocabulary import (
    ALLOCATIONS,
    OBJECTIVES,
    PACKINGS,
    PLACEMENTS,
    QUEUE_ORDERS,
    RECLAIMS,
    SERVER_POOLS,
    SERVER_STATES,
)
from lyra_solver.io import encode, load_snapshot, parse_decision, parse_snapshot
from lyra_solver.pipeline import decide
from lyra_solver.types import (
    FORMAT_VERSION,
    Decision,
    Inference,
    Job,
    JobDecision,
    Options,
    PackingGroup,
    PackingProfile,
    PowerThroughput,
    ProfileThroughput,
    Server,
    ServerDecision,
    Snapshot,
    Summary,
    TableThroughput,
    Throughput,
    canonical,
)
from lyra_solver.validate import validate_snapshot

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "ALLOCATIONS", "FORMAT_VERSION", "OBJECTIVES", "PACKINGS", "PLACEMENTS", "QUEUE_ORDERS", "RECLAIMS", "SERVER_POOLS",
    "SERVER_STATES", "Decision", "Inference", "InputError", "Job", "JobDecision", "Options", "PackingGroup",
    "PackingProfile", "PowerThroughput", "ProfileThroughput", "Server", "ServerDecision", "Snapshot", "Summary",
    "TableThroughput", "Throughput", "Violation", "apply_decision", "canonical", "check_decision",
    "check_decision_text", "decide", "encode", "format_violations", "load_snapshot", "parse_decision",
    "parse_snapshot", "validate_snapshot",
]
__version__ = "0.1.0"
