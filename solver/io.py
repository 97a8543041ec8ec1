"""Reading and writing the JSON formats: decode, validate, encode deterministically.

Every reading function raises :class:`~solver.errors.InputError` (never another exception) on bad input,
with the field path of the problem. Input files are only read.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import stat
import sys
import tempfile
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


class _Pairs(list):
    """The (key, value) pairs of one JSON object, duplicates kept (only built when a duplicate is suspected)."""


def _first_duplicate(node, path: str = "") -> tuple[str, str] | None:
    """``(path of the object, key)`` of the first repeated key in a tree of :class:`_Pairs` and lists."""
    if isinstance(node, _Pairs):
        seen: set[str] = set()
        for key, _ in node:
            if key in seen:
                return path, key
            seen.add(key)
        for key, value in node:
            found = _first_duplicate(value, _join(path, key))
            if found:
                return found
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found = _first_duplicate(value, f"{path}[{i}]")
            if found:
                return found
    return None


def check_duplicate_keys(data: bytes) -> None:
    """Refuse a JSON text in which some object repeats a key (decoders keep the last one silently).

    Raises :class:`InputError` naming the object's path and the key, e.g. ``jobs[3].placement: duplicate
    key "t0"``. Fast path: re-encoding the decoded document drops every repeated key with its value, and so
    at least one ``:`` per repeat; the colons of the two texts agree exactly when no key repeats (string
    contents are re-encoded verbatim, except an escaped ``\u003a``, when the exact pass runs). The exact pass
    (one ``json.loads`` keeping pairs) runs only when the counts differ. Running time O(size of the text).
    """
    try:
        loose = msgspec.json.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return  # not JSON: the typed decoder says why
    if data.count(b":") == msgspec.json.encode(loose).count(b":") and b"\\u003" not in data:
        return
    try:
        found = _first_duplicate(json.loads(data, object_pairs_hook=_Pairs))
    except (ValueError, RecursionError):
        return
    if found:
        path, key = found
        raise InputError(path or "$", f"duplicate key {json.dumps(key, ensure_ascii=True)}")


def _decode(data: bytes, type_: type[T]) -> T:
    if not data.strip():
        raise InputError("$", "empty input, expected a JSON object")
    try:
        out = msgspec.json.decode(data, type=type_)
        check_duplicate_keys(data)
        return out
    except msgspec.ValidationError as err:
        check_duplicate_keys(data)  # a repeated key is the first thing to name: its first copy may be the bad one
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
    """Bytes of a file, or of standard input for ``-`` (a closed or unreadable stream is bad input)."""
    if source == "-":
        if sys.stdin is None:
            raise InputError("$", "cannot read: standard input is closed", "<stdin>")
        try:
            return sys.stdin.buffer.read()
        except (OSError, ValueError) as err:
            raise InputError("$", f"cannot read standard input: {getattr(err, 'strerror', None) or err}",
                             "<stdin>") from None
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
    """Write ``data`` to ``path`` (``-``: standard output) all at once: never a partial file.

    A regular file (or a new one) is written through a unique temporary file in the same directory and
    renamed over the target atomically, so concurrent writers leave one whole output; a symbolic link is
    followed (its target is replaced, never the link). A target that is not a regular file (a device, a
    FIFO) is written to directly. Environment failures (full disk, closed stream) raise :class:`InputError`
    naming the file or stream.
    """
    if path == "-":
        _write_stdout(data)
        return
    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as err:
        raise InputError("$", f"cannot write the output: {err.strerror or err}", path) from None
    try:
        if mode is not None and not stat.S_ISREG(mode):
            if stat.S_ISDIR(mode):
                raise InputError("$", "cannot write the output: it is a directory", path)
            with open(target, "wb") as fh:  # a device or FIFO: never replaced by a regular file
                fh.write(data)
            return
        _replace_atomically(target, data, mode)
    except OSError as err:
        raise InputError("$", f"cannot write the output: {err.strerror or err}", path) from None


def _replace_atomically(target: str, data: bytes, mode: int | None) -> None:
    folder, name = os.path.split(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is None:  # a new file gets the usual permissions (mkstemp makes it 0600)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        else:
            os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_stdout(data: bytes) -> None:
    """Standard output, all of ``data``; a closed or full stream is :class:`InputError` on ``<stdout>``."""
    if sys.stdout is None:
        raise InputError("$", "cannot write: standard output is closed", "<stdout>")
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as err:
        raise InputError("$", f"cannot write: {getattr(err, 'strerror', None) or err}", "<stdout>") from None
