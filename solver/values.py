"""The value table: the objective's value of every option of every job (DESIGN "Value table", "Objectives").

For job ``j`` and option ``w`` in ``[min_j, max_j]``, with the default objective ``jct-reduction`` (Lyra's)::

    V_j(w) = T_j(min_j) - T_j(w) - restart_penalty_j * [running_j and w != current_j]
    weight_j(w) = gpus_per_worker_j * (w - min_j),     T_j(w) = remaining_work_j / rate_j(w)

``objective=`` picks another formula of :mod:`lyra_solver.objectives` (``pollux``, ``srpt``, ``hesrpt``): the
same times ``T_j(w)``, weights and padding, another ``V``.

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
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import chain
from operator import attrgetter

import numpy as np
from lyra_solver.objectives import check_objective, horizons, objective_values, prepare, value_scalar
from lyra_solver.throughput import _profiles, rate_one
from lyra_solver.types import PowerThroughput, ProfileThroughput, TableThroughput
from lyra_solver.value_types import TIME_CAP, JobOptions, ValueTable

__all__ = ["AUTO_MIN_CELLS", "BACKENDS", "TIME_CAP", "JobOptions", "ValueTable", "lp_bound", "lyra_table",
           "lyra_table_of_jobs",
           "option_grid", "option_value", "resolve_backend", "times_at", "value_table", "value_table_scalar",
           "value_tables"]


def option_value(table: ValueTable, row: int, job: JobOptions, w: int, *, server_gpus: int = 8) -> float:
    """The value of ``w`` workers for the job of ``table``'s row ``row`` (``job`` its options), by the table's
    objective, whether or not ``w`` is on the row's grid: ``T(min)`` from the table, ``T(w)`` by one scalar rate
    evaluation. O(1)."""
    r = rate_one(job.throughput, w, gpus_per_worker=job.gpus_per_worker, server_gpus=server_gpus)
    t = min(job.remaining_work / r, TIME_CAP)
    restart = job.current_workers > 0 and w != job.current_workers
    age = 0.0 if table.ages is None else float(table.ages[row])
    weight = 1.0 if table.job_weights is None else float(table.job_weights[row])
    return value_scalar(table.objective, t, float(table.times[row, 0]), restart, job.restart_penalty, age, weight)


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


def value_table(jobs: Sequence[JobOptions], *, server_gpus: int = 8, backend: str = "auto",
                objective: str = "jct-reduction", ages: Sequence[float] | None = None) -> ValueTable:
    """The values of all jobs x all options in one vectorised pass.

    Parameters
    ----------
    jobs : list of JobOptions
    server_gpus : int
        Server size used by ``profile`` throughputs to count spanned servers.
    backend : {"auto", "numpy", "torch", "cupy"}
        See :func:`resolve_backend`. torch and cupy give the numpy numbers within
        :data:`lyra_solver.values_gpu.RTOL` (float64: ``1e-9`` of ``|T(min)| + |T(w)| + penalty``).
    objective : str
        One of :data:`lyra_solver.objectives.OBJECTIVES` (default ``jct-reduction``, Lyra's value).
    ages : sequence of float, optional
        Seconds since each job's submission (``now - submit_time``): the restart horizon of every objective but
        ``jct-reduction`` (:func:`lyra_solver.objectives.horizons`); 0 (the shortest horizon) when not given.

    Returns
    -------
    ValueTable

    Notes
    -----
    Running time O(J * M) array work plus O(J) Python for table throughputs (one ``interp`` each).
    """
    check_objective(objective)
    extra = None
    if objective != "jct-reduction":
        extra = (_ages(ages, len(jobs)), prepare(jobs, objective, server_gpus=server_gpus))
    return _dispatch(jobs, server_gpus, backend, objective, extra)


def _ages(ages: Sequence[float] | None, n: int) -> np.ndarray:
    if ages is None:
        return np.zeros(n)
    a = np.asarray(ages, np.float64).reshape(-1)
    if a.shape[0] != n:
        raise ValueError(f"ages: expected {n} values (one per job), got {a.shape[0]}")
    return a


def _dispatch(jobs: Sequence[JobOptions], server_gpus: int, backend: str, objective: str,
              extra: tuple[np.ndarray, np.ndarray] | None) -> ValueTable:
    """The table on the backend ``backend`` picks; ``extra`` = (ages, weights) of an objective but Lyra's."""
    n = len(jobs)
    cols = list(zip(*jobs, strict=True)) if n else None  # the jobs transposed once, for here and the numpy path
    cells, thinned = 0, False
    if n:
        cells = n * (max(map(operator.sub, cols[_FIELD["max_workers"]], cols[_FIELD["min_workers"]])) + 1)
        thinned = max(cols[_FIELD["step"]]) > 1
    # a thinned grid (step > 1, the pipeline's size limit) is numpy's: the device kernels take whole rows
    chosen = "numpy" if thinned else resolve_backend(backend, cells)
    if chosen != "numpy" and n:
        from lyra_solver.values_gpu import value_table_gpu

        return value_table_gpu(jobs, server_gpus=server_gpus, backend=chosen, objective=objective,
                               ages=None if extra is None else extra[0])
    return _value_table_numpy(jobs, server_gpus, objective, extra, cols)


def value_tables(batches: Sequence[Sequence[JobOptions]], *, server_gpus: int = 8,
                 backend: str = "auto", objective: str = "jct-reduction",
                 ages: Sequence[Sequence[float] | None] | None = None) -> list[ValueTable]:
    """The tables of many job sets (snapshots, what-if variants) in one pass: one launch on a GPU.

    Parameters
    ----------
    batches : sequence of sequences of JobOptions
        Each may be empty.
    server_gpus, backend, objective
        As :func:`value_table` (``auto`` counts the cells of all batches together; an objective with per-job
        weights computes them per batch).
    ages : sequence of (sequence of float or None), optional
        Per batch, as :func:`value_table`'s ``ages``.

    Returns
    -------
    list of ValueTable
        ``out[b]`` equals ``value_table(batches[b], ...)``: same rows, same width (its own widest job).

    Notes
    -----
    Running time that of one table of all the jobs (O(sum J_b * max M_b)), then one row slice per batch.
    """
    check_objective(objective)
    flat = [j for b in batches for j in b]
    extra = None
    if objective != "jct-reduction" and flat:
        per = [None] * len(batches) if ages is None else list(ages)
        extra = (np.concatenate([_ages(a, len(b)) for a, b in zip(per, batches, strict=True)]),
                 np.concatenate([prepare(b, objective, server_gpus=server_gpus) for b in batches]))
    whole = _dispatch(flat, server_gpus, backend, objective, extra) if flat else None
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
                              min_workers=whole.min_workers[rows].copy(), objective=objective,
                              ages=None if whole.ages is None else whole.ages[rows].copy(),
                              job_weights=None if whole.job_weights is None else whole.job_weights[rows].copy()))
        start += n
    return out


