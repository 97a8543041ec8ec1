"""The value table: JCT reduction of every option of every job (DESIGN "Value table").

For job ``j`` and option ``w`` in ``[min_j, max_j]``::

    V_j(w) = T_j(min_j) - T_j(w) - restart_penalty_j * [running_j and w != current_j]
    weight_j(w) = gpus_per_worker_j * (w - min_j),     T_j(w) = remaining_work_j / rate_j(w)

All jobs x all options is one padded ``(J, M)`` array, ``M = max_j (max_j - min_j + 1)``, padding masked
(``sizes[j]`` options valid in row ``j``). :func:`value_table` computes it vectorised with numpy, one pass per
throughput kind; :func:`value_table_scalar` is the plain per-entry reference it is tested against.

Backends (``backend=``): ``numpy`` (the reference), ``torch`` and ``cupy`` (:mod:`lyra_solver.values_gpu`,
imported only when chosen), ``auto``: a GPU library only when the table has at least :data:`AUTO_MIN_CELLS`
cells and a CUDA device is present, numpy otherwise. :func:`value_tables` computes the tables of many
snapshots in one pass (one launch on a GPU).
"""
from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
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
    step: int = 1  # > 1: a thinned grid of options (see :func:`option_grid`)


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


#: The backends :func:`value_table` accepts.
BACKENDS: tuple[str, ...] = ("auto", "numpy", "torch", "cupy")

#: ``backend="auto"`` uses a GPU only for tables of at least this many cells (jobs x options): below it the
#: host-to-device copies and launches cost more than numpy's whole pass (about 10 ms at 10**6 cells).
AUTO_MIN_CELLS = 1 << 20


@cache
def _gpu_library() -> str | None:
    """``torch`` or ``cupy`` when one is installed and sees a CUDA device, else None (imports it to ask)."""
    if importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            return "torch"
    if importlib.util.find_spec("cupy") is not None:
        try:
            import cupy

            if cupy.cuda.runtime.getDeviceCount() > 0:
                return "cupy"
        except Exception:  # noqa: BLE001 - cupy raises its own CUDA errors when no driver is present
            return None
    return None


