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
- a Pollux workload row (:func:`load_pollux_workload`) is sized by the artifact's job model (:mod:`.pollux`):
  its work is the statistical progress to its model's ``max_epochs`` at its batch size, it is elastic in
  ``1..batch / smallest local batch`` (ncf: 1) and its requested size is the row's ``num_replicas``;
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
import io
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lyra_solver.errors import InputError
from lyra_solver.throughput import rate_one
from lyra_solver.types import PROFILE_MODELS, ProfileThroughput

PHILLY_FIELDS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
POLLUX_FIELDS = ("name", "time", "application", "num_replicas", "batch_size")
ALIBABA_QPS_FIELDS = ("timestamp_anon", "value")

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
    batch_size: int = 0  # the Pollux workload's global batch size (0: a Philly row)
    root: str = ""  # the Pollux data folder whose measurements size the job (Pollux rows only)


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
    batch_size: int = 0  # the Pollux workload row's global batch size (0: not a Pollux job)
    model: Any = None  # the Pollux artifact's job model (.pollux.PolluxJob) of a Pollux workload row, else None


@dataclass(frozen=True)
class LoadCurve:
    """Step values at ``times`` (seconds from 0), repeated with ``period``: ``L(t)`` in [0, 1], the share of the
    inference servers that serve (``peak`` mode), or with ``absolute`` the number of servers the load needs
    (the load divided by what one server serves)."""

    times: tuple[float, ...]
    values: tuple[float, ...]
    period: float
    absolute: bool = False

    def servers(self, t: float, n: int) -> int:
        """Inference servers (of ``n``) the load needs at ``t``: ``ceil(L(t) n)``, or ``ceil(value)`` in the
        absolute mode, at most ``n``."""
        v = self.at(t)
        return min(n, math.ceil((v if self.absolute else v * n) - 1e-9))

    def at(self, t: float) -> float:
        import bisect

        x = t % self.period
        i = bisect.bisect_right(self.times, x) - 1
        return self.values[max(i, 0)]


#: Longest trace duration accepted (seconds, about 3 years; Philly's longest job ran 4.6e6 s): with
#: :data:`~lyra_solver.bench.sim.engine.MAX_EVENTS` it bounds the rounds of a replay.
MAX_DURATION = 1e8

#: A number as the CSV files write it: ASCII digits, an optional sign, point and exponent (``1_000``, ``١٢``,
#: ``nan`` and ``inf`` are refused, though Python's ``float`` would take them).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_INTEGER = re.compile(r"[+-]?\d+", re.ASCII)


def _read_text(path: str | Path, what: str) -> tuple[str, str]:
    """(name, text) of a CSV file or of standard input (``-``), at most :data:`lyra_solver.io.MAX_INPUT_BYTES`;
    a byte-order mark is dropped. ``what`` ("trace", "load") names the input in errors."""
    from lyra_solver.io import read_bytes

    path = str(path)
    name = "<stdin>" if path == "-" else path
    try:
        data = read_bytes(path)
    except InputError as err:
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


def _when(text: str) -> datetime:
    """A date and time of the trace or of ``--start``/``--end``: UTC unless it carries an offset
    (``+05:00``), which is honoured."""
    when = datetime.fromisoformat(text)
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


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
    t0 = _bound(start, "--start")
    t1 = _bound(end, "--end")
    out = []
    for line, row, col, name in _rows(path, PHILLY_FIELDS):
        try:
            when = _when(row[col["timestamp"]])
        except ValueError:
            raise InputError(f"line {line}", f"timestamp: not a date and time: {row[col['timestamp']]!r}",
                             name) from None
        duration = _num(row[col["duration"]], name, line, "duration", positive=True, most=MAX_DURATION)
        gpus = int(_num(row[col["num_gpus"]], name, line, "num_gpus", integer=True, positive=True, most=2**31 - 1))
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


def _bound(text: str | None, flag: str) -> datetime | None:
    if not text:
        return None
    try:
        return _when(text)
    except ValueError:
        raise InputError(flag, f"not an ISO date and time: {text!r}") from None