def _value_table_numpy(jobs: Sequence[JobOptions], server_gpus: int, objective: str = "jct-reduction",
                       extra: tuple[np.ndarray, np.ndarray] | None = None, cols: list | None = None) -> ValueTable:
    """The numpy reference of :func:`value_table` (``cols``: the jobs transposed, ``zip(*jobs)``, when the caller
    has them)."""
    n = len(jobs)
    if n and cols is None:
        cols = list(zip(*jobs, strict=True))
    mins, maxs, gpw, cur, step, pin = _columns(jobs, _TABLE_INTS, np.int64, cols)
    work, pen = _columns(jobs, _TABLE_FLOATS, np.float64, cols)
    return _table_numpy(cols[0] if n else [], mins, maxs, gpw, cur, step, pin, work, pen, server_gpus, objective,
                        extra)


def lyra_table(throughputs: Sequence, mins: np.ndarray, maxs: np.ndarray, gpw: np.ndarray, cur: np.ndarray,
               work: np.ndarray, pen: np.ndarray, *, server_gpus: int = 8) -> ValueTable:
    """:func:`value_table` of Lyra's value (``jct-reduction``) on numpy for jobs given as columns: row ``i`` is
    the job ``JobOptions(throughputs[i], mins[i], maxs[i], work[i], gpw[i], cur[i], pen[i])``, every count
    ``mins[i]..maxs[i]`` (step 1).

    For a caller that has the columns already (the scale step, from the index view's arrays): the table
    :func:`value_table` makes of those options with ``backend="numpy"``, bit for bit, without a
    :class:`JobOptions` per job. Integer columns are int64 arrays, ``work`` and ``pen`` float64 arrays, of one
    length (at least 1).

    Running time that of :func:`value_table`: O(J M) for J jobs and M options in the widest row.
    """
    ones = np.ones_like(mins)
    return _table_numpy(throughputs, mins, maxs, gpw, cur, ones, ones - 1, work, pen, server_gpus, "jct-reduction",
                        None)


def lyra_table_of_jobs(jobs: Sequence, mins: np.ndarray, maxs: np.ndarray, gpw: np.ndarray, cur: np.ndarray,
                       charged: np.ndarray, *, server_gpus: int = 8) -> ValueTable:
    """:func:`lyra_table` of the job structs ``jobs`` (their ``throughput``, ``remaining_work`` and
    ``restart_penalty``, the penalty 0 where ``charged`` is false) with the given integer columns: the same table,
    bit for bit. The structs are read once each; when every throughput is a ``profile`` and the package's kernels
    are loaded in this process, the compiled table is called directly (:func:`_compiled_profile_table`, the path
    :func:`lyra_table` takes there, without its grid and kinds arrays and column copies).

    Running time that of :func:`lyra_table`: O(J M) for J jobs and M options in the widest row.
    """
    n = len(jobs)
    tps = [j.throughput for j in jobs]
    work = np.fromiter([j.remaining_work for j in jobs], np.float64, n)
    pen = np.fromiter([j.restart_penalty for j in jobs], np.float64, n)
    if not charged.all():
        pen[~charged] = 0.0
    if n:  # every throughput a profile, the kernels loaded: the compiled table, called as lyra_table calls it
        sizes = maxs - mins + 1
        compiled = _compiled_profile_table(tps, mins, maxs, gpw, cur, work, pen, int(sizes.max()), server_gpus)
        if compiled is not None:
            _, times, values, weights = compiled
            return ValueTable(values=values, weights=weights, times=times, sizes=sizes, min_workers=mins)
    return lyra_table(tps, mins, maxs, gpw, cur, work, pen, server_gpus=server_gpus)


