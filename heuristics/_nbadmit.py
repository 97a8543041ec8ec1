"""The compiled twins of admission (the free-GPU index's first pass and donation) and of best fit decreasing.

Imported only by :mod:`lyra_solver.heuristics.placement` (:func:`~lyra_solver.heuristics.placement.compiled`),
and only once the package's numba kernels are loaded in the process or the problem is large (the rule of
:mod:`lyra_solver.formulations.mckp._numba`). Each kernel follows its Python twin step by step, on arrays instead
of dicts and lists, with the same tie rules, so the answers are the same (tests compare the two on random
clusters, ties included):

* :func:`admit_all` is :class:`~lyra_solver.heuristics.placement.FreeIndex` (its ``place`` and ``capacity``) in
  queue order, then :class:`~lyra_solver.heuristics.donation.Donation` for the jobs that did not fit
  (:func:`lyra_solver.steps.admit.admit`'s two passes);
* :func:`bfd_place` is the placing loop of :func:`~lyra_solver.heuristics.placement.best_fit_decreasing`.

The free-GPU index keeps, per tier and free count, the exact number of servers (``cnt``) and a stack of servers
as a linked list (``head``, ``nsrv``, ``nnext``): a server is pushed when its free count becomes that count and
stale entries are popped when met, as the Python index does, so the server on top of a bucket is the same.
Donation keeps its buckets (tier, room) as two-level bitsets over the server indices, which give the servers
of a bucket in increasing index, as the Python version's sorted lists do. Both need arrays as long as the
largest free count (or room) plus one per tier: the caller uses them only when that is small
(:data:`lyra_solver.heuristics.placement.DENSE_MAX`).
"""
from __future__ import annotations

import numba
import numpy as np

_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_CTZ = np.zeros(64, dtype=np.int64)
for _i in range(64):
    _CTZ[((1 << _i) * 0x03F79D71B4CB0A89 % (1 << 64)) >> 58] = _i
_ONE = np.uint64(1)
_SIX = np.uint64(6)
_SHIFT = np.uint64(58)
_ZERO = np.uint64(0)


@numba.njit(cache=True, nogil=True)
def _note_change(s, dlt, trial, ch_mark, change, ch_list, nch):  # pragma: no cover - compiled
    """Add ``dlt`` free GPUs to server ``s``'s change in this ``trial`` (its change starts at 0 and ``s`` joins
    ``ch_list`` the first time the trial touches it); returns the servers listed. O(1)."""
    if ch_mark[s] != trial:
        ch_mark[s] = trial
        change[s] = 0
        ch_list[nch] = s
        nch += 1
    change[s] += dlt
    return nch


