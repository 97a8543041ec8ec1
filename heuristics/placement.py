"""Best-fit-decreasing placement of workers onto servers (DESIGN "Place"), and the free-GPU index it uses.

Base demand goes to training servers first, flexible (extra) workers to loaned servers first, so that a
later reclaim shrinks jobs instead of preempting them. Workers a job already has on a server are kept
(up to its new count); a shrinking job gives up workers on loaned servers first.

References
----------
Li et al., "Lyra: Elastic Scheduling for Deep Learning Clusters", EuroSys 2023 (flexible workers on loaned
servers so that reclaiming shrinks jobs rather than preempting them); Johnson, "Near-optimal bin packing
algorithms", MIT 1973 (best fit decreasing).
"""
from __future__ import annotations

import bisect
import functools
import time
from collections.abc import Callable
from functools import cache
from types import ModuleType
from typing import ParamSpec, TypeVar

import numpy as np
from lyra_solver.formulations._result import Status
from lyra_solver.formulations.mckp import _numba
from lyra_solver.formulations.placement import Placement, PlacementProblem, PlacementResult
from lyra_solver.formulations.vocabulary import Tier

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: Jobs (queued ones for admission, moving ones for placement) from which a round loads the package's numba
#: kernels (:func:`lyra_solver.formulations.mckp._numba.load`) to take the compiled twins
#: (:mod:`lyra_solver.heuristics._nbadmit`) in a process that has not loaded them: the loading (once per process,
#: from numba's disk cache) costs 0.3-1 s, which the Python admission and placement of one round cost from about
#: 200,000 jobs on (50,000 queued jobs on 12,500 servers: about 0.3 s). Smaller rounds run the Python twins and
#: charge their time to the process's ski rental (:func:`charges_twins`), which loads the kernels for the later
#: rounds of a process that has spent as much as the loading costs (``_numba.LOAD_AFTER_S``); a long-running
#: server or the simulator loads them at its start.
LOAD_MIN_JOBS = 200_000

#: Jobs below which the Python twins run even when the kernels are loaded: none but an empty round. The Python
#: twins build their free index over every server (O(S) in Python), the compiled ones in C: on the simulator's rounds
#: (96 servers, most rounds placing 1-3 jobs and admitting a few) the compiled calls, their arrays in and dicts out
#: included, cost less from one job on (parts.py on 1,300 captured rounds: place 0.085 -> 0.058 ms, admit 0.102 ->
#: 0.087 ms against the former 32).
COMPILED_MIN_JOBS = 1

#: Largest free-GPU count (server size) for which the compiled twins keep their arrays per free count: their
#: index holds ``tiers x (largest + 1)`` counts and, for donation, as many bitsets over the servers.
DENSE_MAX = 1 << 12


def compiled(n_jobs: int, free: np.ndarray) -> ModuleType | None:
    """The compiled twins (:mod:`lyra_solver.heuristics._nbadmit`) for a round of ``n_jobs`` jobs to admit or
    place on servers with ``free`` GPUs, or ``None`` for the Python ones.

    The rule of :mod:`lyra_solver.formulations.mckp._numba`: compiled when the package's kernels are loaded in
    the process already, or when the round is large (:data:`LOAD_MIN_JOBS`, which loads them); not for tiny
    rounds (:data:`COMPILED_MIN_JOBS`) nor servers beyond :data:`DENSE_MAX` free GPUs. Both give the same answers.
    O(1) for a tiny round, else O(S).
    """
    if n_jobs < COMPILED_MIN_JOBS or int(free.max(initial=0)) > DENSE_MAX:
        return None
    if not _numba.loaded() and (not (n_jobs >= LOAD_MIN_JOBS or _numba.want(0)) or not _numba.load()):
        return None
    return _kernels()


