"""Job packing (DESIGN "Packing"): the problem type, the result type and the objective every method shares.

*Hosts* are jobs running after the engine's step 5; *guests* are jobs that would wait, run at their
``min_workers``. A *candidate* is one way for a guest to join a host: the guest's workers sit on GPUs of the
host's workers, on given servers. The engine builds the candidates so that they obey the rules (a guest has no
more GPUs than its host, the memory of both fits the server's GPUs); the problem validates both again.

Capacity: on each (host, server) *slot* the host has ``slot_capacity`` workers; a candidate uses
``use_count`` of them there (the host workers whose GPUs its workers share). A host worker is shared with one
guest at most, so a GPU holds two jobs at most and the packing sets are stars (guests never share with each
other). A guest of as many GPUs as its host uses every host worker: equal sizes pack only as a pair.

Speeds: for each candidate and each pair of MPS shares (guest share index ``k``, host share index ``l``,
share ``(k + 1) / 10``) the guest's speed and the speed of the host workers it shares with, from
:func:`~lyra_solver.formulations.packing.speed.pair_speed`. The host's speed is the mean of its workers'
speeds (sample stealing) or their minimum; unshared workers run at 1.

Objective (larger is better), the gain of the packing over not packing, summed over the packing sets
(a host with its guests): with ``T`` a job's remaining time alone and ``speed`` its packed speed,

- ``jct``: ``sum_guests speed_g / T_g + sum_hosts (speed_h - 1) / T_h`` (progress, favouring short jobs);
- ``deadline``: jobs predicted to meet their deadline (``T / speed <= time left``) gained, then ``jct``:
  ``met_gained + jct / N`` with ``N = 1 + sum 1/T`` over all jobs, so that the ``jct`` part stays in (-1, 1);
- ``makespan``: per set, ``(1 + guests) * min(speed in the set) - 1`` (every job of the set progresses at
  least at the set's smallest speed; DESIGN's "smallest speed in the set", counted per job of the set so that
  adding a guest can pay: with one set fixed, it orders share choices exactly as the smallest speed does).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from lyra_solver.formulations._result import SolveResult, Status, relative_gap
from lyra_solver.formulations.packing.speed import SHARES, pair_speed

__all__ = ["POLICIES", "PackingProblem", "PackingResult", "Member", "evaluate_packing", "make_result",
           "set_value"]

#: The objectives (Gimbal's policies).
POLICIES: tuple[str, ...] = ("jct", "deadline", "makespan")
N_SHARES = SHARES.shape[0]

#: One guest in a packing set: (candidate index, guest share index, host share index).
Member = tuple[int, int, int]


def _frozen(a: Any, dtype: Any, name: str, ndim: int = 1) -> np.ndarray:
    try:
        arr = np.array(a, dtype=dtype, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected an array of {np.dtype(dtype).name} ({exc})") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension(s), got shape {arr.shape}")
    arr.setflags(write=False)
    return arr


def _check(cond: Any, name: str, what: str) -> None:
    if not bool(np.all(cond)):
        raise ValueError(f"{name}: {what}")


@dataclass(frozen=True, eq=False)
class PackingProblem:
    """Which guests join which hosts, with which shares (read-only arrays; build with :meth:`build`).

    Attributes
    ----------
    host_util, host_time, host_workers, host_gpus, host_mem, host_deadline : (H,) arrays
        ``gpu_util`` in (0, 1]; remaining time alone (s, > 0); workers; GPUs in all; GPU memory (GB) per
        GPU; seconds left to the deadline (``inf``: none).
    guest_util, guest_time, guest_gpus, guest_mem, guest_deadline : (Q,) arrays
        The same for guests (at ``min_workers``).
    slot_host, slot_capacity, slot_mem : (L,) arrays
        Host of each slot, its workers on that slot's server, the server's GPU memory (GB).
    cand_guest, cand_host : (C,) int
        Guest and host of each candidate.
    use_ptr : (C + 1,) int; use_slot, use_count : (U,) int
        Candidate ``c`` uses ``use_count[i]`` host workers of slot ``use_slot[i]`` for ``i`` in
        ``use_ptr[c]:use_ptr[c + 1]``; ``cand_host_workers[c]`` is their sum.
    speed_guest, speed_host : (C, 10, 10) float
        Speeds at guest share index ``k`` and host share index ``l``.
    policy : str
        ``jct``, ``deadline`` or ``makespan``.
    sample_stealing : bool
        Host speed = mean (True) or min (False) of its workers' speeds.
    """

    host_util: np.ndarray
    host_time: np.ndarray
    host_workers: np.ndarray
    host_gpus: np.ndarray
    host_mem: np.ndarray
    host_deadline: np.ndarray
    guest_util: np.ndarray
    guest_time: np.ndarray
    guest_gpus: np.ndarray
    guest_mem: np.ndarray
    guest_deadline: np.ndarray
    slot_host: np.ndarray
    slot_capacity: np.ndarray
    slot_mem: np.ndarray
    cand_guest: np.ndarray
    cand_host: np.ndarray
    use_ptr: np.ndarray
    use_slot: np.ndarray
    use_count: np.ndarray
    speed_guest: np.ndarray
    speed_host: np.ndarray
    policy: str = "jct"
    sample_stealing: bool = True
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    # ------------------------------------------------------------------------------------------ build
    @classmethod
    def build(cls, *, host_util: Any, host_time: Any, host_workers: Any, host_gpus: Any, host_mem: Any,
              guest_util: Any, guest_time: Any, guest_gpus: Any, guest_mem: Any, slot_host: Any,
              slot_capacity: Any, slot_mem: Any, candidates: Sequence[tuple[int, int, Sequence[tuple[int, int]]]],
              host_deadline: Any = None, guest_deadline: Any = None, policy: str = "jct",
              sample_stealing: bool = True, overhead: float = 0.05,
              measured: Any = None) -> PackingProblem:
        """Build and validate a problem.

        Parameters
        ----------
        host_*, guest_*, slot_* : array_like
            As the attributes; deadlines default to none (``inf``).
        candidates : sequence of (guest, host, [(slot, host workers used), ...])
            Each way a guest may join a host.
        policy, sample_stealing : as the attributes.
        overhead : float
            Packing overhead of the speed model.
        measured : array_like (C, 2), optional
            Measured (guest speed, host speed) of a candidate's pair; NaN rows use the model.

        Raises
        ------
        ValueError
            Naming the argument: shapes, ranges, indices, a guest larger than its host, memory that does
            not fit, a slot of another host, or more host workers used than the slot has.
        """
        hu = _frozen(host_util, np.float64, "host_util")
        H = hu.shape[0]
        ht = _frozen(host_time, np.float64, "host_time")
        hw = _frozen(host_workers, np.int64, "host_workers")
        hg = _frozen(host_gpus, np.int64, "host_gpus")
        hm = _frozen(host_mem, np.float64, "host_mem")
        hd = _frozen(np.full(H, np.inf) if host_deadline is None else host_deadline, np.float64, "host_deadline")
        gu = _frozen(guest_util, np.float64, "guest_util")
        Q = gu.shape[0]
        gt = _frozen(guest_time, np.float64, "guest_time")
        gg = _frozen(guest_gpus, np.int64, "guest_gpus")
        gm = _frozen(guest_mem, np.float64, "guest_mem")
        gd = _frozen(np.full(Q, np.inf) if guest_deadline is None else guest_deadline, np.float64,
                     "guest_deadline")
        for name, arr, n in (("host_time", ht, H), ("host_workers", hw, H), ("host_gpus", hg, H),
                             ("host_mem", hm, H), ("host_deadline", hd, H), ("guest_time", gt, Q),
                             ("guest_gpus", gg, Q), ("guest_mem", gm, Q), ("guest_deadline", gd, Q)):
            _check(arr.shape[0] == n, name, f"expected {n} entries, got {arr.shape[0]}")
        for name, arr in (("host_util", hu), ("guest_util", gu)):
            _check((arr > 0) & (arr <= 1), name, "every gpu_util must be in (0, 1]")
        for name, arr in (("host_time", ht), ("guest_time", gt)):
            _check(np.isfinite(arr) & (arr > 0), name, "remaining times must be finite and positive")
        for name, arr in (("host_workers", hw), ("host_gpus", hg), ("guest_gpus", gg)):
            _check(arr >= 1, name, "must be >= 1")
        for name, arr in (("host_mem", hm), ("guest_mem", gm)):
            _check(np.isfinite(arr) & (arr >= 0), name, "GPU memory must be finite and >= 0")
        for name, arr in (("host_deadline", hd), ("guest_deadline", gd)):
            _check(~np.isnan(arr), name, "deadlines must be numbers (inf: none)")
        sh = _frozen(slot_host, np.int64, "slot_host")
        L = sh.shape[0]
        sc = _frozen(slot_capacity, np.int64, "slot_capacity")
        sm = _frozen(slot_mem, np.float64, "slot_mem")
        _check(sc.shape[0] == L, "slot_capacity", f"expected {L} entries")
        _check(sm.shape[0] == L, "slot_mem", f"expected {L} entries")
        _check((sh >= 0) & (sh < H), "slot_host", f"host indices must be in [0, {H})")
        _check(sc >= 1, "slot_capacity", "must be >= 1")
        _check(np.isfinite(sm) & (sm > 0), "slot_mem", "must be finite and positive")
        if policy not in POLICIES:
            raise ValueError(f"policy: unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
        cg, ch, ptr, us, uc = [], [], [0], [], []
        for i, cand in enumerate(candidates):
            try:
                g, h, uses = cand
                g, h = int(g), int(h)
                uses = [(int(s), int(n)) for s, n in uses]
            except (TypeError, ValueError):
                raise ValueError(f"candidates[{i}]: expected (guest, host, [(slot, count), ...])") from None
            if not (0 <= g < Q and 0 <= h < H):
                raise ValueError(f"candidates[{i}]: guest {g} or host {h} out of range")
            if gg[g] > hg[h]:
                raise ValueError(f"candidates[{i}]: guest {g} has {gg[g]} GPUs, more than host {h} ({hg[h]}): "
                                 "a smaller job joins a larger one")
            if not uses:
                raise ValueError(f"candidates[{i}]: uses no slot")
            seen = set()
            for s, n in uses:
                if not 0 <= s < L or sh[s] != h or s in seen:
                    raise ValueError(f"candidates[{i}]: slot {s} is not a distinct slot of host {h}")
                seen.add(s)
                if not 1 <= n <= sc[s]:
                    raise ValueError(f"candidates[{i}]: uses {n} host workers of slot {s}, which has {sc[s]}")
                if hm[h] + gm[g] > sm[s] + 1e-9:
                    raise ValueError(f"candidates[{i}]: GPU memory {hm[h]} + {gm[g]} GB does not fit slot {s} "
                                     f"({sm[s]} GB)")
                us.append(s)
                uc.append(n)
            cg.append(g)
            ch.append(h)
            ptr.append(len(us))
        C = len(cg)
        cg_a, ch_a = np.array(cg, dtype=np.int64), np.array(ch, dtype=np.int64)
        if measured is None:
            meas = np.full((C, 2), np.nan)
        else:
            meas = np.array(measured, dtype=np.float64).reshape(-1, 2) if C else np.zeros((0, 2))
            _check(meas.shape == (C, 2), "measured", f"expected shape ({C}, 2)")
        k = SHARES[:, None]
        lsh = SHARES[None, :]
        sg = np.zeros((C, N_SHARES, N_SHARES))
        shs = np.zeros((C, N_SHARES, N_SHARES))
        if C:
            sg, shs = pair_speed(gu[cg_a][:, None, None], hu[ch_a][:, None, None], k[None], lsh[None],
                                 overhead=overhead, measured_a=meas[:, 0, None, None],
                                 measured_b=meas[:, 1, None, None])
        return cls(hu, ht, hw, hg, hm, hd, gu, gt, gg, gm, gd, sh, sc, sm,
                   _frozen(cg_a, np.int64, "cand_guest"), _frozen(ch_a, np.int64, "cand_host"),
                   _frozen(ptr, np.int64, "use_ptr"), _frozen(us, np.int64, "use_slot"),
                   _frozen(uc, np.int64, "use_count"), _frozen(sg, np.float64, "speed_guest", 3),
                   _frozen(shs, np.float64, "speed_host", 3), policy, bool(sample_stealing))

    # ------------------------------------------------------------------------------------------ views
    @property
    def n_hosts(self) -> int:
        return int(self.host_util.shape[0])

    @property
    def n_guests(self) -> int:
        return int(self.guest_util.shape[0])

    @property
    def n_candidates(self) -> int:
        return int(self.cand_guest.shape[0])

    def with_policy(self, policy: str) -> PackingProblem:
        """The same problem under another objective."""
        if policy not in POLICIES:
            raise ValueError(f"policy: unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
        return PackingProblem(*(getattr(self, f) for f in (
            "host_util", "host_time", "host_workers", "host_gpus", "host_mem", "host_deadline", "guest_util",
            "guest_time", "guest_gpus", "guest_mem", "guest_deadline", "slot_host", "slot_capacity", "slot_mem",
            "cand_guest", "cand_host", "use_ptr", "use_slot", "use_count", "speed_guest", "speed_host")),
            policy=policy, sample_stealing=self.sample_stealing)

    def uses(self, c: int) -> list[tuple[int, int]]:
        """(slot, host workers) pairs of candidate ``c``."""
        a, b = int(self.use_ptr[c]), int(self.use_ptr[c + 1])
        return list(zip(self.use_slot[a:b].tolist(), self.use_count[a:b].tolist(), strict=True))

    def cand_host_workers(self, c: int) -> int:
        """Host workers whose GPUs candidate ``c`` shares."""
        return int(self.use_count[self.use_ptr[c]:self.use_ptr[c + 1]].sum())

    def candidates_of_guest(self, g: int) -> list[int]:
        """Candidate indices of guest ``g``, in index order."""
        lists = self._cache.get("by_guest")
        if lists is None:
            lists = [[] for _ in range(self.n_guests)]
            for c, gg in enumerate(self.cand_guest.tolist()):
                lists[gg].append(c)
            self._cache["by_guest"] = lists
        return lists[g]

    @property
    def deadline_norm(self) -> float:
        """``N = 1 + sum 1/T`` over hosts and guests: divides ``jct`` inside the ``deadline`` objective."""
        return 1.0 + float((1.0 / self.host_time).sum() + (1.0 / self.guest_time).sum())

    def guest_meets(self, g: int, speed: float) -> bool:
        """Whether guest ``g`` at ``speed`` is predicted to meet its deadline."""
        return bool(self.guest_time[g] <= speed * self.guest_deadline[g])

    def host_meets(self, h: int, speed: float) -> bool:
        """Whether host ``h`` at ``speed`` is predicted to meet its deadline."""
        return bool(self.host_time[h] <= speed * self.host_deadline[h])


# ---------------------------------------------------------------------------------------------- objective
def host_speed(problem: PackingProblem, h: int, members: Sequence[Member]) -> float:
    """Speed of host ``h`` with the given guests: mean (sample stealing) or min of its workers' speeds."""
    if not members:
        return 1.0
    if problem.sample_stealing:
        loss = 0.0
        for c, k, l in members:
            loss += problem.cand_host_workers(c) * (1.0 - float(problem.speed_host[c, k, l]))
        return 1.0 - loss / float(problem.host_workers[h])
    return min(1.0, min(float(problem.speed_host[c, k, l]) for c, k, l in members))


