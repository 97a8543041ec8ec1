"""The event-driven cluster simulator (DESIGN "Simulation"): a trace replayed through ``decide``.

:func:`simulate` is the one public function. State: a training cluster, an inference cluster whose servers
are ``serving``, ``idle`` or ``loaned``, and the jobs. Events: arrivals, completions, load changes, and a
round every ``interval`` seconds (and at an arrival or completion when GPUs are free). Each round builds the
snapshot the policy shows (:mod:`.policies`), calls :func:`lyra_solver.decide`, optionally checks the decision
with the independent checker, and carries it out with :func:`lyra_solver.apply_decision`. Only this module
mutates state; the engine's functions are pure.

Time model:
- a running job of ``w`` workers progresses at ``rate(w)`` (the engine's throughput model) and completes
  exactly when its remaining work reaches zero (the completion time is solved for, not stepped to);
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
- inference: ``need(t) = ceil(L(t) * inference_servers)`` servers serve; idle servers are taken first, then
  ``inference.reclaim`` asks the next round for loaned servers back, which serve once returned.

Running time: O(R * (A + D)) for R rounds, A active jobs and D the cost of one ``decide``.
"""
from __future__ import annotations

import bisect
import heapq
import logging
import math
import time
from dataclasses import dataclass, field

import msgspec
import numpy as np
from lyra_solver.apply import apply_decision
from lyra_solver.formulations.packing import job_rate, pair_speed
from lyra_solver.pipeline import decide
from lyra_solver.throughput import rate_one
from lyra_solver.types import Inference, Job, Options, PackingProfile, ProfileThroughput, Server, Snapshot
from lyra_solver.values import TIME_CAP, JobOptions, value_table

from .policies import Policy, TwoQueueState, promote_starved, two_queue_victims
from .traces import LoadCurve, SimJobSpec

log = logging.getLogger(__name__)


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
    check: bool = False  # run the independent checker on every decision (tests)
    record: bool = False  # keep every progress segment (tests of work conservation)
    skip_quiet: bool = True  # skip rounds whose decision is known to change nothing (see _Sim._quiet)


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


