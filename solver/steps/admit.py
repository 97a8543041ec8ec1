"""Step 3 of the round, admit (DESIGN "Round pipeline"): queued and just-preempted jobs get their base demand
(``min_workers``) in queue order; training servers first, then loaned, then borrowed.

Two passes, as in Lyra (base demand before elastic extras):

1. free GPUs only: each job in queue order (:func:`lyra_solver.heuristics.queue.queue_order`) gets its
   ``min_workers`` (all or nothing) by :meth:`~lyra_solver.heuristics.placement.FreeIndex.place` when the free
   GPUs of the usable servers can hold them;
2. donation: the jobs that did not fit, in queue order again, may also take the extra workers (above
   ``min_workers``) of jobs that were running before the round (:class:`lyra_solver.heuristics.donation.Donation`).
   A donor keeps at least its ``min_workers``, and does not grow back in this round's scaling.

Running time: O(Q log Q + Q G) for the first pass (Q queued jobs, G the largest free GPU count); the second pass
rejects a job that cannot fit in O(G) from bounds kept per GPU size, and scans servers in order only for a job
that may fit.

Both passes have a compiled twin (:func:`lyra_solver.heuristics._nbadmit.admit_all`, the same placements, order of
admission and donors), taken by the rule of :func:`lyra_solver.heuristics.placement.compiled` (the package's numba
kernels loaded, or at least 20,000 queued jobs): on 42,864 queued jobs and 12,500 servers the step takes about
20 ms CPU (quiet machine) instead of 185: the ``sjf`` key's columns and times 9 ms, the order 2, the kernel and
what it reads and returns 8 (the kernel 4-5). The admitted jobs' dicts are made only where the result's placement
is read (:attr:`~lyra_solver.steps._state.Admitted.made`): the place step places every admitted job afresh.
"""
from __future__ import annotations

from itertools import chain

import numpy as np
from lyra_solver.formulations.vocabulary import ServerKind, Tier
from lyra_solver.heuristics.donation import Donation
from lyra_solver.heuristics.placement import FreeIndex, charges_twins, compiled, entry_dicts
from lyra_solver.heuristics.queue import queue_order
from lyra_solver.objectives import JOINT_ADMISSION
from lyra_solver.steps._state import (
    KIND_LOANED,
    KIND_TRAINING,
    Admitted,
    Cluster,
    RoundState,
    Settings,
    remember_used,
    usable_servers,
    used_gpus,
)
from lyra_solver.values import ThroughputColumns, known_throughputs, read_columns, times_at

__all__ = ["ADMIT_TIERS", "admit"]

ADMIT_TIERS = (Tier.TRAINING, Tier.LOANED, Tier.BORROWED)  # base demand prefers training servers


@charges_twins
def admit(state: RoundState, settings: Settings) -> Admitted:
    """Base demand of the queued jobs in queue order (``settings.queue``), then by donation. Nobody is admitted
    here when the objective admits in its own knapsack (:data:`lyra_solver.objectives.JOINT_ADMISSION`): the
    scale step then decides who runs."""
    cl, reclaimed, borrowed = state.cluster, state.reclaimed, state.borrowed
    if settings.objective in JOINT_ADMISSION:
        return Admitted(reclaimed.placement, (), frozenset())
    snap = cl.snap
    queued, at = reclaimed.queued_array()  # the array: one conversion for every gather
    if not queued:  # nobody to admit (most simulator rounds): the placements as they are
        return Admitted(reclaimed.placement, (), frozenset())
    every = snap.jobs
    # comprehensions, not maps: on Python 3.11 a map of a tuple's __getitem__ (a slot wrapper) costs twice as much,
    # of an attrgetter over structs 1.1-1.4 times (43,000 queued jobs: 1.8 against 0.7 ms, 4.1 against 2.9 ms)
    n = len(queued)
    if settings.queue == "sjf" and n >= _READ_ONCE_MIN:  # the key's columns and the submit times in one pass
        # from what validation read (lyra_solver.validate.JobColumns), where it did: no job struct read here
        known = cl.columns
        read = read_columns([every[q] for q in queued]) if known is None else known_throughputs(known, queued, at)
        submit, min_time = read.submit_time, times_at_min(cl, queued, None, at, read)
    else:  # the submit times from the index view's column where its caller keeps one (the simulator: no struct
        # read for the order on most rounds, where the sjf keys are known too), else from the structs
        submit = cl.submit[at] if cl.submit is not None else \
            np.fromiter([every[q].submit_time for q in queued], np.float64, n)
        min_time = _min_times(cl, queued, at) if settings.queue == "sjf" else None
    order = queue_order(  # each order reads its own key: the others are not computed; floats read into arrays
        settings.queue,
        submit_time=submit,
        min_time=min_time,
        attained_service=np.fromiter([every[q].attained_service for q in queued], np.float64, n)
        if settings.queue == "las" else None,
    )
    usable = usable_servers(cl, reclaimed, borrowed)
    tier = _TIER_OF_KIND[cl.kind]  # a new array: training and loaned servers their tier, the others -1
    if borrowed:
        tier[list(borrowed)] = _T_BORROWED
    tier[~usable] = -1
    used = used_gpus(cl, reclaimed.placement)
    free = np.where(usable, cl.gpus - used, 0)
    nb = compiled(len(queued), free)
    if nb is not None:
        in_order = at[order]
        out = _admit_compiled(nb, cl, reclaimed.placement, in_order, free, tier, used)
        if out is not None:
            return out
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
    if not waiting or _offered(cl, index.free, placement, min_w, gpw) < min(min_w[j] * gpw[j] for j in waiting):
        # no waiting job's base demand is within the GPUs that donation could offer (Donation.total): it would
        # admit none (the bound it rejects each one by, without building its state)
        return Admitted(_after(cl, reclaimed.placement, placement, admitted), tuple(admitted), frozenset())
    donation = Donation(gpw, min_w, [pl is not None for pl in cl.placement], index.free, tier.tolist(),
                        placement, len(ADMIT_TIERS))
    for j in waiting:
        n, g = min_w[j], gpw[j]
        if n * g > donation.total:  # the O(1) rejection of Donation.admit, without the call
            continue
        got = donation.admit(n, g)
        if got is not None:
            placement[j] = got
            admitted.append(j)
    for d in donation.gave:  # the donors that gave a worker (the others' copies hold their placement unchanged)
        placement[d] = donation.donor_placement[d]
    return Admitted(_after(cl, reclaimed.placement, placement, [*admitted, *donation.gave]), tuple(admitted),
                    frozenset(donation.gave))


