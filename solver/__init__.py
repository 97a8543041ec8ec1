"""lyra-solver: the engine's face. Snapshot and decision types, JSON I/O, value tables, ``decide``, the checker."""
from solver.errors import InputError
from solver.io import encode, load_snapshot, parse_snapshot
from solver.pipeline import decide
from solver.types import Decision, Snapshot

__all__ = ["Decision", "InputError", "Snapshot", "decide", "encode", "load_snapshot", "parse_snapshot"]
__version__ = "0.1.0"
