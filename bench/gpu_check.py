"""Check every GPU path against numpy on fresh random inputs, and time it (issue 14's prepared device script).

``python -m lyra_solver.bench.gpu_check`` on a machine with a CUDA GPU (torch; CuPy for the cooperative MCKP
kernel and the cupy value-table backend) runs the full sizes, a few minutes (most of it
torch.compile's first compilation); without a GPU (or with ``--cpu``) it runs torch on the CPU at small sizes.

What it does
------------
1. Value tables, ``--jobs`` x ``--options`` (1,000,000 x 256 on a GPU): random jobs, a third of each
   throughput kind (power, measured tables with up to 4 knots, real non-concave profiles), every number
   drawn away from zero, half of the jobs running with a restart penalty. Each backend (torch eager in float64
   and float32, the fused torch.compile kernel in float32, cupy in float64 and float32) computes the whole
   table on the device; ``--check-rows`` random rows (and the first and last) are copied back and compared
   with the numpy reference :func:`lyra_solver.values.value_table` within
   :data:`lyra_solver.values_gpu.RTOL`. Timing: the kernel alone (inputs already on the device, values
   only, as float32 = 1 GB at full size), CUDA events after 3 warm-up runs, median of 20.
2. Batched tables (``value_tables``) of 8 snapshots against one numpy table per snapshot.
3. Exact MCKP, ``--classes`` x ``--items``, capacity ``--capacity`` (10,000 x 64 x 100,000 on a GPU):
   value-table-shaped classes (weight ``g k``, ``g`` in 1, 2, 4, 8; increasing, non-concave values), plus
   small random instances. ``method="gpu"`` (the cooperative CuPy kernel; the torch kernel on the small
   instances) against the CPU exact solver ``core`` (and ``dp`` on the small ones): same optimum within
   1e-9, choice feasible. Timing: the whole ``solve_mckp`` call (wall clock, synchronised), median of 20
   (5 on a CPU).

It prints one table (path, size, median ms, effective bandwidth, worst error / tolerance, ok) and exits 1
when any check disagrees, 0 otherwise.
"""
from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np
from lyra_solver.formulations.mckp import MCKPProblem, solve_mckp
from lyra_solver.types import PROFILE_MODELS
from lyra_solver.values import value_table, value_tables
from lyra_solver.values_gpu import ATOL, RTOL, JobArrays, device_inputs, jobs_of, to_numpy, value_table_device

log = logging.getLogger(__name__)

TARGET_TABLE_MS = 0.5
TARGET_MCKP_MS = 50.0


@dataclass
class Row:
    path: str
    size: str
    ms: float | None
    rate: str
    err: str
    ok: bool
    note: str = ""