def _admit_compiled(nb, cl: Cluster, before: tuple, order: np.ndarray, free: np.ndarray, tier: np.ndarray,
                    used: np.ndarray) -> Admitted | None:
    """Both passes by the compiled twin (:func:`lyra_solver.heuristics._nbadmit.admit_all`): the same placements,
    admitted jobs and donors as the Python passes of :func:`admit`, from the jobs in queue order (``order``), the
    free GPUs and tiers of the servers and the GPUs used (``used``, before admission). ``None`` where the twin
    leaves the round to the Python passes (a donor on a server that is not usable). O(S + Q + H) array work, plus
    O(donors) to build their dicts; the admitted jobs' are made where the result's placement is read
    (:attr:`Admitted.made`)."""
    min_w, gpw = cl.min_w, cl.gpw
    i64 = np.int64
    # the donors: jobs that ran before the round and hold more than their base demand after the reclaim, which
    # only shrinks or stops jobs (so only those above it in the snapshot), in increasing index; a job the reclaim
    # did not touch holds the index view's very dict and its snapshot count. C-level maps and chains: a Python
    # loop over the running jobs was a tenth of the step on 50,000 jobs
    above = np.flatnonzero(cl.workers > min_w).tolist()
    shown = cl.placement
    same = np.fromiter([before[d] is shown[d] for d in above], bool, len(above))
    if not same.all():
        lo = min_w.tolist()
        above = [d for d, kept in zip(above, same.tolist(), strict=True)
                 if kept or ((pl := before[d]) and sum(pl.values()) > lo[d])]
    places = [before[d] for d in above]
    sizes = np.fromiter(map(len, places), i64, len(places))
    don_ptr = np.zeros(len(places) + 1, i64)
    np.cumsum(sizes, out=don_ptr[1:])
    n_ent = int(don_ptr[-1])
    ent_srv = np.fromiter(chain.from_iterable(places), i64, n_ent)
    ent_cnt = np.fromiter(chain.from_iterable(map(dict.values, places)), i64, n_ent)
    left = free.astype(i64)  # copied: the kernel leaves the free GPUs after both passes here
    adm_job, adm_ptr, adm_srv, adm_cnt, gave_job, gave_ptr, gave_srv, gave_cnt, bad = nb.admit_all(
        left, tier, len(ADMIT_TIERS), order, min_w, gpw, np.array(above, i64), don_ptr, ent_srv, ent_cnt)
    if bad:
        return None
    admitted = adm_job.tolist()
    donors = gave_job.tolist()
    # the donors' placements now; the admitted jobs' when the result's placement is read (Admitted.made: the place
    # step reads none of them where it places them afresh by best fit decreasing)
    if donors:
        placement = list(before)
        for j, p in zip(donors, entry_dicts(gave_ptr, gave_srv, gave_cnt), strict=True):
            placement[j] = p
        base = tuple(placement)
    else:
        base = before
    took = free - left  # what admission took from the free GPUs, server by server
    after_used = used + took
    after_used.setflags(write=False)
    # the admitted jobs' GPUs per server (the place step moves those jobs and gives their GPUs back without reading
    # their dicts): what was taken from the free GPUs where no donor gave (most rounds), else from the kernel's
    # entries by one counting pass, exact in float64 (each server's GPUs far below 2**53)
    if donors:
        gpus = adm_cnt * np.repeat(gpw[adm_job], np.diff(adm_ptr))
        taken = np.bincount(adm_srv, weights=gpus, minlength=free.shape[0]).astype(i64)
    else:
        taken = took
    taken.setflags(write=False)
    return Admitted(base, tuple(admitted), frozenset(donors), taken, (adm_ptr, adm_srv, adm_cnt), after_used)


