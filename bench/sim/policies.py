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
the round re-admits where it was is not disturbed (and not counted as preempted).

References
----------
Li et al., Lyra, EuroSys 2023; Gu et al., Tiresias, NSDI 2019; Yang et al., Gimbal, ACM TACO 2025.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

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