# ---------------------------------------------------------------------------------------------- inputs
def random_job_arrays(n: int, m: int, rng: np.random.Generator, *, server_gpus: int = 8, knots: int = 4) -> JobArrays:
    """``n`` random jobs as :class:`JobArrays`, widest row exactly ``m`` options, no zero anywhere.

    A third each of power laws, measured tables (up to ``knots`` strictly increasing knots covering
    min..max) and profiles; work in [1e3, 1e7], penalties in [1, 100], half of the jobs running.
    """
    kind = (np.arange(n) % 3).astype(np.int8)
    rng.shuffle(kind)
    mins = rng.integers(1, 5, n).astype(np.int64)
    sizes = rng.integers(max(1, m // 2), m + 1, n).astype(np.int64)
    sizes[0] = m
    maxs = mins + sizes - 1
    running = rng.random(n) < 0.5
    cur = np.where(running, mins + (rng.random(n) * sizes).astype(np.int64), 0)
    # table knots: first at or below min, last at max, the others strictly inside, duplicates dropped
    x = np.empty((n, knots))
    x[:, 0] = rng.integers(1, mins + 1)
    x[:, -1] = maxs
    if knots > 2:
        inner = mins[:, None] + (rng.random((n, knots - 2)) * sizes[:, None]).astype(np.int64)
        x[:, 1:-1] = np.sort(np.clip(inner, x[:, :1] + 1, maxs[:, None] - 1), axis=1)
    dup = np.zeros_like(x, dtype=bool)
    dup[:, 1:] = x[:, 1:] <= np.maximum.accumulate(x, axis=1)[:, :-1]
    x = np.where(dup, np.inf, x)
    x = np.sort(x, axis=1)
    y = np.where(np.isfinite(x), rng.uniform(1.0, 100.0, (n, knots)), 0.0)
    slope = np.zeros_like(x)
    both = np.isfinite(x[:, 1:])
    with np.errstate(invalid="ignore"):
        slope[:, :-1] = np.where(both, (y[:, 1:] - y[:, :-1]) / np.where(both, x[:, 1:] - x[:, :-1], 1.0), 0.0)
    not_table = kind != 1
    x[not_table] = np.inf
    x[not_table, 0] = 1.0
    y[not_table] = 0.0
    y[not_table, 0] = 1.0
    slope[not_table] = 0.0
    return JobArrays(
        kind=kind, min_workers=mins, sizes=sizes, gpus_per_worker=rng.choice([1, 2, 4, 8], n).astype(np.int64),
        current_workers=cur.astype(np.int64), remaining_work=rng.uniform(1e3, 1e7, n),
        restart_penalty=rng.uniform(1.0, 100.0, n), rate_per_worker=np.where(kind == 0, rng.uniform(0.5, 100, n), 1.0),
        exponent=np.where(kind == 0, rng.uniform(0.2, 1.0, n), 1.0),
        model=np.where(kind == 2, rng.integers(0, len(PROFILE_MODELS), n), 0).astype(np.int64),
        knot_x=x, knot_y=y, knot_slope=slope, server_gpus=server_gpus)


def mckp_instance(n: int, m: int, capacity: int, rng: np.random.Generator) -> MCKPProblem:
    """Value-table-shaped MCKP: class ``i``'s item ``k`` weighs ``g_i k`` and is worth a non-concave increasing
    sum of random gains (plus noise, so some items are dominated)."""
    g = rng.choice([1, 2, 4, 8], n)
    w = g[:, None] * np.arange(m)[None, :]
    inc = rng.uniform(0.01, 1.0, (n, m)) * (0.97 ** np.arange(m))[None, :]
    inc[:, 0] = 0.0
    v = np.cumsum(inc, axis=1) + rng.normal(0.0, 0.05, (n, m))
    return MCKPProblem.from_padded(w, v, np.full(n, m), capacity)


def small_mckp(rng: np.random.Generator) -> MCKPProblem:
    n, m = int(rng.integers(1, 40)), int(rng.integers(1, 12))
    w = rng.integers(0, 60, (n, m))
    return MCKPProblem.from_padded(w, rng.normal(0, 10, (n, m)), rng.integers(1, m + 1, n),
                                   int(rng.integers(0, 30 * n + 1)))


# ---------------------------------------------------------------------------------------------- timing
class Timer:
    """Median milliseconds of ``fn`` after warm-up: CUDA events on a GPU, perf_counter on a CPU."""

    def __init__(self, backend: str, cuda: bool, reps: int, warmup: int):
        self.backend, self.cuda, self.reps, self.warmup = backend, cuda, reps, warmup

    def __call__(self, fn) -> float:
        for _ in range(self.warmup):
            fn()
        self._sync()
        times = []
        for _ in range(self.reps):
            if self.cuda:
                lib = self._lib()
                if self.backend == "torch":
                    start, end = lib.Event(enable_timing=True), lib.Event(enable_timing=True)
                else:
                    start, end = lib.Event(), lib.Event()
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) if self.backend == "torch"
                             else lib.get_elapsed_time(start, end))
            else:
                t = time.perf_counter()
                fn()
                times.append(1e3 * (time.perf_counter() - t))
        return statistics.median(times)

    def _lib(self):
        if self.backend == "torch":
            import torch

            return torch.cuda
        import cupy

        return cupy.cuda

    def _sync(self):
        if not self.cuda:
            return
        if self.backend == "torch":
            import torch

            torch.cuda.synchronize()
        else:
            import cupy

            cupy.cuda.get_current_stream().synchronize()


