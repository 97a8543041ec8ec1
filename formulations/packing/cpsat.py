"""Exact packing with OR-Tools CP-SAT: the best assignment of guests to hosts over every share pair.

Model. For each candidate ``c`` (a guest joining a host) and each share pair ``(k, l)`` left after removing the
pairs that another pair of the same candidate dominates (both speeds at least as high; every objective grows
with every speed, so this loses no optimum), one Boolean ``x_ckl``. At most one per guest; per slot, the host
workers used stay within the slot's workers. The host's speed ``S_h``:

- with sample stealing, linear: ``S_h = 1 - sum a_c (1 - speed_host_ckl) x_ckl / W_h``;
- without, the minimum over its shared workers, in an order encoding over the distinct speed levels
  ``v_0 < v_1 < ...`` of the host (with 1.0): Booleans ``ge_i`` ("``S_h >= v_i``") with ``ge_i -> ge_{i-1}``
  and ``x_ckl -> not ge_{j+1}`` where ``speed_host_ckl = v_j``; ``S_h = v_0 + sum_i (v_i - v_{i-1}) ge_i``.

Objectives (DESIGN "Packing", :mod:`~lyra_solver.formulations.packing._types`): ``jct`` is linear in
``x`` and ``S_h``; ``deadline`` adds a Boolean per host with a deadline (``met_h -> S_h >= T_h / D_h``) and
counts guests whose pair speed meets theirs; ``makespan`` bounds an integer ``M_h`` (speeds on a ``2**20``
grid, rounded down) by ``S_h`` and by the speed of every chosen pair; ``(1 + n_h) M_h`` is linear through
Booleans ``b_t = [n_h = t]`` and integers ``z_t <= M_h``, ``z_t <= 2**20 b_t`` valued ``(1 + t) z_t``.
Linear constraints with float speeds are scaled by ``2**20`` (rounding at most ``5e-7`` per term); objective
coefficients are scaled to integers as in the MCKP CP-SAT model and the bound is reported in original units,
widened by the rounding of every term that can be non-zero at once.

References
----------
Perron, L., Didier, F. (2024). CP-SAT. Google OR-Tools. Yang et al., Gimbal, ACM TACO 2025 (the policies).
"""
from __future__ import annotations

import math
import time

import numpy as np
from lyra_solver.formulations._status import cpsat_outcome
from lyra_solver.formulations.mckp.cpsat import scale_values
from lyra_solver.formulations.packing._types import N_SHARES, PackingProblem, PackingResult, make_result

__all__ = ["pareto_pairs", "solve_cpsat"]

_LIN = 2**20  # scale of linear constraints over float speeds


def pareto_pairs(problem: PackingProblem, c: int) -> list[tuple[int, int]]:
    """Share pairs ``(k, l)`` of candidate ``c`` that no other pair dominates in (guest speed, host speed).

    Among pairs with equal speeds the one of larger shares is kept (shares 1.0/1.0 first). O(100 log 100).
    """
    sg, sh = problem.speed_guest[c], problem.speed_host[c]
    order = [(k, l) for k in range(N_SHARES - 1, -1, -1) for l in range(N_SHARES - 1, -1, -1)]
    order.sort(key=lambda p: (-sg[p], -sh[p]))  # stable: ties keep larger shares first
    kept: list[tuple[int, int]] = []
    best_h = -math.inf
    for p in order:
        if sh[p] > best_h:
            kept.append(p)
            best_h = float(sh[p])
    return kept


