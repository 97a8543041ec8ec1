"""Heuristic server reclamation: Lyra's greedy and two baselines (DESIGN "Reclaim").

All three return a :class:`formulations.reclaim.ReclaimResult` whose cost is recomputed by
:func:`formulations.reclaim.evaluate_reclaim`, so they are directly comparable with the exact ILP
(:func:`formulations.reclaim.solve_reclaim`).

References
----------
Li, J., Xu, H., Zhu, Y., Liu, Z., Guo, C., Wang, C. "Lyra: Elastic Scheduling for Deep Learning Clusters."
EuroSys 2023, section 4 (server preemption cost and greedy reclaiming).
"""
from __future__ import annotations

import heapq
import time

import numpy as np
from lyra_solver.formulations._result import Status
from lyra_solver.formulations.problems import ReclaimProblem
from lyra_solver.formulations.reclaim import ReclaimResult, evaluate_reclaim, target_count

__all__ = ["fewest_jobs_reclaim", "greedy_reclaim", "random_reclaim"]

_KEY_DIGITS = 9  # marginal costs are rounded to this many decimals for tie detection


def _result(problem: ReclaimProblem, servers: list[int], method: str, t0: float,
            backend: str) -> ReclaimResult:
    chosen = sorted(set(servers))
    cost, npre, preempted, shrunk = evaluate_reclaim(problem, chosen)
    costs_nonneg = bool((problem.restart_cost >= 0).all() and (problem.preempt_cost >= 0).all()
                        and (problem.shrink_loss is None or (problem.shrink_loss >= 0).all()))
    if cost == 0.0 and costs_nonneg:
        status, bound, gap = Status.OPTIMAL, 0.0, 0.0  # nothing can cost less than zero
    else:
        status, bound, gap = Status.FEASIBLE, None, None
    return ReclaimResult(status=status, objective=cost, bound=bound, gap=gap, servers=tuple(chosen),
                         preempted=preempted, shrunk=shrunk, preemptions=npre,
                         time_s=time.perf_counter() - t0, method=method, backend_status=backend)


def _infeasible(method: str, t0: float) -> ReclaimResult:
    return ReclaimResult(status=Status.INFEASIBLE, objective=None, bound=None, gap=None, servers=(),
                         preempted=(), shrunk=(), preemptions=0, time_s=time.perf_counter() - t0,
                         method=method, backend_status="min_gpus above the candidates' total GPUs")


