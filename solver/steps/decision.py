"""The decision of steps 1-5 (DESIGN "Formats": Decision), assembled from the round state.

:func:`decision_of` writes one :class:`~lyra_solver.types.JobDecision` per job (``run`` with its placement by
server id, ``preempt`` for a running job not kept, ``wait`` for a queued job not started), the servers reclaimed
and the borrowed servers that host a worker, and the summary: the JCT reduction of the chosen options, the
preemptions, and each step's method and status. Running time O(S + J + H).
"""
from __future__ import annotations

import numpy as np
from lyra_solver.formulations.vocabulary import OBJECTIVES
from lyra_solver.steps._state import RoundState
from lyra_solver.types import Decision, FrozenDict, JobDecision, ServerDecision, Summary
from lyra_solver.values import TIME_CAP, JobOptions, option_value

__all__ = ["decision_of"]


def decision_of(state: RoundState) -> Decision:
    """The decision of the round's steps 1-5 (no packing; :func:`lyra_solver.steps.pack.pack` adds it)."""
    return _decision(state)


def _value_of(state: RoundState, j: int, w: int, row: int) -> float:
    """Value of job ``j`` (row ``row`` of the scale step's table) at ``w`` workers computed as the value table
    does, for a ``w`` off a thinned row."""
    from lyra_solver.throughput import rate_one

    cl, rec, adm = state.cluster, state.reclaimed, state.admitted
    job = cl.snap.jobs[j]
    table = state.scaled.table
    if table.objective != OBJECTIVES[0]:
        c = 0 if j in adm.admitted else sum(adm.placement[j].values())
        untouched = c > 0 and j not in rec.shrunk and j not in adm.donors
        opts = JobOptions(job.throughput, job.min_workers, job.max_workers, job.remaining_work,
                          job.gpus_per_worker, c, job.restart_penalty if untouched else 0.0)
        return option_value(table, row, opts, w, server_gpus=cl.server_gpus)

    def t(n: int) -> float:
        r = rate_one(job.throughput, n, gpus_per_worker=job.gpus_per_worker, server_gpus=cl.server_gpus)
        return min(job.remaining_work / r, TIME_CAP)

    c = 0 if j in adm.admitted else sum(adm.placement[j].values())
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
    inside = np.flatnonzero(row >= 0)
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


_WAIT, _PREEMPT = JobDecision(action="wait"), JobDecision(action="preempt")  # frozen: shared by every such job


def _decision(state: RoundState) -> Decision:
    cl, rec, borrowed, sc, pl = state.cluster, state.reclaimed, state.borrowed, state.scaled, state.placed
    snap = cl.snap
    ids = [s.id for s in snap.servers]
    placement = pl.placement
    # workers of each job that runs (0: none), once for the values below and the decisions
    count = [sum(p.values()) if p else 0 for p in placement]
    jobs: dict[str, JobDecision] = {}
    preemptions = 0
    jct = 0.0
    # the value of each running job's option, gathered at once, summed in job order (as before)
    run = np.asarray(sc.jobs, np.int64)  # the jobs the scale step valued
    workers = np.array(count, np.int64)[run]
    rows = np.flatnonzero(workers)  # the entries of the jobs that run
    workers = workers[rows]
    values, on_grid = _gather(sc, rows, workers, cl.gpw[run[rows]])
    gathered = values.tolist()
    if on_grid.all():
        for v in gathered:
            jct += v
    else:
        for v, ok, i, w in zip(gathered, on_grid.tolist(), rows.tolist(), workers.tolist(), strict=True):
            jct += v if ok else _value_of(state, sc.jobs[i], w, i)
    make = JobDecision
    loan = []
    if borrowed:  # a snapshot places no job on an idle server: only placements made this round can host one
        lent = set(borrowed)
        hosting = set()
        for p, before in zip(placement, cl.placement, strict=True):
            if p and p is not before and not lent.isdisjoint(p):
                hosting.update(p)
        loan = [ids[s] for s in borrowed if s in hosting]
    for job, p, w, before in zip(snap.jobs, placement, count, cl.placement, strict=True):
        if p:
            if p is before and (len(p) == 1 or _ascending(p)):
                # the snapshot's own placement (no step replaced it), its servers in index order: the decision's
                # placement is the snapshot's, item for item and in the same order (the same bytes), unchanged
                jobs[job.id] = make("run", w, job.placement, False)
            else:
                if len(p) == 1:
                    ((s, n),) = p.items()
                    named = FrozenDict(((ids[s], n),))
                else:
                    named = FrozenDict([(ids[s], n) for s, n in sorted(p.items())])
                old = job.placement
                jobs[job.id] = make("run", w, named, old is None or named != old)
        elif job.placement is not None:
            jobs[job.id] = _PREEMPT
            preemptions += 1
        else:
            jobs[job.id] = _WAIT
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
