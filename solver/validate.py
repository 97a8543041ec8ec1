"""The one validator of snapshots, whatever their origin: JSON bytes, typed objects built in Python, or dicts.

Two layers, both raising :class:`~lyra_solver.errors.InputError` with the field path of the first problem:

- *types and bounds* (integers where counts go, minimums, closed vocabularies, required fields): the msgspec
  decoder of :mod:`lyra_solver.types`. A typed snapshot goes through the very same decoder (encoded, then
  decoded), so a ``Server(gpus=-3)`` built in Python fails exactly as ``{"gpus": -3}`` read from a file does;
- *rules across fields* (:func:`check_rules`): unique ids, a state exactly on inference servers, placements on
  usable servers adding up within min..max and within each server's GPUs, throughput tables covering min..max.

Repeated keys and the rules each have a quick pass in front of the full check (:func:`_no_repeated_key`,
:func:`_decoded_rules_hold`): it answers only "all is well" or "maybe not", and on "maybe not" the full check
runs and names the first problem, so the errors are the full checks' whatever the quick passes say.

:func:`parse_snapshot` (bytes) and :func:`validate_snapshot` (objects) remember the snapshots they accepted (by
identity, while they live), so :func:`lyra_solver.decide` re-checks nothing it was handed from them: validation
stays on by default and costs the round nothing. A snapshot is immutable all the way down (frozen structs, tuples,
read-only dicts), so no change after validation can go unchecked: a changed snapshot is a new object.
"""
from __future__ import annotations

import functools
import itertools
import json
import math
import operator
import re
import types
import typing
import weakref
from collections.abc import Mapping
from typing import TypeVar

import msgspec
import msgspec.inspect as _inspect
import numpy as np
from lyra_solver._collector import Paused
from lyra_solver.errors import InputError
from lyra_solver.types import (
    Inference,
    Job,
    Options,
    PackingGroup,
    PackingProfile,
    PowerThroughput,
    ProfileThroughput,
    Server,
    Snapshot,
    TableThroughput,
)

__all__ = ["check_duplicate_keys", "check_keep_packing", "check_rules", "decode", "numpy_scalar", "parse_snapshot",
           "validate_snapshot"]

T = TypeVar("T")


def numpy_scalar(value):
    """Encode hook: numpy scalars as the Python numbers they stand for; anything else is refused."""
    item = getattr(value, "item", None)
    if item is not None and type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
        return item()
    raise TypeError(f"cannot encode a value of type {type(value).__module__}.{type(value).__qualname__}")


_raw_encoder = msgspec.json.Encoder(enc_hook=numpy_scalar)


def parse_snapshot(data: bytes) -> Snapshot:
    """Decode and validate a snapshot (format_version 1) from JSON bytes. Raises :class:`InputError`."""
    with Paused(promote=len(data) >= PROMOTE_MIN_BYTES):
        snap, columns = _decode(data, Snapshot)
        _check_decoded(snap, columns)
    _remember(snap, columns=columns)
    return snap


#: JSON size from which :func:`parse_snapshot` moves what it made past the young collections
#: (:class:`lyra_solver._collector.Paused`): about 4,000 jobs of ``bench decide``'s snapshots. Measured with a young
#: collection right after each parse (CPU medians, 2-core EPYC): at 1,000 and 4,000 jobs (0.3 and 1.1 MB) the parse
#: takes as long either way (1.9 and 7.4-7.8 ms), at 10,000 (2.8 MB) 1-1.5 ms less, at 50,000 10-18 ms less. A
#: smaller snapshot's parse leaves the collector alone.
PROMOTE_MIN_BYTES = 1 << 20


def validate_snapshot(snapshot: Snapshot | Mapping) -> Snapshot:
    """The validated snapshot: ``snapshot`` itself when it was validated before, else a checked copy.

    Accepts a :class:`Snapshot` built in Python (with numbers of any numeric type, numpy scalars included) or a
    dict in the JSON format. Raises :class:`InputError` with the field path, as reading the JSON would.

    Running time: O(1) for a snapshot already validated (by identity); else O(size), about the cost of parsing
    its JSON.
    """
    if isinstance(snapshot, Snapshot):
        known = _remembered(snapshot)
        if known is not None:
            return known
    if not isinstance(snapshot, Snapshot | Mapping):
        raise InputError("$", f"expected a Snapshot or a dict in the snapshot format, got {type(snapshot).__name__}")
    try:
        data = _raw_encoder.encode(snapshot)
    except (TypeError, ValueError, OverflowError) as err:
        raise InputError(_unencodable_path(snapshot), str(err)) from None
    try:
        if isinstance(snapshot, Snapshot):
            snap, columns = _decode_encoded(data, snapshot), None
        else:
            snap, columns = _decode(data, Snapshot)
    except InputError:
        where = _find_non_finite(msgspec.to_builtins(snapshot, enc_hook=numpy_scalar))
        if where:
            raise InputError(where, "must be a finite number (NaN and Infinity are not allowed)") from None
        raise
    if columns is None:
        columns = JobColumns(snap.jobs)
    _check_decoded(snap, columns)
    _remember(snap, columns=columns)
    if isinstance(snapshot, Snapshot):
        _remember(snapshot, snap)
    return snap


