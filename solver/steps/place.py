"""Step 5 of the round, place (DESIGN "Round pipeline"): workers onto servers by the placement option's heuristic,
best fit decreasing (:func:`lyra_solver.heuristics.placement.best_fit_decreasing`) or another heuristic row of the
placement table, or by the placement ILP (``options.placement="exact"``), all through the placement family's front
door (:func:`lyra_solver.formulations.placement.solve_placement`).

Base demand goes on training servers first, flexible (extra) workers on loaned servers first, so that a later
reclaim shrinks jobs instead of preempting them. Running jobs keep their placement unless their worker count
changes; a job whose count changes restarts anyway, so best fit decreasing places it afresh (fewest servers
spanned) rather than around the workers it had. For every objective but Lyra's (``Settings.compact_growth``),
a running job grows only onto the fewest servers its new count needs: where best fit decreasing can only
spread it, it keeps its workers (the growth is not made, the GPUs stay free) and the others are placed again,
at most once per such job. With the same setting a running job of unchanged count that spans more servers
than it needs moves onto the fewest servers when the GPUs left free hold it there and the move saves more than
its restart (:func:`_consolidate`): without it a job that had to start spread stays spread to its end. Running
time O(K (S + W log S)) for best fit decreasing (W workers that move, K passes: one, plus at most one per job
whose growth is undone), plus the ILP's, plus O(C S log S) for C spread jobs.
"""
from __future__ import annotations

import logging
from itertools import chain, compress, filterfalse

import numpy as np
from lyra_solver.formulations import Status
from lyra_solver.formulations.placement import PlacementProblem, solve_placement
from lyra_solver.heuristics.placement import bfd_afresh
from lyra_solver.steps._state import KIND_TRAINING, Placed, RoundState, Settings, StepReport, usable_servers, used_gpus
from lyra_solver.throughput import rate_one
from lyra_solver.types import PowerThroughput

__all__ = ["EXACT_PLACEMENT_MAX_PAIRS", "place"]

log = logging.getLogger(__name__)

#: The placement heuristic that places the round before the placement ILP (``options.placement="exact"``), and
#: whose answer the ILP keeps when it gives none (reported ``<heuristic>-fallback``). Every other value of the
#: option is a heuristic row of :data:`lyra_solver.formulations.methods.PLACEMENT`, run through the front door
#: with the keywords ``keep_current`` and ``evaluate`` (:func:`lyra_solver.heuristics.placement.best_fit_decreasing`'s).
EXACT_WARM_START = "bfd"


def place(state: RoundState, settings: Settings) -> Placed:
    """Workers onto servers. Jobs whose count is unchanged keep their placement; the others are placed
    afresh, best fit decreasing (or by the placement ILP, which keeps what they have where it spans no more
    servers)."""
    cl, adm, sc, rec, borrowed = state.cluster, state.admitted, state.scaled, state.reclaimed, state.borrowed
    admitted = set(adm.admitted)
    # the jobs that run (job order) and their targets: a target of 0 (the objective's knapsack admits:
    # lyra_solver.objectives.JOINT_ADMISSION) runs no worker; a job moves when its target differs from the workers it
    # holds after admission, counted by the scale step (``Scaled.held``: 0 for an admitted job, so it always moves).
    # Array tests and C-level selections: no test per job in Python, at any size
    if sc.held is None:
        raise ValueError("place: the scale step's result gives no workers held (Scaled.held)")
    targets = np.asarray(sc.targets, np.int64)
    move = (targets > 0) & (targets != sc.held)
    stopped = list(compress(sc.jobs, (targets == 0).tolist()))
    moving = list(compress(sc.jobs, move.tolist()))
    workers = targets[move]
    usable = usable_servers(cl, rec, borrowed)
    servers = usable.nonzero()[0]
    kept: dict[int, dict[int, int]] = {}  # running jobs whose growth was undone (Settings.compact_growth)
    # the placement option's heuristic (a row of the placement table), or the exact model's warm start
    heuristic = EXACT_WARM_START if settings.placement == "exact" else settings.placement
    if heuristic == EXACT_WARM_START and settings.placement != "exact" and not settings.compact_growth \
            and not settings.reports:
        # nobody reads the report (the simulator's rounds through changes_built, Lyra's objective): best fit
        # decreasing afresh by its compiled twin alone, the dicts of what it placed when it placed every worker;
        # else (None), and for decide, the front door below, which also keeps current workers then
        got = bfd_afresh(**_afresh_arrays(cl, adm, usable, workers, moving, stopped, admitted))
        if got is not None:
            return _placed(cl, adm, admitted, moving, stopped, {}, got, StepReport(heuristic, "feasible"),
                           settings, servers)
    while True:
        problem, out = _place_afresh(cl, adm, usable, workers, moving, stopped, heuristic,
                                     current=settings.placement == "exact", admitted=admitted)
        spread = _spread_growths(cl, adm, servers, workers, moving, out) if settings.compact_growth else []
        if not spread:
            break
        for j in spread:  # a growth that cannot be placed compactly is not made: the job keeps its workers
            kept[j] = adm.base[j]  # (a running job's: base holds it)
        stay = [j not in kept for j in moving]
        moving = list(compress(moving, stay))
        workers = workers[np.array(stay, bool)]
    per_job = out.placement.per_job
    report = StepReport(heuristic, "feasible")
    if settings.placement == "exact" and moving:
        per_job, report = _exact_placement(problem, out, per_job, report, settings)
    # the problem's servers are the cluster's (positions are server indices); best fit decreasing lists Python ints
    # above 0 only, the placement ILP may list numpy ints and zeros
    as_listed = report.method == heuristic
    gots = map(dict, per_job) if as_listed else ({int(s): int(n) for s, n in pairs if n > 0} for pairs in per_job)
    return _placed(cl, adm, admitted, moving, stopped, kept, gots, report, settings, servers)


