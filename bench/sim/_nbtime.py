"""The compiled twins of the engine's time loops over its arrays of running jobs (:class:`.engine._Sim`).

Imported by the engine only once the package's numba kernels are loaded in the process
(:func:`lyra_solver.formulations.mckp._numba.loaded`: numba is then imported already, and a replay long enough
to load them gains from one call per event instead of a dozen numpy calls). Every element is computed by the
float expressions of the numpy path (``max(t, blocked)``, then ``remaining - rate * (t2 - s)`` only past the
penalty, ``attained + workers * dt``; ``max(t, blocked) + remaining / rate`` and its minimum), in the same
order and without fast-math (no contraction into fused multiply-adds, no reassociation), so the arrays and
times are the same bit for bit; a test compares the two.
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, error_model="numpy")
def advance(n, t, t2, dt, st):  # pragma: no cover - compiled
    """Rows ``0..n-1`` of ``st`` (remaining work, rate, end of penalty, workers, attained service: one array, a
    row each, one argument to dispatch) from ``t`` to ``t2`` (``dt = t2 - t``): the work of a row past its penalty
    (``s = max(t, blocked) < t2``) less ``rate * (t2 - s)``, its attained service plus ``workers * dt``; returns
    :func:`next_completion` at ``t2`` of the rows advanced."""
    rem, rate, blk, wk, att = st[0], st[1], st[2], st[3], st[4]
    best = np.inf
    for k in range(n):
        b = blk[k]
        s = b if b > t else t
        if t2 > s:
            rem[k] = rem[k] - rate[k] * (t2 - s)
        att[k] = att[k] + wk[k] * dt
        f = (b if b > t2 else t2) + rem[k] / rate[k]
        if f < best:
            best = f
    return best


@numba.njit(cache=True, nogil=True, error_model="numpy")
def next_completion(n, t, st):  # pragma: no cover - compiled
    """The earliest ``max(t, blocked) + remaining / rate`` of rows ``0..n-1`` of ``st`` (:func:`advance`;
    ``inf`` when none)."""
    rem, rate, blk = st[0], st[1], st[2]
    best = np.inf
    for k in range(n):
        b = blk[k]
        f = (b if b > t else t) + rem[k] / rate[k]
        if f < best:
            best = f
    return best


@numba.njit(cache=True, nogil=True, error_model="numpy")
def due(n, t, st, thr, out):  # pragma: no cover - compiled
    """The rows ``0..n-1`` of ``st`` (:func:`advance`) whose job completes at ``t``: past its penalty
    (``blocked <= t``) with its work within its threshold ``thr`` or below what the clock resolves
    (``remaining / rate + t <= t``). Writes their indices, ascending, to ``out[:m]`` and returns ``m``."""
    rem, rate, blk = st[0], st[1], st[2]
    m = 0
    for k in range(n):
        if blk[k] <= t and (rem[k] <= thr[k] or rem[k] / rate[k] + t <= t):
            out[m] = k
            m += 1
    return m


@numba.njit(cache=True, nogil=True, error_model="numpy")
def unkept(n, idx, wk, rem, elastic, kept_w, kept_r, out):  # pragma: no cover - compiled
    """The rows ``0..n-1`` of the running jobs (arrival indices ``idx``, workers ``wk``, remaining work ``rem``)
    of an elastic job not found kept at its size and work (:class:`.quiet.SizesKept`: ``kept_w``, ``kept_r`` by
    arrival index; -1: none found): ``kept_w != workers`` or ``max(remaining, 0) > kept_r``. Writes their
    indices, ascending, to ``out[:m]`` and returns ``m``."""
    m = 0
    for k in range(n):
        i = idx[k]
        if elastic[i]:
            r = rem[k]
            if r < 0.0:
                r = 0.0
            if kept_w[i] != wk[k] or r > kept_r[i]:
                out[m] = k
                m += 1
    return m
