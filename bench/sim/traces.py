"""Trace loaders for the simulator: Philly jobs, Pollux workloads and inference load curves.

One public function per source: :func:`load_philly`, :func:`load_pollux_workload`, :func:`load_load_curve`.
They return plain frozen records; the mapping of a trace row onto the engine's job model (application, work,
elastic range, penalties) is :func:`map_jobs`, seeded and documented:

- application: one of the six measured profiles, from a seeded hash of the row (``blake2b`` of the seed, the
  row's line number and its text), so a row keeps its application whatever slice or filter is taken;
- ``remaining_work = duration * rate(g)`` (the job would take exactly its traced duration at its requested
  ``g`` GPUs, one GPU per worker, on the fewest 8-GPU servers);
- elastic with probability ``elastic_share`` (default 0.5, from a second seeded hash): ``min = ceil(g / 2)``,
  ``max = min(2 g, 64)`` (never below ``g``); otherwise ``min = max = g``;
- restart penalty 30 s, preemption penalty 300 s;
- packing profile (used only by policies with packing, e.g. ``lyra-pack``): ``gpu_util`` and ``gpu_mem_gb`` by
  application from :data:`PACKING_PROFILES`, ``app`` = the application name.

:data:`PACKING_PROFILES` is a documented table, not a measurement of these models. The utilisations are the
modes of ``gpu_milli / 1000`` of the single-GPU fractional pods of the Alibaba GPU-sharing trace
(``openb_pod_list_default.csv``: 0.81 (35% of pods), 0.65 (8%), 0.47 (24%, the median), 0.32 (11%) and the 10th
percentile 0.23), assigned to the six applications by their compute per step (ImageNet ResNet-50 and BERT the
heaviest, NCF the lightest); the memory is an estimate of each model's training footprint per GPU at the Pollux
batch sizes (an assumption). Override with ``map_jobs(..., packing={app: (gpu_util, gpu_mem_gb)})``.

A bad or truncated file is an :class:`~lyra_solver.InputError` naming the file and the line (``lyra-solver
simulate`` exits 2 on it).

References
----------
Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads", USENIX ATC 2019
(the Philly trace); Qiao et al., "Pollux", OSDI 2021 (the workloads and throughput measurements).
"""
from __future__ import annotations

import csv
import hashlib
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from lyra_solver.errors import InputError
from lyra_solver.throughput import rate_one
from lyra_solver.types import PROFILE_MODELS, ProfileThroughput

PHILLY_FIELDS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
POLLUX_FIELDS = ("name", "time", "application", "num_replicas", "batch_size")
ALIBABA_QPS_FIELDS = ("timestamp_anon", "value")

# GPU-hours of a Pollux workload job by application (the workloads give arrival, application and size but no
# duration). Pollux draws jobs into size classes of 0-1, 1-10, 10-100 and 100-1000 GPU-hours by application;
# each application gets the geometric middle of its class. An assumption of this simulator, overridable.
POLLUX_GPU_HOURS = {"cifar10": 0.3, "ncf": 0.3, "deepspeech2": 3.0, "yolov3": 3.0, "bert": 3.0, "imagenet": 30.0}

# (gpu_util, gpu_mem_gb) of each application when it shares GPUs: see the module docstring for the source.
PACKING_PROFILES: dict[str, tuple[float, float]] = {
    "imagenet": (0.81, 14.0), "bert": (0.81, 16.0), "yolov3": (0.65, 12.0), "deepspeech2": (0.47, 10.0),
    "cifar10": (0.32, 3.0), "ncf": (0.23, 2.0)}


@dataclass(frozen=True)
class TraceJob:
    """One training job of a trace: arrival (s from the trace's start), GPUs requested, duration at that size."""

    line: int
    submit: float
    gpus: int
    duration: float
    key: str  # the row's text: the seed of its application and elasticity
    app: str | None = None  # given by the trace (Pollux) or None (drawn by map_jobs)


@dataclass(frozen=True)
class SimJobSpec:
    """A job as the simulator runs it: the engine's fields, fixed for the whole run."""

    id: str
    line: int
    submit: float
    gpus: int
    duration: float
    app: str
    work: float
    min_workers: int
    max_workers: int
    restart_penalty: float
    preemption_penalty: float
    gpu_util: float = 1.0  # packing profile (policies with packing only)
    gpu_mem_gb: float = 0.0


@dataclass(frozen=True)
class LoadCurve:
    """``L(t)`` in [0, 1]: step values at ``times`` (seconds from 0), repeated with ``period``."""

    times: tuple[float, ...]
    values: tuple[float, ...]
    period: float

    def at(self, t: float) -> float:
        import bisect

        x = t % self.period
        i = bisect.bisect_right(self.times, x) - 1
        return self.values[max(i, 0)]


