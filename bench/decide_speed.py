"""Speed of one ``decide`` round on a large generated cluster, JSON parsing and validation included.

``lyra-solver bench decide [--servers 1000] [--jobs 5000] [--repeat 5] [--seed 1]`` prints a markdown table
(median and best of ``--repeat`` runs after one warm-up) for each allocation method, and the ratio of the
median to the 0.5 s target.
"""
from __future__ import annotations

import argparse
import statistics
import time

from lyra_solver import io
from lyra_solver.bench.generate import generate_snapshot
from lyra_solver.pipeline import decide

TARGET_S = 0.5


def run_once(data: bytes, allocation: str) -> tuple[float, dict[str, float], object]:
    t0 = time.perf_counter()
    snap = io.parse_snapshot(data)
    t1 = time.perf_counter()
    decision = decide(snap, allocation=allocation)
    t2 = time.perf_counter()
    io.encode(decision)
    t3 = time.perf_counter()
    return t3 - t0, {"parse": t1 - t0, "decide": t2 - t1, "encode": t3 - t2}, decision


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="lyra-solver bench decide", description=__doc__.splitlines()[0])
    ap.add_argument("--servers", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--running-share", type=float, default=0.5)
    ap.add_argument("--allocation", nargs="+", default=["exact", "greedy", "hull"])
    args = ap.parse_args(argv)
    snap = generate_snapshot(servers=args.servers, jobs=args.jobs, seed=args.seed, gpus=args.gpus,
                             running_share=args.running_share)
    data = io.encode(snap)
    print(f"decide on {args.servers} servers x {args.gpus} GPUs, {args.jobs} jobs (seed {args.seed}, "
          f"{len(data) / 1e6:.1f} MB of JSON); parse + validate + decide + encode; {args.repeat} runs after a "
          "warm-up\n")
    print("| allocation | median s | best s | parse s | decide s | vs 0.5 s target | running jobs "
          "| allocation status |")
    print("|---|---|---|---|---|---|---|---|")
    for alloc in args.allocation:
        run_once(data, alloc)
        runs = [run_once(data, alloc) for _ in range(args.repeat)]
        totals = [r[0] for r in runs]
        med = statistics.median(totals)
        parts = runs[totals.index(min(totals))][1]
        dec = runs[0][2]
        running = sum(1 for jd in dec.jobs.values() if jd.action == "run")
        print(f"| {alloc} | {med:.3f} | {min(totals):.3f} | {parts['parse']:.3f} | {parts['decide']:.3f} | "
              f"{med / TARGET_S:.2f}x | {running} | {dec.summary.statuses.get('allocation')} |")
    return 0
