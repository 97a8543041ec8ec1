"""Scheduling policies of the simulator (DESIGN "Simulation").

A policy is not code in the engine: it is how the simulator builds each round's snapshot (which servers it
shows, which jobs may scale) and which ``decide`` options it passes. The pipeline is the same for all.

========================  =======  =======  =====  ==========  =======  =======
policy                    loaning  elastic  queue  allocation  reclaim  packing
========================  =======  =======  =====  ==========  =======  =======
``baseline``              no       no       fifo   (none)      (none)   off
``baseline-sjf``          no       no       sjf    (none)      (none)   off
``loan``                  yes      no       sjf    (none)      greedy   off
``elastic``               no       yes      sjf    greedy      (none)   off
``lyra``                  yes      yes      sjf    greedy      greedy   off
``lyra-exact``            yes      yes      sjf    exact       exact    off
``lyra-pack``             yes      yes      sjf    greedy      greedy   gimbal
``tiresias``              no       no       las*   (none)      (none)   off
========================  =======  =======  =====  ==========  =======  =======

No loaning: the snapshot holds the training servers only (separate clusters). Not elastic: every job runs at
its requested size (``min = max = g``). ``las*``: Tiresias' discretised two-queue least attained service
(Gu et al. 2019, section 3.2, with two queues), see :func:`two_queue_victims`: a job is in the first queue
while its attained GPU-service is below ``tiresias_threshold`` GPU-seconds and in the second above it; the
snapshot shows its attained service as 0 or the threshold, so that the ``las`` order admits the first queue
before the second and FIFO (submit time) within each. A running second-queue job is stopped only when a
first-queue job is waiting and cannot start without its GPUs; only those jobs are shown as queued, and one that
the round re-admits where it was is not disturbed (and not counted as preempted). Starvation
(:func:`promote_starved`, ``tiresias_starve_limit``, default 8): a second-queue job that has waited at least
STARVELIMIT times the length of its last run is promoted back to the first queue (its attained service counted
again from 0 for queueing); 0 disables the rule.

References
----------
Li et al., Lyra, EuroSys 2023; Gu et al., Tiresias, NSDI 2019; Yang et al., Gimbal, ACM TACO 2025.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field

import msgspec
from lyra_solver.errors import InputError
from lyra_solver.types import Options


@dataclass(frozen=True)
class Policy:
    name: str
    loan: bool
    elastic: bool
    queue: str
    allocation: str = "greedy"
    reclaim: str = "greedy"
    packing: str = "off"
    two_queue: bool = False


POLICIES: dict[str, Policy] = {p.name: p for p in (
    Policy("baseline", loan=False, elastic=False, queue="fifo"),
    Policy("baseline-sjf", loan=False, elastic=False, queue="sjf"),
    Policy("loan", loan=True, elastic=False, queue="sjf"),
    Policy("elastic", loan=False, elastic=True, queue="sjf"),
    Policy("lyra", loan=True, elastic=True, queue="sjf"),
    Policy("lyra-exact", loan=True, elastic=True, queue="sjf", allocation="exact", reclaim="exact"),
    Policy("lyra-pack", loan=True, elastic=True, queue="sjf", packing="gimbal"),
    Policy("tiresias", loan=False, elastic=False, queue="las", two_queue=True),
)}


def packing_available(mode: str = "gimbal") -> bool:
    """Whether this engine's snapshot options accept ``packing=mode`` (packing is a separate work item)."""
    try:
        msgspec.convert({"packing": mode}, Options)
    except msgspec.ValidationError:
        return False
    return True


def get_policy(name: str) -> Policy:
    """The policy called ``name``; :class:`InputError` for an unknown name or packing this engine lacks."""
    if name not in POLICIES:
        raise InputError("--policy", f"unknown policy {name!r} (choose from {', '.join(POLICIES)})")
    pol = POLICIES[name]
    if pol.packing != "off" and not packing_available(pol.packing):
        raise InputError("--policy", f"{name}: packing not available in this engine (options.packing "
                         f"{pol.packing!r} is not accepted yet)")
    return pol


