"""The small closed set of solve statuses shared by every solver of the project."""
from __future__ import annotations

import math
from dataclasses import dataclass
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


@dataclass(frozen=True, kw_only=True)
class SolveResult:
    """The result shape shared by every solver of every family (MCKP, reclaim, placement, packing).

    Each family subclasses it and adds its solution field(s). Keyword construction only.

    Attributes
    ----------
    status : Status
        ``optimal``, ``feasible``, ``infeasible`` or ``no_solution`` (see :class:`Status`).
    objective : float or None
        Objective of the returned solution, recomputed from the problem (original units).
    bound : float or None
        Proven bound on the optimum in the objective's direction, when known.
    gap : float or None
        :func:`relative_gap` of objective and bound (0.0 when proven optimal).
    time_s : float
        Wall-clock seconds spent, model building included.
    method : str
        Name of the method that produced the answer (as registered in the family's front door).
    backend_status : str
        The backend's own status string (e.g. CP-SAT ``"OPTIMAL"``, PuLP ``"Optimal"``, ``"time_limit"``).
    """

    status: Status
    objective: float | None
    bound: float | None
    gap: float | None
    time_s: float
    method: str
    backend_status: str

    @property
    def success(self) -> bool:
        """Whether a solution is returned (status ``optimal`` or ``feasible``)."""
        return self.status in (Status.OPTIMAL, Status.FEASIBLE)
