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
its requested size (``min = max = g``). ``las*``: Tiresias' two-queue discretised least attained service — a
job's attained service is shown as 0 below ``tiresias_threshold`` GPU-seconds and as the threshold above it
(FIFO within a queue: the engine breaks ties by submit time), and when a job of the first queue waits, the
running jobs of the second queue are shown as queued, so that the engine may preempt them (a job re-admitted
where it was is not disturbed).

References
----------
Li et al., Lyra, EuroSys 2023; Gu et al., Tiresias, NSDI 2019; Yang et al., Gimbal, ACM TACO 2025.
"""
from __future__ import annotations

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
