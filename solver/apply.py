"""Carry a decision into the next round's snapshot (DESIGN "Applying a decision").

:func:`apply_decision` is the one public function: the snapshot of the next round as the engine sees it once the
scheduler has carried the decision out. It does not advance time (``now``, ``remaining_work`` and
``attained_service`` are the caller's: a simulator advances them by each job's rate, a production scheduler
reads them from its workers).
"""
from __future__ import annotations

import msgspec
from lyra_solver.errors import InputError
from lyra_solver.types import Decision, Inference, Job, Server, Snapshot

__all__ = ["apply_decision", "placements_after"]


def apply_decision(snapshot: Snapshot, decision: Decision) -> Snapshot:
    """The snapshot of the next round once ``decision`` is carried out.

    - jobs that ``run`` get the decision's placement (their worker count is its sum);
    - jobs that are ``preempt``-ed go back to the queue (placement removed); ``wait`` leaves a queued job queued;
    - servers in ``servers.reclaim`` go back to the inference side as ``serving``; servers in ``servers.loan``
      become ``loaned``;
    - ``inference.reclaim`` is reduced by the number of servers returned (never below 0);
    - packing guests return to the queue; their packing is decided again each round. A guest (a job of a
      ``decision.packing`` group other than its host, the first job) runs during the interval on GPUs its host
      holds, so giving it that placement would over-commit the next snapshot; it appears with no placement
      and step 6 packs it again (or steps 1-5 start it properly). Hosts keep their placement.

    Everything else (``now``, options, work, penalties, submit times) is copied unchanged: advancing time is the
    caller's.

    Parameters
    ----------
    snapshot : Snapshot
        The snapshot the decision was made for.
    decision : Decision
        The engine's decision for ``snapshot`` (as :func:`lyra_solver.decide` returns it).

    Returns
    -------
    Snapshot
        A new snapshot; the inputs are not modified.

    Raises
    ------
    InputError
        If the decision names a job or server the snapshot lacks, misses a job, or a ``run`` has no placement.

    Notes
    -----
    Running time O(S + J + P) for S servers, J jobs and P placement entries. The function does not check the
    decision's feasibility (that is :func:`lyra_solver.check.check_decision`'s job); it only refuses decisions
    that cannot be applied at all.

    Examples
    --------
    >>> from lyra_solver import apply_decision, decide, parse_snapshot
    >>> snap = parse_snapshot(b'''{"format_version": 1,
    ...   "servers": [{"id": "t0", "pool": "training", "gpus": 8},
    ...               {"id": "i0", "pool": "inference", "gpus": 8, "state": "loaned"}],
    ...   "inference": {"reclaim": 1},
    ...   "jobs": [{"id": "a", "min_workers": 2, "max_workers": 8, "remaining_work": 1e6,
    ...             "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0},
    ...             "placement": {"t0": 4, "i0": 4}, "restart_penalty": 30}]}''')
    >>> nxt = apply_decision(snap, decide(snap))
    >>> [(s.id, s.state) for s in nxt.servers]
    [('t0', None), ('i0', 'serving')]
    >>> nxt.jobs[0].placement, nxt.inference.reclaim
    ({'t0': 8}, 0)
    """
    jobs_d = decision.jobs
    ids = {s.id for s in snapshot.servers}
    reclaim = set(decision.servers.reclaim)
    loan = set(decision.servers.loan)
    for where, names in (("servers.reclaim", reclaim), ("servers.loan", loan)):
        unknown = sorted(names - ids)
        if unknown:
            raise InputError(f"decision.{where}", f"unknown server {unknown[0]!r}")
    if len(jobs_d) != len(snapshot.jobs) or any(j.id not in jobs_d for j in snapshot.jobs):
        missing = [j.id for j in snapshot.jobs if j.id not in jobs_d]
        extra = sorted(set(jobs_d) - {j.id for j in snapshot.jobs})
        what = f"job {missing[0]!r} missing" if missing else f"unknown job {extra[0]!r}"
        raise InputError("decision.jobs", what)

    servers = [_server_after(s, reclaim, loan) for s in snapshot.servers]
    for j in snapshot.jobs:
        _check_job(j, jobs_d[j.id], ids)
    _check_packing(decision)
    # the placements by the rules of placements_after (the simulator's): the job itself where it keeps its own
    jobs = [j if p is j.placement else _replace(j, placement=p)
            for j, p in zip(snapshot.jobs, placements_after(snapshot, decision), strict=True)]
    left = max(0, snapshot.inference.reclaim - len(reclaim))
    inference = snapshot.inference if left == snapshot.inference.reclaim else Inference(reclaim=left)
    return Snapshot(format_version=snapshot.format_version, servers=servers, jobs=jobs, now=snapshot.now,
                    inference=inference, options=snapshot.options)