class _Job:
    __slots__ = ("spec", "idx", "remaining", "placement", "workers", "rate", "blocked", "attained", "start",
                 "end", "resume_penalty", "preemptions", "scalings", "train_gpus", "inf_gpus", "host", "packed")

    def __init__(self, spec: SimJobSpec, idx: int) -> None:
        self.spec, self.idx = spec, idx
        self.remaining = spec.work
        self.placement: dict[str, int] | None = None
        self.workers = 0
        self.rate = 0.0
        self.blocked = 0.0
        self.attained = 0.0
        self.start: float | None = None
        self.end: float | None = None
        self.resume_penalty = False
        self.preemptions = 0
        self.scalings = 0
        self.train_gpus = 0
        self.inf_gpus = 0
        self.host: str | None = None  # the host's id while the job runs as a packing guest
        self.packed = 0  # rounds run as a packing guest

    def finish_time(self, t: float) -> float:
        return max(t, self.blocked) + self.remaining / self.rate


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
    """
    return _Sim(specs, policy, config, progress).run()


class _Sim:
    def __init__(self, specs, policy: Policy, cfg: SimConfig, progress) -> None:
        self.policy, self.cfg, self.progress = policy, cfg, progress
        self.specs = sorted(specs, key=lambda s: (s.submit, s.line))
        self.G = cfg.server_gpus
        self.train_servers = [Server(id=f"t{i}", pool="training", gpus=self.G) for i in range(cfg.training_servers)]
        self.inf_state = ["idle"] * cfg.inference_servers
        self.inf_server = {(i, st): Server(id=f"i{i}", pool="inference", gpus=self.G, state=st)
                           for i in range(cfg.inference_servers) for st in ("idle", "loaned")}
        self.tp = {}
        self.rates: dict[tuple[str, int], float] = {}
        self.options = msgspec.convert({"queue": policy.queue, "allocation": policy.allocation,
                                        "reclaim": policy.reclaim, "placement": "bfd", "packing": policy.packing,
                                        "time_limit": cfg.time_limit}, Options)
        self.jobs: list[_Job] = []
        self.active: dict[int, _Job] = {}  # queued or running, by arrival index
        self.running: set[int] = set()
        self.done = 0
        self.need = 0  # inference servers the load needs now
        self.skip_quiet = cfg.skip_quiet
        self._kept: dict[int, tuple[int, float]] = {}  # job -> (size, remaining work) found kept (_sizes_kept)
        self.counters = {"quiet_rounds": 0, "rounds": 0, "preemptions": 0, "scaling_events": 0, "restarts": 0,
                         "reclaim_events": 0, "reclaim_rounds": 0, "loans": 0, "packed": 0}
        self.packing: list = []  # the last decision's packing groups
        self.profiles: dict[str, PackingProfile] = {}
        self.gs = {"training_used": 0.0, "inference_serving": 0.0, "inference_loaned_used": 0.0,
                   "inference_unmet": 0.0}
        self.gs_window = dict(self.gs)  # the same, over the arrival window only (first to last arrival)
        self.last_arrival = self.specs[-1].submit if self.specs else 0.0
        self.series: list[tuple[float, int, int, int, int]] = []
        self.decide_ms: list[float] = []
        self.segments: list[tuple[str, float, float, float]] = []
        self.used_train = 0
        self.used_inf = 0
        self.tq = TwoQueueState()  # Tiresias' starvation ledger (two-queue policies only)
        if policy.two_queue:
            self.counters["promotions"] = 0

    # ------------------------------------------------------------------------------------------ helpers
    def _rate(self, app: str, w: int) -> float:
        key = (app, w)
        r = self.rates.get(key)
        if r is None:
            r = self.rates[key] = rate_one(self._tp(app), w, server_gpus=self.G)
        return r

    def _tp(self, app: str) -> ProfileThroughput:
        tp = self.tp.get(app)
        if tp is None:
            tp = self.tp[app] = ProfileThroughput(model=app)
        return tp

    def _count(self, state: str) -> int:
        return self.inf_state.count(state)

    def _set_load(self, t: float) -> None:
        """Follow the load curve: idle servers start serving first; serving servers beyond the need go idle."""
        n = self.cfg.inference_servers
        if n == 0:
            return
        level = self.cfg.load.at(t) if self.cfg.load is not None else 0.0
        self.need = min(n, math.ceil(level * n - 1e-9))
        serving = self._count("serving")
        if serving > self.need:
            for i in range(n - 1, -1, -1):
                if serving == self.need:
                    break
                if self.inf_state[i] == "serving":
                    self.inf_state[i] = "idle"
                    serving -= 1
        elif serving < self.need:
            for i in range(n):
                if serving == self.need:
                    break
                if self.inf_state[i] == "idle":
                    self.inf_state[i] = "serving"
                    serving += 1

    def _reclaim_wanted(self) -> int:
        short = self.need - self._count("serving") - self._count("idle")
        return max(0, min(short, self._count("loaned")))

    def _free_gpus(self) -> int:
        free = self.cfg.training_servers * self.G - self.used_train
        if self.policy.loan:
            free += (self._count("idle") + self._count("loaned")) * self.G - self.used_inf
        return free

    # ------------------------------------------------------------------------------------------ time
    def _advance(self, t: float, t2: float) -> None:
        dt = t2 - t
        if dt <= 0:
            return
        jobs, record = self.jobs, self.cfg.record
        for i in self.running:
            j = jobs[i]
            b = j.blocked
            s = b if b > t else t  # max(t, blocked)
            if t2 > s:
                j.remaining -= j.rate * (t2 - s)
                if record:
                    self.segments.append((j.spec.id, s, t2, j.rate))
            j.attained += j.workers * dt
        serving = self._count("serving")
        for gs, d in ((self.gs, dt), (self.gs_window, max(0.0, min(t2, self.last_arrival) - t))):
            if d > 0:
                gs["training_used"] += self.used_train * d
                gs["inference_loaned_used"] += self.used_inf * d
                gs["inference_serving"] += serving * self.G * d
                gs["inference_unmet"] += max(0, self.need - serving) * self.G * d

    def _next_completion(self, t: float) -> float:
        """The earliest finish time of a running job (:meth:`_Job.finish_time`, inlined), ``inf`` if none."""
        best = math.inf
        jobs = self.jobs
        for i in self.running:
            j = jobs[i]
            b = j.blocked
            f = (b if b > t else t) + j.remaining / j.rate
            if f < best:
                best = f
        return best

    def _complete(self, t: float) -> bool:
        """Complete every running job whose work is done at ``t`` (its own solved finish time).

        Done: the remaining work is within ``1e-9`` of the job's work, or the time it still needs is below what
        the clock resolves at ``t`` (``t + remaining / rate == t`` in floating point: late in a long replay a
        second's job can be left a few nano-seconds of work that no later time can represent; without this the
        next completion would stay at ``t`` forever).
        """
        finished = []
        for i in self.running:
            j = self.jobs[i]
            if j.blocked <= t and (j.remaining <= 1e-9 * max(1.0, j.spec.work) or t + j.remaining / j.rate <= t):
                finished.append(i)
        for i in sorted(finished):
            j = self.jobs[i]
            j.remaining = 0.0
            j.end = t
            self._release(j)
            self.running.discard(i)
            j.host = None
            del self.active[i]
            self.done += 1
            if self.progress is not None:
                self.progress(self.done)
        if finished and self.packing:
            self._set_rates()
        return bool(finished)

    def _release(self, j: _Job) -> None:
        self.used_train -= j.train_gpus
        self.used_inf -= j.inf_gpus
        j.train_gpus = j.inf_gpus = 0

    def _hold(self, j: _Job, placement: dict[str, int]) -> None:
        j.placement = placement
        j.workers = sum(placement.values())
        j.rate = self._rate(j.spec.app, j.workers)
        j.train_gpus = sum(n for s, n in placement.items() if s[0] == "t")
        j.inf_gpus = j.workers - j.train_gpus
        self.used_train += j.train_gpus
        self.used_inf += j.inf_gpus

    def _set_rates(self) -> None:
        """Every running job's rate: ``rate(w)``, times its packed speed where it shares GPUs (module docstring).

        A host's workers on shared GPUs run at the host's speed of the pair, the others at 1; a guest's workers
        all share. A pair counts while both of its jobs run: once one completes the other runs unshared."""
        for i in self.running:
            j = self.jobs[i]
            j.rate = self._rate(j.spec.app, j.workers)
        if not self.packing:
            return
        by_id = {self.jobs[i].spec.id: self.jobs[i] for i in self.running}
        opts = self.options
        measured = opts.pair_speed or {}
        speeds: dict[str, list[float]] = {}
        for g in self.packing:
            h, q = by_id.get(g.jobs[0]), by_id.get(g.jobs[1])
            if h is None or q is None:
                continue
            m = measured.get(f"{h.spec.app}|{q.spec.app}")
            rev = measured.get(f"{q.spec.app}|{h.spec.app}")
            m = m if m is not None else (rev[::-1] if rev is not None else None)
            sh, sq = pair_speed(h.spec.gpu_util, q.spec.gpu_util, g.shares[h.spec.id], g.shares[q.spec.id],
                                overhead=opts.packing_overhead, measured_a=None if m is None else m[0],
                                measured_b=None if m is None else m[1])
            speeds.setdefault(h.spec.id, []).extend([float(sh)] * g.gpus)
            speeds.setdefault(q.spec.id, []).extend([float(sq)] * g.gpus)
        for jid, sp in speeds.items():
            j = by_id[jid]
            w = max(j.workers, len(sp))
            j.rate = float(job_rate(self._rate(j.spec.app, j.workers), sp + [1.0] * (w - len(sp)),
                                    sample_stealing=opts.sample_stealing))

    def _profile(self, sp) -> PackingProfile:
        prof = self.profiles.get(sp.app)
        if prof is None:
            prof = self.profiles[sp.app] = PackingProfile(gpu_util=sp.gpu_util, gpu_mem_gb=sp.gpu_mem_gb, app=sp.app)
        return prof

    # ------------------------------------------------------------------------------------------ rounds
    def _quiet(self) -> bool:
        """A round whose decision is known without calling ``decide``: nothing queued, no reclaim asked, and
        every running job at its largest size. Then no step can change anything (nothing to admit, no loan
        wanted, every elastic job's top option is the one it holds, placements of unchanged jobs are kept), so
        the round is counted as quiet and skipped. Also quiet, under the greedy allocation without packing: nothing
        queued, no reclaim, and every elastic job held at the strict best size of its value row
        (:meth:`_sizes_kept`). Exact, not an approximation: tests compare against runs that call ``decide``
        every round."""
        if not self.skip_quiet or len(self.running) != len(self.active) or self._reclaim_wanted():
            return False
        elastic = self.policy.elastic
        jobs = self.jobs
        at_top = True
        for i in self.running:
            j = jobs[i]
            if j.host is not None:  # guests are queued in the snapshot
                return False
            if at_top and j.workers != (j.spec.max_workers if elastic else j.spec.gpus):
                at_top = False
        if at_top:
            return True
        pol = self.policy
        return elastic and pol.allocation == "greedy" and pol.packing == "off" and not pol.two_queue \
            and self._sizes_kept()

    def _sizes_kept(self) -> bool:
        """Whether the greedy allocation keeps every running job at its size, in a round with nothing queued, no
        reclaim and no packing (so nothing is admitted, nothing shrinks and the scale step alone could change
        a placement).

        The scale step's values are those of :func:`lyra_solver.values.value_table` (computed here by the same
        function on the same options, over each elastic job's whole range ``min..max``; the step's row is a
        part of it that holds the current size). When the current size ``c`` of every elastic job is the
        strict maximum of its row (by a margin far above rounding), ``c`` is the last undominated item of its
        class, and the sizes held fit in the capacity (which counts their workers above ``min``), so the
        greedy takes every upgrade up to ``c`` and stops there: the targets are the current sizes, placement
        keeps every job where it is, and no borrowed server hosts a worker. The decision changes nothing.

        A job found so at size ``c`` with remaining work ``R`` stays so while it holds ``c`` and its work only
        shrinks: ``value(c) - value(w) = R (1 / rate(w) - 1 / rate(c)) + restart_penalty`` does not decrease
        as ``R`` does (no time at the cap, rates fixed by ``w``), so the margin found once, far above
        rounding, still holds. Such jobs are remembered (:attr:`_kept`) and their rows not computed again.
        """
        rows = []
        for i in sorted(self.running):
            j = self.jobs[i]
            if j.spec.min_workers < j.spec.max_workers:
                seen = self._kept.get(i)
                if seen is None or seen[0] != j.workers or max(j.remaining, 0.0) > seen[1]:
                    rows.append(j)
        if not rows:
            return True
        opts = [JobOptions(self._tp(j.spec.app), j.spec.min_workers, j.spec.max_workers, max(j.remaining, 0.0), 1,
                           j.workers, j.spec.restart_penalty) for j in rows]
        table = value_table(opts, server_gpus=self.G, backend="numpy")
        n = len(rows)
        at = np.fromiter((j.workers - j.spec.min_workers for j in rows), np.int64, n)
        values = table.values.copy()
        held = values[np.arange(n), at]
        values[np.arange(n), at] = -np.inf
        pen = np.fromiter((j.spec.restart_penalty for j in rows), np.float64, n)
        # far above rounding and above the 1e-9 (of |T(min)| + |T(w)| + penalty) by which a GPU backend's table
        # may differ from numpy's
        longest = np.abs(table.times).max(axis=1)
        margin = 1e-6 * (1.0 + np.abs(table.times[:, 0]) + longest + pen)
        ok = held - values.max(axis=1) > margin
        for j, good, top in zip(rows, ok.tolist(), longest.tolist(), strict=True):
            if good and top < TIME_CAP:
                self._kept[j.idx] = (j.workers, max(j.remaining, 0.0))
        return bool(ok.all())

    def _snapshot(self, t: float) -> tuple[Snapshot, set[int]]:
        pol, thr = self.policy, self.cfg.tiresias_threshold
        servers = list(self.train_servers)
        reclaim = 0
        if pol.loan:
            servers += [self.inf_server[(i, st)] for i, st in enumerate(self.inf_state) if st != "serving"]
            reclaim = self._reclaim_wanted()
        hidden: set[int] = set()  # running jobs shown as queued (Tiresias' victims: see two_queue_victims)
        if pol.two_queue:  # queued by the attained service since the last promotion (starvation rule)
            self.tq = tq = promote_starved(self.tq, t, ((i, j.spec.submit, j.attained, j.train_gpus + j.inf_gpus)
                                                        for i, j in self.active.items()),
                                           thr, self.cfg.tiresias_starve_limit)
            self.counters["promotions"] = tq.promotions
            hidden = two_queue_victims(
                sum(s.gpus for s in servers),
                ((i, j.spec.submit, tq.queue_attained(i, j.attained), j.spec.min_workers if pol.elastic
                  else j.spec.gpus, j.train_gpus + j.inf_gpus) for i, j in self.active.items()), thr)
        jobs = []
        for i in sorted(self.active):
            j = self.jobs[i]
            sp = j.spec
            lo, hi = (sp.min_workers, sp.max_workers) if pol.elastic else (sp.gpus, sp.gpus)
            att = (0.0 if tq.queue_attained(i, j.attained) < thr else thr) if pol.two_queue else j.attained
            jobs.append(Job(id=sp.id, min_workers=lo, max_workers=hi, remaining_work=max(j.remaining, 0.0),
                            throughput=self._tp(sp.app), submit_time=sp.submit,
                            placement=None if i in hidden else j.placement,
                            restart_penalty=sp.restart_penalty, preemption_penalty=sp.preemption_penalty,
                            attained_service=att,
                            packing=self._profile(sp) if pol.packing != "off" else None))
        snap = Snapshot(format_version=1, servers=servers, jobs=jobs, now=t, inference=Inference(reclaim=reclaim),
                        options=self.options)
        return snap, hidden

    def _round(self, t: float) -> None:
        snap, hidden = self._snapshot(t)
        t0 = time.perf_counter()
        decision = decide(snap, keep_packing=self.packing)  # packing guests keep their host GPUs if they may
        self.decide_ms.append((time.perf_counter() - t0) * 1e3)
        if self.cfg.check:
            from lyra_solver.check import check_decision, format_violations

            bad = check_decision(msgspec.to_builtins(snap), msgspec.to_builtins(decision))
            if bad:
                raise DecisionRejected(f"round at t={t}: {format_violations(bad[:5])}")
        nxt = apply_decision(snap, decision)
        self.counters["rounds"] += 1
        back, lent = decision.servers.reclaim, decision.servers.loan
        for sid in back:
            self.inf_state[int(sid[1:])] = "serving"
        for sid in lent:
            self.inf_state[int(sid[1:])] = "loaned"
        if back:
            self.counters["reclaim_events"] += len(back)
            self.counters["reclaim_rounds"] += 1
        self.counters["loans"] += len(lent)
        gone = set(back)
        index = {self.jobs[i].spec.id: i for i in self.active}
        guest_of = {jid: g.jobs[0] for g in decision.packing for jid in g.jobs[1:]}
        was_at, now_at = _shared_at(self.packing), _shared_at(decision.packing)
        self.packing = list(decision.packing)
        for job in nxt.jobs:
            i = index[job.id]
            j = self.jobs[i]
            host = guest_of.get(job.id)
            if host is not None or j.host is not None:
                self._guest(t, i, j, host, job.placement, decision.jobs[job.id].workers,
                            moved=was_at.get(job.id) != now_at.get(job.id))
                continue
            old, new = j.placement, job.placement
            if new == old:
                continue
            if new is None:  # preempted
                self._release(j)
                j.placement, j.workers, j.rate = None, 0, 0.0
                self.running.discard(i)
                j.preemptions += 1
                j.resume_penalty = True
                self.counters["preemptions"] += 1
                continue
            if old is None:  # started or resumed
                if j.start is None:
                    j.start = t
                j.blocked = t + (j.spec.preemption_penalty if j.resume_penalty else 0.0)
                j.resume_penalty = False
                self.running.add(i)
            else:  # scaled or moved: a restart; a preemption if the job was hidden (Tiresias) or lost, to a
                # reclaimed server, more workers than it could shrink by (preempted and re-admitted in one round)
                lo = j.spec.min_workers if self.policy.elastic else j.spec.gpus
                if i in hidden or sum(n for s, n in old.items() if s not in gone) < lo:
                    j.preemptions += 1
                    self.counters["preemptions"] += 1
                    j.blocked = t + j.spec.preemption_penalty
                else:
                    if sum(new.values()) != j.workers:
                        j.scalings += 1
                        self.counters["scaling_events"] += 1
                    self.counters["restarts"] += 1
                    j.blocked = t + j.spec.restart_penalty
                self._release(j)
            self._hold(j, dict(new))
        if self.policy.packing != "off":
            self._set_rates()
        queued = len(self.active) - len(self.running)
        self.series.append((t, queued, self.used_train, self._count("serving") * self.G, self.used_inf))

    def _guest(self, t: float, i: int, j: _Job, host: str | None, placement, workers: int | None,
               moved: bool = True) -> None:
        """Carry out the decision for a job that runs as a packing guest now (``host``) or did until now;
        ``moved``: its host or the GPUs it shares with it changed since the last round."""
        if host is not None:
            self.counters["packed"] += 1
            j.packed += 1
        if j.host is not None:  # a guest until now
            if host == j.host and not moved:  # packed again on the same GPUs of the same host: undisturbed
                j.workers = workers
                return
            j.host = None
            if host is None and placement is None:  # left waiting: preempted
                self.running.discard(i)
                j.workers, j.rate = 0, 0.0
                j.preemptions += 1
                j.resume_penalty = True
                self.counters["preemptions"] += 1
                return
            self.counters["restarts"] += 1  # another host, or started properly: a restart
            j.blocked = max(j.blocked, t + j.spec.restart_penalty)
            if host is None:
                self._hold(j, dict(placement))
                return
        else:  # starts as a guest (steps 1-5 left it waiting)
            if j.placement is not None:  # not produced by step 6 (it packs waiting jobs); handled as a preemption
                self._release(j)
                j.placement = None
                j.preemptions += 1
                j.resume_penalty = True
                self.counters["preemptions"] += 1
            if j.start is None:
                j.start = t
            j.blocked = t + (j.spec.preemption_penalty if j.resume_penalty else 0.0)
            j.resume_penalty = False
            self.running.add(i)
        j.host, j.workers = host, workers

    # ------------------------------------------------------------------------------------------ loop
    def run(self) -> SimResult:
        cfg = self.cfg
        self.jobs = [_Job(s, i) for i, s in enumerate(self.specs)]
        arrivals = [(s.submit, i) for i, s in enumerate(self.specs)]
        heapq.heapify(arrivals)
        t = self.specs[0].submit if self.specs else 0.0
        origin = t
        load = cfg.load if cfg.inference_servers else None
        next_load = t if load is not None else math.inf
        next_tick = t
        while arrivals or self.active:
            busy = bool(self.active) or self._reclaim_wanted() > 0
            if next_tick < t:  # ticks resume on the grid origin + k * interval
                next_tick = origin + math.ceil((t - origin) / cfg.interval) * cfg.interval
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
                self._set_load(t)
                next_load = self._next_load_time(t)
            if t_done <= t:
                event |= self._complete(t)
            while arrivals and arrivals[0][0] <= t:
                _, i = heapq.heappop(arrivals)
                self.active[i] = self.jobs[i]
                event = True
            tick = busy and t >= next_tick
            if tick:
                next_tick = t + cfg.interval
            if (tick or (event and self._free_gpus() > 0)) and (self.active or self._reclaim_wanted()):
                if self._quiet():
                    self.counters["quiet_rounds"] += 1
                    self.series.append((t, 0, self.used_train, self._count("serving") * self.G, self.used_inf))
                else:
                    self._round(t)
        makespan = max((j.end for j in self.jobs if j.end is not None), default=origin) - origin
        rows = [self._row(j) for j in self.jobs]
        return SimResult(self.policy.name, rows, self.series, dict(self.counters), dict(self.gs), makespan,
                         self.decide_ms, self.segments, dict(self.gs_window), self.last_arrival - origin)

    def _next_load_time(self, t: float) -> float:
        load = self.cfg.load
        x = t % load.period
        base = t - x
        k = bisect.bisect_right(load.times, x + 1e-9)
        return base + (load.times[k] if k < len(load.times) else load.period)

    @staticmethod
    def _row(j: _Job) -> dict:
        sp = j.spec
        return {"id": sp.id, "line": sp.line, "submit": sp.submit, "gpus": sp.gpus, "app": sp.app,
                "min_workers": sp.min_workers, "max_workers": sp.max_workers, "work": sp.work,
                "start": j.start, "end": j.end,
                "queue": None if j.start is None else j.start - sp.submit,
                "jct": None if j.end is None else j.end - sp.submit,
                "preemptions": j.preemptions, "scalings": j.scalings, "packed": j.packed}


def _shared_at(groups) -> dict[str, tuple[str, tuple[tuple[str, int], ...]]]:
    """Packing guest -> (its host, the (server, GPUs) it shares with it), from a decision's packing groups."""
    at: dict[str, tuple[str, list]] = {}
    for g in groups:
        for guest in g.jobs[1:]:
            at.setdefault(guest, (g.jobs[0], []))[1].append((g.server, g.gpus))
    return {k: (h, tuple(sorted(v))) for k, (h, v) in at.items()}
