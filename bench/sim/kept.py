"""A run's snapshot and its index view, kept across rounds (:class:`Kept`).

Every round the base policy shows every active job, in arrival order, with the placement it holds
(:meth:`..policies.base.Policy.snapshot`), and ``decide`` indexes that snapshot by position
(:meth:`lyra_solver.steps._state.Cluster.of`): each job's placement keyed by server index, its workers, GPUs per
worker and worker range, and the GPUs used on each server. Both are Python passes over every active job, every
round, although between two rounds only some jobs change: those running (their work and attained service), those
the last decision moved, and those that arrived or completed.

:class:`Kept` holds the shown job structs and the index columns by arrival index and changes them where the engine
changes a job (:meth:`Kept.placed`, :meth:`Kept.arrived`, :meth:`Kept.gone`): a round's snapshot is made by the
policy's rules for those jobs alone (:meth:`Kept.snapshot`), and its index view by C-level gathers over the
active jobs (:meth:`Kept.view`, given to :func:`lyra_solver.pipeline.changes_built`); the placements are indexed
again when the servers shown change (an inference server reclaimed or loaned: a new tuple). The engine uses it for
a policy whose snapshot rules are the base policy's, on jobs without the Pollux model (whose throughput changes
with their epoch); its tests compare every round's snapshot with the policy's and every view with ``Cluster.of``.

Running time: O(entries) per placement changed; per round O(R + C) Python for R running and C changed jobs and
O(J) in C for J active jobs, plus O(S + H) Python for S servers and H placement entries when the servers shown
changed.
"""
from __future__ import annotations

from collections.abc import Mapping
from sys import getrefcount
from typing import Any

import numpy as np
from lyra_solver.steps._state import Cluster, server_index
from lyra_solver.types import Job, Snapshot

from .policies.base import _again, _force

__all__ = ["Kept"]