def _offered(cl: Cluster, free: list[int], placement: list, min_w: list[int], gpw: list[int]) -> int:
    """:attr:`Donation.total <lyra_solver.heuristics.donation.Donation>`: the free GPUs of the usable servers
    (``free`` is 0 elsewhere) plus the extra workers' GPUs of the jobs that ran before the round. O(S + J)."""
    total = sum(free)
    for pl, before, lo, g in zip(placement, cl.placement, min_w, gpw, strict=True):
        if pl and before is not None:
            extra = sum(pl.values()) - lo
            if extra > 0:
                total += extra * g
    return total


def _after(cl: Cluster, before: tuple, placement: list, changed: list[int]) -> tuple:
    """``placement`` as the step's result, with its GPUs per server (:func:`used_gpus`, kept for the later steps)
    computed from those of ``before`` and the ``changed`` jobs alone: O(changed), not O(jobs)."""
    after = tuple(placement)
    used = used_gpus(cl, before).copy()
    gpw = cl.gpw
    for j in changed:
        g = int(gpw[j])
        for p, sign in ((before[j], -1), (after[j], 1)):
            if p:
                for s, n in p.items():
                    used[s] += sign * n * g
    remember_used(cl, after, used)
    return after


def times_at_min(cl: Cluster, jobs: list[int], specs: list | None = None, idx: np.ndarray | None = None,
                 read: ThroughputColumns | None = None) -> np.ndarray:
    """Remaining time of each job of ``jobs`` at its ``min_workers`` (the ``sjf`` key): the value table's
    ``T(min)`` (:func:`lyra_solver.values.times_at`, the same floats). ``specs``: the snapshot's jobs of
    ``jobs``, ``idx``: ``jobs`` as an int64 array, and ``read``: the jobs' columns
    (:func:`lyra_solver.values.read_columns` of ``specs``, or :func:`lyra_solver.values.known_throughputs`),
    where the caller has them already (``specs`` is then not read). O(len(jobs))."""
    if not jobs:
        return np.zeros(0)
    n = len(jobs)
    if idx is None:
        idx = np.fromiter(jobs, np.int64, n)  # one conversion for both gathers
    if read is None:
        if specs is None:
            every = cl.snap.jobs
            specs = [every[j] for j in jobs]
        work = np.fromiter([j.remaining_work for j in specs], np.float64, n)
        return times_at([j.throughput for j in specs], cl.min_w[idx], work, cl.gpw[idx], server_gpus=cl.server_gpus)
    return times_at(read.throughputs, cl.min_w[idx], read.remaining_work, cl.gpw[idx], server_gpus=cl.server_gpus,
                    read=read)


def _min_times(cl: Cluster, queued: list[int], at: np.ndarray) -> np.ndarray:
    """:func:`times_at_min` of the queued jobs (``at`` their indices as an array), those that
    :attr:`Cluster.sjf_memo` knows read from it, the others computed and written in (a simulator's queued job is
    shown as the same struct round after round, and its key is the same float). O(Q) in C plus
    :func:`times_at_min` of the jobs not known (their structs read there)."""
    memo = cl.sjf_memo
    if memo is None:
        return times_at_min(cl, queued, None, at)
    got = memo[at]
    miss = np.isnan(got).nonzero()[0]
    if miss.size:
        sub = at[miss]
        got[miss] = times_at_min(cl, sub.tolist(), None, sub)
        memo[sub] = got[miss]
    return got


#: Queued jobs from which the ``sjf`` key and the submit times are read in one pass over the job structs
#: (:func:`lyra_solver.values.read_columns`): below it (a simulator's round) the separate C-level passes over
#: structs in cache cost less (34-45 us against 68 us on a hundred queued jobs of the Philly replay, whose profile
#: throughputs' models the compiled table reads again anyway); from a few hundred jobs of mixed kinds up, one pass
#: costs less (0.38 against 0.59 ms on 2,000, 24 against 30 ms on 20,000).
_READ_ONCE_MIN = 2_000
_T_TRAINING, _T_LOANED, _T_BORROWED = int(Tier.TRAINING), int(Tier.LOANED), int(Tier.BORROWED)
#: Each server kind's admission tier (:class:`~lyra_solver.formulations.vocabulary.ServerKind` code -> tier, -1 for
#: the servers training may not use): one gather instead of a fill and two masked writes
_TIER_OF_KIND = np.full(max(ServerKind) + 1, -1, np.int64)
_TIER_OF_KIND[[KIND_TRAINING, KIND_LOANED]] = _T_TRAINING, _T_LOANED
_TIER_OF_KIND.setflags(write=False)
