"""Queue orders for admission: shortest job first, first in first out, least attained service.

One public function, :func:`queue_order`. Ties always break by submit time, then by position, so the order
is a pure function of the inputs.

References
----------
Li et al., "Lyra: Elastic Scheduling for Deep Learning Clusters", EuroSys 2023 (SJF by remaining time at
base demand); Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI 2019 (LAS).
"""
from __future__ import annotations

import numpy as np
from lyra_solver.formulations.vocabulary import QUEUE_ORDERS

ORDERS = QUEUE_ORDERS  # the vocabulary, defined once in lyra_solver.formulations.vocabulary


def queue_order(order: str, *, submit_time, min_time=None, attained_service=None) -> np.ndarray:
    """Indices of the queued jobs in admission order.

    Parameters
    ----------
    order : {"sjf", "fifo", "las"}
        ``sjf``: shortest remaining time at base demand ``T(min)`` first (Lyra's default);
        ``fifo``: earliest submit time first; ``las``: least attained service (GPU-seconds) first.
    submit_time, min_time, attained_service : array_like, one entry per queued job

    Returns
    -------
    (n,) int array
        Positions into the queued jobs' arrays, first admitted first.

    Raises
    ------
    ValueError
        Unknown order, or the array the order needs is missing.

    Notes
    -----
    Running time O(n log n) (one stable lexicographic sort).

    Examples
    --------
    >>> queue_order("sjf", submit_time=[0, 5, 10], min_time=[300.0, 60.0, 60.0]).tolist()
    [1, 2, 0]
    >>> queue_order("fifo", submit_time=[10, 0, 5]).tolist()
    [1, 2, 0]
    >>> queue_order("las", submit_time=[0, 5, 10], attained_service=[50.0, 0.0, 20.0]).tolist()
    [1, 2, 0]
    """
    submit = np.asarray(submit_time, dtype=np.float64)
    if order == "fifo":
        return _sorted_by(submit)
    if order == "sjf":
        if min_time is None:
            raise ValueError("min_time is needed for the sjf order")
        return _sorted_by(np.asarray(min_time, dtype=np.float64), submit)
    if order == "las":
        if attained_service is None:
            raise ValueError("attained_service is needed for the las order")
        return _sorted_by(np.asarray(attained_service, dtype=np.float64), submit)
    raise ValueError(f"order must be one of {ORDERS}, got {order!r}")


#: Jobs from which :func:`_sorted_by` tries numpy's default sort first: below it the lexicographic sort costs
#: about what the test for ties does.
_DEFAULT_SORT_MIN = 64


def _sorted_by(key: np.ndarray, *then: np.ndarray) -> np.ndarray:
    """Positions sorted by ``key``, then by the arrays of ``then`` in turn, then by position: one lexicographic
    sort (``np.lexsort``, stable). When ``key`` alone orders every position strictly (no two equal, no nan) that
    order is the only one, and numpy's default sort finds it about ten times faster (0.5 against 6 ms on 43,000
    queued jobs); a tie or a nan sends the keys to the lexicographic sort. O(n log n)."""
    if key.shape[0] >= _DEFAULT_SORT_MIN:
        first = np.argsort(key)
        ranked = key[first]
        if (ranked[1:] > ranked[:-1]).all():
            return first
    return np.lexsort((np.arange(key.shape[0]), *then[::-1], key))
