"""Problem types (plain arrays) and exact models.

This package imports no other package of the project. One front door per family, each with a registry of
methods (``method=...``) derived from the family's method table (:mod:`.methods`): :func:`solve_mckp` (elastic
allocation, :mod:`.mckp`), :func:`solve_reclaim` (server reclamation, :mod:`.reclaim`), :func:`solve_placement`
and :func:`solve_joint` (placement, :mod:`.placement`), :func:`lyra_solver.formulations.packing.solve_packing`
(GPU sharing, :mod:`.packing`: the exact assignment and the brute-force reference). The reclaim, placement and
packing doors also run the heuristics of ``lyra_solver.heuristics`` that their tables name (Lyra's greedy, best
fit decreasing, Gimbal's, Lucid's and Gandiva's packing), importing them by name when they run. Every method
returns a frozen subclass of :class:`SolveResult`. Backends (OR-Tools, PuLP, SciPy's HiGHS, numba) are imported
only when a method needs them.
"""
from lyra_solver.formulations._result import SolveResult, Status, relative_gap
from lyra_solver.formulations.mckp import MCKPProblem, MCKPResult, solve_mckp
from lyra_solver.formulations.placement import (
    JointProblem,
    JointResult,
    Placement,
    PlacementProblem,
    PlacementResult,
    solve_joint,
    solve_placement,
)
from lyra_solver.formulations.reclaim import ReclaimProblem, ReclaimResult, evaluate_reclaim, solve_reclaim

__all__ = [
    "JointProblem", "JointResult", "MCKPProblem", "MCKPResult", "Placement", "PlacementProblem", "PlacementResult",
    "ReclaimProblem", "ReclaimResult", "SolveResult", "Status", "evaluate_reclaim", "relative_gap", "solve_joint",
    "solve_mckp", "solve_placement", "solve_reclaim",
]
