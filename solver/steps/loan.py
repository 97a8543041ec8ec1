"""Step 2 of the round, loan (DESIGN "Round pipeline"): borrow idle inference servers when queued or elastic work can
use them.

Running time O(S log S + J) for S servers and J jobs.
"""
from __future__ import annotations

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
    idle = [int(s) for s in np.flatnonzero(cl.kind == ServerKind.IDLE)]
    if not idle:
        return ()
    usable = usable_servers(cl, rec, ())
    free = int((cl.gpus - used_gpus(cl, rec.placement))[usable].sum())
    max_w, gpw = cl.max_w.tolist(), cl.gpw.tolist()
    demand = 0
    for j in rec.queued:
        demand += max_w[j] * gpw[j]
    for j, pl in enumerate(rec.placement):
        if pl:
            demand += (max_w[j] - sum(pl.values())) * gpw[j]
    deficit = demand - free
    borrowed = []
    for s in sorted(idle, key=lambda s: (-int(cl.gpus[s]), s)):
        if deficit <= 0:
            break
        borrowed.append(s)
        deficit -= int(cl.gpus[s])
    return tuple(sorted(borrowed))