# ------------------------------------------------------------------------------------------ value table
def check_rows(arrays: JobArrays, values, times, rows: np.ndarray, dtype: str) -> tuple[float, bool]:
    """Worst error (in units of the tolerance) of ``rows`` against the numpy reference; and whether all pass."""
    ref = value_table(jobs_of(arrays, rows), server_gpus=arrays.server_gpus, backend="numpy")
    m = ref.values.shape[1]
    v = to_numpy(values[_index(values, rows)])[:, :m].astype(np.float64)
    fin = np.isfinite(ref.values)
    ok = bool(np.array_equal(fin, np.isfinite(v)) and np.all(np.isneginf(v[~fin])))
    if arrays.width > m:  # the reference's width is the widest checked row: the rest must be padding
        ok &= bool(np.all(np.isneginf(to_numpy(values[_index(values, rows)])[:, m:])))
    scale = np.abs(ref.times[:, :1]) + np.abs(ref.times) + arrays.restart_penalty[rows][:, None]
    tol = RTOL[dtype] * scale[fin] + ATOL[dtype]
    worst = float(np.max(np.abs(v[fin] - ref.values[fin]) / tol)) if fin.any() else 0.0
    if times is not None:
        t = to_numpy(times[_index(times, rows)])[:, :m].astype(np.float64)
        tol = RTOL[dtype] * np.abs(ref.times) + ATOL[dtype]
        worst = max(worst, float(np.max(np.abs(t - ref.times) / tol)))
    return worst, ok and worst <= 1.0


def _index(a, rows):
    if isinstance(a, np.ndarray):
        return rows
    if hasattr(a, "get"):
        import cupy

        return cupy.asarray(rows)
    import torch

    return torch.as_tensor(rows, device=a.device)


def table_paths(args, cuda: bool, have_cupy: bool) -> list[tuple[str, str, str, bool]]:
    """(name, backend, dtype, fused) of every value-table path to run."""
    paths = [("torch eager", "torch", "float64", False), ("torch eager", "torch", "float32", False),
             ("torch.compile fused", "torch", "float32", True)]
    if args.fused64:
        paths.append(("torch.compile fused", "torch", "float64", True))
    if cuda and have_cupy:
        paths += [("cupy", "cupy", "float64", False), ("cupy", "cupy", "float32", False)]
    return paths


