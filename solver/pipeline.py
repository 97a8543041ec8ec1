"""One scheduling round: snapshot in, decision out (DESIGN "Round pipeline").

:func:`decide` runs the steps in order, each a pure function of the state so far:

1. reclaim: give back ``inference.reclaim`` loaned servers at least cost (Lyra's greedy, or the exact ILP);
2. loan: borrow idle inference servers when queued or elastic work can use them;
3. admit: queued and just-preempted jobs get their base demand in queue order (training servers first); a
   job that does not fit in free GPUs may take the extra workers of running elastic jobs (base demand comes
   before elastic extras, as in Lyra);
4. scale: the GPUs left go to elastic jobs by a multiple-choice knapsack over the value table;
5. place: workers onto servers, best fit decreasing (or the placement ILP), keeping running jobs where they
   are unless their worker count changed.

Borrowed servers that end up hosting no worker are not borrowed. The output is a :class:`Decision` whose
bytes depend on the snapshot and the options only (timings are added only on request).

Running time of a heuristic round: O(S + J log J + H) for S servers, J jobs and H placement entries, plus the
allocation solver (the exact MCKP core is typically milliseconds on 5,000 classes).

References
----------
Li et al., "Lyra: Elastic Scheduling for Deep Learning Clusters", EuroSys 2023 (capacity loaning, server
preemption cost, JCT-reduction values, knapsack-driven scaling).
"""
from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np
from lyra_solver.formulations import Status
from lyra_solver.formulations.mckp import MCKPProblem, solve_mckp
from lyra_solver.formulations.problems import PlacementProblem, ReclaimProblem
from lyra_solver.heuristics.placement import FreeIndex, best_fit_decreasing
from lyra_solver.heuristics.queue import queue_order
from lyra_solver.heuristics.reclaim import greedy_reclaim
from lyra_solver.types import Decision, JobDecision, ServerDecision, Snapshot, Summary
from lyra_solver.values import JobOptions, ValueTable, value_table

log = logging.getLogger(__name__)

TRAINING, LOANED, BORROWED = 0, 1, 2  # placement tiers of usable servers


@dataclass(frozen=True)
class Settings:
    """The options of one round (snapshot ``options`` overridden by keyword arguments)."""

    queue: str
    allocation: str
    reclaim: str
    placement: str
    packing: str
    time_limit: float
    timings: bool = False


@dataclass(frozen=True, eq=False)
class Cluster:
    """Index view of a snapshot: servers and jobs by position, placements as ``{server index: workers}``."""

    snap: Snapshot
    sid: dict[str, int]
    gpus: np.ndarray
    kind: np.ndarray  # 0 training, 1 loaned, 2 idle, 3 serving
    gpw: np.ndarray
    min_w: np.ndarray
    max_w: np.ndarray
    placement: tuple[dict[int, int] | None, ...]
    server_gpus: int

    @classmethod
    def of(cls, snap: Snapshot) -> Cluster:
        kinds = {"loaned": 1, "idle": 2, "serving": 3}
        sid = {s.id: i for i, s in enumerate(snap.servers)}
        gpus = np.fromiter((s.gpus for s in snap.servers), np.int64, len(snap.servers))
        kind = np.fromiter((0 if s.pool == "training" else kinds[s.state] for s in snap.servers), np.int8,
                           len(snap.servers))
        n = len(snap.jobs)
        mode = Counter(gpus.tolist()).most_common()
        server_gpus = max((g for g, c in mode if c == mode[0][1]), default=8)
        return cls(
            snap=snap, sid=sid, gpus=gpus, kind=kind,
            gpw=np.fromiter((j.gpus_per_worker for j in snap.jobs), np.int64, n),
            min_w=np.fromiter((j.min_workers for j in snap.jobs), np.int64, n),
            max_w=np.fromiter((j.max_workers for j in snap.jobs), np.int64, n),
            placement=tuple(None if j.placement is None else {sid[k]: v for k, v in j.placement.items()}
                            for j in snap.jobs),
            server_gpus=int(server_gpus),
        )


@dataclass(frozen=True)
class StepReport:
    method: str
    status: str
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None


