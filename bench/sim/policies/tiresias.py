"""``tiresias``: Tiresias' discretised two-queue least attained service (Gu et al., NSDI 2019, section 3.2).

The training cluster only, jobs at their requested sizes. A job is in the first queue while its attained
GPU-service (counted since its last promotion) is below ``tiresias_threshold`` GPU-seconds and in the second
above it; the snapshot shows its attained service as 0 or the threshold, so that the ``las`` order admits the
first queue before the second and FIFO (submit time) within each. A running second-queue job is stopped only
when a first-queue job is waiting and cannot start without its GPUs (:func:`two_queue_victims`); only those jobs
are shown as queued, and one that the round re-admits where it was is not disturbed (and not counted as
preempted). Starvation (:func:`promote_starved`, ``tiresias_starve_limit``, default 8): a second-queue job that
has waited at least STARVELIMIT times the length of its last run is promoted back to the first queue (its
attained service counted again from 0 for queueing); 0 disables the rule. The policy's state across rounds is
the starvation ledger (:class:`TwoQueueState`), and it reports ``promotions``.

With ``tiresias_mode="artifact"`` (``--tiresias-mode artifact``; the ``pollux-artifact`` preset) the round is
instead the one of the Pollux artifact's ``tiresias.py`` (Qiao et al., OSDI 2021; petuum/adaptdl, branch
osdi21-artifact), which runs Tiresias' Algorithm 1 as a priority walk (:func:`priority_walk`): every active job,
first queue then second, each queue in the order its jobs entered it (the first by arrival or promotion, the
second by demotion: :func:`queue_entries`), gets its GPUs when they fit in what the jobs before it left, else
waits; a running job that does not fit is preempted, in either queue. The jobs it starts are placed, in that
order, by the artifact's allocator (:func:`most_free_first`: the server with the most free GPUs first, which
spreads jobs where best fit would pack them); the snapshot shows them placed, and every other job's attained
service as its position in the list, so ``decide`` keeps those placements and has no job left that fits (the
note of :func:`priority_walk`). On the artifact's workloads 1-8 (``--preset pollux-artifact``) the two-queue
rule with the engine's placement gave mean JCTs 1.4% above to 17.0% below the artifact's recorded ones; this
mode 3.9% below to 0.7% above.

References
----------
Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI 2019.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .base import Policy


@dataclass(frozen=True)
class Tiresias(Policy):
    """Two-queue LAS at requested sizes on the training cluster (module docstring)."""

    queue: str = "las"
    counters: tuple[str, ...] = ("promotions",)

    def skips_kept_sizes(self) -> bool:
        return False

    def shows_held(self) -> bool:
        return False  # running jobs shown queued (two-queue victims), queued ones placed (artifact mode)

    def start(self, cfg) -> Any:
        return _State()

    def snapshot(self, view, t: float, state: Any):
        cfg = view.cfg
        thr = cfg.tiresias_threshold
        servers, reclaim = self.servers(view)
        active = view.active
        # queued by the attained service since the last promotion (starvation rule)
        state.tq = tq = promote_starved(state.tq, t, ((i, j.spec.submit, j.attained, j.held)
                                                      for i, j in active.items()), thr, cfg.tiresias_starve_limit)
        view.count("promotions", tq.promotions)
        if cfg.tiresias_mode == "artifact":
            return self._artifact_snapshot(view, t, state, servers, reclaim)
        hidden = two_queue_victims(
            sum(s.gpus for s in servers),
            ((i, j.spec.submit, tq.queue_attained(i, j.attained), self.shown_range(j.spec)[0], j.held)
             for i, j in active.items()), thr)
        jobs = [self.job(view, i, active[i], hidden=i in hidden,
                         attained=0.0 if tq.queue_attained(i, active[i].attained) < thr else thr)
                for i in sorted(active)]
        return self.build(view, t, servers, jobs, reclaim), hidden


    def _artifact_snapshot(self, view, t: float, state: Any, servers: tuple, reclaim: int):
        """The round of the artifact's ``tiresias.py`` (module docstring): the jobs the priority walk stops shown
        queued, those it starts shown placed by the artifact's allocator, every job's attained service shown as
        its position in the priority list."""
        active = view.active
        self.quiet_round(view, t, state)
        entries = state.entries
        order = sorted(active, key=lambda i: (*entries[i].rank(), active[i].spec.submit, i))
        runs, hidden = priority_walk(sum(s.gpus for s in servers),
                                     ((i, self.shown_range(active[i].spec)[0], active[i].held) for i in order))
        free = {s.id: s.gpus for s in servers}  # in server order: the allocator's ties go to the first
        for i in runs:
            for sid, n in (active[i].placement or {}).items():
                free[sid] -= n
        placed = {i: most_free_first(free, self.shown_range(active[i].spec)[0])
                  for i in runs if active[i].placement is None}
        rank = {i: float(r) for r, i in enumerate(order)}
        jobs = []
        for i in sorted(active):
            job = self.job(view, i, active[i], hidden=i in hidden, attained=rank[i])
            jobs.append(msgspec.structs.replace(job, placement=placed[i]) if i in placed else job)
        return self.build(view, t, servers, jobs, reclaim), hidden

    def quiet_round(self, view, t: float, state: Any) -> None:
        """Keep the queue entries (:func:`queue_entries`) of the priority walk at every round, quiet or not: a
        job demoted in a round the engine skips enters the second queue at that round."""
        if view.cfg.tiresias_mode != "artifact":
            return
        tq = state.tq
        state.entries = queue_entries(
            state.entries, t, ((i, j.spec.submit, tq.queue_attained(i, j.attained), tq.base(i))
                               for i, j in view.active.items()), view.cfg.tiresias_threshold)


class _State:
    """A run's memory: the starvation ledger after the last round, and each job's queue entry (the
    priority walk's)."""

    def __init__(self) -> None:
        self.tq = TwoQueueState()
        self.entries: dict[int, Entry] = {}


@dataclass(frozen=True)
class Entry:
    """Where a job stands in Tiresias' queues for the priority walk: its queue (0 first, 1 second), the time it
    entered it (its submission, or the round of its demotion or promotion), and the attained service at its
    last promotion that it was queued by then (``base``, to tell a new promotion)."""

    queue: int
    since: float
    base: float

    def rank(self) -> tuple[int, float]:
        return (self.queue, self.since)


def queue_entries(prev: Mapping[Hashable, Entry], t: float, jobs: Iterable[tuple[Hashable, float, float, float]],
                  threshold: float) -> dict[Hashable, Entry]:
    """Each active job's queue and the time it entered it, at the round of time ``t``.

    The Pollux artifact's ``tiresias.py`` keeps two lists: a new job is appended to the first, a job whose
    attained GPU-service reaches ``threshold`` is moved to the end of the second (the round it is first seen
    there), a promoted job (starvation rule) to the end of the first. Its order is the order jobs entered, so a
    job's place is (queue, entry time), ties by submit time then arrival.

    Parameters
    ----------
    prev : mapping
        The entries after the previous round (empty before the first).
    t : float
        This round's time.
    jobs : iterable of (key, submit, attained, base)
        The active jobs: key, submit time, attained GPU-seconds counted since the last promotion
        (:meth:`TwoQueueState.queue_attained`), and the attained service at that promotion (0 before any).
    threshold : float
        GPU-seconds at which a job enters the second queue.

    Returns
    -------
    dict
        Entries of exactly the jobs given.

    Examples
    --------
    ``a`` (submitted at 5) reaches the threshold at the round of 120; ``b`` (submitted at 0) at 180: ``a`` is
    ahead of ``b`` in the second queue.

    >>> e = queue_entries({}, 60.0, [("a", 5.0, 0.0, 0.0), ("b", 0.0, 0.0, 0.0)], 100.0)
    >>> e["a"], e["b"].rank()
    (Entry(queue=0, since=5.0, base=0.0), (0, 0.0))
    >>> e = queue_entries(e, 120.0, [("a", 5.0, 100.0, 0.0), ("b", 0.0, 50.0, 0.0)], 100.0)
    >>> e = queue_entries(e, 180.0, [("a", 5.0, 160.0, 0.0), ("b", 0.0, 110.0, 0.0)], 100.0)
    >>> e["a"].rank(), e["b"].rank()
    ((1, 120.0), (1, 180.0))
    """
    out: dict[Hashable, Entry] = {}
    for key, submit, attained, base in jobs:
        e = prev.get(key)
        if e is None:
            e = Entry(0, submit, base) if attained < threshold else Entry(1, t, base)
        elif base != e.base:  # promoted by the starvation rule this round: the end of the first queue
            e = Entry(0, t, base)
        elif e.queue == 0 and attained >= threshold:  # demoted: the end of the second queue
            e = Entry(1, t, base)
        out[key] = e
    return out


def priority_walk(capacity: int, jobs: Iterable[tuple[Hashable, int, int]]) -> tuple[list[Hashable], set[Hashable]]:
    """Who runs this round under Tiresias' priority walk (Gu et al. 2019, Algorithm 1, as the Pollux artifact's
    ``tiresias.py`` runs it), and which running jobs it stops.

    Walking ``jobs`` in priority order over the cluster's ``capacity`` GPUs, each job runs when its demand fits
    in what the jobs before it left (running or not), else it waits; a running job that waits is stopped.
    Later jobs that fit still run (backfill), so a job's place depends only on the jobs ahead of it.

    Parameters
    ----------
    capacity : int
        GPUs of the cluster the policy shows.
    jobs : iterable of (key, demand, held), in priority order
        The active jobs: key, GPUs needed to run, GPUs held now (0 when waiting).

    Returns
    -------
    (list of keys, set of keys)
        The jobs that run (in priority order, running or to start) and the running jobs to stop (show as queued).

    Notes
    -----
    Counting GPUs is exact for the simulator's jobs (one GPU per worker, workers placeable on any servers).
    Shown in this order, the engine's admission (queued jobs in order, each when it fits in the free GPUs) starts
    no job the walk does not: a job it passes over had less left at its place than it needs, and the engine has
    no more there. Running time O(n) for n active jobs.

    Examples
    --------
    Eight GPUs; ``a`` (first, 6 GPUs) waits, ``b`` (second, 4 GPUs) and ``c`` (third, 2 GPUs) run: ``a`` runs,
    ``b`` no longer fits and is stopped, ``c`` still fits.

    >>> priority_walk(8, [("a", 6, 0), ("b", 4, 4), ("c", 2, 2)])
    (['a', 'c'], {'b'})
    """
    left = capacity
    runs, victims = [], set()
    for key, demand, held in jobs:
        if demand <= left:
            left -= demand
            runs.append(key)
        elif held:
            victims.add(key)
    return runs, victims


def most_free_first(free: dict[Hashable, int], demand: int) -> dict[Hashable, int]:
    """The Pollux artifact's allocator (``tiresias.py``, ``optimus.py``: ``Counter.most_common``): ``demand``
    workers (one GPU each), taken repeatedly from the server with the most free GPUs (ties: the first in
    ``free``'s order), as many as it has or as are left. Takes them from ``free`` (changed in place) and returns
    ``{server: workers}``. The counts come out non-increasing (:func:`..pollux.arrangement` relies on it).
    The caller guarantees ``demand <= sum(free.values())``. Running time O(S) per server used.

    >>> free = {"t0": 2, "t1": 4, "t2": 4}
    >>> most_free_first(free, 2), most_free_first(free, 5), free
    ({'t1': 2}, {'t2': 4, 't0': 1}, {'t0': 1, 't1': 2, 't2': 0})
    """
    got: dict[Hashable, int] = {}
    while demand > 0:
        sid = max(free, key=free.__getitem__)  # the first of the most free
        n = min(free[sid], demand)
        if n <= 0:
            raise ValueError("demand exceeds the free GPUs")
        free[sid] -= n
        got[sid] = got.get(sid, 0) + n
        demand -= n
    return got


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

    def base(self, key: Hashable) -> float:
        """The attained service of ``key`` at its last promotion (0 before any)."""
        led = self.jobs.get(key)
        return led.base if led is not None else 0.0


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
