"""Step 4 of the round, scale (DESIGN "Round pipeline"): the GPUs left after admission go to elastic jobs by a
multiple-choice knapsack over the value table (:func:`lyra_solver.values.value_table`), solved by the MCKP front
door (:func:`lyra_solver.formulations.mckp.solve_mckp`) with the method of ``options.allocation``.

The value table is built in one place, :func:`job_options` then :func:`lyra_solver.values.value_table`: one
:class:`~lyra_solver.values.JobOptions` per job that runs. A table wider than :data:`MAX_TABLE_CELLS` is thinned
(an evenly spaced grid of worker counts per wide row), the MCKP solved on the grid, then refined by zooming in;
the bound and gap are then proven over every option (:func:`lyra_solver.values.lp_bound`).

Running time: O(J M) for the table of J jobs and M options per job (at most :data:`MAX_TABLE_CELLS` cells),
plus the MCKP method's.
"""
from __future__ import annotations

import logging
import time
from typing import NamedTuple

import numpy as np
from lyra_solver.formulations import SolveResult, relative_gap
from lyra_solver.formulations.mckp import MCKPProblem, solve_mckp
from lyra_solver.formulations.mckp._numba import loaded
from lyra_solver.formulations.mckp.greedy import greedy_choice, table_choice
from lyra_solver.formulations.mckp.thinning import thin_steps, zoom_window
from lyra_solver.formulations.vocabulary import ALLOCATION_METHOD, OBJECTIVES
from lyra_solver.objectives import JOINT_ADMISSION, horizons, preempt_values, wait_values
from lyra_solver.steps._state import (
    Cluster,
    RoundState,
    Scaled,
    Settings,
    StepReport,
    usable_servers,
    worker_counts,
)
from lyra_solver.values import (
    TIME_CAP,
    JobOptions,
    ValueTable,
    _value_kernels,
    lp_bound,
    lyra_table_of_jobs,
    option_grid,
    option_value,
    resolve_backend,
    value_table,
)

__all__ = ["MAX_REFINE_ROUNDS", "MAX_TABLE_CELLS", "job_options", "scale"]

log = logging.getLogger(__name__)


