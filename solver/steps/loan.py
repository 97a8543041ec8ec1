"""Step 2 of the round, loan (DESIGN "Round pipeline"): borrow idle inference servers when queued or elastic work can
use them.

Running time O(S log S + J) for S servers and J jobs.
"""
from __future__ import annotations

from itertools import compress
from operator import mul

import numpy as np
from lyra_solver.formulations.vocabulary import ServerKind
from lyra_solver.steps._state import RoundState, Settings, usable_servers, used_gpus

__all__ = ["loan"]


def loan(state: RoundState, settings: Settings) -> tuple[int, ...]:
    """Idle inference servers to borrow (server indices, increasing): as many as the demand beyond free capacity
    needs.

    Demand: base demand of queued jobs plus what elastic jobs could still add (their ``max_workers``). Largest
    servers first, then snapshot order. Servers that end up hosting no worker are not borrowed (the decision
    drops them after placement). ``settings`` is not read: borrowing does not depend on an option.
    """
    cl, rec = state.cluster, state.reclaimed
    idle = np.flatnonzero(cl.kind == ServerKind.IDLE).tolist()
    if not idle:
        return ()
    usable = usable_servers(cl, rec, ())
    free = int((cl.gpus - used_gpus(cl, rec.placement))[usable].sum())
    max_w, gpw = cl.max_w.tolist(), cl.gpw.tolist()
    placement = rec.placement
    # queued jobs: their max_workers x gpus_per_worker; running ones: what they could add (Python ints: no
    # overflow). O(J) in C plus O(running jobs) in Python
    running = list(compress(range(len(placement)), placement))
    held = sum(sum(placement[j].values()) * gpw[j] for j in running)
    if placement.count({}):  # a job with an empty placement is neither queued nor running: it counts for nothing
        demand = sum(max_w[j] * gpw[j] for j in [*rec.queued, *running]) - held
    else:  # every job is queued or running
        demand = sum(map(mul, max_w, gpw)) - held
    deficit = demand - free
    borrowed = []
    gpus = cl.gpus.tolist()
    for s in sorted(idle, key=lambda s: (-gpus[s], s)):
        if deficit <= 0:
            break
        borrowed.append(s)
        deficit -= gpus[s]
    return tuple(sorted(borrowed))
