"""The round's frozen state: the settings, the index view of the snapshot and what each step has decided so far.

Every step of :mod:`lyra_solver.steps` is a pure function ``step(state, settings) -> result`` of the
:class:`RoundState` and the :class:`Settings`; :func:`lyra_solver.pipeline.decide` adds each result to a new
state (``dataclasses.replace``) and hands it to the next step. Nothing here is changed after construction
(frozen dataclasses, tuples; the placements inside are the steps' own and read-only by convention: each step
builds new ones).
"""
from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field, fields
from functools import cached_property
from itertools import compress, filterfalse
from operator import is_not

import numpy as np
from lyra_solver.formulations import SolveResult
from lyra_solver.formulations.vocabulary import (
    OBJECTIVES,
    SERVER_STATES,
    Allocation,
    Packing,
    PackingPolicy,
    PlacementOption,
    QueueOrder,
    ReclaimOption,
    ServerKind,
)
from lyra_solver.heuristics.placement import entry_dicts
from lyra_solver.types import PackingGroup, Snapshot
from lyra_solver.validate import JobColumns, known_columns
from lyra_solver.values import ValueTable

__all__ = ["KIND_IDLE", "KIND_LOANED", "KIND_TRAINING", "Admitted", "Cluster", "Placed", "Reclaimed", "RoundState",
           "Scaled", "Settings", "StepReport", "queued_jobs", "remember_used", "server_index", "usable_servers",
           "used_gpus", "worker_counts"]

