"""Snapshot, decision and MCKP-instance types (format_version 1).

Frozen msgspec Structs: decoding JSON into them checks types and simple bounds; the cross-field rules
(ids, placements, throughput coverage) live in :mod:`solver.validate`. ``lyra-solver schema`` prints the
JSON Schema generated from these very types.
"""
from __future__ import annotations

from typing import Annotated, Literal

import msgspec
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

PROFILE_MODELS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")


class _Struct(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    pass


# --------------------------------------------------------------------------------------- throughput
class PowerThroughput(_Struct, tag="power", tag_field="kind"):
    """``rate(w) = rate_per_worker * w ** exponent`` with ``0 < exponent <= 1``."""

    rate_per_worker: PositiveFloat
    exponent: Annotated[float, Meta(gt=0, le=1)]


class TableThroughput(_Struct, tag="table", tag_field="kind"):
    """Measured ``rate`` at ``workers`` (strictly increasing), linear in between, covering min..max."""

    workers: Annotated[list[PositiveInt], Meta(min_length=1)]
    rate: Annotated[list[PositiveFloat], Meta(min_length=1)]


class ProfileThroughput(_Struct, tag="profile", tag_field="kind"):
    """A real model's measured scaling curve (package data derived from the Pollux artifact)."""

    model: Literal["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"]


Throughput = PowerThroughput | TableThroughput | ProfileThroughput


# --------------------------------------------------------------------------------------- snapshot
class PackingProfile(_Struct):
    """How a job behaves when it shares GPUs (Gimbal): utilisation, memory, measured pair slowdowns."""

    gpu_util: Annotated[float, Meta(gt=0, le=1)]
    gpu_mem_gb: NonNegFloat
    slowdown: dict[JobId, Annotated[float, Meta(ge=1)]] | None = None
    app: str | None = None  # label for measured pair speeds (options.pair_speed)


class Server(_Struct):
    """A server. ``state`` is given for inference servers only: serving, idle or loaned."""

    id: ServerId
    pool: Literal["training", "inference"]
    gpus: PositiveInt
    state: Literal["serving", "idle", "loaned"] | None = None
    gpu_mem_gb: PositiveFloat = 80.0  # memory of each GPU (packing: both jobs' gpu_mem_gb must fit)


class Inference(_Struct):
    """What the inference side asks this round: ``reclaim`` loaned servers back."""

    reclaim: NonNegInt = 0


class Job(_Struct):
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


class Options(_Struct):
    """Per-round options; command-line flags override them."""

    queue: Literal["sjf", "fifo", "las"] = "sjf"
    allocation: Literal["exact", "greedy", "hull"] = "exact"
    reclaim: Literal["greedy", "exact"] = "greedy"
    placement: Literal["bfd", "exact"] = "bfd"
    packing: Literal["off", "gimbal", "lucid", "random", "exact"] = "off"
    time_limit: PositiveFloat = 1.0
    packing_policy: Literal["jct", "deadline", "makespan"] = "jct"
    packing_overhead: Annotated[float, Meta(ge=0, lt=1)] = 0.05
    sample_stealing: bool = True
    pair_speed: dict[str, Annotated[list[Annotated[float, Meta(gt=0, le=1)]], Meta(min_length=2, max_length=2)]] \
        | None = None  # "appA|appB" -> [speed of A, speed of B] when they share GPUs
    packing_seed: NonNegInt = 0  # seed of the random packing baseline


class Snapshot(_Struct):
    """The cluster as the scheduler sees it at the start of a round."""

    format_version: Literal[1]
    servers: list[Server]
    jobs: list[Job]
    now: float = 0.0
    inference: Inference = Inference()
    options: Options = Options()


# --------------------------------------------------------------------------------------- decision
class JobDecision(_Struct):
    """``run`` (with workers and placement), ``wait`` (queued, not started) or ``preempt``."""

    action: Literal["run", "wait", "preempt"]
    workers: PositiveInt | None = None
    placement: dict[ServerId, PositiveInt] | None = None
    changed: bool | None = None


class ServerDecision(_Struct, omit_defaults=False):
    reclaim: list[ServerId] = []
    loan: list[ServerId] = []


class PackingGroup(_Struct):
    server: ServerId
    gpus: PositiveInt
    jobs: list[JobId]
    shares: dict[JobId, Annotated[float, Meta(gt=0, le=1)]]


class Summary(_Struct):
    """Round summary. ``time_s`` only when timings are asked for (it would break byte determinism)."""

    jct_reduction: float
    preemptions: NonNegInt
    methods: dict[str, str]
    optimality_gap: float | None = None
    bound: float | None = None
    statuses: dict[str, str] = {}
    time_s: float | None = None


class Decision(_Struct, omit_defaults=False):
    format_version: Literal[1]
    servers: ServerDecision
    jobs: dict[JobId, JobDecision]
    summary: Summary
    packing: list[PackingGroup] = []


# --------------------------------------------------------------------------------------- MCKP
BigNonNegInt = Annotated[int, Meta(ge=0, le=2**62)]


class MCKPClass(_Struct):
    weights: Annotated[list[BigNonNegInt], Meta(min_length=1)]
    values: Annotated[list[float], Meta(min_length=1)]


class MCKPInstance(_Struct):
    """Pick exactly one item per class, total weight <= capacity, maximise total value."""

    capacity: BigNonNegInt
    classes: list[MCKPClass]


class MCKPAnswer(_Struct):
    status: Literal["optimal", "feasible", "infeasible", "no_solution"]
    objective: float | None
    bound: float | None
    gap: float | None
    choice: list[int] | None
    method: str
    time_s: float | None = None


SCHEMAS = {"snapshot": Snapshot, "decision": Decision, "mckp": MCKPInstance, "mckp-answer": MCKPAnswer}
