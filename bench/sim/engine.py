"""The event-driven cluster simulator (DESIGN "Simulation"): a trace replayed through ``decide``.

:func:`simulate` is the one public function. State: a training cluster, an inference cluster whose servers
are ``serving``, ``idle`` or ``loaned``, and the jobs. Events: arrivals, completions, load changes, and a
round every ``interval`` seconds (and at an arrival or completion when GPUs are free). Each round builds the
snapshot the policy shows (:mod:`.policies`), calls :func:`lyra_solver.decide`, optionally checks the decision
with the independent checker, and carries it out by :func:`lyra_solver.apply_decision`'s rules
(:func:`lyra_solver.apply.placements_after`, which apply_decision itself uses; with ``check`` the two are
compared every round). Only this module mutates state; the engine's functions are pure.

Time model:
- a running job of ``w`` workers progresses at the rate of the placement it holds: ``rate(w)`` of the engine's
  throughput model on the ``k`` servers the placement spans (``rate_one(..., servers=k)``), or for a job of the
  Pollux artifact's model (:mod:`.pollux`) its rate on the placement's replicas per server in its current
  epoch (epoch ends are crossed at their solved times); it completes exactly when its remaining work reaches
  zero (the completion time is solved for, not stepped to);
- a job whose worker count or placement changes restarts: no progress for its ``restart_penalty`` seconds; a
  job preempted and later resumed makes no progress for its ``preemption_penalty`` seconds after resuming;
  GPUs are held (and counted as used) during both;
- packing (policies with ``packing``): a job the decision runs as a packing guest (a job of a
  ``decision.packing`` group other than its host) progresses at ``rate(w) x`` its packed speed and its host at
  its own packed speed (:func:`~lyra_solver.formulations.packing.pair_speed` with the decision's shares,
  :func:`~lyra_solver.formulations.packing.job_rate` over the workers, sample stealing as the options say);
  the guest holds no GPUs of its own and the next snapshot shows it queued (as
  :func:`lyra_solver.apply_decision` does), so step 6 decides its packing again each round, told the last
  round's packing (``decide(..., keep_packing=...)``: a guest keeps its host's GPUs while the rules allow). A
  guest packed again on the same GPUs of the same host goes on undisturbed; packed elsewhere or started
  properly it restarts; left waiting it is preempted. Speeds are recomputed when a partner completes (the
  survivor runs unshared);
- rounds: every ``interval`` seconds while anything is active (on the grid from ``round_origin``, default the
  first arrival) and, with ``event_rounds``, at an arrival or completion while GPUs are free;
- inference: ``need(t)`` servers serve (:meth:`.traces.LoadCurve.servers`); idle servers are taken first, then
  ``inference.reclaim`` asks the next round for loaned servers back, which serve once returned.

The parts: :mod:`.cluster` (servers and GPUs held), :mod:`.jobs` (a job's state), :mod:`.metrics` (counters,
GPU-seconds, series), :mod:`.quiet` (rounds skipped because their decision is known), :mod:`.packing` (speeds
of jobs sharing GPUs) and :mod:`.policies` (how each policy builds the round's snapshot and options). This module
is the event loop and carries decisions out.

Running time: O(R * (A + D)) for R rounds, A active jobs and D the cost of one ``decide``.
"""
from __future__ import annotations

import bisect
import gc
import heapq
import logging
import math
import os
import time
from dataclasses import dataclass, field

import msgspec
import numpy as np
from lyra_solver.apply import apply_decision, placements_after
from lyra_solver.formulations.mckp import _numba as _mckp_numba
from lyra_solver.pipeline import changes_built, decide, decide_built
from lyra_solver.throughput import rate_one
from lyra_solver.types import Job, PackingProfile, ProfileThroughput, TableThroughput

from .cluster import Cluster
from .jobs import SimJob
from .kept import Kept
from .metrics import Metrics
from .packing import _shared_at, packed_rates
from .policies import Policy
from .policies.base import Policy as _BasePolicy
from .pollux import compact
from .quiet import SizesKept, is_quiet
from .traces import MAX_DURATION, LoadCurve, SimJobSpec, merge_close

log = logging.getLogger(__name__)


#: Bounds on a replay (``lyra-solver simulate`` refuses flags past them, exit 2 naming the flag; :func:`simulate`
#: raises ``ValueError``). With the trace's durations at most :data:`.traces.MAX_DURATION` they keep every input
#: to a bounded number of events: rounds come at most every ``MIN_INTERVAL`` seconds while jobs are active, load
#: changes at most once per interval (:func:`.traces.merge_close`), and the loop stops at :data:`MAX_EVENTS`.
MIN_INTERVAL = 1.0
MAX_INTERVAL = 1e7
MAX_PENALTY = 86_400.0  # seconds: a day without progress after a restart or a preemption
MAX_SERVERS = 100_000  # per cluster (training, inference)
#: Iterations of the event loop (arrivals, completions, load changes and rounds together) after which a replay
#: stops with an error instead of running on (the full Philly trace spans 9.4e6 s: at a 60 s interval about 157,000
#: rounds, 164,000 arrivals and completions and at most as many load changes as rounds).
MAX_EVENTS = 5_000_000


#: The bound on a replay's work (README "Simulation", "Bound on the work"). A work unit is about a CPU microsecond of
#: the loop (measured, see ``cli.DEFAULT_MAX_WORK``). The replay counts its units as it runs and stops past
#: ``SimConfig.max_work`` (:class:`ReplayTooLong`); :func:`least_work` is what every replay of the input must do, so a
#: command whose least work already passes its bound is refused before it runs:
#: - ``EVENT_WORK`` per event of the loop, plus one per running job (time advanced, next completion found);
#: - ``ROUND_WORK`` per decided round (snapshot, ``decide``, carrying it out), plus ``JOB_ROUND_WORK`` per active
#:   job and ``SERVER_ROUND_WORK`` per server (training and inference) the snapshot lists.
EVENT_WORK = 30
ROUND_WORK = 4_000
JOB_ROUND_WORK = 20
SERVER_ROUND_WORK = 4


#: The collector's threshold for its youngest generation during a replay (:func:`simulate`; Python's default 700).
GC_YOUNG = 50_000

#: Replays of at least this many jobs load the package's numba kernels before their first round
#: (:func:`lyra_solver.formulations.mckp._numba.load`) instead of by the ski rental's rule, after half a second
#: of numpy-path solves: such a replay decides thousands of rounds, so the load (about 0.5-0.9 s) is paid in any
#: case, and its first rounds then take the compiled twins too. Smaller replays (a 600-job slice, a Pollux
#: workload) keep the ski rental. The decisions are the same on either path.
PRELOAD_JOBS = 5_000

#: Keep the running jobs' time in arrays (:class:`_Sim`, not for the Pollux model); ``False`` runs the scalar loops
#: for every replay (the reference the tests compare the arrays with).
ARRAYS = True