def _table_numpy(throughputs: Sequence, mins: np.ndarray, maxs: np.ndarray, gpw: np.ndarray, cur: np.ndarray,
                 step: np.ndarray, pin: np.ndarray, work: np.ndarray, pen: np.ndarray, server_gpus: int,
                 objective: str, extra: tuple[np.ndarray, np.ndarray] | None) -> ValueTable:
    """The numpy table of the jobs' columns (:func:`_value_table_numpy` after transposing the options)."""
    n = mins.shape[0]
    base, step, sizes = _grid(mins, maxs, np.maximum(step, 1), cur, pin)
    m = int(sizes.max()) if n else 1
    # rows of step 1 only (base is mins): a thinned grid is numpy's
    kinds = _kinds(throughputs)  # read once, for both paths
    compiled = _compiled_profile_table(throughputs, mins, maxs, gpw, cur, work, pen, m, server_gpus, kinds) \
        if n and base is mins else None
    if compiled is not None:  # every job a profile, the kernels loaded: one call, the same floats
        w, times, lyra, weights = compiled
        if objective == "jct-reduction":
            return ValueTable(values=lyra, weights=weights, times=times, sizes=sizes, min_workers=mins,
                              objective=objective, ages=None if extra is None else extra[0],
                              job_weights=None if extra is None else extra[1])
    offs = np.arange(m, dtype=np.int64)
    mask = offs[None, :] < sizes[:, None]
    if compiled is None:
        # padding repeats the last option; a thinned row (step > 1) starts at min and ends at max
        w = _clamp(base[:, None] + offs[None, :] * step[:, None], mins[:, None], maxs[:, None])
        rate = _rates(throughputs, w, gpw, server_gpus, kinds)
        with np.errstate(over="ignore", divide="ignore"):  # huge work over a tiny rate: inf, capped just below
            times = np.minimum(work[:, None] / rate, TIME_CAP)
    restart = (cur[:, None] > 0) & (w != cur[:, None])
    if objective == "jct-reduction":  # Lyra's value, computed as before (the same bytes)
        values = times[:, :1] - times - pen[:, None] * restart
    else:
        age, wt = extra if extra is not None else (np.zeros(n), np.ones(n))
        values = objective_values(np, objective, times, times[:, :1], restart, pen[:, None],
                                  horizons(age)[:, None], wt[:, None])
    values = np.where(mask, values, -np.inf)
    weights = gpw[:, None] * (w - mins[:, None])
    return ValueTable(values=values, weights=weights, times=times, sizes=sizes, min_workers=mins, objective=objective,
                      ages=None if extra is None else extra[0], job_weights=None if extra is None else extra[1])


