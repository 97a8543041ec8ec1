"""``python -m lyra_solver.bench.report``: run every suite (``lyra-solver bench all``), then write BENCHMARKS.md
and its plots (:func:`lyra_solver.bench.report.write_report`).

The command sits apart from the report's writer because it runs the harness, which writes the report for
``bench --report``: the writer imports no harness, the command both.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["main"]

DESCRIPTION = 'Regenerate BENCHMARKS.md: every suite of the harness, the contributed sections, every speed target.'


def main(argv: list[str] | None = None) -> int:
    """Run every suite (``bench all``), then write BENCHMARKS.md and its plots."""
    ap = argparse.ArgumentParser(prog="python -m lyra_solver.bench.report", description=DESCRIPTION,
                                 allow_abbrev=False)
    ap.add_argument("--out", type=Path, default=Path("BENCHMARKS.md"), help="the report to write")
    ap.add_argument("--plots", type=Path, default=None, help="where the plots go (default docs/bench beside --out)")
    ap.add_argument("--results", type=Path, default=None,
                    help="keep results.json and the plots here (default bench-results/ beside --out)")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run, not the figures)")
    ap.add_argument("--jobs", type=int, default=1, help="parallel processes (timings are cleanest with 1)")
    args = ap.parse_args(argv)
    from lyra_solver.bench.harness import main as bench_main

    results = args.results or args.out.parent / "bench-results"
    # --force: the results folder is this command's own (the last report's results.json and plots are replaced)
    argv2 = ["all", "--out", str(results), "--force", "--jobs", str(args.jobs)] + (["--quick"] if args.quick else [])
    rc = bench_main(argv2 + ["--report", str(args.out)] + (["--plots", str(args.plots)] if args.plots else []))
    if rc == 0:
        print(f"wrote {args.out}", file=sys.stderr)
    return rc


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