# ----------------------------------------------------------------------------------------------- 1. reclaim
@dataclass(frozen=True, eq=False)
class Reclaimed:
    servers: tuple[int, ...]  # server indices given back
    placement: tuple[dict[int, int] | None, ...]  # running jobs after the reclaim (None: not running)
    preempted: tuple[int, ...]
    shrunk: frozenset[int]
    report: StepReport


def reclaim_step(cl: Cluster, settings: Settings) -> Reclaimed:
    """Choose the loaned servers to give back and apply it: shrink or preempt the jobs on them."""
    loaned = np.flatnonzero(cl.kind == 1)
    k = min(cl.snap.inference.reclaim, int(loaned.size))
    if k == 0:
        return Reclaimed((), cl.placement, (), frozenset(), StepReport("none", "optimal", 0.0, 0.0, 0.0))
    pos = {int(s): i for i, s in enumerate(loaned)}
    touched, hj, hs, hc = {}, [], [], []
    for j, pl in enumerate(cl.placement):
        if pl is None:
            continue
        for s, n in pl.items():
            if s in pos:
                hj.append(touched.setdefault(j, len(touched)))
                hs.append(pos[s])
                hc.append(n)
    jobs = list(touched)
    problem = ReclaimProblem.build(
        server_gpus=cl.gpus[loaned], job_workers=[sum(cl.placement[j].values()) for j in jobs],
        job_min=cl.min_w[jobs], job_gpus_per_worker=cl.gpw[jobs],
        restart_cost=[cl.snap.jobs[j].restart_penalty for j in jobs],
        preempt_cost=[cl.snap.jobs[j].preemption_penalty for j in jobs],
        host_job=hj, host_server=hs, host_count=hc, count=k)
    res = None
    if settings.reclaim == "exact":
        from lyra_solver.formulations.reclaim import solve_reclaim

        res = solve_reclaim(problem, method="cpsat", time_limit=settings.time_limit)
        if res.status not in (Status.OPTIMAL, Status.FEASIBLE):
            log.warning("exact reclaim gave %s; falling back to greedy", res.status)
            res = None
    if res is None:
        res = greedy_reclaim(problem)
    back = tuple(sorted(int(loaned[i]) for i in res.servers))
    gone = set(back)
    placement = list(cl.placement)
    preempted, shrunk = [], set()
    for j in jobs:
        pl = cl.placement[j]
        left = {s: n for s, n in pl.items() if s not in gone}
        if len(left) == len(pl):
            continue
        if sum(left.values()) >= cl.min_w[j]:
            placement[j] = left
            shrunk.add(j)
        else:
            placement[j] = None
            preempted.append(j)
    report = StepReport(res.method, str(res.status), res.objective, res.bound, res.gap)
    return Reclaimed(back, tuple(placement), tuple(sorted(preempted)), frozenset(shrunk), report)


# ----------------------------------------------------------------------------------------------- 2. loan
def used_gpus(cl: Cluster, placement) -> np.ndarray:
    used = np.zeros(cl.gpus.shape[0], dtype=np.int64)
    for j, pl in enumerate(placement):
        if pl:
            for s, n in pl.items():
                used[s] += n * cl.gpw[j]
    return used


def loan_step(cl: Cluster, rec: Reclaimed, queued: list[int]) -> tuple[int, ...]:
    """Idle inference servers to borrow: as many as the demand beyond free capacity needs.

    Demand: base demand of queued jobs plus what elastic jobs could still add. Largest servers first, then
    snapshot order. Servers that end up unused are dropped after placement.
    """
    idle = [int(s) for s in np.flatnonzero(cl.kind == 2)]
    if not idle:
        return ()
    usable = usable_servers(cl, rec, ())
    free = int((cl.gpus - used_gpus(cl, rec.placement))[usable].sum())
    demand = 0
    for j in queued:
        demand += int(cl.max_w[j] * cl.gpw[j])
    for j, pl in enumerate(rec.placement):
        if pl:
            demand += int((cl.max_w[j] - sum(pl.values())) * cl.gpw[j])
    deficit = demand - free
    borrowed = []
    for s in sorted(idle, key=lambda s: (-int(cl.gpus[s]), s)):
        if deficit <= 0:
            break
        borrowed.append(s)
        deficit -= int(cl.gpus[s])
    return tuple(sorted(borrowed))


