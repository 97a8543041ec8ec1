"""Seeded, deterministic MCKP instance generators (numpy only).

Two families:

* :func:`pisinger`: the data classes of Pisinger's MCKP experiments (Pisinger 1995, sec. 6; Kellerer,
  Pferschy and Pisinger 2004, sec. 11.10), with coefficients in ``[1, R]`` (``R`` = 1,000 or 10,000) and, unless
  said otherwise, the capacity ``c = 1/2 sum_i (min_j w_ij + max_j w_ij)``. Our classes (the names used since
  the first benchmarks, kept so that figures stay comparable):

  - ``uncorrelated``: ``w_ij, p_ij`` uniform in ``[1, R]``. With this capacity about half of the instances are
    trivial: the capacity exceeds the summed weights of every class's most valuable item, so the LP relaxation
    is integral and no search happens (``lp-integral``);
  - ``weakly``: ``w_ij`` uniform in ``[1, R]``, ``p_ij`` uniform in ``[w_ij - 10, w_ij + 10]``, at least 1;
  - ``strongly``: per class, ``k`` strongly correlated knapsack items ``w'_h`` uniform in ``[1, R]``,
    ``p'_h = w'_h + 10``, sorted by weight; item ``j`` of the class is their prefix sum
    ``(sum_{h<=j} w'_h, sum_{h<=j} p'_h)``. The published description of the class, as we read it; the
    generator distributed with Pisinger's code is reported (issue 13) to draw the weights differently: we did
    not read that code (its licence is academic and non-commercial), so the variants below follow the
    published definitions, not that generator;
  - ``subset_sum``: ``w_ij`` uniform in ``[1, R]``, ``p_ij = w_ij``;
  - ``zigzag``: our reading of a "zig-zag" class (the papers we could check do not define it): weights as in
    ``strongly``, profits alternately above and below that class's strongly correlated profile
    (``p_ij = sum_{h<=j} p'_h + (-1)^j d_ij``, ``d_ij`` uniform in ``[0, R/10]``), so every other item is
    LP-dominated and the hulls zig-zag between the items.

  Two variants:

  - ``strongly_kp``: as ``strongly``, with the published knapsack definition of strong correlation that the
    class is built from (Martello, Pisinger and Toth 1999; Kellerer et al. 2004, sec. 5.5),
    ``p'_h = w'_h + R/10`` (an offset ten times larger than 10 at ``R`` = 1,000);
  - ``uncorrelated_binding`` (ours, not a published class): as ``uncorrelated``, with the capacity
    ``c = 1/2 sum_i (min_j w_ij + w_i*)``, ``w_i*`` the weight of the class's most valuable item, so that
    the capacity always binds and the instance is never trivial.

* :func:`cluster`: value tables of elastic GPU jobs as the engine builds them (DESIGN "Value table"): job
  ``j`` with ``gpus_per_worker`` ``g``, options ``w`` in ``[min, max]`` workers, weight ``g (w - min)``, value
  ``V(w) = T(min) - T(w) - restart_penalty [running and w != current]`` with ``T(w) = remaining_work /
  rate(w)``; ``rate(w) = r w**e`` (concave) or, when ``concave=False``, ``r w**e s**(servers(w) - 1)`` where
  ``servers(w) = ceil(g w / 8)`` (the rate drops where the job spans one more 8-GPU server), plus restart
  penalties. Item 0 of every class has weight 0 and the weights of a class increase.

Every generator returns a :class:`formulations.mckp.MCKPProblem`; the same arguments give the same instance.

References
----------
Martello, S., Pisinger, D., Toth, P. (1999). Dynamic programming and strong bounds for the 0-1 knapsack
problem. Management Science 45(3), 414-424.
Pisinger, D. (1995). A minimal algorithm for the multiple-choice knapsack problem. EJOR 83(2), 394-410.
Kellerer, H., Pferschy, U., Pisinger, D. (2004). Knapsack Problems, ch. 11. Springer.
"""
from __future__ import annotations

import numpy as np
from lyra_solver.formulations.mckp import MCKPProblem

__all__ = ["PISINGER_KINDS", "cluster", "pisinger", "pisinger_capacity"]

PISINGER_KINDS: tuple[str, ...] = ("uncorrelated", "weakly", "strongly", "subset_sum", "zigzag", "strongly_kp",
                                   "uncorrelated_binding")


