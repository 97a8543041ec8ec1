"""Exact worker placement and joint allocation-and-placement (DESIGN "Place", "Scale").

:func:`solve_placement` puts each job's decided workers onto servers, minimising lexicographically
(a) base-demand workers on loaned servers, (b) servers spanned summed over jobs, (c) running workers moved.
:func:`solve_joint` is the true optimum of Scale + Place on small clusters: each job picks its worker count
and its placement together, valued by a table that depends on the count and on the servers spanned (a job
that spans one more server runs slower, as the measured profiles show).

Both are integer programs over ``n_js`` (workers of job ``j`` on server ``s``) and ``b_js`` (job ``j``
spans ``s``), solved by CP-SAT or CBC; objectives have integer coefficients (values are scaled exactly
to integers when they are decimals, see :func:`formulations.reclaim.solve_reclaim`).

References
----------
Li et al., "Lyra: Elastic Scheduling for Deep Learning Clusters", EuroSys 2023 (placement of base and
flexible workers, so that a reclaim shrinks jobs instead of preempting them).
Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep Learning", OSDI 2021
(throughput profiles that drop when a job spans more servers).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from lyra_solver.formulations._result import Status, relative_gap
from lyra_solver.formulations.problems import Placement, PlacementProblem
from lyra_solver.formulations.reclaim import _integerise, _Milp, _solve_lex

__all__ = ["JointProblem", "JointResult", "PlacementResult", "joint_value", "solve_joint", "solve_placement"]


@dataclass(frozen=True)
class PlacementResult:
    """Answer of :func:`solve_placement`.

    Attributes
    ----------
    status : Status
        ``optimal`` when all three lexicographic stages are proven; ``feasible`` with a placement
        otherwise; ``infeasible`` / ``no_solution`` without one.
    objective : tuple of int or None
        ``(base_on_loaned, spans, moved)`` of the placement, recomputed by :class:`Placement`.
    bound : float or None
        Proven lower bound on the first component (base workers on loaned servers).
    gap : float or None
        0 when optimal; else :func:`relative_gap` of the first component and its bound.
    placement : Placement or None
    time_s : float
    method : str
    backend_status : str
    """

    status: Status
    objective: tuple[int, int, int] | None
    bound: float | None
    gap: float | None
    placement: Placement | None
    time_s: float
    method: str
    backend_status: str


def _placement_from(values: list[int], nvar: dict[tuple[int, int], int], n_jobs: int) -> Placement:
    per: list[list[tuple[int, int]]] = [[] for _ in range(n_jobs)]
    for (j, s), v in sorted(nvar.items()):
        if values[v] > 0:
            per[j].append((s, int(values[v])))
    return Placement(per_job=tuple(tuple(p) for p in per))


def _check_method(method: str) -> None:
    if method not in ("cpsat", "cbc"):
        raise ValueError(f"unknown method {method!r}: expected 'cpsat' or 'cbc'")


def solve_placement(problem: PlacementProblem, *, method: str = "cpsat", time_limit: float | None = None,
                    num_workers: int = 1, deterministic: bool = False) -> PlacementResult:
    """Place every job's workers, minimising (base on loaned, spans, moved) lexicographically.

    Parameters
    ----------
    problem : PlacementProblem
    method : {"cpsat", "cbc"}
    time_limit : float, optional
        Seconds for the three stages together; ``None`` solves to proven optimality.
    num_workers : int
        Solver threads (1: deterministic CP-SAT).
    deterministic : bool
        CP-SAT's deterministic time instead of wall time for ``time_limit`` (one worker, fixed seed): the
        answer does not depend on machine load (see :func:`lyra_solver.formulations.reclaim.solve_reclaim`).

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
    _check_method(method)
    n_servers, n_jobs = problem.n_servers, problem.n_jobs
    free = problem.server_free.tolist()
    loaned = problem.server_loaned.tolist()
    workers = problem.job_workers.tolist()
    base = problem.job_base.tolist()
    gpw = problem.job_gpus_per_worker.tolist()

    model = _Milp.empty()
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
    if any(workers[j] > 0 and not any((j, s) in nvar for s in range(n_servers)) for j in range(n_jobs)):
        return PlacementResult(status=Status.INFEASIBLE, objective=None, bound=None, gap=None, placement=None,
                               time_s=time.perf_counter() - t0, method=method,
                               backend_status="a job fits on no server")
    ans = _solve_lex(model, objectives, method=method, time_limit=time_limit, num_workers=num_workers,
                     deterministic=deterministic)
    if ans.values is None:
        return PlacementResult(status=ans.status, objective=None, bound=ans.first_bound, gap=None,
                               placement=None, time_s=time.perf_counter() - t0, method=method,
                               backend_status=ans.backend_status)
    placement = _placement_from(ans.values, nvar, n_jobs)
    obj = (placement.base_on_loaned(problem), placement.spans(), placement.moved(problem))
    if ans.all_optimal:
        status, gap = Status.OPTIMAL, 0.0
    else:
        status, gap = Status.FEASIBLE, relative_gap(float(obj[0]), ans.first_bound)
    return PlacementResult(status=status, objective=obj, bound=ans.first_bound, gap=gap, placement=placement,
                           time_s=time.perf_counter() - t0, method=method, backend_status=ans.backend_status)


