"""The benchmark harness: optimality gaps and speed of every method of every family, in one run.

``lyra-solver bench SUITE... [--quick] [--out DIR] [--jobs N] [--backend local|ray] [--seed S]`` runs the named
suites (``mckp``, ``reclaim``, ``placement``, ``decide``, ``all``, and whatever :data:`SUITES` registers) and
prints markdown tables; ``--out DIR`` also writes ``DIR/results.json`` (every row and the machine's metadata) and
PNG plots (solve time against size on log-log axes per method; the CDF of the gap of each heuristic).

A *suite* (:class:`Suite`) is declared once, in its own module under ``lyra_solver.bench.suites``: its methods
(taken from the family's registry, so that a new method joins every table of its family without touching the
harness), its instances (plain, JSON-able specifications: a worker process or a Ray task rebuilds the instance
from the specification), one function that solves a built instance with a method and returns an
:class:`Outcome`, and its speed targets. The harness does the rest, the same way for every family:

* one *task* per (instance, method); tasks run in order, in this process (``--jobs 1``), in ``N`` local
  processes (``--jobs N``) or on Ray (``--backend ray``), and come back as the same rows whichever ran them
  (timings aside): see :func:`map_tasks`, which the simulator reuses;
* time: one untimed warm-up call, then the median of ``--repeat`` timed calls; a call slower than
  :data:`MEDIUM_S` is timed once after its warm-up, one slower than :data:`SLOW_S` not again (its warm-up is
  the measurement: first-call costs, imports included, are paid beforehand on a tiny instance);
* per instance: the best proven bound across methods (the tightest bound in the objective's direction, an
  optimal objective being its own bound), every method's gap to it, and its speed-up against each reference
  solver measured in the same run (``reference time / method time``; ``>=`` where the reference stopped at a
  limit);
* a result's ``stats`` mapping (e.g. state counts of the MCKP core) and the suite's extra figures become columns.

Gaps are ``(best bound - objective) / max(1, |best bound|)`` for a maximisation and
``(objective - best bound) / max(1, |best bound|)`` for a minimisation: the relative distance to the best
proven bound, 0 when the method matched a proven optimum.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from lyra_solver.argparsing import int_at_least, nonneg_float
from lyra_solver.bench.suites import (
    SUITES,
    Config,
    Instance,
    Method,
    Outcome,
    Suite,
    Target,
    _plain,
    load_suite,
    outcome_of,
    register_suite,
)
from lyra_solver.bench.tables import detail_table, suite_tables, summary_table, targets_table

_nonneg_float, _pos_int, _nonneg_int = nonneg_float, int_at_least(1), int_at_least(0)

__all__ = ["SUITES", "Config", "Instance", "Method", "Outcome", "Suite", "Target", "detail_table", "main",
           "map_tasks", "outcome_of", "register_suite", "run_suites", "suite_tables", "summary_table", "targets_table"]

log = logging.getLogger(__name__)

#: Calls slower than this many seconds are not repeated: the warm-up is the measurement.
SLOW_S = 4.0
#: Calls slower than this many seconds are timed once after the warm-up (``--repeat`` applies below it).
MEDIUM_S = 0.1
#: Format tag of ``results.json``.
RESULTS_FORMAT = "lyra-solver-bench/1"
SCALES = ("tiny", "quick", "full")


# ---------------------------------------------------------------------------------------------------------
# Parallel map: local processes or Ray


def map_tasks(fn: Callable[[Any], Any], args_list: Sequence[Any], *, jobs: int = 1, backend: str = "local",
              address: str | None = None, progress: Callable[[int], None] | None = None) -> list[Any]:
    """``[fn(a) for a in args_list]``, in parallel, results in the order of ``args_list``.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled by reference: local processes and Ray workers import it).
    args_list : sequence
        One argument per call (picklable).
    jobs : int
        ``backend="local"``: processes (1 runs every call in this process, in order). ``backend="ray"``:
        CPUs of the local Ray started when none is running and no ``address`` is given.
    backend : {"local", "ray"}
    address : str, optional
        Ray cluster address (``ray.init(address=...)``); default: a running Ray, else a local one.
    progress : callable (int) -> None, optional
        Called with the number of calls finished since the last call (a progress bar's ``update``).

    Returns
    -------
    list
        The results, in input order; an exception of any call is raised here.

    Notes
    -----
    Local processes start with ``spawn`` (no state inherited from this process: the same rows as a
    sequential run). Ray is imported only here (optional extra ``ray``).
    """
    if jobs < 1:
        raise ValueError(f"jobs: must be >= 1, got {jobs}")
    if backend not in ("local", "ray"):
        raise ValueError(f"backend: expected 'local' or 'ray', got {backend!r}")
    tick = progress or (lambda n: None)
    items = list(args_list)
    if backend == "ray":
        return _map_ray(fn, items, jobs=jobs, address=address, tick=tick)
    if jobs == 1 or len(items) <= 1:
        out = []
        for a in items:
            out.append(fn(a))
            tick(1)
        return out
    import concurrent.futures as cf
    import multiprocessing as mp

    results: list[Any] = [None] * len(items)
    with cf.ProcessPoolExecutor(max_workers=min(jobs, len(items)), mp_context=mp.get_context("spawn")) as pool:
        futures = {pool.submit(fn, a): i for i, a in enumerate(items)}
        for fut in cf.as_completed(futures):
            results[futures[fut]] = fut.result()
            tick(1)
    return results


def _map_ray(fn, items: list, *, jobs: int, address: str | None, tick) -> list:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError("--backend ray needs the optional extra 'ray' (pip install 'lyra-solver[ray]')") from exc
    started = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
        started = True
    try:
        remote = ray.remote(num_cpus=1)(fn)
        refs = [remote.remote(a) for a in items]
        index = {r: i for i, r in enumerate(refs)}
        results: list[Any] = [None] * len(items)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for r in done:
                results[index[r]] = ray.get(r)
                tick(1)
        return results
    finally:
        if started:
            ray.shutdown()


# ---------------------------------------------------------------------------------------------------------
# One task: warm-up, repeats, median


@lru_cache(maxsize=4)
def _built(suite_name: str, spec_json: str) -> Any:
    return load_suite(suite_name).build(json.loads(spec_json))


_PRIMED: set[tuple[str, str]] = set()


def _prime(suite: Suite, method: str, cfg: Config) -> None:
    """Once per process and method: solve every tiny instance of the suite, untimed, so that lazy imports and
    compilations (OR-Tools, PuLP, numba: a kernel compiles on its first call, and one tiny instance does not
    reach every kernel) are not charged to the first instance measured."""
    if (suite.name, method) in _PRIMED:
        return
    _PRIMED.add((suite.name, method))
    try:
        tiny = suite.instances(Config(scale="tiny", time_limit=min(cfg.time_limit, 5.0)))
    except Exception as exc:  # noqa: BLE001 - priming is best effort; the measured call reports errors
        log.debug("priming %s/%s failed: %s", suite.name, method, exc)
        return
    for inst in tiny:
        if inst.methods is None or method in inst.methods:
            try:
                suite.solve(suite.build(inst.spec), method, dataclasses.replace(cfg, time_limit=5.0))
            except Exception as exc:  # noqa: BLE001 - priming is best effort; the measured call reports errors
                log.debug("priming %s/%s on %s failed: %s", suite.name, method, inst.name, exc)


def run_task(task: tuple[str, dict, str, dict]) -> dict:
    """Solve one instance with one method (warm-up, then the median of the repeats); a row without gaps.

    ``task`` is ``(suite name, instance as a dict, method, config as a dict)``; module-level so that any
    backend can run it.
    """
    suite_name, inst, method, cfg_dict = task
    cfg = Config(**cfg_dict)
    suite = load_suite(suite_name)
    spec_json = json.dumps(inst["spec"], sort_keys=True)
    row: dict[str, Any] = {"suite": suite_name, "group": inst["group"], "instance": inst["name"],
                           "size": inst["size"], "method": method}
    try:
        problem = _built(suite_name, spec_json)
    except Exception as exc:  # noqa: BLE001 - a generator failing is a row, not a crash of the sweep
        return {**row, "status": "error", "note": f"build: {type(exc).__name__}: {exc}", "times_s": [],
                "time_s": None, "objective": None, "bound": None, "backend_status": "", "stats": {}, "extra": {}}

    _prime(suite, method, cfg)

    def once() -> tuple[Outcome, float]:
        t0 = time.perf_counter()
        try:
            out = suite.solve(problem, method, cfg)
        except ImportError as exc:
            out = Outcome(status="unavailable", note=f"{type(exc).__name__}: {exc}")
        except (ValueError, MemoryError, RuntimeError) as exc:
            out = Outcome(status="refused", note=f"{type(exc).__name__}: {exc}")
        return out, time.perf_counter() - t0

    first, t_first = once()
    failed = first.status in ("unavailable", "refused", "error")
    if failed or t_first >= SLOW_S or cfg.repeat <= 0:
        runs, repeats = [(first, t_first)], 0  # the warm-up is the measurement
    else:
        runs = [once() for _ in range(1 if t_first >= MEDIUM_S else cfg.repeat)]
        repeats = len(runs)
    times = [t for _, t in runs]
    med = statistics.median(times)
    # the outcome of the run whose time is the median (the lower middle for an even count)
    chosen = sorted(runs, key=lambda r: r[1])[(len(runs) - 1) // 2][0]
    log.info("%s | %s | %s: %s in %.4f s %s", suite_name, inst["name"], method, chosen.status, med, chosen.note)
    return {**row, "status": chosen.status, "objective": chosen.objective, "bound": chosen.bound,
            "backend_status": chosen.backend_status, "time_s": med, "times_s": times,
            "repeats": repeats,
            "stats": chosen.stats, "extra": chosen.extra, "note": chosen.note}


# ---------------------------------------------------------------------------------------------------------
# Best bound, gaps, ratios


def _tol(x: float) -> float:
    return 1e-6 * max(1.0, abs(x))


def best_bound(rows: list[dict], sense: str) -> float | None:
    """The tightest proven bound of one instance's rows (an optimal objective is its own bound)."""
    cands = []
    for r in rows:
        if r.get("bound") is not None and math.isfinite(r["bound"]):
            cands.append(r["bound"])
        if r.get("status") == "optimal" and r.get("objective") is not None:
            cands.append(r["objective"])
    if not cands:
        return None
    return min(cands) if sense == "max" else max(cands)


def gap_to(objective: float | None, bound: float | None, sense: str) -> float | None:
    """Relative distance of ``objective`` to ``bound`` in the objective's direction (0 at the bound)."""
    if objective is None or bound is None:
        return None
    diff = (bound - objective) if sense == "max" else (objective - bound)
    g = diff / max(1.0, abs(bound))
    return 0.0 if abs(diff) <= _tol(bound) else g


def annotate(rows: list[dict], suite: Suite) -> list[dict]:
    """Add ``best_bound``, ``gap`` and the speed-ups against the references to every row (new dicts).

    A row whose objective passes the best bound by more than the tolerance is flagged in ``note`` (an
    exact method or a bound is wrong).
    """
    refs = [m.name for m in suite.methods() if m.reference]
    kinds = {m.name: m.kind for m in suite.methods()}
    by_inst: dict[str, list[dict]] = {}
    for r in rows:
        by_inst.setdefault(r["instance"], []).append(r)
    out = []
    for r in rows:
        peers = by_inst[r["instance"]]
        bb = best_bound(peers, suite.sense)
        gap = gap_to(r.get("objective"), bb, suite.sense) if r.get("status") in ("optimal", "feasible") else None
        note = r.get("note", "")
        if gap is not None and gap < 0:
            note = (note + "; " if note else "") + "objective passes the best bound"
        speedups = {}
        for ref in refs if r.get("status") in ("optimal", "feasible") else ():
            rr = next((p for p in peers if p["method"] == ref), None)
            if rr is None or rr is r or rr.get("time_s") is None or not r.get("time_s"):
                continue
            if rr["status"] in ("unavailable", "refused", "error"):
                continue
            speedups[ref] = {"ratio": rr["time_s"] / max(r["time_s"], 1e-9),
                             "at_least": rr["status"] != "optimal"}
        out.append({**r, "kind": kinds.get(r["method"], "exact"), "best_bound": bb, "gap": gap,
                    "speedup": speedups, "note": note})
    return out


# ---------------------------------------------------------------------------------------------------------
# Running suites


def plan(suite: Suite, cfg: Config) -> list[tuple[str, dict, str, dict]]:
    """The tasks of a suite in their fixed order: instances in order, methods in registry order."""
    names = [m.name for m in suite.methods()]
    tasks = []
    for inst in suite.instances(cfg):
        meths = names if inst.methods is None else [m for m in names if m in inst.methods]
        d = dataclasses.asdict(inst)
        for m in meths:
            tasks.append((suite.name, d, m, cfg.as_dict()))
    return tasks


def run_suites(names: Iterable[str], cfg: Config, *, jobs: int = 1, backend: str = "local",
               address: str | None = None, progress: bool = True) -> dict[str, list[dict]]:
    """Run the suites and return their annotated rows, by suite name (same rows on every backend)."""
    suites = [load_suite(n) for n in names]
    tasks: list[tuple] = []
    for s in suites:
        tasks.extend(plan(s, cfg))
    from lyra_solver.bench.progress import bar

    with bar(len(tasks), "bench", "task", enabled=progress) as b:  # the command line's one progress rule
        raw = map_tasks(run_task, tasks, jobs=jobs, backend=backend, address=address,
                        progress=None if b is None else b.update)
    out: dict[str, list[dict]] = {}
    for s in suites:
        out[s.name] = annotate([r for r in raw if r["suite"] == s.name], s)
    return out


# ---------------------------------------------------------------------------------------------------------
# Machine metadata


def machine() -> dict:
    """CPU, Python, OS and the versions of the libraries that the methods use."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    libs = {}
    for dist in ("lyra-solver", "numpy", "scipy", "ortools", "pulp", "msgspec", "numba", "highspy", "matplotlib",
                 "ray", "torch"):
        try:
            from importlib.metadata import version

            libs[dist] = version(dist)
        except Exception:  # noqa: BLE001 - not installed
            continue
    return {"cpu": cpu, "cores": os.cpu_count(), "machine": platform.machine(),
            "python": platform.python_version(), "implementation": platform.python_implementation(),
            "os": f"{platform.system()} {platform.release()}", "libraries": libs}


def judge_targets(suites: list[Suite], rows: dict[str, list[dict]], config: dict) -> list[dict]:
    """Every target of the suites that ran, judged on this run's rows."""
    out = []
    for s in suites:
        for t in s.targets:
            try:
                verdict, detail = t.judge(rows.get(s.name, []), config)
            except Exception as exc:  # noqa: BLE001 - a judge failing must not lose the run
                verdict, detail = "not measured here", f"judge failed: {type(exc).__name__}: {exc}"
            out.append({"issue": t.issue, "target": t.text, "verdict": verdict, "detail": detail, "suite": s.name})
    return out


# ---------------------------------------------------------------------------------------------------------
# Command line


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (no usage dump)
        raise _UsageError(message)


#: Files ``bench --out`` writes (under ``--force``, removed from the folder before the run).
OUTPUTS = ("results.json", "*_time.png", "*_gap_cdf.png")


def build_parser() -> argparse.ArgumentParser:
    from lyra_solver.argparsing import _Help

    p = _Parser(prog="lyra-solver bench",
                description="Optimality gaps and speed of every method: markdown tables, results.json, plots.",
                formatter_class=_Help, allow_abbrev=False)
    p.add_argument("suites", nargs="+", metavar="SUITE", help=f"suites: {', '.join(SUITES)} or all")
    p.add_argument("--quick", action="store_true", help="small sizes and short limits (BENCHMARKS.md --quick)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="write results.json and PNG plots into this folder (new or empty, or --force)")
    p.add_argument("--force", action="store_true",
                   help="write into an --out folder that is not empty (the files of an earlier run there are "
                        "removed first)")
    p.add_argument("--report", metavar="FILE", default=None,
                   help="also write a BENCHMARKS.md-style report (plots copied beside it under docs/bench/)")
    p.add_argument("--plots", metavar="DIR", default=None,
                   help="with --report: where its plots go (default: docs/bench beside the report)")
    p.add_argument("--data-dir", metavar="DIR", default=None,
                   help="folder of the data sets (philly/, alibaba/, pollux/) (default: $LYRA_SOLVER_DATA, else "
                        "../shared/data beside the repository)")
    p.add_argument("--jobs", "-j", dest="jobs", default=None,
                   help="parallel processes (Ray: CPUs of a local Ray); with --servers, the snapshot's job count "
                        "(as in `lyra-solver generate`): then give parallelism as --processes")
    p.add_argument("--processes", type=_pos_int, default=None, help="parallel processes (same as --jobs)")
    p.add_argument("--backend", choices=["local", "ray"], default="local", help="where the tasks run")
    p.add_argument("--address", default=None, help="Ray cluster address (default: a local Ray)")
    p.add_argument("--seed", type=_nonneg_int, default=0, help="added to every instance's seed")
    p.add_argument("--repeat", type=_nonneg_int, default=None,
                   help="timed runs after the warm-up (median reported); default 3, 1 with --quick")
    p.add_argument("--speed", action="store_true",
                   help="mckp only: cold start against --version and warm solves over 10 seeds per class "
                        "(`bench mckp --speed -h` for its options)")
    p.add_argument("--time-limit", type=_nonneg_float, default=None,
                   help="seconds per exact solve (default 60, 5 with --quick)")
    p.add_argument("--threads", type=_pos_int, default=None,
                   help="threads of multi-threaded solvers (CP-SAT workers); default min(8, CPUs)")
    p.add_argument("--servers", type=_pos_int, default=None,
                   help="decide: one generated snapshot of this many 8-GPU servers (with --jobs M jobs)")
    p.add_argument("--gpus", type=_pos_int, default=8, help="decide: GPUs per server of --servers")
    p.add_argument("--running-share", type=float, default=0.5, help="decide: share of running jobs of --servers")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="a progress bar on standard error even when it is not a terminal")
    g.add_argument("--no-progress", dest="progress", action="store_false",
                   help="no progress bar (default: a bar when standard error is a terminal)")
    v = p.add_mutually_exclusive_group()
    v.add_argument("-q", "--quiet", action="store_true", help="only errors on standard error (no progress bar)")
    v.add_argument("-v", "--verbose", action="count", default=0, help="log each task (-vv: debug lines too)")
    return p


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str], Config, int]:
    """Parse and check the arguments; raises :class:`_UsageError` with one line on bad usage."""
    args = build_parser().parse_args(argv)
    if args.speed:  # `bench mckp --speed` is answered before parsing (main)
        raise _UsageError("--speed: only as `lyra-solver bench mckp --speed` (the mckp suite alone)")
    names: list[str] = []
    for s in args.suites:
        if s == "all":
            names.extend(n for n in SUITES if n not in names)
        elif s in SUITES:
            if s not in names:
                names.append(s)
        else:
            raise _UsageError(f"unknown suite {s!r}; expected one of {', '.join([*SUITES, 'all'])} (or fuzz)")
    snapshot_jobs = None
    jobs = args.processes
    if args.jobs is not None:
        try:
            jv = int(args.jobs)
        except ValueError:
            raise _UsageError(f"--jobs: not an integer: {args.jobs!r}") from None
        if args.servers is not None:
            if jv < 0:
                raise _UsageError(f"--jobs: the snapshot's job count must be >= 0, got {jv}")
            snapshot_jobs = jv
        else:
            if jv < 1:
                raise _UsageError(f"--jobs: must be >= 1, got {jv}")
            jobs = jv
    if args.servers is not None and "decide" not in names:
        raise _UsageError("--servers: only the decide suite takes a snapshot size")
    if args.servers is not None:  # the generator's own limits, checked before any work
        from lyra_solver.bench.generate import MAX_GPUS, MAX_JOBS, MAX_SERVERS

        for flag, value, most in (("--servers", args.servers, MAX_SERVERS), ("--jobs", snapshot_jobs, MAX_JOBS),
                                  ("--gpus", args.gpus, MAX_GPUS)):
            if value is not None and value > most:
                raise _UsageError(f"{flag}: at most {most:,} for a generated snapshot, got {value:,}")
    if not (0.0 <= args.running_share <= 1.0):
        raise _UsageError(f"--running-share: must be in [0, 1], got {args.running_share}")
    scale = "quick" if args.quick else "full"
    options: dict[str, Any] = {}
    if args.servers is not None:
        options["decide_size"] = {"servers": args.servers, "jobs": 5000 if snapshot_jobs is None else snapshot_jobs,
                                  "gpus": args.gpus, "running_share": args.running_share}
    cfg = Config(scale=scale, seed=args.seed,
                 repeat=args.repeat if args.repeat is not None else (1 if args.quick else 3),
                 time_limit=args.time_limit if args.time_limit is not None else (5.0 if args.quick else 60.0),
                 threads=args.threads or min(8, os.cpu_count() or 1), options=options)
    return args, names, cfg, jobs or 1


