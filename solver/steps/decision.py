"""The decision of steps 1-5 (DESIGN "Formats": Decision), assembled from the round state.

:func:`decision_of` writes one :class:`~lyra_solver.types.JobDecision` per job (``run`` with its placement by
server id, ``preempt`` for a running job not kept, ``wait`` for a queued job not started), the servers reclaimed
and the borrowed servers that host a worker, and the summary: the JCT reduction of the chosen options, the
preemptions, and each step's method and status. Running time O(S + J + H).

:func:`changes_of` gives what that decision changes only (the jobs whose placement it changes, the servers
reclaimed and loaned), for a caller that holds every job's placement itself (the simulator).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, compress
from operator import is_not

import numpy as np
from lyra_solver.formulations.vocabulary import OBJECTIVES
from lyra_solver.steps._state import RoundState, worker_counts
from lyra_solver.types import Decision, FrozenDict, JobDecision, ServerDecision, Summary
from lyra_solver.values import TIME_CAP, JobOptions, option_value

__all__ = ["Changes", "changes_of", "decision_of"]


def decision_of(state: RoundState) -> Decision:
    """The decision of the round's steps 1-5 (no packing; :func:`lyra_solver.steps.pack.pack` adds it)."""
    return _decision(state)


@dataclass(frozen=True, eq=False)
class Changes:
    """What the decision of steps 1-5 (:func:`decision_of`) changes against its snapshot.

    ``moved``: ``(job index, placement after the decision)`` for each job whose placement the decision changes, in
    job order: the decision's placement by server id (the very mapping that its ``run`` entry holds) for a job
    that runs elsewhere than its snapshot placement, ``None`` for a running job that stops (preempted); a job kept
    where it is, or left waiting, is not listed (:func:`lyra_solver.apply.placements_after`'s rule).
    ``reclaim`` and ``loan``: the decision's ``servers`` (the same ids, in the same order).
    """

    moved: tuple[tuple[int, FrozenDict | None], ...]
    reclaim: list[str]
    loan: list[str]


def changes_of(state: RoundState) -> Changes:
    """What :func:`decision_of` ``(state)`` changes (:class:`Changes`), without the decision of every job.

    A job whose placement no step replaced (the index view's very dict, or ``None`` for one still queued) is kept:
    only the others are named. O(J) identity tests in C, plus O(H log H) for the H entries of the placements that
    steps replaced."""
    cl = state.cluster
    snap = cl.snap
    snap_jobs = snap.jobs
    before_all = cl.placement
    placed = state.placed.placement
    if len(placed) != len(before_all):
        raise ValueError(f"changes_of: {len(placed)} placements for {len(before_all)} jobs")
    # the jobs whose placement a step replaced, by C-level identity tests (a Python loop over every job was half of
    # this function on the simulator's rounds), and those that the snapshot shows on an empty placement (a kept one
    # stops: the loop's second test), found as held jobs without workers; a superset of both is fine, the loop
    # tests each one again
    look = list(compress(range(len(placed)), map(is_not, placed, before_all)))
    if np.count_nonzero(cl.workers) < len(cl.held):  # a held job without workers: an empty placement, maybe
        look = sorted({*look, *(j for j in cl.held if not cl.workers[j])})
    ids: list[str] | None = None
    moved = []
    hosts: set[int] = set()  # the servers of the placements made this round (only they can host a borrowed one)
    for j in look:
        p, before = placed[j], before_all[j]
        if p is before and (p or p is None):  # kept where the snapshot shows it, or still waiting
            continue
        shown = snap_jobs[j].placement
        if p:
            if ids is None:
                ids = [s.id for s in snap.servers]
            hosts.update(p)
            named = _named(p, ids)
            if named != shown:  # equal: the decision runs it where it is (its servers in another order)
                moved.append((j, named))
        elif shown is not None:  # a running job (even on an empty placement) that runs no more
            moved.append((j, None))
    borrowed = state.borrowed
    if borrowed or state.reclaimed.servers:
        if ids is None:
            ids = [s.id for s in snap.servers]
        loan = [ids[s] for s in borrowed if s in hosts]
        reclaim = [ids[s] for s in state.reclaimed.servers]
    else:
        loan, reclaim = [], []
    return Changes(tuple(moved), reclaim, loan)


def _value_of(state: RoundState, j: int, w: int, row: int) -> float:
    """Value of job ``j`` (row ``row`` of the scale step's table) at ``w`` workers computed as the value table
    does, for a ``w`` off a thinned row."""
    from lyra_solver.throughput import rate_one

    cl, rec, adm = state.cluster, state.reclaimed, state.admitted
    job = cl.snap.jobs[j]
    table = state.scaled.table
    if table.objective != OBJECTIVES[0]:
        c = 0 if j in adm.admitted else sum(adm.base[j].values())
        untouched = c > 0 and j not in rec.shrunk and j not in adm.donors
        opts = JobOptions(job.throughput, job.min_workers, job.max_workers, job.remaining_work,
                          job.gpus_per_worker, c, job.restart_penalty if untouched else 0.0)
        return option_value(table, row, opts, w, server_gpus=cl.server_gpus)

    def t(n: int) -> float:
        r = rate_one(job.throughput, n, gpus_per_worker=job.gpus_per_worker, server_gpus=cl.server_gpus)
        return min(job.remaining_work / r, TIME_CAP)

    c = 0 if j in adm.admitted else sum(adm.base[j].values())
    untouched = c > 0 and j not in rec.shrunk and j not in adm.donors
    return t(job.min_workers) - t(w) - (job.restart_penalty if untouched and w != c else 0.0)


