"""The interface every simulator policy implements, and the snapshot rules most policies share.

A policy is not code in the engine: it is how the simulator builds each round's snapshot (which servers it
shows, which jobs may scale, which running jobs it shows as queued), which ``decide`` options and keyword
arguments it passes, and what it remembers between rounds (:meth:`Policy.start` gives a run its own state).
The engine (:mod:`..engine`) calls, each round::

    snap, hidden = policy.snapshot(view, t, state)    # the round's snapshot; running jobs shown as queued
    decision = decide(snap, **policy.decide_kwargs(view, state))
    policy.after_round(view, t, state, decision)       # react to what was decided (default: nothing)

and at a round skipped as quiet (its decision known to change nothing) ``policy.quiet_round(view, t, state)``.

``view`` is the engine's read-only face (:class:`View`): the cluster, the active jobs, the configuration, the
last round's packing. A policy never changes the engine's state; its own state is the object :meth:`start`
returned.

A new policy is one module holding a subclass (or an instance of an existing class with other fields) and one
row in :data:`lyra_solver.bench.sim.policies.POLICIES`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import msgspec
from lyra_solver.errors import InputError
from lyra_solver.formulations.vocabulary import OBJECTIVES
from lyra_solver.types import Inference, Job, Options, PackingGroup, Snapshot


class View(Protocol):
    """What a policy may read of the engine (all read-only)."""

    cfg: Any  # the SimConfig
    cluster: Any  # the .cluster.Cluster
    active: Mapping[int, Any]  # queued or running jobs (.jobs.SimJob) by arrival index, in arrival order
    packing: Sequence[PackingGroup]  # the last decision's packing groups

    options: Any  # the snapshot options (lyra_solver.Options)
    # the jobs of the last snapshot decided, by id (Policy.job shows them again); empty where the engine keeps them
    # itself, by arrival index (.kept: a policy with the base snapshot rules)
    shown: Mapping[str, Job]

    def throughput(self, app: str) -> Any: ...
    def job_throughput(self, j: Any, lo: int, hi: int) -> Any: ...
    def packing_profile(self, spec: Any) -> Any: ...
    def count(self, name: str, value: int) -> None: ...  # set a counter the policy reports (e.g. promotions)


@dataclass(frozen=True)
class Policy:
    """A policy: the snapshot rules and ``decide`` options of one row of the policy table.

    Fields: ``loan`` (show idle and loaned inference servers, ask for reclaims), ``elastic`` (show each job's
    elastic range, else ``min = max =`` its requested size), ``queue``, ``allocation``, ``reclaim``,
    ``packing`` (the ``decide`` options), ``options`` (further ``decide`` options by name, e.g. an objective:
    pairs, validated against :class:`lyra_solver.Options` by :meth:`decide_options`).
    """

    name: str
    loan: bool = False
    elastic: bool = False
    queue: str = "sjf"
    allocation: str = "greedy"
    reclaim: str = "greedy"
    packing: str = "off"
    options: tuple[tuple[str, Any], ...] = ()

    #: extra counters the policy reports (always present in its summary, 0 until counted)
    counters: tuple[str, ...] = ()

    def with_options(self, options: Mapping[str, Any]) -> Policy:
        """The same policy with further ``decide`` options (an unknown or bad one is an :class:`InputError`)."""
        pol = replace(self, options=tuple(sorted({**dict(self.options), **dict(options)}.items())))
        pol.decide_options(1.0)
        return pol

    def decide_options(self, time_limit: float) -> Options:
        """The snapshot's ``options``: queue, allocation, reclaim, ``bfd`` placement, packing, the time limit,
        then :attr:`options`."""
        raw = {"queue": self.queue, "allocation": self.allocation, "reclaim": self.reclaim, "placement": "bfd",
               "packing": self.packing, "time_limit": time_limit, **dict(self.options)}
        try:
            return msgspec.convert(raw, Options)
        except msgspec.ValidationError as err:
            raise InputError("--policy", f"{self.name}: bad decide option: {err}") from None

    def shown_range(self, spec) -> tuple[int, int]:
        """(min, max) workers a job is shown with: its elastic range, or its requested size."""
        return (spec.min_workers, spec.max_workers) if self.elastic else (spec.gpus, spec.gpus)

    def skips_kept_sizes(self) -> bool:
        """Whether rounds where the greedy allocation keeps every size may be skipped (:mod:`..quiet`): its
        proof holds for Lyra's objective only (a row of another depends on the other jobs: ranks, weights)."""
        objective = dict(self.options).get("objective", OBJECTIVES[0])
        return self.elastic and self.allocation == "greedy" and self.packing == "off" and objective == OBJECTIVES[0]

    def shows_held(self) -> bool:
        """Whether every job is shown with the placement it holds (queued: none), so that a decision keeping the
        shown placement changes nothing (the engine skips such jobs). Not for a policy that shows running jobs
        queued or queued ones placed (Tiresias)."""
        return True

    def consolidates(self) -> bool:
        """Whether ``decide`` may move a running job of unchanged size onto fewer servers (the place step's
        consolidation, ``Settings.compact_growth``: every objective but Lyra's), so that a round with every job
        at its largest size is not known to change nothing while a job is spread (:func:`..quiet.is_quiet`)."""
        return dict(self.options).get("objective", OBJECTIVES[0]) != OBJECTIVES[0]

    # ------------------------------------------------------------------------------------------ per round
    def start(self, cfg) -> Any:
        """A run's own state (default: none)."""
        return None

    def servers(self, view: View) -> tuple[tuple, int]:
        """The servers shown and the reclaim asked: training servers, plus idle and loaned inference servers and
        the loaned servers the load wants back when the policy loans (the cluster's tuple, built again only when
        an inference server changes state)."""
        return view.cluster.shown(self.loan), view.cluster.reclaim_wanted() if self.loan else 0

    def job(self, view: View, i: int, j, *, hidden: bool = False, attained: float | None = None) -> Job:
        """Job ``j`` (arrival index ``i``) as the snapshot shows it; ``hidden``: shown as queued although it
        runs; ``attained``: the attained service shown (default: all received).

        The struct the last snapshot showed for ``j`` (:attr:`View.shown`) is shown again when what it is built
        from is the same: the same remaining-work and placement objects (a queued job's, or a running job's
        held back by a penalty), the same attained service and throughput; else the fields that change during a
        run (work, attained service, placement, throughput) are replaced in it. The id, range, submit time,
        penalties, packing profile and deadline are fixed for a run. Equal structs either way: a queued job's is
        not built again, a running job's is copied with its new work and attained service (:func:`_again`)."""
        placement = None if hidden else j.placement
        att = j.attained if attained is None else attained
        sp = j.spec
        last = view.shown.get(sp.id)
        if last is not None and j.model is None:  # its application's profile, the same object all run
            return _again(last, j.remaining, placement, att)
        lo, hi = self.shown_range(sp)
        tp = view.job_throughput(j, lo, hi)
        if last is not None:  # the Pollux model's throughput: the job's own oracle table, again when its work is
            if last.remaining_work is j.remaining and last.placement is placement and (
                    last.attained_service is att or last.attained_service == att) and last.throughput is tp:
                return last
            return msgspec.structs.replace(last, remaining_work=max(j.remaining, 0.0), throughput=tp,
                                           placement=placement, attained_service=att)
        return Job(id=sp.id, min_workers=lo, max_workers=hi, remaining_work=max(j.remaining, 0.0),
                   throughput=tp, submit_time=sp.submit, placement=placement,
                   restart_penalty=sp.restart_penalty, preemption_penalty=sp.preemption_penalty,
                   attained_service=att,
                   packing=view.packing_profile(sp) if self.packing != "off" else None, deadline=sp.deadline)

    def snapshot(self, view: View, t: float, state: Any) -> tuple[Snapshot, set[int]]:
        """The round's snapshot and the running jobs (arrival indices) it shows as queued (default: none)."""
        servers, reclaim = self.servers(view)
        shown = view.shown
        jobs = []
        add = jobs.append
        # in arrival order (the engine's ``active`` is); self.job, the shown struct's case inlined (most jobs,
        # every round), and _again's with the same placement too (a running job: its work and attained service)
        for i, j in view.active.items():
            last = shown.get(j.spec.id)
            if last is None or j.model is not None:
                add(self.job(view, i, j))
                continue
            remaining, placement, attained = j.remaining, j.placement, j.attained
            if last.placement is not placement:
                add(_again(last, remaining, placement, attained))
            elif last.remaining_work is remaining and (last.attained_service is attained
                                                       or last.attained_service == attained):
                add(last)
            else:
                job = last.__copy__()
                _force(job, "remaining_work", 0.0 if remaining < 0.0 else remaining)
                _force(job, "attained_service", attained)
                add(job)
        return self.build(view, t, servers, jobs, reclaim), set()

    def build(self, view: View, t: float, servers: Sequence, jobs: list[Job], reclaim: int) -> Snapshot:
        return Snapshot(format_version=1, servers=servers, jobs=jobs, now=t, inference=Inference(reclaim=reclaim),
                        options=view.options)

    def decide_kwargs(self, view: View, state: Any) -> dict:
        """Keyword arguments of this round's ``decide`` besides the snapshot (default: none)."""
        return {}

    def after_round(self, view: View, t: float, state: Any, decision) -> None:
        """React to the round's decision (default: nothing)."""

    def quiet_round(self, view: View, t: float, state: Any) -> None:
        """Note a round the engine skips as quiet (:mod:`..quiet`: its decision changes nothing), for a policy
        whose memory follows every round (default: nothing)."""


def _again(last: Job, remaining: float, placement, attained: float) -> Job:
    """A job shown again (:meth:`Policy.job`): ``last``, the struct the last snapshot showed for it, when it is
    built from the same objects (the remaining work and placement) and the same attained service; else ``last``
    with those fields replaced (the shown work is ``max(remaining, 0.0)``). Only floats changing, the struct is
    copied and the two set (``msgspec.structs.force_setattr`` on the fresh copy, before anyone sees it: what
    ``replace`` does, without its ``__post_init__``, which only freezes sequences and mappings); a new
    placement goes through ``replace`` (frozen there)."""
    if last.remaining_work is remaining and last.placement is placement and (
            last.attained_service is attained or last.attained_service == attained):  # never -0.0 nor NaN
        return last
    work = 0.0 if remaining < 0.0 else remaining  # max(remaining, 0.0), the same object
    if last.placement is not placement:
        return msgspec.structs.replace(last, remaining_work=work, placement=placement, attained_service=attained)
    job = last.__copy__()
    _force(job, "remaining_work", work)
    _force(job, "attained_service", attained)
    return job


_force = msgspec.structs.force_setattr