def _compiled_profile_table(throughputs: Sequence, mins: np.ndarray, maxs: np.ndarray, gpw: np.ndarray,
                            cur: np.ndarray, work: np.ndarray, pen: np.ndarray, m: int, server_gpus: int,
                            kinds: np.ndarray | None = None):
    """Worker counts, times, Lyra's values and weights of rows ``mins..maxs`` (step 1, padded to ``m``) by the
    compiled table (:func:`lyra_solver._nbvalues.profile_table`: the numpy path's floats) when every throughput is
    a ``profile`` and the package's numba kernels are loaded in this process; else ``None`` (the numpy path).
    ``kinds``: :func:`_kinds` of the throughputs, where the caller has it."""
    if not _numba_loaded():
        return None
    if kinds is not None:
        if not kinds.size or int(kinds.min()) != _PROFILE:
            return None
    elif set(map(type, throughputs)) != {ProfileThroughput}:
        return None
    nb = _value_kernels()
    if nb is None:
        return None
    index, stack, n_max, k_max = _profile_stack()
    model = np.fromiter([index[t.model] for t in throughputs], np.int64, len(throughputs))  # (an attrgetter: 1.3x)
    return nb.profile_table(model, np.maximum(server_gpus // gpw, 1), mins, maxs, gpw, cur, work, pen, m, stack,
                            n_max, k_max, TIME_CAP)




def _numba_loaded() -> bool:
    from lyra_solver.formulations.mckp._numba import loaded

    return loaded()


@cache
def _value_kernels():
    """:mod:`lyra_solver._nbvalues`, imported once (``None`` when numba cannot be imported)."""
    try:
        import lyra_solver._nbvalues as nb
    except ImportError:
        return None
    return nb


def _kinds(throughputs: Sequence) -> np.ndarray:
    """Each throughput's kind: 0 power, 1 table, 2 profile (int8). O(n) C-level lookups."""
    return np.fromiter(map(_KIND.__getitem__, map(type, throughputs)), np.int8, len(throughputs))


def _rates(throughputs: Sequence, w: np.ndarray, gpw: np.ndarray, server_gpus: int,
           kinds: np.ndarray | None = None, read: ThroughputColumns | None = None) -> np.ndarray:
    """The rate of job ``i`` at ``w[i, k]`` workers (``gpw[i]`` GPUs each), every kind vectorised: the numbers of
    :func:`value_table` (which calls it) whatever the caller. ``kinds``: :func:`_kinds` of the throughputs, where
    the caller has it; ``read``: their columns read already (:func:`read_columns`, ``kinds`` its own)."""
    n, m = w.shape
    rate = np.empty((n, m), dtype=np.float64)
    # the columns are read by list comprehensions: generator expressions took twice as long on 43,000 jobs, maps of
    # an attrgetter 1.3 times
    if kinds is None:
        kinds = _kinds(throughputs)
    # power law: one broadcast over all power jobs
    idx = np.flatnonzero(kinds == 0)
    if idx.size:
        if read is None:
            power = [throughputs[i] for i in idx.tolist()]
            r = np.fromiter([t.rate_per_worker for t in power], np.float64, idx.size)
            e = np.fromiter([t.exponent for t in power], np.float64, idx.size)
        else:
            r, e = read.rate_per_worker, read.exponent
        rate[idx] = r[:, None] * w[idx].astype(np.float64) ** e[:, None]
    # measured tables: np.interp's numbers, one interp per job for a few, else all rows at once
    idx = np.flatnonzero(kinds == 1)
    if idx.size >= _INTERP_ROWS_MIN and m == 1:  # one count per row (the sjf key's): at a table's first point,
        tables = list(map(throughputs.__getitem__, idx.tolist()))  # np.interp gives its first rate
        first = np.fromiter(map(_FIRST, map(_WORKERS, tables)), np.int64, idx.size) == w[idx, 0]
        at = np.flatnonzero(first)
        rate[idx[at], 0] = np.fromiter(map(_FIRST, map(_RATE, map(tables.__getitem__, at.tolist()))), np.float64,
                                       at.size)
        if at.size < idx.size:
            off = np.flatnonzero(~first)
            rate[idx[off]] = _interp_rows(list(map(tables.__getitem__, off.tolist())), w[idx[off]])
    elif idx.size >= _INTERP_ROWS_MIN:
        rate[idx] = _interp_rows(list(map(throughputs.__getitem__, idx.tolist())), w[idx])
    else:
        for i in idx.tolist():
            tp = throughputs[i]
            rate[i] = np.interp(w[i], tp.workers, tp.rate)
    # profiles: one gather over all profile jobs (each row reads its own model's grid, clamped to that grid;
    # the servers spanned as throughput.servers_spanned counts them): the numbers of one gather per model
    idx = np.flatnonzero(kinds == 2)
    if idx.size:
        index, stack, n_max, k_max = _profile_stack()
        model = read.model if read is not None else np.fromiter(
            [index[throughputs[i].model] for i in idx.tolist()], np.int64, idx.size)
        per_server = np.maximum(server_gpus // gpw[idx], 1)
        ww = w[idx]
        k = -(-ww // per_server[:, None])
        rate[idx] = stack[model[:, None], _clamp(ww, 1, n_max[model][:, None]) - 1,
                          _clamp(k, 1, k_max[model][:, None]) - 1] * ww
    return rate


_WORKERS, _RATE = attrgetter("workers"), attrgetter("rate")
_FIRST = operator.itemgetter(0)

#: Table rows from which :func:`_rates` interpolates them all at once (:func:`_interp_rows`): below it, one
#: ``np.interp`` per row costs less than the batched version's dozen array passes.
_INTERP_ROWS_MIN = 16


def _interp_rows(tables: Sequence, x: np.ndarray) -> np.ndarray:
    """``np.interp(x[i], tables[i].workers, tables[i].rate)`` for every row ``i``, in one pass over all rows.

    The same floats as ``np.interp`` (NumPy's ``arr_interp``): with ``j`` the last point at or below ``x``, the
    first rate below the first point, the last rate at or above the last point, the point's rate at a point,
    else ``slope * (x - xp[j]) + fp[j]`` with ``slope = (fp[j+1] - fp[j]) / (xp[j+1] - xp[j])`` (and, as
    NumPy does, the expression from the right point where that is nan, then ``fp[j]`` if both rates are equal).
    Each table's worker counts are strictly increasing positive integers (the snapshot's rule), so one
    ``searchsorted`` over every table's points, each offset by its row, finds ``j`` for all rows at once.

    Running time O(P + R M log P) for P points in all, R rows and M columns of ``x``.
    """
    lens = np.fromiter(map(len, map(_WORKERS, tables)), np.int64, len(tables))
    ends = np.cumsum(lens)
    starts = ends - lens
    xp_int = np.fromiter(chain.from_iterable(map(_WORKERS, tables)), np.int64, int(ends[-1]))
    fp = np.fromiter(chain.from_iterable(map(_RATE, tables)), np.float64, int(ends[-1]))
    span = int(xp_int.max()) + 2  # a row's points and clamped queries lie in [0, span)
    rows = np.arange(len(tables), dtype=np.int64)
    key = np.repeat(rows * span, lens) + xp_int
    q = x.astype(np.int64)
    j = np.searchsorted(key, (rows * span)[:, None] + _clamp(q, 0, span - 1), side="right") - 1  # global index
    first, last = starts[:, None], ends[:, None] - 1
    below, above = j < first, j >= last
    j = _clamp(j, first, np.maximum(last - 1, first))  # a segment's left point (interior rows use it)
    k = np.minimum(j + 1, last)
    xp = xp_int.astype(np.float64)
    xv = q.astype(np.float64)
    x0, x1, y0, y1 = xp[j], xp[k], fp[j], fp[k]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        slope = (y1 - y0) / (x1 - x0)
        out = slope * (xv - x0) + y0
        bad = np.isnan(out)
        if bad.any():
            again = slope * (xv - x1) + y1
            out = np.where(bad, np.where(np.isnan(again) & (y0 == y1), y0, again), out)
    out = np.where(xv == x0, y0, out)
    out = np.where(below, fp[starts][:, None], out)
    return np.where(above, fp[ends - 1][:, None], out)


@dataclass(frozen=True, eq=False)
class ThroughputColumns:
    """What :func:`read_columns` read of a sequence of jobs in one pass: each job's ``throughput``, ``submit_time``
    and ``remaining_work``, the throughputs' kinds (:func:`_kinds`), and the columns of the kinds that have them,
    in job order within each kind: the power laws' rates per worker and exponents, the profiles' model indices
    (:func:`_profile_stack`)."""

    throughputs: list
    submit_time: np.ndarray
    remaining_work: np.ndarray
    kinds: np.ndarray
    rate_per_worker: np.ndarray
    exponent: np.ndarray
    model: np.ndarray


def read_columns(jobs: Sequence) -> ThroughputColumns:
    """One pass over the job structs ``jobs`` for their ``throughput``, ``submit_time`` and ``remaining_work``, then
    :func:`read_throughputs` of the throughputs (:class:`ThroughputColumns`). The same values as reading each
    column in a pass of its own (C-level maps, as :func:`_rates` does), at one visit of each struct: on 43,000
    queued jobs the separate passes each paid the memory reads again. For a snapshot that validation read already
    (:class:`lyra_solver.validate.JobColumns`) the caller takes those columns and calls :func:`read_throughputs`
    alone. O(len(jobs))."""
    n = len(jobs)
    submit, work, tps = [0.0] * n, [0.0] * n, [None] * n
    for q, j in enumerate(jobs):
        submit[q] = j.submit_time
        work[q] = j.remaining_work
        tps[q] = j.throughput
    return read_throughputs(tps, np.array(submit, np.float64), np.array(work, np.float64))


def known_throughputs(known, jobs: list[int], at: np.ndarray) -> ThroughputColumns:
    """The :class:`ThroughputColumns` of the jobs ``jobs`` (``at``: the same as an int64 array) from the columns
    that validation read of every job (:class:`lyra_solver.validate.JobColumns`: throughputs, kind codes, the
    power laws' rates and exponents and the profiles' models in job order, submit times, remaining work): the
    same values as :func:`read_columns` of their structs, by gathers, without visiting a struct. O(J) in C plus
    O(len(jobs)) to list the throughputs."""
    n = len(known.kinds)
    kinds = known.kinds
    sub = kinds[at]
    # each job's position among the jobs of its kind, for the jobs of that kind among ``jobs`` (in their order)
    power = np.flatnonzero(kinds == 0)
    profile = np.flatnonzero(kinds == _PROFILE)
    rank = np.empty(n, np.int64)
    rank[power] = np.arange(power.size)
    rank[profile] = np.arange(profile.size)
    p_at = rank[at[sub == 0]]
    m_at = rank[at[sub == _PROFILE]]
    index = _profile_stack()[0]
    models = np.fromiter(map(index.__getitem__, known.models), np.int64, len(known.models))
    tps = known.throughputs
    return ThroughputColumns([tps[q] for q in jobs], known.submit[at], known.work[at], sub, known.rates[p_at],
                             known.exps[p_at], models[m_at])


def read_throughputs(throughputs: list, submit_time: np.ndarray, remaining_work: np.ndarray) -> ThroughputColumns:
    """The :class:`ThroughputColumns` of jobs whose ``throughputs`` (a list), submit times and remaining work
    (float64 arrays in the same order) are known: one pass over the throughputs for their kinds and the kinds'
    columns. O(len(throughputs))."""
    n = len(throughputs)
    kind = bytearray(n)
    rates: list[float] = []
    exps: list[float] = []
    models: list[int] = []
    index = _profile_stack()[0]
    codes = _KIND
    power, profile = PowerThroughput, ProfileThroughput
    for q, tp in enumerate(throughputs):
        c = type(tp)
        if c is power:
            rates.append(tp.rate_per_worker)
            exps.append(tp.exponent)
        else:
            kind[q] = codes[c]
            if c is profile:
                models.append(index[tp.model])
    return ThroughputColumns(throughputs, submit_time, remaining_work, np.frombuffer(kind, np.int8),
                             np.array(rates, np.float64), np.array(exps, np.float64), np.array(models, np.int64))


def times_at(throughputs: Sequence, workers: np.ndarray, work: np.ndarray, gpus_per_worker: np.ndarray, *,
             server_gpus: int = 8, read: ThroughputColumns | None = None) -> np.ndarray:
    """Remaining time ``T_i(workers[i])`` of each job (its throughput, remaining ``work`` and GPUs per worker), as
    :func:`value_table` computes it (the same floats as the table's cell), without the rest of the table.
    ``read``: the throughputs' columns read already (:func:`read_columns` of their jobs). O(n) array work plus one
    ``interp`` per ``table`` throughput; a few ``profile`` throughputs (at most :data:`_SCALAR_MAX`, such as the
    jobs new to a simulator round's queue) by one scalar rate each."""
    w = np.asarray(workers, np.int64).reshape(-1, 1)
    gpw = np.asarray(gpus_per_worker, np.int64)
    n = w.shape[0]
    kinds = _kinds(throughputs) if read is None else read.kinds  # read once, for both paths
    if 0 < n <= _SCALAR_MAX and int(kinds.min()) == _PROFILE:
        few = _times_scalar(throughputs, w[:, 0].tolist(), np.asarray(work, np.float64).tolist(), gpw.tolist(),
                            server_gpus)
        if few is not None:
            return few
    return _times_vector(throughputs, w, work, gpw, server_gpus, kinds, read)


#: Profile jobs up to which :func:`times_at` takes one scalar rate each (:func:`_times_scalar`): the compiled or
#: numpy table's fixed cost (about 40-70 us a call in a simulator round) is that of 30 or more scalar rates; the
#: bound is half that, so a round of more new jobs (rare) keeps the table.
_SCALAR_MAX = 16


def _times_scalar(throughputs: Sequence, workers: list[int], work: list[float], gpw: list[int],
                  server_gpus: int) -> np.ndarray | None:
    """:func:`times_at` of ``profile`` throughputs by :func:`~lyra_solver.throughput.rate_one`, the same floats as
    the table's cell (a measured rate times the workers, ``work`` over it, capped at :data:`TIME_CAP`: the same
    float operations in the same order; tested on every count). ``None`` where a rate is 0 (the table's division
    gives ``inf`` or ``nan`` there, Python's raises): the caller takes the table's path. O(n)."""
    rates = [rate_one(tp, k, gpus_per_worker=g, server_gpus=server_gpus)
             for tp, k, g in zip(throughputs, workers, gpw, strict=True)]
    if not all(rates):
        return None
    return np.array([min(x / r, TIME_CAP) for x, r in zip(work, rates, strict=True)], np.float64)


def _times_vector(throughputs: Sequence, w: np.ndarray, work, gpw: np.ndarray, server_gpus: int, kinds: np.ndarray,
                  read: ThroughputColumns | None) -> np.ndarray:
    """:func:`times_at` by the compiled table (every throughput a profile, the kernels loaded) or numpy's."""
    n = w.shape[0]
    if n:  # the compiled table's first column, when it applies: the same floats
        counts = w[:, 0].copy()
        compiled = _compiled_profile_table(throughputs, counts, counts, gpw, np.zeros(n, np.int64),
                                           np.asarray(work, np.float64), np.zeros(n), 1, server_gpus, kinds)
        if compiled is not None:
            return compiled[1][:, 0]
    rate = _rates(throughputs, w, gpw, server_gpus, kinds, read)
    with np.errstate(over="ignore", divide="ignore"):
        return np.minimum(np.asarray(work, np.float64)[:, None] / rate, TIME_CAP)[:, 0]


@cache
def _profile_stack() -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray]:
    """The profiles' per-replica rate grids (:func:`lyra_solver.throughput._profiles`) as one array: model name ->
    index, the grids stacked (zero-padded to the largest), and each grid's own replica and server counts."""
    profiles = _profiles()
    names = sorted(profiles)
    n_max = np.array([profiles[m].shape[0] for m in names], np.int64)
    k_max = np.array([profiles[m].shape[1] for m in names], np.int64)
    stack = np.zeros((len(names), int(n_max.max(initial=1)), int(k_max.max(initial=1))), np.float64)
    for i, m in enumerate(names):
        stack[i, :n_max[i], :k_max[i]] = profiles[m]
    for a in (stack, n_max, k_max):
        a.setflags(write=False)
    return {m: i for i, m in enumerate(names)}, stack, n_max, k_max


def _clamp(a: np.ndarray, lo, hi) -> np.ndarray:
    """``np.clip(a, lo, hi)`` of integer arrays, as numpy defines it (``minimum(maximum(a, lo), hi)``), without
    ``np.clip``'s per-call dtype checks (which were a fifth of a small value table's time)."""
    return np.minimum(np.maximum(a, lo), hi)


def option_grid(jobs: list[JobOptions]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Worker counts of each job's options: ``clip(base + k * step, min, max)`` for ``k < sizes``.

    ``step`` 1 (the default) is every count ``min..max``. A larger step keeps ``min``, ``max``, the ``anchor``
    (when set and in range; else the current count of a running job) and every ``step``-th count in line with
    it (the pipeline thins very wide rows so that the table stays within its documented size). Returns
    ``(base, step, sizes)``.
    """
    mins, maxs, step, cur, pin = _columns(jobs, _GRID_INTS, np.int64)
    return _grid(mins, maxs, np.maximum(step, 1), cur, pin)


def _grid(mins: np.ndarray, maxs: np.ndarray, step: np.ndarray, cur: np.ndarray,
          pin: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`option_grid` of the jobs' columns (``step`` already at least 1)."""
    if not (step > 1).any():  # every count: the formulas below with step 1 give base = min, sizes = max - min + 1
        return mins, step, maxs - mins + 1
    anchor = np.where((pin >= mins) & (pin <= maxs), pin, np.where((cur >= mins) & (cur <= maxs), cur, mins))
    base = mins - (mins - anchor) % step  # the largest count <= min in line with the anchor
    sizes = -((base - maxs) // step) + 1  # ceil((max - base) / step) + 1
    return base, step, sizes


#: The fields of :class:`JobOptions` that :func:`option_grid` and the value table read, as columns.
_GRID_INTS = ("min_workers", "max_workers", "step", "current_workers", "anchor")
_TABLE_INTS = ("min_workers", "max_workers", "gpus_per_worker", "current_workers", "step", "anchor")
_TABLE_FLOATS = ("remaining_work", "restart_penalty")


def _columns(jobs: Sequence[JobOptions], fields: tuple[str, ...], dtype, cols: list | None = None) -> np.ndarray:
    """The given fields of every job as the rows of one ``(fields, jobs)`` array: the jobs (named tuples) transposed
    once (``cols``, ``zip(*jobs)``, when the caller has it already), then one conversion of a few long tuples (one
    per field), where a conversion of one short tuple per job cost twice as much and one ``fromiter`` per field
    more still."""
    if not jobs:
        return np.zeros((len(fields), 0), dtype)
    if cols is None:
        cols = list(zip(*jobs, strict=True))
    return np.array([cols[_FIELD[f]] for f in fields], dtype=dtype)


_FIELD = {f: i for i, f in enumerate(JobOptions._fields)}


_KIND = {PowerThroughput: 0, TableThroughput: 1, ProfileThroughput: 2}
_PROFILE = _KIND[ProfileThroughput]


def value_table_scalar(jobs: list[JobOptions], *, server_gpus: int = 8, objective: str = "jct-reduction",
                       ages: Sequence[float] | None = None) -> list[list[tuple[int, float]]]:
    """Reference: ``[(weight, value) for each option]`` per job, one scalar evaluation at a time."""
    out = []
    age = _ages(ages, len(jobs)).tolist()
    weight = prepare(jobs, check_objective(objective), server_gpus=server_gpus).tolist()
    for i, j in enumerate(jobs):
        def t(w: int, j=j) -> float:
            r = rate_one(j.throughput, w, gpus_per_worker=j.gpus_per_worker, server_gpus=server_gpus)
            return min(j.remaining_work / r, TIME_CAP)
        row = []
        for w in range(j.min_workers, j.max_workers + 1):
            restart = j.current_workers > 0 and w != j.current_workers
            v = value_scalar(objective, t(w), t(j.min_workers), restart, j.restart_penalty, age[i], weight[i])
            row.append((j.gpus_per_worker * (w - j.min_workers), v))
        out.append(row)
    return out


# ------------------------------------------------------------------------------------- LP bound of a full table
#: Pieces (see :func:`_row_pieces`) beyond which a profile job's measured points (at most 64 per job) are read as
#: one coarse piece each (their largest rate at their smallest worker count: a valid, looser bound), so that the
#: bound's memory stays O(:data:`MAX_BOUND_PIECES`) whatever the number of jobs.
MAX_BOUND_PIECES = 1 << 21


@dataclass(frozen=True, eq=False)
class _Pieces:
    """A job's options ``w`` in ``[lo, hi]`` (real numbers), each piece with a rate concave-friendly in ``w``.

    ``power`` pieces have ``rate = a * w ** b`` (``0 < b <= 1``); linear pieces ``rate = a + b * w`` (positive on
    the piece). On either, ``-work / rate(w)`` is concave in ``w``, so ``-T(w) - lam * g * w`` has its real
    maximum at the clipped stationary point. ``row`` indexes the job; pieces are grouped by row, in order.
    """

    row: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    a: np.ndarray
    b: np.ndarray
    power: np.ndarray  # bool


def _row_pieces(jobs: Sequence[JobOptions], server_gpus: int) -> _Pieces:
    """Concave pieces covering every option ``min..max_workers`` of each job (O(J + pieces) Python work)."""
    row: list[int] = []
    lo: list[float] = []
    hi: list[float] = []
    a: list[float] = []
    b: list[float] = []
    power: list[bool] = []

    def add(i: int, l_: float, h: float, a_: float, b_: float, p: bool = False) -> None:
        row.append(i)
        lo.append(l_)
        hi.append(h)
        a.append(a_)
        b.append(b_)
        power.append(p)

    profile_points = sum(min(j.max_workers, 64) - j.min_workers + 1 for j in jobs
                         if isinstance(j.throughput, ProfileThroughput))
    coarse = profile_points > MAX_BOUND_PIECES
    for i, j in enumerate(jobs):
        mn, mx, tp = j.min_workers, j.max_workers, j.throughput
        if isinstance(tp, PowerThroughput):
            add(i, mn, mx, tp.rate_per_worker, tp.exponent, True)
        elif isinstance(tp, TableThroughput):
            xs, ys = tp.workers, tp.rate
            if mn < xs[0]:  # np.interp holds the end values beyond the measured range
                add(i, mn, min(mx, xs[0]), ys[0], 0.0)
            for k in range(len(xs) - 1):
                l_, h = max(mn, xs[k]), min(mx, xs[k + 1])
                if l_ <= h:
                    slope = (ys[k + 1] - ys[k]) / (xs[k + 1] - xs[k])
                    add(i, l_, h, ys[k] - slope * xs[k], slope)
            if mx > xs[-1]:
                add(i, max(mn, xs[-1]), mx, ys[-1], 0.0)
        elif isinstance(tp, ProfileThroughput):
            per = _profiles()[tp.model]
            p_max, k_max = per.shape
            ps = max(1, server_gpus // j.gpus_per_worker)
            top = min(mx, p_max)
            if mn <= top:  # measured points: one piece each (or one coarse piece)
                w = np.arange(mn, top + 1, dtype=np.int64)
                r = per[w - 1, np.clip(-(-w // ps), 1, k_max) - 1] * w
                if coarse:
                    add(i, mn, top, float(r.max()), 0.0)
                else:
                    for ww, rr in zip(w.tolist(), r.tolist(), strict=True):
                        add(i, ww, ww, rr, 0.0)
            start = max(mn, p_max + 1)
            while start <= mx:  # beyond the measured replicas: rate = per[p_max - 1, k - 1] * w, k constant
                k = -(-start // ps)
                end = mx if k >= k_max else min(mx, k * ps)
                add(i, start, end, 0.0, float(per[p_max - 1, min(k, k_max) - 1]))
                start = end + 1
        else:
            raise TypeError(f"unknown throughput kind {type(tp).__name__}")
    return _Pieces(np.asarray(row, np.int64), np.asarray(lo, np.float64), np.asarray(hi, np.float64),
                   np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(power, bool))


def _pieces_max(pc: _Pieces, lam: float, work: np.ndarray, gpw: np.ndarray, mins: np.ndarray,
                starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per job: the real maximum over its pieces of ``-T(w) - lam * g * (w - min)`` and a maximiser's weight."""
    wk, g, mn = work[pc.row], gpw[pc.row].astype(np.float64), mins[pc.row].astype(np.float64)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        if lam > 0:
            lin = np.where(pc.b > 0, (np.sqrt(wk * pc.b / (lam * g)) - pc.a) / pc.b, pc.lo)
            pw = (wk * pc.b / (pc.a * lam * g)) ** (1.0 / (pc.b + 1.0))
            ws = np.where(pc.power, pw, lin)
        else:
            ws = np.where(pc.power | (pc.b > 0), pc.hi, pc.lo)
        ws = np.clip(np.nan_to_num(ws, nan=0.0, posinf=np.inf), pc.lo, pc.hi)
        rate = np.where(pc.power, pc.a * ws ** pc.b, pc.a + pc.b * ws)
        free = -(wk / rate) - lam * g * (ws - mn)
    capped = -TIME_CAP - lam * g * (pc.lo - mn)  # T = min(work / rate, TIME_CAP): the capped branch, best at lo
    use_cap = capped > free
    val = np.where(use_cap, capped, free)
    weight = g * (np.where(use_cap, pc.lo, ws) - mn)
    best = np.maximum.reduceat(val, starts)
    win = val >= best[pc.row]
    best_w = np.maximum.reduceat(np.where(win, weight, -1.0), starts)
    return best, best_w


def lp_bound(jobs: Sequence[JobOptions], capacity: int, *, server_gpus: int = 8, t_min: np.ndarray,
             exact_rows: tuple[np.ndarray, np.ndarray] | None = None, current: np.ndarray | None = None,
             deadline: float | None = None, max_rounds: int = 200) -> tuple[float, float]:
    """A proven upper bound on the MCKP over EVERY option ``min..max_workers`` of ``jobs``: the Lagrangian dual.

    For any ``lam >= 0``, ``UB(lam) = lam * capacity + sum_j max_w (V_j(w) - lam * weight_j(w))`` bounds the
    optimum (weak duality), and its minimum over ``lam`` is the LP relaxation's bound over the real options
    ``w`` in ``[min, max]`` (at least the integer LP bound). Each job's inner maximum is taken over concave
    pieces of its throughput (power law; the segments of a measured table; a profile's measured points and the
    segments beyond them, see :func:`_row_pieces`) at the clipped stationary point, so a job of ``2**31`` options
    costs one piece, not ``2**31`` evaluations. ``lam`` is searched by bisection on the slope of ``UB``.

    Parameters
    ----------
    jobs : sequence of JobOptions
        The full option ranges (no thinning); ``restart_penalty`` applies to every option but
        ``current_workers``.
    capacity : int
    server_gpus : int
    t_min : array
        ``T_j(min_j)`` as the value table computed it (so the bound and the table's values agree to the ulp).
    exact_rows : (weights, values) padded arrays, optional
        Further classes given by their items (rows of an unthinned table: ``-inf`` marks padding); their part of
        ``UB`` comes from their LP hulls, by prefix sums over the increments sorted by slope.
    current : array, optional
        ``V_j(current_j)`` for the jobs whose current count escapes the penalty (``nan`` for the others).
    deadline : float, optional
        ``time.perf_counter()`` after which no further ``lam`` is tried (every ``UB(lam)`` is a valid bound).
    max_rounds : int
        Largest number of ``lam`` tried (the same count gives the same bound: deterministic).

    Returns
    -------
    (bound, slack) : (float, float)
        The smallest ``UB(lam)`` found plus ``slack``, a margin for float rounding in the evaluation.

    Notes
    -----
    Running time O(R (P + log H)) for R rounds, P pieces and H hull increments; memory O(P + H).

    References
    ----------
    Sinha, P., Zoltners, A. A. (1979). The multiple-choice knapsack problem. Operations Research 27(3)
    (the LP relaxation by slopes). Fisher, M. L. (1981). The Lagrangian relaxation method for solving integer
    programming problems. Management Science 27(1).
    """
    import time

    n = len(jobs)
    pc = _row_pieces(jobs, server_gpus)
    work = np.fromiter((j.remaining_work for j in jobs), np.float64, n)
    gpw = np.fromiter((j.gpus_per_worker for j in jobs), np.int64, n)
    mins = np.fromiter((j.min_workers for j in jobs), np.int64, n)
    cur = np.fromiter((j.current_workers for j in jobs), np.int64, n)
    pen = np.fromiter((j.restart_penalty for j in jobs), np.float64, n)
    pen = np.where(cur > 0, pen, 0.0)
    starts = np.flatnonzero(np.r_[True, pc.row[1:] != pc.row[:-1]]) if n else np.zeros(0, np.int64)
    cur_v = np.full(n, np.nan) if current is None else np.asarray(current, np.float64)
    has_cur = np.isfinite(cur_v)
    cur_w = (gpw * (cur - mins)).astype(np.float64)
    base, slopes, cum_v, cum_w = 0.0, np.zeros(0), np.zeros(1), np.zeros(1)
    if exact_rows is not None and exact_rows[0].shape[0]:
        base, slopes, cum_v, cum_w = _hull_increments(*exact_rows)
    cap = float(capacity)

    def ub(lam: float) -> tuple[float, float]:
        total, used = lam * cap + base, 0.0
        if n:
            best, best_w = _pieces_max(pc, lam, work, gpw, mins, starts)
            v = t_min + best - pen
            at_cur = np.where(has_cur, cur_v - lam * cur_w, -np.inf)
            take = at_cur > v
            total += float(np.where(take, at_cur, v).sum())
            used += float(np.where(take, cur_w, best_w).sum())
        k = int(np.searchsorted(-slopes, -lam, side="left"))  # increments of slope > lam
        total += float(cum_v[k]) - lam * float(cum_w[k])
        used += float(cum_w[k])
        return total, used

    best_ub, used = ub(0.0)
    rounds = 1
    if used > cap:  # the capacity binds: UB decreases from lam = 0; find lam_hi where it no longer does
        lo, hi = 0.0, 1.0
        while rounds < max_rounds:
            val, used = ub(hi)
            rounds += 1
            best_ub = min(best_ub, val)
            if used <= cap or hi > 1e300:
                break
            lo, hi = hi, hi * 16.0
        while rounds < max_rounds and hi - lo > 1e-12 * hi and (deadline is None or time.perf_counter() < deadline):
            mid = 0.5 * (lo + hi) if lo == 0.0 or hi / lo < 4.0 else math.sqrt(lo * hi)
            val, used = ub(mid)
            rounds += 1
            best_ub = min(best_ub, val)
            if used > cap:
                lo = mid
            else:
                hi = mid
    scale = float(np.abs(t_min).sum() + pen.sum()) + abs(best_ub)
    if exact_rows is not None and exact_rows[1].size:
        scale += float(np.abs(np.where(np.isfinite(exact_rows[1]), exact_rows[1], 0.0)).sum())
    slack = 1e-12 * scale
    return best_ub + slack, slack


def _hull_increments(weights: np.ndarray, values: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """``(sum of lightest values, slopes descending, prefix sums of value and weight increments)`` of the LP hulls."""
    from lyra_solver.formulations.mckp import MCKPProblem
    from lyra_solver.formulations.mckp._lp import undominated, upper_hull

    valid = np.isfinite(values)  # a prefix of each row (the value table's padding is -inf)
    problem = MCKPProblem.from_padded(weights, np.where(valid, values, 0.0), valid.sum(axis=1), 0)
    hull = upper_hull(undominated(problem))
    base = float(hull.values[:, 0].sum())
    h = hull.weights.shape[1]
    inside = np.arange(1, h)[None, :] < hull.counts[:, None]
    dw = np.diff(hull.weights, axis=1)[inside].astype(np.float64)
    dv = np.diff(hull.values, axis=1)[inside]
    slopes = dv / dw
    order = np.argsort(-slopes, kind="stable")
    return (base, slopes[order], np.r_[0.0, np.cumsum(dv[order])], np.r_[0.0, np.cumsum(dw[order])])