class ReplayTooLong(ValueError):
    """The replay passed :data:`MAX_EVENTS` events or its ``SimConfig.max_work`` work units."""


def least_work(specs, cfg: SimConfig) -> int:
    """A lower bound on the work units of any replay of ``specs`` on ``cfg``, computed before it runs. O(n).

    Every job starts in a decided round (at least one, with at least one job and every server in the snapshot),
    and rounds tick every interval while jobs are active, for at least as long as (a) the longest job at its
    fastest (``duration x gpus / max_workers``: no faster than linear scaling) and (b) the GPU-seconds every job
    needs at least (``min_workers x duration``: a job shrunk below its size runs no faster per GPU) over twice
    the GPUs of both clusters (two jobs share a GPU when packed). Each tick is at least one event.

    Examples
    --------
    >>> from lyra_solver.bench.sim.traces import SimJobSpec
    >>> long = SimJobSpec("j0", 2, 0.0, 1, 1e7, "cifar10", 1.0, 1, 2, 30.0, 300.0)
    >>> least_work([long], SimConfig(training_servers=1, inference_servers=0, interval=1.0))
    150003994
    """
    if not specs:
        return 0
    fastest = max(s.duration * s.gpus / max(s.max_workers, s.gpus) for s in specs)
    gpus = 2 * max(1, (cfg.training_servers + cfg.inference_servers) * cfg.server_gpus)
    spread = sum(min(s.min_workers, s.gpus) * s.duration for s in specs) / gpus
    ticks = max(0, math.floor(max(fastest, spread) / cfg.interval) - 1)
    servers = cfg.training_servers + cfg.inference_servers
    return ticks * EVENT_WORK + ROUND_WORK + JOB_ROUND_WORK + SERVER_ROUND_WORK * servers


def check_config(cfg: SimConfig) -> None:
    """Refuse (``ValueError`` naming the field) a configuration outside the documented bounds."""
    if not MIN_INTERVAL <= cfg.interval <= MAX_INTERVAL:
        raise ValueError(f"interval: must be in [{MIN_INTERVAL:g}, {MAX_INTERVAL:g}] seconds, got {cfg.interval!r}")
    for name in ("training_servers", "inference_servers"):
        v = getattr(cfg, name)
        if not 0 <= v <= MAX_SERVERS:
            raise ValueError(f"{name}: must be in [0, {MAX_SERVERS}], got {v!r}")


def check_specs(specs, cfg: SimConfig) -> None:
    """Refuse (``ValueError`` naming the trace line) a job larger than the training cluster (baseline and
    Tiresias run it at its requested size there: the replay would wait for it forever), one longer than
    :data:`.traces.MAX_DURATION`, or one whose penalties are past :data:`MAX_PENALTY`."""
    total = cfg.training_servers * cfg.server_gpus
    for sp in specs:
        if sp.gpus > total:  # baseline and Tiresias run a job at its requested size
            raise ValueError(f"line {sp.line}: the job needs {sp.gpus} GPUs, more than the training cluster's "
                             f"{total} ({cfg.training_servers} servers x {cfg.server_gpus}); it could never run")
        if not 0 < sp.duration <= MAX_DURATION:
            raise ValueError(f"line {sp.line}: duration must be in (0, {MAX_DURATION:g}] seconds, got {sp.duration!r}")
        for what in ("restart_penalty", "preemption_penalty"):
            v = getattr(sp, what)
            if not 0 <= v <= MAX_PENALTY:
                raise ValueError(f"line {sp.line}: {what} must be in [0, {MAX_PENALTY:g}] seconds, got {v!r}")


class DecisionRejected(AssertionError):
    """A decision broke a rule of the independent checker (only raised with ``check=True``)."""


@dataclass(frozen=True)
class SimConfig:
    """Cluster and run parameters; defaults follow DESIGN "Simulation"."""

    training_servers: int = 64
    inference_servers: int = 32
    server_gpus: int = 8
    interval: float = 60.0
    load: LoadCurve | None = None
    time_limit: float = 1.0
    tiresias_threshold: float = 3600.0  # GPU-seconds: the boundary of Tiresias' two queues
    tiresias_starve_limit: float = 8.0  # Tiresias' STARVELIMIT (x last run; 0: off), see policies.promote_starved
    tiresias_mode: str = "two-queue"  # or "artifact": the Pollux artifact's Tiresias round, see policies.tiresias
    check: bool = False  # validate every snapshot and run the independent checker on every decision (tests)
    record: bool = False  # keep every progress segment (tests of work conservation)
    skip_quiet: bool = True  # skip rounds whose decision is known to change nothing (see .quiet)
    event_rounds: bool = True  # also a round at an arrival or completion when GPUs are free (else ticks only)
    round_origin: float | None = None  # rounds at round_origin + k * interval (None: from the first arrival)
    start_penalty: float = 0.0  # seconds without progress after a job's first start (the Pollux artifact: 30)
    # epoch ends of Pollux-model jobs at whole seconds from the last round, start of progress or epoch end, as the
    # artifact's simulator steps them (see _Sim._epoch_end); else at their exact solved times
    round_epochs: bool = False
    max_work: int = 0  # work units after which the replay stops (ReplayTooLong); 0: no bound (least_work)


@dataclass
class SimResult:
    """What a run measured. ``jobs``: one row per job; ``series``: (t, queued, training GPUs used, serving
    GPUs, loaned GPUs used) at every round; ``decide_ms``: wall time of each ``decide`` (not reproducible)."""

    policy: str
    jobs: list[dict]
    series: list[tuple[float, int, int, int, int]]
    counters: dict
    gpu_seconds: dict
    makespan: float
    decide_ms: list[float] = field(default_factory=list)
    segments: list[tuple[str, float, float, float]] = field(default_factory=list)
    gpu_seconds_window: dict = field(default_factory=dict)  # GPU-seconds while jobs arrive
    window: float = 0.0  # first to last arrival, seconds
    # intervals of constant allocation: (job id, start, end, workers, ((server, GPUs), ...), packing host or None)
    allocations: list[tuple] = field(default_factory=list)
    # every round, skipped ones too: (t, queued, running, training GPUs used, loaned GPUs used, serving servers,
    # idle inference servers)
    rounds: list[tuple] = field(default_factory=list)


