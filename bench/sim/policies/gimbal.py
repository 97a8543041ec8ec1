"""``gimbal``, ``gimbal-deadline``, ``gimbal-makespan``, ``gimbal-exact``: Gimbal's flexible packing on a
training-only cluster (Yang et al., ACM TACO 2025).

Jobs run at their requested sizes on the training servers only, admitted shortest job first (as ``lucid``, so that
the two differ by their packing alone); a job that would wait may share the GPUs of a running job, with both
shares searched by Gimbal's squeeze (lower a share 10%) and swell (raise it 10%) steps from 1.0, a packing set
being a host and its guests, the pair's speeds from the packing model (DESIGN "Packing";
:func:`lyra_solver.heuristics.packing.gimbal_greedy`, ``decide --packing gimbal``). The objective of a set is the
policy's (``options.packing_policy``):

- ``gimbal`` (JCT policy): the set's progress weighted to favour short jobs, ``sum speed_j / T_j``;
- ``gimbal-deadline``: jobs predicted to meet their deadline first, then the JCT objective (guests by least
  slack first); deadlines from :mod:`..deadlines`;
- ``gimbal-makespan``: the smallest speed of the set (guests longest first);
- ``gimbal-exact``: the JCT objective solved exactly each round (CP-SAT over guests, hosts and the 100 share
  pairs, warm-started from Gimbal's greedy, ``decide --packing exact``; under ``--time-limit``).

Each round's ``decide`` is told the last packing (``keep_packing``): a guest keeps its host's GPUs while the rules
allow and its pairing still gains.
"""
from __future__ import annotations

from dataclasses import dataclass

from .base import Policy


@dataclass(frozen=True)
class Gimbal(Policy):
    """Training servers only, requested sizes, shortest job first, Gimbal's packing with its objective."""

    queue: str = "sjf"
    packing: str = "gimbal"

    def decide_kwargs(self, view, state) -> dict:
        return {"keep_packing": view.packing}