def _placed(cl, adm, admitted: set[int], moving: list[int], stopped: list[int], kept: dict, gots, report: StepReport,
            settings: Settings, servers: np.ndarray) -> Placed:
    """The step's result: the placements after admission with the ``kept`` jobs' restored, the ``stopped`` jobs'
    taken away and the ``moving`` jobs' ``gots`` (their dicts, in order), a moving job the knapsack did not admit
    left waiting where it got less than its base demand; with ``Settings.compact_growth`` the others consolidated
    on the usable ``servers``.
    O(J) for the result plus O(entries of the moving jobs)."""
    # every admitted job moves or stops (placed afresh below): base holds the others' placements after admission
    placement = list(adm.base)
    for j, p in kept.items():
        placement[j] = p
    for j in stopped:
        placement[j] = None
    lows = cl.min_w[np.fromiter(moving, np.int64, len(moving))].tolist()  # the moving jobs' base demands
    for j, got, lo in zip(moving, gots, lows, strict=True):
        # a job the knapsack admits that fragmentation leaves below its base demand waits (never run below min)
        placement[j] = got if j in admitted or sum(got.values()) >= lo else None
    if settings.compact_growth:
        moved = admitted.union(kept, moving)  # one set: the test per job stays O(1) on the hot path
        settled = [j for j, p in enumerate(placement) if p and j not in moved]
        _consolidate(cl, servers, placement, settled)
    return Placed(tuple(placement), report)


