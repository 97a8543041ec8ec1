"""The small closed set of solve statuses shared by every solver of the project."""
from __future__ import annotations

import math
from enum import StrEnum


class Status(StrEnum):
    """Outcome of a solve.

    ``optimal``: proven optimal (gap 0). ``feasible``: a solution is returned, not proven optimal
    (a limit was hit or the method is a heuristic); ``bound`` and ``gap`` say how far it may be.
    ``infeasible``: proven to have no solution. ``no_solution``: no solution found and none proven
    impossible (a limit was hit first).
    """

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    NO_SOLUTION = "no_solution"


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """Relative distance between an objective and a bound: ``|bound - objective| / max(1, |objective|)``.

    Returns ``None`` when either is unknown and ``0.0`` when they agree to 1e-9 relative.
    """
    if objective is None or bound is None or not math.isfinite(objective) or not math.isfinite(bound):
        return None
    diff = abs(bound - objective)
    scale = max(1.0, abs(objective))
    if diff <= 1e-9 * scale:
        return 0.0
    return diff / scale
