"""A small backend-neutral integer linear model, minimised lexicographically by CP-SAT or CBC.

The exact reclaim and placement models are written once as a :class:`Milp` (variables with upper bounds,
rows ``lo <= a.v <= hi``, implications ``a <= b``) and solved by :func:`solve_lex`: the objectives in order,
each stage with the previous stages' optima fixed as constraints (a lexicographic objective). Objective
coefficients must be integers; :func:`integerise` scales float costs to integers exactly when they are
decimals, and reports the error bound otherwise.

References
----------
Perron, L., Didier, F. (2024). CP-SAT. Google OR-Tools, https://developers.google.com/optimization.
Forrest, J., Lougee-Heimer, R. (2005). CBC user guide. COIN-OR, https://github.com/coin-or/Cbc.
Ehrgott, M. (2005). Multicriteria Optimization, ch. 5 (lexicographic optimisation). Springer.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from lyra_solver.formulations._forked import run_bounded
from lyra_solver.formulations._result import Status
from lyra_solver.formulations._status import CBC_SOLUTION, CPSAT_STATUS, cbc_outcome, cpsat_outcome

__all__ = ["BACKENDS", "LexAnswer", "Milp", "integerise", "solve_lex"]

#: The backends :func:`solve_lex` can run (the method names of the reclaim and placement front doors).
BACKENDS: tuple[str, ...] = ("cpsat", "cbc")

_EXACT_DIGITS = 6  # try scales 10**0 .. 10**6 for exact integer objective coefficients
_FALLBACK_SCALE = 1e6


def integerise(coefs: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Integer objective coefficients for CP-SAT: ``(ints, scale, err)``.

    ``ints ~ coefs * scale``; ``err = sum |ints / scale - coefs|`` bounds the difference between the scaled
    and the true objective of any 0-1 solution (0 when an exact decimal scale ``10**d``, ``d <= 6``, exists).
    Running time :math:`O(7 n)` for ``n`` coefficients.

    Examples
    --------
    >>> import numpy as np
    >>> ints, scale, err = integerise(np.array([30.0, 2.5, 0.25]))
    >>> ints.tolist(), scale, err
    ([3000, 250, 25], 100.0, 0.0)
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
class Milp:
    """Variables ``0 <= v <= ub`` (binary when ub == 1), rows ``lo <= a.v <= hi``, implications ``a <= b``.

    Built in place by the model builders (:meth:`var`, :meth:`row`, :meth:`imp`), then handed to
    :func:`solve_lex`; a variable is its index.
    """

    ub: list[int]
    rows: list[tuple[list[int], list[int], int | None, int | None]]
    imps: list[tuple[int, int]]

    @classmethod
    def empty(cls) -> Milp:
        return cls(ub=[], rows=[], imps=[])

    def var(self, ub: int = 1) -> int:
        self.ub.append(int(ub))
        return len(self.ub) - 1

    def row(self, idx: list[int], coef: list[int], lo: int | None = None, hi: int | None = None) -> None:
        self.rows.append((list(idx), [int(c) for c in coef], lo, hi))

    def imp(self, a: int, b: int) -> None:
        self.imps.append((a, b))


#: Seconds CP-SAT may run past a wall-clock limit before its (forked) process is killed.
KILL_GRACE = 0.25
#: Rows (or variables) built between two looks at the clock while a model is built under a wall-clock limit.
_CHECK_EVERY = 512
#: Writing PuLP's MPS file takes about this fraction of the time PuLP took to build the model (measured: 0.75 on
#: the placement model of 219 jobs x 300 servers); CBC is not started when that estimate passes the time left.
_MPS_PER_BUILD = 0.8


class _OutOfTime(Exception):
    """The wall-clock limit passed while the model was being built (internal to :func:`solve_lex`)."""


def _check_clock(deadline: float | None, i: int) -> None:
    if deadline is not None and i % _CHECK_EVERY == 0 and time.perf_counter() > deadline:
        raise _OutOfTime


def _merge(idx: list[int], coef: list[int]) -> tuple[list[int], list[int]]:
    """Sum the coefficients of repeated variables (a job on one server reuses that server's variable)."""
    acc: dict[int, int] = {}
    for i, c in zip(idx, coef, strict=True):
        acc[i] = acc.get(i, 0) + int(c)
    keys = [i for i in acc if acc[i] != 0]
    return keys, [acc[i] for i in keys]


@dataclass(frozen=True, kw_only=True)
class LexAnswer:
    """What :func:`solve_lex` found.

    Attributes
    ----------
    values : list of int or None
        Value of every variable in the last stage's best solution (``None``: no solution).
    status : Status
        Of the first objective.
    first_bound : float or None
        Proven lower bound on the first objective, in its (integer) units.
    backend_status : str
        The backend's status of each stage, e.g. ``"cp-sat OPTIMAL/OPTIMAL"``.
    all_optimal : bool
        Every stage proven optimal.
    """

    values: list[int] | None
    status: Status
    first_bound: float | None
    backend_status: str
    all_optimal: bool = False


def solve_lex(model: Milp, objectives: list[tuple[list[int], list[int]]], *, method: str,
              time_limit: float | None, num_workers: int, deterministic: bool = False,
              start: float | None = None) -> LexAnswer:
    """Minimise integer objectives lexicographically: each stage fixes the previous optima.

    A stage that ends without proof keeps the previous stages' solution (its own if it improved it).

    Parameters
    ----------
    model : Milp
    objectives : list of (variables, integer coefficients)
        Minimised in order.
    method : {"cpsat", "cbc"}
        The backend (:data:`BACKENDS`).
    time_limit : float or None
        Seconds for all stages together, counted from ``start`` (so that the caller's model building counts);
        a stage that finds no time left is skipped. CBC gets the time left and is killed shortly after it
        (:func:`lyra_solver.formulations._cbc.run_cbc`).
    num_workers : int
        Solver threads.
    deterministic : bool
        CP-SAT: one worker, a fixed seed, and ``time_limit`` counted in CP-SAT's deterministic time (about a
        second of work per unit, shared by the stages) instead of wall time, so that the answer does not
        depend on machine load; the wall time is then not bounded by ``time_limit``.
    start : float, optional
        ``time.perf_counter()`` when the caller's limit started (default: now).

    Returns
    -------
    LexAnswer

    Notes
    -----
    NP-hard in general; each stage is one backend solve (branch and bound) of the same model.
    """
    if method not in BACKENDS:
        raise ValueError(f"unknown method {method!r}: expected 'cpsat' or 'cbc'")
    start = time.perf_counter() if start is None else start
    # building the backend's model is Python work that counts against a wall-clock limit: it stops there
    # (CP-SAT on deterministic time is not stopped by the wall clock, so that its answer does not depend on load)
    build_deadline = None if time_limit is None or (deterministic and method == "cpsat") else start + float(time_limit)
    try:
        rows = []
        for k, (i, c, lo, hi) in enumerate(model.rows):
            _check_clock(build_deadline, k)
            rows.append((*_merge(i, c), lo, hi))
        model = Milp(ub=model.ub, rows=rows, imps=model.imps)
        objectives = [_merge(i, c) for i, c in objectives]
        if method == "cpsat":
            return _solve_lex_cpsat(model, objectives, time_limit=time_limit, num_workers=num_workers,
                                    deterministic=deterministic, start=start, build_deadline=build_deadline)
        return _solve_lex_cbc(model, objectives, time_limit=time_limit, num_workers=num_workers, start=start)
    except _OutOfTime:
        name = "cp-sat" if method == "cpsat" else "cbc"
        return LexAnswer(values=None, status=Status.NO_SOLUTION, first_bound=None,
                         backend_status=f"{name} not run: time limit reached while building the model")


def _remaining(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    return max(0.0, deadline - time.perf_counter())


def _solve_lex_cpsat(model: Milp, objectives, *, time_limit, num_workers, deterministic: bool = False,
                     start: float, build_deadline: float | None = None) -> LexAnswer:
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    vs = [m.new_bool_var("") if ub == 1 else m.new_int_var(0, ub, "") for ub in model.ub]
    for k, (idx, coef, lo, hi) in enumerate(model.rows):
        _check_clock(build_deadline, k)
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

    deadline = None if time_limit is None else start + float(time_limit)  # the building counted
    det_used = 0.0
    values: list[int] | None = None
    first_status = Status.NO_SOLUTION
    first_bound = None
    names: list[str] = []
    ok = CPSAT_STATUS[int(cp_model.OPTIMAL)].name
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
        def run(solver=solver, stage=stage):
            outcome = cpsat_outcome(solver.solve(m))
            found = outcome.solution
            return (outcome, solver.response_proto.deterministic_time,
                    [int(solver.value(v)) for v in vs] if found else None,
                    float(solver.best_objective_bound) if found else None,
                    float(solver.objective_value) if found else None)

        if left is None:
            answer = run()
        else:  # CP-SAT's presolve can overrun its limit on large models: run it where it can be killed
            answer = run_bounded(run, deadline + KILL_GRACE, what="CP-SAT", size=len(vs))
            if answer is None:
                names.append(f"KILLED {KILL_GRACE} s after the time limit")
                break
        outcome, det, found_values, found_bound, found_objective = answer
        det_used += det
        names.append(outcome.name)
        if outcome.solution:
            values = found_values
            if stage == 0:
                first_status = Status.OPTIMAL if outcome.proven else Status.FEASIBLE
                first_bound = found_bound
        elif stage == 0:
            first_status = Status.INFEASIBLE if outcome.infeasible else Status.NO_SOLUTION
        if not outcome.proven or stage == len(objectives) - 1:
            break
        best = int(round(found_objective))
        m.add(expr <= best)
        m.clear_hints()
        for v, val in zip(vs, values, strict=True):
            m.add_hint(v, val)
    return LexAnswer(values=values, status=first_status, first_bound=first_bound,
                     backend_status="cp-sat " + "/".join(names),
                     all_optimal=len(names) == len(objectives) and all(n == ok for n in names))


def _solve_lex_cbc(model: Milp, objectives, *, time_limit, num_workers, start: float) -> LexAnswer:
    import pulp
    from lyra_solver.formulations._cbc import run_cbc

    deadline = None if time_limit is None else start + float(time_limit)  # the building counted
    built_from = time.perf_counter()
    prob = pulp.LpProblem("lex", pulp.LpMinimize)
    vs = []
    for i, ub in enumerate(model.ub):
        _check_clock(deadline, i)
        vs.append(prob.add_variable(f"v{i}", 0, ub, cat="Integer" if ub > 1 else "Binary"))
    k = 0
    for idx, coef, lo, hi in model.rows:
        _check_clock(deadline, k)
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
        _check_clock(deadline, k)
        prob += pulp.LpConstraint(pulp.LpAffineExpression([(vs[b], 1), (vs[a], -1)]),
                                  pulp.LpConstraintGE, f"i{k}", 0)
        k += 1
    build_s = time.perf_counter() - built_from
    values: list[int] | None = None
    first_status = Status.NO_SOLUTION
    first_bound = None
    names: list[str] = []
    ok = CBC_SOLUTION[pulp.LpSolutionOptimal].name
    for stage, (idx, coef) in enumerate(objectives):
        expr = pulp.LpAffineExpression([(vs[i], c) for i, c in zip(idx, coef, strict=True)])
        prob.setObjective(expr)
        left = _remaining(deadline)
        if left is not None and stage > 0 and left <= 0.0:
            names.append("SKIPPED")
            break
        if left is not None and left < _MPS_PER_BUILD * build_s:
            # PuLP writes the model file (uninterruptible Python work) before CBC starts: it would pass the limit
            names.append("Not Solved (time limit reached before CBC started: writing its model file would pass it)")
            break
        # CBC gets the time left (fractions of a second included) and is killed shortly after the deadline
        run = run_cbc(prob, deadline=deadline, threads=max(1, int(num_workers)), gap_rel=0.0, gap_abs=0.0)
        # the statuses' rows of the CBC tables (cbc_outcome): CBC's "Integer infeasible" (a proof) shows only in
        # PuLP's problem status; a run stopped by its limit is "Not Solved"
        outcome = cbc_outcome(prob.status, prob.sol_status)
        sol_name = outcome.name.partition("/")[2]
        names.append("Infeasible" if outcome.infeasible else sol_name + (f" ({run.note})" if run.note else ""))
        got = outcome.solution and all(v.varValue is not None for v in vs)
        if got:
            values = [int(round(v.varValue)) for v in vs]
            if stage == 0:
                if outcome.proven:
                    first_status = Status.OPTIMAL
                    first_bound = float(sum(c * values[i] for i, c in zip(idx, coef, strict=True)))
                else:
                    first_status = Status.FEASIBLE
        elif stage == 0:
            first_status = Status.INFEASIBLE if outcome.infeasible else Status.NO_SOLUTION
        if not outcome.proven or not got or stage == len(objectives) - 1:
            break
        best = int(round(sum(c * values[i] for i, c in zip(idx, coef, strict=True))))
        prob += pulp.LpConstraint(pulp.LpAffineExpression(expr), pulp.LpConstraintLE, f"lex{stage}", best)
    return LexAnswer(values=values, status=first_status, first_bound=first_bound,
                     backend_status="cbc " + "/".join(names),
                     all_optimal=len(names) == len(objectives) and all(n == ok for n in names))
