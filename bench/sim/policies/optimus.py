"""``optimus``: elastic at a fixed batch size, resources to the largest marginal gain times remaining work
(Peng et al., "Optimus: An Efficient Dynamic Resource Scheduler for Deep Learning Clusters", EuroSys 2018).

Optimus gives every job one worker while the GPUs last, in arrival order, then adds workers one at a time to the
job whose predicted remaining time falls most by one more (its marginal gain: the drop of its step time times
its remaining iterations). Here that is the engine's own pipeline on the snapshot this policy builds: the
training cluster only, every job elastic in its range (``1..batch / smallest local batch`` for the Pollux
artifact's jobs, as the artifact's Optimus), admitted first come first served at its minimum, and the greedy
MCKP on the value table ``T(min) - T(w)``, whose incremental steps are exactly those marginal gains (the drop
of the remaining time ``remaining work / rate(w)`` from one option to the next), taken in decreasing order of
gain per GPU. The remaining work is the job's remaining statistical progress and its rate table the one of its
current epoch at its fixed batch size, so the remaining time is the one Optimus predicts.

Differences from the paper: no online fitting of the convergence curve and the speed model (the simulator knows
both), and a resize that would not repay its restart penalty is not made (the value table charges it).
"""
from __future__ import annotations

from dataclasses import dataclass

from .base import Policy


@dataclass(frozen=True)
class Optimus(Policy):
    """Elastic on the training cluster, first come first served at the minimum, greedy marginal gains."""

    elastic: bool = True
    queue: str = "fifo"

    def skips_kept_sizes(self) -> bool:
        return False
