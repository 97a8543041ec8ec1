"""Job deadlines for the deadline policies: ``deadline = submit + lambda x duration``, ``lambda`` drawn seeded.

The simulator's trace rows carry no deadline. Gimbal's paper (its deadline policy's evaluation) could not be read
here (no stored copy); the rule is that of the public artifact of ElasticFlow (ASPLOS 2023), a deadline-aware
scheduler of deep-learning jobs evaluated on the same kind of traces: its trace generator
(``pkusys/ElasticFlow``, ``ElasticFlow/trace_generator/generate_trace.py``) sets each job's deadline to its
arrival plus ``uniform(min_ddl, max_ddl)`` times its duration, defaults 0.5 and 1.5 (its figure 10 uses 1.5
and 1.5). Here ``duration`` is the row's traced duration at its requested GPUs, which is exactly the time the
job would take alone at that size (:func:`.traces.map_jobs` sizes its work so), and ``lambda`` is uniform on
``[lo, hi]`` from a seeded hash of the row (as the application draw), so a row keeps its deadline whatever slice
is taken.

A job with ``lambda < 1`` cannot meet its deadline at its requested size even if started on arrival: only
growing (an elastic policy) can save it. The default range (``DEFAULT_FACTOR``) and its source are in the README
("Deadlines"); ``--deadline-factor LO,HI`` sets it.

References
----------
Gu et al., "ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep Learning", ASPLOS 2023
(artifact ``pkusys/ElasticFlow``); Yang et al., "Gimbal: flexible job packing with worker squeeze/swell", ACM TACO
2025.
"""
from __future__ import annotations

from collections.abc import Sequence

from ._rows import TraceJob, _unit

__all__ = ["DEFAULT_FACTOR", "draw_deadlines"]

#: ``(lo, hi)`` of the deadline factor ``lambda``: ElasticFlow's generator defaults (README "Deadlines").
DEFAULT_FACTOR: tuple[float, float] = (0.5, 1.5)


def draw_deadlines(trace: Sequence[TraceJob], *, seed: int = 0,
                   factor: tuple[float, float] = DEFAULT_FACTOR) -> list[float]:
    """Each row's absolute deadline (seconds, the trace's clock): ``submit + lambda x duration``.

    Parameters
    ----------
    trace : sequence of TraceJob
        The rows (submit time, duration; ``line`` and ``key`` seed the draw).
    seed : int
        The mapping's seed.
    factor : (float, float)
        ``lambda`` is uniform on ``[lo, hi]``, ``0 < lo <= hi``.

    Returns
    -------
    list of float
        One deadline per row, in the order given.

    Notes
    -----
    Running time O(n) for n rows.

    Examples
    --------
    >>> from lyra_solver.bench.sim.traces import TraceJob
    >>> rows = [TraceJob(line=2, submit=100.0, gpus=1, duration=600.0, key="a")]
    >>> draw_deadlines(rows, factor=(2.0, 2.0))
    [1300.0]
    """
    lo, hi = factor
    if not 0.0 < lo <= hi < float("inf"):
        raise ValueError(f"factor: expected 0 < lo <= hi < inf, got {factor}")
    return [tj.submit + (lo + (hi - lo) * _unit(seed, "deadline", tj.key, tj.line)) * tj.duration
            for tj in trace]