def _consolidate(cl, servers, placement: list, settled: list[int]) -> None:
    """Move spread jobs onto the fewest servers where that pays (``Settings.compact_growth``), in place.

    A running job whose count is unchanged keeps its placement (DESIGN), but one that spans more servers than
    its count needs (``ceil(w g / G)``) runs at the spread placement's rate where the throughput model depends
    on the servers spanned (``profile``), and nothing else would ever bring it back together: on the 3-day
    Philly run a bert job spent 77 days at 8 workers on 2 servers, 3.5x slower than on one. Such a job moves
    when the GPUs left free on the usable training servers hold it on the fewest servers and the move pays for
    its restart: ``T(spread) - T(compact) > P`` (remaining time at the two placements' rates, ``P`` its restart
    penalty). Largest saving first (ties by position); each move takes the servers with the most free GPUs,
    filled in that order. Kinds whose rate does not depend on the servers spanned never move (no saving).
    Running time O(C log C + C S log S) for C spread jobs.
    """
    G = cl.server_gpus
    snap = cl.snap
    cand = []
    for j in settled:
        p = placement[j]
        w, g = sum(p.values()), int(cl.gpw[j])
        need = -(-w * g // G)
        if len(p) <= need:
            continue
        job = snap.jobs[j]
        r_now = rate_one(job.throughput, w, gpus_per_worker=g, server_gpus=G, servers=len(p))
        r_new = rate_one(job.throughput, w, gpus_per_worker=g, server_gpus=G, servers=need)
        if r_new <= r_now or r_now <= 0:
            continue
        saving = job.remaining_work / r_now - job.remaining_work / r_new - job.restart_penalty
        if saving > 0:
            cand.append((-saving, j, w, g, need))
    if not cand:
        return
    training = [int(s) for s in servers if cl.kind[s] == KIND_TRAINING]
    free = (cl.gpus - used_gpus(cl, placement)).tolist()
    for _, j, w, g, need in sorted(cand):
        p = placement[j]
        for s, n in p.items():
            free[s] += n * g
        best = sorted(training, key=lambda s: (-free[s], s))[:need]
        if sum(free[s] // g for s in best) >= w:
            new, left = {}, w
            for s in best:
                n = min(left, free[s] // g)
                if n:
                    new[s], left = n, left - n
            if len(new) <= need:
                p = new
        placement[j] = p
        for s, n in p.items():
            free[s] -= n * g


def _place_afresh(cl, adm, usable, targets, moving, stopped, heuristic: str = EXACT_WARM_START,
                  current: bool = False, admitted: set[int] | frozenset[int] | None = None):
    """The placement ``heuristic`` (best fit decreasing by default) for the ``moving`` jobs afresh (keeping their
    current workers where afresh leaves one out), every other job's GPUs held: those of unchanged and ``kept``
    jobs, none of ``stopped`` ones. The problem's servers are all the cluster's, in order (position = server
    index), those not ``usable`` with no free GPU: no worker goes there, the usable ones keep their order (the
    same placement as on the usable servers alone), and the answer needs no mapping back (a tenth of the step on
    50,000 jobs). Returns the placement problem and the heuristic's result; the problem holds the
    moving jobs' current workers (``cur_*``) when ``current`` is asked for (the placement ILP reads them), when the
    heuristic is not best fit decreasing, or when afresh left a worker out: best fit decreasing afresh
    (``keep_current=False``) reads none of them, and listing them was a tenth of the step on 50,000 jobs.
    O(S + entries of the moving and stopped jobs' placements; the admitted ones' not read where the admission
    counted their GPUs, ``Admitted.taken``) plus the heuristic's. ``targets``: the moving jobs' workers;
    ``admitted``: ``adm.admitted`` as a set, where the caller has it."""
    arrays = _afresh_arrays(cl, adm, usable, targets, moving, stopped, admitted)
    with_current = current or heuristic != EXACT_WARM_START
    # the current workers include the admitted jobs' (Admitted.placement makes their dicts where it has not yet)
    problem = PlacementProblem.trusted(**arrays, **(_current(adm.placement, moving) if with_current else {}))
    # the objective is not read here: evaluate=False spares its O(placement) on the hot path
    out = solve_placement(problem, method=heuristic, keep_current=False, evaluate=False)
    if out.status != Status.FEASIBLE:  # afresh left a worker out: keep current workers, as admitted
        if not with_current:
            problem = PlacementProblem.trusted(**arrays, **_current(adm.placement, moving))
        out = solve_placement(problem, method=heuristic, evaluate=False)
    return problem, out


def _afresh_arrays(cl, adm, usable, targets, moving, stopped, admitted) -> dict[str, np.ndarray]:
    """The placement problem's arrays of :func:`_place_afresh` (without current workers): the usable servers' free
    GPUs once the ``moving`` and ``stopped`` jobs gave theirs back, the loaned servers, the moving jobs' workers
    (``targets``), base demands and GPUs per worker. O(S + entries of the moving and stopped jobs' placements)."""
    # every job's GPUs after admission (kept from the scale step) less those of the jobs placed afresh or stopped
    # (``kept`` jobs, never among them, hold their placement after admission): O(moved), not O(jobs). The admitted
    # jobs (every one moves or stops) give back what admission counted for them (``adm.taken``) where it did
    before = adm.base  # every placement after admission but, where their dicts are not made, the admitted jobs'
    used = adm.used_after(cl).copy()
    movers = chain(moving, stopped)
    if adm.taken is not None and adm.admitted:  # (always where Admitted.made is given: base lacks their dicts)
        used -= adm.taken
        movers = filterfalse((frozenset(adm.admitted) if admitted is None else admitted).__contains__, movers)
    movers = list(movers)
    # the moving and stopped jobs that hold GPUs
    held = [j for j in movers if before[j]]
    if len(held) < _FEW_HELD:  # a loop over their entries: fewer numpy calls (a few microseconds a round)
        gpw = cl.gpw.tolist()
        for j in held:
            g = gpw[j]
            for s, n in before[j].items():
                used[s] -= n * g
    else:  # their servers and workers there, job after job, read by C-level chains
        places = [before[j] for j in held]
        on = np.fromiter(chain.from_iterable(places), np.int64)
        workers = np.fromiter(chain.from_iterable(map(dict.values, places)), np.int64, on.size)
        gpus = workers * np.repeat(cl.gpw[np.fromiter(held, np.int64, len(held))],
                                   np.fromiter(map(len, places), np.int64, len(places)))
        # a sum per server by one counting pass (np.subtract.at is several times slower): exact in float64, each
        # server's GPUs being far below 2**53
        used -= np.bincount(on, weights=gpus, minlength=used.shape[0]).astype(np.int64)
    # the arrays come from the validated snapshot and the steps before: build's arrays without its checks
    at = np.fromiter(moving, np.int64, len(moving))  # one conversion for both gathers
    return dict(server_free=np.where(usable, cl.gpus - used, 0), server_loaned=cl.kind != 0, job_workers=targets,
                job_base=cl.min_w[at], job_gpus_per_worker=cl.gpw[at])


#: Jobs giving back GPUs from which :func:`_place_afresh` reads their entries by numpy calls instead of a loop.
_FEW_HELD = 64


def _current(before, moving) -> dict[str, list[int]]:
    """The ``moving`` jobs' current workers as the placement problem's ``cur_job`` (position in ``moving``),
    ``cur_server`` and ``cur_count``. O(their entries)."""
    cj, cs, cc = [], [], []
    for i, j in enumerate(moving):
        for s, n in (before[j] or {}).items():
            cj.append(i)
            cs.append(s)
            cc.append(n)
    return dict(cur_job=cj, cur_server=cs, cur_count=cc)


def _spread_growths(cl, adm, servers, workers, moving, out) -> list[int]:
    """The running jobs that grow onto more servers than their new count needs (``ceil(w g / G)``, ``G`` the
    cluster's usual server size) and can keep their current placement (every server of it still usable); not
    jobs of the ``power`` throughput model, whose rate does not depend on the servers spanned (a spread growth
    costs them nothing, and undoing it would run less than the knapsack's optimum).
    O(sum of the moving jobs' servers)."""
    usable = {int(s) for s in servers}
    bad = []
    for i, j in enumerate(moving):
        cur = adm.base[j]
        if cur is None or j in adm.admitted or not set(cur) <= usable:
            continue
        if isinstance(cl.snap.jobs[j].throughput, PowerThroughput):  # its rate never depends on the servers
            continue
        w = int(workers[i])
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
        return per_job, StepReport(f"{EXACT_WARM_START}-fallback", "feasible")
    remap = {int(s): i for i, s in enumerate(keep)}
    sub = PlacementProblem.build(
        server_free=problem.server_free[keep], server_loaned=problem.server_loaned[keep], job_workers=out.placed,
        job_base=problem.job_base, job_gpus_per_worker=problem.job_gpus_per_worker, cur_job=problem.cur_job,
        cur_server=[remap[int(s)] for s in problem.cur_server], cur_count=problem.cur_count)
    res = solve_placement(sub, method="cpsat", time_limit=settings.left(), deterministic=settings.deterministic)
    if res.placement is None or res.status not in (Status.OPTIMAL, Status.FEASIBLE):
        log.warning("exact placement gave %s; keeping best fit decreasing", res.status)
        return per_job, StepReport(f"{EXACT_WARM_START}-fallback", "feasible")
    mapped = tuple(tuple((int(keep[s]), n) for s, n in pairs_) for pairs_ in res.placement.per_job)
    return mapped, StepReport.of(res, objective=None, bound=None)
