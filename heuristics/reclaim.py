"""Heuristic server reclamation: Lyra's greedy and two baselines (DESIGN "Reclaim").

All three return a :class:`~lyra_solver.formulations.reclaim.ReclaimResult` whose cost is recomputed by
:func:`~lyra_solver.formulations.reclaim.evaluate_reclaim`, so they are directly comparable with the exact ILP.
They are methods of the reclaim front door (``solve_reclaim(problem, method="greedy")``, ``"fewest-jobs"``,
``"random"``), which checks the arguments and hands them every request: each answers the trivial ones itself
(none or every server, ``min_gpus`` out of reach), the same answer through the door or called directly.

References
----------
Li, J., Xu, H., Zhu, Y., Liu, Z., Guo, C., Wang, C. "Lyra: Elastic Scheduling for Deep Learning Clusters."
EuroSys 2023, section 4 (server preemption cost and greedy reclaiming).
"""
from __future__ import annotations

import heapq
import time
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import repeat

import numpy as np
from lyra_solver.formulations._result import Status
from lyra_solver.formulations.reclaim import (
    ReclaimProblem,
    ReclaimResult,
    evaluate_reclaim,
    gpus_unreachable,
    infeasible_result,
    result_for,
    target_count,
)

__all__ = ["fewest_jobs_reclaim", "greedy_reclaim", "random_reclaim"]

_KEY_DIGITS = 9  # marginal costs are rounded to this many decimals for tie detection


def _result(problem: ReclaimProblem, servers: list[int], method: str, t0: float,
            backend: str) -> ReclaimResult:
    """A heuristic's result: ``optimal`` only when it costs nothing and no cost is negative."""
    evaluation = evaluate_reclaim(problem, servers)  # once: result_for takes it (a duplicate set counts once)
    cost = evaluation[0]
    costs_nonneg = bool((problem.restart_cost >= 0).all() and (problem.preempt_cost >= 0).all()
                        and (problem.shrink_loss is None or (problem.shrink_loss >= 0).all()))
    if cost == 0.0 and costs_nonneg:
        status, bound, gap = Status.OPTIMAL, 0.0, 0.0  # nothing can cost less than zero
    else:
        status, bound, gap = Status.FEASIBLE, None, None
    return result_for(problem, servers, status=status, bound=bound, gap=gap, start=t0, method=method,
                      backend_status=backend, evaluation=evaluation)


