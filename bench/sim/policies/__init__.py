"""Scheduling policies of the simulator (DESIGN "Simulation"): one module per policy, one row per name.

A policy is not code in the engine: it is how the simulator builds each round's snapshot (which servers it
shows, which jobs may scale, which running jobs it shows as queued), which ``decide`` options it passes, and
what it remembers between rounds (:class:`.base.Policy`). The pipeline is the same for all.

========================  =======  =======  =====  ==========  =======  =======  ==========================
policy                    loaning  elastic  queue  allocation  reclaim  packing  module
========================  =======  =======  =====  ==========  =======  =======  ==========================
``baseline``              no       no       fifo   (none)      (none)   off      :mod:`.baseline`
``baseline-sjf``          no       no       sjf    (none)      (none)   off      :mod:`.baseline`
``loan``                  yes      no       sjf    (none)      greedy   off      :mod:`.loan`
``elastic``               no       yes      sjf    greedy      (none)   off      :mod:`.elastic`
``lyra``                  yes      yes      sjf    greedy+     greedy   off      :mod:`.lyra`
``lyra-exact``            yes      yes      sjf    exact       exact    off      :mod:`.lyra`
``lyra-greedy``           yes      yes      sjf    greedy      greedy   off      :mod:`.lyra`
``lyra-fifo``             yes      yes      fifo   greedy      greedy   off      :mod:`.lyra_fifo`
``lyra-pack``             yes      yes      sjf    greedy      greedy   gimbal   :mod:`.lyra_pack`
``tiresias``              no       no       las*   (none)      (none)   off      :mod:`.tiresias`
``optimus``               no       yes      fifo   greedy      (none)   off      :mod:`.optimus`
``lucid``                 no       no       sjf    (none)      (none)   lucid    :mod:`.lucid`
``gimbal``                no       no       sjf    (none)      (none)   gimbal   :mod:`.gimbal`
``gimbal-deadline``       no       no       sjf    (none)      (none)   gimbal+  :mod:`.gimbal`
``gimbal-makespan``       no       no       sjf    (none)      (none)   gimbal+  :mod:`.gimbal`
``gimbal-exact``          no       no       sjf    (none)      (none)   exact    :mod:`.gimbal`
========================  =======  =======  =====  ==========  =======  =======  ==========================

``greedy+``: Lyra's marginal greedy with Lyra's objective, the convex-hull greedy with any other
(:mod:`.lyra`; ``lyra-greedy`` keeps the marginal greedy for every objective). No loaning: the snapshot
holds the training servers only (separate clusters). Not elastic: every job runs at its requested size
(``min = max = g``). ``las*``: Tiresias' two queues (:mod:`.tiresias`). ``gimbal+``: Gimbal's packing with
its deadline or makespan objective (``packing_policy``); the packing systems run on the training cluster only,
as their papers do.

Adding a policy: a module with a :class:`.base.Policy` subclass (or none, when an existing class with other
fields will do) and one row in :data:`POLICIES`; the CLI's choices and the tests' parametrisations read this
table. :func:`get_policy` takes further ``decide`` options by name (``get_policy("lyra", {"objective": ...})``).

References
----------
Li et al., Lyra, EuroSys 2023; Gu et al., Tiresias, NSDI 2019; Yang et al., Gimbal, ACM TACO 2025; Hu et al.,
Lucid, ASPLOS 2023.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from lyra_solver.errors import InputError
from lyra_solver.types import Options

from .base import Policy, View
from .baseline import Baseline
from .elastic import Elastic
from .gimbal import Gimbal
from .loan import Loan
from .lucid import Lucid
from .lyra import Lyra
from .lyra_fifo import LyraFifo
from .lyra_pack import LyraPack
from .optimus import Optimus
from .tiresias import Ledger, Tiresias, TwoQueueState, promote_starved, two_queue_victims

__all__ = ["POLICIES", "Ledger", "Policy", "TwoQueueState", "View", "get_policy", "packing_available",
           "promote_starved", "two_queue_victims"]

#: The policy table: name -> policy (its class's module says what it does).
POLICIES: dict[str, Policy] = {p.name: p for p in (
    Baseline("baseline"),
    Baseline("baseline-sjf", queue="sjf"),
    Loan("loan"),
    Elastic("elastic"),
    Lyra("lyra"),
    Lyra("lyra-exact", allocation="exact", reclaim="exact", objective_allocation=None),
    Lyra("lyra-greedy", objective_allocation=None),
    LyraFifo("lyra-fifo"),
    LyraPack("lyra-pack"),
    Tiresias("tiresias"),
    Optimus("optimus"),
    Lucid("lucid"),
    Gimbal("gimbal"),
    Gimbal("gimbal-deadline", options=(("packing_policy", "deadline"),)),
    Gimbal("gimbal-makespan", options=(("packing_policy", "makespan"),)),
    Gimbal("gimbal-exact", packing="exact"),
)}


def packing_available(mode: str = "gimbal") -> bool:
    """Whether this engine's snapshot options accept ``packing=mode``."""
    try:
        msgspec.convert({"packing": mode}, Options)
    except msgspec.ValidationError:
        return False
    return True


def get_policy(name: str, options: Mapping[str, Any] | None = None) -> Policy:
    """The policy called ``name``, with further ``decide`` options by name if given.

    Raises :class:`InputError` (``--policy``) for an unknown name, a packing mode the engine lacks, or an option
    :class:`lyra_solver.Options` refuses.
    """
    if name not in POLICIES:
        raise InputError("--policy", f"unknown policy {name!r} (choose from {', '.join(POLICIES)})")
    pol = POLICIES[name]
    if pol.packing != "off" and not packing_available(pol.packing):
        raise InputError("--policy", f"{name}: this engine's options do not accept packing {pol.packing!r}")
    return pol.with_options(options) if options else pol
