"""One status table per backend (HiGHS through SciPy, CP-SAT, CBC through PuLP), as scipy keeps one for HiGHS.

Every backend module reads its solver's outcome from the status *codes* through its table here, never from
message or log text: what the backend's status is called in answers, whether a solution came back, whether it
is proven optimal, and whether the instance is proven to have none. The tables hold plain integers (the codes
are stable parts of each library's interface), so importing this module loads no backend library.

References
----------
SciPy, ``scipy.optimize.milp`` (its ``status`` codes). OR-Tools, ``CpSolverStatus`` (cp_model.proto).
PuLP, ``pulp.constants`` (``LpStatus``, ``LpSolution``).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CBC_SOLUTION", "CBC_STATUS", "CPSAT_STATUS", "HIGHS_STATUS", "Outcome", "cbc_outcome",
           "cpsat_outcome", "highs_outcome"]


@dataclass(frozen=True)
class Outcome:
    """What a backend status code says.

    Attributes
    ----------
    name : str
        The backend's status as written in ``backend_status``.
    solution : bool
        The backend returned a solution (its values may be read).
    proven : bool
        That solution is proven optimal.
    infeasible : bool
        The instance is proven to have no solution.
    """

    name: str
    solution: bool
    proven: bool
    infeasible: bool = False


#: ``scipy.optimize.milp``'s ``status`` codes (SciPy maps HiGHS's model status onto them). ``x`` may be present
#: with code 1 (a limit hit with an incumbent): :func:`highs_outcome` is told whether it is.
HIGHS_STATUS: dict[int, Outcome] = {
    0: Outcome("Optimal", True, True),
    1: Outcome("Time or iteration limit reached", True, False),
    2: Outcome("Infeasible", False, False, True),
    3: Outcome("Unbounded", False, False),
    4: Outcome("Other", False, False),
}

#: OR-Tools CP-SAT's ``CpSolverStatus`` codes (``cp_model.UNKNOWN`` ... ``cp_model.OPTIMAL``), by value.
CPSAT_STATUS: dict[int, Outcome] = {
    0: Outcome("UNKNOWN", False, False),
    1: Outcome("MODEL_INVALID", False, False),
    2: Outcome("FEASIBLE", True, False),
    3: Outcome("INFEASIBLE", False, False, True),
    4: Outcome("OPTIMAL", True, True),
}

#: PuLP's solution status ``prob.sol_status`` after a CBC run (``pulp.LpSolution``): it tells a proven optimum
#: (``LpSolutionOptimal``) from a limit hit with an incumbent (``LpSolutionIntegerFeasible``), which PuLP's
#: problem status ``prob.status`` reports alike as ``LpStatusOptimal``.
CBC_SOLUTION: dict[int, Outcome] = {
    0: Outcome("No Solution Found", False, False),
    1: Outcome("Optimal Solution Found", True, True),
    2: Outcome("Solution Found", True, False),
    -1: Outcome("No Solution Exists", False, False, True),
    -2: Outcome("Solution is Unbounded", False, False),
}

#: PuLP's problem status ``prob.status`` (``pulp.LpStatus``). Only ``Infeasible`` adds to the solution status:
#: CBC's "Integer infeasible" (the LP is feasible, no integer point is: a proof) leaves the solution status at
#: "No Solution Found".
CBC_STATUS: dict[int, str] = {0: "Not Solved", 1: "Optimal", -1: "Infeasible", -2: "Unbounded", -3: "Undefined"}
_CBC_INFEASIBLE = -1


def _unknown(code: int) -> Outcome:
    return Outcome(f"status {code}", False, False)


def highs_outcome(code: int) -> Outcome:
    """The :data:`HIGHS_STATUS` row of a ``milp`` status code (an unknown code: no solution, no proof)."""
    return HIGHS_STATUS.get(int(code), _unknown(int(code)))


def cpsat_outcome(code: int) -> Outcome:
    """The :data:`CPSAT_STATUS` row of a CP-SAT status (an unknown code: no solution, no proof)."""
    return CPSAT_STATUS.get(int(code), _unknown(int(code)))


def cbc_outcome(status: int, sol_status: int) -> Outcome:
    """A CBC run's outcome from PuLP's problem and solution statuses (:data:`CBC_STATUS`, :data:`CBC_SOLUTION`).

    ``name`` is ``"<problem status>/<solution status>"`` (e.g. ``Optimal/Solution Found`` for a limit hit with an
    incumbent); ``infeasible`` when either status proves it.

    Examples
    --------
    >>> cbc_outcome(1, 2)
    Outcome(name='Optimal/Solution Found', solution=True, proven=False, infeasible=False)
    >>> cbc_outcome(-1, 0).infeasible
    True
    """
    sol = CBC_SOLUTION.get(int(sol_status), _unknown(int(sol_status)))
    name = f"{CBC_STATUS.get(int(status), str(status))}/{sol.name}"
    return Outcome(name, sol.solution, sol.proven, sol.infeasible or int(status) == _CBC_INFEASIBLE)
