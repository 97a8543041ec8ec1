"""CSV reading and seeded draws shared by the simulator's input modules (:mod:`.traces`, :mod:`.deadlines`,
:mod:`.packing_profiles`): bounded reading (:data:`lyra_solver.io.MAX_INPUT_BYTES`), strict numbers, and the
row hash that seeds each job's draws. A module of its own so that those modules import it, not each other.
"""
from __future__ import annotations

import csv
import hashlib
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

from lyra_solver.errors import InputError


@dataclass(frozen=True)
class TraceJob:
    """One training job of a trace: arrival (s from the trace's start), GPUs requested, duration at that size."""

    line: int
    submit: float
    gpus: int
    duration: float
    key: str  # the row's text: the seed of its application and elasticity
    app: str | None = None  # given by the trace (Pollux) or None (drawn by map_jobs)
    batch_size: int = 0  # the Pollux workload's global batch size (0: a Philly row)
    root: str = ""  # the Pollux data folder whose measurements size the job (Pollux rows only)


#: A number as the CSV files write it: ASCII digits, an optional sign, point and exponent (``1_000``, ``١٢``,
#: ``nan`` and ``inf`` are refused, though Python's ``float`` would take them).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_INTEGER = re.compile(r"[+-]?\d+", re.ASCII)


#: Largest trace, workload or load file the simulator reads (bytes, 8 MiB: 2.4 times the Philly trace's 3.3 MB,
#: four times the Alibaba GenAI load's 2 MB). Parsing runs at about 130,000 rows (3 MB) a second on the shared
#: 2-core machine, so a file at the limit is read in a few seconds and a few hundred MB, outside ``--max-work``.
MAX_CSV_BYTES = 8 * 2**20


def _read_text(path: str | Path, what: str) -> tuple[str, str]:
    """(name, text) of a CSV file or of standard input (``-``), at most :data:`MAX_CSV_BYTES`; a byte-order mark
    is dropped. ``what`` ("trace", "load") names the input in errors."""
    from lyra_solver.io import read_bytes

    path = str(path)
    name = "<stdin>" if path == "-" else path
    try:
        data = read_bytes(path, limit=MAX_CSV_BYTES)
    except InputError as err:
        if "MiB limit" in err.problem:
            raise InputError("$", f"{what} file larger than the {MAX_CSV_BYTES // 2**20} MiB limit "
                             "(bench.sim._rows.MAX_CSV_BYTES)", name) from None
        raise InputError(err.path, err.problem.replace("cannot read", f"cannot read the {what}", 1), name) from None
    try:
        return name, data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise InputError(f"line {line}", f"not UTF-8 text ({what} file): {err.reason}", name) from None


def _open_rows(path: str | Path, fields: tuple[str, ...], what: str = "trace", text: str | None = None):
    """(name, reader, column index by name, width) of a CSV whose header has ``fields``; ``text`` when read."""
    name, text = (str(path), text) if text is not None else _read_text(path, what)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("line 1", f"empty {what} file: no header", name) from None
    except csv.Error as err:
        raise InputError("line 1", f"not CSV: {err}", name) from None
    seen: set[str] = set()
    for col in header:
        if col in seen:
            raise InputError("line 1", f"column {col!r} appears twice in the header", name)
        seen.add(col)
    missing = [f for f in fields if f not in header]
    if missing:
        raise InputError("line 1", f"header lacks column {missing[0]!r} (expected {', '.join(fields)})", name)
    return name, reader, {f: header.index(f) for f in header}, len(header)


def _rows(path, fields, what: str = "trace", text: str | None = None):
    name, reader, col, width = _open_rows(path, fields, what, text)
    try:
        for row in reader:
            line = reader.line_num
            if not row:
                continue
            if len(row) != width:
                raise InputError(f"line {line}", f"{len(row)} fields, expected {width} (truncated or "
                                 "malformed row)", name)
            yield line, row, col, name
    except csv.Error as err:
        raise InputError(f"line {reader.line_num}", f"not CSV: {err}", name) from None


def _num(text: str, path, line: int, field: str, *, integer: bool = False, positive: bool = False,
         most: float = math.inf) -> float:
    ok = (_INTEGER if integer else _NUMBER).fullmatch(text.strip())
    x = (int(text) if integer else float(text)) if ok else math.nan
    if not ok:
        raise InputError(f"line {line}", f"{field}: not a{'n integer' if integer else ' number'} (ASCII digits "
                         f"only): {text!r}", str(path))
    if (not integer and not math.isfinite(x)) or x < 0 or (positive and x <= 0):  # an int may pass a double
        raise InputError(f"line {line}", f"{field}: must be {'positive' if positive else 'non-negative'}, "
                         f"got {text!r}", str(path))
    if x > most:
        raise InputError(f"line {line}", f"{field}: must be at most {most:g}, got {text!r}", str(path))
    return x


def _unit(seed: int, salt: str, key: str, line: int) -> float:
    h = hashlib.blake2b(f"{seed}|{salt}|{line}|{key}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2.0**64