#: Workers per server index of one job (``None``: the job does not run).
JobPlacement = dict[int, int] | None


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
    #: the previous decision's ``packing`` (from Python only): guests that may keep their host GPUs (step 6)
    keep_packing: tuple[PackingGroup, ...] = ()
    objective: str = "jct-reduction"  # the value table's formula (lyra_solver.objectives)
    #: whether the steps' reports (objective, bound, gap) are read: ``False`` for a caller that reads the
    #: placements alone (:func:`lyra_solver.pipeline.changes_built`); the greedy allocation then finds no bound
    reports: bool = True

    @property
    def compact_growth(self) -> bool:
        """Whether a running job grows only where its new count fits on the fewest servers it needs (step 5):
        for every objective but Lyra's, whose rounds stay as the paper's. Without it, a growth that best fit
        decreasing can only spread (fragmented servers) is made anyway, and on a network-bound model the
        spread placement runs slower than the count it had (yolov3 at 3 replicas on 2 + 1 GPUs: 4.57 steps/s
        against 5.15 at 2 on one server), which the next round undoes: a restart each way. With it, too, a
        spread job of unchanged count moves onto the fewest servers where that pays for its restart
        (:func:`lyra_solver.steps.place._consolidate`)."""
        return self.objective != OBJECTIVES[0]

    def left(self) -> float:
        """Seconds an exact step may use now: what is left of the round's ``time_limit`` (at least 1 ms)."""
        if self.deterministic or self.deadline == math.inf:
            return self.time_limit
        return max(min(self.time_limit, self.deadline - time.perf_counter()), 0.001)


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
    placement: tuple[JobPlacement, ...]
    server_gpus: int
    #: the jobs with a placement in the snapshot (running, or an empty one), in job order
    held: tuple[int, ...]
    #: workers each job holds in the snapshot (0: none), read-only
    workers: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    #: :func:`used_gpus` of the placement tuples asked for so far this round, by ``id`` (each entry holds its
    #: tuple, so the id stays that tuple's): the reclaim, loan, admission and scale steps ask for the same ones
    used_memo: dict[int, tuple[tuple[JobPlacement, ...], np.ndarray]] = field(default_factory=dict, repr=False)
    #: the ``sjf`` key of each job (its remaining time at ``min_workers``, :func:`lyra_solver.steps.admit.times_at_min`)
    #: where a caller that keeps the index view across rounds knows it from an earlier one (NaN: not known), or
    #: ``None``: the admission step reads the known ones and writes in those it computes, for the caller to keep
    #: (below 2,000 queued jobs, ``admit._READ_ONCE_MIN``: above it the key's columns are read in one pass anyway)
    sjf_memo: np.ndarray | None = field(default=None, repr=False)
    #: :func:`usable_servers` of the reclaim results and borrowed servers asked for so far this round, by ``(id,
    #: borrowed)``: the loan, admission, scale and place steps ask for the same ones
    usable_memo: dict[tuple, tuple[Reclaimed, np.ndarray]] = field(default_factory=dict, repr=False)
    #: the jobs without a placement in the snapshot (int64, job order, read-only) where a caller that keeps the
    #: index view's columns knows them by array operations (:meth:`given`), else ``None``: the reclaim step
    #: then finds them itself (:attr:`Reclaimed.known_queued`)
    not_held: np.ndarray | None = field(default=None, repr=False)
    #: each job's ``submit_time`` (float64, job order, read-only) where a caller that keeps the index view's columns
    #: keeps it too (:meth:`given`), else ``None``: the admission step reads the queued jobs' from their structs
    submit: np.ndarray | None = field(default=None, repr=False)
    #: the job columns that validating the snapshot read (:func:`lyra_solver.validate.known_columns`: a snapshot
    #: that :func:`lyra_solver.parse_snapshot` or :func:`lyra_solver.validate_snapshot` made), else ``None``: the
    #: steps read the job structs themselves
    columns: JobColumns | None = field(default=None, repr=False)

    @classmethod
    def of(cls, snap: Snapshot) -> Cluster:
        """The index view of ``snap`` (O(S + J + H) for S servers, J jobs, H placement entries).

        The GPUs each server's running jobs use (:func:`used_gpus` of the snapshot's placements) are counted in
        the same pass and kept for the steps. The servers' part is shared with the previous call when its
        snapshot had the same servers tuple (a caller such as the simulator keeps it while no server changes):
        read-only arrays, the same values. A snapshot that validation read
        (:func:`lyra_solver.validate.known_columns`) keeps those columns in the view for the steps, and where they
        hold its placements' entries it is indexed from them (:meth:`_of_columns`), not from its structs.
        """
        servers, jobs = snap.servers, snap.jobs
        _, sid, gpus, kind, server_gpus = server_index(servers)
        columns = known_columns(snap)
        if columns is not None and columns.entries is not None:
            return cls._of_columns(snap, columns, sid, gpus, kind, server_gpus)
        used = [0] * len(servers)
        placement = []
        add = placement.append
        n_jobs = len(jobs)
        workers = [0] * n_jobs
        # the jobs' columns, read in the same pass (one visit of each job struct: separate passes over 50,000 jobs
        # each paid the memory reads again)
        gpw, min_w, max_w = [0] * n_jobs, [0] * n_jobs, [0] * n_jobs
        held: list[int] = []
        hold = held.append
        for i, j in enumerate(jobs):
            g = gpw[i] = j.gpus_per_worker
            min_w[i] = j.min_workers
            max_w[i] = j.max_workers
            pl = j.placement
            if pl is None:
                add(None)
                continue
            hold(i)
            p = {}
            n = 0
            for k, v in pl.items():
                s = sid[k]
                p[s] = v
                used[s] += v * g
                n += v
            workers[i] = n
            add(p)
        count = np.array(workers, np.int64)
        count.setflags(write=False)
        cl = cls(
            snap=snap, sid=sid, gpus=gpus, kind=kind,
            gpw=np.array(gpw, np.int64),
            min_w=np.array(min_w, np.int64),
            max_w=np.array(max_w, np.int64),
            placement=tuple(placement),
            server_gpus=server_gpus,
            held=tuple(held),
            workers=count,
            columns=columns,
        )
        remember_used(cl, cl.placement, np.array(used, np.int64))
        return cl

    @classmethod
    def _of_columns(cls, snap: Snapshot, columns: JobColumns, sid: dict[str, int], gpus: np.ndarray,
                    kind: np.ndarray, server_gpus: int) -> Cluster:
        """:meth:`of` from the job columns that validating ``snap`` read, with the placements' entries as arrays
        (``columns.entries``: each entry's server position and workers, each placement's size, the GPUs used per
        server): the same view (the same dicts, arrays and GPUs used), its dicts built from those arrays without
        visiting the snapshot's placements and their id strings again (on 50,000 jobs, reading them cost the round
        about a microsecond a running job in memory traffic). O(S + J) in C, O(R + H) in Python for R running jobs
        and H placement entries."""
        n_jobs = len(snap.jobs)
        placement: list = [None] * n_jobs
        held = columns.held
        where, counts, sizes, used = columns.entries
        srv, cnt = where.tolist(), counts.tolist()
        e = 0
        for i, size in zip(held, sizes.tolist(), strict=True):
            if size == 1:
                placement[i] = {srv[e]: cnt[e]}
            else:
                placement[i] = dict(zip(srv[e:e + size], cnt[e:e + size], strict=True))
            e += size
        total = np.zeros(counts.shape[0] + 1, np.int64)
        np.cumsum(counts, out=total[1:])
        ends = np.cumsum(sizes)
        count = np.zeros(n_jobs, np.int64)
        count[np.asarray(held, np.int64)] = total[ends] - total[ends - sizes]
        count.setflags(write=False)
        cl = cls(snap=snap, sid=sid, gpus=gpus, kind=kind, gpw=columns.gpw, min_w=columns.min_w,
                 max_w=columns.max_w, placement=tuple(placement), server_gpus=server_gpus, held=tuple(held),
                 workers=count, columns=columns)
        remember_used(cl, cl.placement, used.copy())
        return cl

    @classmethod
    def given(cls, snap: Snapshot, *, placement: tuple[JobPlacement, ...], held: tuple[int, ...],
              workers: np.ndarray, gpw: np.ndarray, min_w: np.ndarray, max_w: np.ndarray,
              used: np.ndarray, sjf_memo: np.ndarray | None = None, not_held: np.ndarray | None = None,
              submit: np.ndarray | None = None) -> Cluster:
        """The index view of ``snap`` from its job columns as a caller that built the snapshot keeps them across
        rounds (the simulator, :mod:`lyra_solver.bench.sim.kept`), with servers indexed as
        :func:`server_index` of ``snap.servers`` does: each job's placement ``{server index: workers}`` (the
        same keys in the same order as the snapshot's by server id), the jobs holding one, the workers each
        holds, the GPUs per worker and the worker range of each job (int64 arrays), and the GPUs the placements
        use on each server. Taken as :meth:`of` would make them, unchecked (the caller's tests compare the two);
        the arrays become the view's and read-only. ``sjf_memo``: :attr:`sjf_memo`, the keys the caller knows
        (float64, NaN where not), written in by the round; ``not_held``: :attr:`not_held`, the jobs that ``held``
        lacks (int64); ``submit``: :attr:`submit`, the jobs' submit times (float64). O(S) for a servers tuple seen
        last time, else O(S) more."""
        _, sid, gpus, kind, server_gpus = server_index(snap.servers)
        workers.setflags(write=False)
        for a in (not_held, submit):
            if a is not None:
                a.setflags(write=False)
        cl = cls(snap=snap, sid=sid, gpus=gpus, kind=kind, gpw=gpw, min_w=min_w, max_w=max_w, placement=placement,
                 server_gpus=server_gpus, held=held, workers=workers, sjf_memo=sjf_memo, not_held=not_held,
                 submit=submit)
        remember_used(cl, placement, used)
        return cl


