"""One scheduling round: snapshot in, decision out (DESIGN "Round pipeline").

:func:`decide` runs the steps in order, each a pure function of the state so far:

1. reclaim: give back ``inference.reclaim`` loaned servers at least cost (Lyra's greedy, or the exact ILP);
2. loan: borrow idle inference servers when queued or elastic work can use them;
3. admit: queued and just-preempted jobs get their base demand in queue order (training servers first); a
   job that does not fit in free GPUs may take the extra workers of running elastic jobs (base demand comes
   before elastic extras, as in Lyra);
4. scale: the GPUs left go to elastic jobs by a multiple-choice knapsack over the value table;
5. place: workers onto servers, best fit decreasing (or the placement ILP), keeping running jobs where they
   are unless their worker count changed;
6. pack: jobs still waiting may share GPUs with running jobs (:mod:`lyra_solver.packing`; ``off`` by default).

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

import bisect
import dataclasses
import functools
import gc
import logging
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec
import numpy as np
from lyra_solver.errors import InputError
from lyra_solver.formulations import SolveResult, Status, relative_gap
from lyra_solver.formulations.mckp import MCKPProblem, solve_mckp
from lyra_solver.formulations.placement import PlacementProblem
from lyra_solver.formulations.reclaim import ReclaimProblem
from lyra_solver.formulations.vocabulary import (
    ALLOCATION_METHOD,
    ALLOCATIONS,
    PACKING_POLICIES,
    PACKINGS,
    PLACEMENTS,
    QUEUE_ORDERS,
    RECLAIMS,
    SERVER_STATES,
    Allocation,
    Packing,
    PackingPolicy,
    PlacementOption,
    QueueOrder,
    ReclaimOption,
    ServerKind,
    Tier,
    check_option,
)
from lyra_solver.heuristics.placement import FreeIndex, best_fit_decreasing
from lyra_solver.heuristics.queue import queue_order
from lyra_solver.heuristics.reclaim import greedy_reclaim
from lyra_solver.packing import pack_step
from lyra_solver.types import Decision, JobDecision, PackingGroup, ServerDecision, Snapshot, Summary
from lyra_solver.validate import check_keep_packing, validate_snapshot
from lyra_solver.values import BACKENDS, TIME_CAP, JobOptions, ValueTable, lp_bound, option_grid, value_table

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class Settings:
    """The options of one round (snapshot ``options`` overridden by keyword arguments)."""

    queue: QueueOrder
    allocation: Allocation
    reclaim: ReclaimOption
    placement: PlacementOption
    packing: Packing
    time_limit: float
    timings: bool = False
    packing_policy: PackingPolicy = "jct"
    backend: str = "auto"  # value-table backend (values.BACKENDS)
    #: exact steps on deterministic limits (CP-SAT's deterministic time, the MCKP core's memory limit) instead
    #: of wall time: the same answer whatever the machine's load (README "Limits")
    deterministic: bool = False
    #: ``time.perf_counter()`` by which the round's exact steps stop (wall clock; not used when deterministic)
    deadline: float = math.inf

    def left(self) -> float:
        """Seconds an exact step may use now: what is left of the round's ``time_limit`` (at least 1 ms)."""
        if self.deterministic or self.deadline == math.inf:
            return self.time_limit
        return max(min(self.time_limit, self.deadline - time.perf_counter()), 0.001)


#: Each option of :func:`decide` and the vocabulary it takes its value from.
OPTION_VALUES: dict[str, tuple[str, ...]] = {
    "queue": QUEUE_ORDERS, "allocation": ALLOCATIONS, "reclaim": RECLAIMS, "placement": PLACEMENTS,
    "packing": PACKINGS, "packing_policy": PACKING_POLICIES,
}


