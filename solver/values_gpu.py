"""Value tables on a GPU (DESIGN "Value tables on a GPU"): torch, cupy and a fused torch.compile kernel.

The numpy code of :func:`lyra_solver.values.value_table` is the reference; this module computes the same
table from flat per-job parameters (:class:`JobArrays`) with one array expression, :func:`cells`, written in
the subset of the array API that numpy, cupy and torch share. So one expression serves every backend, and
the numpy run of it (tested on every CPU) checks the formula that the GPUs run.

Layout of a table: ``J`` jobs x ``M`` options (``M`` = the widest job), option ``k`` of job ``j`` being
``w = min_j + k`` workers; padding (``k >= sizes[j]``) holds ``-inf`` values and repeats the last option's
time and weight, as in the numpy reference.

Per job (read once): kind (0 power, 1 table, 2 profile), ``min``, ``size``, ``gpus_per_worker``,
``current``, ``remaining_work``, ``restart_penalty``, power ``(r, e)``, the profile's model index, and a table
job's knots as ``(x, y, slope)`` rows of width ``K`` (``+inf`` past the job's last knot). Per cell::

    rate = r * exp(e * log w)                                     (power)
         = y_s + slope_s * (w - x_s),  s = last knot with x_s <= w  (table; y_0 below x_0)
         = profile[model, min(w, 64) - 1, min(ceil(w / per_server), 16) - 1] * w   (profile)
    T    = min(work / rate, TIME_CAP)
    V    = T(min) - T - penalty * [current > 0 and w != current]      (jct-reduction, the default)

Another objective (``objective=``, :mod:`lyra_solver.objectives`) replaces the last line by its formula, the
same function that the numpy reference calls, evaluated in ``xp``; its per-job inputs (the restart horizon
and the objective's weight) are two more ``(J, 1)`` columns computed on the host.

Backends
--------
``torch``: the expression in eager torch on CUDA when present (else on the CPU): a dozen kernels, each
reading and writing ``(J, M)`` temporaries. ``fused=True`` compiles it with :func:`torch.compile`
(inductor): one fused pointwise kernel (Triton on a GPU, C++/OpenMP on a CPU; checked on the CPU: one
generated kernel) that reads each job's parameters once per row and writes each output cell once; the
``(J, 1)`` column ``T(min)`` is computed in the same pass, no ``(J, M)`` temporary exists.
``cupy``: the expression on cupy arrays (unfused, imported lazily).

Speed
-----
The fused kernel reads each job's parameters once per row and writes each cell once, so it is bound by the
output's memory traffic (``J x M`` float32 values; ``times`` doubles it); the eager expression also writes and
reads its ``(J, M)`` temporaries. Measured timings, and the bandwidth estimate for issue 14's 1,000,000 x 256
target, are in BENCHMARKS.md (section "GPU"; ``python -m lyra_solver.bench.gpu_check`` measures them).

Tolerance (what the tests and ``bench/gpu_check`` assert): with ``scale = |T(min)| + |T(w)| + penalty``,
``|V - V_numpy| <= rtol * scale + atol`` with ``rtol = 1e-9`` in float64 and ``2e-5`` in float32 (float32 keeps
24 bits; ``exp(e log w)`` and the division add a few ulps) and ``atol`` the type's smallest normal number
(times that small underflow, or flush to zero on a GPU); times ``|T - T_numpy| <= rtol * |T_numpy| + atol``;
weights and padding are exact.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from lyra_solver.objectives import check_objective, horizons, objective_values, prepare
from lyra_solver.throughput import _profiles
from lyra_solver.types import PROFILE_MODELS, PowerThroughput, ProfileThroughput, TableThroughput
from lyra_solver.value_types import TIME_CAP, JobOptions, ValueTable

log = logging.getLogger(__name__)

__all__ = ["ATOL", "RTOL", "JobArrays", "cells", "jobs_of", "pack_jobs", "value_table_device", "value_table_gpu"]

#: Documented tolerance of a backend against numpy, by float type (see the module docstring).
RTOL = {"float64": 1e-9, "float32": 2e-5}
#: Absolute floor of that tolerance: the smallest normal number of the type (underflow, flush-to-zero).
ATOL = {"float64": float(np.finfo(np.float64).tiny), "float32": float(np.finfo(np.float32).tiny)}

_KIND = {PowerThroughput: 0, TableThroughput: 1, ProfileThroughput: 2}


@dataclass(frozen=True, eq=False)
class JobArrays:
    """Flat per-job parameters of a value table (numpy, host side); build with :func:`pack_jobs`.

    Attributes
    ----------
    kind : (J,) int8
        0 power, 1 table, 2 profile.
    min_workers, sizes, gpus_per_worker, current_workers : (J,) int64
    remaining_work, restart_penalty : (J,) float64
    rate_per_worker, exponent : (J,) float64
        Power law (1.0 for other kinds).
    model : (J,) int64
        Index into :data:`lyra_solver.types.PROFILE_MODELS` (0 for other kinds).
    knot_x, knot_y, knot_slope : (J, K) float64
        Table knots, ``+inf`` / 0 past a job's last knot; the last knot's slope is 0 (flat beyond it).
    server_gpus : int
    """

    kind: np.ndarray
    min_workers: np.ndarray
    sizes: np.ndarray
    gpus_per_worker: np.ndarray
    current_workers: np.ndarray
    remaining_work: np.ndarray
    restart_penalty: np.ndarray
    rate_per_worker: np.ndarray
    exponent: np.ndarray
    model: np.ndarray
    knot_x: np.ndarray
    knot_y: np.ndarray
    knot_slope: np.ndarray
    server_gpus: int = 8

    @property
    def n_jobs(self) -> int:
        return int(self.kind.shape[0])

    @property
    def width(self) -> int:
        """Options in the widest row, ``M``."""
        return int(self.sizes.max()) if self.n_jobs else 1

    def take(self, rows) -> JobArrays:
        """The jobs at ``rows`` (numpy index), same server size."""
        f = {k: getattr(self, k)[rows] for k in _ARRAY_FIELDS}
        return JobArrays(**f, server_gpus=self.server_gpus)

    @staticmethod
    def concat(parts: Sequence[JobArrays]) -> JobArrays:
        """All jobs of ``parts`` in order (one server size; knot widths padded to the widest)."""
        if not parts:
            raise ValueError("parts: expected at least one JobArrays")
        sg = {p.server_gpus for p in parts}
        if len(sg) != 1:
            raise ValueError(f"parts: server_gpus differ ({sorted(sg)})")
        k = max(p.knot_x.shape[1] for p in parts)

        def widen(a: np.ndarray, fill: float) -> np.ndarray:
            return np.pad(a, ((0, 0), (0, k - a.shape[1])), constant_values=fill)

        f = {}
        for name in _ARRAY_FIELDS:
            if name.startswith("knot_"):
                fill = np.inf if name == "knot_x" else 0.0
                f[name] = np.concatenate([widen(getattr(p, name), fill) for p in parts])
            else:
                f[name] = np.concatenate([getattr(p, name) for p in parts])
        return JobArrays(**f, server_gpus=parts[0].server_gpus)


_ARRAY_FIELDS = ("kind", "min_workers", "sizes", "gpus_per_worker", "current_workers", "remaining_work",
                 "restart_penalty", "rate_per_worker", "exponent", "model", "knot_x", "knot_y", "knot_slope")


def pack_jobs(jobs: Sequence[JobOptions], *, server_gpus: int = 8) -> JobArrays:
    """Flatten :class:`JobOptions` into :class:`JobArrays` (O(J K) host work).

    Raises
    ------
    TypeError
        On an unknown throughput kind.
    ValueError
        On a job with a thinned option grid (``step > 1``).
    """
    n = len(jobs)
    if any(getattr(j, "step", 1) > 1 for j in jobs):
        raise ValueError("jobs: a thinned option grid (step > 1) is the numpy backend's (lyra_solver.values)")
    kind = np.fromiter((_KIND[type(j.throughput)] for j in jobs), np.int8, n)
    mins = np.fromiter((j.min_workers for j in jobs), np.int64, n)
    maxs = np.fromiter((j.max_workers for j in jobs), np.int64, n)
    r = np.ones(n)
    e = np.ones(n)
    model = np.zeros(n, dtype=np.int64)
    tables = np.flatnonzero(kind == 1)
    k = max((len(jobs[i].throughput.workers) for i in tables), default=1)
    kx = np.full((n, k), np.inf)
    ky = np.zeros((n, k))
    ks = np.zeros((n, k))
    index = {m: i for i, m in enumerate(PROFILE_MODELS)}
    for i, j in enumerate(jobs):
        tp = j.throughput
        if kind[i] == 0:
            r[i], e[i] = tp.rate_per_worker, tp.exponent
        elif kind[i] == 1:
            x = np.asarray(tp.workers, dtype=np.float64)
            y = np.asarray(tp.rate, dtype=np.float64)
            c = x.shape[0]
            kx[i, :c], ky[i, :c] = x, y
            if c > 1:
                ks[i, : c - 1] = np.diff(y) / np.diff(x)
        else:
            model[i] = index[tp.model]
    return JobArrays(
        kind=kind, min_workers=mins, sizes=maxs - mins + 1,
        gpus_per_worker=np.fromiter((j.gpus_per_worker for j in jobs), np.int64, n),
        current_workers=np.fromiter((j.current_workers for j in jobs), np.int64, n),
        remaining_work=np.fromiter((j.remaining_work for j in jobs), np.float64, n),
        restart_penalty=np.fromiter((j.restart_penalty for j in jobs), np.float64, n),
        rate_per_worker=r, exponent=e, model=model, knot_x=kx, knot_y=ky, knot_slope=ks, server_gpus=server_gpus)


def jobs_of(arrays: JobArrays, rows: Sequence[int] | None = None) -> list[JobOptions]:
    """Back to :class:`JobOptions` (the numpy reference's input) for ``rows`` (all by default)."""
    rows = range(arrays.n_jobs) if rows is None else rows
    out = []
    for i in rows:
        i = int(i)
        kd = int(arrays.kind[i])
        if kd == 0:
            tp = PowerThroughput(rate_per_worker=float(arrays.rate_per_worker[i]), exponent=float(arrays.exponent[i]))
        elif kd == 1:
            c = int(np.isfinite(arrays.knot_x[i]).sum())
            tp = TableThroughput(workers=[int(x) for x in arrays.knot_x[i, :c]],
                                 rate=[float(y) for y in arrays.knot_y[i, :c]])
        else:
            tp = ProfileThroughput(model=PROFILE_MODELS[int(arrays.model[i])])
        mn = int(arrays.min_workers[i])
        out.append(JobOptions(tp, mn, mn + int(arrays.sizes[i]) - 1, float(arrays.remaining_work[i]),
                              int(arrays.gpus_per_worker[i]), int(arrays.current_workers[i]),
                              float(arrays.restart_penalty[i])))
    return out


@cache
def _profile_grid() -> np.ndarray:
    """``(len(PROFILE_MODELS), N, S)`` per-replica rates, models in :data:`PROFILE_MODELS` order."""
    p = _profiles()
    grids = [p[m] for m in PROFILE_MODELS]
    if len({g.shape for g in grids}) != 1:  # never with the shipped data; the flat gather needs one shape
        raise ValueError("profiles: every model needs the same (replicas, servers) grid")
    return np.stack(grids)


def cells(xp, a: dict, width: int, n_knots: int, grid_shape: tuple[int, int], *, want_times: bool = True,
          objective: str = "jct-reduction"):
    """The value table as one array expression in ``xp`` (numpy, cupy or torch).

    Parameters
    ----------
    xp : module
        ``numpy``, ``cupy`` or ``torch``: only ``where``, ``exp``, ``log``, ``arange``, indexing, ``//`` and
        arithmetic are used.
    a : dict
        Device arrays: the :class:`JobArrays` fields as ``(J, 1)`` columns (``knot_*`` as ``(J, K)``), the
        flat profile grid ``profile`` and the per-job ``per_server`` (workers per server), all of one float
        type (ints int64).
    width : int
        ``M``.
    n_knots : int
        ``K`` (the table loop is unrolled over it).
    grid_shape : (int, int)
        Replicas and servers of the profile grid.
    want_times : bool
    objective : str
        One of :data:`lyra_solver.objectives.OBJECTIVES`; all but ``jct-reduction`` read the ``(J, 1)`` columns
        ``horizon`` and ``weight`` of ``a`` (see :func:`device_inputs`).

    Returns
    -------
    values, times
        ``(J, M)`` arrays; ``times`` is None unless asked for.

    Notes
    -----
    Running time O(J M K); one expression, no data-dependent control flow (so torch.compile fuses it).
    """
    dt = a["remaining_work"].dtype
    k = xp.arange(width, device=a["sizes"].device)[None, :] if _is_torch(xp) else xp.arange(width)[None, :]
    valid = k < a["sizes"]
    kk = xp.where(valid, k, a["sizes"] - 1)

    def time_at(w):
        wf = w.to(dt) if _is_torch(xp) else w.astype(dt)
        r_pow = a["rate_per_worker"] * xp.exp(a["exponent"] * xp.log(wf))
        r_tab = a["knot_y"][:, :1] + 0.0 * wf
        for s in range(n_knots):
            x = a["knot_x"][:, s:s + 1]
            r_tab = xp.where(wf >= x, a["knot_y"][:, s:s + 1] + a["knot_slope"][:, s:s + 1] * (wf - x), r_tab)
        n_rep, n_srv = grid_shape
        span = (w + a["per_server"] - 1) // a["per_server"]
        ni = xp.where(w > n_rep, n_rep, w) - 1
        si = xp.where(span > n_srv, n_srv, span) - 1
        r_prof = a["profile"][(a["model"] * n_rep + ni) * n_srv + si] * wf
        rate = xp.where(a["kind"] == 0, r_pow, xp.where(a["kind"] == 1, r_tab, r_prof))
        t = a["remaining_work"] / rate
        return xp.where(t > TIME_CAP, TIME_CAP, t)

    w = a["min_workers"] + kk
    t = time_at(w)
    t0 = time_at(a["min_workers"])
    restart = (a["current_workers"] > 0) & (w != a["current_workers"])
    if objective == "jct-reduction":
        v = t0 - t - xp.where(restart, a["restart_penalty"], 0.0)
    else:
        v = objective_values(xp, objective, t, t0, restart, a["restart_penalty"], a["horizon"], a["weight"])
    v = xp.where(valid, v, -np.inf)
    return v, (t if want_times else None)


def _is_torch(xp) -> bool:
    return getattr(xp, "__name__", "") == "torch"


def _host_inputs(arrays: JobArrays, dtype) -> dict[str, np.ndarray]:
    a = {}
    for name in _ARRAY_FIELDS:
        x = getattr(arrays, name)
        if name == "knot_x":  # past the last knot: the largest finite float (never reached, no inf * 0)
            a[name] = np.where(np.isfinite(x), x, np.finfo(dtype).max).astype(dtype)
        elif name.startswith("knot_"):
            a[name] = x.astype(dtype)
        elif x.dtype.kind == "f":
            a[name] = x.astype(dtype)[:, None]
        else:
            a[name] = x.astype(np.int64)[:, None]
    a["per_server"] = np.maximum(1, arrays.server_gpus // np.maximum(arrays.gpus_per_worker, 1))[:, None]
    a["profile"] = _profile_grid().reshape(-1).astype(dtype)
    return a


def _grid_shape() -> tuple[int, int]:
    g = _profile_grid()
    return int(g.shape[1]), int(g.shape[2])


def torch_device(device=None):
    """The torch device a ``torch`` backend runs on: ``device`` if given, else CUDA when present, else CPU."""
    import torch

    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@cache
def _compiled():
    import torch

    return torch.compile(_torch_cells, dynamic=True)


def _torch_cells(a: dict, width: int, n_knots: int, grid_shape: tuple[int, int], want_times: bool,
                 objective: str = "jct-reduction"):
    import torch

    return cells(torch, a, width, n_knots, grid_shape, want_times=want_times, objective=objective)


def value_table_device(arrays: JobArrays, *, backend: str = "torch", device=None, dtype: str = "float64",
                       fused: bool = False, want_times: bool = True, inputs: dict | None = None,
                       objective: str = "jct-reduction", extra: tuple[np.ndarray, np.ndarray] | None = None):
    """Values (and times) of ``arrays`` as device arrays, without copying them back.

    Parameters
    ----------
    arrays : JobArrays
    backend : {"torch", "cupy", "numpy"}
        ``numpy`` runs :func:`cells` on the host (the formula's own check).
    device : str or torch.device, optional
        torch only; CUDA when present by default.
    dtype : {"float64", "float32"}
    fused : bool
        torch only: run the torch.compile'd kernel (compiled once per process and shape class).
    want_times : bool
    inputs : dict, optional
        Device inputs from :func:`device_inputs` (to time the kernel alone; built with the same ``extra``).
    objective : str
        One of :data:`lyra_solver.objectives.OBJECTIVES`.
    extra : (ages, weights), optional
        Per job: seconds since submission and the objective's weight (:func:`lyra_solver.objectives.prepare`);
        zeros and ones when not given. Read by every objective but ``jct-reduction``.

    Returns
    -------
    values, times
        Arrays of ``backend`` on its device; ``times`` is None unless asked for.
    """
    if dtype not in RTOL:
        raise ValueError(f"dtype: expected one of {', '.join(RTOL)}, got {dtype!r}")
    if fused and backend != "torch":
        raise ValueError(f"fused: only the torch backend has a fused kernel (got backend {backend!r})")
    check_objective(objective)
    a = inputs if inputs is not None else device_inputs(arrays, backend=backend, device=device, dtype=dtype,
                                                        extra=extra)
    m, k = arrays.width, arrays.knot_x.shape[1]
    if backend == "numpy":
        return cells(np, a, m, k, _grid_shape(), want_times=want_times, objective=objective)
    if backend == "torch":
        fn = _compiled() if fused else _torch_cells
        return fn(a, m, k, _grid_shape(), want_times, objective)
    if backend == "cupy":
        import cupy

        return cells(cupy, a, m, k, _grid_shape(), want_times=want_times, objective=objective)
    raise ValueError(f"backend: expected torch, cupy or numpy, got {backend!r}")


def device_inputs(arrays: JobArrays, *, backend: str = "torch", device=None, dtype: str = "float64",
                  extra: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """The kernel's inputs copied to the backend's device (host to device once); ``extra`` as
    :func:`value_table_device`'s (the restart horizons and weights, two more columns)."""
    host = _host_inputs(arrays, np.dtype(dtype))
    ages, weights = extra if extra is not None else (np.zeros(arrays.n_jobs), np.ones(arrays.n_jobs))
    host["horizon"] = horizons(ages).astype(dtype)[:, None]
    host["weight"] = np.asarray(weights, np.float64).astype(dtype)[:, None]
    if backend == "numpy":
        return host
    if backend == "torch":
        import torch

        dev = torch_device(device)
        return {k: torch.from_numpy(np.ascontiguousarray(v)).to(dev) for k, v in host.items()}
    if backend == "cupy":
        import cupy

        return {k: cupy.asarray(v) for k, v in host.items()}
    raise ValueError(f"backend: expected torch, cupy or numpy, got {backend!r}")


def to_numpy(x) -> np.ndarray:
    """A torch, cupy or numpy array as numpy (copy back from the device)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "get"):  # cupy
        return x.get()
    return x.detach().cpu().numpy()


def value_table_gpu(jobs: Sequence[JobOptions] | JobArrays, *, server_gpus: int = 8, backend: str = "torch",
                    device=None, fused: bool = False, objective: str = "jct-reduction",
                    ages: Sequence[float] | None = None) -> ValueTable:
    """:func:`lyra_solver.values.value_table` on torch or cupy (float64), copied back as numpy arrays.

    Parameters
    ----------
    jobs : list of JobOptions or JobArrays
    server_gpus : int
        Ignored for ``JobArrays`` (which carry their own).
    backend : {"torch", "cupy"}
    device, fused
        See :func:`value_table_device`.
    objective, ages
        As :func:`lyra_solver.values.value_table` (the weights of ``hesrpt`` are computed here, on the host).

    Returns
    -------
    ValueTable
        Same layout and (within :data:`RTOL`) the same numbers as the numpy reference.
    """
    check_objective(objective)
    arrays = jobs if isinstance(jobs, JobArrays) else pack_jobs(jobs, server_gpus=server_gpus)
    if arrays.n_jobs == 0:
        raise ValueError("jobs: empty (the numpy backend handles empty tables)")
    extra = None
    if objective != "jct-reduction":
        opts = jobs if not isinstance(jobs, JobArrays) else jobs_of(arrays)
        age = np.zeros(arrays.n_jobs) if ages is None else np.asarray(ages, np.float64)
        extra = (age, prepare(opts, objective, server_gpus=arrays.server_gpus))
    values, times = value_table_device(arrays, backend=backend, device=device, dtype="float64", fused=fused,
                                       objective=objective, extra=extra)
    table = table_from(arrays, to_numpy(values), to_numpy(times))
    if extra is None:
        return table
    return ValueTable(table.values, table.weights, table.times, table.sizes, table.min_workers, objective=objective,
                      ages=extra[0], job_weights=extra[1])


def table_from(arrays: JobArrays, values: np.ndarray, times: np.ndarray) -> ValueTable:
    """A :class:`ValueTable` from host values and times (weights are ``gpw * k``, exact integers)."""
    m = arrays.width
    k = np.minimum(np.arange(m, dtype=np.int64)[None, :], arrays.sizes[:, None] - 1)
    weights = arrays.gpus_per_worker[:, None] * k
    return ValueTable(values=np.asarray(values, np.float64), weights=weights, times=np.asarray(times, np.float64),
                      sizes=arrays.sizes.copy(), min_workers=arrays.min_workers.copy())