def load_pollux_workload(path: str | Path, *, root: str | Path | None = None) -> list[TraceJob]:
    """A Pollux workload (``name,time,application,num_replicas,batch_size``): 160 jobs for 16 nodes x 4 GPUs.

    Each row is sized by the Pollux artifact's job model (:mod:`.pollux`): it trains to its application's
    ``max_epochs`` at the row's ``batch_size``, with the measurements under ``root`` (default: the folder above
    the workload's, i.e. ``shared/data/pollux``). A row the model cannot size (an unknown application, a batch
    size outside the application's validated range) is an :class:`InputError` naming the file and line.
    """
    from .pollux import app as pollux_app

    root = Path(path).resolve().parent.parent if root is None else Path(root)
    out = []
    for line, row, col, name in _rows(path, POLLUX_FIELDS):
        app = row[col["application"]]
        if app not in PROFILE_MODELS:
            raise InputError(f"line {line}", f"application: unknown {app!r} (expected one of "
                             f"{', '.join(PROFILE_MODELS)})", name)
        t = _num(row[col["time"]], name, line, "time")
        g = int(_num(row[col["num_replicas"]], name, line, "num_replicas", integer=True, positive=True,
                     most=2**31 - 1))
        b = int(_num(row[col["batch_size"]], name, line, "batch_size", integer=True, positive=True, most=2**31 - 1))
        data = pollux_app(app, str(root))
        if not data.init_bsz <= b <= data.max_bsz:
            raise InputError(f"line {line}", f"batch_size: {b} is outside {app}'s validated range "
                             f"{data.init_bsz}..{data.max_bsz}", name)
        if g * data.min_local > b:
            raise InputError(f"line {line}", f"num_replicas: {g} replicas at batch size {b} is below {app}'s "
                             f"smallest measured local batch {data.min_local}", name)
        out.append(TraceJob(line=line, submit=t, gpus=g, duration=0.0, key=",".join(row), app=app, batch_size=b,
                            root=str(root)))
    return sorted(out, key=lambda j: (j.submit, j.line))


