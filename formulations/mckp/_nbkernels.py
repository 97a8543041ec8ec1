"""The numba kernels of the exact MCKP core, at module level so that numba's disk cache holds every one of them.

Imported only by :mod:`lyra_solver.formulations.mckp._numba` (lazily, when numba is installed), which documents
them and hands them out. Kept out of closures on purpose: a cached kernel that calls another kernel held in a
closure cell is compiled again in every process (the cell's content is part of the cache key and differs
between processes), which cost about 6 s of CPU on the first solve; module-level callees are cached once.

Every kernel is compiled with ``error_model="numpy"``: a float division by zero would give ``inf`` or ``nan`` where
the default model raises (none divides by zero on the inputs its callers pass: the slopes' weights are positive,
the tail's breakpoints strictly increase, the congruence's modulus is above 1). Without that exception path numba
drops the reference counts of a kernel's array arguments (an atomic increment and decrement each, through a call):
``scan`` took 21 ns a call at 3 states with them, and a weakly 100 x 10 search about 0.2 microseconds a step.
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, error_model="numpy")
def count(W, V, dw, dv, cap, thr, alpha):  # pragma: no cover - compiled
    return _count_n(W, V, W.shape[0], dw, dv, dw.shape[0], cap, thr, alpha)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _count_n(W, V, S, dw, dv, k, cap, thr, alpha):  # pragma: no cover - compiled
    """``count`` over the first ``S`` states and ``k`` items of the arrays."""
    total = 0
    for h in range(S):
        lag_h = V[h] + alpha * float(cap - W[h])
        for j in range(k):
            if lag_h - (alpha * float(dw[j]) - dv[j]) > thr:
                total += 1
    return total

@numba.njit(cache=True, nogil=True, error_model="numpy")
def step(W, V, dw, dv, cap, z, tol, alpha, lam_up, lam_dn, r_next, xu, yu, xd, yd, mod_g, mod_r):  # pragma: no cover
    """One core step (the definition is ``core.step_numpy``): ``_step_merge`` on fresh buffers of ``S k`` entries
    (never initialised: only the pages of the kept states are touched), the kept states copied out."""
    size = max(W.shape[0] * dw.shape[0], 1)
    oW = np.empty(size, dtype=np.int64)
    oV = np.empty(size, dtype=np.float64)
    oP = np.empty(size, dtype=np.int64)
    oI = np.empty(size, dtype=np.int64)
    yW = np.empty(size, dtype=np.int64)
    yV = np.empty(size, dtype=np.float64)
    yP = np.empty(size, dtype=np.int64)
    yI = np.empty(size, dtype=np.int64)
    lagS = np.empty(max(W.shape[0], 1), dtype=np.float64)
    cnt, best_v, best_p, best_j = _step_merge(W, V, dw, dv, cap, z, tol, alpha, lam_up, lam_dn, r_next, xu, yu, xd,
                                              yd, mod_g, mod_r, oW, oV, oP, oI, yW, yV, yP, yI, lagS)
    return oW[:cnt].copy(), oV[:cnt].copy(), oP[:cnt].copy(), oI[:cnt].copy(), best_v, best_p, best_j


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _front_first(W, V, lagS, S, loss, d_w, d_v, thr_lag, fW, fV, fP, fI):  # pragma: no cover - compiled
    """The considered candidates of item 0 (states shifted by ``(d_w, d_v)`` whose Lagrangian value less ``loss``
    exceeds ``thr_lag``) into ``fW, fV, fP, fI``; they are a front already (the states' values increase with
    their weights). Returns their count."""
    nf = 0
    for h in range(S):
        if lagS[h] - loss > thr_lag:
            fW[nf] = W[h] + d_w
            fV[nf] = V[h] + d_v
            fP[nf] = h
            fI[nf] = 0
            nf += 1
    return nf


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _front_merge(W, V, lagS, S, loss, d_w, d_v, thr_lag, j, fW, fV, fP, fI, nf, gW, gV, gP, gI):  # pragma: no cover
    """One merge of ``_step_merge``: the front ``fW[:nf], ...`` with item ``j``'s considered candidates, into ``gW,
    gV, gP, gI`` (by weight; on equal weights the larger value, on a tie the front's: the lower item; kept what
    rises above the running largest value). Returns the new front's length."""
    h = 0
    while h < S and not (lagS[h] - loss > thr_lag):
        h += 1
    p = 0
    ng = 0
    run_max = -np.inf
    while p < nf or h < S:
        if h >= S:
            w = fW[p]
            v = fV[p]
            ph = fP[p]
            pj = fI[p]
            p += 1
        else:
            cw = W[h] + d_w
            if p < nf and fW[p] <= cw:
                w = fW[p]
                v = fV[p]
                ph = fP[p]
                pj = fI[p]
                p += 1
                if w == cw:  # equal weights: the larger value, on a tie the front's (lower item)
                    cv = V[h] + d_v
                    if cv > v:
                        v = cv
                        ph = h
                        pj = j
                    h += 1
                    while h < S and not (lagS[h] - loss > thr_lag):
                        h += 1
            else:
                w = cw
                v = V[h] + d_v
                ph = h
                pj = j
                h += 1
                while h < S and not (lagS[h] - loss > thr_lag):
                    h += 1
        if v > run_max:
            run_max = v
            gW[ng] = w
            gV[ng] = v
            gP[ng] = ph
            gI[ng] = pj
            ng += 1
    return ng


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _step_merge(W, V, dw, dv, cap, z, tol, alpha, lam_up, lam_dn, r_next, xu, yu, xd, yd, mod_g, mod_r, oW, oV, oP,
                oI, yW, yV, yP, yI, lagS):  # pragma: no cover - compiled
    """``_step_merge_n`` over every state and item of the arrays."""
    return _step_merge_n(W, V, W.shape[0], dw, dv, dw.shape[0], cap, z, tol, alpha, lam_up, lam_dn, r_next, xu, yu,
                         xd, yd, mod_g, mod_r, oW, oV, oP, oI, yW, yV, yP, yI, lagS)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _step_merge_n(W, V, S, dw, dv, k, cap, z, tol, alpha, lam_up, lam_dn, r_next, xu, yu, xd, yd, mod_g, mod_r, oW,
                  oV, oP, oI, yW, yV, yP, yI, lagS):  # pragma: no cover - compiled
    """``step`` on the first ``S`` states of ``W, V`` and the first ``k`` items of ``dw, dv``, into the caller's
    buffers (``oW, oV, oP, oI``, at least ``S k`` entries each); returns ``(count, best_v, best_p, best_j)``.
    The incumbent first (per item, the heaviest state that fits has the largest value);
    then the Pareto front of the considered candidates (``core.step_numpy``'s Lagrangian pre-test), built one item
    at a time, ``F_j = front(F_{j-1} + C_j)`` with ``C_j`` item ``j``'s considered candidates; then the bound keeps
    those above ``thr``.

    Why ``core.step_numpy``'s arrays: a candidate of its output is one that no considered candidate *beats*
    (less weight and at least the value; or the same weight and more value, or the same value and a lower item) and
    whose bound exceeds ``thr``; a beaten candidate's bound is at most its beater's (the bound grows with the value
    and falls with the weight). "Beats" is a strict order, so the unbeaten candidates of a union are the unbeaten
    ones of one part's unbeaten candidates and the other part: the front can be built list by list. A merge takes
    the two lists by weight (on equal weights the larger value, on equal values the earlier list: the lower item)
    and keeps what rises above the running largest value. Work ``sum_j (|F_{j-1}| + |C_j|)``, one comparison
    per element (a k-way merge, the kernel before, compared ``k`` list heads per candidate: about 10% slower on
    the weakly 10,000 x 10 searches). ``yW, yV, yP, yI``: scratch of at least ``S k`` entries, as the outputs;
    ``lagS``: scratch of at least ``S`` entries. The fronts alternate between the two sets of buffers by explicit
    calls of two small kernels, not inlined (no swap of array variables; the swaps and the scratch allocation
    cost about 0.3 microseconds per step, as much as a 100 x 10 search's small steps themselves: 0.33 -> 0.14
    microseconds at 4 states and 5 items; inlined, the helpers took 0.6)."""
    best_v = z
    best_w = 0
    best_p = -1
    best_j = -1
    for j in range(k):
        # the heaviest state that fits (np.searchsorted(W[:S], cap - dw[j], side="right") - 1, without the slice)
        x = cap - dw[j]
        lo = 0
        hi = S
        while lo < hi:
            mid = (lo + hi) >> 1
            if W[mid] <= x:
                lo = mid + 1
            else:
                hi = mid
        h = lo - 1
        if h >= 0:
            v = V[h] + dv[j]
            w = W[h] + dw[j]
            if v > best_v or (best_p >= 0 and v == best_v and (w < best_w or (w == best_w and j < best_j))):
                best_v = v
                best_w = w
                best_p = h
                best_j = j
    thr = best_v + tol
    thr_lag = thr
    if mod_g > 1:
        thr_lag = thr + float((mod_r - np.int64(np.ceil(thr))) % mod_g)
    for h in range(S):
        lagS[h] = V[h] + alpha * float(cap - W[h])
    # the front of the first j lists, in the buffers that make the last merge land in the output
    nf = 0
    in_o = (k - 1) % 2 == 0  # where the current front lies
    if k > 0:
        loss = alpha * float(dw[0]) - dv[0]
        if in_o:
            nf = _front_first(W, V, lagS, S, loss, dw[0], dv[0], thr_lag, oW, oV, oP, oI)
        else:
            nf = _front_first(W, V, lagS, S, loss, dw[0], dv[0], thr_lag, yW, yV, yP, yI)
    for j in range(1, k):
        loss = alpha * float(dw[j]) - dv[j]
        if in_o:
            nf = _front_merge(W, V, lagS, S, loss, dw[j], dv[j], thr_lag, j, oW, oV, oP, oI, nf, yW, yV, yP, yI)
        else:
            nf = _front_merge(W, V, lagS, S, loss, dw[j], dv[j], thr_lag, j, yW, yV, yP, yI, nf, oW, oV, oP, oI)
        in_o = not in_o
    # the front is in the output buffers: keep the candidates whose bound exceeds thr (in place, by weight)
    has_tail = xu.shape[0] > 0
    nu = xu.shape[0]
    pu = nu - 1
    pd = 0
    cnt = 0
    for q in range(nf):
        w = oW[q]
        v = oV[q]
        r = float(cap - w)
        ub = v + lam_up * r if r >= 0.0 else v + lam_dn * r
        b2 = v + alpha * r - r_next
        if b2 < ub:
            ub = b2
        if has_tail:
            if r >= 0.0:
                if pu == nu - 1 and xu[pu] > r:
                    pu = np.searchsorted(xu, r, side="right") - 1
                while xu[pu] > r:
                    pu -= 1
                if pu == nu - 1:
                    b3 = v + yu[nu - 1]
                else:
                    b3 = v + (yu[pu] + (r - xu[pu]) * (yu[pu + 1] - yu[pu]) / (xu[pu + 1] - xu[pu]))
            else:
                e = -r
                if e > xd[xd.shape[0] - 1]:
                    b3 = -np.inf
                else:
                    while xd[pd + 1] < e:
                        pd += 1
                    b3 = v - (yd[pd] + (e - xd[pd]) * (yd[pd + 1] - yd[pd]) / (xd[pd + 1] - xd[pd]))
            if b3 < ub:
                ub = b3
        if ub > thr:
            oW[cnt] = w
            oV[cnt] = v
            oP[cnt] = oP[q]
            oI[cnt] = oI[q]
            cnt += 1
    return cnt, best_v, best_p, best_j


