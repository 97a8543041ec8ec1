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
from itertools import chain, compress

import numpy as np
from lyra_solver.formulations import Status
from lyra_solver.formulations.reclaim import ReclaimProblem, solve_reclaim
from lyra_solver.steps._state import (
    KIND_LOANED,
    Reclaimed,
    RoundState,
    Settings,
    StepReport,
    queued_jobs,
    remember_used,
    used_gpus,
)

__all__ = ["reclaim"]

log = logging.getLogger(__name__)


def reclaim(state: RoundState, settings: Settings) -> Reclaimed:
    """Choose the loaned servers to give back and apply it: shrink or preempt the jobs on them."""
    cl = state.cluster
    loaned = (cl.kind == KIND_LOANED).nonzero()[0]
    k = min(cl.snap.inference.reclaim, int(loaned.size))
    if k == 0:
        return Reclaimed((), cl.placement, (), frozenset(), StepReport("none", "optimal", 0.0, 0.0, 0.0),
                         _known_queued(cl, cl.placement, ()))
    before = cl.placement
    # a small round (the simulator's): one loop costs less than the numpy calls
    hosts = _hosts_loop if len(before) < _ARRAYS_MIN_JOBS else _hosts_arrays
    jobs, hj, hs, hc = hosts(cl, before, loaned)
    at = np.array(jobs, np.int64)
    every = cl.snap.jobs
    snap_jobs = [every[j] for j in jobs]  # comprehensions (admit.py's note on maps)
    # the arrays come from the validated snapshot: the problem without build's checks (the same arrays)
    problem = ReclaimProblem.trusted(
        server_gpus=cl.gpus[loaned], job_workers=cl.workers[at], job_min=cl.min_w[at], job_gpus_per_worker=cl.gpw[at],
        restart_cost=[j.restart_penalty for j in snap_jobs], preempt_cost=[j.preemption_penalty for j in snap_jobs],
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
    preempted = tuple(sorted(preempted))
    return Reclaimed(back, after, preempted, frozenset(shrunk), StepReport.of(res), _known_queued(cl, after, preempted))


def _known_queued(cl, after: tuple, preempted: tuple[int, ...]) -> tuple | None:
    """:attr:`Reclaimed.known_queued` of the step's result: the index view's jobs without a placement
    (:attr:`Cluster.not_held <lyra_solver.steps._state.Cluster>`, where its caller knows them) if the step stopped
    nobody, else on a large round :func:`queued_jobs` (array operations instead of the admission step's test per
    job); ``None`` on a small one."""
    if not preempted and cl.not_held is not None:
        return after, cl.not_held
    return (after, queued_jobs(cl, after, preempted)) if len(after) >= _ARRAYS_MIN_JOBS else None


def _hosts_loop(cl, before: tuple, loaned: np.ndarray) -> tuple[list[int], list[int], list[int], list[int]]:
    """The jobs on a loaned server (job order) and the host pairs (each entry's job: its position in those jobs,
    server: its position in ``loaned``, workers), placement after placement. O(J + H)."""
    pos = {s: i for i, s in enumerate(loaned.tolist())}
    on_loaned = pos.keys()
    touched: dict[int, int] = {}
    hj, hs, hc = [], [], []
    for j in compress(range(len(before)), before):  # the running jobs; those on a loaned server build the problem
        pl = before[j]
        if on_loaned.isdisjoint(pl):
            continue
        for s, n in pl.items():
            if s in pos:
                hj.append(touched.setdefault(j, len(touched)))
                hs.append(pos[s])
                hc.append(n)
    return list(touched), hj, hs, hc


def _hosts_arrays(cl, before: tuple, loaned: np.ndarray) -> tuple[list[int], list[int], list[int], list[int]]:
    """:func:`_hosts_loop` by C-level chains over every running job's entries (job order, each placement's order)
    and array masks: on 50,000 jobs the loop was a third of the step. O(J + H) in C."""
    entries = None if cl.columns is None or before is not cl.placement else cl.columns.entries
    if entries is not None:  # the snapshot's placements as validation read them (the same entries, in order)
        srv, cnt, sizes, _ = entries
        run = cl.held  # (a held job without entries, if any, owns none below: the same jobs as from workers)
    else:
        run = np.flatnonzero(cl.workers).tolist()  # the running jobs (workers are positive: a non-empty placement)
        places = [before[j] for j in run]
        sizes = np.fromiter(map(len, places), np.int64, len(places))
        n_ent = int(sizes.sum())
        srv = np.fromiter(chain.from_iterable(places), np.int64, n_ent)
        cnt = np.fromiter(chain.from_iterable(map(dict.values, places)), np.int64, n_ent)
    pos = np.full(cl.gpus.shape[0], -1, np.int64)  # a loaned server's position in ``loaned``
    pos[loaned] = np.arange(loaned.size)
    on = np.flatnonzero(pos[srv] >= 0)  # the entries on a loaned server
    owner = np.repeat(np.arange(len(run)), sizes)[on]  # their job's position in ``run`` (nondecreasing)
    first = np.ones(on.size, bool)
    first[1:] = owner[1:] != owner[:-1]
    at = np.fromiter(run, np.int64, len(run))[owner[first]]  # the jobs on a loaned server, in job order
    hj = np.cumsum(first) - 1  # each entry's job: its position in ``jobs``
    hs = pos[srv[on]]
    hc = cnt[on]
    return at.tolist(), hj.tolist(), hs.tolist(), hc.tolist()


#: Jobs from which :func:`reclaim` lists the host pairs by array operations (:func:`_hosts_arrays`).
_ARRAYS_MIN_JOBS = 2_000

