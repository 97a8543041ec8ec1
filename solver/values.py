"""The value table: JCT reduction of every option of every job (DESIGN "Value table").

For job ``j`` and option ``w`` in ``[min_j, max_j]``::

    V_j(w) = T_j(min_j) - T_j(w) - restart_penalty_j * [running_j and w != current_j]
    weight_j(w) = gpus_per_worker_j * (w - min_j),     T_j(w) = remaining_work_j / rate_j(w)

All jobs x all options is one padded ``(J, M)`` array, ``M = max_j (max_j - min_j + 1)``, padding masked
(``sizes[j]`` options valid in row ``j``). :func:`value_table` computes it vectorised with numpy, one pass per
throughput kind; :func:`value_table_scalar` is the plain per-entry reference it is tested against.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from lyra_solver.throughput import _profiles, rate_one, servers_spanned
from lyra_solver.types import PowerThroughput, ProfileThroughput, TableThroughput


class JobOptions(NamedTuple):
    """What the value table needs of one job (a view the pipeline builds from the snapshot; a named tuple, cheap
    to build for 50,000 jobs a round)."""

    throughput: object
    min_workers: int
    max_workers: int
    remaining_work: float
    gpus_per_worker: int = 1
    current_workers: int = 0  # 0: not running
    restart_penalty: float = 0.0


@dataclass(frozen=True, eq=False)
class ValueTable:
    """Padded tables: ``values[j, k]`` and ``weights[j, k]`` for option ``w = min_j + k``, ``k < sizes[j]``.

    ``times[j, k]`` is the remaining time ``T_j(min_j + k)``. Padding holds ``-inf`` values and the row's last
    weight (so rows stay non-decreasing).
    """

    values: np.ndarray
    weights: np.ndarray
    times: np.ndarray
    sizes: np.ndarray
    min_workers: np.ndarray

    @property
    def n_jobs(self) -> int:
        return int(self.sizes.shape[0])


def value_table(jobs: list[JobOptions], *, server_gpus: int = 8, xp=np) -> ValueTable:
    """JCT-reduction values of all jobs x all options in one vectorised pass.

    Parameters
    ----------
    jobs : list of JobOptions
    server_gpus : int
        Server size used by ``profile`` throughputs to count spanned servers.
    xp : module
        Array module (numpy here; :mod:`solver.values_gpu` passes torch or cupy-backed arrays through the
        same arithmetic).

    Returns
    -------
    ValueTable

    Notes
    -----
    Running time O(J * M) array work plus O(J) Python for table throughputs (one ``interp`` each).
    """
    n = len(jobs)
    mins = np.fromiter((j.min_workers for j in jobs), np.int64, n)
    maxs = np.fromiter((j.max_workers for j in jobs), np.int64, n)
    sizes = maxs - mins + 1
    m = int(sizes.max()) if n else 1
    offs = np.arange(m, dtype=np.int64)
    mask = offs[None, :] < sizes[:, None]
    w = np.minimum(mins[:, None] + offs[None, :], maxs[:, None])  # padding repeats the last option
    rate = np.empty((n, m), dtype=np.float64)

    kinds = np.fromiter((_KIND[type(j.throughput)] for j in jobs), np.int8, n)
    # power law: one broadcast over all power jobs
    idx = np.flatnonzero(kinds == 0)
    if idx.size:
        r = np.fromiter((jobs[i].throughput.rate_per_worker for i in idx), np.float64, idx.size)
        e = np.fromiter((jobs[i].throughput.exponent for i in idx), np.float64, idx.size)
        rate[idx] = r[:, None] * w[idx].astype(np.float64) ** e[:, None]
    # measured tables: one interp per job
    for i in np.flatnonzero(kinds == 1):
        tp = jobs[i].throughput
        rate[i] = np.interp(w[i], tp.workers, tp.rate)
    # profiles: one gather per (model, gpus_per_worker)
    idx = np.flatnonzero(kinds == 2)
    if idx.size:
        profiles = _profiles()
        groups: dict[tuple[str, int], list[int]] = {}
        for i in idx:
            groups.setdefault((jobs[i].throughput.model, jobs[i].gpus_per_worker), []).append(int(i))
        for (model, gpw), rows in groups.items():
            per = profiles[model]
            ww = w[rows]
            k = servers_spanned(ww, gpw, server_gpus)
            rate[rows] = per[np.clip(ww, 1, per.shape[0]) - 1, np.clip(k, 1, per.shape[1]) - 1] * ww

    work = np.fromiter((j.remaining_work for j in jobs), np.float64, n)
    gpw = np.fromiter((j.gpus_per_worker for j in jobs), np.int64, n)
    cur = np.fromiter((j.current_workers for j in jobs), np.int64, n)
    pen = np.fromiter((j.restart_penalty for j in jobs), np.float64, n)
    a_rate, a_work, a_w, a_cur, a_pen = (xp.asarray(a) for a in (rate, work, w, cur, pen))
    times = xp.minimum(a_work[:, None] / a_rate, TIME_CAP)
    restart = (a_cur[:, None] > 0) & (a_w != a_cur[:, None])
    values = times[:, :1] - times - a_pen[:, None] * restart
    values, times = _to_numpy(values), _to_numpy(times)
    values = np.where(mask, values, -np.inf)
    weights = gpw[:, None] * (w - mins[:, None])
    return ValueTable(values=values, weights=weights, times=times, sizes=sizes, min_workers=mins)


#: Remaining times are capped here (seconds, about 30 million years) so that absurd but valid inputs
#: (huge work, tiny rates) give finite values instead of ``inf - inf``.
TIME_CAP = 1e15

_KIND = {PowerThroughput: 0, TableThroughput: 1, ProfileThroughput: 2}


def _to_numpy(a) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a
    if hasattr(a, "get"):  # cupy
        return a.get()
    return a.cpu().numpy()  # torch


def value_table_scalar(jobs: list[JobOptions], *, server_gpus: int = 8) -> list[list[tuple[int, float]]]:
    """Reference: ``[(weight, value) for each option]`` per job, one scalar evaluation at a time."""
    out = []
    for j in jobs:
        def t(w: int, j=j) -> float:
            r = rate_one(j.throughput, w, gpus_per_worker=j.gpus_per_worker, server_gpus=server_gpus)
            return min(j.remaining_work / r, TIME_CAP)
        row = []
        for w in range(j.min_workers, j.max_workers + 1):
            v = t(j.min_workers) - t(w)
            if j.current_workers > 0 and w != j.current_workers:
                v -= j.restart_penalty
            row.append((j.gpus_per_worker * (w - j.min_workers), v))
        out.append(row)
    return out
