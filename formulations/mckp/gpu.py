"""Exact MCKP on a GPU: dynamic programming over the capacity, all classes in one persistent kernel.

The recurrence is the one of :mod:`lyra_solver.formulations.mckp.dp` (max-plus convolution of the best value
per used capacity with one class at a time)::

    f_{-1}(d) = 0,    f_i(d) = max_{k : w'_ik <= d} f_{i-1}(d - w'_ik) + v_ik,    d = 0..c'

after the same reductions: dominated items dropped (:func:`~lyra_solver.formulations.mckp._lp.undominated`),
weights shifted by each class's lightest item (``w'_ik = w_ik - w_i0``, ``c' = min(c, heaviest choice) -
sum_i w_i0``). The index of the best item, ``choice[i, d]``, is kept for the back-tracking
(``d = c'``; for ``i = n-1..0``: ``k = choice[i, d]``, ``d -= w'_ik``).

Kernels (``kernel=``)
---------------------
``cupy``: one cooperative CUDA kernel (a CuPy ``RawKernel`` launched with ``cuLaunchCooperativeKernel``) runs
many classes per launch (all of them without a time limit): one block per multiprocessor owns a contiguous
tile of ``d``; per class it copies ``f_{i-1}[tile start - max w'_i, tile end)`` into shared memory (read
through L2 only, ``ld.global.cg``, so that nothing stale comes from L1), computes its cells from shared memory
(the class's items are read once per block through the read-only cache), writes ``f_i`` and the choice
bytes, and the grid synchronises (``grid.sync()``) before the next class. A one-thread kernel does the
back-tracking on the device, so the choice table never crosses the bus. ``torch``: the same recurrence
with torch operations, a few per class (a gather of every item's shifted row, a max over items): it runs on
the CPU (the test suite's check of the method) and is the GPU fallback where CuPy is missing, at one launch
sequence per class (the "naive per-class loop" that the cooperative kernel is measured against).
``auto``: ``cupy`` when CuPy sees a CUDA device, else ``torch``.

Speed
-----
The sequential dependency over classes is the DP's; the parallelism is over ``d``, so the cooperative kernel pays
one grid synchronisation per class where a launch per class (eager torch: several per class) pays launch latency.
Measured timings, and the estimate for issue 14's 10,000 x 64 x 100,000 target, are in BENCHMARKS.md (section
"GPU"; ``python -m lyra_solver.bench.gpu_check`` measures them).

Memory bound
------------
The choice table is ``n (c' + 1)`` bytes (int8 indices up to 127 undominated items per class, int16 up to
32767; more is refused), plus two ``f`` rows of ``8 (c' + 1)`` bytes. The method refuses (``ValueError``
naming ``capacity``) when that exceeds ``max_bytes`` (default: 90 % of the free device memory on CUDA, 2 GiB
on a CPU), e.g. 10,000 classes x capacity 100,000 need 1 GB.

References
----------
Dudzinski, K., Walukiewicz, S. (1987). Exact methods for the knapsack problem and its generalizations. EJOR
28(1), 3-21.
NVIDIA. CUDA C++ Programming Guide, "Cooperative Groups: grid synchronization".
"""
from __future__ import annotations

import importlib.util
import logging
import time
from functools import cache

import numpy as np
from lyra_solver.formulations.mckp._lp import undominated
from lyra_solver.formulations.mckp._types import MCKPProblem, MCKPResult, make_result

__all__ = ["CPU_MAX_BYTES", "KERNELS", "solve_gpu"]

log = logging.getLogger(__name__)

#: Kernels accepted by :func:`solve_gpu`.
KERNELS: tuple[str, ...] = ("auto", "cupy", "torch")

#: Default memory bound (bytes) of the choice table and DP rows on a CPU.
CPU_MAX_BYTES = 2 << 30

#: Classes per cooperative launch when a time limit is given (checked between launches).
_CHUNK = 512