def load_load_curve(path: str | Path, *, window: float = 300.0, mode: str = "peak",
                    per_server: float | None = None) -> LoadCurve:
    """The inference load from the Alibaba GenAI QPS file or a plain ``time,value`` CSV.

    Alibaba (``timestamp_anon,value,...``): ``value`` summed over containers per ``window`` seconds. Plain:
    one value per time (seconds). Times start at 0 and the curve repeats with period ``last time + window``
    (Alibaba) or ``last time`` plus the median step (plain). ``mode="peak"`` (the default): the values are
    divided by their peak, so ``L(t)`` in [0, 1] is the share of the inference servers that serve (a constant
    load serves every server, whatever its level). ``mode="absolute"``: the values are divided by ``per_server``,
    the load one server serves, giving the servers needed (capped at the cluster's size when used).
    ``path`` ``-`` reads standard input.

    Memory and running time follow the file's size, not its span: the Alibaba windows are kept only where the
    file has data (a window without data is load 0, one point where such a stretch begins), so three rows
    spanning 1e15 s make four points. O(rows log rows).
    """
    if mode not in ("peak", "absolute"):
        raise ValueError(f"mode must be 'peak' or 'absolute', got {mode!r}")
    if mode == "absolute" and not (per_server is not None and 0 < per_server < math.inf):
        raise ValueError("mode='absolute' needs a positive finite per_server")
    if not (math.isfinite(window) and window > 0):
        raise InputError("--load-window", f"must be a positive finite number of seconds, got {window!r}")
    name, text = _read_text(path, "load")
    _, _, col, _ = _open_rows(name, ("value",), "load", text)
    alibaba = "timestamp_anon" in col
    tcol = "timestamp_anon" if alibaba else "time"
    if tcol not in col:
        raise InputError("line 1", "header needs a 'time' column (or the Alibaba 'timestamp_anon')", name)
    pts = []
    for line, row, c, _ in _rows(name, (tcol, "value"), "load", text):
        pts.append((_num(row[c[tcol]], name, line, tcol), _num(row[c["value"]], name, line, "value")))
    if not pts:
        raise InputError("line 2", "no data rows", name)
    if alibaba:
        first = min(t for t, _ in pts)
        sums: dict[int, float] = {}
        for t, v in pts:
            k = int((t - first) // window)
            sums[k] = sums.get(k, 0.0) + v
        times, values = [], []
        for k in sorted(sums):
            if times and times[-1] == k * window:  # the load-0 point of the window before: replaced
                times.pop()
                values.pop()
            times.append(k * window)
            values.append(sums[k])
            if k + 1 not in sums:
                times.append((k + 1) * window)
                values.append(0.0)
        period = (max(sums) + 1) * window
        if times[-1] >= period:  # the last window's load-0 point is the next period's start
            times.pop()
            values.pop()
    else:
        pts.sort()
        first = pts[0][0]
        times = [t - first for t, _ in pts]
        values = [v for _, v in pts]
        steps = sorted(b - a for a, b in zip(times, times[1:], strict=False) if b > a)
        period = times[-1] + (steps[len(steps) // 2] if steps else window)
    peak = max(values)
    if not math.isfinite(peak) or not math.isfinite(period):
        raise InputError("value", "the load's sums or span overflow a double", name)
    if mode == "absolute":
        needed = tuple(v / per_server for v in values)
        if not all(math.isfinite(v) for v in needed):
            raise InputError("value", f"the load over --load-per-server {per_server:g} overflows a double", name)
        return LoadCurve(tuple(times), needed, float(period), absolute=True)
    if peak <= 0:
        raise InputError("value", "the load is zero everywhere", name)
    return LoadCurve(tuple(times), tuple(v / peak for v in values), float(period))


def merge_close(curve: LoadCurve, interval: float) -> LoadCurve:
    """``curve`` with its points closer than ``interval`` merged: one point per ``interval`` of the period (the
    first point's time, the largest load of those merged: inference is served its peak), so that a replay
    makes at most ``period / interval + 1`` load changes per period whatever the file. A period shorter than
    ``interval`` is raised to it. O(points)."""
    times, values = [], []
    for t, v in zip(curve.times, curve.values, strict=True):
        if times and t - times[-1] < interval:
            values[-1] = max(values[-1], v)
        else:
            times.append(t)
            values.append(v)
    return LoadCurve(tuple(times), tuple(values), max(curve.period, interval), absolute=curve.absolute)


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
        model = None
        if tj.batch_size:  # a Pollux row: the artifact's job model, elastic at its fixed batch size
            from .pollux import PolluxJob, compact

            model = PolluxJob(app, tj.batch_size, tj.root)
            work = model.work
            duration = sum((model.boundary(e + 1) - model.boundary(e)) / model.rate(compact(g, server_gpus), e)
                           for e in range(model.epochs()))
            lo, hi = 1, max(g, min(tj.batch_size // model.data.min_local, max_elastic))
            if app == "ncf":  # as the artifact: ncf runs on one replica
                hi = max(g, 1)
        else:
            duration = tj.duration
            work = tj.duration * rate_one(ProfileThroughput(model=app), g, server_gpus=server_gpus)
            if _unit(seed, "elastic", tj.key, tj.line) < elastic_share:
                lo, hi = math.ceil(g / 2), max(g, min(2 * g, max_elastic))
            else:
                lo = hi = g
        out.append(SimJobSpec(id=f"j{i}", line=tj.line, submit=tj.submit, gpus=g, duration=duration, app=app,
                              work=work, min_workers=lo, max_workers=hi, restart_penalty=restart_penalty,
                              preemption_penalty=preemption_penalty, gpu_util=profiles[app][0],
                              gpu_mem_gb=profiles[app][1], batch_size=tj.batch_size, model=model))
    return out