def scale(state: RoundState, settings: Settings) -> Scaled:
    """Split the GPUs left after admission among the jobs that run: MCKP over the value table.

    Capacity: the free GPUs of the usable servers plus the extra workers (above ``min_workers``) that running
    jobs hold, so a running job may also shrink. A job touched this round (shrunk by the reclaim, or a donor) is
    charged no restart; a donor keeps its count (it does not grow back in the round it gave workers).
    """
    if settings.objective in JOINT_ADMISSION:
        return _scale_joint(state, settings)
    cl, adm, rec = state.cluster, state.admitted, state.reclaimed
    snap = cl.snap
    # the jobs that run, in job order, with their current counts (0: admitted), the capacity (the free GPUs of the
    # usable servers and the extra GPUs that running jobs hold) and Lyra's table's columns
    counts = worker_counts(cl, adm.base, adm.admitted)  # admitted: at base demand (their dicts not read)
    cols = _columns(cl, counts, adm.admitted, rec.shrunk, adm.donors, adm.used_after(cl),
                    usable_servers(cl, rec, state.borrowed))
    run, held, capacity = cols.run, cols.held, cols.capacity
    held.setflags(write=False)  # kept for the place step (Scaled.held)
    jobs = tuple(run.tolist())
    if not jobs:
        empty = np.zeros((0, 1))
        return Scaled((), ValueTable(empty, empty.astype(np.int64), empty, np.zeros(0, np.int64),
                                     np.zeros(0, np.int64)), np.zeros(0, np.int64), StepReport("none", "optimal"),
                      held=held)
    # a row holds at most capacity + 1 options (job_options cuts what is heavier than the capacity; a donor's
    # extra workers are within it): a table within the limit that way needs no thinning
    table, opts, thinned, rows, fixed = None, None, False, None, None
    if settings.objective == OBJECTIVES[0] and len(jobs) * (capacity + 1) <= MAX_TABLE_CELLS:
        lyra = _lyra_table(cl, cols, settings.backend)
        if lyra is not None:
            table, rows, fixed = lyra
    if table is None:
        opts = job_options(state, jobs, dict(zip(jobs, held.tolist(), strict=True)), capacity)
        opts, thinned = (opts, False) if len(opts) * (capacity + 1) <= MAX_TABLE_CELLS else _thin(opts)
        # Lyra's value reads no ages
        ages = [snap.now - snap.jobs[j].submit_time for j in jobs] if settings.objective != OBJECTIVES[0] else None
        table = value_table(opts, server_gpus=cl.server_gpus, backend=settings.backend,
                            objective=settings.objective, ages=ages)
    elastic = (table.sizes > 1).nonzero()[0]
    targets = table.min_workers.copy() if rows is None else cl.min_w[run]
    if elastic.size == 0:
        return Scaled(jobs, table, targets, StepReport("none", "optimal", 0.0, 0.0, 0.0), rows, fixed, held)
    method = ALLOCATION_METHOD[settings.allocation]
    if method == "greedy" and not settings.reports and rows is not None and capacity >= 0:
        # Lyra's table (every row has a choice: elastic is every row) and nobody reads the report: the greedy's
        # choice by its kernel, without the problem (None: the kernels are not loaded, or it leaves the table to
        # the path below)
        choice = table_choice(table.weights, np.where(np.isfinite(table.values), table.values, 0.0), table.sizes,
                              capacity)
        if choice is not None:
            lo = table.min_workers
            # np.clip's values, without its per-call dtype checks
            targets[rows] = np.minimum(np.maximum(lo + choice, lo), lo + table.sizes - 1)
            return Scaled(jobs, table, targets, _GREEDY_REPORT, rows, fixed, held)
    values = table.values[elastic]
    # the table's own arrays (int64 weights >= 0, sizes >= 1, values finite once the padding's -inf are 0)
    problem = MCKPProblem.from_table(table.weights[elastic], np.where(np.isfinite(values), values, 0.0),
                                     table.sizes[elastic], capacity)
    if method == "greedy" and not settings.reports and not thinned and problem.capacity >= 0:
        # nobody reads the report: the greedy's choice without its LP bound (the same choice; each class's
        # lightest item weighs 0, within the capacity, and the values are finite: what solve_mckp checks)
        res, choice = None, greedy_choice(problem)
    else:
        # deterministic: the MCKP core stops on its memory limit only (wall time would make answers load-dependent)
        res = solve_mckp(problem, method=method, time_limit=None if settings.deterministic else settings.left())
        if res.choice is None:
            log.warning("allocation %s gave %s; falling back to the convex-hull greedy", method, res.status)
            res = solve_mckp(problem, method="hull")
        choice = np.asarray(res.choice, dtype=np.int64)
    lo = table.min_workers[elastic]
    if thinned:
        base, step, _ = option_grid([opts[i] for i in elastic.tolist()])
        top = np.fromiter((opts[i].max_workers for i in elastic.tolist()), np.int64, elastic.size)
        targets[elastic] = np.clip(base + choice * step, lo, top)
    else:  # every row is min..max by single workers (option_grid's base min, step 1, sizes max - min + 1)
        targets[elastic if rows is None else rows[elastic]] = np.clip(lo + choice, lo, lo + table.sizes[elastic] - 1)
    report = StepReport("mckp-greedy", "feasible") if res is None else StepReport.of(res, method=f"mckp-{res.method}")
    if thinned and settings.objective != OBJECTIVES[0]:  # the LP bound is Lyra's value's: no proven bound here
        value = _true_value(opts, table, elastic.tolist(), targets[elastic], cl.server_gpus)
        report = StepReport(f"mckp-{res.method}-thinned", "feasible", value, None, None)
    elif thinned:  # zoom in on the thinned rows, then bound and gap against EVERY option by the LP bound
        chosen, value = _refine(opts, table, elastic, capacity, targets[elastic], cl.server_gpus, settings, method)
        targets[elastic] = chosen
        report = _thinned_report(res, value, opts, table, elastic, capacity, cl.server_gpus, settings)
    return Scaled(jobs, table, targets, report, rows, fixed, held)


