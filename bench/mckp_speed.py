"""``lyra-solver bench mckp --speed``: the exact MCKP core's speed in one run (issues 22 and 24).

Two parts, printed as Markdown tables:

* **Cold start**: new processes of ``lyra-solver --version``, ``lyra-solver mckp`` on a cluster 1,000 x 32 instance
  (written to a temporary file; a seed that BENCHMARKS.md does not use) and ``lyra-solver decide`` on the bundled
  example, run in interleaved rounds. For each command: the median and the worst wall time and CPU time (user +
  system of the child), and the median and worst of its excess over ``--version`` *in the same round* (the
  pairing cancels most of the load that other processes put on a shared machine). Target (issue 22): at most
  0.15 s over ``--version``.
* **Warm solves**: per class, 10 seeds that BENCHMARKS.md does not use (100-109 unless ``--seed`` moves them);
  for each seed the median of many timed solves in this process after the kernels are loaded
  (:func:`lyra_solver.formulations.mckp._numba.load`) and one warm-up solve; per class the median, the best and the
  worst of the seeds' medians (CPU time of the process: on a shared machine wall time stretches with other
  processes' load, CPU time much less). Every solve must be proven optimal, and the numpy path must give the same
  objective and choice (checked once per seed). The reference column holds the times of Pisinger's ``mcknap.c``
  (``gcc -O3``) on the same classes as issue 24 reports them (measured there, not here: that code is not run or
  shipped by this package); the target column holds issue 24's targets.
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["CLASSES", "cold_start", "main", "warm_solves"]

#: (name, generator, repetitions per seed, C time as issue 24 reports it, target of issue 24).
CLASSES: tuple[tuple[str, Callable, int, str, str], ...] = (
    ("uncorrelated 100 x 10 (R = 1,000)", lambda s: _gen().pisinger("uncorrelated", 100, 10, R=1000, seed=s), 400,
     "microseconds", "<= 0.1 ms"),
    ("weakly 100 x 10 (R = 1,000)", lambda s: _gen().pisinger("weakly", 100, 10, R=1000, seed=s), 400,
     "microseconds", "<= 0.1 ms"),
    ("cluster 1,000 x 32", lambda s: _gen().cluster(1000, 32, seed=s), 100, "0.2-0.3 ms", "<= 0.4 ms"),
    ("uncorrelated 10,000 x 10 (R = 10,000)",
     lambda s: _gen().pisinger("uncorrelated", 10000, 10, R=10000, seed=s), 10, "0.2-1.7 ms", ""),
    ("weakly 10,000 x 10 (R = 10,000)", lambda s: _gen().pisinger("weakly", 10000, 10, R=10000, seed=s), 10,
     "1.8-3.0 ms", "<= 10 ms"),
    ("subset-sum 10,000 x 10 (R = 10,000)", lambda s: _gen().pisinger("subset_sum", 10000, 10, R=10000, seed=s),
     10, "1.0 ms", ""),
    ("cluster 10,000 x 64", lambda s: _gen().cluster(10000, 64, seed=s), 10, "3.6 ms", ""),
)

#: Seeds of the warm solves (plus ``--seed``): none of them is an instance of BENCHMARKS.md.
FIRST_SEED = 100


def _gen():
    from lyra_solver.bench import mckp_instances

    return mckp_instances


def _cli() -> list[str]:
    """The ``lyra-solver`` script beside this interpreter (as a user runs it), else the module through Python."""
    script = Path(sys.executable).with_name("lyra-solver")
    if script.exists():
        return [str(script)]
    found = shutil.which("lyra-solver")
    return [found] if found else [sys.executable, "-c", "import sys; from lyra_solver.cli import main; "
                                                        "sys.exit(main())"]


def _instance_json(problem) -> bytes:
    classes = [{"weights": [int(x) for x in problem.weights[i, : problem.sizes[i]]],
                "values": [float(x) for x in problem.values[i, : problem.sizes[i]]]}
               for i in range(problem.n_classes)]
    return json.dumps({"capacity": int(problem.capacity), "classes": classes}).encode()


def _run_child(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one child process; fails on a non-zero exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.decode(errors='replace')[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def cold_start(rounds: int = 7, seed: int = 0) -> list[dict]:
    """Interleaved rounds of ``--version``, ``mckp`` (cluster 1,000 x 32) and ``decide`` (the example); one row
    per command with wall and CPU medians and worst cases, and the excess over ``--version`` of the same round."""
    example = Path(__file__).resolve().parents[1] / "examples" / "cluster.json"
    with tempfile.TemporaryDirectory(prefix="lyra-speed-") as tmp:
        inst = Path(tmp) / "cluster-1000x32.json"
        inst.write_bytes(_instance_json(_gen().cluster(1000, 32, seed=FIRST_SEED + 77 + seed)))
        env_cli = _cli()
        commands = {"--version": [*env_cli, "--version"], "mckp (cluster 1,000 x 32)": [*env_cli, "mckp", str(inst)]}
        if example.exists():
            commands["decide (examples/cluster.json)"] = [*env_cli, "decide", str(example)]
        for argv in commands.values():  # one untimed round: file caches and numba's cache warm, as for a user
            _run_child(argv)
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
        for _ in range(rounds):
            for name, argv in commands.items():
                times[name].append(_run_child(argv))
    base = times["--version"]
    rows = []
    for name, ts in times.items():
        wall = [t[0] for t in ts]
        cpu = [t[1] for t in ts]
        extra_w = [t[0] - b[0] for t, b in zip(ts, base, strict=True)]
        extra_c = [t[1] - b[1] for t, b in zip(ts, base, strict=True)]
        rows.append({"command": name, "wall_median": statistics.median(wall), "wall_max": max(wall),
                     "cpu_median": statistics.median(cpu), "cpu_max": max(cpu),
                     "extra_wall_median": statistics.median(extra_w), "extra_wall_max": max(extra_w),
                     "extra_cpu_median": statistics.median(extra_c), "extra_cpu_max": max(extra_c)})
    return rows


def _median_solve(problem, reps: int, use_numba: bool | None) -> tuple[float, float, object]:
    from lyra_solver.formulations.mckp import solve_mckp

    res = solve_mckp(problem, use_numba=use_numba)
    cpu, wall = [], []
    for _ in range(reps):
        c0, w0 = time.process_time(), time.perf_counter()
        res = solve_mckp(problem, use_numba=use_numba)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall), res


def warm_solves(seeds: int = 10, seed: int = 0, scale: float = 1.0, classes: tuple = CLASSES) -> list[dict]:
    """Per class, each seed's median CPU and wall time of warm solves (kernels loaded), checked proven optimal and
    equal (objective, choice) to the numpy path."""
    from lyra_solver.formulations._result import Status
    from lyra_solver.formulations.mckp import _numba

    compiled = _numba.load()
    rows = []
    for name, make, reps, c_time, target in classes:
        cpu, wall, notes = [], [], []
        for s in range(FIRST_SEED + seed, FIRST_SEED + seed + seeds):
            p = make(s)
            c, w, res = _median_solve(p, max(3, int(reps * scale)), None)
            ref = _median_solve(p, 1, False)[2]
            if res.status is not Status.OPTIMAL:
                raise RuntimeError(f"{name} seed {s}: status {res.status}, not proven optimal")
            if ref.objective != res.objective or ref.choice != res.choice:
                raise RuntimeError(f"{name} seed {s}: the numpy path answers {ref.objective}, the default path "
                                   f"{res.objective}")
            cpu.append(c)
            wall.append(w)
            notes.append(res.backend_status)
        rows.append({"class": name, "seeds": seeds, "cpu_median": statistics.median(cpu), "cpu_min": min(cpu),
                     "cpu_max": max(cpu), "wall_median": statistics.median(wall), "wall_max": max(wall),
                     "c_time": c_time, "target": target, "compiled": compiled,
                     "ends": ", ".join(sorted(set(notes)))})
    return rows


def _ms(x: float) -> str:
    return f"{x * 1e3:.3f}" if x < 0.01 else f"{x * 1e3:.1f}"


def format_report(cold: list[dict], warm: list[dict]) -> str:
    """The two Markdown tables."""
    out = []
    if cold:
        out.append("Cold start: new processes, interleaved rounds; excess = the command's time minus `--version`'s "
                   "in the same round (target <= 0.15 s).\n")
        out.append("| command | wall median s | wall worst s | CPU median s | excess wall median s | "
                   "excess wall worst s | excess CPU median s | excess CPU worst s |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in cold:
            out.append(f"| {r['command']} | {r['wall_median']:.3f} | {r['wall_max']:.3f} | {r['cpu_median']:.3f} | "
                       f"{r['extra_wall_median']:+.3f} | {r['extra_wall_max']:+.3f} | {r['extra_cpu_median']:+.3f} | "
                       f"{r['extra_cpu_max']:+.3f} |")
        out.append("")
    if warm:
        out.append("Warm solves (`solve_mckp`, default path, kernels loaded): per seed the median of repeated solves; "
                   "per class the median, best and worst seed (CPU ms of this process; wall in the last columns). "
                   "C: Pisinger's `mcknap.c` as issue 24 measured it (not run here).\n")
        out.append("| class | seeds | CPU median ms | best ms | worst ms | wall median ms | wall worst ms | C ms "
                   "(issue 24) | target | search ended by |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for r in warm:
            out.append(f"| {r['class']} | {r['seeds']} | {_ms(r['cpu_median'])} | {_ms(r['cpu_min'])} | "
                       f"{_ms(r['cpu_max'])} | {_ms(r['wall_median'])} | {_ms(r['wall_max'])} | {r['c_time']} | "
                       f"{r['target'] or '-'} | {r['ends']} |")
        if warm and not warm[0]["compiled"]:
            out.append("\n(numba is not installed or disabled: the numpy twins ran.)")
    verdicts = _verdicts(cold, warm)
    if verdicts:
        out.append("\nTargets, judged by the worst seed's CPU time (warm) and the excess CPU time (cold start; wall "
                   "time on a loaded machine stretches with other processes' load):\n")
        out.extend(f"- {v}" for v in verdicts)
    return "\n".join(out) + "\n"


def _verdicts(cold: list[dict], warm: list[dict]) -> list[str]:
    """One line per target of issues 22 and 24 that this run measured."""
    lines = []
    for r in cold[1:]:
        ok = r["extra_cpu_max"] <= 0.15
        lines.append(f"issue 22, `{r['command']}` at most 0.15 s beyond `--version`: {'met' if ok else 'not met'} "
                     f"(excess CPU median {r['extra_cpu_median']:.3f} s, worst {r['extra_cpu_max']:.3f} s; wall "
                     f"median {r['extra_wall_median']:.3f} s)")
    for r in warm:
        if not r["target"]:
            continue
        limit = float(r["target"].split()[1]) * 1e-3
        ok = r["cpu_max"] <= limit
        lines.append(f"issue 24, {r['class']} {r['target']}: {'met' if ok else 'not met'} (median "
                     f"{_ms(r['cpu_median'])} ms, worst {_ms(r['cpu_max'])} ms over {r['seeds']} seeds)")
    return lines


def main(argv: list[str] | None = None, prog: str = "lyra-solver bench mckp --speed") -> int:
    """Entry point; exit 0 done, 2 bad usage."""
    p = argparse.ArgumentParser(prog=prog, allow_abbrev=False,
                                description="The exact MCKP core's speed in one run: the cold start of `mckp` and "
                                            "`decide` beside `--version`, and warm solves over 10 seeds per class.")
    p.add_argument("--seeds", type=int, default=10, help="seeds per class (default: 10)")
    p.add_argument("--seed", type=int, default=0, help="added to the first seed 100 (default: 0)")
    p.add_argument("--rounds", type=int, default=7, help="cold-start rounds (default: 7)")
    p.add_argument("--quick", action="store_true", help="3 seeds, 3 rounds, a tenth of the repetitions")
    p.add_argument("--no-cold", action="store_true", help="warm solves only")
    p.add_argument("--no-warm", action="store_true", help="cold start only")
    p.add_argument("--out", type=Path, default=None, help="also write the rows as JSON to this file")
    p.add_argument("--no-header", action="store_true", help="no `Command:` line (BENCHMARKS.md's report adds one)")
    args = p.parse_args(argv)
    if args.seeds < 1 or args.rounds < 1 or args.seed < 0:
        print(f"{prog}: error: --seeds and --rounds must be >= 1, --seed >= 0", file=sys.stderr)
        return 2
    if args.out is not None and (args.out.is_dir() or not args.out.parent.is_dir()):
        print(f"{prog}: error: --out: {args.out}: not a writable file path", file=sys.stderr)
        return 2
    seeds, rounds, scale = (3, 3, 0.1) if args.quick else (args.seeds, args.rounds, 1.0)
    cold = [] if args.no_cold else cold_start(rounds, args.seed)
    warm = [] if args.no_warm else warm_solves(seeds, args.seed, scale)
    head = "" if args.no_header else f"Command: `{prog}{' ' if argv else ''}{' '.join(argv or [])}`\n\n"
    sys.stdout.write(head + format_report(cold, warm))
    if args.out is not None:
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(json.dumps({"cold": cold, "warm": warm}, indent=1) + "\n")
        tmp.replace(args.out)
    return 0
