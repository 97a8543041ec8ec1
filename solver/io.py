"""Reading and writing the JSON formats: decode, validate, encode deterministically.

Every reading function raises :class:`~solver.errors.InputError` (never another exception) on bad input,
with the field path of the problem. Input files are only read.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import msgspec
from lyra_solver.errors import InputError
from lyra_solver.types import Decision, MCKPInstance, Snapshot, canonical
from lyra_solver.validate import decode, numpy_scalar, parse_snapshot

__all__ = ["decode", "encode", "load", "load_snapshot", "parse_decision", "parse_mckp", "parse_snapshot",
           "read_bytes", "write_atomic"]

def read_bytes(source: str) -> bytes:
    """Bytes of a file, or of standard input for ``-``."""
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except OSError as err:
        raise InputError("$", f"cannot read: {err.strerror or err}", source) from None


def parse_decision(data: bytes) -> Decision:
    """Decode a decision (types only; :mod:`solver.check` judges the rules)."""
    return decode(data, Decision)


def parse_mckp(data: bytes) -> MCKPInstance:
    """Decode an MCKP instance and check each class's weights and values pair up."""
    inst = decode(data, MCKPInstance)
    for i, cls in enumerate(inst.classes):
        if len(cls.weights) != len(cls.values):
            raise InputError(f"classes[{i}].values",
                             f"has {len(cls.values)} items but weights has {len(cls.weights)}")
        for k, v in enumerate(cls.values):
            if not math.isfinite(v):
                raise InputError(f"classes[{i}].values[{k}]", "must be a finite number")
    return inst


def load(source: str, parse):
    """Read ``source`` (a path or ``-``) and parse it, attaching the file name to any :class:`InputError`."""
    name = "<stdin>" if source == "-" else source
    try:
        return parse(read_bytes(source))
    except InputError as err:
        raise err.with_source(name) from None


def load_snapshot(source: str) -> Snapshot:
    """Read and validate a snapshot from a path (``-``: standard input); :class:`InputError` names the file."""
    return load(source, parse_snapshot)


_encoder = msgspec.json.Encoder(order="sorted", enc_hook=numpy_scalar)


def encode(obj) -> bytes:
    """Canonical JSON bytes: sorted keys, values in canonical form (:func:`lyra_solver.types.canonical`: equal
    objects give equal bytes, defaults omitted whatever their origin, numpy scalars as Python numbers),
    newline-terminated."""
    return _encoder.encode(canonical(obj)) + b"\n"


def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` (``-``: standard output) all at once: never a partial file."""
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(target)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise InputError("$", f"cannot write the output: {err.strerror or err}", path) from None