@numba.njit(cache=True, nogil=True)
def _offsets(keys, count, n):  # pragma: no cover - compiled
    """Where each key's run starts when the first ``count`` entries of ``keys`` (each in ``0..n-1``) are
    grouped by key in a stable counting sort: ``n + 1`` offsets, the last ``count``. O(count + n)."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    for e in range(count):
        ptr[keys[e] + 1] += 1
    for k in range(n):
        ptr[k + 1] += ptr[k]
    return ptr


@numba.njit(cache=True, nogil=True, inline="always")
def _ctz(low):  # pragma: no cover - compiled
    """Index of the single set bit of the uint64 ``low``."""
    return _CTZ[np.int64((low * _DEBRUIJN) >> _SHIFT)]


# --------------------------------------------------------------------------------------------- free index
@numba.njit(cache=True, nogil=True)
def _fi_new(free, tier, n_tiers, top, extra_nodes):  # pragma: no cover - compiled
    """The free index of ``free`` per ``tier`` (:class:`FreeIndex.__init__`): counts, bucket heads and nodes
    (room for every server and ``extra_nodes`` pushes more); servers pushed from the last index down."""
    S = free.shape[0]
    cnt = np.zeros((n_tiers, top + 1), dtype=np.int64)
    head = np.full((n_tiers, top + 1), -1, dtype=np.int64)
    nsrv = np.empty(S + extra_nodes + 1, dtype=np.int64)
    nnext = np.empty(S + extra_nodes + 1, dtype=np.int64)
    nlen = np.zeros(1, dtype=np.int64)
    for s in range(S - 1, -1, -1):
        f = free[s]
        if f > 0:
            _fi_push(tier[s], f, s, cnt, head, nsrv, nnext, nlen)
    return cnt, head, nsrv, nnext, nlen


@numba.njit(cache=True, nogil=True)
def _fi_push(t, f, s, cnt, head, nsrv, nnext, nlen):  # pragma: no cover - compiled
    k = nlen[0]
    nsrv[k] = s
    nnext[k] = head[t, f]
    head[t, f] = k
    nlen[0] = k + 1
    cnt[t, f] += 1


@numba.njit(cache=True, nogil=True)
def _fi_peek(t, f, free, head, nsrv, nnext):  # pragma: no cover - compiled
    """The live server on top of bucket (t, f), popping stale entries; -1 when none."""
    k = head[t, f]
    while k >= 0:
        s = nsrv[k]
        if free[s] == f:
            head[t, f] = k
            return s
        k = nnext[k]
    head[t, f] = -1
    return -1


@numba.njit(cache=True, nogil=True)
def _fi_best_fit(t, need, free, cnt, head, nsrv, nnext):  # pragma: no cover - compiled
    top = cnt.shape[1] - 1
    lo = need if need > 1 else 1
    for f in range(lo, top + 1):
        if cnt[t, f] > 0:
            return _fi_peek(t, f, free, head, nsrv, nnext)
    return -1


@numba.njit(cache=True, nogil=True)
def _fi_largest(t, free, cnt, head, nsrv, nnext):  # pragma: no cover - compiled
    for f in range(cnt.shape[1] - 1, 0, -1):
        if cnt[t, f] > 0:
            return _fi_peek(t, f, free, head, nsrv, nnext)
    return -1


@numba.njit(cache=True, nogil=True)
def _fi_capacity(g, t_lo, t_hi, cnt):  # pragma: no cover - compiled
    """Workers of ``g`` GPUs that tiers ``t_lo..t_hi - 1`` still hold."""
    total = 0
    for t in range(t_lo, t_hi):
        for f in range(g, cnt.shape[1]):
            total += cnt[t, f] * (f // g)
    return total


@numba.njit(cache=True, nogil=True)
def _fi_take(s, gpus, free, tier, cnt, head, nsrv, nnext, nlen):  # pragma: no cover - compiled
    f = free[s] - gpus
    t = tier[s]
    if free[s] > 0:
        cnt[t, free[s]] -= 1
    free[s] = f
    if f > 0:
        _fi_push(t, f, s, cnt, head, nsrv, nnext, nlen)


@numba.njit(cache=True, nogil=True)
def _fi_place(n, g, tiers, out_srv, out_cnt, out_len, pos, free, tier, cnt, head, nsrv, nnext,
              nlen):  # pragma: no cover - compiled
    """:meth:`FreeIndex.place`: up to ``n`` workers of ``g`` GPUs on the ``tiers`` in order; the job's servers
    (``out_srv[:out_len[0]]`` in insertion order, ``pos[s]`` a server's entry or -1) first, then best fit, else
    the largest, repeatedly. Returns the workers placed."""
    left = n
    for ti in range(tiers.shape[0]):
        t = tiers[ti]
        m = out_len[0]
        if left > 0 and m > 0:  # the job's own servers of this tier, in increasing index
            mine = np.sort(out_srv[:m])
            for s in mine:
                if left > 0 and tier[s] == t and free[s] >= g:
                    k = free[s] // g
                    if left < k:
                        k = left
                    _fi_take(s, k * g, free, tier, cnt, head, nsrv, nnext, nlen)
                    out_cnt[pos[s]] += k
                    left -= k
        while left > 0:
            s = _fi_best_fit(t, left * g, free, cnt, head, nsrv, nnext) if left <= (cnt.shape[1] - 1) // g else -1
            if s >= 0:
                k = left
            else:
                s = _fi_largest(t, free, cnt, head, nsrv, nnext)
                if s < 0 or free[s] < g:
                    break
                k = free[s] // g
            _fi_take(s, k * g, free, tier, cnt, head, nsrv, nnext, nlen)
            if pos[s] < 0:
                pos[s] = out_len[0]
                out_srv[out_len[0]] = s
                out_cnt[out_len[0]] = 0
                out_len[0] += 1
            out_cnt[pos[s]] += k
            left -= k
        if left == 0:
            break
    return n - left


# --------------------------------------------------------------------------------------------- donation
@numba.njit(cache=True, nogil=True, inline="always")
def _bit_set(bits, summ, b, s):  # pragma: no cover - compiled
    w = s >> 6
    bits[b, w] |= _ONE << np.uint64(s & 63)
    summ[b, w >> 6] |= _ONE << np.uint64(w & 63)


@numba.njit(cache=True, nogil=True, inline="always")
def _bit_clear(bits, summ, b, s):  # pragma: no cover - compiled
    w = s >> 6
    bits[b, w] &= ~(_ONE << np.uint64(s & 63))
    if bits[b, w] == _ZERO:
        summ[b, w >> 6] &= ~(_ONE << np.uint64(w & 63))


@numba.njit(cache=True, nogil=True)
def admit_all(free, tier, n_tiers, order, min_w, gpw, don_job, don_ptr, ent_srv, ent_cnt):  # pragma: no cover
    """Both passes of admission (:func:`lyra_solver.steps.admit.admit`), the Python twin's answers.

    Parameters: ``free`` (free GPUs per server, 0 where not usable), ``tier`` (admission tier per server, -1 where
    not usable), ``n_tiers``, ``order`` (the queued jobs in queue order), ``min_w`` and ``gpw`` per job, the
    donors (jobs that ran before the round with extra workers, in increasing job index: ``don_job``, their
    placements' entries ``ent_srv[don_ptr[k]:don_ptr[k+1]]``, ``ent_cnt`` in the placements' order). ``free`` and
    ``ent_cnt``
    are updated in place (the final free GPUs; the donors' final counts, 0 for a worker given).

    Returns ``(adm_job, adm_ptr, adm_srv, adm_cnt, gave_job, gave_ptr, gave_srv, gave_cnt, bad)``: the admitted
    jobs in the order admitted and their workers per server in the order placed (``adm_srv[adm_ptr[i]:adm_ptr[i +
    1]]``), the donors that gave a worker (increasing) with the workers they keep per server (in their placement's
    order, servers left out where none is left), and ``bad`` (1: a donor has workers on a server that is not
    usable, which the caller leaves to the Python twin).
    """
    S = free.shape[0]
    Q = order.shape[0]
    K = don_job.shape[0]
    E = ent_srv.shape[0]
    # ---- pass 1: the free index in queue order (all or nothing)
    fidx = np.maximum(tier, 0)
    top = 0
    for s in range(S):
        if free[s] > top:
            top = free[s]
    total_w = 0
    for q in range(Q):
        total_w += min_w[order[q]]
    # every take places a worker at least: the queued jobs' base workers bound the pushes
    cnt, head, nsrv, nnext, nlen = _fi_new(free, fidx, n_tiers, top, total_w)
    tiers = np.arange(n_tiers)
    adm_job = np.empty(Q, dtype=np.int64)
    adm_ptr = np.zeros(Q + 1, dtype=np.int64)
    adm_srv = np.empty(total_w + 1, dtype=np.int64)
    adm_cnt = np.empty(total_w + 1, dtype=np.int64)
    n_adm = 0
    waiting = np.empty(Q, dtype=np.int64)
    n_wait = 0
    cap_val = np.zeros(top + 1, dtype=np.int64)
    cap_ver = np.full(top + 1, -1, dtype=np.int64)
    version = 0
    pos = np.full(S, -1, dtype=np.int64)
    out_len = np.zeros(1, dtype=np.int64)
    for q in range(Q):
        j = order[q]
        n, g = min_w[j], gpw[j]
        if g > top:
            cap = 0
        else:
            if cap_ver[g] != version:
                cap_val[g] = _fi_capacity(g, 0, n_tiers, cnt)
                cap_ver[g] = version
            cap = cap_val[g]
        if cap >= n:
            start = adm_ptr[n_adm]
            out_srv = adm_srv[start:]
            out_cnt = adm_cnt[start:]
            out_len[0] = 0
            _fi_place(n, g, tiers, out_srv, out_cnt, out_len, pos, free, fidx, cnt, head, nsrv, nnext, nlen)
            for i in range(out_len[0]):
                pos[out_srv[i]] = -1
            adm_job[n_adm] = j
            adm_ptr[n_adm + 1] = start + out_len[0]
            n_adm += 1
            version += 1
        else:
            waiting[n_wait] = j
            n_wait += 1
    gave = np.zeros(K, dtype=np.bool_)
    given = np.zeros(E, dtype=np.bool_)  # the entries that gave a worker in a committed trial
    if n_wait == 0:
        return _admitted(adm_job, adm_ptr, adm_srv, adm_cnt, n_adm, gave, don_job, don_ptr, ent_srv, ent_cnt,
                         given, 0)
    # ---- pass 2: donation (Donation), the jobs that waited, in queue order
    spare = np.zeros(K, dtype=np.int64)
    don_g = np.empty(K, dtype=np.int64)
    ent_don = np.empty(E, dtype=np.int64)
    for k in range(K):
        d = don_job[k]
        don_g[k] = gpw[d]
        tot = 0
        for e in range(don_ptr[k], don_ptr[k + 1]):
            tot += ent_cnt[e]
            ent_don[e] = k
            if tier[ent_srv[e]] < 0:
                return _admitted(adm_job, adm_ptr, adm_srv, adm_cnt, n_adm, gave, don_job, don_ptr, ent_srv,
                                 ent_cnt, given, 1)
        spare[k] = tot - min_w[d]
    # the GPUs donation could offer (Donation.total): where no waiting job's base demand is within them, it admits
    # none (each is rejected by that bound below) and the buckets are not built (most rounds of a simulator that
    # reach this pass)
    total = 0
    for s in range(S):
        if tier[s] >= 0:
            total += free[s]
    for k in range(K):
        total += spare[k] * don_g[k]
    least = min_w[waiting[0]] * gpw[waiting[0]]  # n_wait >= 1 here
    for qi in range(1, n_wait):
        x = min_w[waiting[qi]] * gpw[waiting[qi]]
        if x < least:
            least = x
    if least > total:
        return _admitted(adm_job, adm_ptr, adm_srv, adm_cnt, n_adm, gave, don_job, don_ptr, ent_srv, ent_cnt,
                         given, 0)
    # entries per server, in increasing donor (job) order
    host_ptr = _offsets(ent_srv, E, S)
    fill = host_ptr[:S].copy()
    host_ent = np.empty(E, dtype=np.int64)
    for e in range(E):
        s = ent_srv[e]
        host_ent[fill[s]] = e
        fill[s] += 1
    room = np.zeros(S, dtype=np.int64)
    rtop = 0
    for s in range(S):
        if tier[s] >= 0:
            r = free[s]
            for i in range(host_ptr[s], host_ptr[s + 1]):
                e = host_ent[i]
                k = ent_don[e]
                c = ent_cnt[e]
                r += (spare[k] if spare[k] < c else c) * don_g[k]
            room[s] = r
            if r > rtop:
                rtop = r
    R = rtop + 1
    W = (S + 63) >> 6
    W2 = (W + 63) >> 6
    bits = np.zeros((n_tiers * R, W), dtype=np.uint64)
    summ = np.zeros((n_tiers * R, W2), dtype=np.uint64)
    bcount = np.zeros(n_tiers * R, dtype=np.int64)
    room_count = np.zeros(R, dtype=np.int64)
    for s in range(S):
        if tier[s] >= 0:
            b = tier[s] * R + room[s]
            _bit_set(bits, summ, b, s)
            bcount[b] += 1
            room_count[room[s]] += 1
    bound_val = np.zeros(R, dtype=np.int64)
    bound_ver = np.full(R, -1, dtype=np.int64)
    version = 0
    # trial state: marks by trial number, old values, the servers and entries touched
    trial = 0
    srv_mark = np.full(S, -1, dtype=np.int64)
    free_old = np.zeros(S, dtype=np.int64)
    t_srv = np.empty(S, dtype=np.int64)
    don_mark = np.full(K, -1, dtype=np.int64)
    spare_old = np.zeros(K, dtype=np.int64)
    t_don = np.empty(K, dtype=np.int64)
    ent_mark = np.full(E, -1, dtype=np.int64)
    cnt_old = np.zeros(E, dtype=np.int64)
    t_ent = np.empty(E + 1, dtype=np.int64)
    change = np.zeros(S, dtype=np.int64)
    ch_mark = np.full(S, -1, dtype=np.int64)
    ch_list = np.empty(S, dtype=np.int64)
    for qi in range(n_wait):
        j = waiting[qi]
        n, g = min_w[j], gpw[j]
        if n * g > total:
            continue
        if g > rtop:
            continue  # no room r >= g: the bound is 0
        if bound_ver[g] != version:
            bsum = 0
            for r in range(g, R):
                bsum += room_count[r] * (r // g)
            bound_val[g] = bsum
            bound_ver[g] = version
        if n > bound_val[g]:
            continue
        trial += 1
        ns = 0
        nd = 0
        ne = 0
        start = adm_ptr[n_adm]
        m = 0  # the job's servers so far
        left = n
        for t in range(n_tiers):
            if left == 0:
                break
            for r in range(rtop, g - 1, -1):
                if left == 0:
                    break
                b = t * R + r
                if bcount[b] == 0:
                    continue
                for sw in range(W2):
                    if left == 0:
                        break
                    x = summ[b, sw]
                    while x != _ZERO and left > 0:
                        low = x & (~x + _ONE)
                        x ^= low
                        wi = (sw << 6) + _ctz(low)
                        y = bits[b, wi]
                        while y != _ZERO and left > 0:
                            lowy = y & (~y + _ONE)
                            y ^= lowy
                            s = (wi << 6) + _ctz(lowy)
                            # _fill(s)
                            f = free[s]
                            srv_mark[s] = trial
                            free_old[s] = f
                            t_srv[ns] = s
                            ns += 1
                            placed = 0
                            while left > 0:
                                if f >= g:
                                    f -= g
                                    placed += 1
                                    left -= 1
                                    continue
                                best = -1
                                best_spare = 0
                                for i in range(host_ptr[s], host_ptr[s + 1]):
                                    e = host_ent[i]
                                    k = ent_don[e]
                                    sp = spare[k]
                                    if sp > best_spare and ent_cnt[e] > 0:
                                        best = e
                                        best_spare = sp
                                if best < 0:
                                    break
                                k = ent_don[best]
                                if don_mark[k] != trial:
                                    don_mark[k] = trial
                                    spare_old[k] = spare[k]
                                    t_don[nd] = k
                                    nd += 1
                                if ent_mark[best] != trial:
                                    ent_mark[best] = trial
                                    cnt_old[best] = ent_cnt[best]
                                    t_ent[ne] = best
                                    ne += 1
                                ent_cnt[best] -= 1
                                spare[k] -= 1
                                f += don_g[k]
                            free[s] = f
                            if placed > 0:
                                adm_srv[start + m] = s
                                adm_cnt[start + m] = placed
                                m += 1
        if left > 0:  # undo the trial
            for i in range(ns):
                s = t_srv[i]
                free[s] = free_old[s]
            for i in range(ne):
                e = t_ent[i]
                ent_cnt[e] = cnt_old[e]
            for i in range(nd):
                k = t_don[i]
                spare[k] = spare_old[k]
            continue
        # commit: the rooms that changed move to their new bucket
        nch = 0
        for i in range(ns):
            s = t_srv[i]
            nch = _note_change(s, free[s] - free_old[s], trial, ch_mark, change, ch_list, nch)
        for i in range(ne):
            given[t_ent[i]] = True
        for i in range(nd):
            k = t_don[i]
            gave[k] = True
            sp_new, sp_old = spare[k], spare_old[k]
            for e in range(don_ptr[k], don_ptr[k + 1]):
                c_new = ent_cnt[e]
                c_old = cnt_old[e] if ent_mark[e] == trial else c_new
                dlt = ((sp_new if sp_new < c_new else c_new) - (sp_old if sp_old < c_old else c_old)) * don_g[k]
                if dlt != 0:
                    nch = _note_change(ent_srv[e], dlt, trial, ch_mark, change, ch_list, nch)
        total -= n * g
        for i in range(nch):
            s = ch_list[i]
            dlt = change[s]
            if dlt != 0:
                t = tier[s]
                r = room[s]
                _bit_clear(bits, summ, t * R + r, s)
                bcount[t * R + r] -= 1
                _bit_set(bits, summ, t * R + r + dlt, s)
                bcount[t * R + r + dlt] += 1
                room_count[r] -= 1
                room_count[r + dlt] += 1
                room[s] = r + dlt
        version += 1
        adm_job[n_adm] = j
        adm_ptr[n_adm + 1] = start + m
        n_adm += 1
    return _admitted(adm_job, adm_ptr, adm_srv, adm_cnt, n_adm, gave, don_job, don_ptr, ent_srv, ent_cnt, given,
                     0)


@numba.njit(cache=True, nogil=True)
def _admitted(adm_job, adm_ptr, adm_srv, adm_cnt, n_adm, gave, don_job, don_ptr, ent_srv, ent_cnt, given,
              bad):  # pragma: no cover - compiled
    """:func:`admit_all`'s answer: the admitted jobs' entries cut to their count, and the donors that gave, each
    with its entries in its placement's order but those whose last worker it gave (``given``), as the Python
    twin deletes them."""
    n_entries = adm_ptr[n_adm]
    K = don_job.shape[0]
    n_gave = 0
    size = 0
    for k in range(K):
        if gave[k]:
            n_gave += 1
            size += don_ptr[k + 1] - don_ptr[k]
    g_job = np.empty(n_gave, dtype=np.int64)
    g_ptr = np.zeros(n_gave + 1, dtype=np.int64)
    g_srv = np.empty(size, dtype=np.int64)
    g_cnt = np.empty(size, dtype=np.int64)
    i = 0
    m = 0
    for k in range(K):
        if gave[k]:
            g_job[i] = don_job[k]
            for e in range(don_ptr[k], don_ptr[k + 1]):
                if not (given[e] and ent_cnt[e] == 0):
                    g_srv[m] = ent_srv[e]
                    g_cnt[m] = ent_cnt[e]
                    m += 1
            i += 1
            g_ptr[i] = m
    return (adm_job[:n_adm], adm_ptr[:n_adm + 1], adm_srv[:n_entries], adm_cnt[:n_entries], g_job, g_ptr,
            g_srv[:m], g_cnt[:m], bad)


# --------------------------------------------------------------------------------------------- best fit decreasing
@numba.njit(cache=True, nogil=True)
def bfd_place(free, loaned, job_workers, job_base, gpw, cur_job, cur_server, cur_count,
              keep_current):  # pragma: no cover - compiled
    """The placing loop of :func:`~lyra_solver.heuristics.placement.best_fit_decreasing`, its Python twin's
    answers: each job keeps ``min(current, target)`` of its current workers with ``keep_current`` (loaned servers
    dropped first, then where it has fewest, then the higher index); then the jobs that need workers, by GPUs per
    worker, then workers needed (both decreasing), then index, place their base demand on training servers first
    and their extra workers on loaned servers first (together where no loaned server has room for a worker), on
    the free index.

    Returns ``(ptr, srv, cnt, have, bad)``: job ``j``'s workers per server ``srv[ptr[j]:ptr[j+1]]`` (increasing
    server, counts in ``cnt``), the workers each job got, and ``bad`` (1: the current placements exceed the free
    GPUs, or a job is twice on a server; the caller leaves those to the Python twin, which refuses the first).
    """
    S = free.shape[0]
    J = job_workers.shape[0]
    C = cur_job.shape[0]
    left_free = free.astype(np.int64)
    # ---- keep current workers up to the new count (per job: loaned last, most workers first, then index)
    kept_ptr = _offsets(cur_job, C, J)
    fill = kept_ptr[:J].copy()
    k_srv = np.empty(C, dtype=np.int64)
    k_cnt = np.empty(C, dtype=np.int64)
    for i in range(C):
        j = cur_job[i]
        k_srv[fill[j]] = cur_server[i]
        k_cnt[fill[j]] = cur_count[i]
        fill[j] += 1
    have = np.zeros(J, dtype=np.int64)
    on_training = np.zeros(J, dtype=np.int64)
    seen = np.full(S, -1, dtype=np.int64)
    for j in range(J):
        a, b = kept_ptr[j], kept_ptr[j + 1]
        for i in range(a, b):
            if seen[k_srv[i]] == j:
                return kept_ptr, k_srv, k_cnt, have, 1
            seen[k_srv[i]] = j
        if b - a > 1:  # by (loaned, -count, server): insertion sort of a job's few entries
            for i in range(a + 1, b):
                s, c = k_srv[i], k_cnt[i]
                m = i - 1
                while m >= a and (loaned[k_srv[m]], -k_cnt[m], k_srv[m]) > (loaned[s], -c, s):
                    k_srv[m + 1] = k_srv[m]
                    k_cnt[m + 1] = k_cnt[m]
                    m -= 1
                k_srv[m + 1] = s
                k_cnt[m + 1] = c
        keep = job_workers[j] if keep_current else 0
        for i in range(a, b):
            k = k_cnt[i] if k_cnt[i] < keep else keep
            if k < 0:
                k = 0
            k_cnt[i] = k
            keep -= k
            have[j] += k
            if not loaned[k_srv[i]]:
                on_training[j] += k
            left_free[k_srv[i]] -= k * gpw[j]
    for s in range(S):
        if left_free[s] < 0:
            return kept_ptr, k_srv, k_cnt, have, 1
    # ---- the free index over training (0) and loaned (1) servers
    tier = np.zeros(S, dtype=np.int64)
    top = 0
    for s in range(S):
        if loaned[s]:
            tier[s] = 1
        if left_free[s] > top:
            top = left_free[s]
    need = job_workers - have
    total_need = 0
    for j in range(J):
        if need[j] > 0:
            total_need += need[j]
    cnt, head, nsrv, nnext, nlen = _fi_new(left_free, tier, 2, top, total_need)
    # jobs that need workers by (-gpw, -need, j): two stable sorts
    cand = np.flatnonzero(need > 0)
    cand = cand[np.argsort(-need[cand], kind="mergesort")]
    cand = cand[np.argsort(-gpw[cand], kind="mergesort")]
    base_first = np.array([0, 1], dtype=np.int64)
    extra_first = np.array([1, 0], dtype=np.int64)
    # each job's entries: kept ones, then those placed (at most one new server per worker placed)
    start = np.zeros(J + 1, dtype=np.int64)
    for j in range(J):
        start[j + 1] = start[j] + (kept_ptr[j + 1] - kept_ptr[j]) + (need[j] if need[j] > 0 else 0)
    o_srv = np.empty(start[J] + 1, dtype=np.int64)
    o_cnt = np.empty(start[J] + 1, dtype=np.int64)
    o_len = np.zeros(J, dtype=np.int64)
    for j in range(J):
        m = 0
        for i in range(kept_ptr[j], kept_ptr[j + 1]):
            if k_cnt[i] > 0:
                o_srv[start[j] + m] = k_srv[i]
                o_cnt[start[j] + m] = k_cnt[i]
                m += 1
        o_len[j] = m
    pos = np.full(S, -1, dtype=np.int64)
    out_len = np.zeros(1, dtype=np.int64)
    for j in cand:
        g = gpw[j]
        nj = need[j]
        base_left = job_base[j] - on_training[j]
        if base_left < 0:
            base_left = 0
        base = base_left if base_left < nj else nj
        extra = nj - base
        if base > 0 and extra > 0 and _fi_capacity(g, 1, 2, cnt) == 0:
            base, extra = base + extra, 0
        out_srv = o_srv[start[j]:]
        out_cnt = o_cnt[start[j]:]
        out_len[0] = o_len[j]
        for i in range(o_len[j]):
            pos[out_srv[i]] = i
        got = 0
        if base > 0:
            got = _fi_place(base, g, base_first, out_srv, out_cnt, out_len, pos, left_free, tier, cnt, head, nsrv,
                            nnext, nlen)
        if got == base and extra > 0:
            got += _fi_place(extra, g, extra_first, out_srv, out_cnt, out_len, pos, left_free, tier, cnt, head,
                             nsrv, nnext, nlen)
        have[j] += got
        o_len[j] = out_len[0]
        for i in range(out_len[0]):
            pos[out_srv[i]] = -1
    # ---- each job's entries by increasing server, packed in job order
    ptr = np.zeros(J + 1, dtype=np.int64)
    for j in range(J):
        ptr[j + 1] = ptr[j] + o_len[j]
    srv = np.empty(ptr[J], dtype=np.int64)
    cnt_out = np.empty(ptr[J], dtype=np.int64)
    for j in range(J):
        a = start[j]
        m = o_len[j]
        if m == 1:
            srv[ptr[j]] = o_srv[a]
            cnt_out[ptr[j]] = o_cnt[a]
        elif m > 1:  # a job's few entries by insertion sort (an argsort allocated an array per job)
            p = ptr[j]
            for i in range(m):
                s, c = o_srv[a + i], o_cnt[a + i]
                q = p + i - 1
                while q >= p and srv[q] > s:
                    srv[q + 1] = srv[q]
                    cnt_out[q + 1] = cnt_out[q]
                    q -= 1
                srv[q + 1] = s
                cnt_out[q + 1] = c
    return ptr, srv, cnt_out, have, 0
