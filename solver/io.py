"""Reading and writing the JSON formats: decode, validate, encode deterministically.

Every reading function raises :class:`~solver.errors.InputError` (never another exception) on bad input,
with the field path of the problem. Input files are only read.
"""
from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import TypeVar

import msgspec
from lyra_solver.errors import InputError
from lyra_solver.types import Decision, MCKPInstance, Snapshot
from lyra_solver.validate import validate_snapshot

T = TypeVar("T")

_AT = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_FIELD = re.compile(r"field `(?P<field>[^`]+)`")


def _join(path: str, field: str) -> str:
    return f"{path}.{field}" if path else field


_GOT = re.compile(r"got `(?P<got>[a-z]+)`")
_JSON_TYPE = {"str": str, "float": float, "int": int, "bool": bool, "null": type(None), "array": list,
              "object": dict}


def _name_dict_keys(path: str, msg: str, data: bytes) -> str:
    """msgspec writes ``[...]`` for a key of a dict; find the key whose value has the type it complains of."""
    try:
        node = json.loads(data)
    except (ValueError, RecursionError):
        return path
    got = _GOT.search(msg)
    want = _JSON_TYPE.get(got.group("got")) if got else None
    out = ""
    for part in re.findall(r"\.[^.\[]+|\[[^\]]*\]", "." + path if path and path[0] != "[" else path):
        if part == "[...]" and isinstance(node, dict):
            key = next((k for k, v in node.items() if want is None or (type(v) is want)), None)
            if key is None:
                return path
            out += f".{key}"
            node = node[key]
        elif part.startswith("["):
            idx = int(part[1:-1])
            node = node[idx] if isinstance(node, list) and idx < len(node) else None
            out += part
        else:
            node = node.get(part[1:]) if isinstance(node, dict) else None
            out += part
    return out.lstrip(".")


def _from_msgspec(err: Exception, data: bytes) -> InputError:
    text = str(err)
    m = _AT.match(text)
    msg, path = (m.group("msg"), m.group("path") or "") if m else (text, "")
    path = path.lstrip(".")
    if "[...]" in path:
        path = _name_dict_keys(path, msg, data)
    if msg.startswith("Object missing required field"):
        field = _FIELD.search(msg).group("field")
        return InputError(_join(path, field), "required field is missing")
    if msg.startswith("Object contains unknown field"):
        field = _FIELD.search(msg).group("field")
        return InputError(_join(path, field), "unknown field (not in format_version 1)")
    if path == "format_version" and msg.startswith("Invalid enum value"):
        got = msg[len("Invalid enum value "):]
        return InputError(path, f"unsupported format_version {got}; this engine reads format_version 1")
    if msg == "Number out of range":
        msg = "must be a finite number (out of range)"
    return InputError(path or "$", msg)


def _find_non_finite(obj, path: str = "") -> str | None:
    if isinstance(obj, float) and not math.isfinite(obj):
        return path or "$"
    if isinstance(obj, dict):
        for k, v in obj.items():
            found = _find_non_finite(v, _join(path, str(k)))
            if found:
                return found
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found = _find_non_finite(v, f"{path}[{i}]")
            if found:
                return found
    return None


def _decode(data: bytes, type_: type[T]) -> T:
    if not data.strip():
        raise InputError("$", "empty input, expected a JSON object")
    try:
        return msgspec.json.decode(data, type=type_)
    except msgspec.ValidationError as err:
        raise _from_msgspec(err, data) from None
    except msgspec.DecodeError as err:
        # msgspec rejects NaN/Infinity literals as malformed JSON; name the field if that is the cause.
        try:
            loose = json.loads(data)
        except (ValueError, RecursionError):
            raise InputError("$", f"not valid JSON: {err}") from None
        where = _find_non_finite(loose)
        if where:
            raise InputError(where, "must be a finite number (NaN and Infinity are not allowed)") from None
        raise InputError("$", f"not valid JSON: {err}") from None


def read_bytes(source: str) -> bytes:
    """Bytes of a file, or of standard input for ``-``."""
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except OSError as err:
        raise InputError("$", f"cannot read: {err.strerror or err}", source) from None


def parse_snapshot(data: bytes) -> Snapshot:
    """Decode and validate a snapshot (format_version 1). Raises :class:`InputError`."""
    snap = _decode(data, Snapshot)
    validate_snapshot(snap)
    return snap


def parse_decision(data: bytes) -> Decision:
    """Decode a decision (types only; :mod:`solver.check` judges the rules)."""
    return _decode(data, Decision)


def parse_mckp(data: bytes) -> MCKPInstance:
    """Decode an MCKP instance and check each class's weights and values pair up."""
    inst = _decode(data, MCKPInstance)
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
    return load(source, parse_snapshot)


_encoder = msgspec.json.Encoder(order="sorted")


def encode(obj) -> bytes:
    """Deterministic JSON bytes (sorted keys, newline-terminated)."""
    return _encoder.encode(obj) + b"\n"


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