def greedy_reclaim(problem: ReclaimProblem) -> ReclaimResult:
    """Lyra's greedy reclaiming: repeatedly return the server that is cheapest to reclaim now.

    The *server preemption cost* of a candidate server is the extra cost of reclaiming it alone given the
    servers picked so far: ``sum_j cost_j(r_j + n_js) - cost_j(r_j)`` over the jobs ``j`` on it, with
    ``r_j`` the workers already removed from ``j`` (a job already preempted costs nothing more; a shrunk
    job that now falls below its minimum costs ``preempt_j - restart_j`` more). The cheapest server is
    taken (ties: fewer new preemptions, then lowest index), the costs of the servers sharing a job with it
    are updated, and this repeats until ``count`` servers (or ``min_gpus`` GPUs) are returned.

    Parameters
    ----------
    problem : ReclaimProblem

    Returns
    -------
    ReclaimResult
        ``status`` is ``feasible`` (``optimal`` only when the cost is 0 and no cost is negative;
        ``infeasible`` when ``min_gpus`` exceeds the candidates' GPUs). ``bound`` is ``None``.

    Notes
    -----
    Incremental: picking server ``s`` touches only the jobs on ``s`` and the other servers of those jobs.
    Running time ``O(H + S log S + sum_{s picked} sum_{j on s} deg(j) log S)`` with ``H`` the host pairs
    and ``deg(j)`` the servers job ``j`` spans (a lazy-deletion heap keeps the candidates ordered).

    References
    ----------
    Li et al., "Lyra: Elastic Scheduling for Deep Learning Clusters", EuroSys 2023.

    Examples
    --------
    Three loaned servers, two to give back. Server 1 hosts a worker of the rigid job 1 (returning it
    preempts that job); servers 0 and 2 only shrink jobs 0 and 2:

    >>> from lyra_solver.formulations.reclaim import ReclaimProblem
    >>> p = ReclaimProblem.build(server_gpus=[8, 8, 8], job_workers=[4, 1, 6], job_min=[2, 1, 2],
    ...                          job_gpus_per_worker=[1, 1, 1], restart_cost=[30.0, 30.0, 30.0],
    ...                          preempt_cost=[300.0, 300.0, 300.0], host_job=[0, 0, 1, 2, 2],
    ...                          host_server=[0, 1, 1, 1, 2], host_count=[2, 2, 1, 2, 4], count=2)
    >>> res = greedy_reclaim(p)
    >>> res.servers, res.objective, res.shrunk, res.preempted
    ((0, 2), 60.0, (0, 2), ())
    """
    t0 = time.perf_counter()
    n_servers = problem.n_servers
    if gpus_unreachable(problem):
        return infeasible_result(t0, "greedy")
    count = target_count(problem)
    need_gpus = problem.min_gpus if count is None else None
    if (count is not None and count == 0) or (need_gpus is not None and need_gpus <= 0):
        return _result(problem, [], "greedy", t0, "count reached")
    if count is not None and count >= n_servers:
        return _result(problem, list(range(n_servers)), "greedy", t0, "all servers")

    costs = _JobCosts.of(problem)
    hosts = _Hosts(problem)
    cost, preemptions = _standalone_costs(problem)
    queue = _CheapestFirst(cost, preemptions)
    removed = [0] * problem.n_jobs  # workers taken from each job by the servers picked so far
    gpus = problem.server_gpus.tolist()
    picks: list[int] = []
    got_gpus = 0
    while (len(picks) < count) if count is not None else (got_gpus < need_gpus):
        s = queue.pop_cheapest()
        if s is None:
            break
        picks.append(s)
        got_gpus += gpus[s]
        for j, n in hosts.jobs_on(s):
            before, after = removed[j], removed[j] + n
            removed[j] = after
            # the marginal cost of every other server of job j now starts from `after` workers removed
            for s2, n2 in hosts.servers_of(j):
                if queue.is_taken(s2):
                    continue
                old = costs.marginal(j, before, n2)
                new = costs.marginal(j, after, n2)
                if old != new:
                    queue.shift(s2, new[0] - old[0], new[1] - old[1])
    return _result(problem, picks, "greedy", t0, "count reached")


@dataclass(frozen=True)
class _JobCosts:
    """What removing workers costs each job: nothing, a restart (plus the shrink loss) while the job keeps its
    minimum, a preemption below it."""

    restart: list[float]
    preempt: list[float]
    headroom: list[int]  # w_j - min_j: workers a job can lose and keep running
    loss: list[list[float]] | None  # shrink_loss rows, None when there is none

    @classmethod
    def of(cls, problem: ReclaimProblem) -> _JobCosts:
        loss = problem.shrink_loss
        return cls(restart=problem.restart_cost.tolist(), preempt=problem.preempt_cost.tolist(),
                   headroom=(problem.job_workers - problem.job_min).tolist(),
                   loss=loss.tolist() if loss is not None and loss.shape[1] > 0 else None)

    def cost(self, j: int, removed: int) -> float:
        """Cost of job ``j`` once ``removed`` of its workers are gone."""
        if removed <= 0:
            return 0.0
        if removed <= self.headroom[j]:
            if self.loss is None:
                return self.restart[j]
            row = self.loss[j]
            return self.restart[j] + row[min(removed, len(row) - 1)]
        return self.preempt[j]

    def marginal(self, j: int, removed: int, more: int) -> tuple[float, int]:
        """Extra cost and extra preemptions (0 or 1) of removing ``more`` workers after ``removed``."""
        extra = self.cost(j, removed + more) - self.cost(j, removed)
        return extra, int(removed + more > self.headroom[j]) - int(removed > self.headroom[j])


