"""lyra-solver: the engine's face. Snapshot and decision types, JSON I/O, value tables, ``decide``, the checker."""
from lyra_solver.apply import apply_decision
from lyra_solver.errors import InputError
from lyra_solver.io import encode, load_snapshot, parse_snapshot
from lyra_solver.pipeline import decide
from lyra_solver.types import Decision, Snapshot

__all__ = ["Decision", "InputError", "Snapshot", "apply_decision", "decide", "encode", "load_snapshot",
           "parse_snapshot"]
__version__ = "0.1.0"