def run_tables(args, cuda: bool, have_cupy: bool, rng: np.random.Generator) -> list[Row]:
    arrays = random_job_arrays(args.jobs, args.options, rng)
    n = arrays.n_jobs
    rows = np.unique(np.concatenate([[0, n - 1], rng.integers(0, n, min(n, args.check_rows))]))
    out = []
    cells = n * arrays.width
    for name, backend, dtype, fused in table_paths(args, cuda, have_cupy):
        label = f"value table, {name} {dtype}"
        size = f"{n} x {arrays.width}"
        try:
            dev = None if cuda else "cpu"
            inputs = device_inputs(arrays, backend=backend, device=dev, dtype=dtype)
            # the fused kernel is compiled once, values only (what is timed); times are checked on the others
            values, times = value_table_device(arrays, backend=backend, dtype=dtype, fused=fused, inputs=inputs,
                                               want_times=not fused)
            worst, ok = check_rows(arrays, values, times, rows, dtype)
            del values, times

            def fn(inputs=inputs, backend=backend, dtype=dtype, fused=fused):
                return value_table_device(arrays, backend=backend, dtype=dtype, fused=fused, inputs=inputs,
                                          want_times=False)

            ms = Timer(backend, cuda, args.reps, 3)(fn)
            gbs = cells * np.dtype(dtype).itemsize / (ms * 1e-3) / 1e9
            note = ""
            if cuda and fused and dtype == "float32" and n * arrays.width >= 256_000_000:
                note = f"target <= {TARGET_TABLE_MS} ms: {'met' if ms <= TARGET_TABLE_MS else 'MISSED'}"
            out.append(Row(label, size, ms, f"{gbs:.0f} GB/s out", f"{worst:.2g} x tol", ok, note))
        except Exception as exc:  # noqa: BLE001 - a broken path is a failed check, reported, not a crash
            log.exception("%s failed", label)
            out.append(Row(label, size, None, "-", "-", False, f"error: {type(exc).__name__}: {exc}"[:80]))
        finally:
            _free(backend, cuda)
    # batched: 8 snapshots in one pass against one numpy table each
    batches = [jobs_of(random_job_arrays(int(rng.integers(1, 200)), int(rng.integers(1, 65)), rng)) for _ in range(8)]
    backend = "torch"
    try:
        got = value_tables(batches, backend=backend)
        worst, ok = 0.0, True
        for b, g in zip(batches, got, strict=True):
            ref = value_table(b, backend="numpy")
            fin = np.isfinite(ref.values)
            ok &= bool(np.array_equal(fin, np.isfinite(g.values)) and np.array_equal(ref.weights, g.weights))
            scale = (np.abs(ref.times[:, :1]) + np.abs(ref.times)
                     + np.array([j.restart_penalty for j in b])[:, None])
            tol = RTOL["float64"] * scale[fin] + ATOL["float64"]
            worst = max(worst, float(np.max(np.abs(g.values[fin] - ref.values[fin]) / tol)))
        out.append(Row("value tables, batched (8 snapshots)", f"{sum(map(len, batches))} jobs", None, "-",
                       f"{worst:.2g} x tol", ok and worst <= 1.0))
    except Exception as exc:  # noqa: BLE001
        log.exception("batched failed")
        out.append(Row("value tables, batched", "-", None, "-", "-", False, f"error: {exc}"[:80]))
    return out


def _free(backend: str, cuda: bool) -> None:
    if not cuda:
        return
    if backend == "torch":
        import torch

        torch.cuda.empty_cache()
    else:
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()


# -------------------------------------------------------------------------------------------------- MCKP
def run_mckp(args, cuda: bool, have_cupy: bool, rng: np.random.Generator) -> list[Row]:
    out = []
    kernels = ["torch"] + (["cupy"] if cuda and have_cupy else [])
    device = None if cuda else "cpu"
    # small random instances against dp (every kernel)
    for kernel in kernels:
        worst, ok = 0.0, True
        try:
            for _ in range(args.small):
                p = small_mckp(rng)
                ref = solve_mckp(p, method="dp")
                res = solve_mckp(p, method="gpu", kernel=kernel, device=device)
                good, err = _same(p, ref, res)
                ok &= good
                worst = max(worst, err)
            out.append(Row(f"MCKP gpu/{kernel}, small random vs dp", f"{args.small} instances", None, "-",
                           f"{worst:.2g} rel", ok))
        except Exception as exc:  # noqa: BLE001
            log.exception("small MCKP %s failed", kernel)
            out.append(Row(f"MCKP gpu/{kernel}, small", "-", None, "-", "-", False, f"error: {exc}"[:80]))
    # the large instance against core
    p = mckp_instance(args.classes, args.items, args.capacity, rng)
    t = time.perf_counter()
    ref = solve_mckp(p, method="core")
    core_ms = 1e3 * (time.perf_counter() - t)
    size = f"{args.classes} x {args.items}, cap {args.capacity}"
    out.append(Row("MCKP core (CPU exact reference)", size, core_ms, "1 run", "-", str(ref.status) == "optimal"))
    for kernel in kernels:
        label = f"MCKP gpu/{kernel}"
        try:
            res = solve_mckp(p, method="gpu", kernel=kernel, device=device)
            good, err = _same(p, ref, res)
            reps = args.reps if kernel == "cupy" else max(1, min(args.reps, 3))  # torch: the naive baseline

            def fn(kernel=kernel):
                return solve_mckp(p, method="gpu", kernel=kernel, device=device)

            ms = _wall(fn, reps)
            note = ""
            if cuda and kernel == "cupy" and args.classes >= 10_000:
                note = f"target <= {TARGET_MCKP_MS} ms: {'met' if ms <= TARGET_MCKP_MS else 'MISSED'}"
            out.append(Row(label, size, ms, f"{core_ms / ms:.1f}x core", f"{err:.2g} rel", good, note))
        except Exception as exc:  # noqa: BLE001
            log.exception("%s failed", label)
            out.append(Row(label, size, None, "-", "-", False, f"error: {type(exc).__name__}: {exc}"[:80]))
        finally:
            _free("torch" if kernel == "torch" else "cupy", cuda)
    return out