def solve_gpu(problem: MCKPProblem, *, time_limit: float | None = None, kernel: str = "auto", device=None,
              max_bytes: int | None = None) -> MCKPResult:
    """Solve MCKP exactly by dynamic programming over the capacity on a GPU (or torch's CPU).

    Parameters
    ----------
    problem : MCKPProblem
    time_limit : float, optional
        Seconds, checked between launches (cupy: every 512 classes; torch: every class). On a time limit the
        result carries the marginal-gain greedy's choice (status ``feasible``) and a bound, as method ``dp``.
    kernel : {"auto", "cupy", "torch"}
    device : str, optional
        torch kernel only (``"cpu"``, ``"cuda"``, ...); CUDA when present by default.
    max_bytes : int, optional
        Memory bound of the choice table and the two DP rows (see the module docstring).

    Returns
    -------
    MCKPResult
        ``method="gpu"``; ``backend_status`` names the kernel (``"optimal (cupy)"``).

    Raises
    ------
    ValueError
        Unknown kernel; torch (or CuPy, when asked for by name) missing; more than 32767 undominated items in a
        class; or a capacity whose table exceeds ``max_bytes`` (the message names ``capacity``).

    Notes
    -----
    Running time :math:`O(N c')` for ``N`` undominated items, spread over the device's threads; memory
    :math:`O(n c')` bytes.
    """
    start = time.perf_counter()
    if kernel not in KERNELS:
        raise ValueError(f"kernel: expected one of {', '.join(KERNELS)}, got {kernel!r}")
    chosen = _choose_kernel(kernel)
    n = problem.n_classes  # >= 1 and the lightest items fit: solve_mckp checked both before dispatch
    red = undominated(problem)
    base = red.weights[:, 0]
    top = int(red.weights[np.arange(n), red.counts - 1].sum())
    cap = min(problem.capacity, top) - int(base.sum())
    u = int(red.counts.max())
    if u > 32767:
        raise ValueError(f"values: a class keeps {u} undominated items; method 'gpu' takes at most 32767")
    itemsize = 1 if u <= 127 else 2
    need = n * (cap + 1) * itemsize + 2 * 8 * (cap + 1)
    limit = max_bytes if max_bytes is not None else _default_max_bytes(chosen, device)
    if need > limit:
        raise ValueError(f"capacity: {problem.capacity} is too large for method 'gpu' ({n} classes x {cap + 1} "
                         f"capacity cells need {need} bytes > max_bytes={limit}); use method 'core' or 'auto'")
    # items as flat arrays: class i's undominated items at offs[i]..offs[i+1], shifted weights ascending
    valid = np.arange(red.weights.shape[1])[None, :] < red.counts[:, None]
    dw = (red.weights - base[:, None])[valid]
    vv = red.values[valid]
    offs = np.concatenate([[0], np.cumsum(red.counts)]).astype(np.int64)
    deadline = None if time_limit is None else start + float(time_limit)
    run = _run_cupy if chosen == "cupy" else _run_torch
    pos, best, done = run(dw, vv, offs, n, cap, itemsize, deadline, device)
    if done < n:
        return _time_limit_result(problem, red, best, done, start)
    choice = red.items[np.arange(n), pos]
    return make_result(problem, choice, best, proven=True, start=start, method="gpu",
                       backend_status=f"optimal ({chosen})")


def _choose_kernel(kernel: str) -> str:
    has_torch = importlib.util.find_spec("torch") is not None
    has_cupy = importlib.util.find_spec("cupy") is not None
    if kernel == "cupy":
        if not has_cupy:
            raise ValueError("kernel: 'cupy' needs CuPy (pip install 'lyra-solver[cupy]')")
        return "cupy"
    if kernel == "auto" and has_cupy and _cupy_has_device():
        return "cupy"
    if not has_torch:
        raise ValueError("method: 'gpu' needs torch (pip install 'lyra-solver[gpu]') or CuPy with a CUDA device")
    return "torch"


@cache
def _cupy_has_device() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - CuPy raises its own CUDA errors without a driver
        return False


def _default_max_bytes(kernel: str, device) -> int:
    if kernel == "cupy":
        import cupy

        free, _ = cupy.cuda.runtime.memGetInfo()
        return int(0.9 * free)
    import torch

    dev = _torch_device(device)
    if dev.type == "cuda":
        free, _ = torch.cuda.mem_get_info(dev)
        return int(0.9 * free)
    return CPU_MAX_BYTES


def _torch_device(device):
    import torch

    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _time_limit_result(problem: MCKPProblem, red, best_done: float, done: int, start: float) -> MCKPResult:
    """No DP incumbent before the last class: the greedy's choice, bound by the classes done plus the rest."""
    from lyra_solver.formulations.mckp._lp import lp_relaxation, upper_hull
    from lyra_solver.formulations.mckp.greedy import greedy_positions

    n = problem.n_classes
    best_rest = red.values[np.arange(n), red.counts - 1]
    bound = min(float(best_done + best_rest[done:].sum()),
                lp_relaxation(red, upper_hull(red), problem.capacity).bound)
    g_pos = greedy_positions(red, problem.capacity)
    g_choice = None if g_pos is None else red.items[np.arange(n), g_pos]
    return make_result(problem, g_choice, bound, proven=False, start=start, method="gpu",
                       backend_status="time_limit")


