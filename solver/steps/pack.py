"""Step 6 of the round, pack (DESIGN "Packing"): waiting jobs share GPUs with running ones.

:func:`pack` is the step: the decision of steps 1-5 (:func:`lyra_solver.steps.decision.decision_of`) with guests
packed by :func:`pack_step`, which takes any decision of steps 1-5 and returns it with guests packed: *hosts* are
the jobs that run in the decision and have a ``packing`` profile; *guests* are the queued jobs still waiting that
have one, each at its ``min_workers``. It builds a :class:`~lyra_solver.formulations.packing.PackingProblem` (candidates
that obey the rules: a guest no larger than its host, both jobs' GPU memory within each server's
``gpu_mem_gb``, every guest worker on GPUs of host workers of one server, a host worker shared with one guest
at most), solves it with the chosen method and writes the packed guests as ``run`` actions and the shared GPUs
as the decision's ``packing`` list (one entry per server and pair: ``gpus`` shared, the two ``jobs`` host
first, their ``shares``).

Methods (``options.packing`` / ``decide --packing``): ``gimbal`` (greedy squeeze/swell), ``lucid`` (threshold
pairing), ``random`` (Gandiva's random pairing, seeded by ``options.packing_seed``), ``exact`` (CP-SAT; Gimbal's
greedy if it finds nothing within the time limit), ``off``. Every one runs through the packing family's front door
(:func:`lyra_solver.formulations.packing.solve_packing`), the heuristics by their rows' names (another heuristic row
of the table that ``decide`` may run is a value of the option and runs the same way).

Running time: O(Q H) to build the candidates for Q guests and H hosts, plus the method's.
"""
from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
import numpy as np
from lyra_solver.formulations.packing import PackingProblem, PackingResult, solve_packing
from lyra_solver.formulations.vocabulary import PACKINGS
from lyra_solver.heuristics.queue import queue_order
from lyra_solver.steps._state import RoundState, Settings
from lyra_solver.steps.decision import decision_of
from lyra_solver.throughput import rate_one
from lyra_solver.types import Decision, JobDecision, PackingGroup, Snapshot
from lyra_solver.values import TIME_CAP

__all__ = ["PACKING_METHODS", "PackingInstance", "pack", "pack_step", "packing_instance"]

log = logging.getLogger(__name__)

#: Methods of step 6 (``off`` skips it): the packing option's values, from the packing method table.
PACKING_METHODS: tuple[str, ...] = PACKINGS


def _solve(problem: PackingProblem, method: str, snapshot: Snapshot, time_limit: float, deterministic: bool,
           deadline: float | None = None) -> PackingResult:
    """The packing of ``method`` (a value of the packing option other than ``off``), through the front door."""
    if method == "exact":
        return _exact(problem, time_limit, deterministic, deadline)
    if method == "random":  # Gandiva's pairing, seeded by the snapshot
        return solve_packing(problem, method="random", seed=snapshot.options.packing_seed)
    return solve_packing(problem, method=method)  # type: ignore[arg-type]  # a heuristic row's name


def _exact(problem: PackingProblem, time_limit: float, deterministic: bool,
           deadline: float | None = None) -> PackingResult:
    """CP-SAT, warm-started from Gimbal's greedy (so a time limit hit still returns at least its answer); with
    ``deterministic`` under CP-SAT's deterministic time (the same answer on every run).

    Without ``deterministic``, ``deadline`` (``time.perf_counter()``; default: ``time_limit`` from now) bounds the
    whole step: the greedy stops considering guests there (keeping those packed so far) and CP-SAT gets only what
    is left after the packing instance and the greedy."""
    if deterministic:
        greedy = solve_packing(problem, method="gimbal")
    else:
        deadline = time.perf_counter() + time_limit if deadline is None else deadline
        greedy = solve_packing(problem, method="gimbal", deadline=deadline)
        time_limit = deadline - time.perf_counter()
        if time_limit <= 0.0:
            log.warning("packing exact not run: the time limit passed while building the instance and the greedy "
                        "(%s); Gimbal's greedy answer kept", greedy.backend_status)
            return greedy
    hint = (greedy.assignment, [max(0, round(s * 10) - 1) for s in greedy.guest_share],
            [max(0, round(s * 10) - 1) for s in greedy.host_share])
    res = solve_packing(problem, method="exact", time_limit=time_limit, hint=hint,
                        deterministic_limit=deterministic)
    if res.assignment is None:  # the caller's fallback, without computing the greedy answer a second time
        log.warning("packing exact gave %s (%s); falling back to Gimbal's greedy", res.status, res.backend_status)
        return greedy
    return res


