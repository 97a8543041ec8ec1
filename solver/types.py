"""Snapshot, decision and MCKP-instance types (format_version 1).

Frozen msgspec Structs: decoding JSON into them checks types and simple bounds; the cross-field rules
(ids, placements, throughput coverage) live in :mod:`solver.validate`. ``lyra-solver schema`` prints the
JSON Schema generated from these very types.
"""
from __future__ import annotations

import numbers
import operator
import types
import typing
from typing import Annotated, Any, Literal, get_args

import msgspec
import msgspec.inspect as _inspect
from lyra_solver.formulations.mckp import METHODS as MCKP_METHODS
from lyra_solver.formulations.vocabulary import (
    SERVER_STATES,
    Allocation,
    Objective,
    Packing,
    PackingPolicy,
    PlacementOption,
    QueueOrder,
    ReclaimOption,
    ServerPool,
    ServerState,
    StatusName,
    StepMethod,
)
from msgspec import Meta

FORMAT_VERSION = 1

MAX_INT = 2**31 - 1  # counts (GPUs, workers, servers) stay far from int64 overflow in products and sums
PositiveInt = Annotated[int, Meta(ge=1, le=MAX_INT)]
NonNegInt = Annotated[int, Meta(ge=0, le=MAX_INT)]
NonNegFloat = Annotated[float, Meta(ge=0)]
PositiveFloat = Annotated[float, Meta(gt=0)]
Id = Annotated[str, Meta(min_length=1)]
ServerId = Id
JobId = Id

ProfileModel = Literal["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"]
PROFILE_MODELS: tuple[str, ...] = get_args(ProfileModel)
JobAction = Literal["run", "wait", "preempt"]
JOB_ACTIONS: tuple[str, ...] = get_args(JobAction)


class FrozenDict(dict):
    """A ``dict`` that cannot be changed after construction: the mappings of the frozen structs below.

    A subclass of ``dict``, so that msgspec encodes it and ``==`` compares it as a dict; every method that would
    change it raises ``TypeError``. Copies (``copy.copy``, pickling) are frozen dicts again.
    """

    __slots__ = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{type(self).__name__} is read-only (a snapshot or decision is immutable; build a new "
                        "one with msgspec.structs.replace)")

    __setitem__ = __delitem__ = __ior__ = _read_only  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _read_only  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (dict(self),)

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        import copy

        return type(self)({copy.deepcopy(k, memo): copy.deepcopy(v, memo) for k, v in self.items()})


#: Per struct class: its fields that hold sequences (stored as tuples) or mappings (stored as frozen dicts).
_FROZEN_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _frozen_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """The fields of ``cls`` that :func:`_freeze` fixes, from msgspec's view of its types (the reference that
    ``tests/solver/test_parse_quick.py`` holds :func:`_annotation_kinds`, which runs at class creation, to)."""
    def kinds(t: Any) -> set[bool]:
        if isinstance(t, _inspect.UnionType):
            return set().union(*(kinds(u) for u in t.types))
        if isinstance(t, _inspect.VarTupleType | _inspect.TupleType):
            return {True}
        if isinstance(t, _inspect.DictType):
            return {False}
        return set()

    out = []
    for f in _inspect.type_info(cls).fields:
        k = kinds(f.type)
        if len(k) == 1:
            out.append((f.name, k.pop()))
    return tuple(out)


def _annotation_kinds(tp: Any) -> set[bool]:
    """Like :func:`_frozen_fields`' ``kinds``, on a type annotation: True for a tuple or list, False for a dict."""
    while typing.get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_annotation_kinds(u) for u in get_args(tp)))
    if origin in (tuple, list) or tp in (tuple, list):
        return {True}
    if origin is dict or tp is dict:
        return {False}
    return set()


def _freeze(value: Any, sequence: bool) -> Any:
    if sequence:
        return value if value is None or type(value) is tuple else tuple(value)
    return FrozenDict(value) if type(value) is dict else value


