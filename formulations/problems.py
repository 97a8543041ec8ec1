"""Problem types of the reclaim and place steps, as plain arrays.

Indices, not ids: the engine (``solver``) maps a snapshot onto these arrays and maps the answers back.
Every array is a read-only numpy array once the problem is built.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _frozen(a, dtype) -> np.ndarray:
    arr = np.array(a, dtype=dtype, copy=True)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class ReclaimProblem:
    """Give back loaned servers to the inference side at least cost (DESIGN "Reclaim").

    Attributes
    ----------
    server_gpus : (S,) int
        GPUs of each candidate (loaned) server.
    job_workers : (J,) int
        Current workers ``w_j`` of each job that has at least one worker on a candidate server.
    job_min : (J,) int
        ``min_workers`` of each job.
    job_gpus_per_worker : (J,) int
    restart_cost : (J,) float
        Cost of shrinking job j (``restart_penalty``).
    preempt_cost : (J,) float
        Cost of preempting job j (``preemption_penalty``).
    host_job, host_server, host_count : (H,) int
        Sparse matrix ``n_js``: job ``host_job[h]`` has ``host_count[h]`` workers on candidate server
        ``host_server[h]``. Pairs are unique.
    count : int or None
        Return exactly this many servers (``min(count, S)`` is the caller's duty).
    min_gpus : int or None
        Or: return servers holding at least this many GPUs in total (fewest-cost set). Exactly one of
        ``count`` and ``min_gpus`` is given.
    shrink_loss : (J, K) float or None
        Optional JCT value lost by a shrink: ``shrink_loss[j, r]`` is the value lost when ``r`` workers
        are removed from job j and it is not preempted (``r < K``; ``shrink_loss[j, 0] == 0``).
    """

    server_gpus: np.ndarray
    job_workers: np.ndarray
    job_min: np.ndarray
    job_gpus_per_worker: np.ndarray
    restart_cost: np.ndarray
    preempt_cost: np.ndarray
    host_job: np.ndarray
    host_server: np.ndarray
    host_count: np.ndarray
    count: int | None = None
    min_gpus: int | None = None
    shrink_loss: np.ndarray | None = None

    @classmethod
    def build(cls, *, server_gpus, job_workers, job_min, job_gpus_per_worker, restart_cost, preempt_cost,
              host_job, host_server, host_count, count=None, min_gpus=None, shrink_loss=None):
        if (count is None) == (min_gpus is None):
            raise ValueError("give exactly one of count and min_gpus")
        return cls(
            server_gpus=_frozen(server_gpus, np.int64),
            job_workers=_frozen(job_workers, np.int64),
            job_min=_frozen(job_min, np.int64),
            job_gpus_per_worker=_frozen(job_gpus_per_worker, np.int64),
            restart_cost=_frozen(restart_cost, np.float64),
            preempt_cost=_frozen(preempt_cost, np.float64),
            host_job=_frozen(host_job, np.int64),
            host_server=_frozen(host_server, np.int64),
            host_count=_frozen(host_count, np.int64),
            count=None if count is None else int(count),
            min_gpus=None if min_gpus is None else int(min_gpus),
            shrink_loss=None if shrink_loss is None else _frozen(shrink_loss, np.float64),
        )

    @property
    def n_servers(self) -> int:
        return int(self.server_gpus.shape[0])

    @property
    def n_jobs(self) -> int:
        return int(self.job_workers.shape[0])


@dataclass(frozen=True, eq=False)
class PlacementProblem:
    """Place each job's workers onto servers (DESIGN "Place").

    Attributes
    ----------
    server_free : (S,) int
        GPUs free on each usable server for the jobs of this problem (GPUs of jobs not in the problem
        already subtracted).
    server_loaned : (S,) bool
        True for a loaned (or newly loaned) inference server, False for a training server.
    job_workers : (J,) int
        Workers to place for each job (its decided count).
    job_base : (J,) int
        Base demand (``min_workers``) of each job: the workers that should sit on training servers.
    job_gpus_per_worker : (J,) int
    cur_job, cur_server, cur_count : (C,) int
        Current placement of running jobs (sparse), on usable servers only; workers kept in place are
        not "moved".
    """

    server_free: np.ndarray
    server_loaned: np.ndarray
    job_workers: np.ndarray
    job_base: np.ndarray
    job_gpus_per_worker: np.ndarray
    cur_job: np.ndarray
    cur_server: np.ndarray
    cur_count: np.ndarray

    @classmethod
    def build(cls, *, server_free, server_loaned, job_workers, job_base, job_gpus_per_worker,
              cur_job=(), cur_server=(), cur_count=()):
        return cls(
            server_free=_frozen(server_free, np.int64),
            server_loaned=_frozen(server_loaned, bool),
            job_workers=_frozen(job_workers, np.int64),
            job_base=_frozen(job_base, np.int64),
            job_gpus_per_worker=_frozen(job_gpus_per_worker, np.int64),
            cur_job=_frozen(cur_job, np.int64),
            cur_server=_frozen(cur_server, np.int64),
            cur_count=_frozen(cur_count, np.int64),
        )

    @property
    def n_servers(self) -> int:
        return int(self.server_free.shape[0])

    @property
    def n_jobs(self) -> int:
        return int(self.job_workers.shape[0])


@dataclass(frozen=True, eq=False)
class Placement:
    """A placement: for each job a tuple of ``(server index, workers)`` pairs, servers ascending."""

    per_job: tuple[tuple[tuple[int, int], ...], ...]

    def base_on_loaned(self, problem: PlacementProblem) -> int:
        """Base-demand workers on loaned servers: ``sum_j max(0, base_j - workers_j on training)``."""
        total = 0
        for j, pairs in enumerate(self.per_job):
            on_training = sum(n for s, n in pairs if not problem.server_loaned[s])
            total += max(0, int(problem.job_base[j]) - on_training)
        return total

    def spans(self) -> int:
        """Servers spanned, summed over jobs."""
        return sum(len(p) for p in self.per_job)

    def moved(self, problem: PlacementProblem) -> int:
        """Running workers not kept on their current server: ``sum_js max(0, cur_js - new_js)``."""
        new = {(j, s): n for j, pairs in enumerate(self.per_job) for s, n in pairs}
        triples = zip(problem.cur_job, problem.cur_server, problem.cur_count, strict=True)
        return int(sum(max(0, int(c) - new.get((int(j), int(s)), 0)) for j, s, c in triples))