#: The report of the greedy's choice that nobody reads (frozen: one shared instance)
_GREEDY_REPORT = StepReport("mckp-greedy", "feasible")


def _scale_joint(state: RoundState, settings: Settings) -> Scaled:
    """Admission, preemption and scaling as one knapsack (the objectives of :data:`JOINT_ADMISSION`).

    Every job that could run on the usable servers is a class of the MCKP: option 0 (wait; for a running job,
    preempt) of weight 0, valued by :func:`~lyra_solver.objectives.wait_values` (a running job's by
    :func:`~lyra_solver.objectives.preempt_values`: waiting less the preemption penalty over its horizon), and
    its options ``min..max`` of weight ``gpus_per_worker x w``, valued by the objective's table. The capacity
    is every GPU of the usable servers that no job outside the table holds. A target of 0 is a job that does
    not run this round; the place step leaves it without workers (the decision says ``wait`` or ``preempt``).
    A job whose base demand exceeds the capacity waits. A thinned table (wider than :data:`MAX_TABLE_CELLS`)
    is solved on its grid, as :func:`scale`'s; the report is then ``feasible``, the grid's optimum.

    Running time: the value table's O(J M) and the MCKP method's on J classes of at most M + 1 options.
    """
    cl, rec = state.cluster, state.reclaimed
    snap = cl.snap
    usable = usable_servers(cl, rec, state.borrowed)
    held = {j: sum(p.values()) for j, p in enumerate(rec.placement) if p}
    capacity = int(cl.gpus[usable].sum())  # every job is in the table (running ones on usable servers only)
    jobs = tuple(j for j, job in enumerate(snap.jobs)
                 if j in held or job.min_workers * job.gpus_per_worker <= capacity)
    if not jobs:
        empty = np.zeros((0, 1))
        return Scaled((), ValueTable(empty, empty.astype(np.int64), empty, np.zeros(0, np.int64),
                                     np.zeros(0, np.int64)), np.zeros(0, np.int64), StepReport("none", "optimal"),
                      held=np.zeros(0, np.int64))
    cur = {j: held.get(j, 0) for j in jobs}
    opts = []
    for j in jobs:  # options heavier than the whole capacity can never be chosen (a lossless cut)
        job, c = snap.jobs[j], cur[j]
        untouched = c > 0 and j not in rec.shrunk
        opts.append(JobOptions(job.throughput, job.min_workers, min(job.max_workers, capacity // job.gpus_per_worker),
                               job.remaining_work, job.gpus_per_worker, c, job.restart_penalty if untouched else 0.0))
    opts, thinned = _thin(opts)
    ages = np.array([snap.now - snap.jobs[j].submit_time for j in jobs], np.float64)
    table = value_table(opts, server_gpus=cl.server_gpus, backend=settings.backend, objective=settings.objective,
                        ages=ages.tolist())
    weight = table.job_weights if table.job_weights is not None else np.ones(len(jobs))
    wait = wait_values(settings.objective, table.times[:, 0], weight)
    running = np.fromiter((cur[j] > 0 for j in jobs), bool, len(jobs))
    if running.any():
        base, step, _ = option_grid(opts)
        cols = np.clip((np.fromiter((cur[j] for j in jobs), np.int64, len(jobs)) - base) // step, 0,
                       table.sizes - 1)
        now = table.values[np.arange(len(jobs)), cols]
        pen = np.fromiter((snap.jobs[j].preemption_penalty for j in jobs), np.float64, len(jobs))
        wait = np.where(running, preempt_values(wait, np.where(np.isfinite(now), now, wait), pen, horizons(ages)),
                        wait)
    gpw = np.fromiter((snap.jobs[j].gpus_per_worker for j in jobs), np.int64, len(jobs))
    weights = np.concatenate([np.zeros((len(jobs), 1), np.int64),
                              table.weights + (table.min_workers * gpw)[:, None]], axis=1)
    values = np.concatenate([wait[:, None], np.where(np.isfinite(table.values), table.values, 0.0)], axis=1)
    problem = MCKPProblem.from_padded(weights, values, table.sizes + 1, capacity)
    method = ALLOCATION_METHOD[settings.allocation]
    res = solve_mckp(problem, method=method, time_limit=None if settings.deterministic else settings.left())
    if res.choice is None:
        log.warning("allocation %s gave %s; falling back to the convex-hull greedy", method, res.status)
        res = solve_mckp(problem, method="hull")
    base, step, _ = option_grid(opts)
    choice = np.asarray(res.choice, dtype=np.int64)
    top = np.fromiter((o.max_workers for o in opts), np.int64, len(opts))
    targets = np.where(choice == 0, 0, np.clip(base + (choice - 1) * step, table.min_workers, top))
    report = StepReport.of(res, method=f"mckp-{res.method}")
    if thinned:
        report = StepReport(f"mckp-{res.method}-thinned", "feasible", res.objective, None, None)
    held_a = np.fromiter([cur[j] for j in jobs], np.int64, len(jobs))  # no admission here: the placements held
    held_a.setflags(write=False)
    return Scaled(jobs, table, targets.astype(np.int64), report, held=held_a)


#: Zoom rounds of a thinned allocation (each a table of at most :data:`MAX_TABLE_CELLS` cells and one MCKP).
MAX_REFINE_ROUNDS = 12


def _true_value(opts: list[JobOptions], table: ValueTable, rows: list[int], workers: np.ndarray,
                server_gpus: int) -> float:
    """Total value of ``workers[r]`` workers for job ``rows[r]`` over its FULL option range (scalar rates for
    the counts off the table's grid; the table's own cell where the count is on it)."""
    from lyra_solver.throughput import rate_one

    total = 0.0
    base, step, sizes = option_grid([opts[i] for i in rows])
    for r, (i, w) in enumerate(zip(rows, workers.tolist(), strict=True)):
        o = opts[i]
        k = (w - int(base[r])) // int(step[r])
        if 0 <= k < sizes[r] and int(table.weights[i, k]) == o.gpus_per_worker * (w - o.min_workers):
            total += float(table.values[i, k])
            continue
        if table.objective != OBJECTIVES[0]:
            total += option_value(table, i, o, w, server_gpus=server_gpus)
            continue
        rate = rate_one(o.throughput, w, gpus_per_worker=o.gpus_per_worker, server_gpus=server_gpus)
        restart = o.restart_penalty if o.current_workers > 0 and w != o.current_workers else 0.0
        total += float(table.times[i, 0]) - min(o.remaining_work / rate, TIME_CAP) - restart
    return total


def _refine(opts: list[JobOptions], table: ValueTable, elastic: np.ndarray, capacity: int, chosen: np.ndarray,
            server_gpus: int, settings: Settings, method: str) -> tuple[np.ndarray, float]:
    """Zoom in on the thinned rows: each round gives every thinned row the window of one grid step either side
    of its chosen count on a finer grid (at most :data:`MAX_TABLE_CELLS` cells in all, the chosen count kept),
    the other elastic rows their full options, and solves the MCKP again; a round's answer is kept when it is
    worth more over the full options. Stops when the grids reach single workers, after
    :data:`MAX_REFINE_ROUNDS` rounds, or when the round's time is up (wall clock; not when deterministic).
    Returns the worker counts of the elastic rows and their total value.

    Running time: per round one value table and one MCKP of at most :data:`MAX_TABLE_CELLS` cells; the step
    shrinks by about ``cells per row / 2`` a round, so a row of ``2**31`` options takes a handful of rounds.
    """
    el = elastic.tolist()
    best = chosen.copy()
    best_value = _true_value(opts, table, el, best, server_gpus)
    steps = np.fromiter((opts[i].step for i in el), np.int64, len(el))
    per_row = max(MAX_TABLE_CELLS // len(el), 3)
    for _ in range(MAX_REFINE_ROUNDS):
        wide = np.flatnonzero(steps > 1)
        if wide.size == 0 or (not settings.deterministic and time.perf_counter() >= settings.deadline):
            break
        window = []
        offset = 0
        for r in wide.tolist():
            o, t, s = opts[el[r]], int(best[r]), int(steps[r])
            # the step at least halves; the window (at most one old step either side) fits the cells per row
            lo, hi, fine = zoom_window(o.min_workers, o.max_workers, t, s, per_row)
            steps[r] = fine
            window.append(o._replace(min_workers=lo, max_workers=hi, step=int(steps[r]), anchor=t))
            offset += o.gpus_per_worker * (lo - o.min_workers)
        sub = value_table(window, server_gpus=server_gpus)
        narrow = np.flatnonzero(np.isin(np.arange(len(el)), wide, invert=True))
        m = max(int(sub.sizes.max()), int(table.sizes[elastic[narrow]].max()) if narrow.size else 1)
        weights = np.zeros((len(el), m), np.int64)
        values = np.zeros((len(el), m))
        sizes = np.zeros(len(el), np.int64)
        rows = elastic[narrow]
        k = min(m, table.values.shape[1])
        weights[narrow, :k], values[narrow, :k], sizes[narrow] = table.weights[rows, :k], table.values[rows, :k], \
            table.sizes[rows]
        weights[wide, : sub.values.shape[1]], values[wide, : sub.values.shape[1]] = sub.weights, sub.values
        sizes[wide] = sub.sizes
        problem = MCKPProblem.from_padded(weights, np.where(np.isfinite(values), values, 0.0), sizes,
                                          capacity - offset)
        res = solve_mckp(problem, method=method, time_limit=None if settings.deterministic else settings.left())
        if res.choice is None:
            break
        choice = np.asarray(res.choice, dtype=np.int64)
        cand = best.copy()
        nb, ns, _ = option_grid([opts[i] for i in rows.tolist()])
        cand[narrow] = np.clip(nb + choice[narrow] * ns, table.min_workers[rows],
                               np.fromiter((opts[i].max_workers for i in rows.tolist()), np.int64, rows.size))
        wb, ws, _ = option_grid(window)
        cand[wide] = np.clip(wb + choice[wide] * ws, sub.min_workers,
                             np.fromiter((o.max_workers for o in window), np.int64, len(window)))
        value = _true_value(opts, table, el, cand, server_gpus)
        if value > best_value:
            best, best_value = cand, value
    return best, best_value


def _thinned_report(res: SolveResult, value: float, opts: list[JobOptions], table: ValueTable, elastic: np.ndarray,
                    capacity: int, server_gpus: int, settings: Settings) -> StepReport:
    """The allocation's report when rows were thinned: the objective ``value`` (of the refined choice) with a
    proven upper bound over the full table (:func:`~lyra_solver.values.lp_bound`: thinned rows by their
    throughput's concave pieces, the other rows by their LP hulls) and the gap to it. ``optimal`` only when
    the objective meets that bound (to :func:`relative_gap`'s 1e-9), as for any solver."""
    wide = [i for i in elastic.tolist() if opts[i].step > 1]
    narrow = [i for i in elastic.tolist() if opts[i].step == 1]
    base, step, _ = option_grid([opts[i] for i in wide])
    current = np.full(len(wide), np.nan)
    for r, i in enumerate(wide):
        o = opts[i]
        if o.current_workers > 0 and o.restart_penalty > 0 and o.min_workers <= o.current_workers <= o.max_workers:
            current[r] = table.values[i, (o.current_workers - int(base[r])) // int(step[r])]  # on the grid
    exact = (table.weights[narrow], table.values[narrow]) if narrow else None
    bound, _ = lp_bound([opts[i]._replace(step=1) for i in wide], capacity, server_gpus=server_gpus,
                        t_min=table.times[wide, 0], exact_rows=exact, current=current,
                        deadline=None if settings.deterministic else settings.deadline)
    method = f"mckp-{res.method}-thinned"
    bound = max(bound, value)
    gap = relative_gap(value, bound)
    return StepReport(method, "optimal" if gap == 0.0 else "feasible", value, bound, gap)


#: Largest value table (elastic jobs x widest option list, after options heavier than the capacity are cut)
#: that the scale step builds: about 8 bytes x 8 arrays per cell. Wider rows are thinned to fit (see _thin).
MAX_TABLE_CELLS = 1_000_000


def _thin(opts: list[JobOptions]) -> tuple[list[JobOptions], bool]:
    """Keep the value table within :data:`MAX_TABLE_CELLS`: rows wider than the cells allow per job get an
    evenly spaced grid of worker counts (min, max and the current count kept; see
    :func:`~lyra_solver.values.option_grid`). Returns the options and whether any row was thinned."""
    widths = np.fromiter((o.max_workers - o.min_workers + 1 for o in opts), np.int64, len(opts))
    steps = thin_steps(widths, MAX_TABLE_CELLS)
    if steps is None:
        return opts, False
    elastic = int((widths > 1).sum())
    out = [o._replace(step=step) if step > 1 else o for o, step in zip(opts, steps, strict=True)]
    log.warning("value table thinned: %d elastic jobs x up to %d options > %d cells; the allocation is chosen "
                "among the thinned options, its bound is over every option", elastic, int(widths.max()),
                MAX_TABLE_CELLS)
    return out, True




class _Columns(NamedTuple):
    """The scale step's columns of the jobs that run (:func:`_columns`)."""

    run: np.ndarray  # the jobs that run (a non-zero count after admission), in job order
    held: np.ndarray  # the workers each holds after admission, 0 for an admitted job
    capacity: int  # the free GPUs of the usable servers plus the GPUs held above base demand
    width: int  # the most options of any job that runs (max - min + 1 over them all; at most 0 where none fits)
    restart: np.ndarray  # positions in ``run`` of the jobs charged a restart at their base demand
    rows: np.ndarray  # positions in ``run`` of the jobs with more than one option: Lyra's table's rows
    lo: np.ndarray  # per row: min_workers
    top: np.ndarray  # per row: the most workers (max_workers, capacity-cut; a donor's held count)
    gpw: np.ndarray  # per row: GPUs per worker
    cur: np.ndarray  # per row: held workers
    charged: np.ndarray  # per row: restart charged (running, and neither shrunk by the reclaim nor a donor)


def _columns(cl: Cluster, counts: np.ndarray, admitted: tuple[int, ...], shrunk: frozenset[int],
             donors: frozenset[int], used: np.ndarray, usable: np.ndarray) -> _Columns:
    """The columns of the jobs that run (:class:`_Columns`) from every job's workers after admission (``counts``,
    the ``admitted`` jobs at base demand), by the compiled twin (:func:`lyra_solver._nbvalues.scale_columns`) once
    the package's kernels are loaded in the process, else by :func:`_columns_numpy`: the same integers. A job
    shrunk by the reclaim or a donor pays no restart (it restarts anyway); a donor keeps its count (it does not
    grow back in the round it gave workers); options heavier than the capacity are cut. O(J + S)."""
    nb = _value_kernels() if loaded() else None
    marks = [np.fromiter(a, np.int64, len(a)) for a in (admitted, shrunk, donors)]
    if nb is not None:
        return _Columns(*nb.scale_columns(counts, *marks, cl.min_w, cl.max_w, cl.gpw, cl.gpus, used, usable))
    return _columns_numpy(cl, counts, *marks, used, usable)


def _columns_numpy(cl: Cluster, counts: np.ndarray, admitted: np.ndarray, shrunk: np.ndarray, donors: np.ndarray,
                   used: np.ndarray, usable: np.ndarray) -> _Columns:
    """:func:`_columns` by numpy (the job index arrays as int64 arrays; ``counts`` is written). O(J + S)."""
    run = counts.nonzero()[0]  # 1-D arrays here and below: nonzero()[0] is flatnonzero without its ravel call
    if admitted.size:
        counts[admitted] = 0
    held = counts[run]
    lo, g = cl.min_w[run], cl.gpw[run]
    extra_gpus = int(((held - lo) * g)[held > 0].sum())
    capacity = int((cl.gpus - used)[usable].sum()) + extra_gpus
    top = np.minimum(cl.max_w[run], lo + capacity // g)
    charged = held > 0
    if shrunk.size:
        charged &= ~_member(shrunk, run, cl.gpw.shape[0])
    if donors.size:  # a donor keeps its count (and restarts anyway)
        gave = _member(donors, run, cl.gpw.shape[0])
        top = np.where(gave, held, top)
        charged &= ~gave
    width = int((top - lo).max()) + 1 if run.size else 1
    restart = (charged & (lo != held)).nonzero()[0]
    rows = (top > lo).nonzero()[0]
    return _Columns(run, held, capacity, width, restart, rows, lo[rows], top[rows], g[rows], held[rows],
                    charged[rows])


def _lyra_table(cl: Cluster, cols: _Columns, backend: str) -> tuple[ValueTable, np.ndarray, np.ndarray] | None:
    """Lyra's value table of the jobs that run with more than one option, the options of :func:`job_options`
    (same ranges, counts and restarts) taken from their columns (:func:`_columns`) by
    :func:`lyra_solver.values.lyra_table`, without a :class:`JobOptions` per job: those rows of the table
    :func:`value_table` makes of them, bit for bit. Returns ``(table, rows, fixed)``: ``rows`` the positions in
    ``cols.run`` of the table's rows; ``fixed`` every job's value at ``min_workers``, the table's first column,
    which needs no rate (``T(min) - T(min)`` is 0: times are finite), only the restart. ``None`` where ``backend``
    would run the whole table on a GPU library (the caller then builds the options). O(E M) for the table of the
    E jobs with a choice, plus reading the structs of those and of the jobs charged a restart."""
    run, rows, restart = cols.run, cols.rows, cols.restart
    if backend != "numpy" and resolve_backend(backend, run.shape[0] * cols.width) != "numpy":
        return None  # value_table's choice of backend, on the whole table
    # the job structs are read for the table's rows and the restarts only (about a third of the jobs on the
    # simulator's rounds): a job with one option and no restart charged has the value 0 at min
    every = cl.snap.jobs  # read by comprehensions (admit.py's note on maps)
    fixed = np.zeros(run.shape[0])  # the table's T(min) - T(min) - penalty x restart, at min
    if restart.size:
        fixed[restart] = 0.0 - np.fromiter([every[j].restart_penalty for j in run[restart].tolist()], np.float64,
                                           restart.size)
    if rows.size == 0:
        empty = np.zeros((0, 1))
        none = np.zeros(0, np.int64)
        return ValueTable(empty, empty.astype(np.int64), empty, none, none.copy()), rows, fixed
    table = lyra_table_of_jobs([every[j] for j in run[rows].tolist()], cols.lo, cols.top, cols.gpw, cols.cur,
                               cols.charged, server_gpus=cl.server_gpus)
    return table, rows, fixed


def _member(members: np.ndarray, idx: np.ndarray, n: int) -> np.ndarray:
    """Mask of the entries of ``idx`` (job indices below ``n``) that are in ``members`` (int64). O(n)."""
    mask = np.zeros(n, bool)
    mask[members] = True
    return mask[idx]


def job_options(state: RoundState, jobs: tuple[int, ...], current: dict[int, int], capacity: int) -> list[JobOptions]:
    """The value table's view of each job of ``jobs`` (the jobs that run, in job order): its option range, current
    count (0: admitted this round) and the restart it is charged.

    A job touched this round (shrunk by the reclaim, or a donor) pays no restart: it restarts anyway. A donor gave
    extra workers to base demand this round: it does not grow back in the same round. Options heavier than the
    whole capacity can never be chosen (a lossless cut of the table's width).
    """
    snap_jobs, shrunk, donors = state.cluster.snap.jobs, state.reclaimed.shrunk, state.admitted.donors
    make = tuple.__new__  # JobOptions(...) without its per-call keyword handling: every field given, in order
    opts = []
    for j in jobs:
        job, c = snap_jobs[j], current[j]
        lo, g = job.min_workers, job.gpus_per_worker
        if j in donors:
            top, penalty = c, 0.0
        else:
            top = min(job.max_workers, lo + capacity // g)
            penalty = job.restart_penalty if c > 0 and j not in shrunk else 0.0
        opts.append(make(JobOptions, (job.throughput, lo, top, job.remaining_work, g, c, penalty, 1, 0)))
    return opts
