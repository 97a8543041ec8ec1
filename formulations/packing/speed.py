"""The packing speed model of DESIGN "Packing": how fast a job runs when it shares GPUs (Gimbal).

Two functions over arrays, shared by the exact model, the heuristics and the engine:

- :func:`pair_speed`: the fraction of its solo speed that each of two jobs keeps on a shared GPU, from their
  ``gpu_util`` (the share of a GPU each uses alone), their MPS shares and the packing overhead; a measured pair
  speed overrides the model where given.
- :func:`job_rate`: the rate of a data-parallel job from its workers' speeds, with or without Gimbal's sample
  stealing.

The model, for jobs ``a`` and ``b`` with utilisations ``u`` in (0, 1] and shares ``s`` in {0.1, ..., 1.0}::

    d = min(u, s)                                   # what a job asks of the GPU under its share
    g_a = d_a              if d_a + d_b <= 1         # room for both
        = d_a / (d_a + d_b) otherwise                # a saturated GPU splits in proportion to demand
    speed_a = min(1, g_a / u_a) * (1 - overhead)

Limits (tested): a job alone at share 1.0 keeps ``1 - overhead``; a speed never exceeds ``1 - overhead <= 1``;
shares of 1.0 each (2.0 in all) are free competition, where only the two utilisations matter.

What the Alibaba GPU-sharing trace says about the defaults
----------------------------------------------------------
``openb_pod_list_default.csv`` (Alibaba, 2023; 8,152 pods) holds 3,078 single-GPU pods that ask for a fraction
of one GPU (``gpu_milli`` < 1000); read as ``gpu_util`` they are strongly clustered: 0.81 (35%), 0.47 (24%),
0.32 (11%), 0.65 (8%), median 0.47, mean 0.56; 10% ask for 0.23 or less. Drawing two distinct pods at random
(:func:`alibaba_pair_statistics`), 35% of pairs add to at most 1.0, so Lucid's threshold of 1.0 packs about a
third of random pairs; those keep ``1 - overhead = 0.95`` of their speed each. Under free competition (shares
1.0) the mean speed over all random pairs is 0.82 and a pair's throughput (sum of the two speeds) is 1.63 solo
GPUs on average and never below 1.17: packing these pods always gains throughput, but the common 0.81 + 0.81
pair runs each job at 0.59, so a JCT or deadline policy must choose its pairs. The trace has no measured
slowdowns, so the 5% overhead (MPS context switching, shared caches) is not checked against it: it is a
parameter (``options.packing_overhead``), to be set from measurements of the cluster's own pairs.

References
----------
Yang et al., "Gimbal: flexible job packing with worker squeeze/swell", ACM TACO 2025 (speed under MPS shares,
sample stealing). Weng et al., "Beware of fragmentation: scheduling GPU-sharing workloads with fragmentation
gradient descent", USENIX ATC 2023 (the Alibaba trace).
"""
from __future__ import annotations

import numpy as np

__all__ = ["SHARES", "job_rate", "pair_speed"]

#: The MPS shares a job may get on a shared GPU: 0.1, 0.2, ..., 1.0 (index ``k`` is share ``(k + 1) / 10``).
SHARES = np.round(np.arange(1, 11) / 10.0, 1)
SHARES.setflags(write=False)


def pair_speed(util_a, util_b, share_a, share_b, *, overhead: float = 0.05, measured_a=None,
               measured_b=None) -> tuple[np.ndarray, np.ndarray]:
    """Speeds of two jobs that share a GPU (fractions of their solo speeds), elementwise over arrays.

    Parameters
    ----------
    util_a, util_b : array_like of float
        ``gpu_util`` of each job, in (0, 1]. A ``util_b`` of 0 means no partner (``a`` alone under MPS).
    share_a, share_b : array_like of float
        MPS shares, in (0, 1] (multiples of 0.1 in the engine, any value here).
    overhead : float
        Fraction of speed lost to sharing, in [0, 1) (``options.packing_overhead``, default 0.05).
    measured_a, measured_b : array_like of float, optional
        Measured speeds of the pair (``options.pair_speed``); where finite they replace the model's speed
        (NaN: not measured). Broadcast like the other arguments.

    Returns
    -------
    speed_a, speed_b : ndarray of float
        Broadcast shape of the inputs; each in [0, 1 - overhead] (or the measured value).

    Raises
    ------
    ValueError
        An argument outside its range (the message names it).

    Notes
    -----
    O(n) for n broadcast elements, vectorised numpy.

    Examples
    --------
    >>> a, b = pair_speed(0.45, 0.3, 1.0, 1.0)      # room for both: each keeps 1 - overhead
    >>> round(float(a), 3), round(float(b), 3)
    (0.95, 0.95)
    >>> a, b = pair_speed(0.8, 0.8, 1.0, 1.0)       # saturated: split in proportion to demand
    >>> round(float(a), 4)
    0.5938
    """
    ua, ub = np.asarray(util_a, dtype=np.float64), np.asarray(util_b, dtype=np.float64)
    sa, sb = np.asarray(share_a, dtype=np.float64), np.asarray(share_b, dtype=np.float64)
    for name, arr, lo_open in (("util_a", ua, True), ("util_b", ub, False), ("share_a", sa, True),
                               ("share_b", sb, True)):
        low_ok = arr > 0 if lo_open else arr >= 0
        if not np.all(low_ok & (arr <= 1)):
            raise ValueError(f"{name}: must be in {'(0' if lo_open else '[0'}, 1], got {arr[~(low_ok & (arr <= 1))]}")
    if not 0 <= overhead < 1:
        raise ValueError(f"overhead: must be in [0, 1), got {overhead!r}")
    da, db = np.minimum(ua, sa), np.minimum(ub, sb)
    total = da + db
    saturated = total > 1
    ga = np.where(saturated, da / np.where(saturated, total, 1.0), da)
    gb = np.where(saturated, db / np.where(saturated, total, 1.0), db)
    keep = 1.0 - overhead
    speed_a = np.minimum(1.0, ga / ua) * keep
    speed_b = np.where(ub > 0, np.minimum(1.0, gb / np.where(ub > 0, ub, 1.0)), 1.0) * keep
    for measured, name in ((measured_a, "a"), (measured_b, "b")):
        if measured is None:
            continue
        m = np.asarray(measured, dtype=np.float64)
        given = np.isfinite(m)
        if np.any(given & ((m <= 0) | (m > 1))):
            raise ValueError(f"measured_{name}: measured speeds must be in (0, 1]")
        if name == "a":
            speed_a = np.where(given, m, speed_a)
        else:
            speed_b = np.where(given, m, speed_b)
    return speed_a, speed_b


