"""Exact worker placement by an integer program, solved by CP-SAT or CBC (DESIGN "Place").

Puts each job's decided workers onto servers, minimising lexicographically (a) base-demand workers on loaned
servers, (b) servers spanned summed over jobs, (c) running workers moved: an integer program over ``n_js``
(workers of job ``j`` on server ``s``) and ``b_js`` (job ``j`` spans ``s``), solved in three stages by
:func:`lyra_solver.formulations._lexilp.solve_lex`.

References
----------
Li et al., "Lyra: Elastic Scheduling for Deep Learning Clusters", EuroSys 2023 (placement of base and
flexible workers, so that a reclaim shrinks jobs instead of preempting them).
"""
from __future__ import annotations

import time

from lyra_solver.formulations._lexilp import Milp, solve_lex
from lyra_solver.formulations._result import Status, relative_gap
from lyra_solver.formulations.placement._types import PlacementProblem, PlacementResult, placement_from

__all__ = ["solve_ilp"]


def solve_ilp(problem: PlacementProblem, *, backend: str, time_limit: float | None = None,
              num_workers: int = 1, deterministic: bool = False) -> PlacementResult:
    """Place every job's workers, minimising (base on loaned, spans, moved) lexicographically.

    Parameters
    ----------
    problem : PlacementProblem
        Every job with workers to place fits on some server
        (:func:`lyra_solver.formulations.placement.solve_placement` checks it before dispatch).
    backend : {"cpsat", "cbc"}
    time_limit : float, optional
        Seconds for the three stages together; ``None`` solves to proven optimality.
    num_workers : int
        Solver threads (1: deterministic CP-SAT).
    deterministic : bool
        CP-SAT on deterministic time, one worker, fixed seed (:func:`lyra_solver.formulations._lexilp.solve_lex`).

    Returns
    -------
    PlacementResult

    Notes
    -----
    Variables: integer ``n_js`` and binary ``b_js`` for every pair with ``gpus_per_worker_j <= free_s``,
    integer ``q_j`` (base workers not on training servers) and ``m_js`` (workers moved off a current pair).
    Rows: ``sum_s n_js = workers_j``; ``sum_j g_j n_js <= free_s``; ``n_js <= cap_js b_js``,
    ``b_js <= n_js``; ``q_j >= base_j - sum_{s training} n_js``; ``m_js >= cur_js - n_js``.
    ``O(J S)`` variables; NP-hard (bin packing), meant for the engine's clusters and for reference.
    """
    t0 = time.perf_counter()
    n_servers, n_jobs = problem.n_servers, problem.n_jobs
    free = problem.server_free.tolist()
    loaned = problem.server_loaned.tolist()
    workers = problem.job_workers.tolist()
    base = problem.job_base.tolist()
    gpw = problem.job_gpus_per_worker.tolist()

    model = Milp.empty()
    nvar: dict[tuple[int, int], int] = {}
    bvar: dict[tuple[int, int], int] = {}
    span_obj: list[int] = []
    base_obj: list[int] = []
    move_obj: list[int] = []
    for j in range(n_jobs):
        if workers[j] <= 0:
            continue
        g = max(1, gpw[j])
        row_idx: list[int] = []
        for s in range(n_servers):
            cap = min(workers[j], max(0, free[s]) // g)
            if cap <= 0:
                continue
            n = model.var(ub=cap)
            b = model.var()
            nvar[(j, s)] = n
            bvar[(j, s)] = b
            model.row([n, b], [1, -cap], hi=0)
            model.row([b, n], [1, -1], hi=0)
            row_idx.append(n)
            span_obj.append(b)
        model.row(row_idx, [1] * len(row_idx), lo=workers[j], hi=workers[j])
        need = min(base[j], workers[j])
        if need > 0:
            q = model.var(ub=need)
            tr = [nvar[(j, s)] for s in range(n_servers) if (j, s) in nvar and not loaned[s]]
            model.row(tr + [q], [1] * len(tr) + [1], lo=need)
            base_obj.append(q)
    for s in range(n_servers):
        idx = [nvar[(j, s)] for j in range(n_jobs) if (j, s) in nvar]
        if idx:
            model.row(idx, [gpw[j] for j in range(n_jobs) if (j, s) in nvar], hi=free[s])
    for j, s, c in zip(problem.cur_job.tolist(), problem.cur_server.tolist(), problem.cur_count.tolist(),
                       strict=True):
        if c <= 0:
            continue
        m = model.var(ub=c)
        idx = [m] + ([nvar[(j, s)]] if (j, s) in nvar else [])
        model.row(idx, [1] * len(idx), lo=c)
        move_obj.append(m)

    objectives = [(base_obj, [1] * len(base_obj)), (span_obj, [1] * len(span_obj)),
                  (move_obj, [1] * len(move_obj))]
    ans = solve_lex(model, objectives, method=backend, time_limit=time_limit, num_workers=num_workers,
                    deterministic=deterministic, start=t0)
    if ans.values is None:
        return PlacementResult(status=ans.status, objective=None, bound=ans.first_bound, gap=None,
                               placement=None, time_s=time.perf_counter() - t0, method=backend,
                               backend_status=ans.backend_status)
    placement = placement_from(ans.values, nvar, n_jobs)
    obj = (placement.base_on_loaned(problem), placement.spans(), placement.moved(problem))
    if ans.all_optimal:
        status, gap = Status.OPTIMAL, 0.0
    else:
        status, gap = Status.FEASIBLE, relative_gap(float(obj[0]), ans.first_bound)
    return PlacementResult(status=status, objective=obj, bound=ans.first_bound, gap=gap, placement=placement,
                           time_s=time.perf_counter() - t0, method=backend, backend_status=ans.backend_status)
