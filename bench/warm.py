"""Compile the package's numba kernels into numba's disk cache ahead of use: ``python -m lyra_solver.bench.warm``.

numba compiles a kernel on its first call in a process whose disk cache does not hold it yet (a new checkout or
installation, a changed kernel source, another numba or Python) and saves it there; later processes load it in
milliseconds. The compilation is not cheap: the kernels that a simulator round takes cost about 30 s of one core
(2-core machine, numba 0.68), against about 0.9 s to import numba and load them once cached. This module runs a
small workload that makes every kernel the engine's paths take on real inputs (the same array types, so the same
signatures): exact and heuristic MCKP solves of each instance class (unbounded and time-limited), ``decide``
rounds on generated snapshots under each allocation, placement, queue and packing option, and short replays of
the simulator under the policies that use compiled twins. Then it records, beside the cache, that the cache is
warm for these kernel sources (:func:`lyra_solver.formulations.mckp._numba.mark_warm`).

A process that would load the kernels while the cache is cold starts this module in the background instead
(:func:`lyra_solver.formulations.mckp._numba.ready`) and keeps the numpy twins until it has finished; running it
by hand after an installation makes the first simulation take the compiled path from its first rounds. The
answers never depend on the path, only the time.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["main", "warm"]


def _mckp() -> None:
    """Exact (core, unbounded and time-limited), greedy and hull solves of every class, small and larger."""
    from lyra_solver.bench import mckp_instances as gen
    from lyra_solver.formulations.mckp import solve_mckp

    problems = [gen.pisinger(kind, n, k, seed=seed) for kind in gen.PISINGER_KINDS
                for n, k, seed in ((30, 5, 1), (200, 10, 2))]
    problems += [gen.cluster(n, 32, seed=3) for n in (50, 400)]
    problems += [gen.cluster(300, 16, concave=True, seed=4)]
    for p in problems:
        solve_mckp(p, method="core")
        solve_mckp(p, method="core", time_limit=60.0)  # the search loop in Python, step by step
        solve_mckp(p, method="greedy")
        solve_mckp(p, method="hull")


def _decide() -> None:
    """``decide`` on generated snapshots under each option that reaches a compiled twin."""
    from lyra_solver import decide
    from lyra_solver.bench.generate import generate_snapshot
    from lyra_solver.io import encode, parse_snapshot

    option_sets = [{"allocation": a} for a in ("exact", "greedy", "hull")]
    option_sets += [{"placement": "bfd"}, {"queue": "fifo"}, {"queue": "las"}, {"packing": "gimbal"}]
    for servers, jobs, seed, share in ((20, 60, 1, 0.5), (200, 800, 2, 0.7), (60, 300, 3, 0.2)):
        snap = parse_snapshot(encode(generate_snapshot(servers=servers, jobs=jobs, seed=seed,
                                                       running_share=share)))
        for options in option_sets:
            decide(snap, deterministic=True, **options)


def _replays() -> None:
    """Short replays of synthetic Philly-like jobs (profile throughputs, elastic and rigid, an inference load)
    under the policies whose rounds or time keeping take compiled twins."""
    import numpy as np
    from lyra_solver.bench.sim._rows import TraceJob
    from lyra_solver.bench.sim.engine import SimConfig, simulate
    from lyra_solver.bench.sim.policies import get_policy, packing_available
    from lyra_solver.bench.sim.traces import LoadCurve, map_jobs

    rng = np.random.default_rng(7)
    n = 120
    submit = np.cumsum(rng.exponential(120.0, n))
    gpus = rng.choice([1, 2, 4, 8, 16], size=n, p=[0.45, 0.2, 0.15, 0.15, 0.05])
    duration = rng.lognormal(8.0, 1.5, n)
    trace = [TraceJob(line=2 + i, submit=float(submit[i]), gpus=int(gpus[i]), duration=float(duration[i]),
                      key=f"warm-{i}") for i in range(n)]
    specs = map_jobs(trace, seed=0)
    load = LoadCurve(times=(0.0, 3600.0, 7200.0), values=(0.9, 0.4, 0.7), period=10800.0)
    config = SimConfig(training_servers=6, inference_servers=4, interval=300.0, load=load)
    policies = ["lyra", "lyra-exact", "lyra-greedy", "lyra-fifo", "elastic", "loan", "baseline-sjf"]
    if packing_available():
        policies += ["lyra-pack", "gimbal"]
    for name in policies:
        simulate(specs, get_policy(name), config)


def warm() -> float:
    """Run the workload with the kernels loaded and mark numba's cache warm; returns the seconds it took.

    Raises
    ------
    RuntimeError
        numba is not installed, or disabled by ``LYRA_NO_NUMBA``.
    """
    from lyra_solver.formulations.mckp import _numba

    start = time.perf_counter()
    if not _numba.load():
        raise RuntimeError("numba is not installed (the `fast` extra) or LYRA_NO_NUMBA is set: nothing to compile")
    for part in (_mckp, _decide, _replays):
        t = time.perf_counter()
        part()
        log.info("%s: %.1f s", part.__name__.lstrip("_"), time.perf_counter() - t)
    _numba.mark_warm()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """``python -m lyra_solver.bench.warm [-q]``: exit 0 once the cache is warm, 1 without numba."""
    parser = argparse.ArgumentParser(prog="python -m lyra_solver.bench.warm",
                                     description="Compile the package's numba kernels into numba's disk cache.")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    parser.add_argument("--lock", help="a file to remove at the end (the lock of the background warm-up that "
                        "lyra_solver.formulations.mckp._numba.ready starts)")
    args = parser.parse_args(argv)
    try:
        seconds = warm()
    except RuntimeError as exc:
        if not args.quiet:
            print(f"warm: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.lock:
            Path(args.lock).unlink(missing_ok=True)
    if not args.quiet:
        print(f"numba's cache is warm ({seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