def _open_rows(path: str | Path, fields: tuple[str, ...]):
    path = str(path)
    try:
        fh = open(path, newline="", encoding="utf-8")  # noqa: SIM115 - closed by the caller's with
    except OSError as err:
        raise InputError("$", f"cannot read trace: {err.strerror}", path) from None
    reader = csv.reader(fh)
    try:
        header = next(reader)
    except StopIteration:
        fh.close()
        raise InputError("line 1", "empty file: no header", path) from None
    except (csv.Error, UnicodeDecodeError) as err:
        fh.close()
        raise InputError("line 1", f"not CSV: {err}", path) from None
    missing = [f for f in fields if f not in header]
    if missing:
        fh.close()
        raise InputError("line 1", f"header lacks column {missing[0]!r} (expected {', '.join(fields)})", path)
    return fh, reader, {f: header.index(f) for f in header}, len(header)


def _rows(path, fields):
    fh, reader, col, width = _open_rows(path, fields)
    with fh:
        try:
            for row in reader:
                line = reader.line_num
                if not row:
                    continue
                if len(row) != width:
                    raise InputError(f"line {line}", f"{len(row)} fields, expected {width} (truncated or "
                                     "malformed row)", str(path))
                yield line, row, col
        except (csv.Error, UnicodeDecodeError) as err:
            raise InputError(f"line {reader.line_num}", f"not CSV: {err}", str(path)) from None


def _num(text: str, path, line: int, field: str, *, integer: bool = False, positive: bool = False) -> float:
    try:
        x = int(text) if integer else float(text)
    except ValueError:
        raise InputError(f"line {line}", f"{field}: not a{'n integer' if integer else ' number'}: {text!r}",
                         str(path)) from None
    if not math.isfinite(x) or x < 0 or (positive and x <= 0):
        raise InputError(f"line {line}", f"{field}: must be {'positive' if positive else 'non-negative'}, "
                         f"got {text!r}", str(path))
    return x


#: Most GPUs one trace row may ask for (Philly's largest job asks for 128).
MAX_JOB_GPUS = 1_000_000


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def load_philly(path: str | Path, *, start: str | None = None, end: str | None = None,
                cluster: str | None = None, limit: int | None = None) -> list[TraceJob]:
    """Jobs of the Philly trace (``timestamp,duration,num_gpus,gpu_time,cluster``), in arrival order.

    Parameters
    ----------
    path : str or Path
        The CSV file.
    start, end : str, optional
        ISO dates or times (UTC, as in the file): keep jobs submitted in ``[start, end)``.
    cluster : str, optional
        Keep only this virtual cluster (hash).
    limit : int, optional
        Keep the first ``limit`` jobs (after filtering, in arrival order).

    Returns
    -------
    list of TraceJob
        Submit times in seconds from the first kept job's arrival. Sorted by (timestamp, line). Running time
        O(n log n).
    """
    t0 = _when(start) if start else None
    t1 = _when(end) if end else None
    out = []
    for line, row, col in _rows(path, PHILLY_FIELDS):
        try:
            when = _when(row[col["timestamp"]])
        except ValueError:
            raise InputError(f"line {line}", f"timestamp: not a date and time: {row[col['timestamp']]!r}",
                             str(path)) from None
        duration = _num(row[col["duration"]], path, line, "duration", positive=True)
        gpus = int(_num(row[col["num_gpus"]], path, line, "num_gpus", integer=True, positive=True))
        if gpus > MAX_JOB_GPUS:  # named by its line here, not later as a snapshot field of the engine
            raise InputError(f"line {line}", f"num_gpus: at most {MAX_JOB_GPUS:,} GPUs per job, got {gpus:,}",
                             str(path))
        if cluster is not None and row[col["cluster"]] != cluster:
            continue
        if (t0 is not None and when < t0) or (t1 is not None and when >= t1):
            continue
        out.append((when.timestamp(), line, gpus, duration, ",".join(row)))
    out.sort()
    if limit is not None:
        out = out[:limit]
    if not out:
        return []
    base = out[0][0]
    return [TraceJob(line=ln, submit=ts - base, gpus=g, duration=d, key=k) for ts, ln, g, d, k in out]