class Kept:
    """The shown structs and index view's job columns of the jobs of a run, by arrival index (``n`` jobs)."""

    def __init__(self, n: int) -> None:
        #: the struct each job was last shown as (None: not shown yet, or completed)
        self.shown: list[Job | None] = [None] * n
        #: the jobs whose struct may change in the next snapshot besides the running ones (moved, stopped, arrived)
        self.dirty: set[int] = set()
        #: each job's placement by server index of :attr:`servers` (None: none)
        self.at: list[dict[int, int] | None] = [None] * n
        # GPUs per worker, worker range (-1: not shown yet) and workers held, by arrival index
        self.gpw = np.full(n, -1, np.int64)
        self.lo = np.full(n, -1, np.int64)
        self.hi = np.full(n, -1, np.int64)
        self.submit = np.full(n, np.nan)  # each job's submit time (fixed, as the columns above; NaN: not shown yet)
        self.workers = np.zeros(n, np.int64)
        self.top = np.full(n, -1, np.int64)  # the highest server index of each job's placement (-1: none)
        self.has = np.zeros(n, bool)  # whether each job holds a placement (its entry of :attr:`at` is not None)
        self.servers: tuple | None = None  # the servers tuple :attr:`at` and :attr:`used` are indexed by
        self.sid: dict[str, int] = {}
        self.used: list[int] = []  # GPUs the placements use on each server of :attr:`servers`
        # each job's sjf key while its struct shown is the same (NaN: not known; Cluster.sjf_memo), for the servers'
        # usual GPU count sjf_gpus; the last view's memo and its jobs, to keep what the round computed (learn)
        self.sjf = np.full(n, np.nan)
        self.sjf_gpus = -1
        self._memo: tuple[np.ndarray, np.ndarray] | None = None

    # ------------------------------------------------------------------------------------------ changes
    def arrived(self, i: int) -> None:
        """Job ``i`` is active from now on."""
        self.dirty.add(i)

    def gone(self, i: int) -> None:
        """Job ``i`` completed (after :meth:`placed` with ``None``)."""
        self.shown[i] = None
        self.dirty.discard(i)

    def placed(self, i: int, placement: Mapping[str, int] | None) -> None:
        """Job ``i`` holds ``placement`` (by server id; ``None``: nothing) from now on. O(entries)."""
        self.dirty.add(i)
        if self.servers is None:  # nothing indexed: the next view indexes every job
            return
        old, used = self.at[i], self.used
        if old is not None:
            g = int(self.gpw[i])
            for s, v in old.items():
                used[s] -= v * g
        if (placement is not None and self.gpw[i] < 0) or not self._put(i, placement, self.sid, used, 0):
            self.servers = None  # never shown, or on a server not shown: the next view indexes every job

    def _put(self, i: int, placement: Mapping[str, int] | None, sid: dict[str, int], used: list[int],
             first: int) -> bool:
        """Job ``i``'s placement by the server indices ``sid``, its workers and highest server; its GPUs on the
        servers from ``first`` on added to ``used``. False where it holds a server ``sid`` lacks. O(entries)."""
        if placement is None:
            self.at[i] = None
            self.workers[i], self.top[i], self.has[i] = 0, -1, False
            return True
        if not placement.keys() <= sid.keys():
            return False
        p = self.at[i] = {sid[k]: v for k, v in placement.items()}
        self.has[i] = True
        g = int(self.gpw[i])
        n = 0
        for s, v in p.items():
            if s >= first:
                used[s] += v * g
            n += v
        self.workers[i], self.top[i] = n, max(p, default=-1)
        return True

    # ------------------------------------------------------------------------------------------ a round
    def snapshot(self, policy, view, t: float, rows=None) -> Snapshot:
        """The round's snapshot by ``policy``'s (the base policy's) rules, on the engine ``view`` whose
        ``running`` jobs (arrival indices) hold placements: a struct is made again for the running and changed
        jobs only (:meth:`..policies.base.Policy.snapshot`'s rules, the struct last shown as ``last``); the
        others are shown as the same struct as before. A running job whose placement is unchanged has its struct
        brought up to now in place where :attr:`shown` alone holds it (:data:`_SOLE`), else copied first.
        ``rows``: ``(job, remaining, attained)`` of every running job whose record is to be brought up to now
        first (the engine's sync, in the same pass), or ``None``: the records are up to date."""
        active, shown, dirty = view.active, self.shown, self.dirty
        if dirty:  # their structs may be made again: their sjf keys go (a running job's is never kept: it was
            # dropped when the job started, and is not asked for while it runs)
            self.sjf[np.fromiter(dirty, np.int64, len(dirty))] = np.nan
        if rows is None:  # the running jobs from their records
            dirty.update(view.running)
            rows = ()
        force, refs = _force, getrefcount
        for j, remaining, attained in rows:  # the running jobs, synced (a changed one comes again below: no change);
            # _again inlined (no call per running job, every round)
            j.remaining, j.attained = remaining, attained
            i = j.idx
            last = shown[i]
            if last.placement is not j.placement:
                shown[i] = _again(last, remaining, j.placement, attained)
            elif last.remaining_work is not remaining or not (last.attained_service is attained
                                                              or last.attained_service == attained):
                if refs(last) > _SOLE:  # a snapshot shown before still holds it (a caller kept one): a new struct
                    last = shown[i] = last.__copy__()
                force(last, "remaining_work", 0.0 if remaining < 0.0 else remaining)
                force(last, "attained_service", attained)
        for i in dirty:
            j = active.get(i)
            if j is None:
                continue
            last = shown[i]
            shown[i] = policy.job(view, i, j) if last is None else _again(last, j.remaining, j.placement, j.attained)
        dirty.clear()
        servers, reclaim = policy.servers(view)
        return policy.build(view, t, servers, [shown[i] for i in active], reclaim)  # (a map: 1.2-1.7x)

    def _index(self, servers: tuple, active: Mapping[int, Any], idx: np.ndarray) -> bool:
        """Index the active jobs' placements by the servers ``servers`` (the jobs ``idx``, in arrival order):
        where :attr:`servers` was indexed, only the jobs on a server past the first position that changed (the
        training servers come first and stay; inference servers come and go behind them), their entries keyed
        again by their servers' new positions (the job's workers unchanged), else every job from its placement.
        False where a job holds a server not shown (the caller's ``Cluster.of`` then says so). O(S + J) in C,
        O(H) Python for the H placement entries indexed again."""
        sid = server_index(servers)[1]
        old = self.servers
        if old is None:
            used = [0] * len(servers)
            for i in active:
                if not self._put(i, active[i].placement, sid, used, 0):
                    return False
            self.servers, self.sid, self.used = servers, sid, used
            return True
        first = next((k for k, (a, b) in enumerate(zip(old, servers, strict=False)) if a.id != b.id),
                     min(len(old), len(servers)))
        # each old position from the first that changed on: its server's new position (-1: no longer shown); the
        # placements there are keyed again by it (the same entries in the same order, the same workers), the GPUs
        # used move with their server
        remap = [sid.get(s.id, -1) for s in old[first:]]
        used = self.used[:first] + [0] * (len(servers) - first)  # the entries before it are counted already
        for p, n in enumerate(self.used[first:]):
            if n:
                if remap[p] < 0:  # GPUs held on a server not shown (the caller's Cluster.of says so)
                    self.servers = None
                    return False
                used[remap[p]] = n
        at, top = self.at, self.top
        for i in idx[top[idx] >= first].tolist():
            q = at[i] = {s if s < first else remap[s - first]: v for s, v in at[i].items()}
            if -1 in q:  # an entry (of no GPUs) on a server not shown
                self.servers = None
                return False
            top[i] = max(q)
        self.servers, self.sid, self.used = servers, sid, used
        return True

    def view(self, snap: Snapshot, active: Mapping[int, Any]) -> Cluster | None:
        """The index view of ``snap``, the snapshot of the ``active`` jobs (arrival index -> job, in arrival
        order: the snapshot's jobs, each with its ``placement``); None where a job holds a server the snapshot
        does not show."""
        n = len(active)
        idx = np.fromiter(active, np.int64, n)
        lo = self.lo[idx]
        if n and int(lo.min()) < 0:  # jobs shown for the first time: their fixed columns, from the structs shown
            jobs = snap.jobs
            for k in np.flatnonzero(lo < 0).tolist():
                job, i = jobs[k], int(idx[k])
                self.gpw[i], self.lo[i], self.hi[i] = job.gpus_per_worker, job.min_workers, job.max_workers
                self.submit[i] = job.submit_time
            lo = self.lo[idx]
        if snap.servers is not self.servers and not self._index(snap.servers, active, idx):
            return None
        at = self.at
        placement = tuple([at[i] for i in active])
        # the jobs that hold a placement and those that do not, from the flags (a test per placement reads every
        # placement's dict header again, cold on most rounds)
        has = self.has[idx]
        held = tuple(has.nonzero()[0].tolist())
        not_held = (~has).nonzero()[0]
        server_gpus = server_index(snap.servers)[4]
        if server_gpus != self.sjf_gpus:  # the key depends on it
            self.sjf.fill(np.nan)
            self.sjf_gpus = server_gpus
        memo = self.sjf[idx]
        self._memo = (idx, memo)
        return Cluster.given(snap, placement=placement, held=held, workers=self.workers[idx], gpw=self.gpw[idx],
                             min_w=lo, max_w=self.hi[idx], used=np.array(self.used, np.int64), sjf_memo=memo,
                             not_held=not_held, submit=self.submit[idx])

    def learn(self) -> None:
        """Keep the sjf keys that the round of the last :meth:`view` computed."""
        if self._memo is not None:
            idx, memo = self._memo
            self.sjf[idx] = memo
            self._memo = None


#: ``sys.getrefcount`` of a struct that :attr:`Kept.shown` alone holds, seen from :meth:`Kept.snapshot`'s loop (the
#: list's reference, the loop's name and the call's argument). Such a struct is out of every snapshot made before
#: (their job lists are gone), so the loop brings it up to now in place: nobody can see it change, as nobody sees
#: the fresh copy that :func:`..policies.base._again` sets the same way. A struct that anyone else still holds (a
#: snapshot kept by a caller, or one not yet freed) is copied first, as before.
_SOLE = 3
