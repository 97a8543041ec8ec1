"""Joint allocation and placement by an integer program, solved by CP-SAT or CBC (DESIGN "Scale", "Place").

The true optimum of Scale + Place on small clusters: each job picks its worker count and its placement
together, valued by a table that depends on the count and on the servers spanned (a job that spans one more
server runs slower, as the measured profiles show). Values are scaled exactly to integers when they are
decimals (:func:`lyra_solver.formulations._lexilp.integerise`).

References
----------
Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep Learning", OSDI 2021
(throughput profiles that drop when a job spans more servers).
"""
from __future__ import annotations

import time

import numpy as np
from lyra_solver.formulations._lexilp import Milp, integerise, solve_lex
from lyra_solver.formulations._result import Status, relative_gap
from lyra_solver.formulations.placement._types import JointProblem, JointResult, joint_value, placement_from

__all__ = ["solve_joint_ilp"]


def solve_joint_ilp(problem: JointProblem, *, backend: str, time_limit: float | None = None,
                    num_workers: int = 1) -> JointResult:
    """Choose every job's worker count and placement together, maximising the total value.

    Parameters
    ----------
    problem : JointProblem
        Every job has an allowed option (:func:`lyra_solver.formulations.placement.solve_joint` checks it
        before dispatch).
    backend : {"cpsat", "cbc"}
    time_limit : float, optional
    num_workers : int

    Returns
    -------
    JointResult
        ``infeasible`` when not every job can run its minimum; a limit hit gives ``feasible`` (incumbent,
        upper bound, gap) or ``no_solution``.

    Notes
    -----
    One-hot ``t_jwk`` over the allowed (count, span) options, integer ``n_js``, binary ``b_js``::

        sum_wk t_jwk = 1,  sum_s n_js = sum_wk w t_jwk,  sum_s b_js = sum_wk k t_jwk,
        b_js <= n_js <= cap_js b_js,  sum_j g_j n_js <= free_s,   maximise sum value_jwk t_jwk.

    ``O(J (S + W K))`` variables. For small clusters (the true optimum of Scale + Place that the
    engine's two-step pipeline approximates).
    """
    t0 = time.perf_counter()
    n_servers, n_jobs = problem.n_servers, problem.n_jobs
    free = problem.server_free.tolist()
    gpw = problem.job_gpus_per_worker.tolist()
    model = Milp.empty()
    nvar: dict[tuple[int, int], int] = {}
    t_var: list[int] = []
    t_val: list[float] = []
    for j in range(n_jobs):
        g = max(1, gpw[j])
        lo, hi = int(problem.job_min[j]), int(problem.job_max[j])
        ns: list[int] = []
        bs: list[int] = []
        for s in range(n_servers):
            cap = min(hi, max(0, free[s]) // g)
            if cap <= 0:
                continue
            n = model.var(ub=cap)
            b = model.var()
            nvar[(j, s)] = n
            model.row([n, b], [1, -cap], hi=0)
            model.row([b, n], [1, -1], hi=0)
            ns.append(n)
            bs.append(b)
        ts: list[int] = []
        ws: list[int] = []
        ks: list[int] = []
        for w in range(lo, hi + 1):
            for k in range(1, min(w, len(ns)) + 1):
                v = problem.option_value(j, w, k)
                if v == float("-inf"):
                    continue
                t = model.var()
                ts.append(t)
                ws.append(w)
                ks.append(k)
                t_var.append(t)
                t_val.append(v)
        model.row(ts, [1] * len(ts), lo=1, hi=1)
        model.row(ns + ts, [1] * len(ns) + [-w for w in ws], lo=0, hi=0)
        model.row(bs + ts, [1] * len(bs) + [-k for k in ks], lo=0, hi=0)
    for s in range(n_servers):
        js = [j for j in range(n_jobs) if (j, s) in nvar]
        if js:
            model.row([nvar[(j, s)] for j in js], [gpw[j] for j in js], hi=free[s])
    ints, scale, err = integerise(-np.asarray(t_val, dtype=np.float64))
    ans = solve_lex(model, [(t_var, ints.tolist())], method=backend, time_limit=time_limit,
                     num_workers=num_workers, start=t0)
    bound = None if ans.first_bound is None else -ans.first_bound / scale + err
    if ans.values is None:
        return JointResult(status=ans.status, objective=None, bound=bound, gap=None, workers=(),
                           placement=None, time_s=time.perf_counter() - t0, method=backend,
                           backend_status=ans.backend_status)
    placement = placement_from(ans.values, nvar, n_jobs)
    value = joint_value(problem, placement)
    bound = value if bound is None and ans.status == Status.OPTIMAL else bound
    if bound is not None:
        bound = max(bound, value)
    gap = relative_gap(value, bound)
    status = ans.status
    if status == Status.OPTIMAL and gap not in (0.0, None):
        status = Status.FEASIBLE
    workers = tuple(sum(n for _, n in pairs) for pairs in placement.per_job)
    return JointResult(status=status, objective=value, bound=bound, gap=gap, workers=workers,
                       placement=placement, time_s=time.perf_counter() - t0, method=backend,
                       backend_status=ans.backend_status)
