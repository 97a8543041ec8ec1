"""``lucid``: Lucid's packing on a training-only cluster (Hu et al., ASPLOS 2023).

As its paper describes it: jobs are ordered by their estimated duration (here the exact remaining time at the
requested size: ``sjf``, the simulator knowing each job's work), run at their requested sizes on the training
servers only, and a job that would wait is packed in a pair with a running job when their GPU utilisations add to
at most the threshold (1.0: the GPU is not over-subscribed), the shares left at 1.0 (Lucid does not tune them):
:func:`lyra_solver.heuristics.packing.lucid_pairing`, ``decide --packing lucid``. One guest per host; among the
hosts a guest may join, the smallest combined utilisation. Each round's ``decide`` is told the last packing
(``keep_packing``), so a pair stays on the same GPUs while the rules allow, as Lucid leaves packed jobs alone.

What is not modelled: Lucid's profiler (utilisations come from the packing profiles of the trace mapping) and its
duration estimator's errors (the order uses exact remaining times).
"""
from __future__ import annotations

from dataclasses import dataclass

from .base import Policy


@dataclass(frozen=True)
class Lucid(Policy):
    """Training servers only, requested sizes, shortest job first, Lucid's threshold pairing."""

    queue: str = "sjf"
    packing: str = "lucid"

    def decide_kwargs(self, view, state) -> dict:
        return {"keep_packing": view.packing}