def _make_post_init(fields: tuple[tuple[str, bool], ...]):
    """A ``__post_init__`` that stores each of ``fields`` as :func:`_freeze` would, as straight-line code (it runs
    for every struct decoded: one per job of a snapshot)."""
    lines = ["def __post_init__(self):"]
    for name, sequence in fields:
        if sequence:
            lines += [f"    v = self.{name}",
                      "    if v is not None and type(v) is not tuple:",
                      f"        _set(self, {name!r}, tuple(v))"]
        else:
            lines += [f"    v = self.{name}",
                      "    if type(v) is dict:",
                      f"        _set(self, {name!r}, FrozenDict(v))"]
    namespace: dict[str, Any] = {"_set": msgspec.structs.force_setattr, "FrozenDict": FrozenDict}
    exec("\n".join(lines), namespace)  # noqa: S102 - source built above from field names only
    return namespace["__post_init__"]


class _Struct(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """A frozen struct whose sequences are tuples and whose mappings are :class:`FrozenDict`: immutable after
    construction, however it was built (decoded JSON, keyword arguments with lists and dicts, ``replace``).

    Each subclass with such fields gets, at its creation, a ``__post_init__`` that converts exactly those fields
    (:func:`_make_post_init`); a subclass without any has none, so that decoding it calls no Python code.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = []
        for name, hint in typing.get_type_hints(cls, include_extras=True).items():  # the module's names so far
            kinds = _annotation_kinds(hint)
            if len(kinds) == 1:
                fields.append((name, kinds.pop()))
        _FROZEN_FIELDS[cls] = tuple(fields)
        if fields:
            cls.__post_init__ = _make_post_init(tuple(fields))  # type: ignore[attr-defined]


class _Canonical(_Struct):
    """A struct that :func:`canonical` normalises before encoding (see there)."""


def canonical(obj: Any) -> Any:
    """``obj`` with every value in its canonical form: what :func:`lyra_solver.encode` writes.

    In each snapshot, decision-summary and MCKP struct, a number is made the field's own type (``5`` in a float
    field becomes ``5.0``, a numpy integer an ``int``, a numpy float a ``float``) and a value equal to the
    field's default becomes the default itself, so that encoding omits it exactly as it omits a field never
    given: equal objects encode to the same bytes whatever their origin. Values of other types are left for the
    validator (:func:`lyra_solver.validate.validate_snapshot`) to report with their field path. Structs that
    need no change are returned as they are (no copy).

    Running time O(size of the object); done at encoding, so decoding and constructing cost nothing extra.
    """
    if isinstance(obj, _Canonical):
        return _canonical_struct(obj)
    if isinstance(obj, list | tuple):
        out = tuple(canonical(v) for v in obj)
        return obj if all(a is b for a, b in zip(out, obj, strict=True)) else out
    if isinstance(obj, msgspec.Struct):
        spec = _SPECS.get(type(obj))
        if spec is None:
            spec = _SPECS[type(obj)] = _spec_of(type(obj))
        changes = {name: new for name, _, _, nested in spec
                   if nested and (new := canonical(old := getattr(obj, name))) is not old}
        return msgspec.structs.replace(obj, **changes) if changes else obj
    if isinstance(obj, dict):
        out = {k: canonical(v) for k, v in obj.items()}
        return obj if all(out[k] is v for k, v in obj.items()) else out
    return obj


def _canonical_struct(obj: _Canonical) -> _Canonical:
    spec = _SPECS.get(type(obj))
    if spec is None:
        spec = _SPECS[type(obj)] = _spec_of(type(obj))
    changes = None
    for name, kind, default, nested in spec:
        value = getattr(obj, name)
        if value is default or value is None:
            continue
        fixed = value
        if nested:
            fixed = canonical(value)
        elif kind is not None:
            fixed = _normal(value, kind)
        if default is not _NO_DEFAULT and type(fixed) is type(default) and fixed == default:
            fixed = default
        if fixed is not value:
            if changes is None:
                changes = {}
            changes[name] = fixed
    return msgspec.structs.replace(obj, **changes) if changes else obj


_NO_DEFAULT: Any = msgspec.NODEFAULT
_SPECS: dict[type, tuple[tuple[str, Any, Any, bool], ...]] = {}
_FLOAT, _INT, _FLOAT_LIST, _INT_LIST, _FLOAT_DICT, _INT_DICT = range(6)


def _kind_of(t) -> int | None:
    if isinstance(t, _inspect.UnionType):
        kinds = {_kind_of(u) for u in t.types if not isinstance(u, _inspect.NoneType)}
        return kinds.pop() if len(kinds) == 1 else None
    if isinstance(t, _inspect.FloatType):
        return _FLOAT
    if isinstance(t, _inspect.IntType):
        return _INT
    if isinstance(t, _inspect.ListType | _inspect.VarTupleType):
        return {_FLOAT: _FLOAT_LIST, _INT: _INT_LIST}.get(_kind_of(t.item_type))
    if isinstance(t, _inspect.DictType):
        return {_FLOAT: _FLOAT_DICT, _INT: _INT_DICT}.get(_kind_of(t.value_type))
    return None


def _has_struct(t) -> bool:
    """Whether values of type ``t`` may hold a struct that :func:`canonical` changes."""
    if isinstance(t, _inspect.StructType):
        return issubclass(t.cls, _Canonical) or any(_has_struct(f.type) for f in t.fields)
    if isinstance(t, _inspect.UnionType):
        return any(_has_struct(u) for u in t.types)
    if isinstance(t, _inspect.ListType | _inspect.VarTupleType):
        return _has_struct(t.item_type)
    if isinstance(t, _inspect.DictType):
        return _has_struct(t.value_type)
    return False


def _spec_of(cls: type) -> tuple[tuple[str, Any, Any, bool], ...]:
    """Per field: name, numeric kind (or None), default to fold equal values into, whether it holds structs."""
    spec = []
    for f in _inspect.type_info(cls).fields:
        kind = _kind_of(f.type)
        nested = _has_struct(f.type)
        default = f.default
        if default is None or default is msgspec.NODEFAULT:
            default = _NO_DEFAULT  # None is a singleton; empty factory defaults are recognised by msgspec itself
        if kind is not None or nested or default is not _NO_DEFAULT:
            spec.append((f.name, kind, default, nested))
    return tuple(spec)


def _number(value, kind: int):
    t = type(value)
    if kind == _FLOAT:
        if t is float or t is bool or not isinstance(value, numbers.Real):
            return value
        return float(value)
    if t is int or t is bool or not isinstance(value, numbers.Integral):
        return value
    return operator.index(value)


def _normal(value, kind: int):
    if kind <= _INT:
        return _number(value, kind)
    inner = _FLOAT if kind in (_FLOAT_LIST, _FLOAT_DICT) else _INT
    if kind <= _INT_LIST:
        if isinstance(value, list | tuple):
            fixed = tuple(_number(v, inner) for v in value)
            return value if all(a is b for a, b in zip(fixed, value, strict=True)) else fixed
        return value
    if isinstance(value, dict):
        fixed = {k: _number(v, inner) for k, v in value.items()}
        return value if all(fixed[k] is v for k, v in value.items()) else fixed
    return value


# --------------------------------------------------------------------------------------- throughput
class PowerThroughput(_Canonical, tag="power", tag_field="kind", gc=False):
    """``rate(w) = rate_per_worker * w ** exponent`` with ``0 < exponent <= 1``."""

    rate_per_worker: PositiveFloat
    exponent: Annotated[float, Meta(gt=0, le=1)]


class TableThroughput(_Canonical, tag="table", tag_field="kind", gc=False):
    """Measured ``rate`` at ``workers`` (strictly increasing), linear in between, covering min..max."""

    workers: Annotated[tuple[PositiveInt, ...], Meta(min_length=1)]
    rate: Annotated[tuple[PositiveFloat, ...], Meta(min_length=1)]


class ProfileThroughput(_Canonical, tag="profile", tag_field="kind", gc=False):
    """A real model's measured scaling curve (package data derived from the Pollux artifact)."""

    model: ProfileModel


