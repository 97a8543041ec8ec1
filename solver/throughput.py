"""Throughput models: a job's total rate ``rate(w)`` at ``w`` workers (DESIGN "Jobs").

``table``: measured points, linear in between. ``power``: ``r * w ** e``. ``profile``: the real scaling
curves of six models (package data ``profiles.json``, derived by ``scripts/build_profiles.py`` from the
Pollux artifact's measurements, Apache-2.0): the rate of ``w`` workers on ``k`` servers, measured where the
Pollux runs measured ``(w, k)`` and elsewhere (more workers per server than their 4-GPU nodes held, pairs never
run) from the Pollux step-time model fitted to every measured row (the script's docstring). The value table
assumes the most compact placement, the fewest servers that hold the job,
``k = ceil(w / (server_gpus // gpus_per_worker))`` (placement aims for it); a caller that knows the servers a
placement spans passes ``servers`` (the simulator does, so a job spread over more servers runs slower).
"""
from __future__ import annotations

import json
from functools import cache
from importlib import resources

import numpy as np
from lyra_solver.types import PowerThroughput, ProfileThroughput, TableThroughput, Throughput


@cache
def _profiles() -> dict[str, np.ndarray]:
    raw = json.loads(resources.files("lyra_solver").joinpath("data/profiles.json").read_text())
    return {m: np.asarray(v["per_replica_rate"], dtype=np.float64) for m, v in raw["models"].items()}


def profile_rate(model: str, workers: np.ndarray, servers_spanned: np.ndarray) -> np.ndarray:
    """Rate of ``model`` at ``workers`` replicas on ``servers_spanned`` servers (per-replica rate x n).

    Beyond the grid (64 replicas, 16 servers) the per-replica rate of the grid's edge is kept.
    """
    per = _profiles()[model]
    n = np.clip(workers, 1, per.shape[0]) - 1
    k = np.clip(servers_spanned, 1, per.shape[1]) - 1
    return per[n, k] * workers


def servers_spanned(workers: np.ndarray, gpus_per_worker: int, server_gpus: int) -> np.ndarray:
    """Fewest servers of ``server_gpus`` GPUs that hold ``workers`` workers."""
    per_server = max(1, server_gpus // gpus_per_worker)
    return -(-np.asarray(workers) // per_server)


def rate(throughput: Throughput, workers, *, gpus_per_worker: int = 1, server_gpus: int = 8,
         servers=None) -> np.ndarray:
    """Total rate (work units per second) at each worker count in ``workers`` (vectorised).

    Parameters
    ----------
    throughput : PowerThroughput | TableThroughput | ProfileThroughput
    workers : array_like of int, each >= 1
    gpus_per_worker, server_gpus : int
        Used by ``profile`` only, to count the servers a job spans on the most compact placement.
    servers : array_like of int, optional
        ``profile`` only: the servers each placement spans (default: the most compact placement's).
    """
    w = np.asarray(workers, dtype=np.float64)
    if isinstance(throughput, PowerThroughput):
        return throughput.rate_per_worker * w ** throughput.exponent
    if isinstance(throughput, TableThroughput):
        return np.interp(w, np.asarray(throughput.workers, np.float64), np.asarray(throughput.rate, np.float64))
    if isinstance(throughput, ProfileThroughput):
        wi = np.asarray(workers, dtype=np.int64)
        k = servers_spanned(wi, gpus_per_worker, server_gpus) if servers is None else np.asarray(servers, np.int64)
        return profile_rate(throughput.model, wi, k)
    raise TypeError(f"unknown throughput kind {type(throughput).__name__}")


def rate_one(throughput: Throughput, w: int, *, gpus_per_worker: int = 1, server_gpus: int = 8,
             servers: int | None = None) -> float:
    """Scalar form of :func:`rate` (plain Python arithmetic; the reference for tests)."""
    if isinstance(throughput, PowerThroughput):
        return throughput.rate_per_worker * float(w) ** throughput.exponent
    if isinstance(throughput, TableThroughput):
        xs, ys = throughput.workers, throughput.rate
        if w <= xs[0]:
            return float(ys[0])
        for a in range(len(xs) - 1):
            if xs[a] <= w <= xs[a + 1]:
                t = (w - xs[a]) / (xs[a + 1] - xs[a])
                return float(ys[a] + t * (ys[a + 1] - ys[a]))
        return float(ys[-1])
    if isinstance(throughput, ProfileThroughput):
        per = _profiles()[throughput.model]
        k = -(-w // max(1, server_gpus // gpus_per_worker)) if servers is None else servers
        n = min(max(w, 1), per.shape[0])
        return float(per[n - 1, min(max(k, 1), per.shape[1]) - 1]) * w
    raise TypeError(f"unknown throughput kind {type(throughput).__name__}")