@numba.njit(cache=True, nogil=True, error_model="numpy")
def scan(W, V, cap, alpha, lam_up, lam_dn, r_next, xu, yu, xd, yd, thr):  # pragma: no cover - compiled
    """Twin of ``core.scan_numpy``: the largest state bound, whether a feasible / an overfull state can still
    gain by an upgrade / a downgrade, and the largest Lagrangian value of a state."""
    return _scan_n(W, V, W.shape[0], cap, alpha, lam_up, lam_dn, r_next, xu, yu, xd, yd, thr)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _scan_n(W, V, S, cap, alpha, lam_up, lam_dn, r_next, xu, yu, xd, yd, thr):  # pragma: no cover - compiled
    """``scan`` over the first ``S`` states of ``W, V``."""
    has_tail = xu.shape[0] > 0
    nu = xu.shape[0]
    pu = nu - 1
    pd = 0
    ub_max = -np.inf
    lag_max = -np.inf
    need_up = False
    need_dn = False
    for h in range(S):
        v = V[h]
        r = float(cap - W[h])
        if r >= 0.0:
            ub = v + lam_up * r
            if ub > thr:
                need_up = True
        else:
            ub = v + lam_dn * r
            if ub > thr:
                need_dn = True
        b2 = v + alpha * r - r_next
        lag = v + alpha * r
        if lag > lag_max:
            lag_max = lag
        if b2 < ub:
            ub = b2
        # the same tail bound as in step, written out: an inlined helper returning (bound, pu, pd) made the
        # strongly 10,000 x 10 search about 28% slower (2026-11-30)
        if has_tail:
            if r >= 0.0:
                if pu == nu - 1 and xu[pu] > r:  # the first state that fits: the largest breakpoint <= r
                    pu = np.searchsorted(xu, r, side="right") - 1
                while xu[pu] > r:
                    pu -= 1
                if pu == nu - 1:
                    b3 = v + yu[nu - 1]
                else:
                    b3 = v + (yu[pu] + (r - xu[pu]) * (yu[pu + 1] - yu[pu]) / (xu[pu + 1] - xu[pu]))
            else:
                e = -r
                if e > xd[xd.shape[0] - 1]:
                    b3 = -np.inf
                else:
                    while xd[pd + 1] < e:
                        pd += 1
                    b3 = v - (yd[pd] + (e - xd[pd]) * (yd[pd + 1] - yd[pd]) / (xd[pd + 1] - xd[pd]))
            if b3 < ub:
                ub = b3
        if ub > ub_max:
            ub_max = ub
    return ub_max, need_up, need_dn, lag_max


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _rank_sortable(weights, i, k):  # pragma: no cover - compiled
    """Whether class ``i``'s ``k`` items fit :func:`_rank_sort_small`: at most 16, weights in ``0 .. 2**58``."""
    if k > 16:
        return False
    for j in range(k):
        x = weights[i, j]
        if x < 0 or x >= 2**58:
            return False
    return True


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _rank_sort_small(weights, values, i, k, order, cw, cv, ci):  # pragma: no cover - compiled
    """The ``k <= 16`` items of class ``i`` (weights in ``0 .. 2**58``) into ``cw, cv, ci`` sorted by (weight asc,
    value desc, index asc), the lexsort of the numpy path: a rank sort on the distinct keys ``weight * 16 + index``
    (no data-dependent branch, where an insertion sort mispredicts about half of its comparisons on random
    weights), then each run of equal weights (rare) by value desc, index asc. ``order`` is scratch."""
    for j in range(k):
        order[j] = (weights[i, j] << 4) | j
    for a in range(k):
        ka = order[a]
        r = 0
        for b in range(k):
            r += order[b] < ka
        cw[r] = weights[i, a]
        cv[r] = values[i, a]
        ci[r] = a
    a = 1
    while a < k:
        if cw[a] != cw[a - 1]:
            a += 1
            continue
        s0 = a - 1
        e = a + 1
        while e < k and cw[e] == cw[s0]:
            e += 1
        for x in range(s0 + 1, e):
            xv = cv[x]
            xi = ci[x]
            y = x - 1
            while y >= s0 and (cv[y] < xv or (cv[y] == xv and ci[y] > xi)):
                cv[y + 1] = cv[y]
                ci[y + 1] = ci[y]
                y -= 1
            cv[y + 1] = xv
            ci[y + 1] = xi
        a = e


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _class_undominated(weights, values, i, k, order, cw, cv, ci):  # pragma: no cover - compiled
    """Undominated items of class ``i`` (into ``cw, cv, ci``: sorted by weight, strictly increasing weights
    and values); returns ``(undominated, sorted)``, ``sorted`` when the class's raw weights strictly increase.
    The first part of ``_class_reduce``, alone where the hull is not read (the entering class's selection)."""
    inc = True
    for j in range(1, k):
        if weights[i, j] <= weights[i, j - 1]:
            inc = False
            break
    c = 0
    if inc:
        best = values[i, 0]
        cw[0] = weights[i, 0]
        cv[0] = best
        ci[0] = 0
        c = 1
        for j in range(1, k):
            v = values[i, j]
            if v > best:
                best = v
                cw[c] = weights[i, j]
                cv[c] = v
                ci[c] = j
                c += 1
    else:
        # the items sorted by (weight asc, value desc, index asc), the lexsort of the numpy path, in cw, cv, ci;
        # then the dominated ones dropped in place (the write position never passes the read position)
        small = _rank_sortable(weights, i, k)
        if small:
            _rank_sort_small(weights, values, i, k, order, cw, cv, ci)
        elif k <= 16:
            for j in range(k):
                cw[j] = weights[i, j]
                cv[j] = values[i, j]
                ci[j] = j
            for a in range(1, k):
                xw = cw[a]
                xv = cv[a]
                xi = ci[a]
                b = a - 1
                while b >= 0 and (cw[b] > xw or (cw[b] == xw and (cv[b] < xv or (cv[b] == xv and ci[b] > xi)))):
                    cw[b + 1] = cw[b]
                    cv[b + 1] = cv[b]
                    ci[b + 1] = ci[b]
                    b -= 1
                cw[b + 1] = xw
                cv[b + 1] = xv
                ci[b + 1] = xi
        else:
            o1 = np.argsort(-values[i, :k], kind="mergesort")
            o2 = np.argsort(weights[i, :k][o1], kind="mergesort")
            for j in range(k):
                x = o1[o2[j]]
                cw[j] = weights[i, x]
                cv[j] = values[i, x]
                ci[j] = x
        best = -np.inf
        for a in range(k):
            xw = cw[a]
            xv = cv[a]
            xi = ci[a]
            if a == 0 or xv > best:
                cw[c] = xw
                cv[c] = xv
                ci[c] = xi
                c += 1
            if xv > best:
                best = xv
    return c, inc


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _class_reduce(weights, values, i, k, order, cw, cv, ci, hp):  # pragma: no cover - compiled
    """Undominated items of class ``i`` (into ``cw, cv, ci``: sorted by weight, strictly increasing weights
    and values) and their upper hull (positions into ``hp``); returns ``(undominated, vertices, sorted)``,
    ``sorted`` when the class's raw weights strictly increase."""
    c, inc = _class_undominated(weights, values, i, k, order, cw, cv, ci)
    # upper hull: monotone chain, popping a vertex on or below the segment
    top = 1
    hp[0] = 0
    for j in range(1, c):
        wj = float(cw[j])
        vj = cv[j]
        while top >= 2:
            a_ = hp[top - 2]
            b_ = hp[top - 1]
            wa = float(cw[a_])
            va = cv[a_]
            wb = float(cw[b_])
            vb = cv[b_]
            if (vb - va) * (wj - wb) <= (vj - vb) * (wb - wa):
                top -= 1
            else:
                break
        hp[top] = j
        top += 1
    return c, top, inc

@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _sorted_hull(weights, values, i, k, sw, sv, si):  # pragma: no cover - compiled
    """Upper hull of class ``i`` in one sweep when its raw weights strictly increase (into the stack ``sw,
    sv, si``): dominated items are skipped on the fly, the chain pops as ``_class_reduce`` does. Returns
    the vertex count, or ``-1`` at the first weight that does not increase (the caller sorts instead)."""
    best = values[i, 0]
    sw[0] = float(weights[i, 0])
    sv[0] = best
    si[0] = 0
    top = 1
    prev = weights[i, 0]
    for j in range(1, k):
        wi = weights[i, j]
        if wi <= prev:
            return -1
        prev = wi
        vj = values[i, j]
        if not (vj > best):
            continue
        best = vj
        wj = float(wi)
        while top >= 2:
            wa = sw[top - 2]
            va = sv[top - 2]
            wb = sw[top - 1]
            vb = sv[top - 1]
            if (vb - va) * (wj - wb) <= (vj - vb) * (wb - wa):
                top -= 1
            else:
                break
        sw[top] = wj
        sv[top] = vj
        si[top] = j
        top += 1
    return top

@numba.njit(cache=True, nogil=True, error_model="numpy")
def prepare_hulls(weights, values, sizes):  # pragma: no cover - compiled
    """Upper hulls of every class in flat arrays (twin of ``core._hulls_numpy``): ``start`` (``n + 1``
    offsets), vertex ``items`` (raw item indices), ``weights``, ``values``; per class whether its raw
    weights strictly increase; the largest ``|value|`` and whether every value is integral.

    One pass over the classes; the undominated items are kept only in per-class scratch buffers, so the
    memory written is that of the hulls (a few vertices per class), not of an ``n x m`` table."""
    n, m = weights.shape
    mm = max(m, 1)
    order = np.empty(mm, dtype=np.int64)
    cw = np.empty(mm, dtype=np.int64)
    cv = np.empty(mm, dtype=np.float64)
    ci = np.empty(mm, dtype=np.int64)
    chp = np.empty(mm, dtype=np.int64)
    total = 0
    for i in range(n):
        total += sizes[i]
    start = np.empty(n + 1, dtype=np.int64)
    hi = np.empty(max(total, 1), dtype=np.int64)
    hw = np.empty(max(total, 1), dtype=np.int64)
    hv = np.empty(max(total, 1), dtype=np.float64)
    srt = np.empty(n, dtype=np.bool_)
    sw = np.empty(mm, dtype=np.float64)
    sv = np.empty(mm, dtype=np.float64)
    si = np.empty(mm, dtype=np.int64)
    vmax = 0.0
    integral = True
    t = 0
    for i in range(n):
        k = sizes[i]
        for j in range(k):
            v = values[i, j]
            a = v if v >= 0.0 else -v
            if a > vmax:
                vmax = a
            if integral and v != np.floor(v):
                integral = False
        start[i] = t
        top = _sorted_hull(weights, values, i, k, sw, sv, si)
        srt[i] = top >= 0
        if top >= 0:
            for j in range(top):
                q = si[j]
                hi[t] = q
                hw[t] = weights[i, q]
                hv[t] = sv[j]
                t += 1
            continue
        # unsorted weights: a class of at most 16 items (the Pisinger classes) by _class_reduce's sort
        # (_rank_sort_small), then its dominance pass and monotone chain written out here with the same cross
        # products, the chain on a stack of vertex values: the same vertices, about 25% less time on weakly
        # 10,000 x 10 than the call of the general function, 40% on subset-sum
        if not _rank_sortable(weights, i, k):
            c, top, inc = _class_reduce(weights, values, i, k, order, cw, cv, ci, chp)
            for j in range(top):
                q = chp[j]
                hi[t] = ci[q]
                hw[t] = cw[q]
                hv[t] = cv[q]
                t += 1
            continue
        _rank_sort_small(weights, values, i, k, order, cw, cv, ci)
        best = -np.inf
        top = 0
        for j in range(k):
            vj = cv[j]
            if j > 0 and not (vj > best):  # dominated (the first item is kept, as there)
                continue
            if vj > best:
                best = vj
            wj = float(cw[j])
            while top >= 2:
                wa = sw[top - 2]
                va = sv[top - 2]
                wb = sw[top - 1]
                vb = sv[top - 1]
                if (vb - va) * (wj - wb) <= (vj - vb) * (wb - wa):
                    top -= 1
                else:
                    break
            sw[top] = wj
            sv[top] = vj
            si[top] = j
            top += 1
        for q_ in range(top):
            q = si[q_]
            hi[t] = ci[q]
            hw[t] = cw[q]
            hv[t] = cv[q]
            t += 1
    start[n] = t
    return start, hi[:t].copy(), hw[:t].copy(), hv[:t].copy(), srt, vmax, integral

@numba.njit(cache=True, nogil=True, error_model="numpy")
def class_items(weights, values, i, k):  # pragma: no cover - compiled
    """Undominated items of class ``i`` (twin of ``core._class_items_numpy``): weights, values and raw
    indices, sorted by weight."""
    mm = max(k, 1)
    order = np.empty(mm, dtype=np.int64)
    cw = np.empty(mm, dtype=np.int64)
    cv = np.empty(mm, dtype=np.float64)
    ci = np.empty(mm, dtype=np.int64)
    chp = np.empty(mm, dtype=np.int64)
    c, _, _ = _class_reduce(weights, values, i, k, order, cw, cv, ci, chp)
    return cw[:c].copy(), cv[:c].copy(), ci[:c].copy()

@numba.njit(cache=True, nogil=True, error_model="numpy")
def select_items(weights, values, i, k, bw, bv, alpha, lag_ub, thr):  # pragma: no cover - compiled
    """Twin of ``core.select_numpy``: the entering class's undominated items whose Lagrangian loss leaves a
    state above ``thr`` (the LP item alone when none), as raw indices and weights / values relative to the
    LP item ``(bw, bv)``."""
    mm = max(k, 1)
    order = np.empty(mm, dtype=np.int64)
    cw = np.empty(mm, dtype=np.int64)
    cv = np.empty(mm, dtype=np.float64)
    ci = np.empty(mm, dtype=np.int64)
    chp = np.empty(mm, dtype=np.int64)
    cand = np.empty(mm, dtype=np.int64)
    dw = np.empty(mm, dtype=np.int64)
    dv = np.empty(mm, dtype=np.float64)
    n_sel = _select_into(weights, values, i, k, bw, bv, alpha, lag_ub, thr, order, cw, cv, ci, chp, cand, dw, dv)
    return cand[:n_sel].copy(), dw[:n_sel].copy(), dv[:n_sel].copy()


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _select_into(weights, values, i, k, bw, bv, alpha, lag_ub, thr, order, cw, cv, ci, chp, cand, dw,
                 dv):  # pragma: no cover - compiled
    """``select_items`` into the caller's buffers (scratch ``order, cw, cv, ci, chp`` and the outputs ``cand, dw,
    dv``, each of at least ``max(k, 1)`` entries: the compiled search allocates them once); returns how many
    items were selected (the first entries of the outputs).

    With ``alpha >= 0`` the Lagrangian test comes first, on the raw items, and only the survivors are sorted and
    reduced (``_select_survivors``: the same items); else every item is sorted and reduced first."""
    if alpha >= 0.0:
        return _select_survivors(weights, values, i, k, bw, bv, alpha, lag_ub, thr, cw, cv, ci, cand, dw, dv)
    c, _ = _class_undominated(weights, values, i, k, order, cw, cv, ci)
    lp_at = np.searchsorted(cw[:c], bw)
    lag_lp = cv[lp_at] - alpha * float(cw[lp_at])
    n_sel = 0
    for j in range(c):
        if lag_ub - (lag_lp - (cv[j] - alpha * float(cw[j]))) > thr:
            chp[n_sel] = j
            n_sel += 1
    if n_sel == 0:
        chp[0] = lp_at
        n_sel = 1
    for t in range(n_sel):
        j = chp[t]
        cand[t] = ci[j]
        dw[t] = cw[j] - bw
        dv[t] = cv[j] - bv
    return n_sel


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _select_survivors(weights, values, i, k, bw, bv, alpha, lag_ub, thr, cw, cv, ci, cand, dw,
                      dv):  # pragma: no cover - compiled
    """``_select_into`` for ``alpha >= 0``: the items whose Lagrangian value ``v - alpha w`` passes the test
    ``lag_ub - (lag_lp - lag) > thr`` (``lag_lp = bv - alpha bw``, the LP item's, the same doubles as its entry
    in the sorted list), then of those the undominated ones by weight (the sort and dominance pass of
    ``_class_undominated`` on the survivors alone: a class's selection read 10 items and sorted one or two, where
    the rank sort of all 10 cost about 0.25 microseconds a step of a weakly 100 x 10 search).

    Why the same items: the test is monotone in ``lag`` (each rounding is), and with ``alpha >= 0`` an item that
    dominates another (no more weight, at least the value: any item before it in the sort order with at least
    its value) has at least its ``lag`` (``fl(alpha w)`` grows with ``w``, ``fl(v - x)`` with ``v``), so it passes
    whenever the other does: the survivors hold every dominator of each survivor, and a survivor is undominated
    among them exactly when it is among all items. When none passes, the LP item alone (its raw index: the first
    item of weight ``bw`` and value ``bv``, the one the sort keeps)."""
    lag_lp = bv - alpha * float(bw)
    c = 0
    for j in range(k):
        w = weights[i, j]
        v = values[i, j]
        if lag_ub - (lag_lp - (v - alpha * float(w))) > thr:
            # insertion by (weight asc, value desc, index asc); j increases, so an equal (w, v) goes after
            b = c - 1
            while b >= 0 and (cw[b] > w or (cw[b] == w and cv[b] < v)):
                cw[b + 1] = cw[b]
                cv[b + 1] = cv[b]
                ci[b + 1] = ci[b]
                b -= 1
            cw[b + 1] = w
            cv[b + 1] = v
            ci[b + 1] = j
            c += 1
    n_sel = 0
    best = -np.inf
    for a in range(c):
        xv = cv[a]
        if a == 0 or xv > best:
            cand[n_sel] = ci[a]
            dw[n_sel] = cw[a] - bw
            dv[n_sel] = xv - bv
            n_sel += 1
        if xv > best:
            best = xv
    if n_sel == 0:
        q = 0
        while q < k and not (weights[i, q] == bw and values[i, q] == bv):
            q += 1
        cand[0] = q
        dw[0] = 0
        dv[0] = 0.0
        n_sel = 1
    # every array read at the one exit: numba then counts no reference to them (with the last reads of some on
    # the fallback's path only, it counted all ten: an atomic increment and decrement each, once a step)
    return n_sel + 0 * (weights.shape[0] + values.shape[0] + cw.shape[0] + cv.shape[0] + ci.shape[0] + cand.shape[0]
                        + dw.shape[0] + dv.shape[0])


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _bucket_round(cand, bk, wsum, n_b, lo, hi, weight, used, room, taken):  # pragma: no cover - compiled
    """One round of the weighted selections (``fit_prefix``, ``_fit_prefix_general``) once the candidates
    ``cand[lo:hi]`` are bucketed (``bk[t]``: the bucket of ``cand[t]``, higher buckets larger keys; ``wsum[b]``:
    the weight of bucket ``b``, of ``n_b``): the buckets above the one where ``room`` runs out are taken, that
    one's candidates kept in ``cand[lo:p]`` in their order. Returns ``(p, used)``; ``p`` is -1 when everything
    fits (every candidate taken). O(hi - lo + n_b)."""
    acc = 0
    bb = -1
    for b in range(n_b - 1, -1, -1):
        if used + acc + wsum[b] > room:
            bb = b
            break
        acc += wsum[b]
    if bb < 0:
        for t in range(lo, hi):
            taken[cand[t]] = True
        return -1, used + acc
    p = lo
    for t in range(lo, hi):
        x = cand[t]
        if bk[t] > bb:
            taken[x] = True
        elif bk[t] == bb:
            cand[p] = x
            p += 1
    return p, used + acc


