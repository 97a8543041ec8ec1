"""Step 5 of the round, place (DESIGN "Round pipeline"): workers onto servers, best fit decreasing
(:func:`lyra_solver.heuristics.placement.best_fit_decreasing`) or the placement ILP
(:func:`lyra_solver.formulations.placement.solve_placement`, ``options.placement="exact"``).

Base demand goes on training servers first, flexible (extra) workers on loaned servers first, so that a later
reclaim shrinks jobs instead of preempting them. Running jobs keep their placement unless their worker count
changes; a job whose count changes restarts anyway, so best fit decreasing places it afresh (fewest servers
spanned) rather than around the workers it had. For every objective but Lyra's (``Settings.compact_growth``),
a running job grows only onto the fewest servers its new count needs: where best fit decreasing can only
spread it, it keeps its workers (the growth is not made, the GPUs stay free) and the others are placed again,
at most once per such job. Running time O(K (S + W log S)) for best fit decreasing (W workers that move,
K passes: one, plus at most one per job whose growth is undone), plus the ILP's.
"""
from __future__ import annotations

import logging

import numpy as np
from lyra_solver.formulations import Status
from lyra_solver.formulations.placement import PlacementProblem, solve_placement
from lyra_solver.heuristics.placement import best_fit_decreasing
from lyra_solver.steps._state import Placed, RoundState, Settings, StepReport, usable_servers, used_gpus

__all__ = ["EXACT_PLACEMENT_MAX_PAIRS", "place"]

log = logging.getLogger(__name__)


def place(state: RoundState, settings: Settings) -> Placed:
    """Workers onto servers. Jobs whose count is unchanged keep their placement; the others are placed
    afresh, best fit decreasing (or by the placement ILP, which keeps what they have where it spans no more
    servers)."""
    cl, adm, sc, rec, borrowed = state.cluster, state.admitted, state.scaled, state.reclaimed, state.borrowed
    admitted = set(adm.admitted)
    target = dict(zip(sc.jobs, sc.targets.tolist(), strict=True))
    # a target of 0 (the objective's knapsack admits: lyra_solver.objectives.JOINT_ADMISSION) runs no worker
    stopped = [j for j in sc.jobs if target[j] == 0]
    moving = [j for j in sc.jobs if target[j] > 0 and (j in admitted or adm.placement[j] is None
                                                       or target[j] != sum(adm.placement[j].values()))]
    servers = np.flatnonzero(usable_servers(cl, rec, borrowed))
    kept: dict[int, dict[int, int]] = {}  # running jobs whose growth was undone (Settings.compact_growth)
    while True:
        problem, out = _place_afresh(cl, adm, servers, target, moving, stopped, kept)
        spread = _spread_growths(cl, adm, servers, target, moving, out) if settings.compact_growth else []
        if not spread:
            break
        for j in spread:  # a growth that cannot be placed compactly is not made: the job keeps its workers
            kept[j] = adm.placement[j]
            target[j] = sum(kept[j].values())
        moving = [j for j in moving if j not in kept]
    per_job = out.placement.per_job
    report = StepReport("bfd", "feasible")
    if settings.placement == "exact" and moving:
        per_job, report = _exact_placement(problem, out, per_job, report, settings)
    placement = list(adm.placement)
    for j, p in kept.items():
        placement[j] = p
    for j in stopped:
        placement[j] = None
    for i, j in enumerate(moving):
        got = {int(servers[s]): int(n) for s, n in per_job[i] if n > 0}
        # a job the knapsack admits that fragmentation leaves below its base demand waits (never run below min)
        placement[j] = got if sum(got.values()) >= int(cl.min_w[j]) or j in admitted else None
    return Placed(tuple(placement), report)


def _place_afresh(cl, adm, servers, target, moving, stopped, kept):
    """Best fit decreasing for the ``moving`` jobs afresh (keeping their current workers where afresh leaves
    one out), every other job's GPUs held: those of unchanged and ``kept`` jobs, none of ``stopped`` ones."""
    pos = {int(s): i for i, s in enumerate(servers)}
    gone = set(moving).union(stopped)
    used = used_gpus(cl, [None if j in gone else kept.get(j, p) for j, p in enumerate(adm.placement)])
    cj, cs, cc = [], [], []
    for i, j in enumerate(moving):
        for s, n in (adm.placement[j] or {}).items():
            cj.append(i)
            cs.append(pos[s])
            cc.append(n)
    # the arrays come from the validated snapshot and the steps before: build's arrays without its checks
    problem = PlacementProblem.trusted(
        server_free=(cl.gpus - used)[servers], server_loaned=cl.kind[servers] != 0,
        job_workers=[target[j] for j in moving], job_base=cl.min_w[moving], job_gpus_per_worker=cl.gpw[moving],
        cur_job=cj, cur_server=cs, cur_count=cc)
    out = best_fit_decreasing(problem, keep_current=False)
    if (out.placed < problem.job_workers).any():  # afresh left a worker out: keep current workers, as admitted
        out = best_fit_decreasing(problem)
    return problem, out


def _spread_growths(cl, adm, servers, target, moving, out) -> list[int]:
    """The running jobs that grow onto more servers than their new count needs (``ceil(w g / G)``, ``G`` the
    cluster's usual server size) and can keep their current placement (every server of it still usable).
    O(sum of the moving jobs' servers)."""
    usable = {int(s) for s in servers}
    bad = []
    for i, j in enumerate(moving):
        cur = adm.placement[j]
        if cur is None or j in adm.admitted or not set(cur) <= usable:
            continue
        w = target[j]
        need = -(-w * int(cl.gpw[j]) // cl.server_gpus)
        if w > sum(cur.values()) and len(out.placement.per_job[i]) > need:
            bad.append(j)
    return bad


EXACT_PLACEMENT_MAX_PAIRS = 50_000  # job x server pairs beyond which the placement ILP is not attempted


def _exact_placement(problem: PlacementProblem, out, per_job, report: StepReport, settings: Settings):
    """The placement ILP on the servers that can take a worker (lossless: a full server takes none), with
    best fit decreasing's worker counts; keeps the BFD answer when the ILP has none or is too large."""
    keep = np.flatnonzero((problem.server_free > 0) | np.isin(np.arange(problem.n_servers), problem.cur_server))
    pairs = problem.n_jobs * keep.size
    if pairs > EXACT_PLACEMENT_MAX_PAIRS:
        log.warning("placement ILP skipped: %d job-server pairs > %d; keeping best fit decreasing", pairs,
                    EXACT_PLACEMENT_MAX_PAIRS)
        return per_job, StepReport("bfd-fallback", "feasible")
    remap = {int(s): i for i, s in enumerate(keep)}
    sub = PlacementProblem.build(
        server_free=problem.server_free[keep], server_loaned=problem.server_loaned[keep], job_workers=out.placed,
        job_base=problem.job_base, job_gpus_per_worker=problem.job_gpus_per_worker, cur_job=problem.cur_job,
        cur_server=[remap[int(s)] for s in problem.cur_server], cur_count=problem.cur_count)
    res = solve_placement(sub, method="cpsat", time_limit=settings.left(), deterministic=settings.deterministic)
    if res.placement is None or res.status not in (Status.OPTIMAL, Status.FEASIBLE):
        log.warning("exact placement gave %s; keeping best fit decreasing", res.status)
        return per_job, StepReport("bfd-fallback", "feasible")
    mapped = tuple(tuple((int(keep[s]), n) for s, n in pairs_) for pairs_ in res.placement.per_job)
    return mapped, StepReport.of(res, objective=None, bound=None)