def _gather(sc, entries: np.ndarray, workers: np.ndarray, gpw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The scale step's value of each entry ``entries[i]`` of ``sc.jobs`` at ``workers[i]``, and whether it is
    one of its table's options (``False``: a count off a thinned grid, or off the only option of a job left out
    of the table; the caller computes those). O(len(entries))."""
    table = sc.table
    if sc.rows is None:  # row i of the table is entry i
        k = workers - table.min_workers[entries]
        kk = np.minimum(k, table.values.shape[1] - 1)
        on_grid = (k < table.sizes[entries]) & (table.weights[entries, kk] == gpw * k)  # False: thinned rows
        return table.values[entries, kk], on_grid
    row = np.full(len(sc.jobs), -1, np.int64)  # the table's row of each entry (-1: one option, at min)
    row[sc.rows] = np.arange(sc.rows.shape[0])
    row = row[entries]
    values = sc.fixed[entries]  # a new array (fancy indexing): the table's entries go over it
    on_grid = workers == sc.targets[entries]  # a job left out runs at min_workers, its target, or is computed
    inside = (row >= 0).nonzero()[0]
    if inside.size:
        r, w = row[inside], workers[inside]
        k = w - table.min_workers[r]
        kk = np.minimum(k, table.values.shape[1] - 1)
        on_grid[inside] = (k < table.sizes[r]) & (table.weights[r, kk] == gpw[inside] * k)
        values[inside] = table.values[r, kk]
    return values, on_grid


def _ascending(p: dict[int, int]) -> bool:
    """Whether the server indices of ``p`` come in increasing order (distinct keys: sorted is increasing)."""
    return list(p) == sorted(p)


def _named(p: dict[int, int], ids: list[str]) -> FrozenDict:
    """The placement ``p`` ({server index: workers}) by server id, servers in index order. O(len(p) log len(p))."""
    if len(p) == 1:
        ((s, n),) = p.items()
        return FrozenDict({ids[s]: n})
    if _ascending(p):
        return FrozenDict(zip(map(ids.__getitem__, p), p.values(), strict=True))
    return FrozenDict([(ids[s], n) for s, n in sorted(p.items())])


_WAIT, _PREEMPT = JobDecision(action="wait"), JobDecision(action="preempt")  # frozen: shared by every such job


def _decision(state: RoundState) -> Decision:
    """:func:`decision_of`. On a large round the loop runs over the jobs that run only (:func:`_running`, which
    counts their workers on the way; a waiting job's decision is the one shared ``wait`` struct, the preempted jobs
    are those of the index view's placed jobs that run no more); on a small one, where most jobs run, over every
    job in one pass. A large round's mapping of the jobs is built at once from the ids and the list of decisions,
    already frozen. O(S + J + H); on a large round O(J) of it in C, O(R + H) in Python for R jobs that run."""
    cl, rec, borrowed, sc, pl = state.cluster, state.reclaimed, state.borrowed, state.scaled, state.placed
    snap = cl.snap
    snap_jobs = snap.jobs
    ids = [s.id for s in snap.servers]
    placement = pl.placement
    before_all = cl.placement
    n_jobs = len(placement)
    run = np.fromiter(sc.jobs, np.int64, len(sc.jobs))  # the table's rows' jobs (from a tuple: faster than asarray)
    small = n_jobs < _ARRAYS_MIN_JOBS
    if small:
        count_a = worker_counts(cl, placement)  # workers of every job (0: none)
        count = count_a.tolist()
    else:  # the decisions of the jobs that run, which count their workers on the way
        out, running, made = _running(cl, placement, ids)
        count_a = np.zeros(n_jobs, np.int64)
        count_a[running[0]] = running[1]
    workers = count_a[run]
    # the value of each running job's option, gathered at once, summed in job order (as before)
    rows_run = workers.nonzero()[0]  # the entries of the jobs that run
    workers = workers[rows_run]
    values, on_grid = _gather(sc, rows_run, workers, cl.gpw[run[rows_run]])
    gathered = values.tolist()
    jct = 0.0
    if on_grid.all():
        for v in gathered:
            jct += v
    else:
        for v, ok, i, w in zip(gathered, on_grid.tolist(), rows_run.tolist(), workers.tolist(), strict=True):
            jct += v if ok else _value_of(state, sc.jobs[i], w, i)
    # a snapshot places no job on an idle server: only placements made this round can host one, a borrowed server
    # that hosts none is not borrowed
    hosting: set[int] = set()
    make = JobDecision
    if small:  # every job in one pass, into the mapping (the struct freezes a copy)
        if borrowed:
            lent = set(borrowed)
            for p, before in zip(placement, before_all, strict=True):
                if p and p is not before and not lent.isdisjoint(p):
                    hosting.update(p)
        jobs: dict = {}
        preemptions = 0
        for job, p, w, before in zip(snap_jobs, placement, count, before_all, strict=True):
            if p:
                if p is before and (len(p) == 1 or _ascending(p)):
                    # the snapshot's own placement (no step replaced it), its servers in index order: the
                    # decision's placement is the snapshot's, item for item and in the same order (the same bytes)
                    jobs[job.id] = make("run", w, job.placement, False)
                else:
                    named = _named(p, ids)
                    jobs[job.id] = make("run", w, named, before is None or named != job.placement)
            elif before is not None:
                jobs[job.id] = _PREEMPT
                preemptions += 1
            else:
                jobs[job.id] = _WAIT
    else:
        if borrowed:  # their servers in one C-level pass, not a test per placement
            hosting = set(borrowed).intersection(chain.from_iterable(made))
        # the jobs that ran before the round (a snapshot placement, even an empty one) and run no more
        preempted = [j for j in cl.held if not placement[j]]  # (a map of tuple.__getitem__: twice the time)
        for j in preempted:
            out[j] = _PREEMPT
        preemptions = len(preempted)
        # in job order, frozen at once (the struct keeps it)
        # (the ids that validation read, lyra_solver.validate.JobColumns, where it did; an attrgetter: 1.4x)
        job_ids = [j.id for j in snap_jobs] if cl.columns is None else cl.columns.ids
        jobs = FrozenDict(zip(job_ids, out, strict=True))
    loan = [ids[s] for s in borrowed if s in hosting]
    reports = {"reclaim": rec.report, "allocation": sc.report, "placement": pl.report}
    summary = Summary(
        jct_reduction=round(jct, 6),
        preemptions=preemptions,
        methods={k: r.method for k, r in reports.items()},
        optimality_gap=sc.report.gap,
        bound=sc.report.bound,
        statuses={k: r.status for k, r in reports.items()},
    )
    return Decision(format_version=1, servers=ServerDecision(reclaim=[ids[s] for s in rec.servers], loan=loan),
                    jobs=jobs, summary=summary)


def _running(cl, placement: tuple, ids: list[str]) -> tuple[list, tuple[np.ndarray, np.ndarray], list]:
    """A large round's decisions of the jobs that run (a non-empty placement) in a list of every job's (``wait``
    for the others, the caller writes the preempted ones), the jobs that run and their workers (two int64 arrays)
    and the placements made this round (the only ones that can host a worker on a borrowed server). The workers
    are counted in the same loop: the snapshot's count for a placement no step replaced (the index view's very
    dict), the one entry's for most of the others. O(J) in C, O(R + H) in Python for R jobs that run."""
    before_all, snap_jobs = cl.placement, cl.snap.jobs
    n_jobs = len(placement)
    running = list(compress(range(n_jobs), placement))
    at = np.fromiter(running, np.int64, len(running))
    run_w = cl.workers[at].tolist()  # right where the placement is the snapshot's, replaced below elsewhere
    out = [_WAIT] * n_jobs
    made: list = []
    keep = made.append
    make = JobDecision
    for i, j in enumerate(running):
        p = placement[j]
        before = before_all[j]
        if len(p) == 1:  # most jobs: _named's first case, without the call
            if p is before:  # the snapshot's own placement (no step replaced it): its mapping, as on small rounds
                out[j] = make("run", run_w[i], snap_jobs[j].placement, False)
                continue
            keep(p)
            ((s, n),) = p.items()
            run_w[i] = w = n
            named = FrozenDict({ids[s]: n})
        else:  # _named's other cases, without the calls
            keys = list(p)
            if keys == sorted(keys):
                if p is before:
                    out[j] = make("run", run_w[i], snap_jobs[j].placement, False)
                    continue
                named = FrozenDict(zip(map(ids.__getitem__, keys), p.values(), strict=True))
            else:
                named = FrozenDict([(ids[s], n) for s, n in sorted(p.items())])
            if p is not before:
                keep(p)
                run_w[i] = sum(p.values())
            w = run_w[i]
        out[j] = make("run", w, named, before is None or named != snap_jobs[j].placement)
    return out, (at, np.fromiter(run_w, np.int64, len(run_w))), made


#: Jobs from which :func:`_decision` loops over the jobs that run only and finds the preempted ones by array
#: operations; below it (the simulator's rounds of a few hundred jobs, most of them running) one pass over every
#: job costs less than the numpy calls' fixed cost.
_ARRAYS_MIN_JOBS = 2_000