@numba.njit(cache=True, nogil=True, error_model="numpy")
def fit_prefix(key, weight, room):  # pragma: no cover - compiled
    """Twin of ``_lp.fit_prefix``: the longest prefix of the scan by decreasing key (ties: lower index) that fits
    ``room``, as ``(taken, brk, used)``. Weighted selection on the keys' order-preserving 64-bit images (the IEEE
    bits, sign-folded, -0.0 as 0.0), computed once: each round buckets the candidates by the top 12 bits of their
    image's offset in the round's range (a shift, no float arithmetic), takes the buckets above the one where the
    capacity runs out and keeps that one (in index order) for the next round; the last 64 candidates, or a run of
    equal keys, are sorted. About 2 to 2.5x faster than the float bucketing of ``_fit_prefix_general`` (the LP of
    a cluster 1,000 x 32 solve 0.037 -> 0.015 ms), which keys that are not finite still take."""
    N = key.shape[0]
    for t in range(N):
        if not (key[t] > -np.inf and key[t] < np.inf):
            return _fit_prefix_general(key, weight, room)
    taken = np.zeros(N, dtype=np.bool_)
    u = np.empty(N, dtype=np.uint64)
    umin = np.uint64(0xFFFFFFFFFFFFFFFF)
    umax = np.uint64(0)
    for t in range(N):
        x = key[t]
        if x == 0.0:
            x = 0.0
        b = np.float64(x).view(np.int64)
        v = np.uint64(b) ^ np.uint64(0x8000000000000000) if b >= 0 else ~np.uint64(b)
        u[t] = v
        if v < umin:
            umin = v
        if v > umax:
            umax = v
    cand = np.arange(N)
    bk = np.empty(N, dtype=np.int64)
    wsum = np.empty(4096, dtype=np.int64)
    lo = 0
    hi = N
    used = 0
    while hi - lo > 64:
        if hi < N:  # a later round: the range of the bucket kept
            umin = np.uint64(0xFFFFFFFFFFFFFFFF)
            umax = np.uint64(0)
            for t in range(lo, hi):
                v = u[cand[t]]
                if v < umin:
                    umin = v
                if v > umax:
                    umax = v
        if umin == umax:  # equal keys: sorted (by index) below
            break
        span = umax - umin
        shift = 0
        while (span >> np.uint64(shift)) >= np.uint64(4096):
            shift += 1
        n_b = np.int64(span >> np.uint64(shift)) + 1
        wsum[:n_b] = 0
        for t in range(lo, hi):
            x = cand[t]
            b = np.int64((u[x] - umin) >> np.uint64(shift))
            bk[t] = b
            wsum[b] += weight[x]
        p, used = _bucket_round(cand, bk, wsum, n_b, lo, hi, weight, used, room, taken)
        if p < 0:  # everything fits
            lo = hi
            break
        hi = p
    rest = cand[lo:hi]  # in index order (the rounds keep the order)
    order = np.argsort(-key[rest], kind="mergesort")
    brk = -1
    for t in range(order.shape[0]):
        x = rest[order[t]]
        if used + weight[x] <= room:
            taken[x] = True
            used += weight[x]
        else:
            brk = x
            break
    return taken, brk, used


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _fit_prefix_general(key, weight, room):  # pragma: no cover - compiled
    """``fit_prefix`` for keys that are not all finite: the longest prefix of the scan by decreasing key (ties:
    lower index) that fits ``room``. Weighted selection: rounds that bucket the candidates into 1,024 equal ranges of an
    order-preserving integer image of their keys (the IEEE bits, sign-folded: ranges of binary magnitude, so
    keys spread over many orders of magnitude still spread) and keep the range where the capacity runs
    out; median-of-three pivot rounds when a bucket round keeps more than half of them; the last few
    candidates sorted."""
    N = key.shape[0]
    taken = np.zeros(N, dtype=np.bool_)
    cand = np.arange(N)
    buf = np.empty(N, dtype=np.int64)
    n_b = 1024
    wsum = np.empty(n_b, dtype=np.int64)
    lo = 0
    hi = N
    used = 0
    use_buckets = True
    bits = key.view(np.int64)
    mag_mask = np.int64(0x7FFFFFFFFFFFFFFF)
    while hi - lo > 256:
        if use_buckets:
            kmin = np.inf
            kmax = -np.inf
            finite = True
            for t in range(lo, hi):
                x = cand[t]
                if not (key[x] > -np.inf and key[x] < np.inf):
                    finite = False
                    break
                s = bits[x]
                g = float(s & mag_mask) if s >= 0 else -float(s & mag_mask)  # -0.0 and 0.0 alike
                if g < kmin:
                    kmin = g
                if g > kmax:
                    kmax = g
            scale = 0.0
            if finite and kmax > kmin:
                scale = n_b / (kmax - kmin)
            if not (scale > 0.0 and scale < np.inf):
                use_buckets = False
                continue
            wsum[:] = 0
            for t in range(lo, hi):
                x = cand[t]
                s = bits[x]
                g = float(s & mag_mask) if s >= 0 else -float(s & mag_mask)
                b = int((g - kmin) * scale)
                if b >= n_b:
                    b = n_b - 1
                buf[t] = b
                wsum[b] += weight[x]
            n_old = hi - lo
            p, used = _bucket_round(cand, buf, wsum, n_b, lo, hi, weight, used, room, taken)
            if p < 0:  # everything fits
                lo = hi
                break
            hi = p
            use_buckets = 2 * (hi - lo) <= n_old
            continue
        use_buckets = True
        a = key[cand[lo]]
        b = key[cand[(lo + hi) // 2]]
        c = key[cand[hi - 1]]
        if a > b:
            a, b = b, a
        if b > c:
            b = c
        piv = a if a > b else b
        ngt = 0
        neq = 0
        w_gt = 0
        w_eq = 0
        for t in range(lo, hi):
            x = cand[t]
            if key[x] > piv:
                ngt += 1
                w_gt += weight[x]
            elif key[x] == piv:
                neq += 1
                w_eq += weight[x]
        pg = lo
        pe = lo + ngt
        pl = lo + ngt + neq
        for t in range(lo, hi):
            x = cand[t]
            if key[x] > piv:
                buf[pg] = x
                pg += 1
            elif key[x] == piv:
                buf[pe] = x
                pe += 1
            else:
                buf[pl] = x
                pl += 1
        for t in range(lo, hi):
            cand[t] = buf[t]
        if used + w_gt > room:
            hi = lo + ngt
            continue
        for t in range(lo, lo + ngt):
            taken[cand[t]] = True
        used += w_gt
        if used + w_eq <= room:
            for t in range(lo + ngt, lo + ngt + neq):
                taken[cand[t]] = True
            used += w_eq
            lo = lo + ngt + neq
        else:
            lo = lo + ngt
            hi = lo + neq
            break
    rest = np.sort(cand[lo:hi])
    order = np.argsort(-key[rest], kind="mergesort")
    brk = -1
    for t in range(order.shape[0]):
        x = rest[order[t]]
        if used + weight[x] <= room:
            taken[x] = True
            used += weight[x]
        else:
            brk = x
            break
    return taken, brk, used

#: Passes of ``fit_prefix_short`` (one per element taken) before it hands over to ``fit_prefix``.
SHORT_PREFIX_PASSES = 4


@numba.njit(cache=True, nogil=True, error_model="numpy")
def fit_prefix_short(key, weight, room, buf):  # pragma: no cover - compiled
    """``fit_prefix(key, weight, room)`` (the same ``taken``, ``brk`` and ``used``), found by one pass per element
    of the prefix when the prefix is short: each pass finds the next element of the scan (the largest key below
    the last one taken, ties by lower index) and takes it if it fits. The greedy start's rounds take one or two
    offers out of thousands (the largest offers fill the room), where ``fit_prefix``'s bucket rounds cost about
    10 ns per offer. After ``SHORT_PREFIX_PASSES`` elements that fit, or with a key that is not finite, it returns
    ``fit_prefix``'s answer. ``buf``: at least ``len(key)`` booleans, the returned ``taken`` is a view of it."""
    N = key.shape[0]
    for t in range(N):
        if not (key[t] > -np.inf and key[t] < np.inf):
            return fit_prefix(key, weight, room)
    taken = buf[:N]
    taken[:] = False
    used = 0
    last_k = np.inf
    last_i = -1
    for _ in range(SHORT_PREFIX_PASSES + 1):
        # the next element of the scan: the largest key after (last_k, last_i) in (key desc, index asc) order
        bi = -1
        bk = -np.inf
        for t in range(N):
            x = key[t]
            if (x < last_k or (x == last_k and t > last_i)) and (bi < 0 or x > bk):
                bi = t
                bk = x
        if bi < 0:  # everything taken
            return taken, -1, used
        if used + weight[bi] > room:
            return taken, bi, used
        taken[bi] = True
        used += weight[bi]
        last_k = bk
        last_i = bi
    return fit_prefix(key, weight, room)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def lp_levels(hw, hv, start, room):  # pragma: no cover - compiled
    """The LP by slopes over the flat hulls (twin of ``_lp._lp_levels_numpy``): levels, slopes above /
    below them, break class and step, weight used and the largest increment."""
    n = start.shape[0] - 1
    N = 0
    for i in range(n):
        N += start[i + 1] - start[i] - 1
    key = np.empty(N, dtype=np.float64)
    slope = np.empty(N, dtype=np.float64)
    dW = np.empty(N, dtype=np.int64)
    cls = np.empty(N, dtype=np.int64)
    first = np.empty(n + 1, dtype=np.int64)
    max_inc = -np.inf
    t = 0
    for i in range(n):
        first[i] = t
        run = np.inf
        for s in range(start[i], start[i + 1] - 1):
            dw = hw[s + 1] - hw[s]
            dv = hv[s + 1] - hv[s]
            sl = dv / float(dw)
            if sl < run:
                run = sl
            key[t] = run
            slope[t] = sl
            dW[t] = dw
            cls[t] = i
            if dv > max_inc:
                max_inc = dv
            t += 1
    first[n] = t
    if N == 0:
        max_inc = 0.0
    taken, brk, used = fit_prefix(key, dW, room)
    levels = np.zeros(n, dtype=np.int64)
    for t in range(N):
        if taken[t]:
            levels[cls[t]] += 1
    up = np.full(n, -np.inf)
    down = np.full(n, np.inf)
    for i in range(n):
        for t in range(first[i], first[i + 1]):
            if t - first[i] >= levels[i]:
                if slope[t] > up[i]:
                    up[i] = slope[t]
            elif slope[t] < down[i]:
                down[i] = slope[t]
    b_cls = -1
    b_step = -1
    if brk >= 0:
        b_cls = cls[brk]
        b_step = brk - first[b_cls]
    return levels, up, down, b_cls, b_step, used, max_inc

@numba.njit(cache=True, nogil=True, error_model="numpy")
def regrets(weights, values, sizes, lp_item, alpha):  # pragma: no cover - compiled
    """Regret of every class's LP item over its other items at gradient ``alpha`` (twin of
    ``core._regrets_numpy``)."""
    n = sizes.shape[0]
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        p = lp_item[i]
        lag_lp = values[i, p] - alpha * float(weights[i, p])
        mx = -np.inf
        # the items before and after the LP item, the maximum kept without a branch (random values mispredicted
        # it: 0.37 -> 0.16 ms on weakly 10,000 x 10)
        for j in range(p):
            lg = values[i, j] - alpha * float(weights[i, j])
            mx = lg if lg > mx else mx
        for j in range(p + 1, sizes[i]):
            lg = values[i, j] - alpha * float(weights[i, j])
            mx = lg if lg > mx else mx
        r = lag_lp - mx
        out[i] = r if r > 0.0 else 0.0
    return out

@numba.njit(cache=True, nogil=True, error_model="numpy")
def greedy_fill(weights, values, sizes, srt, pos0, room, rounds):  # pragma: no cover - compiled
    """Twin of ``core._greedy_fill_numpy``: raw item positions and free capacity after the fill rounds."""
    n = sizes.shape[0]
    pos = pos0.copy()
    best_gain = np.empty(n, dtype=np.float64)
    best_pos = np.empty(n, dtype=np.int64)
    # a class without an offer in a round has none later (it keeps its item and the room only shrinks), so each
    # round after the first scans only the classes that had an offer in the round before
    active = np.arange(n)
    n_act = n
    # a class whose item did not change keeps its offer while that offer still fits: the best of a set (by gain,
    # then lighter, then lower index: an order that does not depend on the room) stays the best of a subset
    # that holds it; only a class that moved, or whose offer no longer fits, is scanned again
    fresh = np.ones(n, dtype=np.bool_)
    taken_buf = np.empty(n, dtype=np.bool_)
    # the offers of a round (the first n_off entries), allocated once: three allocations a round cost about 0.3 us
    cls = np.empty(n, dtype=np.int64)
    key = np.empty(n, dtype=np.float64)
    dW = np.empty(n, dtype=np.int64)
    for i in range(n):
        best_pos[i] = pos[i]
    for _ in range(rounds):
        if room <= 0:
            break
        n_off = 0
        for a_ in range(n_act):
            i = active[a_]
            p = pos[i]
            cw = weights[i, p]
            if not fresh[i] and weights[i, best_pos[i]] - cw <= room:
                active[n_off] = i  # its offer stands (it had one: it is active)
                n_off += 1
                continue
            fresh[i] = False
            cv = values[i, p]
            bg = 0.0
            bp = p
            if srt[i]:
                j = p + 1
                while j < sizes[i] and weights[i, j] - cw <= room:
                    g = values[i, j] - cv
                    if g > bg:
                        bg = g
                        bp = j
                    j += 1
            else:
                # branch-free (random weights mispredict the tests about half the time): the same offer
                bw = cw
                for j in range(sizes[i]):
                    wj = weights[i, j]
                    d = wj - cw
                    g = values[i, j] - cv
                    better = (d > 0) & (d <= room) & ((g > bg) | ((bp != p) & (g == bg)
                                                                  & ((wj < bw) | ((wj == bw) & (j < bp)))))
                    bg = g if better else bg
                    bp = j if better else bp
                    bw = wj if better else bw
            best_gain[i] = bg
            best_pos[i] = bp
            if bp != p:
                active[n_off] = i  # in increasing class order, as the full scan lists them
                n_off += 1
        if n_off == 0:
            break
        n_act = n_off
        for t in range(n_off):
            i = active[t]
            cls[t] = i
            dW[t] = weights[i, best_pos[i]] - weights[i, pos[i]]
            key[t] = best_gain[i] / float(dW[t])
        taken, _, used = fit_prefix_short(key[:n_off], dW[:n_off], room, taken_buf)
        for t in range(n_off):
            if taken[t]:
                pos[cls[t]] = best_pos[cls[t]]
                fresh[cls[t]] = True
        room -= used
    return pos, room


@numba.njit(cache=True, nogil=True, error_model="numpy")
def greedy_scan(cls_s, dw_s, start, room, n):  # pragma: no cover - compiled
    """Twin of ``greedy._python_scan``: take each step of a class not yet frozen if it fits, else freeze the
    class."""
    taken = np.zeros(cls_s.shape[0], dtype=np.bool_)
    frozen = np.zeros(n, dtype=np.bool_)
    for j in range(start, cls_s.shape[0]):
        c = cls_s[j]
        if frozen[c]:
            continue
        if dw_s[j] <= room:
            room -= dw_s[j]
            taken[j] = True
        else:
            frozen[c] = True
    return taken


@numba.njit(cache=True, nogil=True, error_model="numpy")
def greedy_choice(weights, values, sizes, capacity):  # pragma: no cover - compiled
    """Twin of ``greedy.greedy_positions`` over ``_lp.undominated`` in one call, for classes whose weights
    strictly increase (value tables): the raw item chosen in each class, and whether the twin applies (``False``
    when a class's weights do not strictly increase, or the lightest items do not fit: the caller takes the numpy
    path, which answers those).

    The undominated items of a class are then those worth more than every lighter one; each upgrade (the next
    undominated item) has the ratio ``dv / dw`` and the key ``min`` of the ratios up to it. The upgrades are
    scanned by decreasing key, ties in (class, upgrade) order (a stable sort, the order of ``fit_prefix`` and of
    the numpy scan after it): an upgrade is taken when it fits and its class is open, else its class closes.
    That is the numpy path's prefix (``fit_prefix``) and tail scan in one pass. O(N log N) for N items."""
    n, m = weights.shape
    mm = max(m, 1)
    und = np.empty((n, mm), dtype=np.int64)
    cnt = np.zeros(n, dtype=np.int64)
    chosen = np.empty(n, dtype=np.int64)
    steps = 0
    base_w = 0
    for i in range(n):
        k = sizes[i]
        for j in range(1, k):
            if weights[i, j] <= weights[i, j - 1]:
                return chosen, False
        c = 0
        best = -np.inf
        for j in range(k):
            if c == 0 or values[i, j] > best:
                und[i, c] = j
                c += 1
                best = values[i, j]
        cnt[i] = c
        steps += c - 1
        base_w += weights[i, und[i, 0]]
    if base_w > capacity:
        return chosen, False
    neg = np.empty(steps, dtype=np.float64)
    cls = np.empty(steps, dtype=np.int64)
    dws = np.empty(steps, dtype=np.int64)
    t = 0
    for i in range(n):
        key = np.inf
        for s in range(cnt[i] - 1):
            a, b = und[i, s], und[i, s + 1]
            dw = weights[i, b] - weights[i, a]
            ratio = (values[i, b] - values[i, a]) / dw
            if ratio < key:
                key = ratio
            neg[t] = -key
            cls[t] = i
            dws[t] = dw
            t += 1
    order = np.argsort(neg, kind="mergesort")
    level = np.zeros(n, dtype=np.int64)
    frozen = np.zeros(n, dtype=np.bool_)
    room = capacity - base_w
    for q in range(steps):
        e = order[q]
        c = cls[e]
        if frozen[c]:
            continue
        if dws[e] <= room:
            room -= dws[e]
            level[c] += 1
        else:
            frozen[c] = True
    for i in range(n):
        chosen[i] = und[i, level[i]]
    return chosen, True


@numba.njit(cache=True, nogil=True, error_model="numpy")
def lp_tail(hw, hv, start, levels, mask):  # pragma: no cover - compiled
    """Twin of ``core._LPTail``: breakpoints ``xu, yu`` of the upgrades (by decreasing slope, ties by class then
    step) and ``xd, yd`` of the downgrades (by increasing slope, ties by class then decreasing step) of the hull
    increments of the classes in ``mask``; each starts at 0. Every class's increments sorted (``_tail_orders``,
    a stable sort, so a subset's order is the full order filtered), then filtered by ``mask`` (``_tail_filter``):
    the compiled search keeps the sorted increments and filters them again at each rebuild. O(N)."""
    return _tail_filter(*_tail_orders(hw, hv, start, levels), mask)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def congruence_gcd(weights, values, sizes, mu):  # pragma: no cover - compiled
    """Twin of the scan of ``core.congruence``: with ``d_ij = v_ij - mu w_ij`` (integers), the gcd ``g`` over
    every class of ``d_ij - d_i0`` (stopping at 1) and ``sum_i (d_i0 mod g) mod g``; ``(0, 0)`` when the largest
    ``mu |w| + |v|`` reaches 2**50 (no congruence: the sums might not be exact)."""
    n, m = weights.shape
    wmax = 0
    vmax = 0.0
    for i in range(n):
        for j in range(m):
            a = weights[i, j] if weights[i, j] >= 0 else -weights[i, j]
            if a > wmax:
                wmax = a
            b = values[i, j] if values[i, j] >= 0.0 else -values[i, j]
            if b > vmax:
                vmax = b
    if mu * float(wmax) + vmax >= 2.0**50:
        return 0, 0
    g = 0
    for i in range(n):
        d0 = np.int64(values[i, 0]) - mu * weights[i, 0]
        for j in range(1, sizes[i]):
            x = np.int64(values[i, j]) - mu * weights[i, j] - d0
            if x < 0:
                x = -x
            while x:  # Euclid: g = gcd(g, x)
                g, x = x, g % x
            if g == 1:
                return 1, 0
    if g <= 1:
        return 1, 0
    acc = 0
    for i in range(n):
        acc = (acc + (np.int64(values[i, 0]) - mu * weights[i, 0]) % g) % g
    return g, acc


@numba.njit(cache=True, nogil=True, error_model="numpy")
def hull_stacks(W, V, narrow, stack, top):  # pragma: no cover - compiled
    # the compiled twin of the column sweep of _lp.upper_hull: Andrew's monotone chain class by class, the same
    # pop test in the same float64 expression, so the same stacks; classes with narrow[i] <= 1 are left as given
    n = W.shape[0]
    for i in range(n):
        t = top[i]
        for j in range(1, narrow[i]):
            wj = W[i, j]
            vj = V[i, j]
            while t >= 2:
                a = stack[i, t - 2]
                b = stack[i, t - 1]
                wa = W[i, a]
                va = V[i, a]
                wb = W[i, b]
                vb = V[i, b]
                if (vb - va) * (wj - wb) <= (vj - vb) * (wb - wa):
                    t -= 1
                else:
                    break
            stack[i, t] = j
            t += 1
        top[i] = t


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _lift(thr, mod_g, mod_r):  # pragma: no cover - compiled
    """``core.lift_threshold`` (the same expression)."""
    if mod_g <= 1:
        return thr
    return thr + float((mod_r - np.int64(np.ceil(thr))) % mod_g)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _kth_smallest(key, K):  # pragma: no cover - compiled
    """``np.partition(key, K - 1)[K - 1]`` (``1 <= K <= len(key)``): the ``K``-th smallest key, by a max-heap of
    the ``K`` smallest keys seen so far (one comparison for most keys once it is full: O(n + K log K) on the
    core's orders, where ``np.partition`` copied and partitioned the whole array). Keys with NaN take
    ``np.partition`` (which sorts NaN last)."""
    n = key.shape[0]
    heap = np.empty(K, dtype=np.float64)
    size = 0
    for t in range(n):
        x = key[t]
        if x != x:
            return np.partition(key, K - 1)[K - 1]
        if size < K:
            # sift up
            c = size
            size += 1
            while c > 0:
                p = (c - 1) >> 1
                if heap[p] < x:
                    heap[c] = heap[p]
                    c = p
                else:
                    break
            heap[c] = x
        elif x < heap[0]:
            # replace the largest and sift down
            c = 0
            while True:
                a = 2 * c + 1
                if a >= K:
                    break
                b = a + 1
                if b < K and heap[b] > heap[a]:
                    a = b
                if heap[a] > x:
                    heap[c] = heap[a]
                    c = a
                else:
                    break
            heap[c] = x
    return heap[0]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _lazy_extend(cls, key, st, prefix):  # pragma: no cover - compiled
    """``core._LazyOrder._extend``: the prefix of the classes by increasing key (ties: lower class first) that
    holds the ``st[1]`` smallest keys and every key tied with the last; ``st = [prefix length, want]``."""
    n = cls.shape[0]
    K = min(st[1], n)
    st[1] *= 4
    if n <= K:
        o = np.argsort(key, kind="mergesort")  # cls increases with the position: ties by lower class
        for t in range(n):
            prefix[t] = cls[o[t]]
        st[0] = n
        return
    thr = _kth_smallest(key, K)
    c = 0
    for t in range(n):
        if key[t] <= thr:
            c += 1
    sk = np.empty(c, dtype=np.float64)
    sc = np.empty(c, dtype=np.int64)
    c = 0
    for t in range(n):
        if key[t] <= thr:
            sk[c] = key[t]
            sc[c] = cls[t]
            c += 1
    o = np.argsort(sk, kind="mergesort")
    for t in range(c):
        prefix[t] = sc[o[t]]
    st[0] = c


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _lazy_head(cls, key, st, prefix, member):  # pragma: no cover - compiled
    """``core._Lists._head``: the first class of the order not in the core (``-1`` when none); ``st = [prefix
    length, want, read pointer]``."""
    c = _lazy_head_sorted(st, prefix, member)
    if c == -2:
        c = _lazy_head_extend(cls, key, st, prefix, member)
    return c


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _lazy_head_sorted(st, prefix, member):  # pragma: no cover - compiled
    """``_lazy_head`` within the sorted prefix: the head, or ``-2`` when the read pointer passes the prefix (the
    caller then calls ``_lazy_head_extend``). No call here and one exit where every array is read: numba counts no
    reference to them (a call that may raise made it count each, an atomic increment and decrement, and the search
    reads a head once a step)."""
    p = st[2]
    while p < st[0] and member[prefix[p]]:
        p += 1
    st[2] = p
    c = prefix[p] if p < st[0] else -2
    return c + 0 * (prefix.shape[0] + member.shape[0])  # (every array read here)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _lazy_head_extend(cls, key, st, prefix, member):  # pragma: no cover - compiled
    """``_lazy_head`` from the read pointer, extending the prefix as it reads past it."""
    n = cls.shape[0]
    p = st[2]
    while True:
        if p >= n:
            st[2] = p
            return -1
        while p >= st[0]:
            _lazy_extend(cls, key, st, prefix)
        c = prefix[p]
        if not member[c]:
            st[2] = p
            return c
        p += 1


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _search_orders(hstart, lam_up, lam_dn, regret):  # pragma: no cover - compiled
    """The lazy orders of ``search``'s lists (upgrade, downgrade, regret: classes, keys, states, prefixes), built once
    per solve: a run reads them from the start (read pointers reset by ``_search_run``) and extends their sorted
    prefixes only as far as it reads, so later runs reuse the prefixes the earlier ones sorted (a run of a weakly or
    uncorrelated 100 x 10 search spent about 5 microseconds sorting them)."""
    n = hstart.shape[0] - 1
    n_up = 0
    n_dn = 0
    n_rg = 0
    for i in range(n):
        if hstart[i + 1] - hstart[i] > 1:
            n_rg += 1
            if np.isfinite(lam_up[i]):
                n_up += 1
            if np.isfinite(lam_dn[i]):
                n_dn += 1
    up_c = np.empty(n_up, dtype=np.int64)
    up_k = np.empty(n_up, dtype=np.float64)
    dn_c = np.empty(n_dn, dtype=np.int64)
    dn_k = np.empty(n_dn, dtype=np.float64)
    rg_c = np.empty(n_rg, dtype=np.int64)
    rg_k = np.empty(n_rg, dtype=np.float64)
    a_ = 0
    b_ = 0
    c_ = 0
    for i in range(n):
        if hstart[i + 1] - hstart[i] > 1:
            rg_c[c_] = i
            rg_k[c_] = regret[i]
            c_ += 1
            if np.isfinite(lam_up[i]):
                up_c[a_] = i
                up_k[a_] = -lam_up[i]
                a_ += 1
            if np.isfinite(lam_dn[i]):
                dn_c[b_] = i
                dn_k[b_] = lam_dn[i]
                b_ += 1
    up_p = np.empty(max(n_up, 1), dtype=np.int64)
    dn_p = np.empty(max(n_dn, 1), dtype=np.int64)
    rg_p = np.empty(max(n_rg, 1), dtype=np.int64)
    up_s = np.array([0, 64, 0])
    dn_s = np.array([0, 64, 0])
    rg_s = np.array([0, 64, 0])
    return up_c, up_k, up_s, up_p, dn_c, dn_k, dn_s, dn_p, rg_c, rg_k, rg_s, rg_p


@numba.njit(cache=True, nogil=True, error_model="numpy")
def search(weights, values, sizes, cap, base_w, base_v, w0, v0, lp_pos, frac_class, alpha, tol, mod_g, mod_r, z0,
           lam_up, lam_dn, regret, hw, hv, hstart, levels, max_bytes, link_share, tail_min, tail_growth,
           bytes_per_cand, item_bytes, budget, z_stop):  # pragma: no cover - compiled
    """Phase 3 of ``core._search`` as one compiled loop (the same steps, in the same order, by the same kernels,
    so the same states, incumbent and counters). Returns ``(code, pos, has_state, stats)``: ``code`` 0 fathomed,
    1 bound, 2 congruence, 3 exhausted, -1 handed back (a memory test or the work ``budget`` would have to drop
    the links or stop: the caller runs the Python loop, which handles those, from the start); ``pos`` the
    incumbent state's choice (raw items, every class) when ``has_state``; ``stats`` = classes, states,
    max_states, candidates. ``z_stop``: a proven upper bound of the optimum (``inf``: none); the run ends, code 1,
    after the step whose incumbent comes within ``tol`` of it (``core._expand``'s rule)."""
    orders = _search_orders(hstart, lam_up, lam_dn, regret)
    return _search_run(weights, values, sizes, cap, base_w, base_v, w0, v0, lp_pos, frac_class, alpha, tol, mod_g,
                       mod_r, z0, lam_up, lam_dn, regret, hw, hv, hstart, levels, max_bytes, link_share, tail_min,
                       tail_growth, bytes_per_cand, item_bytes, budget, orders, z_stop)


# indices of the search run's scalar state in ``ist`` (``_run_steps`` keeps it there between its calls)
_I_S = 0  # states
_I_SIDE = 1  # which buffer pair holds them: 0 aW, aV; 1 bW, bV
_I_NORD = 2  # classes in the core
_I_A = 3  # the three lists' heads
_I_B = 4
_I_C = 5
_I_HIST = 6  # bytes of the links
_I_WORK = 7
_I_INC_STEP = 8  # the incumbent state: step, parent, raw item (-1: none)
_I_INC_PAR = 9
_I_INC_ITEM = 10
_I_CODE = 11
_I_RESUME = 12  # where the step resumes: 0 its start, 1 after the tail, 2 at the links' copy
_I_I = 13  # the entering class, its kept items, the step's new states
_I_K = 14
_I_M = 15
_I_HAS_TAIL = 16
_I_TAIL_CORE = 17
_N_IST = 18

#: The first size of a search run's buffers (states, a step's candidates, links): each growth returns from
#: ``_run_steps`` (its arrays are replaced), about a microsecond each; from 256 entries a weakly 100 x 10 run of
#: 6,000 state-item pairs grew them 10 times
_RUN_BUFFER = 4096

#: ``_run_steps``'s returns: the run ended (its code in ``ist``), hand it back, build the tail, grow the step's
#: buffers, grow the links
_EV_DONE = 0
_EV_BACK = 1
_EV_TAIL = 2
_EV_GROW = 3
_EV_LINKS = 4


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _search_run(weights, values, sizes, cap, base_w, base_v, w0, v0, lp_pos, frac_class, alpha, tol, mod_g, mod_r,
                z0, lam_up, lam_dn, regret, hw, hv, hstart, levels, max_bytes, link_share, tail_min, tail_growth,
                bytes_per_cand, item_bytes, budget, orders, z_stop):  # pragma: no cover - compiled
    """``search`` on the lazy orders of ``_search_orders`` (read from their start).

    The steps run in ``_run_steps``, whose arrays never change within a call; it returns here where an array
    must be replaced (the tail built or rebuilt, a step's buffers or the links grown; the step then resumes where
    it stopped) and at the end. Replacing arrays inside the loop made numba count references on each of them
    every step (an atomic increment and decrement through a call each: about 0.2 microseconds a step, half the
    time of a weakly 100 x 10 search's small steps)."""
    n = sizes.shape[0]
    up_c, up_k, up_s, up_p, dn_c, dn_k, dn_s, dn_p, rg_c, rg_k, rg_s, rg_p = orders
    up_s[2] = 0
    dn_s[2] = 0
    rg_s[2] = 0
    member = np.zeros(n, dtype=np.bool_)
    stats = np.zeros(4, dtype=np.int64)
    stats[2] = 1
    pos = lp_pos.copy()
    empty = np.zeros(0, dtype=np.float64)
    xu = empty
    yu = empty
    xd = empty
    yd = empty
    t_cu = np.zeros(0, dtype=np.int64)
    t_wu = np.zeros(0, dtype=np.int64)
    t_vu = np.zeros(0, dtype=np.float64)
    t_cd = np.zeros(0, dtype=np.int64)
    t_wd = np.zeros(0, dtype=np.int64)
    t_vd = np.zeros(0, dtype=np.float64)
    order = np.empty(n, dtype=np.int64)
    # links between states: flat parents and items with per-step offsets
    link_par = np.empty(_RUN_BUFFER, dtype=np.int64)
    link_itm = np.empty(_RUN_BUFFER, dtype=np.int64)
    link_off = np.zeros(n + 1, dtype=np.int64)
    # the states alternate between two buffer pairs (a step reads one and writes the other); one step's parents and
    # items, the pairwise merges' scratch and the states' Lagrangian values, reused (grown when a step needs more)
    aW = np.empty(_RUN_BUFFER, dtype=np.int64)
    aV = np.empty(_RUN_BUFFER, dtype=np.float64)
    bW = np.empty(_RUN_BUFFER, dtype=np.int64)
    bV = np.empty(_RUN_BUFFER, dtype=np.float64)
    bP = np.empty(_RUN_BUFFER, dtype=np.int64)
    bI = np.empty(_RUN_BUFFER, dtype=np.int64)
    yW = np.empty(_RUN_BUFFER, dtype=np.int64)
    yV = np.empty(_RUN_BUFFER, dtype=np.float64)
    yP = np.empty(_RUN_BUFFER, dtype=np.int64)
    yI = np.empty(_RUN_BUFFER, dtype=np.int64)
    lagS = np.empty(_RUN_BUFFER, dtype=np.float64)
    # the entering class's selection and its scratch, reused
    mm = max(weights.shape[1], 1)
    s_order = np.empty(mm, dtype=np.int64)
    s_cw = np.empty(mm, dtype=np.int64)
    s_cv = np.empty(mm, dtype=np.float64)
    s_ci = np.empty(mm, dtype=np.int64)
    s_hp = np.empty(mm, dtype=np.int64)
    s_cand = np.empty(mm, dtype=np.int64)
    s_dw = np.empty(mm, dtype=np.int64)
    s_dv = np.empty(mm, dtype=np.float64)
    aW[0] = w0  # the root state: the caller's sums (numpy's pairwise float sum)
    aV[0] = v0
    ist = np.zeros(_N_IST, dtype=np.int64)
    ist[_I_S] = 1
    ist[_I_INC_STEP] = -1
    ist[_I_INC_PAR] = -1
    ist[_I_INC_ITEM] = -1
    ist[_I_CODE] = -1
    # the lists' heads change only when a class enters the core, and only the list whose head entered: they are
    # read once here and after each entry for that list alone (six reads a step cost about 0.3 microseconds)
    ist[_I_A] = _lazy_head(up_c, up_k, up_s, up_p, member)
    ist[_I_B] = _lazy_head(dn_c, dn_k, dn_s, dn_p, member)
    ist[_I_C] = _lazy_head(rg_c, rg_k, rg_s, rg_p, member)
    fst = np.empty(1, dtype=np.float64)
    fst[0] = z0
    while True:
        ev = _run_steps(weights, values, sizes, cap, base_w, base_v, frac_class, alpha, tol, mod_g, mod_r, lam_up,
                        lam_dn, regret, max_bytes, link_share, tail_min, tail_growth, bytes_per_cand, item_bytes,
                        budget, z_stop, up_c, up_k, up_s, up_p, dn_c, dn_k, dn_s, dn_p, rg_c, rg_k, rg_s, rg_p,
                        member, order, aW, aV, bW, bV, bP, bI, yW, yV, yP, yI, lagS, s_order, s_cw, s_cv, s_ci, s_hp,
                        s_cand, s_dw, s_dv, link_par, link_itm, link_off, xu, yu, xd, yd, stats, ist, fst)
        if ev == _EV_DONE:
            break
        if ev == _EV_BACK:
            return -1, pos, False, stats
        if ev == _EV_TAIL:
            mask = np.empty(n, dtype=np.bool_)
            for q in range(n):
                mask[q] = not member[q]
            if ist[_I_HAS_TAIL] == 0:  # the increments sorted once; each rebuild filters them (lp_tail's arrays)
                t_cu, t_wu, t_vu, t_cd, t_wd, t_vd = _tail_orders(hw, hv, hstart, levels)
            xu, yu, xd, yd = _tail_filter(t_cu, t_wu, t_vu, t_cd, t_wd, t_vd, mask)
            ist[_I_HAS_TAIL] = 1
            ist[_I_TAIL_CORE] = ist[_I_NORD]
        elif ev == _EV_GROW:
            S = ist[_I_S]
            Sk = S * ist[_I_K]
            if Sk > bP.shape[0]:
                size = max(Sk, 2 * bP.shape[0])
                bP = np.empty(size, dtype=np.int64)
                bI = np.empty(size, dtype=np.int64)
                yW = np.empty(size, dtype=np.int64)
                yV = np.empty(size, dtype=np.float64)
                yP = np.empty(size, dtype=np.int64)
                yI = np.empty(size, dtype=np.int64)
            if lagS.shape[0] < S:
                lagS = np.empty(max(S, 2 * lagS.shape[0]), dtype=np.float64)
            if ist[_I_SIDE] == 0:  # the pair that the states do not use (the one of the step before)
                if Sk > bW.shape[0]:
                    size = max(Sk, 2 * bW.shape[0])
                    bW = np.empty(size, dtype=np.int64)
                    bV = np.empty(size, dtype=np.float64)
            elif Sk > aW.shape[0]:
                size = max(Sk, 2 * aW.shape[0])
                aW = np.empty(size, dtype=np.int64)
                aV = np.empty(size, dtype=np.float64)
        else:  # _EV_LINKS
            o0 = link_off[ist[_I_NORD] - 1]
            size = max(2 * link_par.shape[0], o0 + ist[_I_M])
            np_ = np.empty(size, dtype=np.int64)
            ni_ = np.empty(size, dtype=np.int64)
            np_[:o0] = link_par[:o0]
            ni_[:o0] = link_itm[:o0]
            link_par = np_
            link_itm = ni_
    n_order = ist[_I_NORD]
    stats[0] = n_order
    inc_step = ist[_I_INC_STEP]
    has_state = inc_step >= 0
    if has_state:
        pos[order[inc_step]] = ist[_I_INC_ITEM]
        idx = ist[_I_INC_PAR]
        for s in range(inc_step - 1, -1, -1):
            pos[order[s]] = link_itm[link_off[s] + idx]
            idx = link_par[link_off[s] + idx]
    return ist[_I_CODE], pos, has_state, stats


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _run_steps(weights, values, sizes, cap, base_w, base_v, frac_class, alpha, tol, mod_g, mod_r, lam_up, lam_dn,
               regret, max_bytes, link_share, tail_min, tail_growth, bytes_per_cand, item_bytes, budget, z_stop, up_c,
               up_k, up_s, up_p, dn_c, dn_k, dn_s, dn_p, rg_c, rg_k, rg_s, rg_p, member, order, aW, aV, bW, bV, bP,
               bI, yW, yV, yP, yI, lagS, s_order, s_cw, s_cv, s_ci, s_hp, s_cand, s_dw, s_dv, link_par, link_itm,
               link_off, xu, yu, xd, yd, stats, ist, fst):  # pragma: no cover - compiled
    """The steps of ``_search_run`` (``core._expand``'s loop) from the state in ``ist`` and ``fst`` (the incumbent
    value) until the run ends (``_EV_DONE``, its code in ``ist``), must be handed back (``_EV_BACK``), or needs an
    array replaced (``_EV_TAIL``, ``_EV_GROW``, ``_EV_LINKS``: the caller replaces it and calls again, and the step
    resumes where it stopped: after the tail, or at the links' copy). The states are the first ``S`` entries of
    ``aW, aV`` or of ``bW, bV`` (``ist[_I_SIDE]``): no array is sliced or reassigned here, so numba counts no
    reference in the loop (both pairs are passed to each kernel call by their own call site)."""
    S = ist[_I_S]
    side = ist[_I_SIDE]
    n_order = ist[_I_NORD]
    a = ist[_I_A]
    b = ist[_I_B]
    c = ist[_I_C]
    hist = ist[_I_HIST]
    work = ist[_I_WORK]
    inc_step = ist[_I_INC_STEP]
    inc_parent = ist[_I_INC_PAR]
    inc_item = ist[_I_INC_ITEM]
    code = ist[_I_CODE]
    resume = ist[_I_RESUME]
    i = ist[_I_I]
    k = ist[_I_K]
    m = ist[_I_M]
    has_tail = ist[_I_HAS_TAIL] != 0
    tail_core = ist[_I_TAIL_CORE]
    z = fst[0]
    ev = _EV_DONE
    while True:
        if resume == 0:
            if S == 0:
                code = 0
                break
            l_up = lam_up[a] if a >= 0 else 0.0
            l_dn = lam_dn[b] if b >= 0 else np.inf
            r_nx = regret[c] if c >= 0 else np.inf
            thr = z + tol
            if side == 0:
                ub_max, need_up, need_dn, lag_ub = _scan_n(aW, aV, S, cap, alpha, l_up, l_dn, r_nx, xu, yu, xd, yd,
                                                           thr)
            else:
                ub_max, need_up, need_dn, lag_ub = _scan_n(bW, bV, S, cap, alpha, l_up, l_dn, r_nx, xu, yu, xd, yd,
                                                           thr)
            thr_lag = _lift(thr, mod_g, mod_r)
            if n_order == 0:
                i = frac_class
            else:
                if ub_max <= thr:
                    code = 1
                    break
                if lag_ub <= thr_lag:
                    code = 2
                    break
                need_up = a >= 0 and need_up
                need_dn = b >= 0 and need_dn
                if need_up and need_dn:
                    d_up = alpha - l_up
                    d_dn = l_dn - alpha
                    i = a if d_up < d_dn or (d_up == d_dn and n_order % 2 == 1) else b
                elif need_up or need_dn:
                    i = a if need_up else b
                else:
                    i = a if a >= 0 else b
                    if i < 0:
                        i = c
                if i < 0:
                    code = 3
                    break
            if budget >= 0 and work > budget:
                ev = _EV_BACK
                break
            if alpha >= 0.0:
                k = _select_survivors(weights, values, i, sizes[i], base_w[i], base_v[i], alpha, lag_ub, thr_lag,
                                      s_cw, s_cv, s_ci, s_cand, s_dw, s_dv)
            else:
                k = _select_into(weights, values, i, sizes[i], base_w[i], base_v[i], alpha, lag_ub, thr_lag, s_order,
                                 s_cw, s_cv, s_ci, s_hp, s_cand, s_dw, s_dv)
            member[i] = True
            order[n_order] = i
            n_order += 1
            if a == i:
                a = _lazy_head_sorted(up_s, up_p, member)
                if a == -2:
                    a = _lazy_head_extend(up_c, up_k, up_s, up_p, member)
            if b == i:
                b = _lazy_head_sorted(dn_s, dn_p, member)
                if b == -2:
                    b = _lazy_head_extend(dn_c, dn_k, dn_s, dn_p, member)
            if c == i:
                c = _lazy_head_sorted(rg_s, rg_p, member)
                if c == -2:
                    c = _lazy_head_extend(rg_c, rg_k, rg_s, rg_p, member)
            resume = 1
            if S * k >= tail_min and (not has_tail or n_order >= tail_growth * tail_core):
                ev = _EV_TAIL
                break
        t = n_order - 1
        if resume == 1:
            l_up = lam_up[a] if a >= 0 else 0.0
            l_dn = lam_dn[b] if b >= 0 else np.inf
            r_nx = regret[c] if c >= 0 else np.inf
            thr_lag = _lift(z + tol, mod_g, mod_r)
            n_cand = S * k
            if hist + 16 * S + bytes_per_cand * n_cand > link_share * max_bytes:
                if side == 0:
                    n_cand = _count_n(aW, aV, S, s_dw, s_dv, k, cap, thr_lag, alpha)
                else:
                    n_cand = _count_n(bW, bV, S, s_dw, s_dv, k, cap, thr_lag, alpha)
                if hist + 16 * S + bytes_per_cand * n_cand > link_share * max_bytes:
                    ev = _EV_BACK
                    break
            if 16 * S + bytes_per_cand * n_cand > max_bytes:
                if n_cand == S * k:
                    if side == 0:
                        n_cand = _count_n(aW, aV, S, s_dw, s_dv, k, cap, thr_lag, alpha)
                    else:
                        n_cand = _count_n(bW, bV, S, s_dw, s_dv, k, cap, thr_lag, alpha)
                if 16 * S + bytes_per_cand * n_cand > max_bytes:
                    ev = _EV_BACK
                    break
            if S * k > bP.shape[0] or lagS.shape[0] < S or S * k > (bW.shape[0] if side == 0 else aW.shape[0]):
                ev = _EV_GROW
                break
            if side == 0:
                m, best_v, best_p, best_j = _step_merge_n(aW, aV, S, s_dw, s_dv, k, cap, z, tol, alpha, l_up, l_dn,
                                                          r_nx, xu, yu, xd, yd, mod_g, mod_r, bW, bV, bP, bI, yW, yV,
                                                          yP, yI, lagS)
            else:
                m, best_v, best_p, best_j = _step_merge_n(bW, bV, S, s_dw, s_dv, k, cap, z, tol, alpha, l_up, l_dn,
                                                          r_nx, xu, yu, xd, yd, mod_g, mod_r, aW, aV, bP, bI, yW, yV,
                                                          yP, yI, lagS)
            if best_p >= 0 and best_v > z:
                z = best_v
                inc_step = t
                inc_parent = best_p
                inc_item = s_cand[best_j]
            resume = 2
        # resume == 2: the step's links (parents bP, items bI) into the flat links
        o0 = link_off[t]
        if o0 + m > link_par.shape[0]:
            ev = _EV_LINKS
            break
        for q in range(m):
            link_par[o0 + q] = bP[q]
            link_itm[o0 + q] = s_cand[bI[q]]
        link_off[t + 1] = o0 + m
        hist += m * (4 if S < 2**31 else 8) + m * item_bytes
        stats[1] += m
        if m > stats[2]:
            stats[2] = m
        stats[3] += S * k
        work += S * k * k + S  # the step's merge and the scan of the states
        S = m
        side = 1 - side
        resume = 0
        if z_stop - z <= tol:  # the incumbent reaches a proven bound: optimal, no state can beat it by tol
            code = 1
            break
    ist[_I_S] = S
    ist[_I_SIDE] = side
    ist[_I_NORD] = n_order
    ist[_I_A] = a
    ist[_I_B] = b
    ist[_I_C] = c
    ist[_I_HIST] = hist
    ist[_I_WORK] = work
    ist[_I_INC_STEP] = inc_step
    ist[_I_INC_PAR] = inc_parent
    ist[_I_INC_ITEM] = inc_item
    ist[_I_CODE] = code
    ist[_I_RESUME] = resume
    ist[_I_I] = i
    ist[_I_K] = k
    ist[_I_M] = m
    fst[0] = z
    return ev


@numba.njit(cache=True, nogil=True, error_model="numpy")
def front_checks(weights, values, sizes):  # pragma: no cover - compiled
    """The front door's scans in one pass (twin of ``MCKPProblem.min_weight`` and the scans of
    ``mckp._check_numbers``): the sum of the lightest items' weights, each class's largest ``|value|`` (with
    0.0 for its padding, NaN when it holds one), the sum of the heaviest items' weights (with 0 for padding),
    both int64 sums wrapping as numpy's do, and the float sum of the largest ``|value|`` (numpy's, ``np_sum``)."""
    n, m = weights.shape
    top = np.empty(n, dtype=np.float64)
    light = 0
    heavy = 0
    big = np.iinfo(np.int64).max
    for i in range(n):
        k = sizes[i]
        t = 0.0
        lo = big
        hi = 0 if k < m else weights[i, 0]
        for j in range(k):
            a = abs(values[i, j])
            if a != a:
                t = a
                break
            if a > t:
                t = a
        for j in range(k):
            x = weights[i, j]
            if x < lo:
                lo = x
            if x > hi:
                hi = x
        top[i] = t
        light += lo
        heavy += hi
    return light, top, heavy, np_sum(top)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _tail_orders(hw, hv, start, levels):  # pragma: no cover - compiled
    """The increments of ``lp_tail`` over every class, listed and sorted as it lists and sorts them (upgrades by
    decreasing slope, downgrades by increasing slope, both stable over the listing): a stable sort of a subset of
    the listing is the sorted full listing filtered, so ``_tail_filter`` gives ``lp_tail``'s arrays for any mask
    in O(N) once this O(N log N) order is known. Returns the sorted upgrades' (class, weight, value) and the
    sorted downgrades' (class, weight, value)."""
    n = start.shape[0] - 1
    nu = 0
    nd = 0
    for i in range(n):
        c = start[i + 1] - start[i] - 1
        up = c - levels[i]
        nu += up
        nd += c - up
    su = np.empty(nu, dtype=np.float64)
    cu = np.empty(nu, dtype=np.int64)
    wu = np.empty(nu, dtype=np.int64)
    vu = np.empty(nu, dtype=np.float64)
    sd = np.empty(nd, dtype=np.float64)
    cd = np.empty(nd, dtype=np.int64)
    wd = np.empty(nd, dtype=np.int64)
    vd = np.empty(nd, dtype=np.float64)
    a = 0
    b = 0
    for i in range(n):
        s0 = start[i]
        c = start[i + 1] - s0 - 1
        lv = levels[i]
        for j in range(lv, c):
            dw = hw[s0 + j + 1] - hw[s0 + j]
            dv = hv[s0 + j + 1] - hv[s0 + j]
            su[a] = -(dv / dw)
            cu[a] = i
            wu[a] = dw
            vu[a] = dv
            a += 1
        for j in range(lv - 1, -1, -1):
            dw = hw[s0 + j + 1] - hw[s0 + j]
            dv = hv[s0 + j + 1] - hv[s0 + j]
            sd[b] = dv / dw
            cd[b] = i
            wd[b] = dw
            vd[b] = dv
            b += 1
    ou = _stable_argsort(su)
    od = _stable_argsort(sd)
    return cu[ou], wu[ou], vu[ou], cd[od], wd[od], vd[od]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _stable_argsort(key):  # pragma: no cover - compiled
    """``np.argsort(key, kind="mergesort")`` for keys without NaN (-0.0 and 0.0 alike, as there): a least
    significant digit radix sort (stable, so ties stay in index order) of the keys' order-preserving 64-bit images,
    six passes of 11 bits, a pass skipped when every key has the same digit. O(N); a comparison sort of 30,000 keys
    took about 1.4 ms here."""
    n = key.shape[0]
    u = np.empty(n, dtype=np.uint64)
    for t in range(n):
        x = key[t]
        if x == 0.0:
            x = 0.0
        b = np.int64(0)
        b = np.float64(x).view(np.int64)
        if b >= 0:
            u[t] = np.uint64(b) ^ np.uint64(0x8000000000000000)
        else:
            u[t] = ~np.uint64(b)
    o = np.arange(n)
    o2 = np.empty(n, dtype=np.int64)
    cnt = np.empty(2048, dtype=np.int64)
    for p in range(6):
        shift = np.uint64(11 * p)
        cnt[:] = 0
        for t in range(n):
            cnt[np.int64((u[t] >> shift) & np.uint64(2047))] += 1
        one = False
        for d in range(2048):
            if cnt[d] == n:
                one = True
                break
        if one:
            continue
        acc = 0
        for d in range(2048):
            c = cnt[d]
            cnt[d] = acc
            acc += c
        for t in range(n):
            x = o[t]
            d = np.int64((u[x] >> shift) & np.uint64(2047))
            o2[cnt[d]] = x
            cnt[d] += 1
        o, o2 = o2, o
    return o


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _tail_filter(cu, wu, vu, cd, wd, vd, mask):  # pragma: no cover - compiled
    """``lp_tail``'s breakpoints for the classes in ``mask`` from the sorted increments of ``_tail_orders``."""
    nu = 0
    for t in range(cu.shape[0]):
        if mask[cu[t]]:
            nu += 1
    nd = 0
    for t in range(cd.shape[0]):
        if mask[cd[t]]:
            nd += 1
    xu = np.empty(nu + 1, dtype=np.float64)
    yu = np.empty(nu + 1, dtype=np.float64)
    xd = np.empty(nd + 1, dtype=np.float64)
    yd = np.empty(nd + 1, dtype=np.float64)
    xu[0] = 0.0
    yu[0] = 0.0
    a = 0
    for t in range(cu.shape[0]):
        if mask[cu[t]]:
            xu[a + 1] = xu[a] + float(wu[t])
            yu[a + 1] = yu[a] + vu[t]
            a += 1
    xd[0] = 0.0
    yd[0] = 0.0
    b = 0
    for t in range(cd.shape[0]):
        if mask[cd[t]]:
            xd[b + 1] = xd[b] + float(wd[t])
            yd[b + 1] = yd[b] + vd[t]
            b += 1
    return xu, yu, xd, yd


@numba.njit(cache=True, nogil=True, error_model="numpy")
def prepare_lp(weights, values, sizes, capacity):  # pragma: no cover - compiled
    """``_prepare_lp`` with the regrets (``with_regret``: the regrets at the break gradient are computed too,
    else left empty for the caller to compute when it needs them)."""
    return _prepare_lp(weights, values, sizes, capacity, True)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _prepare_lp(weights, values, sizes, capacity, with_regret):  # pragma: no cover - compiled
    """``prepare_hulls`` and the LP by slopes over the hulls (``lp_levels``) in one call, with what the core reads
    of the LP's integral part (``_lp.lp_flat`` and ``core._prepare``): the LP items (raw indices), their weight
    sum, their hull values (for the caller's numpy sum), their weights and values in the problem, and the
    gradients ``lam_up`` / ``lam_dn`` (the slopes above / below, ``-inf`` / ``+inf`` where not finite). When the
    lightest vertices do not fit (``feasible`` false) the LP parts are left empty."""
    start, items, hw, hv, srt, vmax, integral = prepare_hulls(weights, values, sizes)
    n = sizes.shape[0]
    base0 = 0
    for i in range(n):
        base0 += hw[start[i]]
    feasible = base0 <= capacity
    room = capacity - base0 if feasible else 0
    lv, up, down, b_cls, b_step, used, max_inc = lp_levels(hw, hv, start, room)
    lp_pos = np.empty(n, dtype=np.int64)
    hv_at = np.empty(n, dtype=np.float64)
    base_w = np.empty(n, dtype=np.int64)
    base_v = np.empty(n, dtype=np.float64)
    lam_up = np.empty(n, dtype=np.float64)
    lam_dn = np.empty(n, dtype=np.float64)
    weight = 0
    for i in range(n):
        a = start[i] + lv[i]
        q = items[a]
        lp_pos[i] = q
        weight += hw[a]
        hv_at[i] = hv[a]
        base_w[i] = weights[i, q]
        base_v[i] = values[i, q]
        lam_up[i] = up[i] if np.isfinite(up[i]) else -np.inf
        lam_dn[i] = down[i] if np.isfinite(down[i]) else np.inf
    # the regrets at the break gradient when there is a search (alpha as the caller computes it: the same doubles)
    if feasible and b_cls >= 0 and with_regret:
        s = start[b_cls] + b_step
        alpha = (hv[s + 1] - hv[s]) / float(hw[s + 1] - hw[s])
        regret = regrets(weights, values, sizes, lp_pos, alpha)
    else:
        regret = np.empty(0, dtype=np.float64)
    return (feasible, start, items, hw, hv, srt, vmax, integral, room, lv, up, down, b_cls, b_step, used, max_inc,
            lp_pos, weight, hv_at, base_w, base_v, lam_up, lam_dn, regret)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _pairwise_block(a, lo, n):  # pragma: no cover - compiled
    """numpy's ``pairwise_sum`` of ``a[lo:lo + n]`` for ``n <= 128``: a plain sum below 8 terms, else eight
    accumulators added as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))`` and the rest after them."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0 = a[lo]
    r1 = a[lo + 1]
    r2 = a[lo + 2]
    r3 = a[lo + 3]
    r4 = a[lo + 4]
    r5 = a[lo + 5]
    r6 = a[lo + 6]
    r7 = a[lo + 7]
    i = 8
    end = n - n % 8
    while i < end:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _pairwise(a):  # pragma: no cover - compiled
    """numpy's pairwise summation of a 1-D float64 array (its ``pairwise_sum``: blocks of at most 128 terms by
    ``_pairwise_block``, longer runs halved at a multiple of 8 and the halves' sums added), so the same rounding.
    The halving runs on an explicit stack: a cached numba function that calls itself crashes when it is loaded
    from the disk cache in a later process."""
    n = a.shape[0]
    if n <= 128:
        return _pairwise_block(a, 0, n)
    f_lo = np.empty(64, dtype=np.int64)  # frames: a run and how many of its halves are summed (depth < 64)
    f_n = np.empty(64, dtype=np.int64)
    f_st = np.empty(64, dtype=np.int64)
    vals = np.empty(65, dtype=np.float64)
    top = 0
    nv = 0
    f_lo[0] = 0
    f_n[0] = n
    f_st[0] = 0
    top = 1
    while top > 0:
        lo = f_lo[top - 1]
        m = f_n[top - 1]
        if m <= 128:
            vals[nv] = _pairwise_block(a, lo, m)
            nv += 1
            top -= 1
            continue
        m2 = m // 2
        m2 -= m2 % 8
        st = f_st[top - 1]
        if st == 0:
            f_st[top - 1] = 1
            f_lo[top] = lo
            f_n[top] = m2
            f_st[top] = 0
            top += 1
        elif st == 1:
            f_st[top - 1] = 2
            f_lo[top] = lo + m2
            f_n[top] = m - m2
            f_st[top] = 0
            top += 1
        else:
            vals[nv - 2] = vals[nv - 2] + vals[nv - 1]
            nv -= 1
            top -= 1
    return vals[0]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def np_sum(a):  # pragma: no cover - compiled
    """``float(a.sum())`` of a 1-D float64 array, bit for bit as numpy sums it (its reduction starts from the
    identity 0.0 and adds the pairwise sum of the whole array), so that a compiled phase can set the same
    tolerance and compare the same values as the numpy lines it replaces."""
    return 0.0 + _pairwise(a)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _value_of(values, pos):  # pragma: no cover - compiled
    """``float(values[np.arange(n), pos].sum())``: the chosen values in class order, summed as numpy does."""
    n = pos.shape[0]
    got = np.empty(n, dtype=np.float64)
    for i in range(n):
        got[i] = values[i, pos[i]]
    return np_sum(got)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _face_window(first, md, zc, zkey, nz, target, max_classes):  # pragma: no cover - compiled
    """The face fills' classes and window (twin of ``core._face_window``): ``o``, the order of the ``nz`` classes
    with a move (``zc``) by their smallest move (``zkey``; ties by class, the listing's order), ``nc`` of them
    taken (at most ``max_classes``); ``half``, the window's reach either side (offsets ``-half .. target +
    half``: at least ``target``, 64 and the largest move taken; moves of class ``i`` are ``md[first[i]:first[i +
    1]]``); ``nbits``, the window's width."""
    o = np.argsort(zkey[:nz], kind="mergesort")
    nc = min(nz, max_classes)
    half = max(target, 64)
    for t in range(nc):
        i = zc[o[t]]
        for e in range(first[i], first[i + 1]):
            ad = md[e] if md[e] > 0 else -md[e]
            if ad > half:
                half = ad
    return o, nc, half, target + 2 * half + 1


@numba.njit(cache=True, nogil=True, error_model="numpy")
def face_fill(weights, values, sizes, lp_pos, base_w, base_v, target, dw_b, gain, max_bits, max_classes,
              layers, lam_up, lam_dn):  # pragma: no cover - compiled
    """Twin of ``core._face_fill_numpy``: a choice of weight exactly ``capacity`` made of the LP items and moves
    of zero reduced cost (``(v_ij - v_lp) dw_b == (w_ij - w_lp) gain``, exact products below ``2**52``), found by
    a subset-sum over bitsets of 64-bit words, else the heaviest below it above the LP items' weight; an empty
    array when none is found. Returns the raw positions. ``layers=1``: ``_face_fill_loss1`` (twin of
    ``core._face_fill_loss1_numpy``)."""
    n = sizes.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    if target <= 0:
        return empty
    if layers == 1:
        return _face_fill_loss1(weights, values, sizes, lp_pos, base_w, base_v, target, dw_b, gain, max_bits,
                                max_classes)
    lim = 2.0**52
    alpha = gain / dw_b
    cnt = 0
    for i in range(n):
        if alpha > 0.0 and lam_up[i] != alpha and lam_dn[i] != alpha:
            continue  # no hull edge of slope alpha at the LP item: no move of zero reduced cost
        q = lp_pos[i]
        for j in range(sizes[i]):
            d = weights[i, j] - base_w[i]
            if d == 0 or j == q:
                continue
            a = (values[i, j] - base_v[i]) * dw_b
            b = float(d) * gain
            if a == b and abs(a) < lim and abs(b) < lim:
                cnt += 1
    if cnt == 0:
        return empty
    md = np.empty(cnt, dtype=np.int64)
    mj = np.empty(cnt, dtype=np.int64)
    first = np.empty(n + 1, dtype=np.int64)
    zc = np.empty(n, dtype=np.int64)
    zkey = np.empty(n, dtype=np.int64)
    nz = 0
    c = 0
    for i in range(n):
        first[i] = c
        q = lp_pos[i]
        small = -1
        if alpha > 0.0 and lam_up[i] != alpha and lam_dn[i] != alpha:
            continue
        for j in range(sizes[i]):
            d = weights[i, j] - base_w[i]
            if d == 0 or j == q:
                continue
            a = (values[i, j] - base_v[i]) * dw_b
            b = float(d) * gain
            if a == b and abs(a) < lim and abs(b) < lim:
                md[c] = d
                mj[c] = j
                c += 1
                ad = d if d > 0 else -d
                if small < 0 or ad < small:
                    small = ad
        if small >= 0:
            zc[nz] = i
            zkey[nz] = small
            nz += 1
    first[n] = c
    o, nc, half, nbits = _face_window(first, md, zc, zkey, nz, target, max_classes)
    if nbits > max_bits:
        return empty
    nw = (nbits + 63) // 64
    sets = np.zeros((nc + 1, nw), dtype=np.uint64)
    zero_at = half  # bit of offset 0 (offset x is bit x + half)
    sets[0, zero_at // 64] = np.uint64(1) << np.uint64(zero_at % 64)
    tbit = target + half
    last_mask = np.uint64(0xFFFFFFFFFFFFFFFF)
    if nbits % 64:
        last_mask = (np.uint64(1) << np.uint64(nbits % 64)) - np.uint64(1)
    hit = -1
    for t in range(nc):
        i = zc[o[t]]
        for w in range(nw):
            sets[t + 1, w] = sets[t, w]
        for e in range(first[i], first[i + 1]):
            d = md[e]
            for w in range(nw):
                # bits [64 w - d, 64 w + 63 - d] of the previous set
                src = 64 * w - d
                a_ = src // 64
                r = src - 64 * a_
                lo_w = sets[t, a_] if 0 <= a_ < nw else np.uint64(0)
                if r == 0:
                    sets[t + 1, w] |= lo_w
                else:
                    hi_w = sets[t, a_ + 1] if 0 <= a_ + 1 < nw else np.uint64(0)
                    sets[t + 1, w] |= (lo_w >> np.uint64(r)) | (hi_w << np.uint64(64 - r))
        sets[t + 1, nw - 1] &= last_mask
        if (sets[t + 1, tbit // 64] >> np.uint64(tbit % 64)) & np.uint64(1):
            hit = t
            break
    x = tbit
    if hit < 0:  # the heaviest sum below the target, when above the LP items' weight
        hit = nc - 1
        x = -1
        y = tbit
        while y > half:
            if (sets[nc, y // 64] >> np.uint64(y % 64)) & np.uint64(1):
                x = y
                break
            y -= 1
        if x < 0:
            return empty
    pos = lp_pos.copy()
    for t in range(hit, -1, -1):
        if (sets[t, x // 64] >> np.uint64(x % 64)) & np.uint64(1):
            continue  # the class keeps its LP item
        i = zc[o[t]]
        for e in range(first[i], first[i + 1]):
            y = x - md[e]
            if 0 <= y < nbits and (sets[t, y // 64] >> np.uint64(y % 64)) & np.uint64(1):
                pos[i] = mj[e]
                x = y
                break
    return pos



@numba.njit(cache=True, nogil=True, error_model="numpy")
def _shift_or(dst, src, d, nw):  # pragma: no cover - compiled
    """``dst |= src`` shifted up by ``d`` bits (down for ``d < 0``) over ``nw`` 64-bit words, bits past either
    end dropped (the caller masks the last word)."""
    for w in range(nw):
        sb = 64 * w - d
        a_ = sb // 64
        r = sb - 64 * a_
        lo_w = src[a_] if 0 <= a_ < nw else np.uint64(0)
        if r == 0:
            dst[w] |= lo_w
        else:
            hi_w = src[a_ + 1] if 0 <= a_ + 1 < nw else np.uint64(0)
            dst[w] |= (lo_w >> np.uint64(r)) | (hi_w << np.uint64(64 - r))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _bit(words, b):  # pragma: no cover - compiled
    return (words[b // 64] >> np.uint64(b % 64)) & np.uint64(1) == np.uint64(1)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _top_bit(words, hi, lo):  # pragma: no cover - compiled
    """The highest set bit in ``lo + 1 .. hi``, ``-1`` when none."""
    y = hi
    while y > lo:
        if _bit(words, y):
            return y
        y -= 1
    return -1


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _face_fill_loss1(weights, values, sizes, lp_pos, base_w, base_v, target, dw_b, gain, max_bits,
                     max_classes):  # pragma: no cover - compiled
    """Twin of ``core._face_fill_loss1_numpy`` (two layers of bitsets over 64-bit words)."""
    empty = np.zeros(0, dtype=np.int64)
    if not (gain >= 0.0 and gain < 2.0**52 and gain % dw_b == 0.0):
        return empty
    mu = gain / dw_b
    n = sizes.shape[0]
    lim = 2.0**52
    cnt = 0
    for i in range(n):
        for j in range(sizes[i]):
            d = weights[i, j] - base_w[i]
            if d == 0 or j == lp_pos[i]:
                continue
            mw = float(d) * mu
            ls = (base_v[i] - values[i, j]) + mw
            if abs(mw) < lim and (ls == 0.0 or ls == 1.0):
                cnt += 1
    if cnt == 0:
        return empty
    md = np.empty(cnt, dtype=np.int64)
    mj = np.empty(cnt, dtype=np.int64)
    ml = np.empty(cnt, dtype=np.int64)
    first = np.empty(n + 1, dtype=np.int64)
    zc = np.empty(n, dtype=np.int64)
    zkey = np.empty(n, dtype=np.int64)
    nz = 0
    c = 0
    for i in range(n):
        first[i] = c
        small = -1
        for j in range(sizes[i]):
            d = weights[i, j] - base_w[i]
            if d == 0 or j == lp_pos[i]:
                continue
            mw = float(d) * mu
            ls = (base_v[i] - values[i, j]) + mw
            if abs(mw) < lim and (ls == 0.0 or ls == 1.0):
                md[c] = d
                mj[c] = j
                ml[c] = 0 if ls == 0.0 else 1
                c += 1
                ad = d if d > 0 else -d
                if small < 0 or ad < small:
                    small = ad
        if small >= 0:
            zc[nz] = i
            zkey[nz] = small
            nz += 1
    first[n] = c
    o, nc, half, nbits = _face_window(first, md, zc, zkey, nz, target, max_classes)
    if nbits > max_bits:
        return empty
    nw = (nbits + 63) // 64
    s0 = np.zeros((nc + 1, nw), dtype=np.uint64)
    s1 = np.zeros((nc + 1, nw), dtype=np.uint64)
    s0[0, half // 64] = np.uint64(1) << np.uint64(half % 64)
    s1[0, half // 64] = np.uint64(1) << np.uint64(half % 64)
    tbit = target + half
    last_mask = np.uint64(0xFFFFFFFFFFFFFFFF)
    if nbits % 64:
        last_mask = (np.uint64(1) << np.uint64(nbits % 64)) - np.uint64(1)
    done = nc
    for t in range(nc):
        i = zc[o[t]]
        for w in range(nw):
            s0[t + 1, w] = s0[t, w]
            s1[t + 1, w] = s1[t, w]
        for e in range(first[i], first[i + 1]):
            if ml[e] == 0:
                _shift_or(s0[t + 1], s0[t], md[e], nw)
                _shift_or(s1[t + 1], s1[t], md[e], nw)
            else:
                _shift_or(s1[t + 1], s0[t], md[e], nw)
        s0[t + 1, nw - 1] &= last_mask
        s1[t + 1, nw - 1] &= last_mask
        if _bit(s0[t + 1], tbit):
            done = t + 1
            break
    x0 = _top_bit(s0[done], tbit, half)
    x1 = _top_bit(s1[done], tbit, half)
    best_d = 0.0
    layer = -1
    x = -1
    if x0 > half:
        best_d = mu * float(tbit - x0)
        layer = 0
        x = x0
    if x1 > half and (layer < 0 or 1.0 + mu * float(tbit - x1) < best_d):
        best_d = 1.0 + mu * float(tbit - x1)
        layer = 1
        x = x1
    if layer < 0:
        return empty
    pos = lp_pos.copy()
    for t in range(done - 1, -1, -1):
        if _bit(s1[t] if layer == 1 else s0[t], x):
            continue
        i = zc[o[t]]
        for e in range(first[i], first[i + 1]):
            y = x - md[e]
            if y < 0 or y >= nbits:
                continue
            if ml[e] == 0 and _bit(s1[t] if layer == 1 else s0[t], y):
                pos[i] = mj[e]
                x = y
                break
            if ml[e] == 1 and layer == 1 and _bit(s0[t], y):
                pos[i] = mj[e]
                x = y
                layer = 0
                break
    return pos



@numba.njit(cache=True, nogil=True, error_model="numpy")
def face_bound(weights, values, sizes, base_w, base_v, target, mu, max_bits):  # pragma: no cover - compiled
    """Twin of ``core._face_bound_numpy``: the bound ``U - 1`` proven when no choice of the LP items (``base_w``,
    ``base_v``) and moves of zero loss at the integral gradient ``mu`` (``v_ij - v_lp == mu (w_ij - w_lp)``) adds
    exactly ``target`` to the LP items' weight; ``inf`` when that is not proven (a sum reached, the window wider
    than ``max_bits``, values not integral, a move of negative loss or products past ``2**52``). Reachable sums as
    bitsets of 64-bit words over the window ``max(-N, T - P) .. min(P, T + N)`` (``P``, ``N``: the sums of the
    classes' largest moves up and down), classes in index order. Running time :math:`O(N + K B / 64)`
    (``K`` moves, ``B`` bits)."""
    n = sizes.shape[0]
    inf = np.inf
    lim = 2.0**52
    if target <= 0 or not (mu >= 1.0 and mu < lim and mu == np.floor(mu)):
        return inf
    cnt = 0
    up = 0
    dn = 0
    for i in range(n):
        bv = base_v[i]
        if not (abs(bv) < 2.0**50 and bv == np.floor(bv)):
            return inf
        mu_ = 0
        md_ = 0
        for j in range(sizes[i]):
            v = values[i, j]
            if not (abs(v) < 2.0**50 and v == np.floor(v)):
                return inf
            d = weights[i, j] - base_w[i]
            a = v - bv
            b = float(d) * mu
            if not abs(b) < lim:
                return inf
            if a > b:  # a negative loss: the base items do not maximise v - mu w
                return inf
            if a == b and d != 0:
                cnt += 1
                if d > mu_:
                    mu_ = d
                if -d > md_:
                    md_ = -d
        up += mu_
        dn += md_
    v0 = np_sum(base_v)
    ub = v0 + mu * float(target) - 1.0
    if not abs(ub) < lim:
        return inf
    if target > up:
        return ub
    lo = max(-dn, target - up)
    hi = min(up, target + dn)
    nbits = hi - lo + 1
    if nbits > max_bits:
        return inf
    nw = (nbits + 63) // 64
    cur = np.zeros(nw, dtype=np.uint64)
    nxt = np.zeros(nw, dtype=np.uint64)
    zb = -lo
    cur[zb // 64] = np.uint64(1) << np.uint64(zb % 64)
    tb = target - lo
    last_mask = np.uint64(0xFFFFFFFFFFFFFFFF)
    if nbits % 64:
        last_mask = (np.uint64(1) << np.uint64(nbits % 64)) - np.uint64(1)
    for i in range(n):
        bv = base_v[i]
        moved = False
        for j in range(sizes[i]):
            d = weights[i, j] - base_w[i]
            if d == 0 or values[i, j] - bv != float(d) * mu:
                continue
            if not moved:
                for w in range(nw):
                    nxt[w] = cur[w]
                moved = True
            _shift_or(nxt, cur, d, nw)
        if moved:
            nxt[nw - 1] &= last_mask
            cur, nxt = nxt, cur
            if _bit(cur, tb):
                return inf
    return ub


#: Codes of ``solve_compiled`` beyond those of ``search`` (0 fathomed, 1 bound, 2 congruence, 3 exhausted).
SOLVED_LP_INTEGRAL = 4
SOLVED_LP_BOUND = 5
SOLVED_FACE_BOUND = 6


@numba.njit(cache=True, nogil=True, error_model="numpy")
def solve_compiled(weights, values, sizes, capacity, use_greedy, rel_tol, int_margin, fill_rounds, max_bytes,
                   link_share, tail_min, tail_growth, bytes_per_cand, item_bytes, face_bits, face_classes,
                   guess_stop):  # pragma: no cover - compiled
    """``core._search`` without limits, from the prepare phase to the choice, in one call: ``prepare_lp``, the
    tolerance and congruence of ``core._prepare`` (numpy's float sums by ``np_sum``: the same doubles), the
    greedy start (``greedy_fill``), the root test and the runs of ``search`` (from the aspiration guesses of
    ``core.first_guess`` while above the start, then from the start); the same choice and counters as the calls from
    Python, without their boxing and Python lines (a 100 x 10 solve spent most of its time there). Returns
    ``(code, pos, bound, objective, stats)``: ``code`` as ``search``'s, or ``SOLVED_LP_INTEGRAL`` (``bound`` the LP's),
    ``SOLVED_LP_BOUND``, ``SOLVED_FACE_BOUND`` (``face_bound`` proved the start), or -1 where the Python path must
    answer (an infeasible LP, a congruence whose sums leave int64, or a search handed back); ``objective`` the
    choice's value (numpy's sum, by ``np_sum``);
    ``stats`` = classes, states, max_states, candidates, free_start, numba."""
    n = sizes.shape[0]
    stats = np.zeros(6, dtype=np.int64)
    stats[2] = 1
    (feasible, start, items, hw, hv, srt, vmax, integral, room, lv, up, down, b_cls, b_step, used, max_inc, lp_pos,
     weight, hv_at, base_w, base_v, lam_up, lam_dn, regret) = _prepare_lp(weights, values, sizes, capacity, False)
    if not feasible:
        return -1, lp_pos, 0.0, 0.0, stats
    value = np_sum(hv_at)
    if b_cls < 0:
        stats[4] = capacity - weight
        return SOLVED_LP_INTEGRAL, lp_pos, value, _value_of(values, lp_pos), stats
    s = start[b_cls] + b_step
    dw_b = hw[s + 1] - hw[s]
    gain = hv[s + 1] - hv[s]
    fraction = float(room - used) / float(dw_b)
    alpha = gain / float(dw_b)
    bound = value + fraction * gain
    # core._prepare's tolerance and congruence
    absv = np.empty(n, dtype=np.float64)
    for i in range(n):
        absv[i] = abs(base_v[i])
    absum = np_sum(absv)
    tol = rel_tol * max(1.0, abs(bound), absum)
    if tol < 0.5 and vmax * n < 2.0**50 and integral:
        scale = max(1.0, abs(bound), absum, vmax * n)
        margin = max(int_margin, 64.0 * (np.nextafter(scale, np.inf) - scale))
        tol = 1.0 - margin if margin < 0.5 else 0.5
    mod_g = 1
    mod_r = 0
    if tol > 0.5 and np.isfinite(alpha) and alpha >= 0.0:
        if alpha >= 2.0**50:
            return -1, lp_pos, 0.0, 0.0, stats
        mu = np.int64(np.floor(alpha))
        g, acc = congruence_gcd(weights, values, sizes, mu)
        if g > 1:
            if mu > 0 and capacity > (2**62) // mu:
                return -1, lp_pos, 0.0, 0.0, stats
            mod_g = g
            mod_r = (mu * capacity + acc) % g
    # phase 2: the start solution
    inc_v = value
    inc_pos = lp_pos
    stats[4] = capacity - weight
    if use_greedy:
        pos, room2 = greedy_fill(weights, values, sizes, srt, lp_pos, capacity - weight, fill_rounds)
        gv = _value_of(values, pos)
        if gv > inc_v:
            inc_v = gv
            inc_pos = pos
            stats[4] = room2
    w0 = 0
    for i in range(n):
        w0 += base_w[i]
    v0 = np_sum(base_v)
    root_lag = v0 + alpha * float(capacity - w0)
    if use_greedy and tol > 0.5 and not (bound - inc_v <= tol or root_lag <= _lift(inc_v + tol, mod_g, mod_r)):
        # core._search's face fills: the LP bound reached by moves of zero reduced cost; then with one unit of loss
        for layers in range(2):
            pos = face_fill(weights, values, sizes, lp_pos, base_w, base_v, capacity - w0, float(dw_b), gain,
                            face_bits, face_classes, layers, lam_up, lam_dn)
            if pos.shape[0]:
                fv = _value_of(values, pos)
                if fv > inc_v:
                    inc_v = fv
                    inc_pos = pos
                    fw = 0
                    for i in range(n):
                        fw += weights[i, pos[i]]
                    stats[4] = capacity - fw
            if bound - inc_v <= tol:
                break
    if bound - inc_v <= tol or root_lag <= _lift(inc_v + tol, mod_g, mod_r):
        return SOLVED_LP_BOUND, inc_pos, 0.0, _value_of(values, inc_pos), stats
    if use_greedy and tol > 0.5 and bound - inc_v < 1.5:
        # core._search's face bound: the start is the bound less one and no zero-loss fill reaches the bound
        mu = gain / float(dw_b)
        if gain >= 0.0 and gain < 2.0**52 and gain % float(dw_b) == 0.0 and \
                inc_v >= face_bound(weights, values, sizes, base_w, base_v, capacity - w0, mu, face_bits):
            return SOLVED_FACE_BOUND, inc_pos, 0.0, _value_of(values, inc_pos), stats
    regret = regrets(weights, values, sizes, lp_pos, alpha)  # (for the search only: after the root test)
    # the runs of core._search: from the aspiration guesses (core.first_guess) while above the start, then from it
    guess = -np.inf
    if tol > 0.5 and np.isfinite(bound):
        guess = np.ceil(bound - tol) - 1.0
    gap = 1.0
    # integral values: a proven upper bound of the optimum (the LP's, then the last failed guess) ends a run whose
    # incumbent reaches it (core._search's rule; float values keep improving by less than tol, so never)
    known_ub = bound if tol > 0.5 else np.inf
    orders = _search_orders(start, lam_up, lam_dn, regret)
    while True:
        is_guess = guess > inc_v
        z0 = guess if is_guess else inc_v
        code, pos, has_state, st = _search_run(weights, values, sizes, capacity, base_w, base_v, w0, v0, lp_pos,
                                               b_cls, alpha, tol, mod_g, mod_r, z0, lam_up, lam_dn, regret, hw, hv,
                                               start, lv, max_bytes, link_share, tail_min, tail_growth,
                                               bytes_per_cand, item_bytes, -1.0, orders, known_ub)
        if code < 0:
            return -1, lp_pos, 0.0, 0.0, stats
        stats[0] += st[0]
        stats[1] += st[1]
        if st[2] > stats[2]:
            stats[2] = st[2]
        stats[3] += st[3]
        stats[5] = 1
        if has_state or not is_guess:
            break
        known_ub = guess  # the guess failed: no solution beats it
        guess -= gap
        gap *= 2.0
        if st[0] <= guess_stop:  # a failed run with few classes: no more guesses (core.GUESS_STOP_CLASSES)
            guess = -np.inf
    if not has_state:
        pos = inc_pos.copy()
    return code, pos, 0.0, _value_of(values, pos), stats
