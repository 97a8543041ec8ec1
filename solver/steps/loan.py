"""Step 2 of the round, loan (DESIGN "Round pipeline"): borrow idle inference servers when queued or elastic work can
use them.

Running time O(S log S + J) for S servers and J jobs, O(S log S) of it in Python.
"""
from __future__ import annotations

from itertools import compress
from operator import mul

import numpy as np
from lyra_solver.steps._state import KIND_IDLE, RoundState, Settings, usable_servers, used_gpus

__all__ = ["loan"]


def loan(state: RoundState, settings: Settings) -> tuple[int, ...]:
    """Idle inference servers to borrow (server indices, increasing): as many as the demand beyond free capacity
    needs.

    Demand: base demand of queued jobs plus what elastic jobs could still add (their ``max_workers``). Largest
    servers first, then snapshot order. Servers that end up hosting no worker are not borrowed (the decision
    drops them after placement). ``settings`` is not read: borrowing does not depend on an option.
    """
    cl, rec = state.cluster, state.reclaimed
    idle = (cl.kind == KIND_IDLE).nonzero()[0].tolist()
    if not idle:
        return ()
    usable = usable_servers(cl, rec, ())
    used = used_gpus(cl, rec.placement)  # kept by the reclaim step
    free = int((cl.gpus - used)[usable].sum())
    placement = rec.placement
    # queued jobs: their max_workers x gpus_per_worker; running ones: what they could add, their max less the
    # GPUs they hold (all the GPUs used). O(J) in C
    held = int(used.sum())
    if placement.count({}):  # a job with an empty placement is neither queued nor running: it counts for nothing
        max_w, gpw = cl.max_w.tolist(), cl.gpw.tolist()
        running = compress(range(len(placement)), placement)
        demand = sum(max_w[j] * gpw[j] for j in [*rec.queued, *running]) - held
    else:  # every job is queued or running
        demand = _total_demand(cl.max_w, cl.gpw) - held
    deficit = demand - free
    borrowed = []
    gpus = cl.gpus.tolist()
    for s in sorted(idle, key=lambda s: (-gpus[s], s)):
        if deficit <= 0:
            break
        borrowed.append(s)
        deficit -= gpus[s]
    return tuple(sorted(borrowed))


#: Largest ``max_workers x gpus_per_worker`` sum that int64 arithmetic holds exactly (with room to spare).
_EXACT_INT64 = 1 << 62


def _total_demand(max_w: np.ndarray, gpw: np.ndarray) -> int:
    """``sum(max_w * gpw)`` over every job, exactly: by numpy where no product or partial sum can pass
    :data:`_EXACT_INT64` (each factor bounded by its largest value), else with Python ints. O(J) in C."""
    if not max_w.size:
        return 0
    top_w, top_g = int(max_w.max()), int(gpw.max())
    if top_w >= 0 and top_g >= 0 and top_w * top_g * max_w.size < _EXACT_INT64:
        return int(np.dot(max_w, gpw))
    return sum(map(mul, max_w.tolist(), gpw.tolist()))