def set_value(problem: PackingProblem, h: int, members: Sequence[Member]) -> float:
    """Gain of the packing set of host ``h`` with ``members`` over the host alone (0 without members).

    Parameters
    ----------
    problem : PackingProblem
    h : int
        Host index.
    members : sequence of (candidate, guest share index, host share index)
        Candidates of host ``h``, of distinct guests.

    Returns
    -------
    float
        The set's term of the objective of ``problem.policy`` (see the module docstring).

    Notes
    -----
    O(len(members)).
    """
    if not members:
        return 0.0
    s_h = host_speed(problem, h, members)
    t_h = float(problem.host_time[h])
    guest_speeds = [(int(problem.cand_guest[c]), float(problem.speed_guest[c, k, l])) for c, k, l in members]
    if problem.policy == "makespan":
        return (1 + len(members)) * min(s_h, min(s for _, s in guest_speeds)) - 1.0
    jct = (s_h - 1.0) / t_h + sum(s / float(problem.guest_time[g]) for g, s in guest_speeds)
    if problem.policy == "jct":
        return jct
    met = sum(problem.guest_meets(g, s) for g, s in guest_speeds)
    met += int(problem.host_meets(h, s_h)) - int(problem.host_meets(h, 1.0))
    return met + jct / problem.deadline_norm