def run_and_write(names: list[str], cfg: Config, *, jobs: int, backend: str, address: str | None,
                  out: Path | None, progress: bool, command: str) -> tuple[str, dict]:
    """Run, format and (with ``out``) write results.json and plots; returns (markdown, results document)."""
    t0 = time.perf_counter()
    rows = run_suites(names, cfg, jobs=jobs, backend=backend, address=address, progress=progress)
    wall = time.perf_counter() - t0
    suites = [load_suite(n) for n in names]
    config = {**cfg.as_dict(), "suites": names, "jobs": jobs, "backend": backend, "wall_s": wall}
    targets = judge_targets(suites, rows, config)
    doc = {"format": RESULTS_FORMAT, "command": command, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": machine(), "config": config, "targets": targets,
           "rows": [r for n in names for r in rows[n]]}
    parts = [f"Command: `{command}` ({len(doc['rows'])} rows, {wall:.0f} s wall on "
             f"{doc['machine']['cores']} cores; time limit {cfg.time_limit:g} s, seed {cfg.seed}, "
             f"repeats {cfg.repeat}, backend {backend}, jobs {jobs})\n"]
    for s in suites:
        parts.append(suite_tables(s, rows[s.name]))
    if targets:
        parts.append("## Targets\n")
        parts.append(targets_table(targets))
    from lyra_solver.bench.datapath import ENV, missing_data

    missing = missing_data()
    if missing:  # the suites skip the instances of a data set that is not here: say which
        note = (f"Skipped for lack of data: the instances built on {', '.join(missing)} (no such file in the data "
                f"folder; set {ENV} or --data-dir to the folder of the data sets).")
        log.warning("%s", note)
        parts.append("\n" + note + "\n")
        config["missing_data"] = missing
    text = "\n".join(parts)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        from lyra_solver.bench.outputs import write_file
        from lyra_solver.bench.plots import write_plots

        doc["plots"], note = write_plots(doc["rows"], out, time_groups={s.name: s.time_plot_groups for s in suites})
        if note:
            text += f"\n\n{note}"
        write_file(out / "results.json", json.dumps(doc, indent=1, sort_keys=True, default=_plain) + "\n")
    return text, doc