def two_queue_victims(capacity: int, jobs: Iterable[tuple[int, float, float, int, int]],
                      threshold: float) -> set[int]:
    """The running second-queue jobs that Tiresias' two-queue LAS stops this round (Gu et al. 2019, 3.2).

    The priority list is the first queue (attained GPU-service below ``threshold``) then the second, FIFO by
    submit time within each. Walking it over the cluster's GPUs: running first-queue jobs keep theirs; each
    waiting first-queue job, in FIFO order, is granted its demand when it fits in what the first queue leaves
    (one that cannot fit even with the whole second queue stopped is passed over, as the engine backfills);
    then each running second-queue job, in FIFO order, keeps its GPUs if they fit in what is left, else it is
    a victim. Waiting second-queue jobs never displace running ones (no preemption within a queue), and with
    no first-queue job waiting, or every waiting one fitting in free GPUs, nobody is stopped.

    With the starvation rule (:func:`promote_starved`), ``attained`` is the attained service counted since the
    job's last promotion, so a promoted job is a first-queue job here.

    Parameters
    ----------
    capacity : int
        GPUs of the cluster the policy shows.
    jobs : iterable of (key, submit, attained, demand, held)
        The active jobs: a key (returned for victims; also the tie-break after submit time), submit time,
        attained GPU-seconds, GPUs needed to start, GPUs held now (0 when waiting).
    threshold : float
        GPU-seconds of attained service at which a job enters the second queue.

    Returns
    -------
    set of keys
        The running second-queue jobs to stop (show as queued); empty when none has to.

    Notes
    -----
    Counting GPUs is exact for the simulator's jobs (one GPU per worker, workers placeable on any servers).
    Running time O(n log n) for n active jobs.

    Examples
    --------
    Eight GPUs; ``a`` (second queue, 4 GPUs) and ``b`` (second queue, 4 GPUs, later) run; ``c`` (first queue,
    4 GPUs) waits: the later of the two second-queue jobs is stopped.

    >>> sorted(two_queue_victims(8, [("a", 0, 9e3, 4, 4), ("b", 5, 9e3, 4, 4), ("c", 9, 0.0, 4, 0)], 3600.0))
    ['b']
    """
    first_run, first_wait, second_run = [], [], []
    for key, submit, attained, demand, held in jobs:
        if attained < threshold:
            (first_run if held else first_wait).append((submit, key, demand, held))
        elif held:
            second_run.append((submit, key, demand, held))
    if not first_wait:
        return set()
    left = capacity - sum(e[3] for e in first_run)
    for _submit, _key, demand, _held in sorted(first_wait):
        if demand <= left:
            left -= demand
    victims = set()
    for _submit, key, _demand, held in sorted(second_run):
        if held <= left:
            left -= held
        else:
            victims.add(key)
    return victims


@dataclass(frozen=True)
class Ledger:
    """What the starvation rule knows of one job: whether it held GPUs at the last round, since when (its last
    start or resume while running, its last stop or its submission while waiting), the length of its last run
    (0 before it first ran), and its attained service at its last promotion (``base``, 0 before any)."""

    running: bool
    since: float
    last_run: float
    base: float


@dataclass(frozen=True)
class TwoQueueState:
    """The starvation rule's memory between rounds: the time of the last round, a :class:`Ledger` per active
    job, and the number of promotions so far."""

    t: float | None = None
    jobs: Mapping[Hashable, Ledger] = field(default_factory=dict)
    promotions: int = 0

    def queue_attained(self, key: Hashable, attained: float) -> float:
        """The attained service Tiresias queues ``key`` by: counted since its last promotion."""
        led = self.jobs.get(key)
        return attained - led.base if led is not None else attained