def _sets(problem: PackingProblem, assignment: Sequence[int], guest_share: Sequence[int],
          host_share: Sequence[int]) -> dict[int, list[Member]]:
    sets: dict[int, list[Member]] = {}
    for g, c in enumerate(assignment):
        if c < 0:
            continue
        sets.setdefault(int(problem.cand_host[c]), []).append((int(c), int(guest_share[g]), int(host_share[g])))
    return sets


def feasibility_error(problem: PackingProblem, assignment: Sequence[int], guest_share: Sequence[int],
                      host_share: Sequence[int]) -> str | None:
    """Why a solution breaks the problem's rules (``None``: it keeps them).

    Checks: one entry per guest, candidates of the right guest, share indices in 0..9, slot capacity.
    """
    Q = problem.n_guests
    if not (len(assignment) == len(guest_share) == len(host_share) == Q):
        return f"expected {Q} entries per array"
    used: dict[int, int] = {}
    for g in range(Q):
        c = int(assignment[g])
        if c < 0:
            continue
        if c >= problem.n_candidates or int(problem.cand_guest[c]) != g:
            return f"guest {g}: candidate {c} is not one of its candidates"
        if not (0 <= int(guest_share[g]) < N_SHARES and 0 <= int(host_share[g]) < N_SHARES):
            return f"guest {g}: share index out of 0..{N_SHARES - 1}"
        for s, n in problem.uses(c):
            used[s] = used.get(s, 0) + n
            if used[s] > int(problem.slot_capacity[s]):
                return f"slot {s}: {used[s]} host workers shared, it has {int(problem.slot_capacity[s])}"
    return None


