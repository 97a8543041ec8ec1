"""Server reclamation: the problem type, the result type and the cost of a server set, shared by every method.

The inference side asks for loaned servers back (DESIGN "Reclaim"). Removing ``r_j`` workers from job ``j``
shrinks it when ``w_j - r_j >= min_j`` (cost ``restart_j``, plus the optional JCT value
``shrink_loss[j, r_j]``) and preempts it otherwise (cost ``preempt_j``). Indices, not ids: the engine maps a
snapshot onto these arrays and maps the answer back.
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from lyra_solver.formulations._arrays import float_array, index_vector, int_vector, nonnegative_int
from lyra_solver.formulations._result import SolveResult, Status

__all__ = ["ReclaimProblem", "ReclaimResult", "evaluate_reclaim", "gpus_unreachable", "infeasible_result",
           "result_for", "target_count"]


@dataclass(frozen=True, eq=False, kw_only=True)
class ReclaimProblem:
    """Give back loaned servers to the inference side at least cost (DESIGN "Reclaim").

    Built with :meth:`build` (or the keyword constructor, which is the same): every array is copied into a
    read-only numpy array and checked (shapes, integrality, signs, index ranges); a ``ValueError`` names
    the offending argument.

    Attributes
    ----------
    server_gpus : (S,) int
        GPUs of each candidate (loaned) server, ``>= 0``.
    job_workers : (J,) int
        Current workers ``w_j >= 0`` of each job that has at least one worker on a candidate server.
    job_min : (J,) int
        ``min_workers >= 0`` of each job.
    job_gpus_per_worker : (J,) int
        ``>= 1``.
    restart_cost : (J,) float
        Cost of shrinking job j (``restart_penalty``), finite.
    preempt_cost : (J,) float
        Cost of preempting job j (``preemption_penalty``), finite.
    host_job, host_server, host_count : (H,) int
        Sparse matrix ``n_js``: job ``host_job[h]`` has ``host_count[h] >= 0`` workers on candidate server
        ``host_server[h]``. Pairs are unique, and a job has no more workers on the candidates than
        ``job_workers``.
    count : int or None
        Return exactly this many servers (``>= 0``; more than ``S`` means all of them).
    min_gpus : int or None
        Or: return servers holding at least this many GPUs in total (fewest-cost set). Exactly one of
        ``count`` and ``min_gpus`` is given.
    shrink_loss : (J, K) float or None
        Optional JCT value lost by a shrink: ``shrink_loss[j, r]`` is the value lost when ``r`` workers
        are removed from job j and it is not preempted (``r < K``; ``shrink_loss[j, 0] == 0``; larger
        ``r`` use column ``K - 1``).

    Examples
    --------
    Two loaned servers; job 0 (4 workers, at least 2) has 2 workers on each, job 1 (rigid) 1 on server 1:

    >>> p = ReclaimProblem.build(server_gpus=[8, 8], job_workers=[4, 1], job_min=[2, 1],
    ...                          job_gpus_per_worker=[1, 1], restart_cost=[30.0, 30.0],
    ...                          preempt_cost=[300.0, 300.0], host_job=[0, 0, 1], host_server=[0, 1, 1],
    ...                          host_count=[2, 2, 1], count=1)
    >>> p.n_servers, p.n_jobs
    (2, 2)
    >>> ReclaimProblem.build(server_gpus=[8], job_workers=[4], job_min=[2], job_gpus_per_worker=[1],
    ...                      restart_cost=[30.0], preempt_cost=[300.0], host_job=[0], host_server=[1],
    ...                      host_count=[2], count=1)
    Traceback (most recent call last):
    ...
    ValueError: host_server[0]: 1 is not a valid index into the 1 servers
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

    def __post_init__(self) -> None:
        put = object.__setattr__
        if (self.count is None) == (self.min_gpus is None):
            raise ValueError("count: give exactly one of count and min_gpus")
        for name in ("count", "min_gpus"):
            value = getattr(self, name)
            if value is not None:
                put(self, name, nonnegative_int(value, name))
        gpus = int_vector(self.server_gpus, "server_gpus", low=0)
        put(self, "server_gpus", gpus)
        workers = int_vector(self.job_workers, "job_workers", low=0)
        put(self, "job_workers", workers)
        n_jobs, n_servers = workers.shape[0], gpus.shape[0]
        put(self, "job_min", int_vector(self.job_min, "job_min", length=n_jobs, low=0))
        put(self, "job_gpus_per_worker", int_vector(self.job_gpus_per_worker, "job_gpus_per_worker",
                                                    length=n_jobs, low=1))
        put(self, "restart_cost", float_array(self.restart_cost, "restart_cost", shape=(n_jobs,)))
        put(self, "preempt_cost", float_array(self.preempt_cost, "preempt_cost", shape=(n_jobs,)))
        hj = index_vector(self.host_job, "host_job", length=None, bound=n_jobs, of="jobs")
        hs = index_vector(self.host_server, "host_server", length=hj.shape[0], bound=n_servers, of="servers")
        hc = int_vector(self.host_count, "host_count", length=hj.shape[0], low=0)
        put(self, "host_job", hj)
        put(self, "host_server", hs)
        put(self, "host_count", hc)
        if hj.size:
            pair = hj * n_servers + hs
            uniq, first, seen = np.unique(pair, return_index=True, return_counts=True)
            if (seen > 1).any():
                h = int(np.sort(np.flatnonzero(pair == uniq[seen > 1][0]))[1])
                raise ValueError(f"host_server[{h}]: job {int(hj[h])} is listed twice on server {int(hs[h])}")
            on = np.bincount(hj, weights=hc, minlength=n_jobs).astype(np.int64)
            over = on > workers
            if over.any():
                j = int(np.flatnonzero(over)[0])
                raise ValueError(f"host_count: job {j} has {int(on[j])} workers on the candidate servers, "
                                 f"more than job_workers[{j}] = {int(workers[j])}")
        if self.shrink_loss is not None:
            put(self, "shrink_loss", float_array(self.shrink_loss, "shrink_loss", shape=(n_jobs, None)))

    @classmethod
    def build(cls, **arrays: Any) -> ReclaimProblem:
        """Build and check a problem from keyword arguments (lists or arrays); see the class attributes."""
        return cls(**arrays)

    @classmethod
    def trusted(cls, *, server_gpus: Any, job_workers: Any, job_min: Any, job_gpus_per_worker: Any,
                restart_cost: Any, preempt_cost: Any, host_job: Any, host_server: Any, host_count: Any,
                count: int) -> ReclaimProblem:
        """The problem :meth:`build` makes of the same arguments (the same read-only int64 and float64 copies),
        without its checks: for a caller whose arrays come from a snapshot that was validated already (the
        round's reclaim step, where the checks were 40% of the step on a small cluster). Arrays that break the
        rules of the class attributes give wrong answers here instead of a ``ValueError``.

        Running time O(S + J + H) copies.
        """
        obj = object.__new__(cls)
        put = object.__setattr__
        for name, value, dtype in (("server_gpus", server_gpus, np.int64), ("job_workers", job_workers, np.int64),
                                   ("job_min", job_min, np.int64), ("job_gpus_per_worker", job_gpus_per_worker,
                                                                    np.int64),
                                   ("restart_cost", restart_cost, np.float64),
                                   ("preempt_cost", preempt_cost, np.float64), ("host_job", host_job, np.int64),
                                   ("host_server", host_server, np.int64), ("host_count", host_count, np.int64)):
            arr = np.array(value, dtype=dtype)
            arr.setflags(write=False)
            put(obj, name, arr)
        put(obj, "count", int(count))
        put(obj, "min_gpus", None)
        put(obj, "shrink_loss", None)
        return obj

    @property
    def n_servers(self) -> int:
        """Number of candidate servers ``S``."""
        return int(self.server_gpus.shape[0])

    @property
    def n_jobs(self) -> int:
        """Number of jobs ``J`` with workers on the candidates."""
        return int(self.job_workers.shape[0])