#: The last :func:`_servers_view` made (its servers tuple first): snapshots of consecutive rounds often share it
_last_servers: tuple | None = None


def server_index(servers: tuple) -> tuple:
    """``(servers, sid, gpus, kind, server_gpus)`` of a snapshot's servers, as :meth:`Cluster.of` indexes them
    (``sid``: server id -> index; arrays read-only): the previous call's when ``servers`` is the same tuple, else
    made again. O(1) or O(S)."""
    view = _last_servers
    if view is None or view[0] is not servers:
        view = _servers_view(servers)
    return view


def _servers_view(servers: tuple) -> tuple:
    """``(servers, sid, gpus, kind, server_gpus)`` of a snapshot's servers (arrays read-only), kept as
    :data:`_last_servers` (one entry, replaced as a whole: a concurrent call sees the old view or the new one).
    O(S)."""
    global _last_servers
    n = len(servers)
    sid = {s.id: i for i, s in enumerate(servers)}
    gpu_list = [s.gpus for s in servers]
    kind = np.array([KIND_TRAINING if s.pool == "training" else _CODES[s.state] for s in servers], np.int8)
    if n and gpu_list.count(gpu_list[0]) == n:  # one size (most clusters): the most common, without counting
        # each size (Counter: 0.36 ms of 2.2 on 12,500 servers)
        server_gpus = gpu_list[0]
    else:
        mode = Counter(gpu_list).most_common()
        server_gpus = max((g for g, c in mode if c == mode[0][1]), default=8)
    gpus = np.array(gpu_list, np.int64)
    gpus.setflags(write=False)
    kind.setflags(write=False)
    view = (servers, sid, gpus, kind, int(server_gpus))
    _last_servers = view
    return view