@dataclass(frozen=True, eq=False)
class Cluster:
    """Index view of a snapshot: servers and jobs by position, placements as ``{server index: workers}``."""

    snap: Snapshot
    sid: dict[str, int]
    gpus: np.ndarray
    kind: np.ndarray  # ServerKind codes
    gpw: np.ndarray
    min_w: np.ndarray
    max_w: np.ndarray
    placement: tuple[dict[int, int] | None, ...]
    server_gpus: int

    @classmethod
    def of(cls, snap: Snapshot) -> Cluster:
        codes = {state: int(ServerKind[state.upper()]) for state in SERVER_STATES}
        sid = {s.id: i for i, s in enumerate(snap.servers)}
        gpus = np.fromiter((s.gpus for s in snap.servers), np.int64, len(snap.servers))
        kind = np.fromiter((ServerKind.TRAINING if s.pool == "training" else codes[s.state]
                            for s in snap.servers), np.int8, len(snap.servers))
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
    """What a step tells the decision summary: the method, its status and, where known, objective, bound, gap."""

    method: str
    status: str
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None

    @classmethod
    def of(cls, result: SolveResult, **overrides) -> StepReport:
        """The report of a solver's result (any family's :class:`SolveResult`), fields overridden by keyword."""
        fields = dict(method=result.method, status=str(result.status), objective=result.objective,
                      bound=result.bound, gap=result.gap)
        fields.update(overrides)
        return cls(**fields)


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
    loaned = np.flatnonzero(cl.kind == ServerKind.LOANED)
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

        res = solve_reclaim(problem, method="cpsat", time_limit=settings.left(), deterministic=settings.deterministic)
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
    report = StepReport.of(res)
    return Reclaimed(back, tuple(placement), tuple(sorted(preempted)), frozenset(shrunk), report)


# ----------------------------------------------------------------------------------------------- 2. loan
def used_gpus(cl: Cluster, placement) -> np.ndarray:
    """GPUs used on each server by the placements given (``None``: a job not running)."""
    used = [0] * cl.gpus.shape[0]
    for g, pl in zip(cl.gpw.tolist(), placement, strict=True):
        if pl:
            for s, n in pl.items():
                used[s] += n * g
    return np.array(used, dtype=np.int64)


def loan_step(cl: Cluster, rec: Reclaimed, queued: list[int], used: np.ndarray) -> tuple[int, ...]:
    """Idle inference servers to borrow: as many as the demand beyond free capacity needs.

    Demand: base demand of queued jobs plus what elastic jobs could still add. Largest servers first, then
    snapshot order. Servers that end up unused are dropped after placement.
    """
    idle = [int(s) for s in np.flatnonzero(cl.kind == ServerKind.IDLE)]
    if not idle:
        return ()
    usable = usable_servers(cl, rec, ())
    free = int((cl.gpus - used)[usable].sum())
    max_w, gpw = cl.max_w.tolist(), cl.gpw.tolist()
    demand = 0
    for j in queued:
        demand += max_w[j] * gpw[j]
    for j, pl in enumerate(rec.placement):
        if pl:
            demand += (max_w[j] - sum(pl.values())) * gpw[j]
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


ADMIT_TIERS = (Tier.TRAINING, Tier.LOANED, Tier.BORROWED)  # base demand prefers training servers


def admit_step(cl: Cluster, reclaimed: Reclaimed, borrowed: tuple[int, ...], queued: list[int],
               settings: Settings, times_min: dict[int, float], used: np.ndarray) -> Admitted:
    """Base demand of queued jobs in queue order; training servers first, then loaned, then borrowed.

    Two passes, as in Lyra (base demand before elastic extras):

    1. free GPUs only: each job in queue order gets its ``min_workers`` (all or nothing) by
       :meth:`FreeIndex.place` when the free GPUs of the usable servers can hold them;
    2. donation: the jobs that did not fit, in queue order again, may also take the extra workers (above
       ``min_workers``) of jobs that were running before the round (:class:`_Donation`). A donor keeps at least
       its ``min_workers``, and does not grow back in this round's scaling.

    Running time: O(Q log Q + Q G) for the first pass (Q queued jobs, G the largest free GPU count); the second
    pass rejects a job that cannot fit in O(G) from bounds kept per GPU size, and scans servers in order only
    for a job that may fit.
    """
    snap = cl.snap
    order = queue_order(
        settings.queue,
        submit_time=[snap.jobs[j].submit_time for j in queued],
        min_time=[times_min[j] for j in queued],
        attained_service=[snap.jobs[j].attained_service for j in queued],
    )
    usable = usable_servers(cl, reclaimed, borrowed)
    tier = np.full(cl.gpus.shape[0], -1, dtype=np.int64)
    tier[cl.kind == ServerKind.TRAINING] = Tier.TRAINING
    tier[cl.kind == ServerKind.LOANED] = Tier.LOANED
    tier[list(borrowed)] = Tier.BORROWED
    tier[~usable] = -1
    free = np.where(usable, cl.gpus - used, 0)
    index = FreeIndex(free, np.maximum(tier, 0), len(ADMIT_TIERS))
    placement = list(reclaimed.placement)
    admitted: list[int] = []
    waiting: list[int] = []
    capacity: dict[int, int] = {}  # workers of g GPUs that the free GPUs hold; valid until the next placement
    min_w, gpw = cl.min_w.tolist(), cl.gpw.tolist()
    for q in order.tolist():
        j = queued[q]
        n, g = min_w[j], gpw[j]
        if g not in capacity:
            capacity[g] = index.capacity(g, ADMIT_TIERS)
        if capacity[g] >= n:
            workers: dict[int, int] = {}
            index.place(n, g, ADMIT_TIERS, workers)
            placement[j] = workers
            admitted.append(j)
            capacity.clear()
        else:
            waiting.append(j)
    if not waiting:
        return Admitted(tuple(placement), tuple(admitted), frozenset())
    donation = _Donation(cl, index.free, tier.tolist(), placement)
    for j in waiting:
        n, g = min_w[j], gpw[j]
        if n * g > donation.total:  # the O(1) rejection of _Donation.admit, without the call
            continue
        workers = donation.admit(n, g)
        if workers is not None:
            placement[j] = workers
            admitted.append(j)
    for d, donor_placement in donation.donor_placement.items():
        placement[d] = donor_placement
    return Admitted(tuple(placement), tuple(admitted), frozenset(donation.gave))