@dataclass(frozen=True, kw_only=True)
class ReclaimResult(SolveResult):
    """Answer of a reclamation method (exact or heuristic): the :class:`SolveResult` fields plus the servers.

    ``status`` is ``optimal`` (cost proven optimal), ``feasible`` (a server set, not proven optimal),
    ``infeasible`` (no server set meets the request, e.g. ``min_gpus`` above the candidates' total) or
    ``no_solution``; ``objective`` is the total cost of ``servers`` recomputed by :func:`evaluate_reclaim`;
    ``bound`` a proven lower bound on the optimal cost (``None`` for heuristics).

    Attributes
    ----------
    servers : tuple of int
        Chosen candidate-server indices, ascending.
    preempted, shrunk : tuple of int
        Jobs preempted / shrunk by returning ``servers``, ascending.
    preemptions : int
        ``len(preempted)``.
    """

    servers: tuple[int, ...] = ()
    preempted: tuple[int, ...] = ()
    shrunk: tuple[int, ...] = ()
    preemptions: int = 0


def target_count(problem: ReclaimProblem) -> int | None:
    """Number of servers to return when the request is a count (clipped to ``[0, S]``), else ``None``."""
    if problem.count is None:
        return None
    return max(0, min(int(problem.count), problem.n_servers))


def gpus_unreachable(problem: ReclaimProblem) -> bool:
    """Whether the request is ``min_gpus`` above the candidates' total GPUs (no server set meets it)."""
    return problem.min_gpus is not None and int(problem.server_gpus.sum()) < problem.min_gpus