def resolve_backend(backend: str, cells: int) -> str:
    """The backend that runs a table of ``cells`` cells: ``numpy``, ``torch`` or ``cupy``.

    ``auto`` imports no GPU library for tables under :data:`AUTO_MIN_CELLS` cells.

    Raises
    ------
    ValueError
        Unknown backend, or a GPU library asked for by name that is not installed.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "auto":
        if cells < AUTO_MIN_CELLS:
            return "numpy"
        return _gpu_library() or "numpy"
    if backend != "numpy" and importlib.util.find_spec(backend) is None:
        raise ValueError(f"backend: {backend!r} is not installed (pip install 'lyra-solver[gpu]' for torch)")
    return backend


def value_table(jobs: Sequence[JobOptions], *, server_gpus: int = 8, backend: str = "auto") -> ValueTable:
    """JCT-reduction values of all jobs x all options in one vectorised pass.

    Parameters
    ----------
    jobs : list of JobOptions
    server_gpus : int
        Server size used by ``profile`` throughputs to count spanned servers.
    backend : {"auto", "numpy", "torch", "cupy"}
        See :func:`resolve_backend`. torch and cupy give the numpy numbers within
        :data:`lyra_solver.values_gpu.RTOL` (float64: ``1e-9`` of ``|T(min)| + |T(w)| + penalty``).

    Returns
    -------
    ValueTable

    Notes
    -----
    Running time O(J * M) array work plus O(J) Python for table throughputs (one ``interp`` each).
    """
    n = len(jobs)
    cells = n * max((j.max_workers - j.min_workers + 1 for j in jobs), default=1)
    # a thinned grid (step > 1, the pipeline's size limit) is numpy's: the device kernels take whole rows
    chosen = "numpy" if any(j.step > 1 for j in jobs) else resolve_backend(backend, cells)
    if chosen != "numpy" and n:
        from lyra_solver.values_gpu import value_table_gpu

        return value_table_gpu(jobs, server_gpus=server_gpus, backend=chosen)
    return _value_table_numpy(jobs, server_gpus)


def value_tables(batches: Sequence[Sequence[JobOptions]], *, server_gpus: int = 8,
                 backend: str = "auto") -> list[ValueTable]:
    """The tables of many job sets (snapshots, what-if variants) in one pass: one launch on a GPU.

    Parameters
    ----------
    batches : sequence of sequences of JobOptions
        Each may be empty.
    server_gpus, backend
        As :func:`value_table` (``auto`` counts the cells of all batches together).

    Returns
    -------
    list of ValueTable
        ``out[b]`` equals ``value_table(batches[b], ...)``: same rows, same width (its own widest job).

    Notes
    -----
    Running time that of one table of all the jobs (O(sum J_b * max M_b)), then one row slice per batch.
    """
    flat = [j for b in batches for j in b]
    whole = value_table(flat, server_gpus=server_gpus, backend=backend) if flat else None
    out, start = [], 0
    for b in batches:
        n = len(b)
        if n == 0:
            z = np.zeros((0, 1))
            out.append(ValueTable(z, z.astype(np.int64), z.copy(), np.zeros(0, np.int64), np.zeros(0, np.int64)))
            continue
        rows = slice(start, start + n)
        m = int(whole.sizes[rows].max())
        out.append(ValueTable(values=whole.values[rows, :m].copy(), weights=whole.weights[rows, :m].copy(),
                              times=whole.times[rows, :m].copy(), sizes=whole.sizes[rows].copy(),
                              min_workers=whole.min_workers[rows].copy()))
        start += n
    return out


def _value_table_numpy(jobs: Sequence[JobOptions], server_gpus: int) -> ValueTable:
    """The numpy reference of :func:`value_table`."""
    n = len(jobs)
    mins = np.fromiter((j.min_workers for j in jobs), np.int64, n)
    maxs = np.fromiter((j.max_workers for j in jobs), np.int64, n)
    base, step, sizes = option_grid(jobs)
    m = int(sizes.max()) if n else 1
    offs = np.arange(m, dtype=np.int64)
    mask = offs[None, :] < sizes[:, None]
    # padding repeats the last option; a thinned row (step > 1) starts at min and ends at max
    w = np.clip(base[:, None] + offs[None, :] * step[:, None], mins[:, None], maxs[:, None])
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
    times = np.minimum(work[:, None] / rate, TIME_CAP)
    restart = (cur[:, None] > 0) & (w != cur[:, None])
    values = times[:, :1] - times - pen[:, None] * restart
    values = np.where(mask, values, -np.inf)
    weights = gpw[:, None] * (w - mins[:, None])
    return ValueTable(values=values, weights=weights, times=times, sizes=sizes, min_workers=mins)


def option_grid(jobs: list[JobOptions]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Worker counts of each job's options: ``clip(base + k * step, min, max)`` for ``k < sizes``.

    ``step`` 1 (the default) is every count ``min..max``. A larger step keeps ``min``, ``max``, the current
    count of a running job and every ``step``-th count in line with it (the pipeline thins very wide rows so
    that the table stays within its documented size). Returns ``(base, step, sizes)``.
    """
    n = len(jobs)
    mins = np.fromiter((j.min_workers for j in jobs), np.int64, n)
    maxs = np.fromiter((j.max_workers for j in jobs), np.int64, n)
    step = np.fromiter((max(1, j.step) for j in jobs), np.int64, n)
    cur = np.fromiter((j.current_workers for j in jobs), np.int64, n)
    anchor = np.where((cur >= mins) & (cur <= maxs), cur, mins)
    base = mins - (anchor - mins) % step
    sizes = -((base - maxs) // step) + 1  # ceil((max - base) / step) + 1
    return base, step, sizes


#: Remaining times are capped here (seconds, about 30 million years) so that absurd but valid inputs
#: (huge work, tiny rates) give finite values instead of ``inf - inf``.
TIME_CAP = 1e15

_KIND = {PowerThroughput: 0, TableThroughput: 1, ProfileThroughput: 2}


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
