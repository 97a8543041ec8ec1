"""Packing profiles drawn from Alibaba's GPU-sharing trace: each simulated job gets the ``gpu_util`` of a real
fractional pod.

The Alibaba 2023 GPU-sharing trace (``openb_pod_list_default.csv``, Weng et al., ATC 2023) lists 8,152 GPU pods;
the 3,078 that ask for one GPU with ``gpu_milli`` below 1000 share that GPU with other pods, and ``gpu_milli /
1000`` is the share of the GPU that the pod was sized for: the best public stand-in for the "GPU utilisation
alone" of a packing profile (``{"gpu_util": u}``, DESIGN "Packing"). :func:`load_fractional_pods` reads those
values (sorted, the empirical distribution); :func:`draw_gpu_utils` gives each trace row one of them, drawn from
a seeded hash of the seed, the row's line number and its text (as :func:`.traces.map_jobs` draws the application),
so that a row keeps its utilisation whatever slice or filter is taken and the same seed gives the same draw.

The trace has no GPU memory per pod (``memory_mib`` is host memory), so a job's ``gpu_mem_gb`` stays its
application's estimate in :data:`.traces.PACKING_PROFILES`; with ``--packing-profiles table`` the utilisation is
the table's too (six values, one per application).

References
----------
Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent",
USENIX ATC 2023 (the trace, ``alibaba/clusterdata``, ``cluster-trace-gpu-v2023``).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lyra_solver.errors import InputError

from ._rows import TraceJob, _num, _rows, _unit

__all__ = ["OPENB_FIELDS", "draw_gpu_utils", "load_fractional_pods"]

OPENB_FIELDS = ("name", "num_gpu", "gpu_milli")


def load_fractional_pods(path: str | Path) -> tuple[float, ...]:
    """The ``gpu_milli / 1000`` of every fractional pod of an ``openb_pod_list`` CSV, sorted ascending.

    A fractional pod asks for one GPU (``num_gpu`` 1) with ``0 < gpu_milli < 1000``; whole-GPU, multi-GPU and
    CPU-only pods are skipped.

    Parameters
    ----------
    path : str or Path
        The CSV (columns ``name,...,num_gpu,gpu_milli,...``).

    Returns
    -------
    tuple of float
        Utilisations in (0, 1), sorted (the trace's empirical distribution, duplicates kept).

    Raises
    ------
    InputError
        A missing column, a non-integer or negative ``num_gpu`` / ``gpu_milli``, a ``gpu_milli`` above 1000 on a
        one-GPU pod (naming the file and line), or no fractional pod at all.

    Notes
    -----
    Running time O(n log n) for n pods.
    """
    out = []
    for line, row, col, name in _rows(path, OPENB_FIELDS, "pod list"):
        n = int(_num(row[col["num_gpu"]], name, line, "num_gpu", integer=True))
        milli = int(_num(row[col["gpu_milli"]], name, line, "gpu_milli", integer=True))
        if n == 1 and milli > 1000:
            raise InputError(f"line {line}", f"gpu_milli: {milli} on a one-GPU pod (at most 1000)", name)
        if n == 1 and 0 < milli < 1000:
            out.append(milli / 1000.0)
    if not out:
        raise InputError("$", "no fractional pod (num_gpu 1, 0 < gpu_milli < 1000)", str(path))
    return tuple(sorted(out))


def draw_gpu_utils(trace: Sequence[TraceJob], pool: Sequence[float], *, seed: int = 0) -> list[float]:
    """One utilisation of ``pool`` per trace row, drawn uniformly from a seeded hash of the row.

    Parameters
    ----------
    trace : sequence of TraceJob
        The rows (their ``line`` and ``key`` seed the draw).
    pool : sequence of float
        The values to draw from (:func:`load_fractional_pods`), each in (0, 1].
    seed : int
        The mapping's seed.

    Returns
    -------
    list of float
        ``pool[floor(h * len(pool))]`` for the row's hash ``h`` in [0, 1).

    Notes
    -----
    Running time O(n) for n rows. The draw of a row depends on the seed, its line and its text only.

    Examples
    --------
    >>> from lyra_solver.bench.sim.traces import TraceJob
    >>> rows = [TraceJob(line=i + 2, submit=0.0, gpus=1, duration=60.0, key=f"row{i}") for i in range(4)]
    >>> draw_gpu_utils(rows, [0.25, 0.5], seed=0) == draw_gpu_utils(rows, [0.25, 0.5], seed=0)
    True
    >>> set(draw_gpu_utils(rows, [0.3], seed=7))
    {0.3}
    """
    if not pool:
        raise ValueError("pool: no value to draw from")
    if not all(0.0 < u <= 1.0 for u in pool):
        raise ValueError("pool: every gpu_util must be in (0, 1]")
    n = len(pool)
    return [float(pool[min(n - 1, int(_unit(seed, "gpu_util", tj.key, tj.line) * n))]) for tj in trace]