def _server_gpus(snapshot: Snapshot) -> int:
    """The most common server size (ties: the larger), as the pipeline uses for profile throughputs."""
    mode = Counter(s.gpus for s in snapshot.servers).most_common()
    return max((g for g, c in mode if c == mode[0][1]), default=8)


def _time(job, workers: int, server_gpus: int) -> float:
    r = rate_one(job.throughput, workers, gpus_per_worker=job.gpus_per_worker, server_gpus=server_gpus)
    # capped as the value table caps remaining times (huge work over a tiny rate is inf, refused by packing)
    return min(max(job.remaining_work / r, 1e-6), TIME_CAP) if r > 0 else 1e12


def _guest_uses(guest, g_mem: float, host_pl: list[tuple[int, int]], host_gpw: int, h_mem: float,
                server_mem: list[float], slot_of: dict[int, int]) -> tuple[list, dict[int, int]] | None:
    """Place a guest's ``min_workers`` on GPUs of a host's workers: servers with most host workers first.

    Returns ``([(slot, host workers shared)], {server index: guest workers})`` or None when it does not fit.
    """
    left, gpw = guest.min_workers, guest.gpus_per_worker
    uses, placement = [], {}
    for s, n in sorted(host_pl, key=lambda e: (-e[1], e[0])):
        if left == 0:
            break
        if h_mem + g_mem > server_mem[s] + 1e-9:
            continue
        y = min(left, (n * host_gpw) // gpw)
        if y <= 0:
            continue
        uses.append((slot_of[s], -(-y * gpw // host_gpw)))
        placement[s] = y
        left -= y
    return (uses, placement) if left == 0 else None


def _kept_fits(snap: Snapshot, decision: Decision, guests: list[int], hosts: list[int], host_pl: list,
               server_mem: list[float], slot_of: list, sid: dict[str, int],
               keep: Sequence[PackingGroup]) -> dict[int, tuple[int, tuple[list, dict[int, int]]]]:
    """The guests of ``keep`` that can share the same host GPUs again: guest index -> (host index, fit).

    Their host workers are taken out of ``host_pl`` (in place), so other guests' candidates leave them free."""
    prev = _kept(keep)
    host_of = {snap.jobs[j].id: h for h, j in enumerate(hosts)}
    out = {}
    for g, jg in enumerate(guests):
        guest = snap.jobs[jg]
        entry = prev.get(guest.id)
        h = None if entry is None else host_of.get(entry[0])
        if h is None or any(k not in sid for k in entry[1]):
            continue
        host = snap.jobs[hosts[h]]
        if guest.min_workers * guest.gpus_per_worker > decision.jobs[host.id].workers * host.gpus_per_worker:
            continue
        fit = _fit_at(guest, {sid[k]: n for k, n in entry[1].items()}, dict(host_pl[h]), host, server_mem,
                      slot_of[h])
        if fit is None:
            continue
        out[g] = (h, fit)
        taken = dict(fit[0])
        host_pl[h] = [(s, n - taken.get(slot_of[h][s], 0)) for s, n in host_pl[h]]
    return out


def _fit_at(guest, at: dict[int, int], host_free: dict[int, int], host, server_mem: list[float],
            slot_of: dict[int, int]) -> tuple[list, dict[int, int]] | None:
    """A guest's workers on exactly the GPUs ``at`` ({server index: guest GPUs}) of its host, as
    :func:`_guest_uses` would write them, or None when the host's workers there or the memory no longer allow
    it."""
    gpw, host_gpw = guest.gpus_per_worker, host.gpus_per_worker
    uses, placement = [], {}
    for s, gpus in sorted(at.items()):
        y, rest = divmod(gpus, gpw)
        if rest or y <= 0 or y * gpw > host_free.get(s, 0) * host_gpw \
                or host.packing.gpu_mem_gb + guest.packing.gpu_mem_gb > server_mem[s] + 1e-9:
            return None
        uses.append((slot_of[s], -(-y * gpw // host_gpw)))
        placement[s] = y
    return (uses, placement) if sum(placement.values()) == guest.min_workers else None


@dataclass(frozen=True, eq=False)
class PackingInstance:
    """The packing problem of a round and how to map its answer back to the decision."""

    problem: PackingProblem
    hosts: tuple  # snapshot jobs of the hosts, in problem order
    guests: tuple  # snapshot jobs of the guests, in problem order (queue order)
    placements: tuple  # per candidate, {server index: guest workers}
    kept: frozenset = frozenset()  # guests (problem indices) whose only candidate is their previous pairing


def _kept(keep: Sequence[PackingGroup]) -> dict[str, tuple[str, dict[str, int]]]:
    """Guest id -> (host id, {server id: shared GPUs}) of a previous decision's packing groups."""
    out: dict[str, tuple[str, dict[str, int]]] = {}
    for group in keep:
        host = group.jobs[0]
        for guest in group.jobs[1:]:
            h, at = out.setdefault(guest, (host, {}))
            if h == host:
                at[group.server] = at.get(group.server, 0) + group.gpus
    return out


def packing_instance(snapshot: Snapshot, decision: Decision, *, policy: str = "jct",
                     queue: str = "sjf", keep: Sequence[PackingGroup] = ()) -> PackingInstance | None:
    """The packing problem of step 6 for a decision of steps 1-5 (``None`` when no guest can join a host).

    Hosts: jobs that run in ``decision`` and have a packing profile; guests: waiting jobs with one, in ``queue``
    order, at ``min_workers``. Remaining times at the decided (hosts) or minimum (guests) worker counts,
    seconds left to deadlines from ``snapshot.now``.

    ``keep`` (the previous round's ``decision.packing``): a guest that shared a host's GPUs there and may share
    the same GPUs now (its host runs with the workers it shared them with, the rules hold) gets that pairing as
    its only candidate (listed in ``kept``), and those host workers are not offered to other guests: re-pairing
    it would restart it. Entries naming jobs or servers that are not hosts and guests of this round are
    ignored.
    """
    snap, opts = snapshot, snapshot.options
    sid = {s.id: i for i, s in enumerate(snap.servers)}
    server_mem = [s.gpu_mem_gb for s in snap.servers]
    sg = _server_gpus(snap)
    hosts = [j for j, job in enumerate(snap.jobs)
             if job.packing is not None and decision.jobs[job.id].action == "run"]
    waiting = [j for j, job in enumerate(snap.jobs)
               if job.packing is not None and decision.jobs[job.id].action == "wait"]
    order = queue_order(queue, submit_time=[snap.jobs[j].submit_time for j in waiting],
                        min_time=[_time(snap.jobs[j], snap.jobs[j].min_workers, sg) for j in waiting],
                        attained_service=[snap.jobs[j].attained_service for j in waiting]) if waiting else []
    guests = [waiting[int(i)] for i in order]
    host_pl, slot_host, slot_cap, slot_mem, slot_of = [], [], [], [], []
    for h, j in enumerate(hosts):
        pl = sorted((sid[k], n) for k, n in decision.jobs[snap.jobs[j].id].placement.items())
        host_pl.append(pl)
        of = {}
        for s, n in pl:
            of[s] = len(slot_host)
            slot_host.append(h)
            slot_cap.append(n)
            slot_mem.append(server_mem[s])
        slot_of.append(of)
    pairs = opts.pair_speed or {}
    kept = _kept_fits(snap, decision, guests, hosts, host_pl, server_mem, slot_of, sid, keep) if keep else {}
    candidates, placements, measured = [], [], []
    for g, jg in enumerate(guests):
        guest = snap.jobs[jg]
        g_gpus = guest.min_workers * guest.gpus_per_worker
        for h, jh in enumerate(hosts):
            host = snap.jobs[jh]
            w = decision.jobs[host.id].workers
            if g_gpus > w * host.gpus_per_worker:
                continue
            if g in kept:
                if kept[g][0] != h:
                    continue
                fit = kept[g][1]
            else:
                fit = _guest_uses(guest, guest.packing.gpu_mem_gb, host_pl[h], host.gpus_per_worker,
                                  host.packing.gpu_mem_gb, server_mem, slot_of[h])
            if fit is None:
                continue
            candidates.append((g, h, fit[0]))
            placements.append(fit[1])
            a, b = guest.packing.app, host.packing.app
            pair = pairs.get(f"{a}|{b}") if a and b else None
            rev = pairs.get(f"{b}|{a}") if a and b else None
            measured.append(pair if pair is not None else (rev[::-1] if rev is not None else [math.nan, math.nan]))
    if not candidates:
        return None
    inf = math.inf
    host_jobs, guest_jobs = [snap.jobs[j] for j in hosts], [snap.jobs[j] for j in guests]
    problem = PackingProblem.build(
        host_util=[j.packing.gpu_util for j in host_jobs],
        host_time=[_time(j, decision.jobs[j.id].workers, sg) for j in host_jobs],
        host_workers=[decision.jobs[j.id].workers for j in host_jobs],
        host_gpus=[decision.jobs[j.id].workers * j.gpus_per_worker for j in host_jobs],
        host_mem=[j.packing.gpu_mem_gb for j in host_jobs],
        host_deadline=[inf if j.deadline is None else j.deadline - snap.now for j in host_jobs],
        guest_util=[j.packing.gpu_util for j in guest_jobs],
        guest_time=[_time(j, j.min_workers, sg) for j in guest_jobs],
        guest_gpus=[j.min_workers * j.gpus_per_worker for j in guest_jobs],
        guest_mem=[j.packing.gpu_mem_gb for j in guest_jobs],
        guest_deadline=[inf if j.deadline is None else j.deadline - snap.now for j in guest_jobs],
        slot_host=slot_host, slot_capacity=slot_cap, slot_mem=slot_mem, candidates=candidates,
        policy=policy, sample_stealing=opts.sample_stealing, overhead=opts.packing_overhead,
        measured=np.array(measured, dtype=np.float64))
    return PackingInstance(problem, tuple(host_jobs), tuple(guest_jobs), tuple(placements), frozenset(kept))


def pack(state: RoundState, settings: Settings) -> Decision:
    """The round's decision: steps 1-5 as a decision, then packing by ``settings.packing`` (``off``: none).

    The exact method gets what is left of the round's time limit; ``settings.keep_packing`` (the previous
    decision's packing) lets guests keep their host GPUs (see :func:`pack_step`).
    """
    decision = decision_of(state)
    return pack_step(state.cluster.snap, decision, method=settings.packing, policy=settings.packing_policy,
                     time_limit=settings.left(), queue=settings.queue, deterministic=settings.deterministic,
                     keep=settings.keep_packing)


def pack_step(snapshot: Snapshot, decision: Decision, *, method: str, policy: str, time_limit: float,
              queue: str = "sjf", deterministic: bool = False, keep: Sequence[PackingGroup] = ()) -> Decision:
    """Pack waiting jobs onto running jobs' GPUs (step 6); ``method="off"`` returns ``decision`` unchanged.

    Parameters
    ----------
    snapshot : Snapshot
        The round's (validated) snapshot; its options give ``packing_overhead``, ``sample_stealing``,
        ``pair_speed`` and ``packing_seed``.
    decision : Decision
        The decision of steps 1-5.
    method : str
        One of :data:`PACKING_METHODS`.
    policy : str
        ``jct``, ``deadline`` or ``makespan``.
    time_limit : float
        Seconds for the exact method (what is left of the round's limit).
    queue : str
        The queue order; guests are offered in it (Lucid and random pairing use it).
    deterministic : bool
        The exact method's limit is CP-SAT's deterministic time (same answer on every run).
    keep : sequence of PackingGroup
        The previous round's ``decision.packing``: guests that may share the same host GPUs again keep them
        (see :func:`packing_instance`); one that the method would leave waiting there (its pairing no longer
        gains) is offered every host in a second solve, as without ``keep``. Keeping spares the guests a
        restart and the method most of its search.

    Returns
    -------
    Decision
        With the packed guests ``run`` (``changed`` true), the ``packing`` list, and ``summary.methods`` /
        ``statuses`` naming the packing method and its status.
    """
    if method == "off":
        return decision
    if method not in PACKING_METHODS:
        raise ValueError(f"method: unknown packing method {method!r}; expected one of {', '.join(PACKING_METHODS)}")
    snap = snapshot
    deadline = time.perf_counter() + time_limit  # building the packing instance counts against the limit

    def solve(keep):
        inst = packing_instance(snap, decision, policy=policy, queue=queue, keep=keep)
        if inst is None:
            return None, None
        res = _solve(inst.problem, method, snap, time_limit, deterministic, deadline)
        if res.assignment is None:
            log.warning("packing %s gave %s; falling back to Gimbal's greedy", method, res.status)
            res = solve_packing(inst.problem, method="gimbal")
        return inst, res

    inst, res = solve(keep)
    dropped = set() if inst is None else {inst.guests[g].id for g in inst.kept if res.assignment[g] < 0}
    if dropped:  # kept guests the method would rather not pack with their host: offered every host instead
        inst, res = solve([grp for grp in keep if not dropped.intersection(grp.jobs[1:])])
    if inst is None:
        return _with_summary(decision, "none", "optimal")
    problem, guest_jobs, host_jobs, placements = inst.problem, inst.guests, inst.hosts, inst.placements
    log.info("pack: %s %s, %d of %d waiting jobs packed, objective %s", res.method, res.status, res.packed,
             len(guest_jobs), res.objective)
    ids = [s.id for s in snap.servers]
    jobs = dict(decision.jobs)
    groups = []
    for g, c in enumerate(res.assignment):
        if c < 0:
            continue
        guest, host = guest_jobs[g], host_jobs[int(problem.cand_host[c])]
        pl = placements[c]
        jobs[guest.id] = JobDecision(action="run", workers=guest.min_workers,
                                     placement={ids[s]: n for s, n in sorted(pl.items())}, changed=True)
        for s, n in sorted(pl.items()):
            groups.append((s, host.id, guest.id, PackingGroup(
                server=ids[s], gpus=n * guest.gpus_per_worker, jobs=[host.id, guest.id],
                shares={host.id: res.host_share[g], guest.id: res.guest_share[g]})))
    groups.sort(key=lambda e: e[:3])
    out = msgspec.structs.replace(decision, jobs=jobs, packing=[e[3] for e in groups])
    return _with_summary(out, res.method, str(res.status))


def _with_summary(decision: Decision, method: str, status: str) -> Decision:
    summary = decision.summary
    return msgspec.structs.replace(decision, summary=msgspec.structs.replace(
        summary, methods={**summary.methods, "packing": method}, statuses={**summary.statuses, "packing": status}))

