"""Cross-field validation of a decoded snapshot (what types alone cannot say).

One function, :func:`validate_snapshot`, raising :class:`~solver.errors.InputError` with the field path of the
first problem found. Types and simple bounds were already checked by the decoder (:mod:`solver.io`).
"""
from __future__ import annotations

import math

from lyra_solver.errors import InputError
from lyra_solver.types import PowerThroughput, Snapshot, TableThroughput


def _finite(value: float | None, path: str) -> None:
    if value is not None and not math.isfinite(value):
        raise InputError(path, f"must be a finite number, got {value!r}")


def validate_snapshot(snap: Snapshot) -> None:
    """Check the rules that span fields; raise :class:`InputError` naming the first broken one.

    Rules: unique server and job ids; ``state`` given exactly for inference servers; finite numbers;
    ``min_workers <= max_workers``; a worker fits on some server; a table throughput covers min..max with
    strictly increasing workers; a placement only on training or loaned servers, with positive counts
    adding up to a worker count in [min, max], and no server over its GPUs (all jobs together).

    Running time: O(servers + jobs + placement entries + table points).
    """
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
        _finite(job.restart_penalty, f"{p}.restart_penalty")
        _finite(job.preemption_penalty, f"{p}.preemption_penalty")
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
