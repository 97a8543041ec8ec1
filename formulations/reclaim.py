"""Exact server reclamation: which loaned servers to give back at least cost (DESIGN "Reclaim").

The inference side asks for loaned servers back. Removing ``r_j`` workers from job ``j`` shrinks it when
``w_j - r_j >= min_j`` (cost ``restart_j``, plus the optional JCT value ``shrink_loss[j, r_j]``) and
preempts it otherwise (cost ``preempt_j``). The servers are chosen to minimise the total cost, then the
number of preemptions (lexicographically).

Exact model (the x/z/y integer program of the design): binary ``x_s`` (server returned), ``z_j`` (job
touched), ``y_j`` (job preempted), with ``R_j = sum_s n_js x_s`` the workers removed from ``j``::

    sum_s x_s = count                      (or  sum_s gpus_s x_s >= min_gpus)
    z_j >= x_s                             for every (j, s) with n_js > 0
    z_j <= sum_{s: n_js > 0} x_s
    R_j <= h_j + (T_j - h_j) y_j           h_j = w_j - min_j (headroom), T_j = sum_s n_js
    R_j >= (h_j + 1) y_j                   (a job is preempted *only* when it must be)
    y_j <= z_j
    minimise  sum_j restart_j z_j + (preempt_j - restart_j) y_j,   then  sum_j y_j

The reverse big-M row ``R_j >= (h_j + 1) y_j`` makes ``y_j`` an exact indicator of ``R_j > h_j``, so the
model stays correct when ``preempt_j < restart_j`` (a job that must be preempted is counted as preempted
whichever is cheaper, and one that need not be is never "preempted" to save cost). Jobs that can never be
preempted by the candidate servers (``T_j <= h_j``) get no ``y_j``; jobs with no headroom get ``y_j = z_j``.
With ``shrink_loss`` the shrink branch is split into one-hot binaries ``u_jr`` ("exactly ``r`` workers
removed, not preempted") so the loss is exact for every ``r``.

The lexicographic objective is solved in two stages: first the cost, then, with the cost fixed to its
optimum, the number of preemptions (CP-SAT gets the first stage's solution as a hint).

References
----------
Li, J., Xu, H., Zhu, Y., Liu, Z., Guo, C., Wang, C. "Lyra: Elastic Scheduling for Deep Learning Clusters."
EuroSys 2023 (capacity loaning, server preemption cost, greedy reclaiming).
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
from lyra_solver.formulations._result import Status, relative_gap
from lyra_solver.formulations.problems import ReclaimProblem

__all__ = ["ReclaimResult", "evaluate_reclaim", "solve_reclaim", "target_count"]


@dataclass(frozen=True)
class ReclaimResult:
    """Answer of a reclamation solver (exact or heuristic).

    Attributes
    ----------
    status : Status
        ``optimal`` (cost proven optimal), ``feasible`` (a server set, not proven optimal), ``infeasible``
        (no server set meets the request, e.g. ``min_gpus`` above the candidates' total) or ``no_solution``.
    objective : float or None
        Total cost of the chosen servers, in the problem's units, recomputed by :func:`evaluate_reclaim`.
    bound : float or None
        Proven lower bound on the optimal cost (``None`` for heuristics).
    gap : float or None
        :func:`formulations.relative_gap` of objective and bound.
    servers : tuple of int
        Chosen candidate-server indices, ascending.
    preempted, shrunk : tuple of int
        Jobs preempted / shrunk by returning ``servers``, ascending.
    preemptions : int
        ``len(preempted)``.
    time_s : float
        Wall-clock seconds spent.
    method : str
        ``"cpsat"``, ``"cbc"``, ``"greedy"``, ``"fewest-jobs"``, ``"random"`` or ``"trivial"``.
    backend_status : str
        The backend's own status string(s).
    """

    status: Status
    objective: float | None
    bound: float | None
    gap: float | None
    servers: tuple[int, ...]
    preempted: tuple[int, ...]
    shrunk: tuple[int, ...]
    preemptions: int
    time_s: float
    method: str
    backend_status: str


def target_count(problem: ReclaimProblem) -> int | None:
    """Number of servers to return when the request is a count (clipped to ``[0, S]``), else ``None``."""
    if problem.count is None:
        return None
    return max(0, min(int(problem.count), problem.n_servers))


def evaluate_reclaim(problem: ReclaimProblem, servers) -> tuple[float, int, tuple[int, ...], tuple[int, ...]]:
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


# ----------------------------------------------------------------------------------------------------------
# A small backend-neutral 0-1/integer linear model, solved lexicographically by CP-SAT or CBC.
# ----------------------------------------------------------------------------------------------------------

_EXACT_DIGITS = 6  # try scales 10**0 .. 10**6 for exact integer objective coefficients
_FALLBACK_SCALE = 1e6


def _integerise(coefs: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Integer objective coefficients for CP-SAT: ``(ints, scale, err)``.

    ``ints ~ coefs * scale``; ``err = sum |ints / scale - coefs|`` bounds the difference between the scaled
    and the true objective of any 0-1 solution (0 when an exact decimal scale ``10**d``, ``d <= 6``, exists).
    """
    if coefs.size == 0:
        return np.zeros(0, dtype=np.int64), 1.0, 0.0
    for d in range(_EXACT_DIGITS + 1):
        scale = 10.0 ** d
        scaled = coefs * scale
        ints = np.rint(scaled)
        if np.all(np.abs(scaled - ints) <= 1e-9 * np.maximum(1.0, np.abs(scaled))):
            return ints.astype(np.int64), scale, 0.0
    top = float(np.abs(coefs).max())
    scale = _FALLBACK_SCALE if top * _FALLBACK_SCALE < 2.0 ** 40 else 2.0 ** 40 / top
    ints = np.rint(coefs * scale)
    return ints.astype(np.int64), scale, float(np.abs(ints / scale - coefs).sum())


@dataclass
class _Milp:
    """Variables ``0 <= v <= ub`` (binary when ub == 1), rows ``lo <= a.v <= hi``, implications ``a <= b``."""

    ub: list[int]
    rows: list[tuple[list[int], list[int], int | None, int | None]]
    imps: list[tuple[int, int]]

    @classmethod
    def empty(cls) -> _Milp:
        return cls(ub=[], rows=[], imps=[])

    def var(self, ub: int = 1) -> int:
        self.ub.append(int(ub))
        return len(self.ub) - 1

    def row(self, idx: list[int], coef: list[int], lo: int | None = None, hi: int | None = None) -> None:
        self.rows.append((list(idx), [int(c) for c in coef], lo, hi))

    def imp(self, a: int, b: int) -> None:
        self.imps.append((a, b))


def _merge(idx: list[int], coef: list[int]) -> tuple[list[int], list[int]]:
    """Sum the coefficients of repeated variables (a job on one server reuses that server's variable)."""
    acc: dict[int, int] = {}
    for i, c in zip(idx, coef, strict=True):
        acc[i] = acc.get(i, 0) + int(c)
    keys = [i for i in acc if acc[i] != 0]
    return keys, [acc[i] for i in keys]


@dataclass
class _LexAnswer:
    values: list[int] | None
    status: Status           # of the first objective
    first_bound: float | None  # scaled units of the first objective
    first_value: float | None  # scaled units
    backend_status: str
    all_optimal: bool = False  # every stage proven optimal


def _solve_lex(model: _Milp, objectives: list[tuple[list[int], list[int]]], *, method: str,
               time_limit: float | None, num_workers: int, hint: list[int] | None = None,
               deterministic: bool = False) -> _LexAnswer:
    """Minimise integer objectives lexicographically: each stage fixes the previous optima.

    A stage that ends without proof keeps the previous stages' solution (its own if it improved it).
    """
    model = _Milp(ub=model.ub, rows=[(*_merge(i, c), lo, hi) for i, c, lo, hi in model.rows],
                  imps=model.imps)
    objectives = [_merge(i, c) for i, c in objectives]
    if method == "cpsat":
        return _solve_lex_cpsat(model, objectives, time_limit=time_limit, num_workers=num_workers,
                                hint=hint, deterministic=deterministic)
    if method == "cbc":
        return _solve_lex_cbc(model, objectives, time_limit=time_limit, num_workers=num_workers)
    raise ValueError(f"unknown method {method!r}: expected 'cpsat' or 'cbc'")


def _remaining(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    return max(0.0, deadline - time.perf_counter())


def _solve_lex_cpsat(model: _Milp, objectives, *, time_limit, num_workers, hint,
                     deterministic: bool = False) -> _LexAnswer:
    """CP-SAT stages. ``deterministic``: one worker, a fixed seed and CP-SAT's deterministic time
    (``max_deterministic_time``, shared by the stages) instead of wall time, so that the answer does not
    depend on machine load (the wall time is then not bounded by ``time_limit``)."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    vs = [m.new_bool_var("") if ub == 1 else m.new_int_var(0, ub, "") for ub in model.ub]
    for idx, coef, lo, hi in model.rows:
        expr = cp_model.LinearExpr.weighted_sum([vs[i] for i in idx], coef)
        if lo is not None and lo == hi:
            m.add(expr == lo)
        else:
            if lo is not None:
                m.add(expr >= lo)
            if hi is not None:
                m.add(expr <= hi)
    for a, b in model.imps:
        m.add_implication(vs[a], vs[b])
    if hint is not None:
        for v, h in zip(vs, hint, strict=True):
            m.add_hint(v, h)

    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    det_used = 0.0
    values: list[int] | None = None
    first_status = Status.NO_SOLUTION
    first_bound = first_value = None
    names: list[str] = []
    ok = "OPTIMAL"
    code = {cp_model.OPTIMAL: "OPTIMAL", cp_model.FEASIBLE: "FEASIBLE", cp_model.INFEASIBLE: "INFEASIBLE",
            cp_model.UNKNOWN: "UNKNOWN", cp_model.MODEL_INVALID: "MODEL_INVALID"}
    for stage, (idx, coef) in enumerate(objectives):
        expr = cp_model.LinearExpr.weighted_sum([vs[i] for i in idx], coef)
        m.minimize(expr)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = max(1, int(num_workers))
        solver.parameters.linearization_level = 2
        if deterministic:
            solver.parameters.num_workers = 1
            solver.parameters.random_seed = 0
            if time_limit is not None:
                det_left = float(time_limit) - det_used
                if stage > 0 and det_left <= 0.0:
                    names.append("SKIPPED")
                    break
                solver.parameters.max_deterministic_time = max(det_left, 0.001)
        left = None if deterministic else _remaining(deadline)
        if left is not None:
            if stage > 0 and left <= 0.0:
                names.append("SKIPPED")
                break
            solver.parameters.max_time_in_seconds = max(left, 0.001)
        st = solver.solve(m)
        det_used += solver.response_proto.deterministic_time
        names.append(code.get(st, str(st)))
        if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            values = [int(solver.value(v)) for v in vs]
            if stage == 0:
                first_status = Status.OPTIMAL if st == cp_model.OPTIMAL else Status.FEASIBLE
                first_value = float(solver.objective_value)
                first_bound = float(solver.best_objective_bound)
        elif stage == 0:
            first_status = Status.INFEASIBLE if st == cp_model.INFEASIBLE else Status.NO_SOLUTION
        if st != cp_model.OPTIMAL or stage == len(objectives) - 1:
            break
        best = int(round(solver.objective_value))
        m.add(expr <= best)
        m.clear_hints()
        for v, val in zip(vs, values, strict=True):
            m.add_hint(v, val)
    return _LexAnswer(values=values, status=first_status, first_bound=first_bound, first_value=first_value,
                      backend_status="cp-sat " + "/".join(names),
                      all_optimal=len(names) == len(objectives) and all(n == ok for n in names))


def _solve_lex_cbc(model: _Milp, objectives, *, time_limit, num_workers) -> _LexAnswer:
    import pulp

    prob = pulp.LpProblem("lex", pulp.LpMinimize)
    vs = [prob.add_variable(f"v{i}", 0, ub, cat="Integer" if ub > 1 else "Binary")
          for i, ub in enumerate(model.ub)]
    k = 0
    for idx, coef, lo, hi in model.rows:
        expr = pulp.LpAffineExpression([(vs[i], c) for i, c in zip(idx, coef, strict=True)])
        if lo is not None and lo == hi:
            prob += pulp.LpConstraint(expr, pulp.LpConstraintEQ, f"r{k}", lo)
        else:
            if lo is not None:
                prob += pulp.LpConstraint(expr, pulp.LpConstraintGE, f"r{k}l", lo)
            if hi is not None:
                prob += pulp.LpConstraint(expr, pulp.LpConstraintLE, f"r{k}u", hi)
        k += 1
    for a, b in model.imps:
        prob += pulp.LpConstraint(pulp.LpAffineExpression([(vs[b], 1), (vs[a], -1)]),
                                  pulp.LpConstraintGE, f"i{k}", 0)
        k += 1

    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    values: list[int] | None = None
    first_status = Status.NO_SOLUTION
    first_bound = first_value = None
    names: list[str] = []
    ok = pulp.LpSolution[pulp.LpSolutionOptimal]
    for stage, (idx, coef) in enumerate(objectives):
        expr = pulp.LpAffineExpression([(vs[i], c) for i, c in zip(idx, coef, strict=True)])
        prob.setObjective(expr)
        left = _remaining(deadline)
        if left is not None and stage > 0 and left <= 0.0:
            names.append("SKIPPED")
            break
        kwargs = {"msg": False, "gapRel": 0.0, "gapAbs": 0.0, "threads": max(1, int(num_workers))}
        if left is not None:
            kwargs["timeLimit"] = max(1, int(math.ceil(left)))
        with warnings.catch_warnings():
            # PULP_CBC_CMD (the bundled CBC) is deprecated for PuLP 4.0, still the only CBC shipped here.
            warnings.simplefilter("ignore", DeprecationWarning)
            cmd = pulp.PULP_CBC_CMD(**kwargs)
        prob.solve(cmd)
        sol = prob.sol_status
        names.append(pulp.LpSolution.get(sol, str(sol)))
        got = sol in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible) and all(
            v.varValue is not None for v in vs)
        if got:
            values = [int(round(v.varValue)) for v in vs]
            if stage == 0:
                first_value = float(sum(c * values[i] for i, c in zip(idx, coef, strict=True)))
                if sol == pulp.LpSolutionOptimal:
                    first_status, first_bound = Status.OPTIMAL, first_value
                else:
                    first_status = Status.FEASIBLE
        elif stage == 0:
            first_status = Status.INFEASIBLE if sol == pulp.LpSolutionInfeasible else Status.NO_SOLUTION
        if sol != pulp.LpSolutionOptimal or not got or stage == len(objectives) - 1:
            break
        best = int(round(sum(c * values[i] for i, c in zip(idx, coef, strict=True))))
        prob += pulp.LpConstraint(pulp.LpAffineExpression(expr), pulp.LpConstraintLE, f"lex{stage}", best)
    return _LexAnswer(values=values, status=first_status, first_bound=first_bound, first_value=first_value,
                      backend_status="cbc " + "/".join(names),
                      all_optimal=len(names) == len(objectives) and all(n == ok for n in names))


# ----------------------------------------------------------------------------------------------------------
# The reclamation ILP.
# ----------------------------------------------------------------------------------------------------------

def _trivial(problem: ReclaimProblem, servers: list[int], method: str, t0: float, why: str,
             status: Status = Status.OPTIMAL) -> ReclaimResult:
    cost, npre, preempted, shrunk = evaluate_reclaim(problem, servers)
    return ReclaimResult(status=status, objective=cost, bound=cost, gap=0.0, servers=tuple(sorted(servers)),
                         preempted=preempted, shrunk=shrunk, preemptions=npre,
                         time_s=time.perf_counter() - t0, method=method, backend_status=why)


def _build_reclaim_model(problem: ReclaimProblem):
    """The x/z/y(/u) model: ``(model, x, cost_vars, cost_coefs, preempt_vars)``, costs as floats."""
    n_servers, n_jobs = problem.n_servers, problem.n_jobs
    model = _Milp.empty()
    x = [model.var() for _ in range(n_servers)]
    count = target_count(problem)
    if count is not None:
        model.row(x, [1] * n_servers, lo=count, hi=count)
    else:
        model.row(x, problem.server_gpus.tolist(), lo=int(problem.min_gpus))

    keep = problem.host_count > 0
    hj, hs, hc = problem.host_job[keep], problem.host_server[keep], problem.host_count[keep]
    order = np.lexsort((hs, hj))
    hj, hs, hc = hj[order].tolist(), hs[order].tolist(), hc[order].tolist()
    starts = np.searchsorted(np.asarray(hj, dtype=np.int64), np.arange(n_jobs + 1)).tolist()
    head = (problem.job_workers - problem.job_min).tolist()
    restart = problem.restart_cost.tolist()
    preempt = problem.preempt_cost.tolist()
    loss = problem.shrink_loss
    has_loss = loss is not None and loss.shape[1] > 0

    cost_var: list[int] = []
    cost_coef: list[float] = []
    pre_var: list[int] = []

    for j in range(n_jobs):
        a, b = starts[j], starts[j + 1]
        if a == b:
            continue
        srv = hs[a:b]
        cnt = hc[a:b]
        xs = [x[s] for s in srv]
        total = sum(cnt)
        h = max(0, head[j])
        if len(xs) == 1:
            z = xs[0]  # touched iff its only server is returned
        else:
            z = model.var()
            for xv in xs:
                model.imp(xv, z)
            model.row(xs + [z], [1] * len(xs) + [-1], lo=0)  # z <= sum x (exact even for negative costs)
        if h == 0:  # any touch preempts
            cost_var.append(z)
            cost_coef.append(preempt[j])
            pre_var.append(z)
            continue
        can_preempt = total > h
        if not has_loss:
            cost_var.append(z)
            cost_coef.append(restart[j])
            if can_preempt:
                y = model.var()
                model.imp(y, z)
                model.row(xs + [y], cnt + [-(total - h)], hi=h)      # R <= h + (T - h) y
                model.row(xs + [y], cnt + [-(h + 1)], lo=0)          # R >= (h + 1) y
                cost_var.append(y)
                cost_coef.append(preempt[j] - restart[j])
                pre_var.append(y)
            continue
        # Shrink loss: one-hot u_r (exactly r removed, not preempted), r = 1..min(h, T).
        k = loss.shape[1]
        top = min(h, total)
        us = [model.var() for _ in range(top)]
        for r, u in enumerate(us, start=1):
            cost_var.append(u)
            cost_coef.append(restart[j] + float(loss[j, min(r, k - 1)]))
        if can_preempt:
            y = model.var()
            p = model.var(ub=total)
            model.row([p, y], [1, -total], hi=0)                     # P <= T y
            model.row([p, y], [1, -(h + 1)], lo=0)                   # P >= (h + 1) y
            cost_var.append(y)
            cost_coef.append(preempt[j])
            pre_var.append(y)
            model.row(us + [y, z], [1] * top + [1, -1], lo=0, hi=0)  # sum u + y = z
            model.row(xs + us + [p], cnt + [-r for r in range(1, top + 1)] + [-1], lo=0, hi=0)
        else:
            model.row(us + [z], [1] * top + [-1], lo=0, hi=0)        # sum u = z
            model.row(xs + us, cnt + [-r for r in range(1, top + 1)], lo=0, hi=0)
    return model, x, cost_var, np.asarray(cost_coef, dtype=np.float64), pre_var


def solve_reclaim(problem: ReclaimProblem, *, method: str = "cpsat", time_limit: float | None = None,
                  num_workers: int | None = None, deterministic: bool = False) -> ReclaimResult:
    """Exact reclamation: the cheapest set of servers to return, then the fewest preemptions.

    Parameters
    ----------
    problem : ReclaimProblem
        ``count`` is clipped to ``[0, S]``; with ``min_gpus`` the chosen servers hold at least that many
        GPUs (``infeasible`` when the candidates hold fewer).
    method : {"cpsat", "cbc"}
        OR-Tools CP-SAT or CBC (through PuLP). Both solve the same integer model.
    time_limit : float, optional
        Seconds for the whole (two-stage) solve; ``None`` solves to proven optimality. CBC takes whole
        seconds (rounded up, at least 1).
    num_workers : int, optional
        Solver threads (default 1: CP-SAT is then deterministic, and with ``linearization_level=2``
        it proves the cluster instances faster than its default 2-8 worker portfolio).
    deterministic : bool
        CP-SAT: ``time_limit`` counts CP-SAT's deterministic time (about a second of work each), with one
        worker and a fixed seed, so the answer is the same whatever the machine's load; the wall time is then
        not bounded by ``time_limit``.

    Returns
    -------
    ReclaimResult
        ``optimal`` when the cost is proven optimal (the preemption tie-break is then solved within
        what is left of the time limit; ``backend_status`` shows both stages), ``feasible`` with the
        incumbent, a proven ``bound`` and ``gap`` when a limit was hit, ``no_solution`` when a limit was hit
        before any solution, ``infeasible`` when no server set meets the request. Costs are reported in
        the problem's units: CP-SAT works on costs scaled by ``10**d`` (``d <= 6``, exact for decimal
        costs); otherwise costs are scaled by ``1e6`` and rounded, and the reported bound is lowered by the
        total rounding error, so it stays a proven bound (the status is then ``optimal`` only if the gap
        closes).

    Notes
    -----
    Model size: ``S + J`` binaries (plus ``min(w_j - min_j, T_j)`` per job with a shrink loss) and
    ``O(H + J)`` rows, ``H`` the (job, server) host pairs. A job on a single candidate server reuses that
    server's ``x_s`` as its ``z_j``. NP-hard in general (it contains densest-k-subgraph-like covering), but
    cluster instances solve in few nodes: 1,000 loaned servers x ~3,200 jobs are proven optimal in
    0.2-1.3 s, jobs scattered at random over 1,000 servers in under 7 s (2 cores, one CP-SAT worker;
    see BENCHMARKS.md).

    References
    ----------
    Li et al., "Lyra: Elastic Scheduling for Deep Learning Clusters", EuroSys 2023 (the reclaiming problem;
    the paper solves it greedily).
    """
    t0 = time.perf_counter()
    if method not in ("cpsat", "cbc"):
        raise ValueError(f"unknown method {method!r}: expected 'cpsat' or 'cbc'")
    workers = 1 if num_workers is None else max(1, int(num_workers))
    n_servers = problem.n_servers
    count = target_count(problem)
    if count is not None:
        if count == 0:
            return _trivial(problem, [], method, t0, "trivial: nothing to return")
        if count == n_servers:
            return _trivial(problem, list(range(n_servers)), method, t0, "trivial: every server returned")
    else:
        if problem.min_gpus <= 0:
            return _trivial(problem, [], method, t0, "trivial: nothing to return")
        if int(problem.server_gpus.sum()) < problem.min_gpus:
            return ReclaimResult(status=Status.INFEASIBLE, objective=None, bound=None, gap=None, servers=(),
                                 preempted=(), shrunk=(), preemptions=0, time_s=time.perf_counter() - t0,
                                 method=method, backend_status="min_gpus above the candidates' total GPUs")

    model, x, cost_var, cost_coef, pre_var = _build_reclaim_model(problem)
    ints, scale, err = _integerise(cost_coef)
    objectives = [(cost_var, ints.tolist()), (pre_var, [1] * len(pre_var))]
    if not pre_var:
        objectives = objectives[:1]
    ans = _solve_lex(model, objectives, method=method, time_limit=time_limit, num_workers=workers,
                     deterministic=deterministic)
    if ans.values is None:
        return ReclaimResult(status=ans.status, objective=None,
                             bound=None if ans.first_bound is None else ans.first_bound / scale - err,
                             gap=None, servers=(), preempted=(), shrunk=(), preemptions=0,
                             time_s=time.perf_counter() - t0, method=method,
                             backend_status=ans.backend_status)
    servers = [s for s in range(n_servers) if ans.values[x[s]] == 1]
    cost, npre, preempted, shrunk = evaluate_reclaim(problem, servers)
    bound = None if ans.first_bound is None else min(cost, ans.first_bound / scale - err)
    gap = relative_gap(cost, bound)
    status = ans.status
    if status == Status.OPTIMAL and err > 0.0 and gap != 0.0:
        status = Status.FEASIBLE
    elif status == Status.FEASIBLE and gap == 0.0:
        status = Status.OPTIMAL
    return ReclaimResult(status=status, objective=cost, bound=bound, gap=gap, servers=tuple(servers),
                         preempted=preempted, shrunk=shrunk, preemptions=npre,
                         time_s=time.perf_counter() - t0, method=method, backend_status=ans.backend_status)