def job_rate(solo_rate, worker_speeds, *, sample_stealing: bool = True, axis: int = -1) -> np.ndarray:
    """Rate of a data-parallel job whose workers run at the given fractions of their solo speed.

    Without sample stealing a synchronous data-parallel step waits for its slowest worker:
    ``rate = solo_rate * min(speeds)``. With Gimbal's sample stealing (LISS) the global batch is split in
    proportion to the workers' speeds, so the job runs at ``solo_rate * mean(speeds)``.

    Parameters
    ----------
    solo_rate : array_like of float
        ``rate(w)`` of the job at its worker count (work units per second), broadcast against the reduced
        speeds.
    worker_speeds : array_like of float
        Speed of each worker (1.0 = unshared), reduced along ``axis``.
    sample_stealing : bool
        Mean (True, default) or min (False) over the workers.
    axis : int
        The workers' axis of ``worker_speeds``.

    Returns
    -------
    ndarray of float

    Notes
    -----
    O(n) for n speeds.

    Examples
    --------
    >>> float(job_rate(100.0, [1.0, 1.0, 0.5, 0.5], sample_stealing=False))
    50.0
    >>> float(job_rate(100.0, [1.0, 1.0, 0.5, 0.5]))
    75.0
    """
    speeds = np.asarray(worker_speeds, dtype=np.float64)
    if speeds.size == 0 or speeds.shape[axis] == 0:
        raise ValueError("worker_speeds: a job has at least one worker")
    factor = speeds.mean(axis=axis) if sample_stealing else speeds.min(axis=axis)
    return np.asarray(solo_rate, dtype=np.float64) * factor


def alibaba_pair_statistics(gpu_milli, *, overhead: float = 0.05, threshold: float = 1.0) -> dict[str, float]:
    """What the speed model says about random pairs of fractional-GPU pods (the figures of the module docstring).

    Parameters
    ----------
    gpu_milli : array_like of int
        ``gpu_milli`` of single-GPU pods asking for less than a whole GPU (Alibaba ``openb_pod_list``).
    overhead, threshold : float
        Packing overhead and Lucid's pairing threshold.

    Returns
    -------
    dict
        ``pods``, ``median_util``, ``mean_util``, ``share_pairs_within_threshold`` (over all ordered pairs of
        distinct pods), ``mean_speed`` and ``mean_pair_throughput`` / ``min_pair_throughput`` (sum of the two
        speeds) under free competition (shares 1.0).

    Notes
    -----
    O(n^2) over the distinct utilisations weighted by their counts (a few dozen values in the trace).
    """
    u = np.asarray(gpu_milli, dtype=np.float64) / 1000.0
    values, counts = np.unique(u, return_counts=True)
    ua, ub = np.meshgrid(values, values, indexing="ij")
    w = np.outer(counts, counts).astype(np.float64)
    w[np.diag_indices_from(w)] -= counts  # distinct pods: a pod does not pair with itself
    sa, sb = pair_speed(ua, ub, 1.0, 1.0, overhead=overhead)
    total = w.sum()
    return {
        "pods": float(u.size),
        "median_util": float(np.median(u)),
        "mean_util": float(u.mean()),
        "share_pairs_within_threshold": float(w[ua + ub <= threshold + 1e-12].sum() / total),
        "mean_speed": float(((sa + sb) / 2 * w).sum() / total),
        "mean_pair_throughput": float(((sa + sb) * w).sum() / total),
        "min_pair_throughput": float((sa + sb)[w > 0].min()),
    }