Throughput = PowerThroughput | TableThroughput | ProfileThroughput


# --------------------------------------------------------------------------------------- snapshot
class PackingProfile(_Canonical, gc=False):
    """How a job behaves when it shares GPUs (Gimbal): utilisation, memory, measured pair slowdowns."""

    gpu_util: Annotated[float, Meta(gt=0, le=1)]
    gpu_mem_gb: NonNegFloat
    slowdown: dict[JobId, Annotated[float, Meta(ge=1)]] | None = None
    app: str | None = None  # label for measured pair speeds (options.pair_speed)


class Server(_Canonical, gc=False):
    """A server. ``state`` is given for inference servers only: serving, idle or loaned."""

    id: ServerId
    pool: ServerPool
    gpus: PositiveInt
    state: ServerState | None = None
    gpu_mem_gb: PositiveFloat = 80.0  # memory of each GPU (packing: both jobs' gpu_mem_gb must fit)


class Inference(_Canonical, gc=False):
    """What the inference side asks this round: ``reclaim`` loaned servers back."""

    reclaim: NonNegInt = 0


class Job(_Canonical, gc=False):
    """A training job; ``placement`` (workers per server) is present iff the job is running.

    Defaults: ``gpus_per_worker`` 1, ``submit_time`` 0, penalties 0, ``attained_service`` 0 (GPU-seconds
    received so far, used by the ``las`` queue order).
    """

    id: JobId
    min_workers: PositiveInt
    max_workers: PositiveInt
    remaining_work: NonNegFloat
    throughput: Throughput
    gpus_per_worker: PositiveInt = 1
    submit_time: float = 0.0
    placement: dict[ServerId, Annotated[int, Meta(le=MAX_INT)]] | None = None
    restart_penalty: NonNegFloat = 0.0
    preemption_penalty: NonNegFloat = 0.0
    attained_service: NonNegFloat = 0.0
    packing: PackingProfile | None = None
    deadline: float | None = None