def _decode_encoded(data: bytes, original: Snapshot) -> Snapshot:
    """:func:`decode` of the JSON that :data:`_raw_encoder` wrote for the typed snapshot ``original``: the same
    result and the same errors, without the repeated-key pass when no key can repeat.

    The encoding of structs and dicts repeats a key only when two distinct keys of one dict are written alike
    (``1`` and ``"1"``); the decoder keeps one of them, so the decoded dicts are smaller than the original's.
    When every dict kept its size there is no repeated key; otherwise (or if the original's shape is unusual)
    :func:`decode` runs in full and names the problem.
    """
    try:
        out = msgspec.json.decode(data, type=Snapshot)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return decode(data, Snapshot)
    try:
        same = _dict_sizes(out) == _dict_sizes(original)
    except Exception:  # noqa: BLE001 - an original of unusual shape: the full check decides
        same = False
    if not same:
        check_duplicate_keys(data)
    return out


def _dict_sizes(snap: Snapshot) -> tuple:
    """Sizes of the dicts of a snapshot (placements, packing slowdowns, measured pair speeds), in order."""
    sizes = [-1 if snap.options.pair_speed is None else len(snap.options.pair_speed)]
    for job in snap.jobs:
        sizes.append(-1 if job.placement is None else len(job.placement))
        if job.packing is not None and job.packing.slowdown is not None:
            sizes.append(len(job.packing.slowdown))
    return tuple(sizes)


#: id of a snapshot accepted before -> (weak reference to it, its validated form, the job columns read while
#: validating it). Identity is enough: a snapshot is immutable all the way down (frozen structs, tuples,
#: :class:`~lyra_solver.types.FrozenDict`), so what was validated and read is what is used.
_VALID: dict[int, tuple] = {}


def _remember(snap: Snapshot, validated: Snapshot | None = None, columns: JobColumns | None = None) -> None:
    key = id(snap)
    _VALID[key] = (weakref.ref(snap, lambda _ref, key=key: _VALID.pop(key, None)),
                   None if validated is None or validated is snap else validated, columns)


def _remembered(snap: Snapshot) -> Snapshot | None:
    entry = _VALID.get(id(snap))
    if entry is None or entry[0]() is not snap:
        return None
    return entry[1] or snap


def known_columns(snap: Snapshot) -> JobColumns | None:
    """The job columns (:class:`JobColumns`) that validating ``snap`` itself read (:func:`parse_snapshot`, or
    :func:`validate_snapshot` of a dict, or of a typed snapshot for its checked copy), else ``None`` (a snapshot not
    validated here, or validated only as the source of another: its copy has them). O(1)."""
    entry = _VALID.get(id(snap))
    if entry is None or entry[1] is not None or entry[0]() is not snap:
        return None
    return entry[2]


def _unencodable_path(obj, path: str = "") -> str:
    """Field path of the first value that cannot be written as JSON (``$`` if none is found)."""
    if isinstance(obj, msgspec.Struct):
        items = [(f, getattr(obj, f)) for f in obj.__struct_fields__]
    elif isinstance(obj, Mapping):
        items = list(obj.items())
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            found = _unencodable_path(v, f"{path}[{i}]")
            if found != "$":
                return found
        return "$"
    else:
        try:
            _raw_encoder.encode(obj)
        except (TypeError, ValueError, OverflowError):
            return path or "$"
        return "$"
    for k, v in items:
        found = _unencodable_path(v, _join(path, str(k)))
        if found != "$":
            return found
    return "$"


def _literal_values(type_: type, path: str) -> tuple | None:
    """The allowed values of the closed vocabulary at ``path`` of ``type_`` (None when it is not one)."""
    node = _inspect.type_info(type_)
    for part in re.findall(r"[^.\[\]]+|\[[^\]]*\]", path):
        while isinstance(node, _inspect.UnionType):
            options = [t for t in node.types if not isinstance(t, _inspect.NoneType)]
            if part.startswith("["):
                options = [t for t in options
                           if isinstance(t, _inspect.ListType | _inspect.VarTupleType | _inspect.DictType)]
            else:
                options = [t for t in options if isinstance(t, _inspect.StructType | _inspect.DictType)
                           and (not isinstance(t, _inspect.StructType) or any(f.name == part for f in t.fields))]
            if len(options) != 1:
                return None
            node = options[0]
        if isinstance(node, _inspect.ListType | _inspect.VarTupleType) and part.startswith("["):
            node = node.item_type
        elif isinstance(node, _inspect.DictType):
            node = node.value_type
        elif isinstance(node, _inspect.StructType):
            node = next((f.type for f in node.fields if f.name == part), None)
            if node is None:
                return None
        else:
            return None
    while isinstance(node, _inspect.UnionType):
        options = [t for t in node.types if not isinstance(t, _inspect.NoneType)]
        if len(options) != 1:
            return None
        node = options[0]
    return node.values if isinstance(node, _inspect.LiteralType) else None


_AT = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_FIELD = re.compile(r"field `(?P<field>[^`]+)`")


def _join(path: str, field: str) -> str:
    return f"{path}.{field}" if path else field


_GOT = re.compile(r"got `(?P<got>[a-z]+)`")
_JSON_TYPE = {"str": str, "float": float, "int": int, "bool": bool, "null": type(None), "array": list,
              "object": dict}