def evaluate_packing(problem: PackingProblem, assignment: Sequence[int], guest_share: Sequence[int],
                     host_share: Sequence[int]) -> float:
    """Objective of a solution: the sum of :func:`set_value` over hosts (summed in host order).

    Parameters
    ----------
    problem : PackingProblem
    assignment : sequence of int
        Per guest, its candidate index or -1 (not packed).
    guest_share, host_share : sequence of int
        Per guest, the share indices (0..9) of the guest and of its host on the shared GPUs.

    Raises
    ------
    ValueError
        When the solution breaks the problem's rules (see :func:`feasibility_error`).
    """
    err = feasibility_error(problem, assignment, guest_share, host_share)
    if err is not None:
        raise ValueError(f"assignment: {err}")
    sets = _sets(problem, assignment, guest_share, host_share)
    return float(sum(set_value(problem, h, sets[h]) for h in sorted(sets)))


# ---------------------------------------------------------------------------------------------- result
@dataclass(frozen=True, kw_only=True)
class PackingResult(SolveResult):
    """A packing: the shared result fields plus, per guest, its candidate and the two shares.

    Attributes
    ----------
    assignment : tuple of int or None
        Per guest, the candidate index it joins, or -1.
    guest_share, host_share : tuple of float or None
        Per guest, its MPS share and its host's share on the GPUs they share (0.1 .. 1.0; 0.0 when unpacked).
    steps : int
        Search steps taken (squeeze/swell moves of Gimbal's greedy; branches of an exact search; 0 if none).
    """

    assignment: tuple[int, ...] | None
    guest_share: tuple[float, ...] | None
    host_share: tuple[float, ...] | None
    steps: int = 0

    @property
    def packed(self) -> int:
        """Number of guests packed."""
        return 0 if self.assignment is None else sum(1 for c in self.assignment if c >= 0)