def promote_starved(state: TwoQueueState, t: float, jobs: Iterable[tuple[Hashable, float, float, int]],
                    threshold: float, starve_limit: float) -> TwoQueueState:
    """Tiresias' starvation rule at the round of time ``t`` (Gu et al. 2019, section 3.2, "avoiding
    starvation"): the state after this round's promotions.

    Reading of the paper: with least-attained-service queues a job in a lower queue can wait for ever behind a
    stream of new jobs, so Tiresias promotes a job back to the highest-priority queue once it has waited longer
    than STARVELIMIT, a knob that the paper sets relative to the job's execution: here a waiting job is promoted
    when its current wait (since its last stop) reaches ``starve_limit`` times the length of its last run (the
    time it last held GPUs without a break, penalties included). Promotion resets the attained service that it
    is queued by (not the service it really received: work and GPU-seconds are unaffected); it then climbs from
    0 again and is demoted again at ``threshold``. A job that never ran counts its wait from its submission,
    but with no attained service it is in the first queue already, so the rule never changes it; only jobs of
    the second queue are promoted. The rule is applied at rounds, so a promotion takes effect at the first round
    at or after the limit (at most one ``--interval`` late). Default 8 (``SimConfig.tiresias_starve_limit``):
    the value that Voda's re-implementation of Tiresias reads from the paper ("STARVELIMIT as promoteKnob x
    last execution time", knob 8), and one of the knob values of the authors' public simulator (0.5 to 1000).

    Parameters
    ----------
    state : TwoQueueState
        The state after the previous round (``TwoQueueState()`` before the first).
    t : float
        This round's time (seconds); jobs whose holding changed since ``state.t`` were started or stopped by the
        previous round's decision, i.e. at ``state.t``.
    jobs : iterable of (key, submit, attained, held)
        The active jobs: key, submit time, attained GPU-seconds (all service received), GPUs held now.
    threshold : float
        GPU-seconds of (queue) attained service at which a job enters the second queue.
    starve_limit : float
        STARVELIMIT; 0 disables promotions (the ledger is still kept).

    Returns
    -------
    TwoQueueState
        Ledgers of exactly the jobs given; ``queue_attained`` gives what to queue them by.

    Notes
    -----
    Running time O(n) for n active jobs.

    Examples
    --------
    ``a`` ran 0-600 s (4,800 GPU-s, second queue) and was stopped at 600; at 1,200 it has waited 600 s, once
    its last run: promoted with a limit of 1, not with 2.

    >>> s = TwoQueueState()
    >>> for t, attained, held in [(0.0, 0.0, 0), (60.0, 480.0, 8), (600.0, 4800.0, 8), (660.0, 4800.0, 0)]:
    ...     s = promote_starved(s, t, [("a", 0.0, attained, held)], 3600.0, 1.0)  # started at 0, stopped at 600
    >>> s.jobs["a"]
    Ledger(running=False, since=600.0, last_run=600.0, base=0.0)
    >>> promote_starved(s, 1200.0, [("a", 0.0, 4800.0, 0)], 3600.0, 2.0).promotions
    0
    >>> p = promote_starved(s, 1200.0, [("a", 0.0, 4800.0, 0)], 3600.0, 1.0)
    >>> p.promotions, p.queue_attained("a", 4800.0)
    (1, 0.0)
    """
    prev_t = state.t
    promotions = state.promotions
    out: dict[Hashable, Ledger] = {}
    for key, submit, attained, held in jobs:
        led = state.jobs.get(key)
        if led is None:
            led = Ledger(running=held > 0, since=submit if held == 0 else t, last_run=0.0, base=0.0)
        elif led.running and not held:  # stopped by the last round
            led = Ledger(running=False, since=prev_t, last_run=prev_t - led.since, base=led.base)
        elif not led.running and held:  # started or resumed by the last round
            led = Ledger(running=True, since=prev_t, last_run=led.last_run, base=led.base)
        if (starve_limit > 0 and not held and attained - led.base >= threshold
                and t - led.since >= starve_limit * led.last_run):
            led = Ledger(running=False, since=led.since, last_run=led.last_run, base=attained)
            promotions += 1
        out[key] = led
    return TwoQueueState(t=t, jobs=out, promotions=promotions)