def load_pollux_workload(path: str | Path, *, gpu_hours: dict[str, float] | None = None) -> list[TraceJob]:
    """A Pollux workload (``name,time,application,num_replicas,batch_size``): 160 jobs for 16 nodes x 4 GPUs.

    The workloads give no duration: a job runs ``gpu_hours[app] * 3600 / num_replicas`` seconds at its
    requested size (:data:`POLLUX_GPU_HOURS` by default, an assumption stated in the README).
    """
    hours = {**POLLUX_GPU_HOURS, **(gpu_hours or {})}
    out = []
    for line, row, col in _rows(path, POLLUX_FIELDS):
        app = row[col["application"]]
        if app not in PROFILE_MODELS:
            raise InputError(f"line {line}", f"application: unknown {app!r} (expected one of "
                             f"{', '.join(PROFILE_MODELS)})", str(path))
        t = _num(row[col["time"]], path, line, "time")
        g = int(_num(row[col["num_replicas"]], path, line, "num_replicas", integer=True, positive=True))
        out.append(TraceJob(line=line, submit=t, gpus=g, duration=hours[app] * 3600.0 / g, key=",".join(row),
                            app=app))
    return sorted(out, key=lambda j: (j.submit, j.line))


def load_load_curve(path: str | Path, *, window: float = 300.0) -> LoadCurve:
    """The inference load ``L(t)`` in [0, 1] from the Alibaba GenAI QPS file or a plain ``time,value`` CSV.

    Alibaba (``timestamp_anon,value,...``): ``value`` summed over containers per ``window`` seconds. Plain:
    one value per time (seconds). Either way the values are divided by their peak, times start at 0 and the
    curve repeats with period ``last time + window`` (Alibaba) or ``last time`` plus the median step (plain).
    """
    fh, reader, col, _ = _open_rows(path, ("value",))
    fh.close()
    alibaba = "timestamp_anon" in col
    tcol = "timestamp_anon" if alibaba else "time"
    if tcol not in col:
        raise InputError("line 1", "header needs a 'time' column (or the Alibaba 'timestamp_anon')", str(path))
    pts = []
    for line, row, c in _rows(path, (tcol, "value")):
        pts.append((_num(row[c[tcol]], path, line, tcol), _num(row[c["value"]], path, line, "value")))
    if not pts:
        raise InputError("line 2", "no data rows", str(path))
    if alibaba:
        first = min(t for t, _ in pts)
        sums: dict[int, float] = {}
        for t, v in pts:
            k = int((t - first) // window)
            sums[k] = sums.get(k, 0.0) + v
        n = max(sums) + 1
        times = [k * window for k in range(n)]
        values = [sums.get(k, 0.0) for k in range(n)]
        period = n * window
    else:
        pts.sort()
        first = pts[0][0]
        times = [t - first for t, _ in pts]
        values = [v for _, v in pts]
        steps = sorted(b - a for a, b in zip(times, times[1:], strict=False) if b > a)
        period = times[-1] + (steps[len(steps) // 2] if steps else window)
    peak = max(values)
    if peak <= 0:
        raise InputError("value", "the load is zero everywhere", str(path))
    return LoadCurve(tuple(times), tuple(v / peak for v in values), float(period))


def _unit(seed: int, salt: str, key: str, line: int) -> float:
    h = hashlib.blake2b(f"{seed}|{salt}|{line}|{key}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2.0**64


def map_jobs(trace: list[TraceJob], *, seed: int = 0, elastic_share: float = 0.5, restart_penalty: float = 30.0,
             preemption_penalty: float = 300.0, max_elastic: int = 64, server_gpus: int = 8,
             apps: tuple[str, ...] = PROFILE_MODELS,
             packing: dict[str, tuple[float, float]] | None = None) -> list[SimJobSpec]:
    """The documented, seeded mapping of trace rows onto the engine's job model (see the module docstring).

    ``packing`` overrides entries of :data:`PACKING_PROFILES` (``{app: (gpu_util, gpu_mem_gb)}``).
    """
    if not 0.0 <= elastic_share <= 1.0:
        raise ValueError(f"elastic_share must be in [0, 1], got {elastic_share}")
    profiles = {**PACKING_PROFILES, **(packing or {})}
    for app, (u, m) in profiles.items():
        if not (0 < u <= 1 and m >= 0):
            raise ValueError(f"packing[{app!r}]: gpu_util must be in (0, 1] and gpu_mem_gb >= 0, got {(u, m)}")
    out = []
    for i, tj in enumerate(trace):
        app = tj.app or apps[int(_unit(seed, "app", tj.key, tj.line) * len(apps))]
        g = tj.gpus
        work = tj.duration * rate_one(ProfileThroughput(model=app), g, server_gpus=server_gpus)
        if _unit(seed, "elastic", tj.key, tj.line) < elastic_share:
            lo, hi = math.ceil(g / 2), max(g, min(2 * g, max_elastic))
        else:
            lo = hi = g
        out.append(SimJobSpec(id=f"j{i}", line=tj.line, submit=tj.submit, gpus=g, duration=tj.duration, app=app,
                              work=work, min_workers=lo, max_workers=hi, restart_penalty=restart_penalty,
                              preemption_penalty=preemption_penalty, gpu_util=profiles[app][0],
                              gpu_mem_gb=profiles[app][1]))
    return out