#: The server kinds' codes as plain ints, for tests on the index view's ``kind`` array (an IntEnum operand takes
#: numpy's slow path, about 1.7 us a call)
KIND_TRAINING, KIND_LOANED, KIND_IDLE = int(ServerKind.TRAINING), int(ServerKind.LOANED), int(ServerKind.IDLE)
#: ServerKind code of each inference server state
_CODES = {state: int(ServerKind[state.upper()]) for state in SERVER_STATES}


@dataclass(frozen=True)
class StepReport:
    """What a step tells the decision summary: the method, its status and, where known, objective, bound, gap."""

    method: str
    status: str
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None

    @classmethod
    def of(cls, result: SolveResult, **overrides: object) -> StepReport:
        """The report of a solver's result (any family's :class:`SolveResult`), fields overridden by keyword."""
        given: dict[str, object] = dict(method=result.method, status=str(result.status), objective=result.objective,
                                        bound=result.bound, gap=result.gap)
        given.update(overrides)
        return cls(**given)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------- step results
@dataclass(frozen=True, eq=False)
class Reclaimed:
    """Step 1: the loaned servers given back and the running jobs after it."""

    servers: tuple[int, ...]  # server indices given back
    placement: tuple[JobPlacement, ...]  # running jobs after the reclaim (None: not running)
    preempted: tuple[int, ...]
    shrunk: frozenset[int]
    report: StepReport
    #: ``(placement, the queued jobs as an int64 array)`` where the step knew them by array operations (a large
    #: round): :meth:`queued_array` reads them while ``placement`` is that very tuple (not after a replace)
    known_queued: tuple[tuple[JobPlacement, ...], np.ndarray] | None = field(default=None, repr=False)

    @property
    def queued(self) -> list[int]:
        """The jobs without a placement after the reclaim (queued before, or just preempted), in job order."""
        known = self.known_queued
        if known is not None and known[0] is self.placement:
            return known[1].tolist()
        return [j for j, pl in enumerate(self.placement) if pl is None]

    def queued_array(self) -> tuple[list[int], np.ndarray]:
        """:attr:`queued` and the same jobs as an int64 array."""
        known = self.known_queued
        if known is not None and known[0] is self.placement:
            return known[1].tolist(), known[1]
        queued = self.queued
        return queued, np.fromiter(queued, np.int64, len(queued))


