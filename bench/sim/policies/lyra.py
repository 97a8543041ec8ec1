"""``lyra`` and ``lyra-exact``: loaning and elastic scaling together (Li et al., Lyra, EuroSys 2023).

Idle and loaned inference servers are shown, loaned ones asked back when the load needs them, elastic jobs
shown with their ranges; shortest job first. ``lyra`` uses the greedy MCKP and the greedy reclaim,
``lyra-exact`` the exact MCKP and the exact reclaim ILP.
"""
from __future__ import annotations

from dataclasses import dataclass

from .base import Policy


@dataclass(frozen=True)
class Lyra(Policy):
    """Loaning and elastic scaling; the allocation and reclaim methods are the row's."""

    loan: bool = True
    elastic: bool = True