class _Hosts:
    """The host pairs both ways, in the problem's order of pairs: the jobs on each server (job, workers on it) and
    the servers of each job (server, its workers there). On a large problem, slices of flat lists sorted by a
    stable argsort (no list of pairs per server and per job: the greedy reads those of the servers it picks only,
    a few of thousands); on a small one, those lists. O(H log H) array work and O(H) lists for H host pairs."""

    def __init__(self, problem: ReclaimProblem) -> None:
        hj, hs, hc = problem.host_job, problem.host_server, problem.host_count
        if hj.shape[0] < _FLAT_MIN_PAIRS:  # a small problem: lists of pairs, by one loop (no numpy calls)
            on: list[list[tuple[int, int]]] = [[] for _ in range(problem.n_servers)]
            of: list[list[tuple[int, int]]] = [[] for _ in range(problem.n_jobs)]
            for j, s, n in zip(hj.tolist(), hs.tolist(), hc.tolist(), strict=True):
                on[s].append((j, n))
                of[j].append((s, n))
            self.jobs_on, self.servers_of = on.__getitem__, of.__getitem__  # type: ignore[method-assign]
            return
        by_server = np.argsort(hs, kind="stable")
        by_job = np.argsort(hj, kind="stable")
        self._s_ptr = np.concatenate(([0], np.cumsum(np.bincount(hs, minlength=problem.n_servers)))).tolist()
        self._s_job, self._s_cnt = hj[by_server].tolist(), hc[by_server].tolist()
        self._j_ptr = np.concatenate(([0], np.cumsum(np.bincount(hj, minlength=problem.n_jobs)))).tolist()
        self._j_srv, self._j_cnt = hs[by_job].tolist(), hc[by_job].tolist()

    def jobs_on(self, s: int) -> Iterable[tuple[int, int]]:
        """The pairs (job, workers on it) of server ``s``."""
        a, b = self._s_ptr[s], self._s_ptr[s + 1]
        return zip(self._s_job[a:b], self._s_cnt[a:b], strict=True)

    def servers_of(self, j: int) -> Iterable[tuple[int, int]]:
        """The pairs (server, its workers there) of job ``j``."""
        a, b = self._j_ptr[j], self._j_ptr[j + 1]
        return zip(self._j_srv[a:b], self._j_cnt[a:b], strict=True)


#: Host pairs from which :class:`_Hosts` keeps flat sorted lists (below it, a list of pairs per server and job).
_FLAT_MIN_PAIRS = 512


def _standalone_costs(problem: ReclaimProblem) -> tuple[list[float], list[int]]:
    """Cost and preemptions of reclaiming each server alone (vectorised over the host pairs)."""
    n_servers = problem.n_servers
    hj, hs, hc = problem.host_job, problem.host_server, problem.host_count
    if not hj.size:
        return [0.0] * n_servers, [0] * n_servers
    fits = hc <= (problem.job_workers - problem.job_min)[hj]
    shrink = problem.restart_cost[hj]
    loss = problem.shrink_loss
    if loss is not None and loss.shape[1] > 0:
        shrink = shrink + loss[hj, np.minimum(hc, loss.shape[1] - 1)]
    per_pair = np.where(hc <= 0, 0.0, np.where(fits, shrink, problem.preempt_cost[hj]))
    preempts = ((hc > 0) & ~fits).astype(np.int64)
    cost = np.bincount(hs, weights=per_pair, minlength=n_servers)
    count = np.bincount(hs, weights=preempts, minlength=n_servers).astype(np.int64)
    return cost.tolist(), count.tolist()


