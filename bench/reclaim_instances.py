"""Seeded generators of reclamation instances and Alibaba-driven reclaim events.

Clusters are built the way the engine places jobs (DESIGN "Place"): 8-GPU servers, jobs of 1, 2 or 4 GPUs
per worker with elastic ranges, base demand (``min_workers``) best-fit on training servers first, flexible
(extra) workers best-fit on loaned servers first, so that reclaiming shrinks jobs more often than it
preempts them. Restart penalties are 10-60 s, preemption penalties 5-20x the restart penalty.

Reclaim events come from the Alibaba GenAI inference load curve (``shared/data/alibaba/genai_qps.csv``):
the request rate summed over containers per time window, scaled so that its peak needs the whole
inference cluster; every rise between consecutive windows asks for that many loaned servers back.

References
----------
Li et al., "Lyra: Elastic Scheduling for Deep Learning Clusters", EuroSys 2023 (capacity loaning,
reclaiming driven by the inference load).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from lyra_solver.formulations.reclaim import ReclaimProblem

__all__ = ["ClusterInstance", "alibaba_load_curve", "default_qps_path", "generate_cluster",
           "generate_scattered", "reclaim_events", "with_count"]

GPUS_PER_SERVER = 8


@dataclass(frozen=True, eq=False)
class ClusterInstance:
    """A generated cluster: the reclamation problem over its loaned servers and some context.

    Attributes
    ----------
    problem : ReclaimProblem
        Candidates = the loaned servers; jobs = those with at least one worker on them.
    n_training : int
        Training servers of the cluster (not candidates).
    n_jobs_total : int
        All running jobs, including those only on training servers.
    seed : int
    """

    problem: ReclaimProblem
    n_training: int
    n_jobs_total: int
    seed: int


def _best_fit(free: np.ndarray, need: int) -> int:
    """Index of the server with the least free GPUs that still has ``need``; -1 if none."""
    ok = free >= need
    if not ok.any():
        return -1
    cand = np.where(ok, free, np.iinfo(np.int64).max)
    return int(np.argmin(cand))


def _place(free: np.ndarray, workers: int, gpw: int) -> list[tuple[int, int]]:
    """Best-fit: fill the fullest server that takes a worker with as many workers as fit, repeat."""
    out: list[tuple[int, int]] = []
    left = workers
    while left > 0:
        s = _best_fit(free, gpw)
        if s < 0:
            break
        n = min(left, int(free[s]) // gpw)
        free[s] -= n * gpw
        out.append((s, n))
        left -= n
    return out


def generate_cluster(n_loaned: int, seed: int, *, n_training: int | None = None, count: int = 1,
                     fill: float = 0.97, gpu_mix: tuple[float, float, float] = (0.8, 0.15, 0.05)
                     ) -> ClusterInstance:
    """A cluster of ``n_training`` training and ``n_loaned`` loaned 8-GPU servers, filled with jobs.

    Parameters
    ----------
    n_loaned : int
        Loaned inference servers (the reclamation candidates).
    seed : int
        ``numpy.random.default_rng(seed)``; the same arguments give the same instance.
    n_training : int, optional
        Training servers, default ``n_loaned // 4``.
    count : int
        Servers the reclaim asks for (clipped to ``n_loaned``).
    fill : float
        Jobs are added until this fraction of all GPUs is used (or no job fits any more).
    gpu_mix : (3,) float
        Probabilities of 1, 2 and 4 GPUs per worker.

    Returns
    -------
    ClusterInstance

    Notes
    -----
    Jobs: ``gpus_per_worker`` 1, 2 or 4 (``gpu_mix``); ``min_workers`` 1 (75%) or 2-4; 80% elastic with
    ``max_workers = min_workers * {2, 3}``; running at a uniform count in ``[min, max]``. About 2.6 jobs
    per loaned server with the defaults (1,000 loaned servers: ~2,650 jobs on them, ~3,200 in all).
    Running time ``O(W S)`` for ``W`` placed workers (a best-fit scan per placement step).
    """
    rng = np.random.default_rng(seed)
    mix = np.asarray(gpu_mix, dtype=np.float64) / float(np.sum(gpu_mix))
    n_tr = n_loaned // 4 if n_training is None else int(n_training)
    free_tr = np.full(n_tr, GPUS_PER_SERVER, dtype=np.int64)
    free_lo = np.full(n_loaned, GPUS_PER_SERVER, dtype=np.int64)
    total = (n_tr + n_loaned) * GPUS_PER_SERVER
    jw: list[int] = []
    jmin: list[int] = []
    jg: list[int] = []
    hosts: list[tuple[int, int, int]] = []  # (job, loaned server, workers)
    misses = 0
    while int(free_tr.sum() + free_lo.sum()) > (1.0 - fill) * total and misses < 50:
        g = int(rng.choice([1, 2, 4], p=mix))
        mn = 1 if rng.random() < 0.75 else int(rng.integers(2, 5))
        mx = mn * int(rng.choice([2, 3])) if rng.random() < 0.8 else mn
        w = int(rng.integers(mn, mx + 1))
        if (free_tr // g).sum() + (free_lo // g).sum() < w:
            misses += 1
            continue
        # Base demand: training first, overflow on loaned; extra workers: loaned first, then training.
        base_tr = _place(free_tr, mn, g)
        left = mn - sum(n for _, n in base_tr)
        on_lo = _place(free_lo, left, g) if left else []
        extra = w - mn
        extra_lo = _place(free_lo, extra, g) if extra else []
        left = extra - sum(n for _, n in extra_lo)
        extra_tr = _place(free_tr, left, g) if left else []
        placed = sum(n for _, n in base_tr + on_lo + extra_lo + extra_tr)
        j = len(jw)
        jw.append(placed)
        jmin.append(min(mn, placed))
        jg.append(g)
        merged: dict[int, int] = {}
        for s, n in on_lo + extra_lo:
            merged[s] = merged.get(s, 0) + n
        hosts.extend((j, s, n) for s, n in sorted(merged.items()))
    n_all = len(jw)
    on_loaned = sorted({h[0] for h in hosts})
    remap = {j: i for i, j in enumerate(on_loaned)}
    restart = np.round(rng.uniform(10.0, 60.0, n_all), 1)
    preempt = np.round(restart * rng.uniform(5.0, 20.0, n_all), 1)
    sel = np.asarray(on_loaned, dtype=np.int64)
    problem = ReclaimProblem.build(
        server_gpus=np.full(n_loaned, GPUS_PER_SERVER),
        job_workers=np.asarray(jw, dtype=np.int64)[sel] if sel.size else [],
        job_min=np.asarray(jmin, dtype=np.int64)[sel] if sel.size else [],
        job_gpus_per_worker=np.asarray(jg, dtype=np.int64)[sel] if sel.size else [],
        restart_cost=restart[sel] if sel.size else [],
        preempt_cost=preempt[sel] if sel.size else [],
        host_job=[remap[h[0]] for h in hosts], host_server=[h[1] for h in hosts],
        host_count=[h[2] for h in hosts], count=min(int(count), n_loaned))
    return ClusterInstance(problem=problem, n_training=n_tr, n_jobs_total=n_all, seed=seed)


def generate_scattered(n_servers: int, n_jobs: int, seed: int, *, count: int = 1) -> ReclaimProblem:
    """A stress instance without placement structure: each job's workers on 1-3 uniformly random servers.

    Jobs overlap on servers at random (about ``2 n_jobs / n_servers`` jobs per server, no packing), which
    makes the covering structure of the reclaim problem harder than in a placed cluster. Current workers:
    those on the candidates plus 0-2 elsewhere; ``min_workers`` 1-4 below the current count (at least 1);
    restart 10-60 s, preemption 5-20x (rounded to 0.01). Running time ``O(J)``.
    """
    rng = np.random.default_rng(seed)
    hj: list[int] = []
    hs: list[int] = []
    hc: list[int] = []
    want = rng.integers(1, 9, n_jobs)
    mins = np.maximum(1, want - rng.integers(0, 5, n_jobs))
    for j in range(n_jobs):
        k = min(int(rng.integers(1, 4)), n_servers)
        srv = np.sort(rng.choice(n_servers, size=k, replace=False))
        extra = max(0, int(want[j]) - k)
        parts = rng.multinomial(extra, [1.0 / k] * k) + 1
        hj.extend([j] * k)
        hs.extend(int(s) for s in srv)
        hc.extend(int(n) for n in parts)
    on = np.bincount(np.asarray(hj, dtype=np.int64), weights=hc, minlength=n_jobs).astype(np.int64)
    workers = on + rng.integers(0, 3, n_jobs)
    restart = np.round(rng.uniform(10.0, 60.0, n_jobs), 2)
    preempt = np.round(restart * rng.uniform(5.0, 20.0, n_jobs), 2)
    return ReclaimProblem.build(server_gpus=np.full(n_servers, GPUS_PER_SERVER), job_workers=workers,
                                job_min=np.minimum(mins, workers),
                                job_gpus_per_worker=np.ones(n_jobs, np.int64),
                                restart_cost=restart, preempt_cost=preempt, host_job=hj, host_server=hs,
                                host_count=hc, count=max(0, min(int(count), n_servers)))


def with_count(problem: ReclaimProblem, count: int) -> ReclaimProblem:
    """The same problem asking for ``count`` servers (clipped to ``[0, S]``)."""
    return ReclaimProblem.build(
        server_gpus=problem.server_gpus, job_workers=problem.job_workers, job_min=problem.job_min,
        job_gpus_per_worker=problem.job_gpus_per_worker, restart_cost=problem.restart_cost,
        preempt_cost=problem.preempt_cost, host_job=problem.host_job, host_server=problem.host_server,
        host_count=problem.host_count, count=max(0, min(int(count), problem.n_servers)),
        shrink_loss=problem.shrink_loss)


def default_qps_path() -> Path:
    """``alibaba/genai_qps.csv`` of the data folder (:func:`lyra_solver.bench.datapath.shared_data`)."""
    from lyra_solver.bench.datapath import shared_data

    return shared_data("alibaba", "genai_qps.csv")


def alibaba_load_curve(path: str | Path | None = None, window_s: float = 300.0) -> np.ndarray:
    """Inference load per time window: ``value`` summed over containers and rows in each window.

    Parameters
    ----------
    path : path, optional
        CSV with columns ``timestamp_anon,value,container_ip,request_type`` (default
        :func:`default_qps_path`).
    window_s : float
        Window length in seconds (default 5 minutes). Empty windows between the first and last count 0.

    Returns
    -------
    numpy.ndarray of float, one entry per window, in time order.

    Notes
    -----
    Running time ``O(rows)``.
    """
    p = default_qps_path() if path is None else Path(path)
    ts: list[float] = []
    vals: list[float] = []
    with p.open(newline="") as fh:
        for row in csv.DictReader(fh):
            try:
                t = float(row["timestamp_anon"])
                v = float(row["value"])
            except (KeyError, TypeError, ValueError):
                continue
            if np.isfinite(t) and np.isfinite(v):
                ts.append(t)
                vals.append(v)
    if not ts:
        return np.zeros(0)
    t_arr = np.asarray(ts)
    win = np.floor((t_arr - t_arr.min()) / float(window_s)).astype(np.int64)
    return np.bincount(win, weights=np.asarray(vals), minlength=int(win.max()) + 1)


def reclaim_events(load: np.ndarray, n_inference: int) -> np.ndarray:
    """Servers to reclaim at each window: the rise of the server demand between consecutive windows.

    The load is scaled so that its peak needs all ``n_inference`` servers (demand
    ``ceil(load / peak * n_inference)``); only rises (positive differences) are returned, in time order.

    Running time ``O(len(load))``.
    """
    load = np.asarray(load, dtype=np.float64)
    if load.size < 2 or load.max() <= 0:
        return np.zeros(0, dtype=np.int64)
    demand = np.ceil(load / load.max() * n_inference - 1e-9).astype(np.int64)
    rise = np.diff(demand)
    return rise[rise > 0]
