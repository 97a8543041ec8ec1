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