def simulate(specs: list[SimJobSpec], policy: Policy, config: SimConfig = SimConfig(),
             progress=None) -> SimResult:
    """Replay ``specs`` under ``policy`` on the cluster of ``config``; returns what was measured.

    Parameters
    ----------
    specs : list of SimJobSpec
        The jobs (see :func:`.traces.map_jobs`), any order; submit times in seconds.
    policy : Policy
        How snapshots are built and which options ``decide`` gets (:data:`.policies.POLICIES`).
    config : SimConfig
    progress : callable, optional
        Called with the number of jobs completed so far after every completion.

    Returns
    -------
    SimResult

    Raises
    ------
    DecisionRejected
        With ``config.check``, when a decision breaks a rule of :func:`lyra_solver.check.check_decision`.
    ValueError
        A configuration or job outside the documented bounds (:func:`check_config`, :func:`check_specs`), or
        :class:`ReplayTooLong` past :data:`MAX_EVENTS` events.
    """
    check_config(config)
    check_specs(specs, config)
    if len(specs) >= PRELOAD_JOBS and not os.environ.get("LYRA_SIM_NUMPY"):
        _mckp_numba.load(wait=False)  # a cold cache: compiled in the background meanwhile (_numba.ready)
    # the replay allocates small containers by the million (rows, tuples, dicts of a round) and keeps few: the
    # collector's youngest generation examined every GC_YOUNG allocations instead of every 700 (the 10,000-job
    # run: 940 collections, 0.48 CPU s, against 10, 0.15 s); restored after the replay
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], GC_YOUNG), *before[1:])
    try:
        return _Sim(specs, policy, config, progress).run()
    finally:
        gc.set_threshold(*before)


def _advance_np(n: int, t: float, t2: float, dt: float, st: np.ndarray) -> float:
    """Rows ``0..n-1`` of the arrays of running jobs ``st`` (remaining work, rate, end of penalty, workers,
    attained service: a row each) from ``t`` to ``t2`` (``dt = t2 - t``), in place: the work of
    a row past its penalty (``s = max(t, blocked) < t2``) less ``rate * (t2 - s)`` (the others less ``rate *
    0.0``, which leaves them as they are: the work is never ``-0.0``), the attained service plus ``workers * dt``;
    element by element the scalar loop's floats (:meth:`_Sim._advance_jobs`). Returns
    :func:`_next_completion_np` at ``t2`` of the rows advanced. The numpy twin of :func:`._nbtime.advance`.
    O(n)."""
    rem, rate, blk, wk, att = st
    d = np.maximum(blk[:n], t)  # max(t, blocked)
    np.subtract(t2, d, out=d)
    np.maximum(d, 0.0, out=d)
    np.multiply(rate[:n], d, out=d)
    r = rem[:n]
    np.subtract(r, d, out=r)
    np.multiply(wk[:n], dt, out=d)
    a = att[:n]
    np.add(a, d, out=a)
    return _next_completion_np(n, t2, st)


def _next_completion_np(n: int, t: float, st: np.ndarray) -> float:
    """The earliest ``max(t, blocked) + remaining / rate`` of rows ``0..n-1`` of ``st`` (:func:`_advance_np`;
    ``inf`` when none): the numpy twin of :func:`._nbtime.next_completion`. O(n)."""
    rem, rate, blk = st[0], st[1], st[2]
    if not n:
        return math.inf
    f = np.maximum(blk[:n], t)
    f += rem[:n] / rate[:n]
    return float(f.min())