def queued_jobs(cl: Cluster, placement: tuple[JobPlacement, ...], preempted: tuple[int, ...]) -> np.ndarray:
    """The jobs without a placement in ``placement`` (int64, job order), for a placement that the reclaim step made
    of the index view's: the jobs with no snapshot placement, and the ``preempted`` ones (the only entries it sets
    to ``None``). Array operations, O(J) in C."""
    mask = np.ones(len(placement), np.bool_)
    held = cl.held
    mask[np.fromiter(held, np.int64, len(held))] = False
    mask[np.fromiter(preempted, np.int64, len(preempted))] = True
    out = np.flatnonzero(mask)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class Admitted:
    """Step 3: running and admitted jobs (admitted ones at their base demand).

    :attr:`placement` is every job's placement after admission. Where the compiled admission ran, the admitted
    jobs' dicts are made only when it is read (:attr:`made`): every admitted job moves or stops in the place step,
    which places it afresh, so a round whose later steps read only :attr:`base` never makes them (on 10,405
    admitted jobs of a 50,000-job round the step took 4-7 ms less without them)."""

    #: every job's placement after admission, except, where :attr:`made` is given, the admitted jobs': theirs
    #: before admission (``None``, a queued job's) until :attr:`placement` makes them
    base: tuple[JobPlacement, ...]
    admitted: tuple[int, ...]
    donors: frozenset[int]  # running jobs that gave workers to admitted ones
    #: GPUs per server that the admitted jobs' placements use (read-only), where the step knows it without a
    #: pass over their dicts (the compiled admission); ``None``: not known (a later step sums the dicts)
    taken: np.ndarray | None = None
    #: the admitted jobs' placements not yet made into dicts, as the compiled twin's entries ``(ptr, srv, cnt)``
    #: (job ``admitted[i]``'s is ``{srv[k]: cnt[k]}`` for ``k`` in ``ptr[i]:ptr[i + 1]``); ``None``: :attr:`base`
    #: holds them. Given only with :attr:`taken` and :attr:`used`
    made: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    #: GPUs used per server after admission (read-only), where the step knows it; ``None``: :func:`used_gpus` of
    #: :attr:`base` (which holds every placement then)
    used: np.ndarray | None = None

    @cached_property
    def placement(self) -> tuple[JobPlacement, ...]:
        """Every job's placement after admission: :attr:`base`, with the admitted jobs' dicts made from
        :attr:`made` the first time it is read (the same tuple after). O(J + admitted entries) once."""
        if self.made is None:
            return self.base
        out = list(self.base)
        for j, p in zip(self.admitted, entry_dicts(*self.made), strict=True):
            out[j] = p
        return tuple(out)

    def used_after(self, cl: Cluster) -> np.ndarray:
        """GPUs used per server after admission (read-only): :attr:`used`, else :func:`used_gpus` of
        :attr:`base`. O(1) or :func:`used_gpus`'."""
        return self.used if self.used is not None else used_gpus(cl, self.base)


@dataclass(frozen=True, eq=False)
class Scaled:
    """Step 4: the worker count of every job that runs, from the MCKP over the value table."""

    jobs: tuple[int, ...]  # the jobs that run (running kept + admitted), in job order
    table: ValueTable  # row i: the job jobs[i], or jobs[rows[i]] where ``rows`` is given
    targets: np.ndarray  # workers per entry of ``jobs``
    report: StepReport
    #: positions in ``jobs`` of the table's rows when the table leaves out the jobs with one option (Lyra's
    #: table: their value needs no rate); ``None``: every job, in order
    rows: np.ndarray | None = None
    #: with ``rows``: each entry of ``jobs``'s value at its ``min_workers`` (the table's first column)
    fixed: np.ndarray | None = None
    #: workers each entry of ``jobs`` holds after admission, 0 for an admitted job (read-only): the place step moves
    #: the jobs whose target differs from it. Every result of the scale step gives it (``None`` only in a partial
    #: result built by hand, which the place step does not take)
    held: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class Placed:
    """Step 5: the placement of every job."""

    placement: tuple[JobPlacement, ...]
    report: StepReport


@dataclass(frozen=True, eq=False)
class RoundState:
    """What the round knows before a step: the cluster and the results of the steps run so far.

    A step reads the results it depends on through the properties below, which refuse a state the step cannot
    run on (a step called out of order is a programming error, :class:`RuntimeError`).
    """

    cluster: Cluster
    reclaim: Reclaimed | None = None
    loan: tuple[int, ...] | None = None  # idle server indices borrowed (step 2)
    admit: Admitted | None = None
    scale: Scaled | None = None
    place: Placed | None = None

    def _need(self, name: str):  # noqa: ANN202 - one of the result types above
        value = getattr(self, name)
        if value is None:
            done = [f.name for f in fields(self) if f.name != "cluster" and getattr(self, f.name) is not None]
            raise RuntimeError(f"the round has no {name} step yet (done: {', '.join(done) or 'none'})")
        return value

    @property
    def reclaimed(self) -> Reclaimed:
        return self._need("reclaim")

    @property
    def borrowed(self) -> tuple[int, ...]:
        return self._need("loan")

    @property
    def admitted(self) -> Admitted:
        return self._need("admit")

    @property
    def scaled(self) -> Scaled:
        return self._need("scale")

    @property
    def placed(self) -> Placed:
        return self._need("place")