@dataclass(eq=False)
class _Tentative:
    """What one admission has taken so far, over the donation state: committed only if the job fits whole.

    ``free`` holds the free GPUs of each server scanned, ``placement`` and ``spare`` the shrunk placement and
    the extra workers left of each donor that gave a worker.
    """

    free: dict[int, int] = field(default_factory=dict)
    placement: dict[int, dict[int, int]] = field(default_factory=dict)
    spare: dict[int, int] = field(default_factory=dict)
    workers: dict[int, int] = field(default_factory=dict)  # the admitted job's workers per server


class _Donation:
    """Free GPUs plus the extra workers of jobs running before the round, offered to base demand.

    Owned by :func:`admit_step` for one round; it takes the free GPUs and the placements at the end of the
    first pass and keeps its own copies (the step reads the donors' new placements from ``donor_placement``).

    A job's base demand is placed all or nothing, scanning servers by tier, then most room, then index, where
    ``room[s]`` is what server ``s`` could offer: its free GPUs plus the workers its donors could give there.
    On a server, free GPUs are used first; when fewer than a worker's GPUs are free, one more worker is taken
    from the donor there with most extra workers left (then the lowest job index), and so on.

    Rejection in O(G) for a job that cannot fit: ``total`` is the GPUs offered cluster-wide (free plus every
    donor's extra workers), and ``room_count[r]`` the number of usable servers with room ``r``, so
    ``sum_r room_count[r] * (r // g)`` bounds the workers of ``g`` GPUs that any scan can place.
    """

    def __init__(self, cl: Cluster, free: list[int], tier: list[int], placement: list) -> None:
        self.gpw = cl.gpw.tolist()
        self.free = list(free)
        self.tier = tier
        self.donor_placement: dict[int, dict[int, int]] = {}
        self.spare: dict[int, int] = {}
        self.hosts: dict[int, list[int]] = {}
        self.gave: set[int] = set()
        min_w = cl.min_w.tolist()
        for d, pl in enumerate(placement):
            if pl and cl.snap.jobs[d].placement is not None:
                extra = sum(pl.values()) - min_w[d]
                if extra > 0:
                    self.donor_placement[d] = dict(pl)
                    self.spare[d] = extra
                    for s in pl:
                        self.hosts.setdefault(s, []).append(d)
        usable = [s for s, t in enumerate(tier) if t >= 0]
        self.total = sum(self.free[s] for s in usable) + sum(e * self.gpw[d] for d, e in self.spare.items())
        self.room = [0] * len(tier)
        self.top = 0
        for s in usable:
            self.room[s] = self._room_of(s)
            self.top = max(self.top, self.room[s])
        # servers by (tier, room), each bucket in increasing index: the scan order without sorting
        self.buckets = [[[] for _ in range(self.top + 1)] for _ in ADMIT_TIERS]
        self.room_count = [0] * (self.top + 1)
        for s in usable:
            self.buckets[tier[s]][self.room[s]].append(s)
            self.room_count[self.room[s]] += 1
        self.bound: dict[int, int] = {}  # workers of g GPUs at most, per g; valid until the next commit

    def _room_of(self, s: int) -> int:
        return self.free[s] + sum(min(self.spare[d], self.donor_placement[d].get(s, 0)) * self.gpw[d]
                                  for d in self.hosts.get(s, ()))

    def admit(self, n: int, g: int) -> dict[int, int] | None:
        """Place ``n`` workers of ``g`` GPUs (all or nothing), taking donors' extra workers where needed."""
        if n * g > self.total:
            return None
        if g not in self.bound:
            self.bound[g] = sum(c * (r // g) for r, c in enumerate(self.room_count) if r >= g)
        if n > self.bound[g]:
            return None
        trial = _Tentative()
        left = n
        for s in self._scan_order(g):
            left = self._fill(s, g, left, trial)
            if left == 0:
                self._commit(trial, n * g)
                return trial.workers
        return None

    def _scan_order(self, g: int):
        for by_room in self.buckets:
            for r in range(self.top, g - 1, -1):
                yield from by_room[r]

    def _fill(self, s: int, g: int, left: int, trial: _Tentative) -> int:
        """Put workers on server ``s`` until ``left`` are placed or nothing more frees up; return what is left."""
        free = self.free[s]
        while left > 0:
            if free >= g:
                free -= g
                trial.workers[s] = trial.workers.get(s, 0) + 1
                left -= 1
                continue
            donor = self._donor_on(s, trial)
            if donor is None:
                break
            shrunk = dict(trial.placement.get(donor, self.donor_placement[donor]))
            shrunk[s] -= 1
            if shrunk[s] == 0:
                del shrunk[s]
            trial.placement[donor] = shrunk
            trial.spare[donor] = trial.spare.get(donor, self.spare[donor]) - 1
            free += self.gpw[donor]
        trial.free[s] = free
        return left

    def _donor_on(self, s: int, trial: _Tentative) -> int | None:
        """The donor that gives a worker on ``s``: most extra workers left, then lowest job index."""
        best = None
        best_spare = 0
        for d in self.hosts.get(s, ()):
            spare = trial.spare.get(d, self.spare[d])
            if spare > 0 and trial.placement.get(d, self.donor_placement[d]).get(s, 0) > 0 and (
                    spare > best_spare or spare == best_spare and d < best):
                best, best_spare = d, spare
        return best

    def _commit(self, trial: _Tentative, gpus: int) -> None:
        """Make the trial the state; move the servers whose room changed to their new bucket."""
        change: dict[int, int] = {}  # server -> change of its room
        for s, f in trial.free.items():
            if f != self.free[s]:
                change[s] = f - self.free[s]
                self.free[s] = f
        for d, shrunk in trial.placement.items():
            before, spare_before, spare = self.donor_placement[d], self.spare[d], trial.spare[d]
            for s, count in before.items():
                delta = (min(spare, shrunk.get(s, 0)) - min(spare_before, count)) * self.gpw[d]
                if delta:
                    change[s] = change.get(s, 0) + delta
            self.donor_placement[d] = shrunk
            self.spare[d] = spare
            self.gave.add(d)
        self.total -= gpus
        for s, delta in change.items():
            if delta:
                t, room = self.tier[s], self.room[s]
                self.buckets[t][room].remove(s)
                bisect.insort(self.buckets[t][room + delta], s)
                self.room_count[room] -= 1
                self.room_count[room + delta] += 1
                self.room[s] = room + delta
        self.bound.clear()


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
    opts, thinned = _thin(opts)
    if not jobs:
        empty = np.zeros((0, 1))
        return Scaled((), ValueTable(empty, empty.astype(np.int64), empty, np.zeros(0, np.int64),
                                     np.zeros(0, np.int64)), np.zeros(0, np.int64), StepReport("none", "optimal"))
    table = value_table(opts, server_gpus=cl.server_gpus, backend=settings.backend)
    elastic = np.flatnonzero(table.sizes > 1)
    targets = table.min_workers.copy()
    if elastic.size == 0:
        return Scaled(jobs, table, targets, StepReport("none", "optimal", 0.0, 0.0, 0.0))
    problem = MCKPProblem.from_padded(table.weights[elastic], np.where(np.isfinite(table.values[elastic]),
                                                                       table.values[elastic], 0.0),
                                      table.sizes[elastic], capacity)
    method = ALLOCATION_METHOD[settings.allocation]
    # deterministic: the MCKP core stops on its memory limit only (wall time would make answers load-dependent)
    res = solve_mckp(problem, method=method, time_limit=None if settings.deterministic else settings.left())
    if res.choice is None:
        log.warning("allocation %s gave %s; falling back to the convex-hull greedy", method, res.status)
        res = solve_mckp(problem, method="hull")
    base, step, _ = option_grid([opts[i] for i in elastic.tolist()])
    choice = np.asarray(res.choice, dtype=np.int64)
    targets[elastic] = np.clip(base + choice * step, table.min_workers[elastic],
                               np.fromiter((opts[i].max_workers for i in elastic.tolist()), np.int64, elastic.size))
    report = StepReport.of(res, method=f"mckp-{res.method}")
    if thinned:  # zoom in on the thinned rows, then bound and gap against EVERY option by the LP bound
        chosen, value = _refine(opts, table, elastic, capacity, targets[elastic], cl.server_gpus, settings, method)
        targets[elastic] = chosen
        report = _thinned_report(res, value, opts, table, elastic, capacity, cl.server_gpus, settings)
    return Scaled(jobs, table, targets, report)


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
            fine = max(1, min(-(-s // 2), -(-2 * s // (per_row - 1))))
            half = min(s, fine * ((per_row - 1) // 2))
            lo, hi = max(o.min_workers, t - half), min(o.max_workers, t + half)
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
    elastic = int((widths > 1).sum())
    if elastic == 0 or elastic * int(widths.max()) <= MAX_TABLE_CELLS:
        return opts, False
    cap = max(MAX_TABLE_CELLS // elastic, 3)
    out = []
    for o, width in zip(opts, widths.tolist(), strict=True):
        if width > cap:
            step = -(-(width - 1) // (cap - 2))  # (cap - 2) steps span the row, plus room for the anchor
            o = o._replace(step=step)
        out.append(o)
    log.warning("value table thinned: %d elastic jobs x up to %d options > %d cells; the allocation is chosen "
                "among the thinned options, its bound is over every option", elastic, int(widths.max()),
                MAX_TABLE_CELLS)
    return out, True


def usable_servers(cl: Cluster, rec: Reclaimed, borrowed: tuple[int, ...]) -> np.ndarray:
    """Mask of the servers training may use this round: training, loaned and kept, or borrowed."""
    mask = cl.kind <= ServerKind.LOANED  # training, or loaned
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
    res = solve_placement(sub, method="cpsat", time_limit=settings.left(), deterministic=settings.deterministic)
    if res.placement is None or res.status not in (Status.OPTIMAL, Status.FEASIBLE):
        log.warning("exact placement gave %s; keeping best fit decreasing", res.status)
        return per_job, StepReport("bfd-fallback", "feasible")
    mapped = tuple(tuple((int(keep[s]), n) for s, n in pairs_) for pairs_ in res.placement.per_job)
    return mapped, StepReport.of(res, objective=None, bound=None)


# ----------------------------------------------------------------------------------------------- decide
def settings_of(snap: Snapshot, **overrides) -> Settings:
    """The round's settings: the snapshot's options, overridden by the keyword arguments that are not None.

    Raises :class:`InputError` (path: the argument's name) for a value outside the option's vocabulary
    (case-sensitive: ``"Exact"`` is refused, naming the allowed values) or a time limit that is not a positive
    finite number.
    """
    o = snap.options
    base = dict(queue=o.queue, allocation=o.allocation, reclaim=o.reclaim, placement=o.placement,
                packing=o.packing, time_limit=o.time_limit, packing_policy=o.packing_policy)
    for name, value in overrides.items():
        if value is None:
            continue
        if name in OPTION_VALUES:
            try:
                check_option(name, value, OPTION_VALUES[name])
            except ValueError as err:
                raise InputError(name, str(err).partition(": ")[2]) from None
        elif name == "time_limit" and (isinstance(value, bool) or not isinstance(value, int | float)
                                       or not 0 < value < math.inf):
            raise InputError(name, f"must be a positive finite number of seconds, got {value!r}")
        elif name == "backend" and value not in BACKENDS:
            raise InputError(name, f"expected one of {', '.join(BACKENDS)}, got {value!r}")
        base[name] = value
    return Settings(**base)


def _collector_paused(func):
    """Run ``func`` with Python's cyclic garbage collector paused, restored afterwards (even on error).

    A round allocates hundreds of thousands of small acyclic objects (dicts, tuples, job decisions); their
    allocation bursts trigger collections that rescan every live object, about a fifth of the time of a
    50,000-job round. A round makes no reference cycles, so pausing frees nothing later than it would be
    freed anyway; a collector already disabled by the application is left as it is.
    """
    @functools.wraps(func)
    def paused(*args, **kwargs):
        if not gc.isenabled():
            return func(*args, **kwargs)
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            gc.enable()
    return paused


@_collector_paused
def decide(snapshot: Snapshot, *, queue: str | None = None, allocation: str | None = None,
           reclaim: str | None = None, placement: str | None = None, packing: str | None = None,
           time_limit: float | None = None, timings: bool = False, backend: str = "auto",
           deterministic: bool = False, packing_policy: str | None = None,
           keep_packing: Sequence[PackingGroup] = ()) -> Decision:
    """One scheduling round: the decision for ``snapshot``.

    The snapshot is validated first (:func:`lyra_solver.validate.validate_snapshot`: free for one that
    :func:`lyra_solver.load_snapshot` or an earlier call accepted; a typed snapshot built in Python is checked as
    its JSON would be; :func:`lyra_solver.validate_snapshot` also takes a dict in the JSON format). Keyword
    arguments override the snapshot's ``options``; their values come from the vocabularies of
    :mod:`lyra_solver.formulations.vocabulary`. ``timings=True`` adds ``summary.time_s`` (which makes the output
    differ from run to run). ``backend`` picks the value table's array library
    (:func:`lyra_solver.values.resolve_backend`; the numbers agree within float tolerance). ``keep_packing``
    (the previous decision's ``packing``, from Python only: PackingGroups or dicts in their JSON format, checked
    by :func:`lyra_solver.validate.check_keep_packing`): a packing guest that may share the same host GPUs
    again keeps them instead of being re-paired, which would restart it (:func:`lyra_solver.packing.pack_step`).

    Raises
    ------
    InputError
        A snapshot or option that breaks a rule of the format (the field path or argument name, and why).
    TypeError
        ``snapshot`` is not a :class:`Snapshot`.

    Examples
    --------
    One 8-GPU training server, one loaned inference server that inference wants back, a running elastic job
    on both and a queued one: the loaned server goes back, the running job shrinks onto the training server
    and the queued job gets its base demand beside it.

    >>> from lyra_solver import decide, parse_snapshot
    >>> snap = parse_snapshot(b'''{"format_version": 1,
    ...   "servers": [{"id": "t0", "pool": "training", "gpus": 8},
    ...               {"id": "i0", "pool": "inference", "gpus": 8, "state": "loaned"}],
    ...   "inference": {"reclaim": 1},
    ...   "jobs": [{"id": "a", "min_workers": 2, "max_workers": 8, "remaining_work": 1e6,
    ...             "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0},
    ...             "placement": {"t0": 4, "i0": 4}},
    ...            {"id": "b", "min_workers": 2, "max_workers": 2, "remaining_work": 1e5,
    ...             "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0}}]}''')
    >>> d = decide(snap, allocation="exact")
    >>> d.servers.reclaim, d.jobs["a"].placement, d.jobs["b"].action, d.jobs["b"].placement
    (['i0'], {'t0': 6}, 'run', {'t0': 2})
    >>> d.summary.methods["allocation"], d.summary.preemptions
    ('mckp-core', 0)
    """
    if not isinstance(snapshot, Snapshot):
        raise TypeError(f"decide: snapshot must be a lyra_solver.Snapshot (from parse_snapshot or load_snapshot), "
                        f"got {type(snapshot).__name__}")
    t0 = time.perf_counter()
    snapshot = validate_snapshot(snapshot)
    keep_packing = check_keep_packing(keep_packing)
    settings = settings_of(snapshot, queue=queue, allocation=allocation, reclaim=reclaim,
                           placement=placement, packing=packing, time_limit=time_limit, backend=backend,
                           packing_policy=packing_policy)
    # the exact steps share the round's time limit (each gets what is left), or use deterministic limits
    settings = dataclasses.replace(settings, deterministic=bool(deterministic), deadline=t0 + settings.time_limit)
    cl = Cluster.of(snapshot)
    rec = reclaim_step(cl, settings)
    log.info("reclaim: %d servers back (%s, %s), %d jobs shrunk, %d preempted", len(rec.servers),
             rec.report.method, rec.report.status, len(rec.shrunk), len(rec.preempted))
    queued = [j for j, pl in enumerate(rec.placement) if pl is None]
    times_min = _times_at_min(cl, queued)
    used = used_gpus(cl, rec.placement)
    borrowed = loan_step(cl, rec, queued, used)
    log.info("loan: %d idle servers offered", len(borrowed))
    adm = admit_step(cl, rec, borrowed, queued, settings, times_min, used)
    log.info("admit: %d of %d queued jobs (%s), %d donors", len(adm.admitted), len(queued), settings.queue,
             len(adm.donors))
    sc = scale_step(cl, adm, rec, borrowed, settings)
    log.info("scale: %s %s, objective %s, bound %s", sc.report.method, sc.report.status, sc.report.objective,
             sc.report.bound)
    pl = place_step(cl, adm, sc, rec, borrowed, settings)
    log.info("place: %s %s", pl.report.method, pl.report.status)
    decision = pack_step(snapshot, _decision(cl, rec, borrowed, adm, sc, pl, settings, None), method=settings.packing,
                         policy=settings.packing_policy, time_limit=settings.left(), queue=settings.queue,
                         deterministic=settings.deterministic, keep=keep_packing)
    if timings:  # step 6 included
        summary = msgspec.structs.replace(decision.summary, time_s=round(time.perf_counter() - t0, 6))
        decision = msgspec.structs.replace(decision, summary=summary)
    return decision


def _times_at_min(cl: Cluster, jobs: list[int]) -> dict[int, float]:
    if not jobs:
        return {}
    snap_jobs = cl.snap.jobs
    make = JobOptions._make
    opts = [make((job.throughput, job.min_workers, job.min_workers, job.remaining_work, job.gpus_per_worker, 0,
                  0.0, 1, 0)) for job in map(snap_jobs.__getitem__, jobs)]
    t = value_table(opts, server_gpus=cl.server_gpus).times[:, 0]
    return dict(zip(jobs, t.tolist(), strict=True))


def _value_of(cl: Cluster, rec: Reclaimed, adm: Admitted, j: int, w: int) -> float:
    """Value of job ``j`` at ``w`` workers computed as the value table does, for a ``w`` off a thinned row."""
    from lyra_solver.throughput import rate_one

    job = cl.snap.jobs[j]

    def t(n: int) -> float:
        r = rate_one(job.throughput, n, gpus_per_worker=job.gpus_per_worker, server_gpus=cl.server_gpus)
        return min(job.remaining_work / r, TIME_CAP)

    c = 0 if j in adm.admitted else sum(adm.placement[j].values())
    untouched = c > 0 and j not in rec.shrunk and j not in adm.donors
    return t(job.min_workers) - t(w) - (job.restart_penalty if untouched and w != c else 0.0)


_WAIT, _PREEMPT = JobDecision(action="wait"), JobDecision(action="preempt")  # frozen: shared by every such job


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
    # the value of each running job's option, gathered at once (summed in job order below, as before)
    rows = [i for i, j in enumerate(sc.jobs) if pl.placement[j]]
    workers = np.fromiter((sum(pl.placement[sc.jobs[i]].values()) for i in rows), np.int64, len(rows))
    k = workers - sc.table.min_workers[rows]
    kk = np.minimum(k, sc.table.values.shape[1] - 1)
    gpw = np.fromiter((snap.jobs[sc.jobs[i]].gpus_per_worker for i in rows), np.int64, len(rows))
    on_grid = (k < sc.table.sizes[rows]) & (sc.table.weights[rows, kk] == gpw * k)  # False only in thinned rows
    gathered = sc.table.values[rows, kk].tolist()
    values = iter(v if ok else _value_of(cl, rec, adm, sc.jobs[i], int(w))
                  for v, ok, i, w in zip(gathered, on_grid.tolist(), rows, workers.tolist(), strict=True))
    for j, job in enumerate(snap.jobs):
        p = pl.placement[j]
        if p:
            named = {ids[s]: n for s, n in sorted(p.items())}
            changed = job.placement is None or named != job.placement
            jobs[job.id] = JobDecision(action="run", workers=sum(p.values()), placement=named, changed=changed)
            jct += next(values)
        elif job.placement is not None:
            jobs[job.id] = _PREEMPT
            preemptions += 1
        else:
            jobs[job.id] = _WAIT
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