def _due_np(n: int, t: float, st: np.ndarray, thr: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The rows ``0..n-1`` of ``st`` (:func:`_advance_np`) whose job completes at ``t`` (:meth:`_Sim._complete`):
    not held back by its penalty (``blocked <= t``) and its work within its threshold ``thr`` or below what the
    clock resolves (``remaining / rate + t <= t``); their indices, ascending. ``q``: scratch of at least ``n``.
    The numpy twin of :func:`._nbtime.due`. O(n)."""
    rem, q = st[0, :n], q[:n]
    np.divide(rem, st[1, :n], out=q)
    np.add(q, t, out=q)
    return np.flatnonzero((st[2, :n] <= t) & ((rem <= thr[:n]) | (q <= t)))


def _time_kernels():
    """:mod:`._nbtime`, imported once (``None`` when numba cannot be imported)."""
    try:
        from . import _nbtime
    except ImportError:
        return None
    return _nbtime


def _placed_anew(jobs, decided, by_id: dict) -> list[tuple[Job, dict | None]]:
    """The jobs of a snapshot (no packing) whose placement after the decision ``decided`` (job id -> decision)
    is not the one shown, with that placement: :func:`lyra_solver.apply.placements_after`'s rule (the shown
    placement where the decision keeps it, the decision's where it runs elsewhere, ``None`` where it waits or is
    preempted), only for the jobs it moves. Fills ``by_id`` with the jobs by id on the way. O(J)."""
    out = []
    for job in jobs:
        jid = job.id
        by_id[jid] = job
        jd = decided[jid]
        shown = job.placement
        if jd.action == "run":
            new = jd.placement
            if new is shown or new == shown:
                continue
        elif shown is None:
            continue
        else:
            new = None
        out.append((job, new))
    return out


class _Sim:
    """One run: the event loop and the carrying out of decisions (the policy's :class:`~.policies.base.View`)."""

    def __init__(self, specs, policy: Policy, cfg: SimConfig, progress) -> None:
        self.policy, self.cfg, self.progress = policy, cfg, progress
        self.specs = sorted(specs, key=lambda s: (s.submit, s.line))
        self.cluster = Cluster(cfg.training_servers, cfg.inference_servers, cfg.server_gpus)
        self.tp: dict[str, ProfileThroughput] = {}
        self.rates: dict[tuple[str, int, int | None], float] = {}
        self.options = policy.decide_options(cfg.time_limit)
        self.jobs: list[SimJob] = []
        self.top = [policy.shown_range(s)[1] for s in self.specs]  # the largest size each job is shown with
        self.active: dict[int, SimJob] = {}  # queued or running, by arrival index, in arrival order
        self.running: set[int] = set()
        self.done = 0
        self.kept = SizesKept()
        self.version = 0  # bumped whenever allocations or the active jobs may change (rounds, completions, arrivals)
        self.packing: list = []  # the last decision's packing groups
        self.profiles: dict[tuple, PackingProfile] = {}
        self.metrics = Metrics(self.specs[-1].submit if self.specs else 0.0, record=cfg.record)
        for name in policy.counters:
            self.metrics.counters[name] = 0
        self.state = policy.start(cfg)
        # load points closer than a round apart merged: at most one load change per interval
        self.load = merge_close(cfg.load, cfg.interval) if cfg.load is not None and cfg.inference_servers else None
        self.modelled = any(s.model is not None for s in self.specs)  # jobs of the Pollux artifact's model
        self.suffix: dict[tuple, float] = {}
        # the jobs of the last snapshot decided, by id: a policy shows a job's struct again when nothing it is
        # built from changed (Policy.job; empty while _kept keeps them by arrival index); the active jobs' arrival
        # indices by id
        self.shown: dict[str, Job] = {}
        self.index: dict[str, int] = {}
        self.oracles: dict[int, tuple] = {}  # a Pollux-model job's oracle table and what it was computed from
        # Time of the running jobs in arrays (not for the Pollux model, whose epochs are crossed one job at a time):
        # element ``j.slot`` of each holds a running job's remaining work, rate, end of penalty, workers, attained
        # service, completion threshold (``1e-9 * max(1, work)``) and arrival index; time
        # advances by numpy or its compiled twins (._nbtime), the same IEEE operation per element as the scalar
        # loop. The arrays hold the truth of ``remaining`` and ``attained`` from an advance to the next
        # :meth:`sync`: a round and a policy's quiet round sync first, the quiet check reads the arrays (and syncs
        # the rows it computes), a job leaving the arrays gets its values written back; every change to a running
        # job's rate, penalty or workers is written to its row (:meth:`_put`).
        self.vec = ARRAYS and not self.modelled
        cap = max(1, len(self.specs)) if self.vec else 1
        self._slot_jobs: list[SimJob] = []
        self._st = np.zeros((5, cap))  # remaining work, rate, end of penalty, workers, attained service
        self._rem, self._rt, self._blk, self._wk, self._att = self._st
        self._thr, self._b1 = np.zeros(cap), np.zeros(cap)
        self._out = np.zeros(cap, np.int64)  # scratch: the rows of the jobs completing (._nbtime.due)
        self._idx = np.zeros(cap, np.int64)  # per row: the job's arrival index
        self._top: np.ndarray | None = None  # self.top as an array (top_rows)
        self._fresh = True  # the SimJob records hold the running jobs' work and attained service of now
        self._quiet_reads = type(policy).quiet_round is not _BasePolicy.quiet_round
        # rounds decided as their changes alone (_round_changes): nothing of the whole decision is read
        self._changes_only = (not cfg.check and policy.packing == "off" and policy.shows_held()
                              and type(policy).after_round is _BasePolicy.after_round)
        # the snapshot and its index view kept across rounds (.kept) where every round is decided as its changes
        # and the policy's snapshot rules are the base ones (every active job in arrival order, with the placement
        # it holds), for jobs without the Pollux model (whose throughput changes with their epoch); ``shown`` is
        # then kept there, by arrival index, and stays empty here
        base = all(getattr(type(policy), name) is getattr(_BasePolicy, name)
                   for name in ("snapshot", "job", "build", "servers", "decide_kwargs"))
        self._kept = Kept(len(self.specs)) if self._changes_only and base and not self.modelled else None
        self._next: tuple[float, float] | None = None  # (t, the next completion at t) until a row changes
        # the compiled twins of the time loops (._nbtime) once numba's kernels are loaded (None: not yet; False:
        # never, LYRA_SIM_NUMPY set or numba not importable)
        self._nb = False if os.environ.get("LYRA_SIM_NUMPY") else None

    # ------------------------------------------------------------------------------------------ the view
    def throughput(self, app: str) -> ProfileThroughput:
        tp = self.tp.get(app)
        if tp is None:
            tp = self.tp[app] = ProfileThroughput(model=app)
        return tp

    def job_throughput(self, j: SimJob, lo: int, hi: int):
        """The throughput a snapshot shows for ``j`` with options ``lo..hi``: its application's profile, or for
        a job of the Pollux model the exact remaining-time oracle (:meth:`_oracle_table`)."""
        if j.model is None:
            return self.throughput(j.spec.app)
        got = self.oracles.get(j.idx)  # the same table while the job's work, epoch and range are the same
        if got is not None and got[0] is j.remaining and got[1:4] == (j.epoch, lo, hi):
            return got[4]
        table = self._oracle_table(j, lo, hi)
        self.oracles[j.idx] = (j.remaining, j.epoch, lo, hi, table)
        return table

    def _suffix(self, j: SimJob, epoch: int, w: int) -> float:
        """Seconds to run epochs ``epoch..`` to the job's end at ``w`` workers (most compact placement), cached
        per (application, batch, epoch, workers). O(epochs) the first time, O(1) after."""
        m = j.model
        key = (j.spec.app, j.spec.batch_size, epoch, w)
        got = self.suffix.get(key)
        if got is None:
            if epoch >= m.epochs():
                got = 0.0
            else:
                end = m.boundary(epoch + 1) if epoch + 1 < m.epochs() else j.spec.work
                got = (end - m.boundary(epoch)) / m.rate(compact(w, self.cluster.G), epoch) \
                    + self._suffix(j, epoch + 1, w)
            self.suffix[key] = got
        return got

    def _oracle_table(self, j: SimJob, lo: int, hi: int) -> TableThroughput:
        """The rates that make ``remaining_work / rate(w)`` the job's exact remaining time at ``w`` workers held
        to its end on the most compact placement, every later epoch at its own rate.

        This is the oracle the Pollux artifact gives its Optimus (exact remaining iterations at a fixed batch
        and the step time per replica count). A table of the current epoch's rates instead would make the
        engine's remaining-time estimates wrong by the change of statistical efficiency still to come (yolov3
        at 4 GPUs: 87,535 s from epoch 0's rate, 14,100 s in fact), and misrank jobs for every objective that
        orders by remaining time. O(hi - lo) per call after the per-epoch suffix sums are cached."""
        m = j.model
        ws = list(range(lo, hi + 1))
        rates = []
        for w in ws:
            t = (j.remaining - j.level) / m.rate(compact(w, self.cluster.G), j.epoch) + self._suffix(j, j.epoch + 1, w)
            rates.append(j.remaining / t if t > 0 else m.rate(compact(w, self.cluster.G), j.epoch))
        return TableThroughput(workers=ws, rate=rates)

    def packing_profile(self, sp) -> PackingProfile:
        key = (sp.app, sp.gpu_util, sp.gpu_mem_gb)  # profiles drawn per job (.packing_profiles) differ within an app
        prof = self.profiles.get(key)
        if prof is None:
            prof = self.profiles[key] = PackingProfile(gpu_util=sp.gpu_util, gpu_mem_gb=sp.gpu_mem_gb, app=sp.app)
        return prof

    def count(self, name: str, value: int) -> None:
        self.metrics.counters[name] = value

    # ------------------------------------------------------------------------------------------ helpers
    def _rate(self, app: str, w: int, k: int | None = None) -> float:
        """``rate(w)`` of ``app``'s profile on ``k`` servers (default: the most compact placement)."""
        key = (app, w, k)
        r = self.rates.get(key)
        if r is None:
            r = self.rates[key] = rate_one(self.throughput(app), w, server_gpus=self.cluster.G, servers=k)
        return r

    def _solo_rate(self, j: SimJob) -> float:
        """``j``'s unshared rate at the workers it has, on the placement it holds (the most compact one for a
        packing guest): its profile's rate at ``w`` workers on the servers the placement spans, or for the
        Pollux model its rate on the placement's replicas per server in its current epoch."""
        if j.model is None:
            return self._rate(j.spec.app, j.workers, len(j.placement) if j.placement else None)
        counts = tuple(sorted(j.placement.values())) if j.placement else compact(j.workers, self.cluster.G)
        return j.model.rate(counts, j.epoch)

    def _free_gpus(self) -> int:
        return self.cluster.free_gpus(self.policy.loan)

    # ------------------------------------------------------------------------------------------ time
    def _advance(self, t: float, t2: float) -> None:
        """Advance every running job from ``t`` to ``t2``: ``remaining -= rate * (t2 - max(t, blocked))`` when
        ``t2`` is past its penalty, ``attained += workers * (t2 - t)``, and the GPU-seconds. With arrays, the
        same operations element by element in numpy (the same floats as the scalar loop)."""
        dt = t2 - t
        if dt <= 0:
            return
        if self.vec:
            self._advance_rows(t, t2, dt)
        else:
            self._advance_jobs(t, t2, dt)
        c = self.cluster
        serving = c.count("serving")
        self.metrics.gpu_time(t, t2, c.used_train, c.used_inf, serving * c.G, max(0, c.need - serving) * c.G)

    def _kernels(self):
        """:mod:`._nbtime` once the package's numba kernels are loaded in this process (numba imported, a long
        replay), else ``None``; ``LYRA_SIM_NUMPY`` (any non-empty value) keeps the numpy path."""
        nb = self._nb
        if nb is None:
            if not _mckp_numba.loaded():
                return None
            nb = self._nb = _time_kernels() or False
        return nb or None

    def _advance_rows(self, t: float, t2: float, dt: float) -> None:
        n = len(self._slot_jobs)
        if not n:
            return
        if self.cfg.check:
            self._check_rows()
        self._fresh = False
        if self.metrics.record:  # the segments of progress: rows past their penalty before t2
            s = np.maximum(self._blk[:n], t)
            segments = self.metrics.segments
            for k in np.flatnonzero(s < t2).tolist():
                j = self._slot_jobs[k]
                segments.append((j.spec.id, float(s[k]), t2, j.rate))
        nb = self._kernels()
        best = (_advance_np if nb is None else nb.advance)(n, t, t2, dt, self._st)
        self._next = (t2, float(best))  # the next completion at t2 while no row changes

    def _advance_jobs(self, t: float, t2: float, dt: float) -> None:
        jobs, record, segments = self.jobs, self.metrics.record, self.metrics.segments
        for i in self.running:
            j = jobs[i]
            b = j.blocked
            s = b if b > t else t  # max(t, blocked)
            if t2 > s:
                j.remaining -= j.rate * (t2 - s)
                if record:
                    segments.append((j.spec.id, s, t2, j.rate))
            j.attained += j.workers * dt

    def _next_completion(self, t: float) -> float:
        """The earliest finish time of a running job (:meth:`SimJob.finish_time`, inlined), ``inf`` if none."""
        if self.vec:  # level is 0.0 without the Pollux model: remaining - 0.0 is remaining
            n = len(self._slot_jobs)
            if not n:
                return math.inf
            got = self._next
            if got is not None and got[0] == t and not self.cfg.check:  # found by the advance to t, no row
                return got[1]                                            # changed since
            nb = self._kernels()
            best = float((_next_completion_np if nb is None else nb.next_completion)(n, t, self._st))
            if got is not None and got[0] == t and got[1] != best:
                raise DecisionRejected(f"t={t}: the next completion kept since the advance, {got[1]!r}, is not "
                                       f"{best!r}")
            return best
        best = math.inf
        jobs = self.jobs
        if self.cfg.round_epochs:
            for i in self.running:
                j = jobs[i]
                if j.model is not None:
                    f = self._epoch_end(j)
                else:
                    b = j.blocked
                    f = (b if b > t else t) + (j.remaining - j.level) / j.rate
                if f < best:
                    best = f
            return best
        for i in self.running:  # the same, every job's time solved
            j = jobs[i]
            b = j.blocked
            f = (b if b > t else t) + (j.remaining - j.level) / j.rate
            if f < best:
                best = f
        return best

    def _epoch_end(self, j: SimJob) -> float:
        """When a Pollux-model job's epoch (or its work) ends with ``round_epochs``: as the artifact's simulator
        steps a job through a round (its ``Job.step``), the part of an epoch done after the round's start, the end
        of the job's restart delay or the epoch before, whichever is last (``s``), takes the exact time rounded to
        a whole second (``round``, halves to even), when it ends before the next round; progress up to a round
        is exact. Epoch ends, and so completions, fall on whole seconds. ``j.seg`` is (the round, ``s`` before
        the delay, the remaining work then), set at each round and epoch end (:meth:`_segment`)."""
        tick, s0, rem = j.seg
        s = max(s0, j.blocked)
        need = (rem - j.level) / j.rate
        if s + need <= tick + self.cfg.interval:
            return s + round(need)
        return s + need  # not before the next round, where the segment starts again

    def _segment(self, j: SimJob, tick: float, t: float) -> None:
        j.seg = (tick, t, j.remaining)

    def _complete(self, t: float) -> bool:
        """Complete every running job whose work is done at ``t`` (its own solved finish time).

        Done: the remaining work is within ``1e-9`` of the job's work, or the time it still needs is below what
        the clock resolves at ``t`` (``t + remaining / rate == t`` in floating point: late in a long replay a
        second's job can be left a few nano-seconds of work that no later time can represent; without this the
        next completion would stay at ``t`` forever).
        """
        finished, crossed = [], []
        rounded = self.cfg.round_epochs
        jobs = self.jobs
        n = len(self._slot_jobs)
        if n:  # the arrays: not held back, and the work within its threshold or below what the clock resolves
            nb = self._kernels()
            if nb is None:
                rows = _due_np(n, t, self._st, self._thr, self._b1).tolist()
            else:
                rows = self._out[:nb.due(n, t, self._st, self._thr, self._out)].tolist()
            finished = [self._slot_jobs[k].idx for k in rows]
        for i in () if self.vec else self.running:
            j = jobs[i]
            if j.blocked > t and (j.remaining >= j.level or not rounded or j.model is None):
                continue  # held back by its penalty (a rounded epoch end may still be due: below)
            if rounded and j.model is not None:
                # due when its rounded end has come (_epoch_end is never before the job's restart delay ends,
                # unless the end is already behind it: progress past the epoch's end when a restart began, which
                # a rate change under packing can leave; it is crossed now, else the clock would stop there)
                if self._epoch_end(j) <= t:
                    (crossed if j.level > 0 else finished).append(i)
                continue
            left = j.remaining - j.level
            if left <= 1e-9 * max(1.0, j.spec.work) or t + left / j.rate <= t:
                (crossed if j.level > 0 else finished).append(i)
        for i in crossed:  # a job of the Pollux model ends an epoch: its rate changes, nothing else
            j = self.jobs[i]
            j.next_epoch()
            j.rate = self._solo_rate(j)
            if rounded:
                self._segment(j, j.seg[0], t)
        if crossed and self.packing:
            self._set_rates()
        for i in sorted(finished):
            j = self.jobs[i]
            self._run_remove(i, j)  # its work and attained service written back
            j.remaining = 0.0
            j.end = t
            self._release(j)
            j.host = None
            j.placement = None
            if self._kept is not None:
                self._kept.placed(i, None)
                self._kept.gone(i)
            self.metrics.allocated(j, t)
            del self.active[i]
            del self.index[j.spec.id]
            self.oracles.pop(i, None)
            self.done += 1
            if self.progress is not None:
                self.progress(self.done)
        if finished and self.packing:
            self._set_rates()
        if finished or crossed:
            self.version += 1
        return bool(finished)

    # ------------------------------------------------------------------------------------------ holding GPUs
    def _run_add(self, i: int, j: SimJob) -> None:
        """``j`` (arrival index ``i``) runs: in :attr:`running` and, with arrays, given a row (its fields put)."""
        self.running.add(i)
        if self.vec:
            self._next = None
            if j.slot < 0:
                k = j.slot = len(self._slot_jobs)
                self._slot_jobs.append(j)
                self._thr[k] = 1e-9 * max(1.0, j.spec.work)
                self._rem[k] = j.remaining
                self._att[k] = j.attained
                self._idx[k] = i
            self._put(j)

    def _run_remove(self, i: int, j: SimJob) -> None:
        """``j`` stops running: out of :attr:`running`; its work and attained service written back from its row,
        if it has one, which the last row takes."""
        self.running.discard(i)
        k = j.slot
        if k >= 0:
            self._next = None
            j.remaining = float(self._rem[k])
            j.attained = float(self._att[k])
            last = len(self._slot_jobs) - 1
            if k != last:
                mv = self._slot_jobs[last]
                self._slot_jobs[k] = mv
                mv.slot = k
                for a in (self._rem, self._rt, self._blk, self._wk, self._att, self._thr, self._idx):
                    a[k] = a[last]
            self._slot_jobs.pop()
            j.slot = -1

    def _put(self, j: SimJob) -> None:
        """Write a running job's rate, end of penalty and workers to its row of the arrays (its work and attained
        service live there from :meth:`_run_add` on); nothing for a job without a row."""
        k = j.slot
        if k >= 0:
            self._next = None
            self._rt[k] = j.rate
            self._blk[k] = j.blocked
            self._wk[k] = j.workers

    def remaining(self, j: SimJob) -> float:
        """``j``'s remaining work now, synced or not (from its row while it has one). O(1)."""
        return float(self._rem[j.slot]) if j.slot >= 0 else j.remaining

    def sync(self) -> None:
        """Bring the running jobs' ``remaining`` and ``attained`` up to now from the arrays (a no-op when they
        are): before anything reads or changes a running job. O(running jobs) after an advance, O(1) else."""
        if self._fresh:
            return
        self._fresh = True
        n = len(self._slot_jobs)
        for j, r, a in zip(self._slot_jobs, self._rem[:n].tolist(), self._att[:n].tolist(), strict=True):
            j.remaining = r
            j.attained = a

    def _unsynced(self) -> zip | None:
        """:meth:`sync` for a caller that brings the running jobs up to now itself, in its own pass over them: the
        running jobs with their work and attained service of now, each ``(job, remaining, attained)`` to be set
        (the records count as synced from here on), or ``None`` where they are. O(running jobs) in C."""
        if self._fresh or not self.vec:  # up to date, or no rows: the records hold it
            self.sync()
            return None
        self._fresh = True
        n = len(self._slot_jobs)
        return zip(self._slot_jobs, self._rem[:n].tolist(), self._att[:n].tolist(), strict=True)

    def running_rows(self) -> tuple[list[SimJob], np.ndarray, np.ndarray, np.ndarray]:
        """The running jobs by row, and views of their rows' arrival indices, workers and remaining work of now
        (read-only to the caller). O(1)."""
        n = len(self._slot_jobs)
        return self._slot_jobs, self._idx[:n], self._wk[:n], self._rem[:n]

    def top_rows(self) -> np.ndarray:
        """:attr:`top` as an array by arrival index (made on the first call; read-only to the caller). O(1) after
        the first call."""
        top = self._top
        if top is None:
            top = self._top = np.array(self.top, np.float64)
        return top

    def sync_jobs(self, jobs) -> None:
        """Bring the ``remaining`` of these jobs only up to now from the arrays (:meth:`sync` for a few)."""
        if not self._fresh:
            rem = self._rem
            for j in jobs:
                if j.slot >= 0:
                    j.remaining = float(rem[j.slot])

    def _check_rows(self) -> None:
        """With ``check``: every running job has a row, and the rows hold its synced fields (DecisionRejected)."""
        if {j.idx for j in self._slot_jobs} != self.running:
            raise DecisionRejected("the rows of running jobs are not the running jobs")
        for k, j in enumerate(self._slot_jobs):
            got = (self._rt[k], self._blk[k], self._wk[k], self._idx[k], j.slot)
            want = (j.rate, j.blocked, j.workers, j.idx, k)
            if self._fresh:
                got, want = got + (self._rem[k], self._att[k]), want + (j.remaining, j.attained)
            if got != want:
                raise DecisionRejected(f"job {j.spec.id}: its row {got} is not its state")

    def _release(self, j: SimJob) -> None:
        self.cluster.release(j.train_gpus, j.inf_gpus)
        j.train_gpus = j.inf_gpus = 0

    def _hold(self, j: SimJob, placement: dict[str, int]) -> None:
        j.placement = placement
        if self._kept is not None:
            self._kept.placed(j.idx, placement)
        j.workers = sum(placement.values())
        j.rate = self._solo_rate(j)
        j.train_gpus, j.inf_gpus = self.cluster.split(placement)
        self.cluster.hold(j.train_gpus, j.inf_gpus)
        self._put(j)

    def _stop(self, i: int, j: SimJob) -> None:
        """Job ``j`` stops running: its GPUs are released and it makes no progress until started again."""
        self._release(j)
        j.placement, j.workers, j.rate = None, 0, 0.0
        if self._kept is not None:
            self._kept.placed(i, None)
        self._run_remove(i, j)

    def _preempted(self, j: SimJob, t: float, *, resumed_now: bool = False) -> None:
        """Count a preemption of ``j`` (the one place it is counted). Its preemption penalty is paid when it
        resumes, or from ``t`` on when the same round resumes it elsewhere (``resumed_now``)."""
        j.preemptions += 1
        self.metrics.count("preemptions")
        if resumed_now:
            j.blocked = t + j.spec.preemption_penalty
        else:
            j.resume_penalty = True

    def _started(self, i: int, j: SimJob, t: float) -> None:
        """``j`` starts or resumes at ``t`` (paying its preemption penalty if it was preempted, the configured
        start penalty at its first start)."""
        first = j.start is None
        if first:
            j.start = t
        j.blocked = t + (j.spec.preemption_penalty if j.resume_penalty else
                         (self.cfg.start_penalty if first else 0.0))
        j.resume_penalty = False
        self._run_add(i, j)

    def _set_rates(self) -> None:
        """Every running job's rate: ``rate(w)``, times its packed speed where it shares GPUs (:mod:`.packing`)."""
        for i in self.running:
            j = self.jobs[i]
            j.rate = self._solo_rate(j)
        if self.packing:
            by_id = {self.jobs[i].spec.id: self.jobs[i] for i in self.running}
            for jid, r in packed_rates(self.packing, by_id, self.options, self._solo_rate).items():
                by_id[jid].rate = r
        for j in self._slot_jobs:
            self._put(j)

    # ------------------------------------------------------------------------------------------ rounds
    def _round(self, t: float) -> None:
        pol, m = self.policy, self.metrics
        self.version += 1
        if self._kept is not None:  # synced in the snapshot's pass over the running jobs
            self._round_changes(t, self._kept.snapshot(pol, self, t, self._unsynced()), set(), {})
            return
        self.sync()
        if self.cfg.check and list(self.active) != sorted(self.active):
            raise DecisionRejected(f"round at t={t}: the active jobs are not in arrival order")
        snap, hidden = pol.snapshot(self, t, self.state)
        kwargs = pol.decide_kwargs(self, self.state)
        if self._changes_only and kwargs.get("packing", "off") == "off":
            self._round_changes(t, snap, hidden, kwargs)
            return
        t0 = time.perf_counter()
        # the snapshot is the simulator's own (its configuration, its checked trace, placements of decisions
        # carried out): not validated again, except with ``check``, where every round goes through ``decide``
        # deterministic limits (DESIGN "Conventions"): with wall-clock ones an exact step that hits its limit on a
        # loaded machine answers otherwise, and the same replay gave other bytes (lyra-exact, 6.30 against 6.25 h)
        decision = (decide if self.cfg.check else decide_built)(snap, deterministic=True, **kwargs)
        m.decide_ms.append((time.perf_counter() - t0) * 1e3)
        if self.cfg.check:
            from lyra_solver.check import check_decision, format_violations

            bad = check_decision(msgspec.to_builtins(snap), msgspec.to_builtins(decision))
            if bad:
                raise DecisionRejected(f"round at t={t}: {format_violations(bad[:5])}")
        guest_of = {jid: g.jobs[0] for g in decision.packing for jid in g.jobs[1:]}
        packs = bool(guest_of) or bool(self.packing)
        held = pol.shows_held() and not packs  # a job whose shown placement is kept holds it still
        # the jobs whose placement may change, with their placement after the decision: with ``held``, only those
        # not kept where shown (placements_after's rule, inlined: no list of every job)
        self.shown = shown = {}  # the jobs of this snapshot by id (Policy.job shows them again), filled below
        moves = _placed_anew(snap.jobs, decision.jobs, shown) if held else None
        if moves is None:
            shown.update({job.id: job for job in snap.jobs})
        if moves is None or self.cfg.check:
            after = placements_after(snap, decision)
            if self.cfg.check:  # the placements carried out are apply_decision's, which checks the decision too
                nxt = apply_decision(snap, decision)
                if [job.placement for job in nxt.jobs] != after:
                    raise DecisionRejected(f"round at t={t}: the placements carried out are not apply_decision's")
            every = list(zip(snap.jobs, after, strict=True))
            if moves is not None and [(a.id, id(b)) for a, b in moves] != \
                    [(a.id, id(b)) for a, b in every if b is not a.placement]:
                raise DecisionRejected(f"round at t={t}: the jobs moved are not those placements_after moves")
            moves = every if moves is None else moves
        pol.after_round(self, t, self.state, decision)
        self._carry_out(t, moves, hidden, decision.servers.reclaim, decision.servers.loan, decision.packing,
                        guest_of, packs, held, decision)

    def _round_changes(self, t: float, snap, hidden: set, kwargs: dict) -> None:
        """A round whose decision is taken as its changes alone (:func:`lyra_solver.pipeline.changes_built`): for
        a policy without packing that shows every job with the placement it holds, whose ``after_round`` does
        nothing, without ``check`` (:attr:`_changes_only`). The same placements carried out as from the whole
        decision (the jobs it moves, in job order, with the very mappings of its ``run`` entries)."""
        t0 = time.perf_counter()  # the index view included (decide makes it, too)
        kept = self._kept
        index = None if kept is None else kept.view(snap, self.active)
        ch = changes_built(snap, deterministic=True, index=index, **kwargs)
        self.metrics.decide_ms.append((time.perf_counter() - t0) * 1e3)
        if index is not None:
            kept.learn()
        jobs = snap.jobs
        if kept is None:
            self.shown = {job.id: job for job in jobs}  # this snapshot's jobs by id (Policy.job's)
        moves = [(jobs[i], new) for i, new in ch.moved]
        self._carry_out(t, moves, hidden, ch.reclaim, ch.loan, (), {}, False, True, None)

    def _carry_out(self, t: float, moves: list, hidden: set, back, lent, packing, guest_of: dict, packs: bool,
                   held: bool, decision) -> None:
        """Carry out a round's decision: the servers reclaimed (``back``) and loaned (``lent``), the jobs that
        ``moves`` lists with their placement after it (with ``held``, only the jobs placed anew), the packing
        groups (``guest_of``: each guest's host; ``decision``: the whole decision where it packs)."""
        pol, m = self.policy, self.metrics
        m.count("rounds")
        for sid in back:
            self.cluster.set_state(sid, "serving")
        for sid in lent:
            self.cluster.set_state(sid, "loaned")
        if back:
            m.count("reclaim_events", len(back))
            m.count("reclaim_rounds")
        m.count("loans", len(lent))
        gone = set(back)
        index, jobs = self.index, self.jobs
        was_at, now_at = _shared_at(self.packing), _shared_at(packing)
        self.packing = list(packing)
        changed = []  # jobs whose allocation may have changed (the others hold exactly what they held)
        for job, new in moves:
            if held and new is job.placement:
                continue
            i = index[job.id]
            j = jobs[i]
            if packs:
                host = guest_of.get(job.id)
                if host is not None or j.host is not None:
                    changed.append(i)
                    self._guest(t, i, j, host, new, decision.jobs[job.id].workers,
                                moved=was_at.get(job.id) != now_at.get(job.id))
                    continue
            old = j.placement
            if new == old:
                continue
            changed.append(i)
            if new is None:  # preempted
                self._stop(i, j)
                self._preempted(j, t)
                continue
            if old is None:  # started or resumed
                self._started(i, j, t)
            else:  # scaled or moved: a restart; a preemption if the job was hidden (Tiresias) or lost, to a
                # reclaimed server, more workers than it could shrink by (preempted and re-admitted in one round)
                lo = pol.shown_range(j.spec)[0]
                if i in hidden or sum(n for s, n in old.items() if s not in gone) < lo:
                    self._preempted(j, t, resumed_now=True)
                else:
                    if sum(new.values()) != j.workers:
                        j.scalings += 1
                        m.count("scaling_events")
                    m.count("restarts")
                    j.blocked = t + j.spec.restart_penalty
                self._release(j)
            self._hold(j, new)  # the next snapshot's read-only placement, shared, not copied
        if pol.packing != "off":
            self._set_rates()
        # allocation intervals: only a job whose placement or packing changed can close one (in arrival order,
        # as before); with packing every job's shared GPUs are set again
        for i in sorted(self.active) if pol.packing != "off" else sorted(changed):
            j = self.jobs[i]
            j.shared = now_at[j.spec.id][1] if j.host is not None else ()
            m.allocated(j, t)
        c = self.cluster
        m.series.append((t, len(self.active) - len(self.running), c.used_train, c.serving_gpus(), c.used_inf))
        self._round_row(t)

    def _round_row(self, t: float) -> None:
        c = self.cluster
        self.metrics.rounds.append((t, len(self.active) - len(self.running), len(self.running), c.used_train,
                                    c.used_inf, c.count("serving"), c.count("idle")))

    def _guest(self, t: float, i: int, j: SimJob, host: str | None, placement, workers: int | None,
               moved: bool = True) -> None:
        """Carry out the decision for a job that runs as a packing guest now (``host``) or did until now;
        ``moved``: its host or the GPUs it shares with it changed since the last round."""
        if host is not None:
            self.metrics.count("packed")
            j.packed += 1
        if j.host is not None:  # a guest until now
            if host == j.host and not moved:  # packed again on the same GPUs of the same host: undisturbed
                j.workers = workers
                self._put(j)
                return
            j.host = None
            if host is None and placement is None:  # left waiting: preempted
                self._stop(i, j)
                self._preempted(j, t)
                return
            self.metrics.count("restarts")  # another host, or started properly: a restart
            j.blocked = max(j.blocked, t + j.spec.restart_penalty)
            if host is None:
                self._hold(j, dict(placement))
                return
        else:  # starts as a guest (steps 1-5 left it waiting)
            if j.placement is not None:  # not produced by step 6 (it packs waiting jobs); handled as a preemption
                self._release(j)
                j.placement = None
                if self._kept is not None:
                    self._kept.placed(i, None)
                self._preempted(j, t)
            self._started(i, j, t)
        j.host, j.workers = host, workers
        self._put(j)

    # ------------------------------------------------------------------------------------------ loop
    def run(self) -> SimResult:
        cfg, c, m = self.cfg, self.cluster, self.metrics
        self.jobs = [SimJob(s, i) for i, s in enumerate(self.specs)]
        arrivals = [(s.submit, i) for i, s in enumerate(self.specs)]
        heapq.heapify(arrivals)
        t = self.specs[0].submit if self.specs else 0.0
        origin = t
        grid = origin if cfg.round_origin is None else cfg.round_origin
        load = self.load
        next_load = t if load is not None else math.inf
        next_tick = grid + math.ceil((t - grid) / cfg.interval) * cfg.interval
        events = work = 0
        most = cfg.max_work or math.inf
        round_work = ROUND_WORK + SERVER_ROUND_WORK * (cfg.training_servers + cfg.inference_servers)
        while arrivals or self.active:
            events += 1
            work += EVENT_WORK + len(self.running)  # advancing time and the next completion: every running job
            if work > most:
                raise ReplayTooLong(f"a replay passed its share of the work, {cfg.max_work:,} units, at t={t:g} s with "
                                    f"{len(self.active)} jobs active and {self.done} done")
            if events > MAX_EVENTS:
                raise ReplayTooLong(f"the replay passed {MAX_EVENTS:,} events (bench.sim.engine.MAX_EVENTS) at "
                                    f"t={t:g} s with {len(self.active)} jobs active; use a longer interval or a "
                                    "shorter trace")
            busy = bool(self.active) or c.reclaim_wanted() > 0
            if next_tick < t:  # ticks resume on the grid + k * interval
                next_tick = grid + math.ceil((t - grid) / cfg.interval) * cfg.interval
            t_arr = arrivals[0][0] if arrivals else math.inf
            t_done = self._next_completion(t)
            t2 = min(t_arr, t_done, next_tick if busy else math.inf, next_load)
            if t2 == math.inf:  # active jobs that can never run (e.g. larger than the cluster)
                log.warning("%d jobs can never run on this cluster; stopping", len(self.active))
                break
            self._advance(t, t2)
            t = t2
            event = False
            if t == next_load:
                c.set_need(load.servers(t, c.n_inference))
                next_load = self._next_load_time(t)
            if t_done <= t:
                event |= self._complete(t)
            while arrivals and arrivals[0][0] <= t:
                _, i = heapq.heappop(arrivals)
                self.active[i] = self.jobs[i]
                self.index[self.specs[i].id] = i
                if self._kept is not None:
                    self._kept.arrived(i)
                self.version += 1
                event = True
            tick = busy and t >= next_tick
            if tick:
                next_tick = t + cfg.interval
            if (tick or (event and cfg.event_rounds and self._free_gpus() > 0)) \
                    and (self.active or c.reclaim_wanted()):
                if is_quiet(self):
                    if self._quiet_reads:
                        self.sync()
                    self.policy.quiet_round(self, t, self.state)
                    m.count("quiet_rounds")
                    m.series.append((t, 0, c.used_train, c.serving_gpus(), c.used_inf))
                    self._round_row(t)
                else:
                    work += round_work + JOB_ROUND_WORK * len(self.active)
                    self._round(t)
                if cfg.round_epochs:  # the artifact's round: progress exact up to it, a new segment from it
                    for i in self.running:
                        if self.jobs[i].model is not None:
                            self._segment(self.jobs[i], t, t)
        self.sync()
        self.work = work  # the units counted (not in the result: measurements of the bound read it here)
        makespan = max((j.end for j in self.jobs if j.end is not None), default=origin) - origin
        rows = [j.row() for j in self.jobs]
        return SimResult(self.policy.name, rows, m.series, dict(m.counters), dict(m.gs), makespan,
                         m.decide_ms, m.segments, dict(m.gs_window), m.last_arrival - origin, m.allocations,
                         m.rounds)

    def _next_load_time(self, t: float) -> float:
        load = self.load
        x = t % load.period
        base = t - x
        k = bisect.bisect_right(load.times, x + 1e-9)
        nxt = base + (load.times[k] if k < len(load.times) else load.period)
        return nxt if nxt > t else t + self.cfg.interval  # a time the clock cannot tell from t: a round later