# ------------------------------------------------------------------------------------------- shared views
def used_gpus(cl: Cluster, placement: tuple[JobPlacement, ...] | list[JobPlacement]) -> np.ndarray:
    """GPUs used on each server by the placements given (``None``: a job not running); read-only.

    The answer for a tuple (a step's result, which never changes) is kept on ``cl`` for the round's later steps.
    """
    if type(placement) is tuple:
        hit = cl.used_memo.get(id(placement))
        if hit is not None and hit[0] is placement:
            return hit[1]
    used = [0] * cl.gpus.shape[0]
    if len(placement) != cl.gpw.shape[0]:
        raise ValueError(f"used_gpus: {len(placement)} placements for {cl.gpw.shape[0]} jobs")
    for g, pl in compress(zip(cl.gpw.tolist(), placement, strict=True), placement):  # the jobs with workers
        for s, n in pl.items():
            used[s] += n * g
    out = np.array(used, dtype=np.int64)
    if type(placement) is tuple:
        remember_used(cl, placement, out)
    return out


def worker_counts(cl: Cluster, placement: tuple[JobPlacement, ...] | list[JobPlacement],
                  base: tuple[int, ...] = ()) -> np.ndarray:
    """Workers of each job in ``placement`` (0: none, or an empty placement), a new int64 array.

    A step leaves the placement of a job it does not touch as the very dict of the index view: those counts are
    the snapshot's (:attr:`Cluster.workers`), and only the entries that are other objects are summed. The jobs of
    ``base`` (the admitted ones) are counted at their base demand (``min_workers``) whatever ``placement`` holds for
    them (:attr:`Admitted.base`: maybe their placement before admission), and are not summed. O(J) C-level
    identity checks plus O(entries of the changed jobs outside ``base``)."""
    before = cl.placement
    if len(placement) != len(before):
        raise ValueError(f"worker_counts: {len(placement)} placements for {len(before)} jobs")
    counts = cl.workers.copy()
    if base:
        at = np.fromiter(base, np.int64, len(base))
        counts[at] = cl.min_w[at]
    if placement is before:  # (a base job's entry may be its snapshot's: Admitted.base before its dicts are made)
        return counts
    # the entries that are other objects, by C-level identity tests (a mask and its nonzero cost a few microseconds
    # more a round on a few hundred jobs)
    changed = compress(range(len(before)), map(is_not, placement, before))
    if base:
        changed = filterfalse(frozenset(base).__contains__, changed)
    for j in changed:
        pl = placement[j]
        counts[j] = sum(pl.values()) if pl else 0
    return counts


def remember_used(cl: Cluster, placement: tuple[JobPlacement, ...], used: np.ndarray) -> None:
    """Keep ``used`` (made read-only) as :func:`used_gpus` of the step result ``placement`` for the round's later
    steps: for a step that knows it more cheaply than the sum over every job."""
    used.setflags(write=False)
    cl.used_memo[id(placement)] = (placement, used)


def usable_servers(cl: Cluster, rec: Reclaimed, borrowed: tuple[int, ...]) -> np.ndarray:
    """Mask of the servers training may use this round: training, loaned and kept, or borrowed; read-only.

    The answer for the reclaim step's result ``rec`` and ``borrowed`` is kept on ``cl`` for the round's later
    steps (admission, scale and place ask for the same one). O(S) the first time, O(1) after."""
    key = (id(rec), borrowed)
    hit = cl.usable_memo.get(key)
    if hit is not None and hit[0] is rec:
        return hit[1]
    mask = cl.kind <= KIND_LOANED  # training, or loaned
    if rec.servers:
        mask[list(rec.servers)] = False
    if borrowed:
        mask[list(borrowed)] = True
    mask.setflags(write=False)
    cl.usable_memo[key] = (rec, mask)  # the entry holds ``rec``: its id stays that result's
    return mask