def placements_after(snapshot: Snapshot, decision: Decision) -> list:
    """Each job's placement in :func:`apply_decision`'s next snapshot, in the snapshot's job order (the same
    rules and values; the job's own placement object where the decision keeps it), without building the
    snapshot and without its checks: for a caller that carries out decisions of :func:`lyra_solver.decide` on
    snapshots it built itself and reads only the placements (the simulator; its ``check`` mode compares the
    two). O(J + P) for J jobs and P placement entries.

    Raises ``KeyError`` for a job the decision lacks.

    Examples
    --------
    >>> from lyra_solver import decide, parse_snapshot
    >>> snap = parse_snapshot(b'''{"format_version": 1, "servers": [{"id": "t0", "pool": "training", "gpus": 8}],
    ...   "jobs": [{"id": "a", "min_workers": 2, "max_workers": 8, "remaining_work": 1e6,
    ...             "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0}}]}''')
    >>> placements_after(snap, decide(snap))
    [{'t0': 8}]
    """
    jobs_d = decision.jobs
    out: list = []
    add = out.append
    for job in snapshot.jobs:
        jd = jobs_d[job.id]
        if jd.action == "run":
            shown, placement = job.placement, jd.placement
            add(shown if shown == placement else placement)
        else:
            add(None)
    if decision.packing:  # packing guests go back to the queue
        guests = {jid for group in decision.packing for jid in group.jobs[1:]}
        out = [None if job.id in guests else p for job, p in zip(snapshot.jobs, out, strict=True)]
    return out


def _server_after(s: Server, reclaim: set[str], loan: set[str]) -> Server:
    """The server with its new state (every other field kept: a copy through ``msgspec.structs.replace``)."""
    if s.id in reclaim:
        return msgspec.structs.replace(s, state="serving")
    if s.id in loan:
        return msgspec.structs.replace(s, state="loaned")
    return s


def _check_job(job: Job, jd, server_ids: set[str]) -> None:
    """Refuse a job's decision that cannot be carried out: ``run`` without a placement or on an unknown server,
    an unknown action."""
    if jd.action == "run":
        if not jd.placement:
            raise InputError(f"decision.jobs.{job.id}", "action run without a placement")
        if not server_ids.issuperset(jd.placement):
            unknown = sorted(set(jd.placement) - server_ids)
            raise InputError(f"decision.jobs.{job.id}.placement", f"unknown server {unknown[0]!r}")
    elif jd.action not in ("preempt", "wait"):
        raise InputError(f"decision.jobs.{job.id}.action", f"unknown action {jd.action!r}")


def _replace(job: Job, **changes) -> Job:
    return msgspec.structs.replace(job, **changes)


def _check_packing(decision: Decision) -> None:
    """Refuse packing groups with a job that does not run. Packing guests (DESIGN "Packing") go back to the
    queue (:func:`placements_after`): no placement in the next snapshot. Their GPUs are the host's, so the next
    round's snapshot stays valid; the MPS shares of ``decision.packing`` stay in the decision (a simulator reads
    them from there to compute packed speeds)."""
    if not decision.packing:
        return
    running = {jid for jid, jd in decision.jobs.items() if jd.action == "run"}
    for group in decision.packing:
        stray = [j for j in group.jobs if j not in running]
        if stray:
            raise InputError("decision.packing", f"job {stray[0]!r} on {group.server!r} does not run")