def _same(p: MCKPProblem, ref, res) -> tuple[bool, float]:
    if res.status != ref.status:
        return False, float("inf")
    if ref.objective is None:
        return True, 0.0
    err = abs(res.objective - ref.objective) / max(1.0, abs(ref.objective))
    return bool(err <= 1e-9 and p.choice_weight(res.choice) <= p.capacity), err


def _wall(fn, reps: int) -> float:
    """Median wall-clock ms of a whole solve (it returns host results, so it is synchronised)."""
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(1e3 * (time.perf_counter() - t))
    return statistics.median(times)


# -------------------------------------------------------------------------------------------------- main
def _has(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lyra_solver.bench.gpu_check", description=__doc__.split("\n")[0])
    ap.add_argument("--cpu", action="store_true", help="run torch on the CPU at small sizes even with a GPU")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: fresh)")
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--options", type=int)
    ap.add_argument("--classes", type=int)
    ap.add_argument("--items", type=int)
    ap.add_argument("--capacity", type=int)
    ap.add_argument("--reps", type=int, help="timed repetitions (median); 20 on a GPU, 5 on a CPU")
    ap.add_argument("--check-rows", type=int, default=20_000, help="rows compared with numpy per backend")
    ap.add_argument("--small", type=int, default=30, help="small random MCKP instances per kernel")
    ap.add_argument("--fused64", action="store_true", help="also compile and check the fused kernel in float64")
    args = ap.parse_args(argv)
    from lyra_solver.logsetup import configure_logging

    configure_logging("gpu_check")
    if not _has("torch"):
        print("gpu_check: torch is not installed (pip install 'lyra-solver[gpu]')", file=sys.stderr)
        return 2
    import torch

    cuda = torch.cuda.is_available() and not args.cpu
    if not cuda:
        torch.set_num_threads(1)  # CPU mode checks the paths; one thread keeps a shared machine's timings stable
    have_cupy = _has("cupy")
    full = dict(jobs=1_000_000, options=256, classes=10_000, items=64, capacity=100_000, reps=20)
    small = dict(jobs=20_000, options=64, classes=300, items=16, capacity=3_000, reps=5)
    for k, v in (full if cuda else small).items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 2**32)
    rng = np.random.default_rng(seed)
    device = torch.cuda.get_device_name() if cuda else "CPU (torch " + torch.__version__ + ")"
    print(f"gpu_check: {device}; torch {torch.__version__}; cupy {'yes' if have_cupy else 'no'}; seed {seed}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    t0 = time.perf_counter()
    rows = run_tables(args, cuda, have_cupy, rng)
    rows += run_mckp(args, cuda, have_cupy, rng)
    print(format_table(rows))
    bad = [r for r in rows if not r.ok]
    print(f"gpu_check: {len(rows) - len(bad)} passed, {len(bad)} failed in {time.perf_counter() - t0:.0f} s")
    return 1 if bad else 0


def format_table(rows: list[Row]) -> str:
    head = ("path", "size", "median ms", "rate", "worst error", "ok", "note")
    cells = [(r.path, r.size, "-" if r.ms is None else f"{r.ms:.3f}", r.rate, r.err, "ok" if r.ok else "FAIL",
              r.note) for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |" for row in cells]
    return "\n".join([line, sep, *body])


if __name__ == "__main__":
    raise SystemExit(main())
