"""Optional numba kernel for one core step of :mod:`lyra_solver.formulations.mckp.core` (the ``fast`` extra).

Imported lazily; :func:`get_step_kernel` returns ``None`` when numba is missing (or the environment variable
``LYRA_NO_NUMBA`` is set) and the numpy path of :mod:`lyra_solver.formulations.mckp.core` is used instead. The kernel
does in one pass what the numpy path does with a sort: merge the ``k`` weight-sorted candidate lists (one per
item of the class added), update the incumbent with the feasible candidates, fathom by the bound, and drop
dominated candidates. Candidates whose Lagrangian value (state's ``V + alpha (c - W)`` minus the item's
Lagrangian loss) cannot beat the incumbent are skipped before the merge (they could neither improve the
incumbent nor survive the bound; leaving them out of the dominance test only keeps more states). Running
time :math:`O(S k^2)` for ``S`` states and ``k`` items (a linear scan of the ``k`` list heads per output),
memory :math:`O(S k)`.
"""
from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

__all__ = ["get_step_kernel"]

_KERNEL: Callable | None = None
_TRIED = False


def _make_kernel() -> Callable:
    import numba

    @numba.njit(cache=True, nogil=True)
    def step(W, V, dw, dv, cap, thr, alpha, rnext, xu, yu, xd, yd, inc_val):  # pragma: no cover - compiled
        S = W.shape[0]
        k = dw.shape[0]
        cap_out = S * k
        oW = np.empty(cap_out, dtype=np.int64)
        oV = np.empty(cap_out, dtype=np.float64)
        oP = np.empty(cap_out, dtype=np.int64)
        oI = np.empty(cap_out, dtype=np.int64)
        heads = np.zeros(k, dtype=np.int64)
        best_feas = inc_val
        best_p = -1
        best_i = -1
        run_max = -np.inf
        cnt = 0
        nu = xu.shape[0]
        nd = xd.shape[0]
        pu = nu - 1
        pd = 0
        # Lagrangian value of every state; a candidate (state h, item j) is worth at most
        # lagS[h] - loss[j] in any completion, so those at or below thr are skipped before the merge
        lagS = np.empty(S, dtype=np.float64)
        for h in range(S):
            lagS[h] = V[h] + alpha * float(cap - W[h])
        loss = np.empty(k, dtype=np.float64)
        for j in range(k):
            loss[j] = alpha * float(dw[j]) - dv[j]
        for j in range(k):
            h = 0
            while h < S and lagS[h] - loss[j] <= thr:
                h += 1
            heads[j] = h
        while True:
            # pick the list head of least weight
            jbest = -1
            wbest = 0
            for j in range(k):
                h = heads[j]
                if h < S:
                    w = W[h] + dw[j]
                    if jbest < 0 or w < wbest:
                        jbest = j
                        wbest = w
            if jbest < 0:
                break
            h = heads[jbest]
            nxt = h + 1
            while nxt < S and lagS[nxt] - loss[jbest] <= thr:
                nxt += 1
            heads[jbest] = nxt
            v = V[h] + dv[jbest]
            w = wbest
            if w <= cap and v > best_feas:
                best_feas = v
                best_p = h
                best_i = jbest
            r = float(cap - w)
            if r >= 0.0:
                while pu > 0 and xu[pu] > r:
                    pu -= 1
                if pu >= nu - 1:
                    ub = v + yu[nu - 1]
                else:
                    ub = v + yu[pu] + (r - xu[pu]) * (yu[pu + 1] - yu[pu]) / (xu[pu + 1] - xu[pu])
            else:
                e = -r
                if e > xd[nd - 1]:
                    ub = -np.inf
                else:
                    while pd < nd - 2 and xd[pd + 1] < e:
                        pd += 1
                    ub = v - (yd[pd] + (e - xd[pd]) * (yd[pd + 1] - yd[pd]) / (xd[pd + 1] - xd[pd]))
            lag = v + alpha * r - rnext
            if lag < ub:
                ub = lag
            if v > run_max:
                run_max = v
                if ub > thr:
                    if cnt > 0 and oW[cnt - 1] == w:
                        cnt -= 1
                    oW[cnt] = w
                    oV[cnt] = v
                    oP[cnt] = h
                    oI[cnt] = jbest
                    cnt += 1
        return oW[:cnt], oV[:cnt], oP[:cnt], oI[:cnt], best_feas, best_p, best_i

    return step


def get_step_kernel() -> Callable | None:
    """The compiled step kernel (compiled once per process, cached on disk), or ``None`` without numba."""
    global _KERNEL, _TRIED
    if _TRIED:
        return _KERNEL
    _TRIED = True
    if os.environ.get("LYRA_NO_NUMBA"):
        return None
    try:
        _KERNEL = _make_kernel()
    except ImportError:
        _KERNEL = None
    return _KERNEL
