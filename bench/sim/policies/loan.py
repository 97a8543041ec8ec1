"""``loan``: idle inference servers shown to training (and loaned servers asked back), jobs at their requested
sizes, shortest job first, greedy reclaim."""
from __future__ import annotations

from dataclasses import dataclass

from .base import Policy


@dataclass(frozen=True)
class Loan(Policy):
    """Loaning without elastic scaling."""

    loan: bool = True