@dataclass(frozen=True, eq=False)
class JointProblem:
    """Scale and place together: each job picks a worker count and a placement.

    Attributes
    ----------
    server_free : (S,) int
        Free GPUs per server.
    job_min, job_max : (J,) int
        Worker range, ``1 <= min_j <= max_j``.
    job_gpus_per_worker : (J,) int
    value : tuple of (max_j - min_j + 1, K_j) float arrays
        ``value[j][w - min_j][k - 1]``: value of running job ``j`` at ``w`` workers spread over exactly
        ``k`` servers (``k <= min(w, K_j, S)``); ``nan`` or ``-inf`` forbids the option.
    """

    server_free: np.ndarray
    job_min: np.ndarray
    job_max: np.ndarray
    job_gpus_per_worker: np.ndarray
    value: tuple[np.ndarray, ...]

    @classmethod
    def build(cls, *, server_free, job_min, job_max, job_gpus_per_worker, value) -> JointProblem:
        def frozen(a, dtype):
            arr = np.array(a, dtype=dtype, copy=True)
            arr.setflags(write=False)
            return arr

        jmin = frozen(job_min, np.int64)
        jmax = frozen(job_max, np.int64)
        vals = tuple(frozen(np.atleast_2d(np.asarray(v, dtype=np.float64)), np.float64) for v in value)
        if len(vals) != jmin.shape[0] or jmax.shape[0] != jmin.shape[0]:
            raise ValueError("value, job_min and job_max must have one entry per job")
        for j, v in enumerate(vals):
            if jmin[j] < 1 or jmax[j] < jmin[j]:
                raise ValueError(f"job {j}: need 1 <= min <= max, got {jmin[j]}..{jmax[j]}")
            if v.shape[0] != jmax[j] - jmin[j] + 1:
                raise ValueError(f"value[{j}]: expected {jmax[j] - jmin[j] + 1} rows, got {v.shape[0]}")
        return cls(server_free=frozen(server_free, np.int64), job_min=jmin, job_max=jmax,
                   job_gpus_per_worker=frozen(job_gpus_per_worker, np.int64), value=vals)

    @property
    def n_servers(self) -> int:
        return int(self.server_free.shape[0])

    @property
    def n_jobs(self) -> int:
        return int(self.job_min.shape[0])

    def option_value(self, j: int, w: int, k: int) -> float:
        """``value[j][w - min_j][k - 1]``, or ``-inf`` when the option is outside the table or forbidden."""
        v = self.value[j]
        r, c = w - int(self.job_min[j]), k - 1
        if not (0 <= r < v.shape[0] and 0 <= c < v.shape[1]):
            return float("-inf")
        x = float(v[r, c])
        return x if np.isfinite(x) else float("-inf")


@dataclass(frozen=True)
class JointResult:
    """Answer of :func:`solve_joint`: ``objective`` is the total value (maximised), ``bound`` an upper bound.

    ``workers[j]`` is the chosen count; ``placement`` holds ``(server, workers)`` pairs per job.
    """

    status: Status
    objective: float | None
    bound: float | None
    gap: float | None
    workers: tuple[int, ...]
    placement: Placement | None
    time_s: float
    method: str
    backend_status: str


def joint_value(problem: JointProblem, placement: Placement) -> float:
    """Total value of a joint answer: ``sum_j value[j][w_j - min_j][k_j - 1]`` (``-inf`` if forbidden)."""
    total = 0.0
    for j, pairs in enumerate(placement.per_job):
        total += problem.option_value(j, sum(n for _, n in pairs), len(pairs))
    return total


def solve_joint(problem: JointProblem, *, method: str = "cpsat", time_limit: float | None = None,
                num_workers: int = 1) -> JointResult:
    """Choose every job's worker count and placement together, maximising the total value.

    Parameters
    ----------
    problem : JointProblem
    method : {"cpsat", "cbc"}
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
    _check_method(method)
    n_servers, n_jobs = problem.n_servers, problem.n_jobs
    free = problem.server_free.tolist()
    gpw = problem.job_gpus_per_worker.tolist()
    model = _Milp.empty()
    nvar: dict[tuple[int, int], int] = {}
    t_var: list[int] = []
    t_val: list[float] = []
    infeasible = False
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
        if not ts:
            infeasible = True
            break
        model.row(ts, [1] * len(ts), lo=1, hi=1)
        model.row(ns + ts, [1] * len(ns) + [-w for w in ws], lo=0, hi=0)
        model.row(bs + ts, [1] * len(bs) + [-k for k in ks], lo=0, hi=0)
    if infeasible:
        return JointResult(status=Status.INFEASIBLE, objective=None, bound=None, gap=None, workers=(),
                           placement=None, time_s=time.perf_counter() - t0, method=method,
                           backend_status="a job has no allowed option")
    for s in range(n_servers):
        js = [j for j in range(n_jobs) if (j, s) in nvar]
        if js:
            model.row([nvar[(j, s)] for j in js], [gpw[j] for j in js], hi=free[s])
    ints, scale, err = _integerise(-np.asarray(t_val, dtype=np.float64))
    ans = _solve_lex(model, [(t_var, ints.tolist())], method=method, time_limit=time_limit,
                     num_workers=num_workers)
    bound = None if ans.first_bound is None else -ans.first_bound / scale + err
    if ans.values is None:
        return JointResult(status=ans.status, objective=None, bound=bound, gap=None, workers=(),
                           placement=None, time_s=time.perf_counter() - t0, method=method,
                           backend_status=ans.backend_status)
    placement = _placement_from(ans.values, nvar, n_jobs)
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
                       placement=placement, time_s=time.perf_counter() - t0, method=method,
                       backend_status=ans.backend_status)
