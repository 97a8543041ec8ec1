"""Published heuristics and baselines: Lyra's greedy reclaim (and two baselines), queue orders, admission by
donation, best-fit-decreasing placement, and the packing policies (Gimbal's greedy squeeze/swell, Lucid's threshold
pairing, Gandiva's random pairing: :mod:`lyra_solver.heuristics.packing`).

Each heuristic of a family with a front door is a row of that family's method table
(:mod:`lyra_solver.formulations.methods`) and runs through the door, as the engine calls it:
``solve_reclaim(problem, method="greedy")``, ``solve_placement(problem, method="bfd")``,
``solve_packing(problem, method="gimbal")``; the functions here stay public (the benchmarks and tests call them
directly, with the same answers). The queue orders' entry, :func:`~lyra_solver.heuristics.queue.queue_order`, is
its family's dispatch by name itself; :class:`~lyra_solver.heuristics.donation.Donation` is the admit step's state,
with no alternative methods.

Imports ``formulations`` (problem types and results), never ``solver`` or ``bench``. The MCKP heuristics
(greedy on marginal gain, convex-hull greedy) live in :mod:`lyra_solver.formulations.mckp.greedy` and
:mod:`lyra_solver.formulations.mckp.hull` because the MCKP front door offers them as methods and
``formulations`` may import nothing of the project.
"""
from lyra_solver.heuristics.placement import best_fit_decreasing
from lyra_solver.heuristics.queue import queue_order
from lyra_solver.heuristics.reclaim import fewest_jobs_reclaim, greedy_reclaim, random_reclaim

__all__ = ["best_fit_decreasing", "fewest_jobs_reclaim", "greedy_reclaim", "queue_order", "random_reclaim"]