def _check_outputs(args) -> tuple[Path | None, Path | None]:
    """Every path the run will write and the data folder, checked before any work (exit 2 naming the flag):
    the ``--out`` folder (new or empty, or ``--force``), the ``--report`` file and its plots folder."""
    from lyra_solver.bench.datapath import data_root, set_data_dir
    from lyra_solver.bench.outputs import check_out_dir, check_out_file

    if args.data_dir is not None:
        set_data_dir(args.data_dir)
    data_root()  # LYRA_SOLVER_DATA set to something that is not a folder: named now, not after the run
    report = check_out_file(args.report, "--report")
    if args.plots is not None and report is None:
        raise _UsageError("--plots: only with --report")
    if report is not None:
        plots = Path(args.plots) if args.plots is not None else report.parent / "docs" / "bench"
        check_out_dir(plots, "--plots", force=True)  # the report's figures are replaced there by design
        if args.out is not None and Path(args.out).resolve() == plots.resolve():
            raise _UsageError("--out and the report's plots folder must differ")
    return check_out_dir(args.out, "--out", force=args.force, patterns=OUTPUTS), report


def main(argv: list[str] | None = None) -> int:
    """``lyra-solver bench ...``: exit 0 done, 2 bad usage (one line on stderr), 3 an internal error."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "mckp" and "--speed" in argv[1:]:  # cold start and 10-seed spread (issues 22, 24)
        from lyra_solver.bench.mckp_speed import main as speed_main

        return speed_main([a for a in argv[1:] if a != "--speed"])
    if argv and argv[0] in ("-h", "--help"):
        build_parser().print_help()
        return 0
    from lyra_solver.errors import InputError, escape

    try:
        args, names, cfg, jobs = parse(argv)
        out_dir, report = _check_outputs(args)
    except _UsageError as err:
        print(escape(f"lyra-solver bench: error: {err}"), file=sys.stderr)
        return 2
    except InputError as err:
        print(f"lyra-solver bench: error: {err.line()}", file=sys.stderr)
        return 2
    if args.backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            print("lyra-solver bench: error: --backend ray: ray is not installed (pip install 'lyra-solver[ray]')",
                  file=sys.stderr)
            return 2
    from lyra_solver.logsetup import configure_logging, verbosity_of

    configure_logging("lyra-solver bench", verbosity_of(args))
    log.debug("bench: suites %s, %s, jobs %d, backend %s", names, cfg, jobs, args.backend)
    from lyra_solver.bench.progress import wanted
    command = "lyra-solver bench " + " ".join(argv)
    import tempfile

    try:
        with tempfile.TemporaryDirectory(prefix="lyra-bench-") as tmp:
            out = out_dir if out_dir is not None or report is None else Path(tmp)
            text, doc = run_and_write(names, cfg, jobs=jobs, backend=args.backend, address=args.address, out=out,
                                      progress=wanted(quiet=args.quiet, progress=args.progress), command=command)
            if report is not None:
                from lyra_solver.bench.report import write_report

                write_report(doc, report, results_dir=out, plots_dir=args.plots)
    except KeyboardInterrupt:
        return 130
    except InputError as err:  # e.g. LYRA_SOLVER_DATA pointing nowhere, met while planning
        print(f"lyra-solver bench: error: {err.line()}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"lyra-solver bench: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: one line, no traceback (LYRA_DEBUG=1 shows it)
        if os.environ.get("LYRA_DEBUG"):
            raise
        print(f"lyra-solver bench: internal error ({type(exc).__name__}: {exc}); rerun with LYRA_DEBUG=1 for details",
              file=sys.stderr)
        return 3
    print(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