def pisinger_capacity(weights: np.ndarray, sizes: np.ndarray) -> int:
    """``c = 1/2 sum_i (min_j w_ij + max_j w_ij)`` over the valid items (Pisinger 1995)."""
    m = weights.shape[1]
    valid = np.arange(m)[None, :] < sizes[:, None]
    wmin = np.where(valid, weights, np.iinfo(np.int64).max).min(axis=1)
    wmax = np.where(valid, weights, -1).max(axis=1)
    return int((wmin.sum() + wmax.sum()) // 2)


def pisinger(kind: str, n_classes: int, n_items: int, *, R: int = 1000, seed: int = 0) -> MCKPProblem:
    """One of Pisinger's MCKP data classes.

    Parameters
    ----------
    kind : str
        One of :data:`PISINGER_KINDS`.
    n_classes, n_items : int
        Classes and items per class.
    R : int
        Coefficient range (1,000 or 10,000 in the papers).
    seed : int

    Returns
    -------
    MCKPProblem
        Integer values (as floats), capacity per :func:`pisinger_capacity` (``uncorrelated_binding``: see the
        module docstring).
    """
    if kind not in PISINGER_KINDS:
        raise ValueError(f"kind: expected one of {PISINGER_KINDS}, got {kind!r}")
    if n_classes < 1 or n_items < 1:
        raise ValueError("n_classes, n_items: must be >= 1")
    rng = np.random.default_rng([seed, PISINGER_KINDS.index(kind), n_classes, n_items, R])
    shape = (n_classes, n_items)
    sizes = np.full(n_classes, n_items, dtype=np.int64)
    if kind == "uncorrelated_binding":
        w = rng.integers(1, R + 1, shape).astype(np.int64)
        p = rng.integers(1, R + 1, shape)
        w_best = w[np.arange(n_classes), np.argmax(p, axis=1)]
        cap = int((w.min(axis=1).sum() + w_best.sum()) // 2)
        return MCKPProblem.from_padded(w, p.astype(np.float64), sizes, cap)
    if kind == "uncorrelated":
        w = rng.integers(1, R + 1, shape)
        p = rng.integers(1, R + 1, shape)
    elif kind == "weakly":
        w = rng.integers(1, R + 1, shape)
        p = np.maximum(w + rng.integers(-10, 11, shape), 1)
    elif kind == "subset_sum":
        w = rng.integers(1, R + 1, shape)
        p = w.copy()
    else:
        wk = np.sort(rng.integers(1, R + 1, shape), axis=1)
        w = np.cumsum(wk, axis=1)
        p = np.cumsum(wk + (R // 10 if kind == "strongly_kp" else 10), axis=1)
        if kind == "zigzag":
            d = rng.integers(0, R // 10 + 1, shape)
            sign = np.where(np.arange(n_items) % 2 == 0, 1, -1)[None, :]
            p = np.maximum(p + sign * d, 1)
    w = w.astype(np.int64)
    return MCKPProblem.from_padded(w, p.astype(np.float64), sizes, pisinger_capacity(w, sizes))


def cluster(n_jobs: int, max_options: int = 32, *, concave: bool = False, seed: int = 0,
            capacity_fraction: float = 0.3, server_gpus: int = 8,
            running_fraction: float = 0.5) -> MCKPProblem:
    """Value tables of elastic jobs (JCT reduction per option), as the engine's scale step sees them.

    Parameters
    ----------
    n_jobs : int
        Classes.
    max_options : int
        Options (items) per job are drawn in ``[2, max_options]``.
    concave : bool
        Power-law rates and no restart penalties (concave tables) if true; else the rate drops where the
        job spans one more server and running jobs pay a restart penalty for any change.
    seed : int
    capacity_fraction : float
        Capacity as a fraction of the summed largest weights.
    server_gpus : int
        GPUs per server (for the span penalty).
    running_fraction : float
        Share of running jobs (non-concave case).

    Returns
    -------
    MCKPProblem
        Padded to ``max_options`` items; item 0 has weight 0 in every class and weights increase.
    """
    if n_jobs < 1 or max_options < 1:
        raise ValueError("n_jobs, max_options: must be >= 1")
    rng = np.random.default_rng([seed, int(concave), n_jobs, max_options, 7])
    g = rng.choice(np.array([1, 2, 4, 8]), size=n_jobs, p=[0.4, 0.3, 0.2, 0.1])
    wmin = rng.integers(1, 5, n_jobs)
    n_opt = rng.integers(min(2, max_options), max_options + 1, n_jobs)
    k = np.arange(max_options)[None, :]
    workers = wmin[:, None] + k  # (n, m)
    r = rng.uniform(50.0, 500.0, n_jobs)[:, None]
    e = rng.uniform(0.6, 1.0, n_jobs)[:, None]
    work = np.exp(rng.uniform(np.log(1e6), np.log(1e9), n_jobs))[:, None]
    rate = r * workers.astype(np.float64) ** e
    if not concave:
        servers = -(-(workers * g[:, None]) // server_gpus)
        slow = rng.uniform(0.7, 0.95, n_jobs)[:, None]
        rate = rate * slow ** (servers - 1)
    T = work / rate
    values = T[:, :1] - T
    if not concave:
        running = rng.random(n_jobs) < running_fraction
        current = rng.integers(0, n_opt)
        penalty = rng.uniform(10.0, 300.0, n_jobs)
        pen = running[:, None] & (k != current[:, None])
        values = values - np.where(pen, penalty[:, None], 0.0)
    weights = (g[:, None] * k).astype(np.int64)
    sizes = n_opt.astype(np.int64)
    valid = k < sizes[:, None]
    weights = np.where(valid, weights, 0)
    values = np.where(valid, values, 0.0)
    cap = int(capacity_fraction * float(np.where(valid, weights, 0).max(axis=1).sum()))
    return MCKPProblem.from_padded(weights, values, sizes, cap)
