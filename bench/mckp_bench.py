"""MCKP speed benchmark: our exact core algorithm against CP-SAT, HiGHS and a plain DP, in one run.

Cases (the issue's targets):

* ``a``: non-concave cluster-like value tables, 1,000 classes x up to 32 items; ours proven optimal, compared
  with CP-SAT, HiGHS and the plain numpy DP over capacity (targets: >= 100x faster than CP-SAT, >= 20x faster
  than HiGHS).
* ``b``: cluster-like, 10,000 classes x up to 64 items, capacity 30% of the summed largest weights; ours
  proven optimal within 2 s (greedy and hull shown for their gaps).
* ``c``: Pisinger strongly correlated, 1,000 x 10, R = 1,000; ours proven optimal within 5 s; CP-SAT and HiGHS
  with a time limit (60 s by default).
* ``pisinger``: every Pisinger class, 1,000 x 10, R = 1,000 and 10,000; ours only (with a time limit).

Usage: ``python -m lyra_solver.bench.mckp_bench [--quick] [--cases a,b,c,pisinger] [--time-limit S] [--output FILE]``
(exposed as ``lyra-solver bench mckp``). Prints a markdown table; ``--output`` also writes it to a file.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from lyra_solver.bench.mckp_instances import PISINGER_KINDS, cluster, pisinger
from lyra_solver.formulations.mckp import MCKPProblem, MCKPResult, solve_mckp

__all__ = ["Row", "main", "run_cases"]

CASES = ("a", "b", "c", "pisinger")


@dataclass(frozen=True)
class Row:
    """One line of the table."""

    case: str
    instance: str
    method: str
    result: MCKPResult | None
    wall_s: float
    note: str = ""


def _run(problem: MCKPProblem, method: str, time_limit: float | None, **options) -> tuple[MCKPResult | None,
                                                                                          float, str]:
    t0 = time.perf_counter()
    try:
        res = solve_mckp(problem, method=method, time_limit=time_limit, **options)
    except ValueError as exc:
        return None, time.perf_counter() - t0, f"refused: {exc}"
    return res, time.perf_counter() - t0, ""


def run_cases(cases: tuple[str, ...], *, quick: bool, ref_limit: float, our_limit: float, num_workers: int,
              references: bool, log: Callable[[str], None] | None = None) -> list[Row]:
    """Run the selected cases and return the rows (see the module docstring)."""
    rows: list[Row] = []

    def add(case: str, name: str, p: MCKPProblem, method: str, limit: float | None, **opt) -> None:
        res, wall, note = _run(p, method, limit, **opt)
        rows.append(Row(case, name, method, res, wall, note))
        if log is not None:
            status = "-" if res is None else str(res.status)
            log(f"  {case} {name} {method}: {status} in {wall:.3f} s {note}")

    # warm-up outside the timed runs: imports, and the numba step kernel (compiled once, cached on disk)
    solve_mckp(cluster(20, 8, seed=2))
    solve_mckp(pisinger("strongly", 40, 10, seed=2), use_numba=True)
    if "a" in cases:
        n = 100 if quick else 1000
        for seed in (0,) if quick else (0, 1, 2):
            p = cluster(n, 32, concave=False, seed=seed)
            name = f"cluster non-concave {n}x32 seed={seed} c={p.capacity}"
            add("a", name, p, "auto", our_limit)
            add("a", name, p, "greedy", None)
            add("a", name, p, "hull", None)
            add("a", name, p, "dp", None)
            if references:
                add("a", name, p, "highs", ref_limit)
                add("a", name, p, "cpsat", ref_limit, num_workers=num_workers)
    if "b" in cases:
        n, m = (1000, 64) if quick else (10000, 64)
        p = cluster(n, m, concave=False, seed=3, capacity_fraction=0.3)
        name = f"cluster non-concave {n}x{m} c={p.capacity}"
        add("b", name, p, "auto", our_limit)
        add("b", name, p, "greedy", None)
        add("b", name, p, "hull", None)
    if "c" in cases:
        n = 100 if quick else 1000
        p = pisinger("strongly", n, 10, R=1000, seed=4)
        name = f"Pisinger strongly {n}x10 R=1000 c={p.capacity}"
        add("c", name, p, "auto", our_limit)
        add("c", name, p, "hull", None)
        if references:
            add("c", name, p, "highs", ref_limit)
            add("c", name, p, "cpsat", ref_limit, num_workers=num_workers)
    if "pisinger" in cases:
        n = 100 if quick else 1000
        for R in (1000, 10000):
            for kind in PISINGER_KINDS:
                p = pisinger(kind, n, 10, R=R, seed=5)
                add("pisinger", f"{kind} {n}x10 R={R}", p, "auto", our_limit)
    return rows


def _fmt(x: float | None, digits: int = 6) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}g}"


def format_table(rows: list[Row]) -> str:
    """Markdown table; the last column is each method's wall time over ours (``auto``) on the same case."""
    ours = {(r.case, r.instance): r.wall_s for r in rows if r.method == "auto"}
    lines = ["| case | instance | method | status | objective | bound | gap | time (s) | x ours |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        res = r.result
        status = r.note if res is None else f"{res.status} ({res.backend_status})"
        ref = ours.get((r.case, r.instance))
        ratio = "-" if ref is None or r.method == "auto" or ref <= 0 else f"{r.wall_s / ref:.1f}x"
        lines.append("| " + " | ".join([
            r.case, r.instance, r.method, status,
            _fmt(None if res is None else res.objective, 12), _fmt(None if res is None else res.bound, 12),
            _fmt(None if res is None else res.gap, 3), f"{r.wall_s:.3f}", ratio]) + " |")
    return "\n".join(lines)


def summarize(rows: list[Row], *, quick: bool) -> str:
    """The issue's targets, met or not, as markdown bullet lines."""
    by_key: dict[tuple[str, str], dict[str, Row]] = {}
    for r in rows:
        by_key.setdefault((r.case, r.instance), {})[r.method] = r
    out = []
    for (case, inst), meths in by_key.items():
        ours = meths.get("auto")
        if ours is None or ours.result is None:
            continue
        proven = ours.result.status == "optimal"
        if case == "a":
            for ref, target in (("cpsat", 100.0), ("highs", 20.0)):
                r = meths.get(ref)
                if r is None or r.result is None:
                    continue
                ratio = r.wall_s / max(ours.wall_s, 1e-9)
                sign = ">=" if r.result.status != "optimal" else ""
                met = proven and ratio >= target
                out.append(f"- ({case}) {inst}: ours {ours.wall_s:.3f} s ({ours.result.status}), {ref} "
                           f"{r.wall_s:.2f} s ({r.result.status}): {sign}{ratio:.0f}x faster, target "
                           f">= {target:.0f}x: {'met' if met else 'NOT met'}")
        elif case in ("b", "c"):
            limit = 2.0 if case == "b" else 5.0
            met = proven and ours.wall_s <= limit
            refs = ", ".join(f"{m} {r.result.status} in {r.wall_s:.1f} s" for m, r in meths.items()
                             if m in ("cpsat", "highs") and r.result is not None)
            out.append(f"- ({case}) {inst}: ours {ours.result.status} in {ours.wall_s:.3f} s, target proven "
                       f"optimal within {limit:g} s: {'met' if met else 'NOT met'}"
                       + (f"; {refs}" if refs else "") + (" (quick sizes)" if quick else ""))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (``lyra-solver bench mckp``). Returns the exit code."""
    ap = argparse.ArgumentParser(prog="lyra-solver bench mckp",
                                 description="MCKP speed: our exact core algorithm vs CP-SAT, HiGHS, DP.")
    ap.add_argument("--quick", action="store_true", help="small sizes and short limits (smoke test)")
    ap.add_argument("--cases", default="a,b,c,pisinger", help=f"comma-separated subset of {','.join(CASES)}")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="time limit of the reference solvers in seconds (default 60, 5 with --quick)")
    ap.add_argument("--our-time-limit", type=float, default=60.0, help="time limit of ours (default 60)")
    ap.add_argument("--num-workers", type=int, default=min(8, os.cpu_count() or 1), help="CP-SAT workers")
    ap.add_argument("--no-reference", action="store_true", help="skip CP-SAT and HiGHS")
    ap.add_argument("--output", default=None, help="also write the markdown table to this file")
    ap.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    args = ap.parse_args(argv)
    cases = tuple(c.strip() for c in args.cases.split(",") if c.strip())
    bad = [c for c in cases if c not in CASES]
    if bad:
        print(f"lyra-solver bench mckp: --cases: unknown case(s) {', '.join(bad)}; expected {CASES}",
              file=sys.stderr)
        return 2
    ref_limit = args.time_limit if args.time_limit is not None else (5.0 if args.quick else 60.0)
    log = (lambda s: print(s, file=sys.stderr, flush=True)) if args.verbose else None
    rows = run_cases(cases, quick=args.quick, ref_limit=ref_limit, our_limit=args.our_time_limit,
                     num_workers=args.num_workers, references=not args.no_reference, log=log)
    header = (f"MCKP benchmark ({'quick' if args.quick else 'full'}): python {platform.python_version()}, "
              f"{os.cpu_count()} CPUs, reference time limit {ref_limit:g} s, "
              f"CP-SAT workers {args.num_workers}")
    text = header + "\n\n" + format_table(rows) + "\n\nTargets:\n\n" + summarize(rows, quick=args.quick)
    print(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