def evaluate_reclaim(problem: ReclaimProblem, servers: Iterable[int]) -> tuple[float, int, tuple[int, ...],
                                                                                 tuple[int, ...]]:
    """True cost of returning a set of candidate servers.

    Parameters
    ----------
    problem : ReclaimProblem
    servers : iterable of int
        Candidate-server indices (duplicates are counted once).

    Returns
    -------
    cost : float
        ``sum_j cost_j(r_j)`` with ``r_j = sum_{s in servers} n_js``: 0 if untouched, ``restart_j``
        (+ ``shrink_loss[j, r_j]``) if ``w_j - r_j >= min_j``, else ``preempt_j``.
    preemptions : int
    preempted, shrunk : tuple of int
        Job indices, ascending.

    Notes
    -----
    Running time ``O(H + J + S)`` with ``H`` the number of (job, server) host pairs.
    """
    chosen = np.zeros(problem.n_servers, dtype=bool)
    idx = np.asarray(list(servers), dtype=np.int64)
    if idx.size:
        chosen[idx] = True
    mask = chosen[problem.host_server] if problem.host_server.size else np.zeros(0, dtype=bool)
    removed = np.bincount(problem.host_job[mask], weights=problem.host_count[mask],
                          minlength=problem.n_jobs).astype(np.int64)
    touched = removed > 0
    pre = touched & (problem.job_workers - removed < problem.job_min)
    shr = touched & ~pre
    cost = float(problem.preempt_cost[pre].sum() + problem.restart_cost[shr].sum())
    if problem.shrink_loss is not None and problem.shrink_loss.shape[1] > 0 and shr.any():
        k = problem.shrink_loss.shape[1]
        js = np.flatnonzero(shr)
        cost += float(problem.shrink_loss[js, np.minimum(removed[js], k - 1)].sum())
    preempted = tuple(int(j) for j in np.flatnonzero(pre))
    shrunk = tuple(int(j) for j in np.flatnonzero(shr))
    return cost, len(preempted), preempted, shrunk


def result_for(problem: ReclaimProblem, servers: Iterable[int], *, status: Status, bound: float | None,
               gap: float | None, start: float, method: str, backend_status: str,
               evaluation: tuple[float, int, tuple[int, ...], tuple[int, ...]] | None = None) -> ReclaimResult:
    """A result for a server set: its cost, preemptions and job lists recomputed by :func:`evaluate_reclaim`
    (or ``evaluation``, what :func:`evaluate_reclaim` gave for these servers, when the caller has it already)."""
    chosen = sorted(set(int(s) for s in servers))
    cost, npre, preempted, shrunk = evaluate_reclaim(problem, chosen) if evaluation is None else evaluation
    return ReclaimResult(status=status, objective=cost, bound=bound, gap=gap, servers=tuple(chosen),
                         preempted=preempted, shrunk=shrunk, preemptions=npre, time_s=time.perf_counter() - start,
                         method=method, backend_status=backend_status)


def infeasible_result(start: float, method: str,
                      backend_status: str = "min_gpus above the candidates' total GPUs") -> ReclaimResult:
    """The result when no server set meets the request."""
    return ReclaimResult(status=Status.INFEASIBLE, objective=None, bound=None, gap=None,
                         time_s=time.perf_counter() - start, method=method, backend_status=backend_status)