class Options(_Canonical, gc=False):
    """Per-round options; command-line flags override them."""

    queue: QueueOrder = "sjf"
    allocation: Allocation = "exact"
    reclaim: ReclaimOption = "greedy"
    placement: PlacementOption = "bfd"
    packing: Packing = "off"
    time_limit: PositiveFloat = 1.0
    packing_policy: PackingPolicy = "jct"
    packing_overhead: Annotated[float, Meta(ge=0, lt=1)] = 0.05
    sample_stealing: bool = True
    # "appA|appB" -> [speed of A, speed of B] when they share GPUs
    pair_speed: dict[str, Annotated[tuple[Annotated[float, Meta(gt=0, le=1)], ...],
                                    Meta(min_length=2, max_length=2)]] | None = None
    packing_seed: NonNegInt = 0  # seed of the random packing baseline
    objective: Objective = "jct-reduction"  # the allocation's value table (lyra_solver.objectives)


class Snapshot(_Canonical, weakref=True):
    """The cluster as the scheduler sees it at the start of a round."""

    format_version: Literal[1]
    servers: tuple[Server, ...]
    jobs: tuple[Job, ...]
    now: float = 0.0
    inference: Inference = Inference()
    options: Options = Options()


# --------------------------------------------------------------------------------------- decision
class JobDecision(_Struct, gc=False):
    """``run`` (with workers and placement), ``wait`` (queued, not started) or ``preempt``.

    Not tracked by the garbage collector (``gc=False``, as the snapshot's many-instance structs): it holds a string,
    numbers and a frozen dict of strings to numbers, so it forms no reference cycle; a 50,000-job decision's 17,000
    tracked structs made the collection after each round cost 2.3 ms instead of 0.9.
    """

    action: JobAction
    workers: PositiveInt | None = None
    placement: dict[ServerId, PositiveInt] | None = None
    changed: bool | None = None


