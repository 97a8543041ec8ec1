"""``baseline`` and ``baseline-sjf``: separate clusters, jobs at their requested sizes.

The snapshot holds the training servers only (no loaning) and every job with ``min = max =`` its requested GPUs;
``baseline`` admits first come first served, ``baseline-sjf`` shortest job first. Both let later jobs that fit
start (the engine backfills).
"""
from __future__ import annotations

from dataclasses import dataclass

from .base import Policy


@dataclass(frozen=True)
class Baseline(Policy):
    """Training servers only, requested sizes, the given queue order (``fifo`` or ``sjf``)."""

    queue: str = "fifo"