def solve_cpsat(problem: PackingProblem, *, time_limit: float | None = None, num_workers: int = 1,
                seed: int = 0, hint: tuple | None = None, deterministic_limit: bool = False) -> PackingResult:
    """Best packing of ``problem`` under its policy, proven by CP-SAT.

    Parameters
    ----------
    problem : PackingProblem
    time_limit : float, optional
        Seconds; when hit, the incumbent comes back ``feasible`` with bound and gap (or ``no_solution``).
    num_workers : int
        CP-SAT search workers (1 keeps runs deterministic).
    seed : int
        ``random_seed``.
    hint : (assignment, guest share indices, host share indices), optional
        A solution to start from (e.g. a heuristic's); without one the search starts from "pack nothing".
        A hinted share pair that another pair dominates is replaced by the first pair that dominates it.
    deterministic_limit : bool
        Read ``time_limit`` as CP-SAT's deterministic time (``max_deterministic_time``, about seconds of work on
        one core), so that an answer cut by the limit is the same on every run (the engine's choice).

    Returns
    -------
    PackingResult
        ``method="cpsat"``; ``steps`` is the number of CP-SAT branches.

    Notes
    -----
    Size: ``O(C P)`` Booleans for ``C`` candidates with ``P <= 100`` undominated share pairs each (typically
    about 10), plus ``O(levels)`` per host. Exponential in the worst case (branch and bound with clause learning).

    Examples
    --------
    >>> from lyra_solver.formulations.packing import PackingProblem
    >>> p = PackingProblem.build(host_util=[0.5], host_time=[100.0], host_workers=[1], host_gpus=[1],
    ...     host_mem=[10.0], guest_util=[0.4], guest_time=[50.0], guest_gpus=[1], guest_mem=[10.0],
    ...     slot_host=[0], slot_capacity=[1], slot_mem=[80.0], candidates=[(0, 0, [(0, 1)])])
    >>> r = solve_cpsat(p)
    >>> r.status.value, r.assignment, r.guest_share, r.host_share
    ('optimal', (0,), (1.0,), (1.0,))
    """
    from ortools.sat.python import cp_model

    start = time.perf_counter()
    Q, H, C = problem.n_guests, problem.n_hosts, problem.n_candidates
    if C == 0:
        return make_result(problem, [-1] * Q, [0] * Q, [0] * Q, 0.0, proven=True, start=start, method="cpsat",
                           backend_status="empty")
    # the model building (Python, O(candidates x share pairs)) counts against a wall-clock limit
    deadline = None if time_limit is None or deterministic_limit else start + float(time_limit)

    def late(i: int) -> bool:
        return deadline is not None and i % 256 == 255 and time.perf_counter() >= deadline

    def out_of_time() -> PackingResult:
        return make_result(problem, None, None, None, None, proven=False, start=start, method="cpsat",
                           backend_status="time limit reached while building the model")

    model = cp_model.CpModel()
    xs: list[tuple[int, int, int, cp_model.IntVar]] = []
    by_guest: list[list] = [[] for _ in range(Q)]
    by_host: list[list[tuple[int, int, int, cp_model.IntVar]]] = [[] for _ in range(H)]
    for c in range(C):
        if late(c):
            return out_of_time()
        for k, l in pareto_pairs(problem, c):
            v = model.new_bool_var(f"x{c}_{k}_{l}")
            xs.append((c, k, l, v))
            by_guest[int(problem.cand_guest[c])].append(v)
            by_host[int(problem.cand_host[c])].append((c, k, l, v))
    for vs in by_guest:
        if len(vs) > 1:
            model.add_at_most_one(vs)
    slot_terms: dict[int, list] = {}
    for c, _k, _l, v in xs:
        for s, n in problem.uses(c):
            slot_terms.setdefault(s, []).append((v, n))
    for s, terms in sorted(slot_terms.items()):
        if sum(n for _, n in terms) > int(problem.slot_capacity[s]):
            model.add(sum(n * v for v, n in terms) <= int(problem.slot_capacity[s]))

    policy, stealing = problem.policy, problem.sample_stealing
    obj: list[tuple[cp_model.IntVar, float]] = []  # (variable, coefficient) in original units
    const = 0.0
    slack_terms = float(Q)  # variables that may be non-zero at once, weighted by their range (for the bound)
    jct_w = 1.0 / problem.deadline_norm if policy == "deadline" else 1.0

    def loss_coef(h: int, c: int, k: int, l: int) -> float:
        return problem.cand_host_workers(c) * (1.0 - float(problem.speed_host[c, k, l])) / float(
            problem.host_workers[h])

    def at_least(h: int, level: float, lit) -> None:
        """``lit -> S_h >= level`` under sample stealing (scaled linear constraint)."""
        terms = [(v, round(loss_coef(h, c, k, l) * _LIN)) for c, k, l, v in by_host[h]]
        rhs = math.floor((1.0 - level) * _LIN + 1e-9)
        if rhs < 0:
            model.add(lit == 0)
        else:
            model.add(sum(q * v for v, q in terms) <= rhs).only_enforce_if(lit)

    def levels(h: int, values: list[float], speed_of) -> tuple[list[float], list]:
        """Order encoding of ``min(1, speeds of the chosen x)`` of host ``h``: levels and ``ge`` literals."""
        lv = sorted(set(values) | {1.0})
        ge = [None] + [model.new_bool_var(f"ge{h}_{i}") for i in range(1, len(lv))]
        for i in range(2, len(lv)):
            model.add_implication(ge[i], ge[i - 1])
        pos = {v: i for i, v in enumerate(lv)}
        for c, k, l, v in by_host[h]:
            j = pos[speed_of(c, k, l)]
            if j + 1 < len(lv):
                model.add_implication(v, ge[j + 1].Not())
        return lv, ge

    for h in range(H):
        if late(h):
            return out_of_time()
        if not by_host[h]:
            continue
        t_h = float(problem.host_time[h])
        sh = lambda c, k, l: float(problem.speed_host[c, k, l])  # noqa: E731
        sg = lambda c, k, l: float(problem.speed_guest[c, k, l])  # noqa: E731
        if policy == "makespan":
            # M_h = min(S_h, guest speeds) as an integer on the 2**20 grid (speeds rounded down), times (1 + n_h)
            guests_h = len({int(problem.cand_guest[c]) for c, _, _, _ in by_host[h]})
            m = model.new_int_var(0, _LIN, f"m{h}")
            for c, k, l, v in by_host[h]:
                model.add(m <= math.floor(sg(c, k, l) * _LIN) + _LIN * (1 - v))
                if not stealing:
                    model.add(m <= math.floor(sh(c, k, l) * _LIN) + _LIN * (1 - v))
            if stealing:
                model.add(m + sum(round(loss_coef(h, c, k, l) * _LIN) * v for c, k, l, v in by_host[h]) <= _LIN)
            # (1 + n_h) M_h, linear: b_t = [n_h == t], z_t <= M_h, z_t <= 2**20 b_t, value sum (1 + t) z_t
            b = [model.new_bool_var(f"b{h}_{t}") for t in range(guests_h + 1)]
            model.add_exactly_one(b)
            model.add(sum(t * b[t] for t in range(guests_h + 1)) == sum(v for _, _, _, v in by_host[h]))
            for t in range(guests_h + 1):
                z = model.new_int_var(0, _LIN, f"z{h}_{t}")
                model.add(z <= m)
                model.add(z <= _LIN * b[t])
                obj.append((z, (1 + t) / _LIN))
            const -= 1.0
            slack_terms += 1 + guests_h
            continue
        # jct part (also the tie-break of deadline)
        if stealing:
            for c, k, l, v in by_host[h]:
                obj.append((v, -jct_w * loss_coef(h, c, k, l) / t_h))
        else:
            lv, ge = levels(h, [sh(c, k, l) for c, k, l, _ in by_host[h]], sh)
            const += jct_w * (lv[0] - 1.0) / t_h
            for i in range(1, len(lv)):
                obj.append((ge[i], jct_w * (lv[i] - lv[i - 1]) / t_h))
            slack_terms += 1
        if policy == "deadline" and math.isfinite(problem.host_deadline[h]):
            met = model.new_bool_var(f"met{h}")
            need = t_h / float(problem.host_deadline[h]) if problem.host_deadline[h] > 0 else math.inf
            if stealing:
                if need > 1.0:
                    model.add(met == 0)
                else:
                    at_least(h, need, met)
            else:
                for i in range(1, len(lv)):
                    if lv[i - 1] < need <= lv[i]:  # S_h >= need requires ge_i, the first level >= need
                        model.add_implication(met, ge[i])
                if need > lv[-1]:
                    model.add(met == 0)
            obj.append((met, 1.0))
            const -= float(problem.host_meets(h, 1.0))
            slack_terms += 1
    for c, k, l, v in xs:
        g = int(problem.cand_guest[c])
        s_g = float(problem.speed_guest[c, k, l])
        if policy in ("jct", "deadline"):
            coef = jct_w * s_g / float(problem.guest_time[g])
            if policy == "deadline" and problem.guest_meets(g, s_g):
                coef += 1.0
            obj.append((v, coef))

    hinted: set[tuple[int, int, int]] = set()
    if hint is not None:
        for g, c in enumerate(hint[0]):
            if c >= 0:
                k0, l0 = int(hint[1][g]), int(hint[2][g])
                for k, l in pareto_pairs(problem, int(c)):
                    if (problem.speed_guest[c, k, l] >= problem.speed_guest[c, k0, l0]
                            and problem.speed_host[c, k, l] >= problem.speed_host[c, k0, l0]):
                        hinted.add((int(c), k, l))
                        break
    for c, k, l, v in xs:
        model.add_hint(v, (c, k, l) in hinted)
    merged: dict[int, list] = {}
    for var, coef in obj:
        entry = merged.setdefault(var.index, [var, 0.0])
        entry[1] += coef
    variables = [e[0] for e in merged.values()]
    q, scale = scale_values(np.array([e[1] for e in merged.values()], dtype=np.float64), len(variables) + 64)
    model.maximize(cp_model.LinearExpr.weighted_sum(variables, q.tolist()))
    if late(255):
        return out_of_time()
    solver = cp_model.CpSolver()
    if time_limit is not None and deterministic_limit:
        solver.parameters.max_deterministic_time = max(float(time_limit), 1e-3)
    elif time_limit is not None:  # the model building counts: CP-SAT gets the time left
        solver.parameters.max_time_in_seconds = max(float(time_limit) - (time.perf_counter() - start), 1e-3)
    solver.parameters.num_workers = int(num_workers)
    solver.parameters.random_seed = int(seed)
    outcome = cpsat_outcome(solver.solve(model))
    name = outcome.name
    bound = None
    if outcome.solution and math.isfinite(solver.best_objective_bound):
        slack = 0.0 if scale == 1.0 else slack_terms / 2.0
        bound = (solver.best_objective_bound + slack) / scale + const
        bound += 1e-9 * max(1.0, abs(bound))
    steps = int(solver.num_branches)
    if not outcome.solution:
        return make_result(problem, None, None, None, bound, proven=False, start=start, method="cpsat",
                           backend_status=name, steps=steps)
    assignment, gk, hk = [-1] * Q, [0] * Q, [0] * Q
    for c, k, l, v in xs:
        if solver.boolean_value(v):
            g = int(problem.cand_guest[c])
            assignment[g], gk[g], hk[g] = c, k, l
    return make_result(problem, assignment, gk, hk, bound, proven=outcome.proven, start=start,
                       method="cpsat", backend_status=name, steps=steps)
