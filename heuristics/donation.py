"""Admission by donation (Lyra's base demand before elastic extras): a queued job whose base demand does not fit
in free GPUs may take the extra workers (above ``min_workers``) of jobs that were running before the round.

:class:`Donation` is the state of one round's second admission pass: each job, in queue order, is placed all or
nothing (:meth:`Donation.admit`); a donor keeps at least its ``min_workers`` (and, by the caller's rule, does not
grow back in the same round's scaling).

Running time: a job that cannot fit is rejected in O(G) (G the largest room of a server) from bounds kept per GPU
size; one that may fit scans servers by tier, then most room, then index, O(S + donors on the servers scanned).

The compiled twin of this class, run with the first pass of admission in one call, is
:func:`lyra_solver.heuristics._nbadmit.admit_all` (the same answers: its buckets are bitsets over the server
indices, scanned in the same order; a trial's changes are undone from a log instead of being kept apart); the round
takes it by the rule of :func:`lyra_solver.heuristics.placement.compiled`. Changing a rule here means changing it
there too: ``tests/solver/test_admission.py`` compares the two.

References
----------
Li et al., "Lyra: Elastic Scheduling for Deep Learning Clusters", EuroSys 2023 (base demand is served before
elastic extras; extra workers are the ones given up first).
"""
from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["Donation"]


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


class Donation:
    """Free GPUs plus the extra workers of jobs running before the round, offered to base demand.

    Owned by one admission (step 3 of the round, :mod:`lyra_solver.steps.admit`); it takes the free GPUs and the
    placements at the end of the first pass and keeps its own copies (the caller reads the donors' new placements
    from ``donor_placement`` and the donors from ``gave``). Servers are given by index with their tier
    (``-1``: not usable); jobs by index with their GPUs per worker, ``min_workers`` and whether they ran before
    the round (only those donate).

    A job's base demand is placed all or nothing, scanning servers by tier, then most room, then index, where
    ``room[s]`` is what server ``s`` could offer: its free GPUs plus the workers its donors could give there.
    On a server, free GPUs are used first; when fewer than a worker's GPUs are free, one more worker is taken
    from the donor there with most extra workers left (then the lowest job index), and so on.

    Rejection in O(G) for a job that cannot fit: ``total`` is the GPUs offered cluster-wide (free plus every
    donor's extra workers), and ``room_count[r]`` the number of usable servers with room ``r``, so
    ``sum_r room_count[r] * (r // g)`` bounds the workers of ``g`` GPUs that any scan can place.
    """

    def __init__(self, gpus_per_worker: list[int], min_workers: list[int], ran_before: list[bool], free: list[int],
                 tier: list[int], placement: list[dict[int, int] | None], n_tiers: int) -> None:
        self.gpw = list(gpus_per_worker)
        self.free = list(free)
        self.tier = tier
        self.donor_placement: dict[int, dict[int, int]] = {}
        self.spare: dict[int, int] = {}
        self.hosts: dict[int, list[int]] = {}
        self.gave: set[int] = set()
        min_w = min_workers
        for d, pl in enumerate(placement):
            if pl and ran_before[d]:
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
        self.buckets: list[list[list[int]]] = [[[] for _ in range(self.top + 1)] for _ in range(n_tiers)]
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

    def _scan_order(self, g: int) -> Iterator[int]:
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
