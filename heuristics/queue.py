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
    pos = np.arange(submit.shape[0])
    if order == "fifo":
        return np.lexsort((pos, submit))
    if order == "sjf":
        if min_time is None:
            raise ValueError("min_time is needed for the sjf order")
        return np.lexsort((pos, submit, np.asarray(min_time, dtype=np.float64)))
    if order == "las":
        if attained_service is None:
            raise ValueError("attained_service is needed for the las order")
        return np.lexsort((pos, submit, np.asarray(attained_service, dtype=np.float64)))
    raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