# ------------------------------------------------------------------------------------------------ torch
def _run_torch(dw, vv, offs, n, cap, itemsize, deadline, device):
    """The recurrence with torch operations, one class at a time: the class's candidates ``f(d - w'_k) + v_k``
    as one gathered ``(items, c' + 1)`` block (in groups of items bounding the temporary to 2**24 cells), then
    a max over the items. Returns (positions, f(c') of the classes done, classes done)."""
    import torch

    dev = _torch_device(device)
    c1 = cap + 1
    f = torch.zeros(c1, dtype=torch.float64, device=dev)
    choice = torch.zeros((n, c1), dtype=torch.int8 if itemsize == 1 else torch.int16, device=dev)
    t_dw = torch.from_numpy(np.ascontiguousarray(dw, dtype=np.int64)).to(dev)
    t_vv = torch.from_numpy(np.ascontiguousarray(vv, dtype=np.float64)).to(dev)
    d = torch.arange(c1, device=dev)
    group = max(1, (1 << 24) // c1)
    for i in range(n):
        a, b = int(offs[i]), int(offs[i + 1])
        g = ch = None
        for s in range(a, b, group):
            e = min(b, s + group)
            src = d[None, :] - t_dw[s:e, None]
            cand = torch.where(src >= 0, f[src.clamp_min(0)] + t_vv[s:e, None], -torch.inf)
            best, arg = cand.max(dim=0)
            arg = arg + (s - a)
            if g is None:
                g, ch = best, arg
            else:
                better = best > g
                g, ch = torch.where(better, best, g), torch.where(better, arg, ch)
        choice[i] = ch.to(choice.dtype)
        f = g
        if deadline is not None and i < n - 1 and time.perf_counter() > deadline:
            return None, float(f[cap]), i + 1
    choice_h = choice.cpu().numpy()
    pos = np.zeros(n, dtype=np.int64)
    r = cap
    for i in range(n - 1, -1, -1):
        k = int(choice_h[i, r])
        pos[i] = k
        r -= int(dw[offs[i] + k])
    return pos, float(f[cap]), n


# ------------------------------------------------------------------------------------------------- cupy
_CUDA_SOURCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void mckp_dp_CHOICE(
        double* __restrict__ f0, double* __restrict__ f1, const long long* __restrict__ offs,
        const int* __restrict__ dw, const double* __restrict__ vv, const int* __restrict__ maxw,
        CHOICE_T* __restrict__ choice, const int c1, const int lo, const int hi, const int smem_len) {
    extern __shared__ double tile[];
    cg::grid_group grid = cg::this_grid();
    const int per_block = (c1 + gridDim.x - 1) / gridDim.x;
    const int d0 = blockIdx.x * per_block;
    const int d1 = min(c1, d0 + per_block);
    for (int i = lo; i < hi; ++i) {
        const double* fin = (i & 1) ? f1 : f0;
        double* fout = (i & 1) ? f0 : f1;
        const long long a = offs[i], b = offs[i + 1];
        const int mw = maxw[i];
        CHOICE_T* row = choice + (long long)i * c1;
        if (d0 < d1 && mw + (d1 - d0) <= smem_len) {
            // copy f_{i-1}[d0 - mw, d1) into shared memory through L2 (written by other blocks)
            for (int j = threadIdx.x; j < mw + (d1 - d0); j += blockDim.x) {
                const int d = d0 - mw + j;
                tile[j] = d >= 0 ? __ldcg(fin + d) : 0.0;
            }
            __syncthreads();
            for (int d = d0 + threadIdx.x; d < d1; d += blockDim.x) {
                const int s = d - d0 + mw;
                double best = tile[s] + __ldg(vv + a);
                int arg = 0;
                for (long long t = a + 1; t < b; ++t) {
                    const int w = __ldg(dw + t);
                    if (w > d) break;
                    const double c = tile[s - w] + __ldg(vv + t);
                    if (c > best) { best = c; arg = (int)(t - a); }
                }
                fout[d] = best;
                row[d] = (CHOICE_T)arg;
            }
            __syncthreads();
        } else {
            for (int d = d0 + threadIdx.x; d < d1; d += blockDim.x) {
                double best = __ldcg(fin + d) + __ldg(vv + a);
                int arg = 0;
                for (long long t = a + 1; t < b; ++t) {
                    const int w = __ldg(dw + t);
                    if (w > d) break;
                    const double c = __ldcg(fin + d - w) + __ldg(vv + t);
                    if (c > best) { best = c; arg = (int)(t - a); }
                }
                fout[d] = best;
                row[d] = (CHOICE_T)arg;
            }
        }
        grid.sync();
    }
}

extern "C" __global__ void mckp_back_CHOICE(
        const CHOICE_T* __restrict__ choice, const long long* __restrict__ offs, const int* __restrict__ dw,
        const int n, const int c1, long long* __restrict__ pos) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    int d = c1 - 1;
    for (int i = n - 1; i >= 0; --i) {
        const int k = (int)choice[(long long)i * c1 + d];
        pos[i] = k;
        d -= dw[offs[i] + k];
    }
}
"""

#: Shared memory per block (doubles): 48 KiB, the amount every device grants without an opt-in.
_SMEM_DOUBLES = 6144
_THREADS = 512


@cache
def _cupy_kernels(itemsize: int):
    import cupy

    ctype = "signed char" if itemsize == 1 else "short"
    src = _CUDA_SOURCE.replace("CHOICE_T", ctype).replace("_CHOICE", f"_{itemsize}")
    module = cupy.RawModule(code=src, options=("-std=c++17",), enable_cooperative_groups=True)
    return module.get_function(f"mckp_dp_{itemsize}"), module.get_function(f"mckp_back_{itemsize}")


def _run_cupy(dw, vv, offs, n, cap, itemsize, deadline, device):
    """The cooperative kernel on CuPy. Returns (positions, f(c'), classes done)."""
    import cupy

    dp, back = _cupy_kernels(itemsize)
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]

    def launch(which, grid, args, shared_mem):
        (dp if which == "dp" else back)((grid,), (_THREADS if which == "dp" else 1,), args, shared_mem=shared_mem)

    return run_cooperative(dw, vv, offs, n, cap, itemsize, deadline, blocks=sms, xp=cupy, launch=launch,
                           sync=lambda: cupy.cuda.get_current_stream().synchronize())


def run_cooperative(dw, vv, offs, n, cap, itemsize, deadline, *, blocks, xp, launch, sync):
    """Host side of the cooperative kernel: chunks of classes per launch, then the device back-tracking.

    ``xp`` allocates the device arrays (cupy; numpy for the C++ emulation of the kernel in the tests),
    ``launch(which, grid, args, shared_mem)`` runs ``mckp_dp`` or ``mckp_back``, ``sync()`` waits for them.
    Returns (positions, f(c') of the classes done, classes done).
    """
    c1 = cap + 1
    blocks = max(1, min(blocks, -(-c1 // 32)))
    maxw = (dw[offs[1:] - 1]).astype(np.int32)  # heaviest (last) undominated item of each class
    d_offs = xp.asarray(offs.astype(np.int64))
    d_dw = xp.asarray(dw.astype(np.int32))
    d_vv = xp.asarray(vv.astype(np.float64))
    d_maxw = xp.asarray(maxw)
    f0 = xp.zeros(c1, dtype=np.float64)
    f1 = xp.zeros(c1, dtype=np.float64)
    choice = xp.zeros((n, c1), dtype=np.int8 if itemsize == 1 else np.int16)
    chunk = n if deadline is None else _CHUNK
    lo = 0
    while lo < n:
        hi = min(n, lo + chunk)
        launch("dp", blocks, (f0, f1, d_offs, d_dw, d_vv, d_maxw, choice, np.int32(c1), np.int32(lo),
                              np.int32(hi), np.int32(_SMEM_DOUBLES)), 8 * _SMEM_DOUBLES)
        lo = hi
        if deadline is not None and lo < n:
            sync()
            if time.perf_counter() > deadline:
                f = f0 if lo % 2 == 0 else f1
                return None, float(f[cap]), lo
    pos = xp.zeros(n, dtype=np.int64)
    launch("back", 1, (choice, d_offs, d_dw, np.int32(n), np.int32(c1), pos), 0)
    f = f0 if n % 2 == 0 else f1
    pos_h = pos.get() if hasattr(pos, "get") else np.asarray(pos)
    return pos_h.astype(np.int64), float(f[cap]), n
