"""``elastic``: the training servers only, each elastic job shown with its range (``min..max`` workers), greedy
MCKP allocation, shortest job first."""
from __future__ import annotations

from dataclasses import dataclass

from .base import Policy


@dataclass(frozen=True)
class Elastic(Policy):
    """Elastic scaling without loaning."""

    elastic: bool = True
