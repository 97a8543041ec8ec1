"""``lyra-fifo``: ``lyra`` admitting first come first served, the fair comparison with ``baseline``.

``baseline`` admits in arrival order while ``lyra`` admits shortest job first with exact durations, so the
ratio between them mixes the queue order with loaning and elastic scaling. ``lyra-fifo`` keeps ``baseline``'s
order and adds only Lyra's two mechanisms (greedy reclaim, greedy MCKP); against ``baseline-sjf`` it is ``lyra``
that matches the order.
"""
from __future__ import annotations

from dataclasses import dataclass

from .lyra import Lyra


@dataclass(frozen=True)
class LyraFifo(Lyra):
    """Lyra with first-come-first-served admission."""

    queue: str = "fifo"