def _gpus_unreachable(problem: ReclaimProblem) -> bool:
    return problem.min_gpus is not None and int(problem.server_gpus.sum()) < problem.min_gpus


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
    """
    t0 = time.perf_counter()
    n_servers = problem.n_servers
    if _gpus_unreachable(problem):
        return _infeasible("greedy", t0)
    count = target_count(problem)
    need_gpus = problem.min_gpus if count is None else None
    if (count is not None and count == 0) or (need_gpus is not None and need_gpus <= 0):
        return _result(problem, [], "greedy", t0, "count reached")
    if count is not None and count >= n_servers:
        return _result(problem, list(range(n_servers)), "greedy", t0, "all servers")

    hj = problem.host_job
    hs = problem.host_server
    hc = problem.host_count
    head_arr = problem.job_workers - problem.job_min
    restart = problem.restart_cost.tolist()
    preempt = problem.preempt_cost.tolist()
    head = head_arr.tolist()
    loss = problem.shrink_loss
    loss_rows = loss.tolist() if loss is not None and loss.shape[1] > 0 else None
    loss_last = loss.shape[1] - 1 if loss_rows is not None else 0

    def cost(j: int, r: int) -> float:
        if r <= 0:
            return 0.0
        if r <= head[j]:
            if loss_rows is None:
                return restart[j]
            return restart[j] + loss_rows[j][min(r, loss_last)]
        return preempt[j]

    # Initial standalone costs, vectorised.
    if hj.size:
        fits = hc <= head_arr[hj]
        shrink_c = problem.restart_cost[hj]
        if loss_rows is not None:
            shrink_c = shrink_c + loss[hj, np.minimum(hc, loss_last)]
        c_host = np.where(hc <= 0, 0.0, np.where(fits, shrink_c, problem.preempt_cost[hj]))
        p_host = ((hc > 0) & ~fits).astype(np.int64)
        c_srv = np.bincount(hs, weights=c_host, minlength=n_servers)
        p_srv = np.bincount(hs, weights=p_host, minlength=n_servers).astype(np.int64)
    else:
        c_srv = np.zeros(n_servers)
        p_srv = np.zeros(n_servers, dtype=np.int64)

    # Adjacency lists (plain Python lists: the pick loop is scalar work).
    order_s = np.argsort(hs, kind="stable")
    bounds_s = np.searchsorted(hs[order_s], np.arange(n_servers + 1)).tolist()
    jobs_of_s = hj[order_s].tolist()
    cnt_of_s = hc[order_s].tolist()
    order_j = np.argsort(hj, kind="stable")
    bounds_j = np.searchsorted(hj[order_j], np.arange(problem.n_jobs + 1)).tolist()
    srv_of_j = hs[order_j].tolist()
    cnt_of_j = hc[order_j].tolist()

    c = c_srv.tolist()
    p = p_srv.tolist()
    gpus = problem.server_gpus.tolist()
    removed = [0] * problem.n_jobs
    version = [0] * n_servers
    taken = [False] * n_servers
    heap = [(round(c[s], _KEY_DIGITS), p[s], s, 0) for s in range(n_servers)]
    heapq.heapify(heap)

    picks: list[int] = []
    got_gpus = 0
    while heap:
        if count is not None and len(picks) >= count:
            break
        if need_gpus is not None and got_gpus >= need_gpus:
            break
        _, _, s, ver = heapq.heappop(heap)
        if taken[s] or ver != version[s]:
            continue
        taken[s] = True
        picks.append(s)
        got_gpus += gpus[s]
        dirty: set[int] = set()
        for a in range(bounds_s[s], bounds_s[s + 1]):
            j = jobs_of_s[a]
            n = cnt_of_s[a]
            r_old = removed[j]
            r_new = r_old + n
            removed[j] = r_new
            base_old = cost(j, r_old)
            base_new = cost(j, r_new)
            pre_old = r_old > head[j]
            pre_new = r_new > head[j]
            for b in range(bounds_j[j], bounds_j[j + 1]):
                s2 = srv_of_j[b]
                if taken[s2]:
                    continue
                n2 = cnt_of_j[b]
                d_old = cost(j, r_old + n2) - base_old
                d_new = cost(j, r_new + n2) - base_new
                dp_old = int(r_old + n2 > head[j]) - int(pre_old)
                dp_new = int(r_new + n2 > head[j]) - int(pre_new)
                if d_old != d_new or dp_old != dp_new:
                    c[s2] += d_new - d_old
                    p[s2] += dp_new - dp_old
                    dirty.add(s2)
        for s2 in dirty:
            version[s2] += 1
            heapq.heappush(heap, (round(c[s2], _KEY_DIGITS), p[s2], s2, version[s2]))
    return _result(problem, picks, "greedy", t0, "count reached")


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
    """
    t0 = time.perf_counter()
    if _gpus_unreachable(problem):
        return _infeasible("fewest-jobs", t0)
    n = problem.n_servers
    jobs_per = np.bincount(problem.host_server, minlength=n)
    workers_per = np.bincount(problem.host_server, weights=problem.host_count, minlength=n)
    order = np.lexsort((np.arange(n), workers_per, jobs_per))
    return _result(problem, _take_in_order(problem, order), "fewest-jobs", t0, "static order")


def random_reclaim(problem: ReclaimProblem, seed: int = 0) -> ReclaimResult:
    """Baseline: return servers in a uniformly random order (``numpy.random.default_rng(seed)``).

    Deterministic for a given seed. Running time ``O(H + S)``.
    """
    t0 = time.perf_counter()
    if _gpus_unreachable(problem):
        return _infeasible("random", t0)
    order = np.random.default_rng(seed).permutation(problem.n_servers)
    return _result(problem, _take_in_order(problem, order), "random", t0, f"seed {seed}")