# ----------------------------------------------------------------------------------------------- 3. admit
@dataclass(frozen=True, eq=False)
class Admitted:
    placement: tuple[dict[int, int] | None, ...]  # running + admitted jobs (admitted at base demand)
    admitted: tuple[int, ...]
    donors: frozenset[int]  # running jobs that gave workers to admitted ones


def admit_step(cl: Cluster, rec: Reclaimed, borrowed: tuple[int, ...], queued: list[int],
               settings: Settings, times_min: dict[int, float]) -> Admitted:
    """Base demand of queued jobs in queue order; training servers first, then loaned, then borrowed."""
    snap = cl.snap
    order = queue_order(
        settings.queue,
        submit_time=[snap.jobs[j].submit_time for j in queued],
        min_time=[times_min[j] for j in queued],
        attained_service=[snap.jobs[j].attained_service for j in queued],
    )
    usable = usable_servers(cl, rec, borrowed)
    tier = np.full(cl.gpus.shape[0], -1, dtype=np.int64)
    tier[cl.kind == 0] = TRAINING
    tier[cl.kind == 1] = LOANED
    tier[list(borrowed)] = BORROWED
    tier[~usable] = -1
    free = np.where(usable, cl.gpus - used_gpus(cl, rec.placement), 0)
    index = FreeIndex(free, np.maximum(tier, 0), 3)
    placement = list(rec.placement)
    admitted, failed = [], []
    tiers = (TRAINING, LOANED, BORROWED)
    for q in order:
        j = queued[int(q)]
        n, g = int(cl.min_w[j]), int(cl.gpw[j])
        if index.capacity(g, tiers) >= n:
            out: dict[int, int] = {}
            index.place(n, g, tiers, out)
            placement[j] = out
            admitted.append(j)
        else:
            failed.append(j)
    donors: set[int] = set()
    if failed:
        pool = _DonorPool(cl, np.array(index.free, dtype=np.int64), tier, placement)
        for j in failed:
            out = pool.admit(j)
            if out is not None:
                placement[j] = out
                admitted.append(j)
        donors = pool.donors
    return Admitted(tuple(placement), tuple(admitted), frozenset(donors))


class _DonorPool:
    """Free GPUs plus the extra workers of running elastic jobs, for admitting base demand by donation.

    Local mutable state of :func:`admit_step` only. ``room[s]`` bounds what server ``s`` can offer (free GPUs
    plus its donors' removable workers); ``total`` is the exact GPUs offered cluster-wide, so a job that
    cannot fit is rejected in O(1).
    """

    def __init__(self, cl: Cluster, free: np.ndarray, tier: np.ndarray, placement: list) -> None:
        self.cl, self.free, self.tier, self.placement = cl, free, tier, placement
        self.usable = np.flatnonzero(tier >= 0)
        self.spare: dict[int, int] = {}
        self.hosts: dict[int, list[int]] = {}
        for d, pl in enumerate(placement):
            if pl and cl.snap.jobs[d].placement is not None:
                extra = sum(pl.values()) - int(cl.min_w[d])
                if extra > 0:
                    self.spare[d] = extra
                    for srv in pl:
                        self.hosts.setdefault(srv, []).append(d)
        self.room = free.copy()
        for srv, ds in self.hosts.items():
            self.room[srv] += sum(min(self.spare[d], placement[d].get(srv, 0)) * int(cl.gpw[d]) for d in ds)
        self.total = int(free[self.usable].sum()) + sum(e * int(cl.gpw[d]) for d, e in self.spare.items())
        self.donors: set[int] = set()

    def _refresh(self, servers) -> None:
        for srv in servers:
            self.room[srv] = self.free[srv] + sum(
                min(self.spare[d], self.placement[d].get(srv, 0)) * int(self.cl.gpw[d])
                for d in self.hosts.get(srv, ()))

    def admit(self, j: int) -> dict[int, int] | None:
        """Place job ``j``'s base demand (all or nothing), taking donors' extra workers where needed."""
        cl = self.cl
        n, g = int(cl.min_w[j]), int(cl.gpw[j])
        if n * g > self.total:
            return None
        cand = self.usable[self.room[self.usable] >= g]
        cand = cand[np.lexsort((cand, -self.room[cand], self.tier[cand]))]
        free = {}
        changed: dict[int, dict[int, int]] = {}
        spare = {}
        out: dict[int, int] = {}
        left = n
        for srv in cand.tolist():
            f = free.get(srv, int(self.free[srv]))
            while left > 0:
                if f >= g:
                    f -= g
                    out[srv] = out.get(srv, 0) + 1
                    left -= 1
                    continue
                # free one more worker of a donor here: the donor with most spare, then lowest index
                best = None
                for d in self.hosts.get(srv, ()):
                    sp = spare.get(d, self.spare[d])
                    if sp > 0 and changed.get(d, self.placement[d]).get(srv, 0) > 0 and (
                            best is None or (-sp, d) < best[0]):
                        best = ((-sp, d), d)
                if best is None:
                    break
                d = best[1]
                pl = dict(changed.get(d, self.placement[d]))
                pl[srv] -= 1
                if pl[srv] == 0:
                    del pl[srv]
                changed[d] = pl
                spare[d] = spare.get(d, self.spare[d]) - 1
                f += int(cl.gpw[d])
            free[srv] = f
            if left == 0:
                break
        if left > 0:
            return None
        touched = set(free)
        for srv, f in free.items():
            self.free[srv] = f
        for d, pl in changed.items():
            touched.update(self.placement[d])
            self.placement[d] = pl
            self.spare[d] = spare[d]
            self.donors.add(d)
        self.total -= n * g
        self._refresh(touched)
        return out