def charges_twins(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """``func`` (a step or heuristic that may take the compiled twins, see :func:`compiled`) charging the time of
    a call that ran without the kernels loaded to the process's ski rental (:func:`_numba.charge`, as the MCKP's
    numpy path does): once a process has spent about what loading them costs, its next round loads them. A call
    with the kernels loaded pays one check."""
    @functools.wraps(func)
    def charged(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if _numba.loaded():
            return func(*args, **kwargs)
        start = time.perf_counter()
        out = func(*args, **kwargs)
        if not _numba.loaded():
            _numba.charge(time.perf_counter() - start)
        return out
    return charged


@cache
def _kernels() -> ModuleType | None:
    """:mod:`lyra_solver.heuristics._nbadmit`, imported once (``None`` when numba cannot be imported)."""
    try:
        import lyra_solver.heuristics._nbadmit as nb
    except ImportError:
        return None
    return nb


class FreeIndex:
    """Servers bucketed by free GPUs, per tier: best fit and largest over the distinct free counts.

    Buckets are kept only for the free counts that occur (a sorted key list per tier), so memory and query
    time follow the number of distinct free counts, never the size of the largest server (a server of
    2**31 - 1 GPUs costs one bucket). Free GPUs of a server may only go down while the index is in use
    (placement never frees GPUs), so a server enters each bucket at most once; stale entries are skipped
    lazily. Ties pick the server that entered the bucket last among the lowest indices first pushed, which
    is deterministic.
    """

    def __init__(self, free: np.ndarray, tier: np.ndarray, n_tiers: int) -> None:
        self.free = np.asarray(free, dtype=np.int64).tolist()
        self.tier = np.asarray(tier, dtype=np.int64).tolist()
        self.top = max(self.free, default=0)
        self.buckets: list[dict[int, list[int]]] = [{} for _ in range(n_tiers)]
        for s in range(len(self.free) - 1, -1, -1):  # lowest index on top of each stack
            f = self.free[s]
            if f > 0:
                self.buckets[self.tier[s]].setdefault(f, []).append(s)
        self.keys: list[list[int]] = [sorted(b) for b in self.buckets]  # sorted free counts with a bucket
        # exact servers per (tier, free)
        self.count: list[dict[int, int]] = [{f: len(stack) for f, stack in b.items()} for b in self.buckets]

    def _push(self, t: int, f: int, s: int) -> None:
        stack = self.buckets[t].get(f)
        if stack is None:
            stack = self.buckets[t][f] = []
            bisect.insort(self.keys[t], f)
        stack.append(s)
        self.count[t][f] = self.count[t].get(f, 0) + 1

    def _peek(self, t: int, f: int) -> int | None:
        stack = self.buckets[t][f]
        while stack:
            s = stack[-1]
            if self.free[s] == f:
                return s
            stack.pop()
        return None

    def _drop_empty(self, t: int, f: int) -> None:
        del self.buckets[t][f]
        keys = self.keys[t]
        del keys[bisect.bisect_left(keys, f)]

    def best_fit(self, t: int, need: int) -> int | None:
        """Server of tier ``t`` with the fewest free GPUs that still has ``need``."""
        keys = self.keys[t]
        i = bisect.bisect_left(keys, max(need, 1))
        while i < len(keys):
            f = keys[i]
            s = self._peek(t, f)
            if s is not None:
                return s
            self._drop_empty(t, f)
        return None

    def largest(self, t: int) -> int | None:
        """Server of tier ``t`` with the most free GPUs (None when all are full)."""
        keys = self.keys[t]
        while keys:
            f = keys[-1]
            s = self._peek(t, f)
            if s is not None:
                return s
            self._drop_empty(t, f)
        return None

    def capacity(self, g: int, tiers: tuple[int, ...]) -> int:
        """How many workers of ``g`` GPUs the servers of ``tiers`` can still hold."""
        return sum(c * (f // g) for t in tiers for f, c in self.count[t].items() if f >= g)

    def take(self, s: int, gpus: int) -> None:
        f = self.free[s] - gpus
        if f < 0:
            raise ValueError(f"server {s} over-committed")
        t = self.tier[s]
        if self.free[s] > 0:
            self.count[t][self.free[s]] -= 1
        self.free[s] = f
        if f > 0:
            self._push(t, f, s)

    def place(self, n: int, g: int, tiers: tuple[int, ...], out: dict[int, int]) -> int:
        """Put up to ``n`` workers of ``g`` GPUs on servers of ``tiers`` (in order); return how many fit.

        Within a tier: first the servers already in ``out`` (the job's own), then one server that holds
        all the rest (best fit) if there is one, else the server with most room, repeatedly; fewest servers
        spanned for the job that way.
        """
        left = n
        for t in tiers:
            for s in sorted(out):  # servers the job is already on come first: fewer servers spanned
                if left and self.tier[s] == t and self.free[s] >= g:
                    k = min(left, self.free[s] // g)
                    self.take(s, k * g)
                    out[s] += k
                    left -= k
            while left > 0:
                s = self.best_fit(t, left * g)
                if s is not None:
                    k = left
                else:
                    s = self.largest(t)
                    if s is None or self.free[s] < g:
                        break
                    k = self.free[s] // g
                self.take(s, k * g)
                out[s] = out.get(s, 0) + k
                left -= k
            if left == 0:
                break
        return n - left


TRAINING, LOANED = Tier.TRAINING, Tier.LOANED  # placement tiers (lyra_solver.formulations.vocabulary)


@charges_twins
def best_fit_decreasing(problem: PlacementProblem, *, keep_current: bool = True,
                        evaluate: bool = True) -> PlacementResult:
    """Place every job's workers, best fit decreasing (``solve_placement(problem, method="bfd")``).

    With ``keep_current`` each job first keeps ``min(current, target)`` of its current workers (a shrinking
    job drops workers on loaned servers first, then where it has fewest); without it (the round's default:
    a job whose count changes restarts anyway, so moving its workers costs nothing more) every job is placed
    afresh. The rest are placed job by job in decreasing order of GPUs per worker, then of workers to place:
    base-demand workers on training servers first, extra workers on loaned servers first; when no loaned
    server has room, base and extra workers go together (one fit for the whole job spans fewer servers than
    a tight fit for the base plus the extras elsewhere). A job whose workers do not all fit keeps those that
    did (the caller decides what fewer workers mean): the result is then ``no_solution`` with that partial
    placement and no objective, else ``feasible`` with the placement's ``(base_on_loaned, spans, moved)`` (with
    ``evaluate``; without it the objective is left ``None``: the round's place step, which never reads it, saves
    its O(size of the placement) per call, 15-130 us on the snapshots of 8-300 jobs measured). Its ``placed``
    gives the workers each job got either way. A job whose worker fits on no server gets none (the others are
    placed), where the front door's exact methods answer ``infeasible``.

    Placed afresh, 8% of the GPU-seconds of ``lyra-exact --objective hesrpt`` on Pollux workload 4 ran on more
    servers than their worker count needs, against 80% keeping current workers and 18% with the placement
    ILP: the measured rate of a placement falls with the servers it spans.

    Running time O(C log C + sum_j (servers used by j) * G) with G the largest free GPU count, plus O(size of the
    placement) for the objective (``evaluate``). The placing loop has a compiled twin
    (:func:`lyra_solver.heuristics._nbadmit.bfd_place`: the same placement, tie for tie), taken by the rule of
    :func:`compiled`: on the 17,000 jobs that a 12,500 x 50,000 round places, about 6 ms instead of 60.

    Examples
    --------
    A training and a loaned server of 8 GPUs. Job 1 (three 2-GPU workers, all base demand) goes first and
    fills most of the training server; job 0 keeps its 2 workers on the loaned server and its base demand
    takes what training has left, the rest going to the loaned server:

    >>> from lyra_solver.formulations.placement import PlacementProblem
    >>> p = PlacementProblem.build(server_free=[8, 8], server_loaned=[False, True], job_workers=[6, 3],
    ...                            job_base=[4, 3], job_gpus_per_worker=[1, 2], cur_job=[0], cur_server=[1],
    ...                            cur_count=[2])
    >>> out = best_fit_decreasing(p)
    >>> out.placement.per_job, out.placed.tolist(), str(out.status), out.objective
    ((((0, 2), (1, 4)), ((0, 3),)), [6, 3], 'feasible', (2, 3, 0))
    """
    start = time.perf_counter()
    J = problem.n_jobs
    gpw = problem.job_gpus_per_worker
    nb = compiled(J, problem.server_free)
    fast = _bfd_compiled(nb, problem, keep_current) if nb is not None else None
    if fast is not None:
        return _bfd_result(problem, *fast, start, evaluate)
    loaned = problem.server_loaned
    per_job: list[dict[int, int]] = [{} for _ in range(J)]
    free = problem.server_free.astype(np.int64).copy()

    # keep current workers up to the new count; drop loaned-first, then where the job has fewest
    cur: dict[int, list[tuple[int, int]]] = {}
    for j, s, c in zip(problem.cur_job, problem.cur_server, problem.cur_count, strict=True):
        cur.setdefault(int(j), []).append((int(s), int(c)))
    for j, pairs in cur.items():
        keep = int(problem.job_workers[j]) if keep_current else 0
        for s, c in sorted(pairs, key=lambda p: (bool(loaned[p[0]]), -p[1], p[0])):
            k = min(c, keep)
            if k > 0:
                per_job[j][s] = k
                keep -= k
    for j in range(J):
        for s, k in per_job[j].items():
            free[s] -= k * int(gpw[j])
    if (free < 0).any():
        raise ValueError("current placements exceed server_free")

    index = FreeIndex(free, loaned.astype(np.int64), 2)
    have = np.array([sum(d.values()) for d in per_job], dtype=np.int64)
    on_training = np.array([sum(k for s, k in d.items() if not loaned[s]) for d in per_job], dtype=np.int64)
    need = problem.job_workers - have
    order = sorted((j for j in range(J) if need[j] > 0), key=lambda j: (-int(gpw[j]), -int(need[j]), j))
    for j in order:
        g = int(gpw[j])
        base_left = max(0, int(problem.job_base[j]) - int(on_training[j]))
        base = min(base_left, int(need[j]))
        extra = int(need[j]) - base
        if base and extra and index.capacity(g, (LOANED,)) == 0:
            # no loaned room: base and extra workers have the same preference, so place them together (one
            # best fit for the whole job spans fewer servers than the base's tight fit plus the extras)
            base, extra = base + extra, 0
        got = index.place(base, g, (TRAINING, LOANED), per_job[j]) if base else 0
        if got == base and extra:
            got += index.place(extra, g, (LOANED, TRAINING), per_job[j])
        have[j] += got
    placement = Placement(per_job=tuple(tuple(sorted(d.items())) for d in per_job))
    return _bfd_result(problem, placement, have, start, evaluate)


def _bfd_compiled(nb, problem: PlacementProblem, keep_current: bool) -> tuple[Placement, np.ndarray] | None:
    """:func:`best_fit_decreasing`'s placement and workers per job by its compiled twin
    (:func:`lyra_solver.heuristics._nbadmit.bfd_place`), or ``None`` where the twin leaves the problem to the Python
    loop (current placements beyond the free GPUs, which that refuses). O(S + J + C) array work plus O(size of the
    placement) to build its tuples."""
    ptr, srv, cnt, have, bad = nb.bfd_place(problem.server_free, problem.server_loaned, problem.job_workers,
                                             problem.job_base, problem.job_gpus_per_worker, problem.cur_job,
                                             problem.cur_server, problem.cur_count, bool(keep_current))
    if bad:
        return None
    # every job's pairs as one slice of the tuple of all pairs (job after job, by increasing server), sliced by a
    # comprehension (a map of the tuple's __getitem__, a slot wrapper, takes twice as long)
    entries = tuple(zip(srv.tolist(), cnt.tolist(), strict=True))
    bounds = ptr.tolist()
    return Placement(per_job=tuple([entries[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)])), have


def bfd_afresh(*, server_free: np.ndarray, server_loaned: np.ndarray, job_workers: np.ndarray,
               job_base: np.ndarray, job_gpus_per_worker: np.ndarray) -> list[dict[int, int]] | None:
    """Best fit decreasing afresh (``best_fit_decreasing(problem, keep_current=False)``) of the problem that
    :meth:`PlacementProblem.trusted` makes of these arrays, by its compiled twin alone, without the problem and
    the result: each job's placement as a dict ``{server: workers}`` (the pairs of the result's ``per_job``, in
    their order), where every worker was placed (the result ``feasible``). For the round's place step where it
    reports nothing (:func:`lyra_solver.pipeline.changes_built`, the simulator's rounds; ``decide`` goes through the
    front door): the problem's copies, the front door and the result were about half of the step's time on the
    simulator's rounds of a few jobs to place.

    The arrays are taken as ``trusted`` takes them (1-D, int64 but ``server_loaned`` bool, from a validated
    snapshot) and made read-only (the twin's signature of the problem's arrays). ``None`` where :func:`compiled`
    gives no twin, the twin declines, or a worker was left out (the caller then takes the front door, which keeps
    current workers). O(S + J + C) array work plus O(size of the placement) for the dicts."""
    n = job_workers.shape[0]
    if n == 0:
        return []
    nb = compiled(n, server_free)
    if nb is None:
        return None
    for a in (server_free, server_loaned, job_workers, job_base, job_gpus_per_worker):
        a.setflags(write=False)
    none = _no_current()
    ptr, srv, cnt, have, bad = nb.bfd_place(server_free, server_loaned, job_workers, job_base, job_gpus_per_worker,
                                             none, none, none, False)
    if bad or int((job_workers - have).sum()):
        return None
    return entry_dicts(ptr, srv, cnt)


def entry_dicts(ptr: np.ndarray, srv: np.ndarray, cnt: np.ndarray) -> list[dict[int, int]]:
    """The compiled twins' placements as dicts: job ``i``'s is ``{srv[k]: cnt[k]}`` for ``k`` in
    ``ptr[i]:ptr[i + 1]``, in that order. O(jobs + entries); a one-entry dict (most jobs) is one literal."""
    out: list[dict[int, int]] = []
    add = out.append
    srv_l, cnt_l, bounds = srv.tolist(), cnt.tolist(), ptr.tolist()
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        if b - a == 1:
            add({srv_l[a]: cnt_l[a]})
        else:
            add(dict(zip(srv_l[a:b], cnt_l[a:b], strict=True)))
    return out


@cache
def _no_current() -> np.ndarray:
    """The empty, read-only current-workers array of a problem placed afresh (``trusted``'s ``()``)."""
    out = np.array((), np.int64)
    out.setflags(write=False)
    return out


def _bfd_result(problem: PlacementProblem, placement: Placement, have: np.ndarray, start: float,
                evaluate: bool) -> PlacementResult:
    """:func:`best_fit_decreasing`'s result for its ``placement`` (``have``: the workers each job got)."""
    short = int((problem.job_workers - have).sum())
    if short:
        return PlacementResult(status=Status.NO_SOLUTION, objective=None, bound=None, gap=None,
                               time_s=time.perf_counter() - start, method="bfd", placement=placement,
                               backend_status=f"{short} workers left out (fragmentation)")
    return PlacementResult(status=Status.FEASIBLE, objective=placement.objective(problem) if evaluate else None,
                           bound=None, gap=None, time_s=time.perf_counter() - start, method="bfd",
                           placement=placement, backend_status="every worker placed")