def share_index(share: float) -> int:
    """Index 0..9 of a share 0.1..1.0."""
    return int(round(share * 10)) - 1


def make_result(problem: PackingProblem, assignment: Sequence[int] | None, guest_share: Sequence[int] | None,
                host_share: Sequence[int] | None, bound: float | None, *, proven: bool, start: float,
                method: str, backend_status: str, steps: int = 0) -> PackingResult:
    """Assemble a result: check the solution, recompute its objective, derive status and gap.

    ``guest_share`` and ``host_share`` are share *indices* (0..9); unpacked guests' entries are ignored.
    ``proven`` marks a solution proven optimal by the method.
    """
    elapsed = time.perf_counter() - start
    if assignment is None:
        return PackingResult(status=Status.NO_SOLUTION, objective=None, bound=bound, gap=None, time_s=elapsed,
                             method=method, backend_status=backend_status, assignment=None, guest_share=None,
                             host_share=None, steps=steps)
    a = [int(c) for c in assignment]
    gk = [int(k) if c >= 0 else 0 for c, k in zip(a, guest_share, strict=True)]
    hk = [int(k) if c >= 0 else 0 for c, k in zip(a, host_share, strict=True)]
    obj = evaluate_packing(problem, a, gk, hk)
    if proven and (bound is None or bound < obj):
        bound = obj
    gap = relative_gap(obj, bound)
    status = Status.OPTIMAL if (proven or gap == 0.0) else Status.FEASIBLE
    if status is Status.OPTIMAL and gap is None:
        gap = 0.0
    shares = SHARES.tolist()
    return PackingResult(status=status, objective=obj, bound=bound, gap=gap, time_s=elapsed, method=method,
                         backend_status=backend_status, assignment=tuple(a),
                         guest_share=tuple(shares[k] if c >= 0 else 0.0 for c, k in zip(a, gk, strict=True)),
                         host_share=tuple(shares[k] if c >= 0 else 0.0 for c, k in zip(a, hk, strict=True)),
                         steps=steps)