# ----------------------------------------------------------------------------------------------- 4. scale
@dataclass(frozen=True, eq=False)
class Scaled:
    jobs: tuple[int, ...]  # the jobs that run (running kept + admitted), in job order
    table: ValueTable
    targets: np.ndarray  # workers per entry of ``jobs``
    report: StepReport


def scale_step(cl: Cluster, adm: Admitted, rec: Reclaimed, borrowed: tuple[int, ...], settings: Settings) -> Scaled:
    """Split the GPUs left after admission among elastic jobs: MCKP over the value table."""
    snap = cl.snap
    jobs = tuple(j for j, pl in enumerate(adm.placement) if pl)
    admitted = set(adm.admitted)
    cur = {j: 0 if j in admitted else sum(adm.placement[j].values()) for j in jobs}
    extra_gpus = sum((c - snap.jobs[j].min_workers) * snap.jobs[j].gpus_per_worker for j, c in cur.items() if c)
    usable = usable_servers(cl, rec, borrowed)
    capacity = int((cl.gpus - used_gpus(cl, adm.placement))[usable].sum()) + extra_gpus
    opts = []
    for j in jobs:
        job, c = snap.jobs[j], cur[j]
        untouched = c > 0 and j not in rec.shrunk and j not in adm.donors
        # a donor gave extra workers to base demand this round: it does not grow back in the same round;
        # options heavier than the whole capacity can never be chosen (lossless cut of the table's width)
        top = c if j in adm.donors else min(job.max_workers, job.min_workers + capacity // job.gpus_per_worker)
        opts.append(JobOptions(job.throughput, job.min_workers, top, job.remaining_work,
                               job.gpus_per_worker, c, job.restart_penalty if untouched else 0.0))
    if not jobs:
        empty = np.zeros((0, 1))
        return Scaled((), ValueTable(empty, empty.astype(np.int64), empty, np.zeros(0, np.int64),
                                     np.zeros(0, np.int64)), np.zeros(0, np.int64), StepReport("none", "optimal"))
    table = value_table(opts, server_gpus=cl.server_gpus)
    elastic = np.flatnonzero(table.sizes > 1)
    targets = table.min_workers.copy()
    if elastic.size == 0:
        return Scaled(jobs, table, targets, StepReport("none", "optimal", 0.0, 0.0, 0.0))
    problem = MCKPProblem.from_padded(table.weights[elastic], np.where(np.isfinite(table.values[elastic]),
                                                                       table.values[elastic], 0.0),
                                      table.sizes[elastic], capacity)
    method = {"exact": "auto", "greedy": "greedy", "hull": "hull"}[settings.allocation]
    res = solve_mckp(problem, method=method, time_limit=settings.time_limit)
    if res.choice is None:
        log.warning("allocation %s gave %s; falling back to the convex-hull greedy", method, res.status)
        res = solve_mckp(problem, method="hull")
    targets[elastic] += np.asarray(res.choice, dtype=np.int64)
    report = StepReport(f"mckp-{res.method}", str(res.status), res.objective, res.bound, res.gap)
    return Scaled(jobs, table, targets, report)


def usable_servers(cl: Cluster, rec: Reclaimed, borrowed: tuple[int, ...]) -> np.ndarray:
    """Mask of the servers training may use this round: training, loaned and kept, or borrowed."""
    mask = cl.kind <= 1
    mask[list(rec.servers)] = False
    mask[list(borrowed)] = True
    return mask


# ----------------------------------------------------------------------------------------------- 5. place
@dataclass(frozen=True, eq=False)
class Placed:
    placement: tuple[dict[int, int] | None, ...]
    report: StepReport


def place_step(cl: Cluster, adm: Admitted, sc: Scaled, rec: Reclaimed, borrowed: tuple[int, ...],
               settings: Settings) -> Placed:
    """Workers onto servers. Jobs whose count is unchanged keep their placement; the others are placed
    best fit decreasing (or by the placement ILP), keeping what they have where they can."""
    admitted = set(adm.admitted)
    target = dict(zip(sc.jobs, sc.targets.tolist(), strict=True))
    moving = [j for j in sc.jobs if j in admitted or target[j] != sum(adm.placement[j].values())]
    moving_set = set(moving)
    servers = np.flatnonzero(usable_servers(cl, rec, borrowed))
    pos = {int(s): i for i, s in enumerate(servers)}
    used = used_gpus(cl, [None if j in moving_set else p for j, p in enumerate(adm.placement)])
    cj, cs, cc = [], [], []
    for i, j in enumerate(moving):
        for s, n in adm.placement[j].items():
            cj.append(i)
            cs.append(pos[s])
            cc.append(n)
    problem = PlacementProblem.build(
        server_free=(cl.gpus - used)[servers], server_loaned=cl.kind[servers] != 0,
        job_workers=[target[j] for j in moving], job_base=cl.min_w[moving], job_gpus_per_worker=cl.gpw[moving],
        cur_job=cj, cur_server=cs, cur_count=cc)
    out = best_fit_decreasing(problem)
    per_job = out.placement.per_job
    report = StepReport("bfd", "feasible")
    if settings.placement == "exact" and moving:
        per_job, report = _exact_placement(problem, out, per_job, report, settings)
    placement = list(adm.placement)
    for i, j in enumerate(moving):
        placement[j] = {int(servers[s]): int(n) for s, n in per_job[i] if n > 0}
    return Placed(tuple(placement), report)


EXACT_PLACEMENT_MAX_PAIRS = 50_000  # job x server pairs beyond which the placement ILP is not attempted


def _exact_placement(problem: PlacementProblem, out, per_job, report: StepReport, settings: Settings):
    """The placement ILP on the servers that can take a worker (lossless: a full server takes none), with
    best fit decreasing's worker counts; keeps the BFD answer when the ILP has none or is too large."""
    from lyra_solver.formulations.placement import solve_placement

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
    res = solve_placement(sub, method="cpsat", time_limit=settings.time_limit)
    if res.placement is None or res.status not in (Status.OPTIMAL, Status.FEASIBLE):
        log.warning("exact placement gave %s; keeping best fit decreasing", res.status)
        return per_job, StepReport("bfd-fallback", "feasible")
    mapped = tuple(tuple((int(keep[s]), n) for s, n in pairs_) for pairs_ in res.placement.per_job)
    return mapped, StepReport(res.method, str(res.status), None, None, res.gap)


# ----------------------------------------------------------------------------------------------- decide
def settings_of(snap: Snapshot, **overrides) -> Settings:
    o = snap.options
    base = dict(queue=o.queue, allocation=o.allocation, reclaim=o.reclaim, placement=o.placement,
                packing=o.packing, time_limit=o.time_limit)
    base.update({k: v for k, v in overrides.items() if v is not None})
    return Settings(**base)


def decide(snapshot: Snapshot, *, queue: str | None = None, allocation: str | None = None,
           reclaim: str | None = None, placement: str | None = None, packing: str | None = None,
           time_limit: float | None = None, timings: bool = False) -> Decision:
    """One scheduling round: the decision for ``snapshot`` (already validated).

    Keyword arguments override the snapshot's ``options``. ``timings=True`` adds ``summary.time_s`` (which
    makes the output differ from run to run).
    """
    if not isinstance(snapshot, Snapshot):
        raise TypeError(f"decide: snapshot must be a lyra_solver.Snapshot (from parse_snapshot or load_snapshot), "
                        f"got {type(snapshot).__name__}")
    t0 = time.perf_counter()
    settings = settings_of(snapshot, queue=queue, allocation=allocation, reclaim=reclaim,
                           placement=placement, packing=packing, time_limit=time_limit)
    cl = Cluster.of(snapshot)
    rec = reclaim_step(cl, settings)
    log.info("reclaim: %d servers back (%s, %s), %d jobs shrunk, %d preempted", len(rec.servers),
             rec.report.method, rec.report.status, len(rec.shrunk), len(rec.preempted))
    queued = [j for j, pl in enumerate(rec.placement) if pl is None]
    times_min = _times_at_min(cl, queued)
    borrowed = loan_step(cl, rec, queued)
    log.info("loan: %d idle servers offered", len(borrowed))
    adm = admit_step(cl, rec, borrowed, queued, settings, times_min)
    log.info("admit: %d of %d queued jobs (%s), %d donors", len(adm.admitted), len(queued), settings.queue,
             len(adm.donors))
    sc = scale_step(cl, adm, rec, borrowed, settings)
    log.info("scale: %s %s, objective %s, bound %s", sc.report.method, sc.report.status, sc.report.objective,
             sc.report.bound)
    pl = place_step(cl, adm, sc, rec, borrowed, settings)
    log.info("place: %s %s", pl.report.method, pl.report.status)
    return _decision(cl, rec, borrowed, adm, sc, pl, settings, time.perf_counter() - t0 if timings else None)


def _times_at_min(cl: Cluster, jobs: list[int]) -> dict[int, float]:
    if not jobs:
        return {}
    snap = cl.snap
    opts = [JobOptions(snap.jobs[j].throughput, snap.jobs[j].min_workers, snap.jobs[j].min_workers,
                       snap.jobs[j].remaining_work, snap.jobs[j].gpus_per_worker) for j in jobs]
    t = value_table(opts, server_gpus=cl.server_gpus).times[:, 0]
    return dict(zip(jobs, t.tolist(), strict=True))


def _decision(cl: Cluster, rec: Reclaimed, borrowed, adm: Admitted, sc: Scaled, pl: Placed, settings: Settings,
              elapsed: float | None) -> Decision:
    snap = cl.snap
    ids = [s.id for s in snap.servers]
    hosting = set()
    for p in pl.placement:
        if p:
            hosting.update(p)
    jobs: dict[str, JobDecision] = {}
    preemptions = 0
    jct = 0.0
    row = {j: i for i, j in enumerate(sc.jobs)}
    for j, job in enumerate(snap.jobs):
        p = pl.placement[j]
        if p:
            w = sum(p.values())
            named = {ids[s]: n for s, n in sorted(p.items())}
            changed = job.placement is None or named != dict(sorted(job.placement.items()))
            jobs[job.id] = JobDecision(action="run", workers=w, placement=named, changed=changed)
            i = row[j]
            jct += float(sc.table.values[i, w - job.min_workers])
        elif job.placement is not None:
            jobs[job.id] = JobDecision(action="preempt")
            preemptions += 1
        else:
            jobs[job.id] = JobDecision(action="wait")
    loan = [ids[s] for s in borrowed if s in hosting]
    reports = {"reclaim": rec.report, "allocation": sc.report, "placement": pl.report}
    summary = Summary(
        jct_reduction=round(jct, 6),
        preemptions=preemptions,
        methods={k: r.method for k, r in reports.items()},
        optimality_gap=sc.report.gap,
        bound=sc.report.bound,
        statuses={k: r.status for k, r in reports.items()},
        time_s=None if elapsed is None else round(elapsed, 6),
    )
    return Decision(format_version=1, servers=ServerDecision(reclaim=[ids[s] for s in rec.servers], loan=loan),
                    jobs=jobs, summary=summary)
