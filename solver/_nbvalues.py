"""The compiled twin of the value table for ``profile`` throughputs (:func:`lyra_solver.values.value_table`).

Imported only by :mod:`lyra_solver.values`, and only once the package's numba kernels are loaded in the process
(:func:`lyra_solver.formulations.mckp._numba.loaded`: a long-running caller, such as the simulator, whose rounds
build a small table each): a table of a few hundred jobs is then one call instead of about thirty numpy calls.
Every cell is computed by the float expressions of the numpy path, in the same order (``error_model="numpy"``:
a division by zero gives ``inf`` or ``nan`` as numpy's does), so the table is the same bit for bit; a test
compares the two.
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, error_model="numpy")
def profile_table(model, per_server, mins, maxs, gpw, cur, work, pen, m, stack, n_max, k_max,
                  cap):  # pragma: no cover - compiled
    """Worker counts, times, Lyra's values and weights of every job x option (rows of step 1): row ``i`` has the
    options ``mins[i]..maxs[i]``, padded to ``m`` by its last option (values ``-inf`` there), its rate per option
    ``stack[model, clamp(w, 1, n_max) - 1, clamp(ceil(w / per_server), 1, k_max) - 1] * w``, its time
    ``min(work / rate, cap)`` and its value ``(T(min) - T(w)) - pen * restart``."""
    n = mins.shape[0]
    w = np.empty((n, m), dtype=np.int64)
    times = np.empty((n, m), dtype=np.float64)
    values = np.empty((n, m), dtype=np.float64)
    weights = np.empty((n, m), dtype=np.int64)
    for i in range(n):
        md = model[i]
        nm = n_max[md]
        km = k_max[md]
        ps = per_server[i]
        size = maxs[i] - mins[i] + 1
        for o in range(m):
            ww = mins[i] + o
            if ww > maxs[i]:
                ww = maxs[i]
            a = ww if ww > 1 else 1
            if a > nm:
                a = nm
            k = -((-ww) // ps)
            b = k if k > 1 else 1
            if b > km:
                b = km
            x = work[i] / (stack[md, a - 1, b - 1] * ww)
            t = cap if x > cap else x
            w[i, o] = ww
            times[i, o] = t
            weights[i, o] = gpw[i] * (ww - mins[i])
        t0 = times[i, 0]
        c = cur[i]
        for o in range(m):
            if o >= size:
                values[i, o] = -np.inf
            else:
                r = 1.0 if (c > 0 and w[i, o] != c) else 0.0
                values[i, o] = (t0 - times[i, o]) - pen[i] * r
    return w, times, values, weights


@numba.njit(cache=True, nogil=True)
def scale_columns(counts, admitted, shrunk, donors, min_w, max_w, gpw, gpus, used,
                  usable):  # pragma: no cover - compiled
    """The scale step's columns of the jobs that run (:func:`lyra_solver.steps.scale._columns_numpy`, the same
    integers): ``counts`` every job's workers after admission (the ``admitted`` jobs' at their base demand),
    ``shrunk`` and ``donors`` the jobs the reclaim shrank and the donors of admission, the index view's job and
    server columns, the GPUs ``used`` on each server and the ``usable`` servers' mask. Returns the jobs that run
    (``counts`` non-zero), the workers each holds (0: admitted), the capacity (free GPUs of the usable servers plus
    the extra GPUs held above base demand), the widest row's option count over them all, the positions of the
    jobs charged a restart at their base demand, and, for the positions with more than one option (the table's
    rows), those positions and their min, max, GPUs per worker, held workers and restart charge."""
    n = counts.shape[0]
    mark = np.zeros(n, np.uint8)  # 1: admitted, 2: shrunk by the reclaim, 4: a donor
    for a in admitted:
        mark[a] |= 1
    for a in shrunk:
        mark[a] |= 2
    for a in donors:
        mark[a] |= 4
    free = 0
    for s in range(gpus.shape[0]):
        if usable[s]:
            free += gpus[s] - used[s]
    n_run = 0
    for j in range(n):
        if counts[j] != 0:
            n_run += 1
    run = np.empty(n_run, np.int64)
    held = np.empty(n_run, np.int64)
    extra = 0
    k = 0
    for j in range(n):
        c = counts[j]
        if c != 0:
            h = 0 if mark[j] & 1 else c
            run[k] = j
            held[k] = h
            if h > 0:
                extra += (h - min_w[j]) * gpw[j]
            k += 1
    capacity = free + extra
    restart = np.empty(n_run, np.int64)
    rows = np.empty(n_run, np.int64)
    lo_r = np.empty(n_run, np.int64)
    top_r = np.empty(n_run, np.int64)
    g_r = np.empty(n_run, np.int64)
    cur_r = np.empty(n_run, np.int64)
    charged_r = np.empty(n_run, np.bool_)
    n_restart = 0
    n_rows = 0
    width = 0
    for k in range(n_run):
        j = run[k]
        lo = min_w[j]
        g = gpw[j]
        h = held[k]
        top = lo + capacity // g
        if max_w[j] < top:
            top = max_w[j]
        charged = h > 0 and (mark[j] & 2) == 0
        if mark[j] & 4:  # a donor keeps its count (and restarts anyway)
            top = h
            charged = False
        if k == 0 or top - lo > width:
            width = top - lo
        if charged and lo != h:
            restart[n_restart] = k
            n_restart += 1
        if top > lo:
            rows[n_rows] = k
            lo_r[n_rows] = lo
            top_r[n_rows] = top
            g_r[n_rows] = g
            cur_r[n_rows] = h
            charged_r[n_rows] = charged
            n_rows += 1
    return (run, held, capacity, width + 1, restart[:n_restart].copy(), rows[:n_rows].copy(), lo_r[:n_rows].copy(),
            top_r[:n_rows].copy(), g_r[:n_rows].copy(), cur_r[:n_rows].copy(), charged_r[:n_rows].copy())