class _CheapestFirst:
    """The servers not yet picked, cheapest first: by marginal cost (rounded to :data:`_KEY_DIGITS`
    decimals, so that float noise does not break ties), then new preemptions, then index.

    A heap with lazy deletion: :meth:`shift` changes a server's key and marks it; the marked servers are
    pushed again (with a new version) before the next pop, and entries of older versions are skipped.
    """

    def __init__(self, cost: list[float], preemptions: list[int]) -> None:
        self.cost = cost
        self.preemptions = preemptions
        self.version = [0] * len(cost)
        self.taken = [False] * len(cost)
        self.changed: set[int] = set()
        # (key, preemptions, server, version 0) by C-level maps: a comprehension was a sixth of the greedy
        self.heap = list(zip(map(round, cost, repeat(_KEY_DIGITS)), preemptions, range(len(cost)), repeat(0),
                             strict=False))
        heapq.heapify(self.heap)

    def is_taken(self, s: int) -> bool:
        return self.taken[s]

    def shift(self, s: int, cost: float, preemptions: int) -> None:
        """Add to server ``s``'s marginal cost and preemptions."""
        self.cost[s] += cost
        self.preemptions[s] += preemptions
        self.changed.add(s)

    def pop_cheapest(self) -> int | None:
        """Take the cheapest server (``None`` when all are taken)."""
        for s in self.changed:
            self.version[s] += 1
            heapq.heappush(self.heap, (round(self.cost[s], _KEY_DIGITS), self.preemptions[s], s, self.version[s]))
        self.changed.clear()
        while self.heap:
            _, _, s, version = heapq.heappop(self.heap)
            if not self.taken[s] and version == self.version[s]:
                self.taken[s] = True
                return s
        return None


def _take_in_order(problem: ReclaimProblem, order: np.ndarray) -> list[int]:
    count = target_count(problem)
    if count is not None:
        return [int(s) for s in order[:count]]
    need = int(problem.min_gpus)
    if need <= 0:
        return []
    cum = np.cumsum(problem.server_gpus[order])
    k = int(np.searchsorted(cum, need)) + 1
    return [int(s) for s in order[:k]]


def fewest_jobs_reclaim(problem: ReclaimProblem) -> ReclaimResult:
    """Baseline: return the servers hosting the fewest jobs (ties: fewest workers, then lowest index).

    Static order, no update after a pick. Running time ``O(H + S log S)``.

    Examples
    --------
    >>> from lyra_solver.formulations.reclaim import ReclaimProblem
    >>> p = ReclaimProblem.build(server_gpus=[8, 8, 8], job_workers=[4, 1, 6], job_min=[2, 1, 2],
    ...                          job_gpus_per_worker=[1, 1, 1], restart_cost=[30.0, 30.0, 30.0],
    ...                          preempt_cost=[300.0, 300.0, 300.0], host_job=[0, 0, 1, 2, 2],
    ...                          host_server=[0, 1, 1, 1, 2], host_count=[2, 2, 1, 2, 4], count=2)
    >>> fewest_jobs_reclaim(p).servers
    (0, 2)
    """
    t0 = time.perf_counter()
    if gpus_unreachable(problem):
        return infeasible_result(t0, "fewest-jobs")
    n = problem.n_servers
    jobs_per = np.bincount(problem.host_server, minlength=n)
    workers_per = np.bincount(problem.host_server, weights=problem.host_count, minlength=n)
    order = np.lexsort((np.arange(n), workers_per, jobs_per))
    return _result(problem, _take_in_order(problem, order), "fewest-jobs", t0, "static order")


def random_reclaim(problem: ReclaimProblem, seed: int = 0) -> ReclaimResult:
    """Baseline: return servers in a uniformly random order (``numpy.random.default_rng(seed)``).

    Deterministic for a given seed. Running time ``O(H + S)``.

    Examples
    --------
    >>> from lyra_solver.formulations.reclaim import ReclaimProblem
    >>> p = ReclaimProblem.build(server_gpus=[8, 8, 8], job_workers=[4, 1, 6], job_min=[2, 1, 2],
    ...                          job_gpus_per_worker=[1, 1, 1], restart_cost=[30.0, 30.0, 30.0],
    ...                          preempt_cost=[300.0, 300.0, 300.0], host_job=[0, 0, 1, 2, 2],
    ...                          host_server=[0, 1, 1, 1, 2], host_count=[2, 2, 1, 2, 4], count=2)
    >>> random_reclaim(p, seed=0).servers == random_reclaim(p, seed=0).servers
    True
    >>> len(random_reclaim(p, seed=1).servers)
    2
    """
    t0 = time.perf_counter()
    if gpus_unreachable(problem):
        return infeasible_result(t0, "random")
    order = np.random.default_rng(seed).permutation(problem.n_servers)
    return _result(problem, _take_in_order(problem, order), "random", t0, f"seed {seed}")
