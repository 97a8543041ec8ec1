"""Step 1 of the round, reclaim (DESIGN "Round pipeline"): give back ``inference.reclaim`` loaned servers at least
cost, shrinking or preempting the jobs on them.

The choice is the reclaim family's, made through its front door (:func:`lyra_solver.formulations.reclaim.solve_reclaim`)
whatever the method: Lyra's greedy by server preemption cost (or another heuristic row of the table that ``decide``
may run, by its name), or the exact ILP (``options.reclaim``); an exact run that finds nothing within the round's
time falls back to the greedy. Running time O(H) to build the problem for H placement entries on loaned servers,
plus the method's.
"""
from __future__ import annotations

import logging
from itertools import compress

import numpy as np
from lyra_solver.formulations import Status
from lyra_solver.formulations.reclaim import ReclaimProblem, solve_reclaim
from lyra_solver.formulations.vocabulary import ServerKind
from lyra_solver.steps._state import Reclaimed, RoundState, Settings, StepReport, remember_used, used_gpus

__all__ = ["reclaim"]

log = logging.getLogger(__name__)


def reclaim(state: RoundState, settings: Settings) -> Reclaimed:
    """Choose the loaned servers to give back and apply it: shrink or preempt the jobs on them."""
    cl = state.cluster
    loaned = np.flatnonzero(cl.kind == ServerKind.LOANED)
    k = min(cl.snap.inference.reclaim, int(loaned.size))
    if k == 0:
        return Reclaimed((), cl.placement, (), frozenset(), StepReport("none", "optimal", 0.0, 0.0, 0.0))
    pos = {s: i for i, s in enumerate(loaned.tolist())}
    on_loaned = pos.keys()
    touched: dict[int, int] = {}
    hj, hs, hc = [], [], []
    before = cl.placement
    for j in compress(range(len(before)), before):  # the running jobs; those on a loaned server build the problem
        pl = before[j]
        if on_loaned.isdisjoint(pl):
            continue
        for s, n in pl.items():
            if s in pos:
                hj.append(touched.setdefault(j, len(touched)))
                hs.append(pos[s])
                hc.append(n)
    jobs = list(touched)
    # the arrays come from the validated snapshot: the problem without build's checks (the same arrays)
    problem = ReclaimProblem.trusted(
        server_gpus=cl.gpus[loaned], job_workers=[sum(cl.placement[j].values()) for j in jobs],  # type: ignore[union-attr]
        job_min=cl.min_w[jobs], job_gpus_per_worker=cl.gpw[jobs],
        restart_cost=[cl.snap.jobs[j].restart_penalty for j in jobs],
        preempt_cost=[cl.snap.jobs[j].preemption_penalty for j in jobs],
        host_job=hj, host_server=hs, host_count=hc, count=k)
    res = None
    if settings.reclaim == "exact":
        res = solve_reclaim(problem, method="cpsat", time_limit=settings.left(), deterministic=settings.deterministic)
        if res.status not in (Status.OPTIMAL, Status.FEASIBLE):
            log.warning("exact reclaim gave %s; falling back to greedy", res.status)
            res = None
    if res is None:  # a heuristic, through the front door: the option's value is its row's name
        res = solve_reclaim(problem, method="greedy" if settings.reclaim == "exact" else settings.reclaim)
    back = tuple(sorted(int(loaned[i]) for i in res.servers))
    gone = set(back)
    placement = list(cl.placement)
    preempted, shrunk = [], set()
    # the jobs with workers on a server given back (the others keep their placement), in job order
    back_pos = set(res.servers)
    hit = sorted({i for i, s in zip(hj, hs, strict=True) if s in back_pos})
    used = used_gpus(cl, cl.placement).copy()  # the snapshot's, less what the jobs hit lose: O(their entries)
    gpw = cl.gpw
    for j in map(jobs.__getitem__, hit):
        pl = cl.placement[j]
        assert pl is not None
        left = {s: n for s, n in pl.items() if s not in gone}
        if len(left) == len(pl):
            continue
        if sum(left.values()) >= cl.min_w[j]:
            placement[j] = left
            shrunk.add(j)
        else:
            placement[j] = None
            preempted.append(j)
        g = int(gpw[j])
        for s, n in pl.items():
            if placement[j] is None or s in gone:
                used[s] -= n * g
    after = tuple(placement)
    remember_used(cl, after, used)  # the loan, admission and scale steps ask for it
    return Reclaimed(back, after, tuple(sorted(preempted)), frozenset(shrunk), StepReport.of(res))