def _options(tp) -> list:
    """The alternatives of a type annotation, ``Annotated`` and ``None`` stripped."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        out = []
        for arg in typing.get_args(tp):
            out += [] if arg is type(None) else _options(arg)
        return out
    return [tp]


def _step_type(tp, part: str, node):
    """The annotation of ``part`` (``.field`` or ``[i]``) of a value of annotation ``tp`` whose JSON is ``node``."""
    for opt in _options(tp):
        origin = typing.get_origin(opt)
        if part.startswith("["):
            if origin is list or (origin is tuple and typing.get_args(opt)[1:] == (Ellipsis,)):  # tuple[X, ...]
                return typing.get_args(opt)[0]
        elif isinstance(opt, type) and issubclass(opt, msgspec.Struct):
            tag = opt.__struct_config__.tag_field
            if tag is not None and isinstance(node, dict) and node.get(tag) != opt.__struct_config__.tag:
                continue
            hints = typing.get_type_hints(opt, include_extras=True)
            if part[1:] in hints:
                return hints[part[1:]]
    return None


def _typed_dict_keys(path: str, data: bytes, type_: type) -> str | None:
    """The path with each ``[...]`` replaced by the first key of that dict whose entry fails its type (what
    msgspec, which stops at the first bad entry, complained of), walking ``type_``'s annotations beside the
    document; None when the walk loses its way."""
    try:
        node = json.loads(data)
    except (ValueError, RecursionError):
        return None
    tp, out = type_, ""
    for part in re.findall(r"\.[^.\[]+|\[[^\]]*\]", "." + path if path and path[0] != "[" else path):
        if part == "[...]":
            dict_type = next((o for o in _options(tp) if typing.get_origin(o) is dict), None)
            if dict_type is None or not isinstance(node, dict):
                return None
            key = None
            for k, v in node.items():
                try:
                    msgspec.convert({k: v}, dict_type)
                except (msgspec.ValidationError, TypeError, ValueError, RecursionError):
                    key = k
                    break
            if key is None:
                return None
            tp, node, out = typing.get_args(dict_type)[1], node[key], f"{out}.{key}"
            continue
        tp = _step_type(tp, part, node)
        if tp is None:
            return None
        if part.startswith("["):
            idx = int(part[1:-1])
            node = node[idx] if isinstance(node, list) and idx < len(node) else None
        else:
            node = node.get(part[1:]) if isinstance(node, dict) else None
        out += part
    return out.lstrip(".")


def _name_dict_keys(path: str, msg: str, data: bytes, type_: type | None = None) -> str:
    """msgspec writes ``[...]`` for a key of a dict; name the key: the first entry that fails the dict's
    value type (:func:`_typed_dict_keys`), else the first whose value has the JSON type it complains of."""
    if type_ is not None:
        try:
            typed = _typed_dict_keys(path, data, type_)
        except Exception:  # noqa: BLE001 - an unusual annotation: the type-name heuristic below decides
            typed = None
        if typed is not None:
            return typed
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


def _from_msgspec(err: Exception, data: bytes, type_: type) -> InputError:
    text = str(err)
    m = _AT.match(text)
    msg, path = (m.group("msg"), m.group("path") or "") if m else (text, "")
    path = path.lstrip(".")
    if "[...]" in path:
        path = _name_dict_keys(path, msg, data, type_)
    if msg.startswith("Object missing required field"):
        field = _FIELD.search(msg).group("field")
        return InputError(_join(path, field), "required field is missing")
    if msg.startswith("Object contains unknown field"):
        field = _FIELD.search(msg).group("field")
        return InputError(_join(path, field), "unknown field (not in format_version 1)")
    if path == "format_version" and msg.startswith("Invalid enum value"):
        got = msg[len("Invalid enum value "):]
        return InputError(path, f"unsupported format_version {got}; this engine reads format_version 1")
    if msg.startswith("Invalid enum value"):
        allowed = _literal_values(type_, path)
        if allowed:
            got = msg[len("Invalid enum value "):]
            return InputError(path, f"unknown value {got}; expected one of {', '.join(map(str, allowed))}")
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
    elif isinstance(obj, list | tuple):
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


# ------------------------------------------------------------------ repeated keys of a snapshot, without a second parse
# A JSON text has one ``:`` per key of each object, plus the colons inside its strings; a repeated key adds a colon
# that the decoded snapshot does not hold. So the text repeats no key exactly when its colons, less those inside
# strings, number the distinct keys of its objects. The decoded snapshot says which required fields and dict
# entries there are; the one thing it cannot say is whether an optional field was written out with its default
# value (``"gpus_per_worker": 1``) or left out, so a second, skimming decode (into the structs below: the optional
# fields of each object and nothing else, every other value skipped unread) notes which were written.
_Written = msgspec.Raw | msgspec.UnsetType


class _Keys(msgspec.Struct, gc=False):
    """Base of the skimming structs: which optional fields an object of the snapshot format writes."""


class _Object(_Keys):
    """Any JSON object (its content skipped: a dict field, whose entries the decoded snapshot counts)."""


class _PackingKeys(_Keys):
    slowdown: _Object | None | msgspec.UnsetType = msgspec.UNSET
    app: _Written = msgspec.UNSET


class _ServerKeys(_Keys):
    state: _Written = msgspec.UNSET
    gpu_mem_gb: _Written = msgspec.UNSET


class _JobKeys(_Keys):
    # an integer as the typed decode accepted it (its bounds checked there): small ones come cached, where raw text
    # is an object for each job and costs its encoding a copy
    gpus_per_worker: int | msgspec.UnsetType = msgspec.UNSET
    submit_time: _Written = msgspec.UNSET
    placement: _Object | None | msgspec.UnsetType = msgspec.UNSET
    restart_penalty: _Written = msgspec.UNSET
    preemption_penalty: _Written = msgspec.UNSET
    attained_service: _Written = msgspec.UNSET
    packing: _PackingKeys | None | msgspec.UnsetType = msgspec.UNSET
    deadline: _Written = msgspec.UNSET


class _InferenceKeys(_Keys):
    reclaim: _Written = msgspec.UNSET


class _OptionsKeys(_Keys):
    queue: _Written = msgspec.UNSET
    allocation: _Written = msgspec.UNSET
    reclaim: _Written = msgspec.UNSET
    placement: _Written = msgspec.UNSET
    packing: _Written = msgspec.UNSET
    time_limit: _Written = msgspec.UNSET
    packing_policy: _Written = msgspec.UNSET
    packing_overhead: _Written = msgspec.UNSET
    sample_stealing: _Written = msgspec.UNSET
    pair_speed: _Object | None | msgspec.UnsetType = msgspec.UNSET
    packing_seed: _Written = msgspec.UNSET
    objective: _Written = msgspec.UNSET


class _SnapshotKeys(_Keys):
    servers: list[_ServerKeys] | msgspec.UnsetType = msgspec.UNSET
    jobs: list[_JobKeys] | msgspec.UnsetType = msgspec.UNSET
    now: _Written = msgspec.UNSET
    inference: _InferenceKeys | msgspec.UnsetType = msgspec.UNSET
    options: _OptionsKeys | msgspec.UnsetType = msgspec.UNSET


#: Snapshot struct -> its skimming struct (tests/solver/test_parse_quick.py: each lists every optional field).
_KEYS = {Snapshot: _SnapshotKeys, Server: _ServerKeys, Job: _JobKeys, PackingProfile: _PackingKeys,
         Inference: _InferenceKeys, Options: _OptionsKeys}


def _unlisted(cls: type) -> int:
    """Keys every object of struct ``cls`` writes that its skimming struct does not list: its required fields
    (and its tag)."""
    info = typing.cast(_inspect.StructType, _inspect.type_info(cls))
    listed = set(_KEYS[cls].__struct_fields__) if cls in _KEYS else set()
    return sum(f.required and f.name not in listed for f in info.fields) + (info.tag_field is not None)


_UNLISTED = {cls: _unlisted(cls) for cls in (Snapshot, Server, Job, PackingProfile, Inference, Options,
                                           PowerThroughput, TableThroughput, ProfileThroughput)}
_keys_decoder = msgspec.json.Decoder(_SnapshotKeys)
_keys_encoder = msgspec.json.Encoder()


@functools.cache
def _skim_decoder(job_fields: tuple[str, ...]) -> msgspec.json.Decoder:
    """The skimming decoder whose jobs list only ``job_fields`` (of :class:`_JobKeys`' fields, in its order): a
    job field whose every decoded value differs from its default was written by every job object, so its keys are
    known without the skim, which then skips it unread (on 50,000 jobs of ``bench decide``, four of eight fields:
    the skim and its encoding about 24 ms instead of 45)."""
    if job_fields == _JobKeys.__struct_fields__:
        return _keys_decoder
    hints = typing.get_type_hints(_JobKeys)
    job = msgspec.defstruct("_JobKeysOf", [(f, hints[f], msgspec.UNSET) for f in job_fields], bases=(_Keys,),
                            module=__name__, gc=False)
    top = typing.get_type_hints(_SnapshotKeys)
    top["jobs"] = list[job] | msgspec.UnsetType
    snap = msgspec.defstruct("_SnapshotKeysOf", [(f, top[f], msgspec.UNSET) for f in _SnapshotKeys.__struct_fields__],
                             bases=(_Keys,), module=__name__, gc=False)
    return msgspec.json.Decoder(snap)


_ID = operator.attrgetter("id")
_THROUGHPUT = operator.attrgetter("throughput")
_PLACEMENT = operator.attrgetter("placement")
_FIRST = operator.itemgetter(0)
_SLOWDOWN = operator.attrgetter("slowdown")


class JobColumns:
    """What both quick passes (:func:`_no_repeated_key`, :func:`_decoded_rules_hold`) read of a decoded snapshot's
    jobs, and what the round reads of every job, gathered in one loop over them (each job is visited once: passes
    over 50,000 scattered objects, one per field, cost more in memory traffic than the loop's bytecode).

    For the rules: ``distinct``: how many distinct job ids; ``crossed``: some job has min_workers > max_workers;
    ``top_per`` and ``top_penalty``: the largest gpus_per_worker and restart or preemption penalty; ``tables``:
    (throughput, min_workers, max_workers) of the jobs with a table throughput; ``placed``: (placement,
    min_workers, max_workers, gpus_per_worker) of the running jobs; ``packings``: the packing profiles given;
    ``powers``: how many power throughputs. For the repeated-key pass: ``written``, the optional job fields (of the
    submit time, the penalties and the attained service) that every job holds other than 0, so wrote.

    For the round (in job order, kept with the validated snapshot: :func:`known_columns`): ``ids`` and
    ``throughputs`` (lists); ``gpw``, ``min_w``, ``max_w`` (int64), ``submit`` and ``work`` (float64), each job's
    gpus_per_worker, min_workers, max_workers, submit_time and remaining_work as read-only arrays; ``kinds``, each
    throughput's kind code (:data:`lyra_solver.values._KIND`, int8), and the kinds' columns in job order: the power
    laws' ``rates`` and ``exps`` (float64), the profiles' ``models`` (names); ``held``: the positions of the jobs
    of ``placed``; ``entries``: see there. The index view (:meth:`lyra_solver.steps.Cluster.of`), the admission
    step's queue keys, the reclaim step's host pairs and the decision read them here instead of visiting the job
    structs, their placements and id strings again (memory traffic, more than bytecode, was most of those steps'
    time on 50,000 jobs): docs/bench/speed.md, fifteenth pass, has what it costs the parse and saves the round.
    """

    __slots__ = ("crossed", "distinct", "entries", "exps", "gpw", "held", "ids", "kinds", "max_w", "min_w", "models",
                 "packings", "placed", "powers", "rates", "submit", "tables", "throughputs", "top_penalty", "top_per",
                 "work", "written")

    def __init__(self, jobs) -> None:
        n = len(jobs)
        ids: list = [None] * n
        gpw, min_w, max_w = [0] * n, [0] * n, [0] * n
        submit, work, tps = [0.0] * n, [0.0] * n, [None] * n
        tables: list[tuple] = []
        placed: list[tuple] = []
        held: list[int] = []
        packings: list = []
        kinds = bytearray(n)  # 0 power, 1 table, 2 profile (lyra_solver.values._KIND)
        rates: list[float] = []
        exps: list[float] = []
        models: list[str] = []
        top_per = 0
        top_penalty = 0.0
        crossed = False
        no_restart = no_preempt = no_attained = False  # some job holds 0 there
        for i, job in enumerate(jobs):
            ids[i] = job.id
            min_w[i] = lo = job.min_workers
            max_w[i] = hi = job.max_workers
            gpw[i] = per = job.gpus_per_worker
            submit[i] = job.submit_time
            work[i] = job.remaining_work
            if lo > hi:
                crossed = True
            if per > top_per:
                top_per = per
            restart, preempt = job.restart_penalty, job.preemption_penalty
            if restart > top_penalty:
                top_penalty = restart
            if preempt > top_penalty:
                top_penalty = preempt
            if not restart:
                no_restart = True
            if not preempt:
                no_preempt = True
            if not job.attained_service:
                no_attained = True
            tps[i] = tp = job.throughput
            kind = type(tp)
            if kind is PowerThroughput:
                rates.append(tp.rate_per_worker)
                exps.append(tp.exponent)
            elif kind is TableThroughput:
                tables.append((tp, lo, hi))
                kinds[i] = 1
            else:
                models.append(tp.model)
                kinds[i] = 2
            if job.placement is not None:
                placed.append((job.placement, lo, hi, per))
                held.append(i)
            if job.packing is not None:
                packings.append(job.packing)
        self.distinct, self.crossed, self.top_per, self.top_penalty = len(set(ids)), crossed, top_per, top_penalty
        self.tables, self.placed, self.packings, self.powers = tables, placed, packings, len(rates)
        self.ids, self.throughputs, self.held, self.models = ids, tps, held, models
        # the numbers as read-only arrays (int64, float64), made here while their objects are in cache
        self.gpw, self.min_w, self.max_w = _column(gpw, np.int64), _column(min_w, np.int64), _column(max_w, np.int64)
        self.submit, self.work = _column(submit, np.float64), _column(work, np.float64)
        #: the optional job fields (of the submit time, penalties and attained service) that every job holds other
        #: than its default 0, so that every job's text wrote them (:func:`_no_repeated_key`), in field order
        self.written = tuple(f for f, some_zero in (("submit_time", np.count_nonzero(self.submit) < n),
                                                    ("restart_penalty", no_restart),
                                                    ("preemption_penalty", no_preempt),
                                                    ("attained_service", no_attained)) if not some_zero)
        self.rates, self.exps = _column(rates, np.float64), _column(exps, np.float64)
        self.kinds = np.frombuffer(kinds, np.int8)
        self.kinds.setflags(write=False)
        #: the running jobs' placement entries where the quick rules pass read them (:func:`_placements_hold`):
        #: each entry's server position and workers, each placement's size, the GPUs used per server (int64)
        self.entries: tuple | None = None


def _column(values: list, dtype: type) -> np.ndarray:
    """``values`` as a read-only array of ``dtype``. O(len(values))."""
    out = np.fromiter(values, dtype, len(values))
    out.setflags(write=False)
    return out


def _count_colons(text: bytes) -> int:
    """The colons of ``text``: ``bytes.count`` (no temporary; on a 14 MB snapshot half the time of counting a
    numpy comparison's mask)."""
    return text.count(b":")


def _no_repeated_key(data: bytes, snap: Snapshot, columns: JobColumns | None = None) -> bool:
    """True when the JSON text ``data``, decoded into ``snap``, repeats no key in any object; False when it may
    (then :func:`check_duplicate_keys` decides and names the key).

    The text's colons are its keys (distinct ones plus repeats) and the colons inside its strings. The skimming
    decode re-encoded (``written``) has one colon per optional field the text writes (a repeated one once) plus
    those inside the written strings, copies of strings of the text. What the text has beyond it are the required
    fields of each object, the optional job fields that the skim skips (:attr:`JobColumns.written`: every job holds
    other than their defaults, so every job object writes them), its dict entries (the decoded snapshot counts
    these, a repeated dict key once), the colons inside its other strings (at least those of the snapshot's ids and
    dict keys, counted when needed) and one colon per repeated key. So the difference equals those counts only when
    no key repeats; a string the counts miss (a value of a repeated key, an escaped colon: texts with escapes are
    left to the full check) can only make them differ. Running time O(size of the text), about half the typed
    decode's (the skim scans the text and allocates one small object per optional field it reads).
    """
    if b"\\" in data:
        return False
    servers, jobs = snap.servers, snap.jobs
    if columns is None:
        columns = JobColumns(jobs)
    written = columns.written
    skimmed = tuple(f for f in _JobKeys.__struct_fields__ if f not in written)
    try:
        keys = _skim_decoder(skimmed).decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return False
    extra = _count_colons(data) - _count_colons(_keys_encoder.encode(keys))
    required = _UNLISTED[Snapshot] + len(servers) * _UNLISTED[Server] + len(jobs) * (_UNLISTED[Job] + len(written))
    tables, powers = len(columns.tables), columns.powers
    required += (powers * _UNLISTED[PowerThroughput] + tables * _UNLISTED[TableThroughput]
                 + (len(jobs) - powers - tables) * _UNLISTED[ProfileThroughput])
    packings = columns.packings
    placements = list(map(_FIRST, columns.placed))
    slowdowns = list(filter(None, map(_SLOWDOWN, packings)))
    pair_speed = snap.options.pair_speed or {}
    required += (len(packings) * _UNLISTED[PackingProfile]
                 + (keys.inference is not msgspec.UNSET) * _UNLISTED[Inference]
                 + (keys.options is not msgspec.UNSET) * _UNLISTED[Options])
    entries = sum(map(len, placements)) + sum(map(len, slowdowns)) + len(pair_speed)
    if extra == required + entries:
        return True
    strings = itertools.chain(map(_ID, servers), map(_ID, jobs), itertools.chain.from_iterable(placements),
                              itertools.chain.from_iterable(slowdowns), pair_speed)
    return extra == required + entries + sum(map(str.count, strings, itertools.repeat(":")))


def decode(data: bytes, type_: type[T]) -> T:
    """Decode JSON bytes into ``type_`` (types and bounds checked, repeated keys refused); :class:`InputError`
    with the field path."""
    return _decode(data, type_)[0]


def _decode(data: bytes, type_: type[T]) -> tuple[T, JobColumns | None]:
    """:func:`decode`, and for a snapshot the job columns that its repeated-key pass listed (for the rules)."""
    if not data or data.isspace():  # (not data.strip(): a copy of the whole text when it ends with a newline)
        raise InputError("$", "empty input, expected a JSON object")
    try:
        out = msgspec.json.decode(data, type=type_)
        snap = typing.cast(Snapshot, out)
        columns = JobColumns(snap.jobs) if type_ is Snapshot else None
        if columns is None or not _no_repeated_key(data, snap, columns):
            check_duplicate_keys(data)
        return out, columns
    except msgspec.ValidationError as err:
        check_duplicate_keys(data)  # a repeated key is the first thing to name: its first copy may be the bad one
        raise _from_msgspec(err, data, type_) from None
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



def _finite(value: float | None, path: str) -> None:
    if value is not None and not math.isfinite(value):
        raise InputError(path, f"must be a finite number, got {value!r}")


#: Largest restart or preemption penalty accepted (seconds, about 30 million years): the engine caps remaining
#: times at the same value (:data:`lyra_solver.values.TIME_CAP`), so every value of the allocation table stays
#: within twice it and the tables' sums stay far from overflowing a double (a penalty of 6e299 on two elastic
#: jobs once made the MCKP refuse the round's values).
MAX_PENALTY = 1e15


def _penalty(value: float, path: str) -> None:
    _finite(value, path)
    if value > MAX_PENALTY:
        raise InputError(path, f"must be at most {MAX_PENALTY:g} seconds, got {value:g}")


def check_rules(snap: Snapshot) -> None:
    """Check the rules that span fields; raise :class:`InputError` naming the first broken one.

    Rules: unique server and job ids; ``state`` given exactly for inference servers; finite numbers; penalties
    at most :data:`MAX_PENALTY`;
    ``min_workers <= max_workers``; a worker fits on some server; a table throughput covers min..max with
    strictly increasing workers; a placement only on training or loaned servers, with positive counts
    adding up to a worker count in [min, max], and no server over its GPUs (all jobs together).

    Running time: O(servers + jobs + placement entries + table points).
    """
    if _rules_hold(snap):
        return
    _finite(snap.now, "now")
    servers = {}
    max_gpus = 0
    for i, srv in enumerate(snap.servers):
        if srv.id in servers:
            raise InputError(f"servers[{i}].id", f"duplicate server id {srv.id!r}")
        if srv.pool == "inference" and srv.state is None:
            raise InputError(f"servers[{i}].state",
                             "an inference server needs a state: serving, idle or loaned")
        if srv.pool == "training" and srv.state is not None:
            raise InputError(f"servers[{i}].state", f"a training server has no state, got {srv.state!r}")
        _finite(srv.gpu_mem_gb, f"servers[{i}].gpu_mem_gb")
        servers[srv.id] = srv
        max_gpus = max(max_gpus, srv.gpus)

    for key in snap.options.pair_speed or {}:
        if key.count("|") != 1 or "" in key.split("|"):
            raise InputError(f"options.pair_speed.{key}", "keys name two apps as 'appA|appB'")
    used: dict[str, int] = {}
    job_ids: set[str] = set()
    for i, job in enumerate(snap.jobs):
        p = f"jobs[{i}]"
        if job.id in job_ids:
            raise InputError(f"{p}.id", f"duplicate job id {job.id!r}")
        job_ids.add(job.id)
        _finite(job.remaining_work, f"{p}.remaining_work")
        _finite(job.submit_time, f"{p}.submit_time")
        _penalty(job.restart_penalty, f"{p}.restart_penalty")
        _penalty(job.preemption_penalty, f"{p}.preemption_penalty")
        _finite(job.attained_service, f"{p}.attained_service")
        _finite(job.deadline, f"{p}.deadline")
        if job.packing is not None:
            _finite(job.packing.gpu_mem_gb, f"{p}.packing.gpu_mem_gb")
        if job.min_workers > job.max_workers:
            raise InputError(f"{p}.min_workers",
                             f"min_workers {job.min_workers} is greater than max_workers {job.max_workers}")
        if job.gpus_per_worker > max_gpus:
            raise InputError(f"{p}.gpus_per_worker",
                             f"{job.gpus_per_worker} GPUs per worker do not fit on any server "
                             f"(largest has {max_gpus})")
        _validate_throughput(job, p)
        if job.placement is not None:
            _validate_placement(job, p, servers, used)


def _rules_hold(snap: Snapshot) -> bool:
    """One quick pass over the rules of :func:`check_rules`: True only when every rule holds; False when one
    may not (then :func:`check_rules` checks them in order and names the first broken one).

    Numbers are summed and the sum tested once: a sum of finite numbers is finite or overflows (False, then the
    full pass decides), and a non-finite term makes the sum non-finite.
    """
    try:
        servers = snap.servers
        if len({srv.id for srv in servers}) != len(servers):
            return False
        # a state exactly on inference servers: every training server without one, every other with one
        if any((srv.pool == "inference") == (srv.state is None) for srv in servers):
            return False
        total = snap.now + sum(srv.gpu_mem_gb for srv in servers)
        max_gpus = max((srv.gpus for srv in servers), default=0)
        # servers training may use: their GPUs
        usable = {srv.id: srv.gpus for srv in servers if srv.pool != "inference" or srv.state == "loaned"}
        for key in snap.options.pair_speed or {}:
            if key.count("|") != 1 or "" in key.split("|"):
                return False
        jobs = snap.jobs
        if len({job.id for job in jobs}) != len(jobs):
            return False
        used: dict[str, int] = {}
        for job in jobs:
            if job.restart_penalty > MAX_PENALTY or job.preemption_penalty > MAX_PENALTY:
                return False
            total += (job.remaining_work + job.submit_time + job.restart_penalty + job.preemption_penalty
                      + job.attained_service)
            if job.deadline is not None:
                total += job.deadline
            if job.packing is not None:
                total += job.packing.gpu_mem_gb
            lo, hi, g = job.min_workers, job.max_workers, job.gpus_per_worker
            if lo > hi or g > max_gpus:
                return False
            tp = job.throughput
            if isinstance(tp, PowerThroughput):
                total += tp.rate_per_worker
            elif isinstance(tp, TableThroughput):
                _validate_throughput(job, "")
            pl = job.placement
            if pl is not None:
                n_workers = 0
                for sid, n in pl.items():
                    cap = usable.get(sid)
                    if cap is None or n < 1:
                        return False
                    need = used.get(sid, 0) + n * g
                    if need > cap:
                        return False
                    used[sid] = need
                    n_workers += n
                if not lo <= n_workers <= hi:
                    return False
        return math.isfinite(total)
    except Exception:  # noqa: BLE001 - anything unusual: the full pass decides and names it
        return False


_POOL_STATE = operator.attrgetter("pool", "state")
_GPUS = operator.attrgetter("gpus")
_LAST = operator.itemgetter(-1)
_WORKERS = operator.attrgetter("workers")
_RATE = operator.attrgetter("rate")


def _check_decoded(snap: Snapshot, columns: JobColumns | None = None) -> None:
    """:func:`check_rules` for a snapshot that msgspec decoded from JSON (the same verdict and the same first
    error), with the quick pass :func:`_decoded_rules_hold` in place of :func:`_rules_hold`."""
    if not _decoded_rules_hold(snap, columns):
        check_rules(snap)


def _decoded_rules_hold(snap: Snapshot, columns: JobColumns | None = None) -> bool:
    """:func:`_rules_hold` for a snapshot that msgspec decoded from JSON: True only when every rule of
    :func:`check_rules` holds.

    Decoding settled what the rules need no more of: every number is finite (the decoder refuses NaN, Infinity
    and numbers out of range) and every value has its field's type. What is left are the rules across fields:
    servers a column at a time, jobs from the one loop of :class:`JobColumns` (shared with the repeated-key pass),
    table throughputs and placements in numpy.
    """
    try:
        servers, jobs = snap.servers, snap.jobs
        index = dict(zip(map(_ID, servers), range(len(servers)), strict=True))
        if len(index) != len(servers):
            return False
        pool_states = list(map(_POOL_STATE, servers))
        kinds = set(pool_states)  # a state exactly on inference servers
        if any((pool == "inference") == (state is None) for pool, state in kinds):
            return False
        gpus = list(map(_GPUS, servers))
        for key in snap.options.pair_speed or {}:
            if key.count("|") != 1 or "" in key.split("|"):
                return False
        if not jobs:
            return True
        if columns is None:
            columns = JobColumns(jobs)
        if (columns.distinct != len(jobs) or columns.crossed or columns.top_per > max(gpus, default=0)
                or columns.top_penalty > MAX_PENALTY):
            return False
        if columns.tables and not _tables_hold(columns.tables):
            return False
        if not columns.placed:
            return True
        usable = {("training", None), ("inference", "loaned")}
        if not kinds <= usable:  # a placement on any other server is refused: it has room for none
            gpus = list(map(operator.mul, gpus, map(usable.__contains__, pool_states)))
        return _placements_hold(columns.placed, index, gpus, columns)
    except Exception:  # noqa: BLE001 - anything unusual: the full pass decides and names it
        return False


def _tables_hold(tables: list[tuple]) -> bool:
    """Each table throughput of ``tables`` (throughput, min_workers, max_workers): as many rates as workers, workers
    strictly increasing and covering min..max."""
    tps, lo, hi = zip(*tables, strict=True)
    workers = list(map(_WORKERS, tps))
    sizes = list(map(len, workers))
    if sizes != list(map(len, map(_RATE, tps))):
        return False
    if any(map(operator.gt, map(_FIRST, workers), lo)) or any(map(operator.lt, map(_LAST, workers), hi)):
        return False
    flat = np.fromiter(itertools.chain.from_iterable(workers), np.int64, sum(sizes))
    rising = flat[1:] > flat[:-1]
    rising[np.cumsum(sizes)[:-1] - 1] = True  # the last point of one table and the first of the next
    return bool(rising.all())


def _placements_hold(placed: list[tuple], index: dict, gpus: list, columns: JobColumns | None = None) -> bool:
    """The placements of the running jobs, ``placed`` (placement, min_workers, max_workers, gpus_per_worker):
    positive worker counts adding up to within min..max, on known servers with room (``gpus``: 0 where training
    may not run), no server over its GPUs with all jobs together. Where they hold, the arrays read are kept as
    ``columns.entries`` (:class:`JobColumns`)."""
    placements, lo, hi, per = zip(*placed, strict=True)
    totals = list(map(sum, map(dict.values, placements)))
    if any(map(operator.gt, lo, totals)) or any(map(operator.lt, hi, totals)):
        return False
    sizes = list(map(len, placements))
    entries = sum(sizes)  # at least one: a placement with none places 0 < min_workers
    counts = np.fromiter(itertools.chain.from_iterable(map(dict.values, placements)), np.int64, entries)
    if counts.min() < 1:
        return False
    where = np.fromiter(map(index.__getitem__, itertools.chain.from_iterable(placements)), np.intp, entries)
    need = counts * np.repeat(np.asarray(per, np.int64), sizes)  # each factor at most 2**31 - 1
    cap = np.asarray(gpus, np.int64)
    top = int(need.max())
    if top > int(cap.max()):
        return False
    if top * entries < 2**53:  # float sums exact
        used = np.bincount(where, weights=need, minlength=len(cap))
    else:
        used = np.zeros(len(cap), np.int64)
        np.add.at(used, where, need)
    if not (used <= cap).all():
        return False
    if columns is not None:
        columns.entries = (where, counts, np.asarray(sizes, np.int64), used.astype(np.int64))
    return True


def _validate_throughput(job, p: str) -> None:
    tp = job.throughput
    q = f"{p}.throughput"
    if isinstance(tp, PowerThroughput):
        _finite(tp.rate_per_worker, f"{q}.rate_per_worker")
    elif isinstance(tp, TableThroughput):
        if len(tp.workers) != len(tp.rate):
            raise InputError(f"{q}.rate", f"has {len(tp.rate)} points but workers has {len(tp.workers)}")
        for k in range(1, len(tp.workers)):
            if tp.workers[k] <= tp.workers[k - 1]:
                raise InputError(f"{q}.workers[{k}]", "workers must be strictly increasing")
        for k, r in enumerate(tp.rate):
            _finite(r, f"{q}.rate[{k}]")
        if tp.workers[0] > job.min_workers or tp.workers[-1] < job.max_workers:
            raise InputError(f"{q}.workers",
                             f"covers {tp.workers[0]}..{tp.workers[-1]} workers, not min..max "
                             f"{job.min_workers}..{job.max_workers}")


def _validate_placement(job, p: str, servers: dict, used: dict[str, int]) -> None:
    total = 0
    for sid, n in job.placement.items():
        q = f"{p}.placement.{sid}"
        srv = servers.get(sid)
        if srv is None:
            raise InputError(q, f"unknown server {sid!r}")
        if srv.pool == "inference" and srv.state != "loaned":
            raise InputError(q, f"server {sid!r} is an inference server in state {srv.state!r}, "
                                "not loaned to training")
        if n < 1:
            raise InputError(q, f"workers on a server must be positive, got {n}")
        need = used.get(sid, 0) + n * job.gpus_per_worker
        if need > srv.gpus:
            raise InputError(q, f"server {sid!r} has {srv.gpus} GPUs but its placements use {need}")
        used[sid] = need
        total += n
    if not job.min_workers <= total <= job.max_workers:
        raise InputError(f"{p}.placement",
                         f"places {total} workers, outside min..max {job.min_workers}..{job.max_workers}")


def check_keep_packing(keep) -> tuple[PackingGroup, ...]:
    """The ``keep_packing`` argument of :func:`lyra_solver.decide` checked: a sequence of
    :class:`~lyra_solver.types.PackingGroup` (a decision's ``packing``) or of dicts in its JSON format, each
    naming at least its host job. Raises :class:`InputError` with the path ``keep_packing[i]...``. O(size)."""
    if keep is None:
        return ()
    if isinstance(keep, str | bytes | bytearray | Mapping | msgspec.Struct) or not hasattr(keep, "__iter__"):
        raise InputError("keep_packing", "expected a sequence of PackingGroup (a decision's packing), got "
                                         f"{type(keep).__name__}")
    out = []
    for i, group in enumerate(keep):
        where = f"keep_packing[{i}]"
        if not isinstance(group, PackingGroup | Mapping):
            raise InputError(where, f"expected a PackingGroup or a dict in its format, got {type(group).__name__}")
        try:
            plain = msgspec.to_builtins(group, enc_hook=numpy_scalar)
            checked = msgspec.convert(plain, PackingGroup)
        except (msgspec.ValidationError, TypeError, ValueError, OverflowError) as err:
            m = _AT.match(str(err))
            msg, path = (m.group("msg"), (m.group("path") or "").lstrip(".")) if m else (str(err), "")
            if "[...]" in path:
                path = _name_dict_keys(path, msg, _raw_encoder.encode(plain), PackingGroup)
            raise InputError(f"{where}.{path}" if path and path[0] != "[" else f"{where}{path}", msg) from None
        if not checked.jobs:
            raise InputError(f"{where}.jobs", "must name the host job first, then its guests; got an empty list")
        out.append(checked)
    return tuple(out)