class ServerDecision(_Struct, omit_defaults=False):
    reclaim: tuple[ServerId, ...] = ()
    loan: tuple[ServerId, ...] = ()


class PackingGroup(_Canonical):
    server: ServerId
    gpus: PositiveInt
    jobs: tuple[JobId, ...]
    shares: dict[JobId, Annotated[float, Meta(gt=0, le=1)]]


class Summary(_Canonical):
    """Round summary. ``time_s`` only when timings are asked for (it would break byte determinism)."""

    jct_reduction: float
    preemptions: NonNegInt
    methods: dict[str, StepMethod]
    optimality_gap: float | None = None
    bound: float | None = None
    statuses: dict[str, StatusName] = {}
    time_s: float | None = None


class Decision(_Struct, omit_defaults=False):
    format_version: Literal[1]
    servers: ServerDecision
    jobs: dict[JobId, JobDecision]
    summary: Summary
    packing: tuple[PackingGroup, ...] = ()


# --------------------------------------------------------------------------------------- MCKP
BigNonNegInt = Annotated[int, Meta(ge=0, le=2**62)]


class MCKPClass(_Canonical):
    weights: Annotated[tuple[BigNonNegInt, ...], Meta(min_length=1)]
    values: Annotated[tuple[float, ...], Meta(min_length=1)]


class MCKPInstance(_Canonical):
    """Pick exactly one item per class, total weight <= capacity, maximise total value."""

    capacity: BigNonNegInt
    classes: tuple[MCKPClass, ...]


class MCKPAnswer(_Canonical):
    status: StatusName
    objective: float | None
    bound: float | None
    gap: float | None
    choice: tuple[int, ...] | None
    method: Literal[MCKP_METHODS]  # type: ignore[valid-type]
    time_s: float | None = None


SCHEMAS = {"snapshot": Snapshot, "decision": Decision, "mckp": MCKPInstance, "mckp-answer": MCKPAnswer}

#: JSON Schema dialect of :func:`json_schema`.
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def json_schema(what: str) -> dict:
    """The JSON Schema of a format (``snapshot``, ``decision``, ``mckp``, ``mckp-answer``): the contract.

    Generated from the types above (types, minimums and maximums, closed vocabularies, required fields), with
    what the types leave to the validator but a schema can still say: a server's ``state`` is required on the
    inference pool and absent on the training pool, and a placement puts at least one worker on each server it
    names. What no schema can say (rules across fields: unique ids, min <= max, placements on known and usable
    servers within their GPUs, throughput tables covering min..max) is checked by
    :func:`lyra_solver.validate.check_rules`; ``tests/solver/test_schema.py`` lists those rules.
    """
    schema = msgspec.json.schema(SCHEMAS[what])
    defs = schema.get("$defs", {})
    if "Server" in defs:
        defs["Server"]["if"] = {"properties": {"pool": {"const": "inference"}}, "required": ["pool"]}
        defs["Server"]["then"] = {"required": ["state"], "properties": {"state": {"enum": list(SERVER_STATES)}}}
        defs["Server"]["else"] = {"properties": {"state": {"type": "null"}}}
    if "Job" in defs:
        for option in defs["Job"]["properties"]["placement"].get("anyOf", []):
            if option.get("type") == "object":
                option["additionalProperties"]["minimum"] = 1
    return {"$schema": SCHEMA_DIALECT, "$id": f"urn:lyra-solver:schema:{what}:{FORMAT_VERSION}", **schema}
