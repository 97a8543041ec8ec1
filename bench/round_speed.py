"""``python -m lyra_solver.bench.round_speed``: issue 24's round targets measured in one run, beside a host yardstick.

Issue 24 asks for the 100,000-GPU round (12,500 servers x 50,000 jobs, exact allocation) in at most 0.10 s warm
with its parse and validation in at most 0.15 s, the 10,000-job Philly run in at most 8 s and the full replay in
at most 60 s, all on 2 cores, timed against a machine yardstick in the same run. Hosts differ, and not uniformly:
the 50,000-job round reads every job object several times (memory bound), the simulator's rounds are short
Python loops, the exact MCKP is compiled arithmetic. So this command prints four yardsticks first (CPU ms, the
median of 5): a pure-Python loop, an attribute pass over 200,000 small structs (the round's access pattern),
decoding as many structs from JSON (the parse's allocations) and numpy arithmetic; a figure from another host
compares through the yardstick of its own kind.

Then, each in this process unless said:

* **parse**: :func:`lyra_solver.io.parse_snapshot` of the JSON of ``lyra-solver bench decide --servers 12500 --jobs
  50000`` (seed 1), CPU median of 5 after 2;
* **decide**: ``decide(snapshot, allocation="exact")`` on it, CPU median of 5 after 3, the numba kernels loaded
  first (:func:`lyra_solver.formulations.mckp._numba.load`: compiled here if numba's cache is cold);
* **the 10,000-job run** (``--sim``, needs the shared data): the README's simulator command with ``--limit 10000``
  (64 + 32 servers, ``--interval 300``, ``lyra``) in a new process, ``--runs`` times (default 3): wall and CPU time
  of the replay, ``decide``'s total and p50 (its ``timings.json``) of the run of median replay wall, and every
  run's replay wall (the verdict is the median's; the slowest run is named beside it). One run of a shared 2-core
  host differs from the next by up to a tenth;
* **the full replay** (``--full``): the same for all 82,247 jobs on 256 + 64 servers, once (a minute a run).

``--quick``: a 2,500 x 10,000 round and no simulation (a smoke run; no verdicts).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main", "round_times", "sim_times", "yardstick"]

#: (target, seconds) of issue 24
TARGETS = {"parse": 0.15, "decide": 0.10, "sim10k": 8.0, "full": 60.0}


def _median_cpu(fn, reps: int = 5, warm: int = 2) -> float:
    """CPU seconds of ``fn()``: the median of ``reps`` calls after ``warm`` untimed ones."""
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


def yardstick() -> dict[str, float]:
    """Host speed, CPU seconds (median of 5): ``python`` (a 2,000,000-step loop of integer arithmetic),
    ``objects`` (a float and an int read from each of 200,000 msgspec structs by ``np.fromiter``, the round's
    access pattern), ``decode`` (msgspec decoding 200,000 such structs from JSON: the allocation pattern of
    parsing a snapshot), ``numpy`` (``a * b + c`` and a sort on 2,000,000 float64)."""
    from operator import attrgetter

    import msgspec
    import numpy as np

    class Item(msgspec.Struct):
        work: float
        workers: int
        name: str

    def loop():
        s = 0
        for i in range(2_000_000):
            s += i * i & 7
        return s

    items = [Item(float(i) * 1.5, i % 17, f"j{i}") for i in range(200_000)]
    work, workers = attrgetter("work"), attrgetter("workers")

    def objects():
        np.fromiter(map(work, items), np.float64, len(items))
        np.fromiter(map(workers, items), np.int64, len(items))

    encoded = msgspec.json.encode(items)
    decoder = msgspec.json.Decoder(list[Item])

    rng = np.random.default_rng(0)
    a, b, c = (rng.random(2_000_000) for _ in range(3))

    def arrays():
        np.sort(a * b + c)

    return {"python": _median_cpu(loop, warm=1), "objects": _median_cpu(objects, warm=1),
            "decode": _median_cpu(lambda: decoder.decode(encoded), warm=1), "numpy": _median_cpu(arrays, warm=1)}


def round_times(servers: int = 12_500, jobs: int = 50_000, seed: int = 1) -> dict[str, float | bool]:
    """CPU seconds of parse and of ``decide`` (exact allocation) on the generated snapshot (see the module
    docstring), and whether the numba kernels ran."""
    from lyra_solver import io
    from lyra_solver.bench.suites.decide import build
    from lyra_solver.formulations.mckp import _numba
    from lyra_solver.pipeline import decide

    data = build({"kind": "generated", "servers": servers, "jobs": jobs, "seed": seed, "gpus": 8,
                  "running_share": 0.5})
    parse = _median_cpu(lambda: io.parse_snapshot(data))
    compiled = _numba.load()
    snap = io.parse_snapshot(data)
    return {"parse": parse, "decide": _median_cpu(lambda: decide(snap, allocation="exact"), warm=3),
            "compiled": compiled}


def sim_times(data_dir: Path, *, full: bool = False, runs: int = 1) -> dict:
    """The README's simulator command under ``lyra``, ``runs`` times, each in a new process (``--limit 10000`` on
    64 + 32 servers, or ``full``: every job on 256 + 64): of the run of median replay wall (the lower middle one
    for an even count), the replay's wall and CPU seconds, ``decide``'s total seconds and p50 ms and the command's
    wall seconds; ``walls``: every run's replay wall, in the order run."""
    if runs < 1:
        raise ValueError(f"runs: expected at least 1, got {runs}")
    rows = [_sim_once(data_dir, full=full) for _ in range(runs)]
    median = sorted(rows, key=lambda r: r["replay_wall"])[(runs - 1) // 2]
    return {**median, "walls": [r["replay_wall"] for r in rows]}


def _sim_once(data_dir: Path, *, full: bool) -> dict[str, float]:
    """One run of :func:`sim_times`, in a new process."""
    servers = ["256", "64"] if full else ["64", "32"]
    with tempfile.TemporaryDirectory(prefix="lyra-round-speed-") as tmp:
        argv = [sys.executable, "-m", "lyra_solver", "simulate", "--max-work", "0",
                "--trace", str(data_dir / "philly" / "philly.csv"),
                "--load", str(data_dir / "alibaba" / "genai_qps.csv"), "--training-servers", servers[0],
                "--inference-servers", servers[1], "--interval", "300", "--policy", "lyra", "--no-progress",
                "--force", "--out", tmp]
        if not full:
            argv[argv.index("--trace"):argv.index("--trace")] = ["--limit", "10000"]
        start = time.perf_counter()
        proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
        if proc.returncode:
            raise RuntimeError(f"simulate exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
        row = json.loads((Path(tmp) / "timings.json").read_text())["decide_ms"]["lyra"][0]
    return {"command_wall": wall, "replay_wall": row["run_wall_s"], "replay_cpu": row["run_cpu_s"],
            "decide": row["total_s"], "decide_p50_ms": row["p50"]}


def format_report(yard: dict, rounds: dict, sims: dict[str, dict], *, quick: bool) -> str:
    """Markdown: the yardstick, the measured times and (not ``quick``) one verdict line per target."""
    out = ["Host yardstick (CPU ms, median of 5): "
           f"Python loop {yard['python'] * 1e3:.1f}, struct attributes {yard['objects'] * 1e3:.1f}, "
           f"struct decoding {yard['decode'] * 1e3:.1f}, numpy {yard['numpy'] * 1e3:.1f}.\n",
           "| measure | seconds | target (issue 24) |", "|---|---|---|"]
    size = "2,500 x 10,000" if quick else "12,500 x 50,000"
    out.append(f"| parse and validation, {size} (CPU median of 5) | {rounds['parse']:.4f} | "
               f"{'-' if quick else '<= 0.15'} |")
    out.append(f"| `decide`, exact, {size} (CPU median of 5, warm{'' if rounds['compiled'] else ', numpy'}) | "
               f"{rounds['decide']:.4f} | {'-' if quick else '<= 0.10'} |")
    for key, label, target in (("sim10k", "the 10,000-job run", "<= 8"), ("full", "the full replay", "<= 60")):
        if key in sims:
            s = sims[key]
            walls = s.get("walls", [s["replay_wall"]])
            detail = (f"CPU {s['replay_cpu']:.1f} s, `decide` {s['decide']:.1f} s, p50 {s['decide_p50_ms']:.2f} ms; "
                      f"command {s['command_wall']:.1f} s")
            if len(walls) > 1:
                runs = ", ".join(f"{w:.1f}" for w in walls)
                measure = f"replay wall, median of {len(walls)} runs ({runs} s); that run's {detail}"
            else:
                measure = f"replay wall ({detail})"
            out.append(f"| {label}: {measure} | {s['replay_wall']:.1f} | {target} |")
    if not quick:
        out.append("")
        measured = {"parse": rounds["parse"], "decide": rounds["decide"]}
        measured.update({k: v["replay_wall"] for k, v in sims.items()})
        for key, value in measured.items():
            limit = TARGETS[key]
            walls = sims[key].get("walls", []) if key in sims else []
            worst = (f"; the slowest of {len(walls)} runs {max(walls):.4g} s, {max(walls) / limit:.2f}x"
                     if len(walls) > 1 else "")
            out.append(f"- {key}: {'met' if value <= limit else 'not met'} ({value:.4g} s against {limit:g} s, "
                       f"{value / limit:.2f}x the target{worst})")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None, prog: str = "python -m lyra_solver.bench.round_speed") -> int:
    """Entry point; exit 0 done, 2 bad usage."""
    from lyra_solver.bench.sim import data_dir

    p = argparse.ArgumentParser(prog=prog, allow_abbrev=False,
                                description="Issue 24's round targets in one run, beside a host yardstick.")
    p.add_argument("--sim", action="store_true", help="also the 10,000-job simulator run (a new process)")
    p.add_argument("--full", action="store_true", help="also the full 82,247-job replay (a new process)")
    p.add_argument("--runs", type=int, default=3, metavar="N",
                   help="runs of the 10,000-job run, each in a new process; the median is judged (default 3)")
    p.add_argument("--quick", action="store_true", help="a 2,500 x 10,000 round, no simulation, no verdicts")
    p.add_argument("--data-dir", type=Path, default=None, help="the shared data folder (default: ../shared/data)")
    p.add_argument("--no-header", action="store_true", help="no `Command:` line (BENCHMARKS.md's report adds one)")
    args = p.parse_args(argv)
    if args.runs < 1:
        print(f"{prog}: error: --runs: expected at least 1, got {args.runs}", file=sys.stderr)
        return 2
    data = args.data_dir or data_dir()
    if (args.sim or args.full) and not args.quick and not (data / "philly" / "philly.csv").is_file():
        print(f"{prog}: error: --data-dir: {data}: no philly/philly.csv", file=sys.stderr)
        return 2
    yard = yardstick()
    rounds = round_times(2_500, 10_000) if args.quick else round_times()
    sims = {}
    if not args.quick:
        if args.sim:
            sims["sim10k"] = sim_times(data, runs=args.runs)
        if args.full:
            sims["full"] = sim_times(data, full=True)
    shown = sys.argv[1:] if argv is None else argv
    head = "" if args.no_header else f"Command: `{' '.join([prog, *shown])}`\n\n"
    sys.stdout.write(head + format_report(yard, rounds, sims, quick=args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
