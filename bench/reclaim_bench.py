"""Reclamation benchmark: Lyra's greedy and baselines against the exact ILP (``lyra-solver bench reclaim``).

Three tables, printed as markdown:

1. generated clusters of 100 to 2,000 loaned servers, reclaiming 1% to 25% of them: cost gap of each
   heuristic to the proven optimum (median, p95, worst) and the solve times;
2. reclaim events from the Alibaba GenAI inference load curve (each rise of the load between 5-minute
   windows asks for that many loaned servers back);
3. the target size, 1,000 loaned servers x ~3,200 jobs, per reclaim count;
4. (``--stress``) scattered instances without placement structure, 1,000 servers x 3,000 / 5,000 jobs.

The gap of a heuristic is ``(cost - optimum) / max(1, optimum)`` (the project's relative gap), measured
only where the exact solve is proven optimal.

References
----------
Li et al., "Lyra: Elastic Scheduling for Deep Learning Clusters", EuroSys 2023.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from lyra_solver.bench.reclaim_instances import (
    alibaba_load_curve,
    default_qps_path,
    generate_cluster,
    generate_scattered,
    reclaim_events,
    with_count,
)
from lyra_solver.formulations import Status
from lyra_solver.formulations.reclaim import ReclaimProblem, ReclaimResult, solve_reclaim
from lyra_solver.heuristics.reclaim import fewest_jobs_reclaim, greedy_reclaim, random_reclaim

__all__ = ["main", "run_instance"]

HEURISTICS = ("greedy", "fewest-jobs", "random")


@dataclass
class Row:
    """Measurements on one instance."""

    n_servers: int
    n_jobs: int
    count: int
    exact: dict[str, ReclaimResult]
    heur: dict[str, ReclaimResult]
    gaps: dict[str, float] = field(default_factory=dict)


def _gap(cost: float, opt: float) -> float:
    return (cost - opt) / max(1.0, abs(opt))


def run_instance(problem: ReclaimProblem, *, methods: tuple[str, ...], time_limit: float | None,
                 seed: int = 0) -> Row:
    """Solve one instance with the exact methods and the heuristics; gaps against the first exact method."""
    exact = {m: solve_reclaim(problem, method=m, time_limit=time_limit) for m in methods}
    heur = {"greedy": greedy_reclaim(problem), "fewest-jobs": fewest_jobs_reclaim(problem),
            "random": random_reclaim(problem, seed)}
    row = Row(problem.n_servers, problem.n_jobs, int(problem.count or 0), exact, heur)
    ref = exact[methods[0]]
    if ref.status == Status.OPTIMAL:
        for name, res in heur.items():
            row.gaps[name] = _gap(res.objective, ref.objective)
    return row


def _pct(values: list[float]) -> str:
    if not values:
        return "n/a"
    a = np.asarray(values) * 100.0
    return f"{np.median(a):.2f} / {np.percentile(a, 95):.2f} / {a.max():.2f}"


def _times(values: list[float], unit: float = 1.0, digits: int = 2) -> str:
    if not values:
        return "n/a"
    a = np.asarray(values) * unit
    return f"{np.median(a):.{digits}f} / {a.max():.{digits}f}"


def _summary_cells(rows: list[Row], methods: tuple[str, ...]) -> list[str]:
    ref = methods[0]
    n_opt = sum(r.exact[ref].status == Status.OPTIMAL for r in rows)
    agree = sum(all(r.exact[m].status == Status.OPTIMAL for m in methods)
                and max(r.exact[m].objective for m in methods) - min(r.exact[m].objective for m in methods)
                <= 1e-6 * max(1.0, abs(r.exact[ref].objective)) for r in rows)
    cells = [f"{n_opt}/{len(rows)}", f"{agree}/{len(rows)}"]
    cells += [_pct([r.gaps[h] for r in rows if h in r.gaps]) for h in HEURISTICS]
    extra = [r.heur["greedy"].preemptions - r.exact[ref].preemptions for r in rows if "greedy" in r.gaps]
    cells.append(f"{np.mean(extra):.2f}" if extra else "n/a")
    cells += [_times([r.exact[m].time_s for r in rows]) for m in methods]
    cells.append(_times([r.heur["greedy"].time_s for r in rows], unit=1000.0, digits=1))
    return cells


def _header(first: list[str], methods: tuple[str, ...]) -> list[str]:
    return (first + [f"optimal ({methods[0]})", "all methods optimal and equal"]
            + [f"{h} gap % (med / p95 / worst)" for h in HEURISTICS]
            + ["greedy extra preemptions (mean)"] + [f"{m} s (med / max)" for m in methods]
            + ["greedy ms (med / max)"])


def _table(header: list[str], lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cells) + " |" for cells in lines]
    return "\n".join(out)


def _log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print markdown tables; returns the exit code (0 done, 2 bad usage)."""
    ap = argparse.ArgumentParser(prog="lyra-solver bench reclaim",
                                 description="Greedy vs exact server reclamation: cost gaps and solve times.")
    ap.add_argument("--quick", action="store_true", help="small smoke run (seconds)")
    ap.add_argument("--sizes", type=str, default="100,250,500,1000,2000",
                    help="loaned servers per generated cluster, comma separated")
    ap.add_argument("--seeds", type=int, default=3, help="clusters per size")
    ap.add_argument("--fractions", type=str, default="0.01,0.05,0.1,0.25",
                    help="reclaim counts as fractions of the loaned servers")
    ap.add_argument("--methods", type=str, default="cpsat,cbc",
                    help="exact methods (the first is the reference for the gaps)")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per exact solve")
    ap.add_argument("--qps", type=Path, default=None, help="Alibaba genai_qps.csv (default: shared data)")
    ap.add_argument("--window", type=float, default=300.0, help="load-curve window, seconds")
    ap.add_argument("--event-servers", type=int, default=500,
                    help="loaned servers of the clusters that face the Alibaba reclaim events")
    ap.add_argument("--events", type=int, default=0, help="use at most this many events (0: all)")
    ap.add_argument("--no-target", action="store_true", help="skip the 1,000 x ~3,200 target table")
    ap.add_argument("--stress", action="store_true",
                    help="add the scattered 1,000 x 3,000 / 5,000 stress instances (about a minute more)")
    ap.add_argument("--out", type=Path, default=None, help="also write the tables to this markdown file")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        fractions = [float(f) for f in args.fractions.split(",") if f.strip()]
    except ValueError as exc:
        print(f"lyra-solver bench reclaim: bad --sizes/--fractions: {exc}", file=sys.stderr)
        return 2
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    if not methods or any(m not in ("cpsat", "cbc") for m in methods):
        print("lyra-solver bench reclaim: --methods: expected cpsat and/or cbc", file=sys.stderr)
        return 2
    seeds, event_servers, max_events = args.seeds, args.event_servers, args.events
    target = not args.no_target
    if args.quick:
        sizes, seeds, fractions = [100, 200], 1, [0.05, 0.2]
        event_servers, max_events, target = 100, 4, False
    t_start = time.perf_counter()
    out: list[str] = []

    # 1. Generated clusters.
    lines = []
    for size in sizes:
        rows = []
        for seed in range(seeds):
            inst = generate_cluster(size, seed)
            for frac in fractions:
                count = max(1, int(round(frac * size)))
                rows.append(run_instance(with_count(inst.problem, count), methods=methods,
                                         time_limit=args.time_limit, seed=seed))
            _log(f"size {size} seed {seed} done ({time.perf_counter() - t_start:.0f} s)", args.quiet)
        jobs = np.mean([r.n_jobs for r in rows])
        lines.append([str(size), f"{jobs:.0f}", str(len(rows))] + _summary_cells(rows, methods))
    out.append("### Generated clusters (reclaim " + ", ".join(f"{f:.0%}" for f in fractions)
               + f" of the loaned servers; {seeds} cluster(s) per size)\n")
    out.append(_table(_header(["loaned servers", "jobs on them (mean)", "instances"], methods), lines))

    # 2. Alibaba reclaim events.
    qps = args.qps if args.qps is not None else default_qps_path()
    if qps.exists():
        load = alibaba_load_curve(qps, window_s=args.window)
        events = reclaim_events(load, event_servers)
        if max_events > 0:
            events = events[:max_events]
        pool = [generate_cluster(event_servers, 1000 + i) for i in range(min(10, max(1, len(events))))]
        rows = []
        for i, k in enumerate(events):
            inst = pool[i % len(pool)]
            rows.append(run_instance(with_count(inst.problem, int(k)), methods=methods,
                                     time_limit=args.time_limit, seed=i))
        _log(f"alibaba events done ({time.perf_counter() - t_start:.0f} s)", args.quiet)
        out.append(f"\n### Alibaba GenAI reclaim events ({len(load)} windows of {args.window:.0f} s, "
                   f"load scaled to {event_servers} inference servers, all loaned; {len(events)} rises)\n")
        if rows:
            desc = (f"{int(np.median(events))} / {int(np.percentile(events, 95))} / {int(events.max())}")
            out.append(_table(_header(["events", "servers reclaimed (med / p95 / max)"], methods),
                              [[str(len(rows)), desc] + _summary_cells(rows, methods)]))
        else:
            out.append("no rise in the load curve")
    else:
        out.append(f"\n(Alibaba load curve not found at {qps}; events skipped)")

    # 3. Target size.
    if target:
        lines = []
        for seed in range(3):
            inst = generate_cluster(1000, seed, n_training=500, gpu_mix=(0.9, 0.08, 0.02))
            for count in (10, 50, 100, 250, 500):
                r = run_instance(with_count(inst.problem, count), methods=methods, time_limit=args.time_limit,
                                 seed=seed)
                ex = [f"{r.exact[m].status} {r.exact[m].time_s:.2f}" for m in methods]
                g = r.heur["greedy"]
                gap = f"{r.gaps['greedy'] * 100:.2f}" if "greedy" in r.gaps else "n/a"
                lines.append([str(seed), str(r.n_jobs), str(count)] + ex
                             + [f"{r.exact[methods[0]].objective:.1f}", f"{g.objective:.1f}", gap,
                                f"{g.time_s * 1000:.1f}"])
        _log(f"target done ({time.perf_counter() - t_start:.0f} s)", args.quiet)
        out.append("\n### Target: 1,000 loaned servers x ~3,200 jobs (status and seconds per exact method)\n")
        out.append(_table(["seed", "jobs", "reclaim"] + [f"{m} (status, s)" for m in methods]
                          + ["optimum", "greedy cost", "greedy gap %", "greedy ms"], lines))

    # 4. Stress: no placement structure.
    if args.stress and not args.quick:
        lines = []
        for n_jobs in (3000, 5000):
            for count in (20, 100, 300):
                p = generate_scattered(1000, n_jobs, 0, count=count)
                r = run_instance(p, methods=methods, time_limit=args.time_limit)
                g = r.heur["greedy"]
                gap = f"{r.gaps['greedy'] * 100:.2f}" if "greedy" in r.gaps else "n/a"
                lines.append([str(n_jobs), str(count)]
                             + [f"{r.exact[m].status} {r.exact[m].time_s:.2f}" for m in methods]
                             + [f"{g.time_s * 1000:.1f}", gap])
        _log(f"stress done ({time.perf_counter() - t_start:.0f} s)", args.quiet)
        out.append("\n### Stress: 1,000 servers, jobs scattered on 1-3 random servers (seed 0)\n")
        out.append(_table(["jobs", "reclaim"] + [f"{m} (status, s)" for m in methods]
                          + ["greedy ms", "greedy gap %"], lines))

    out.append(f"\nTotal wall time {time.perf_counter() - t_start:.0f} s.")
    text = "\n".join(out)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
