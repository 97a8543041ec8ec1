"""``lyra-solver simulate``: options and the driver of a comparison (policies x seeds, in parallel).

:func:`add_arguments` declares the options on the subcommand's parser (it imports nothing heavy);
:func:`run` loads the trace, runs every (policy, seed) in parallel processes (``--backend local``) or on Ray
(``--backend ray``, imported only then), and writes the outputs of :mod:`.report`.
"""
from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger(__name__)

def _policy_names() -> tuple[str, ...]:
    from lyra_solver.bench.sim.policies import POLICIES

    return tuple(POLICIES)


def add_arguments(p: argparse.ArgumentParser) -> None:
    names = _policy_names()
    src = p.add_argument_group("trace")
    src.add_argument("--trace", help="Philly CSV (timestamp,duration,num_gpus,gpu_time,cluster)")
    src.add_argument("--pollux-workload", type=int, metavar="N",
                     help="replay Pollux workload N (1-8) on 16 nodes x 4 GPUs, no inference cluster")
    src.add_argument("--start", help="keep jobs submitted at or after this UTC date/time (ISO)")
    src.add_argument("--end", help="keep jobs submitted before this UTC date/time (ISO)")
    src.add_argument("--cluster", help="keep one Philly virtual cluster (its hash)")
    src.add_argument("--limit", type=int, help="keep the first N jobs (after the filters)")
    src.add_argument("--load", help="inference load: the Alibaba GenAI QPS CSV or a CSV time,value "
                     "(default: no load, every inference server idle)")
    src.add_argument("--load-window", type=float, default=300.0, help="seconds per window of the QPS file "
                     "(default %(default)s)")
    m = p.add_argument_group("mapping (DESIGN 'Simulation')")
    m.add_argument("--elastic-share", type=float, default=0.5, help="share of elastic jobs (default %(default)s)")
    m.add_argument("--restart-penalty", type=float, default=30.0, help="seconds (default %(default)s)")
    m.add_argument("--preemption-penalty", type=float, default=300.0, help="seconds (default %(default)s)")
    m.add_argument("--packing-profile", action="append", default=[], metavar="APP=UTIL,MEM",
                   help="override an application's packing profile (gpu_util in (0, 1], gpu_mem_gb); repeatable; "
                   "used by policies with packing only (default: the table PACKING_PROFILES)")
    c = p.add_argument_group("cluster and policies")
    c.add_argument("--training-servers", type=int, default=64, help="8-GPU training servers (default %(default)s)")
    c.add_argument("--inference-servers", type=int, default=32,
                   help="8-GPU inference servers (default %(default)s)")
    c.add_argument("--interval", type=float, default=60.0, help="seconds between rounds (default %(default)s)")
    c.add_argument("--time-limit", type=float, default=1.0, help="seconds per exact step (default %(default)s)")
    c.add_argument("--tiresias-threshold", type=float, default=3600.0, metavar="GPU_S",
                   help="attained GPU-seconds at which a job enters Tiresias' second queue (default %(default)s)")
    c.add_argument("--tiresias-starve-limit", type=float, default=8.0, metavar="K",
                   help="Tiresias' STARVELIMIT: a second-queue job that has waited K times its last run is promoted "
                   "to the first queue; 0 disables (default %(default)s, see policies.promote_starved)")
    pol = c.add_mutually_exclusive_group(required=True)
    pol.add_argument("--policy", choices=names, help="one policy")
    pol.add_argument("--compare", nargs="+", choices=names, metavar="P",
                     help=f"several policies, ratios to the first baseline given ({', '.join(names)})")
    c.add_argument("--seeds", type=int, default=1, help="seeds 0..K-1 of the mapping (default %(default)s)")
    c.add_argument("--seed", type=int, default=0, help="first seed (default %(default)s)")
    r = p.add_argument_group("running and output")
    r.add_argument("--jobs", type=int, default=0, help="parallel processes (default: CPU count)")
    r.add_argument("--backend", choices=["local", "ray"], default="local",
                   help="local processes or a Ray cluster (needs ray installed; default %(default)s)")
    r.add_argument("--address", default=None,
                   help="with --backend ray: the Ray cluster's address (ray.init(address=...); default: a local Ray)")
    r.add_argument("--out", help="directory for summary.json, timings.json, jobs-POLICY.csv and plots")
    r.add_argument("--check", action="store_true", help="check every decision with the independent checker")


def _fail(where: str, msg: str):
    from lyra_solver.errors import InputError

    raise InputError(where, msg)


def _validate(args) -> None:
    if (args.trace is None) == (args.pollux_workload is None):
        _fail("--trace", "give exactly one of --trace and --pollux-workload")
    for name in ("training_servers", "inference_servers", "seeds"):
        v = getattr(args, name)
        if v < (1 if name != "inference_servers" else 0):
            _fail(f"--{name.replace('_', '-')}", f"must be at least {1 if name != 'inference_servers' else 0}")
    for name in ("interval", "time_limit", "load_window", "tiresias_threshold"):
        v = getattr(args, name)
        if not v > 0 or v == float("inf"):
            _fail(f"--{name.replace('_', '-')}", "must be a positive finite number")
    if not 0 <= args.elastic_share <= 1:
        _fail("--elastic-share", "must be in [0, 1]")
    if not 0 <= args.tiresias_starve_limit < float("inf"):
        _fail("--tiresias-starve-limit", "must be a non-negative finite number (0 disables the rule)")
    if args.restart_penalty < 0 or args.preemption_penalty < 0:
        _fail("--restart-penalty", "penalties must be non-negative")
    args.packing = _packing_profiles(args.packing_profile)
    if args.limit is not None and args.limit < 1:
        _fail("--limit", "must be at least 1")
    if args.jobs < 0:
        _fail("--jobs", "must be non-negative")


def _packing_profiles(items: list[str]) -> dict[str, tuple[float, float]]:
    from lyra_solver.types import PROFILE_MODELS

    out = {}
    for item in items:
        app, _, rest = item.partition("=")
        parts = rest.split(",")
        try:
            u, mem = (float(x) for x in parts) if len(parts) == 2 else (math.nan, math.nan)
        except ValueError:
            u = mem = math.nan
        if app not in PROFILE_MODELS:
            _fail("--packing-profile", f"{item!r}: unknown application {app!r} (expected one of "
                  f"{', '.join(PROFILE_MODELS)})")
        if not (0 < u <= 1 and 0 <= mem < math.inf):
            _fail("--packing-profile", f"{item!r}: expected APP=UTIL,MEM with UTIL in (0, 1] and MEM >= 0")
        out[app] = (u, mem)
    return out


def _need_ray() -> None:
    """``--backend ray`` without Ray installed: exit 2 before any work (Ray itself is imported by the harness)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        _fail("--backend", "ray needs the optional extra 'ray' (pip install 'lyra-solver[ray]')")


def _data_dir() -> Path:
    from lyra_solver.bench.sim import data_dir

    return data_dir()


def _setup(args):
    """Trace, load curve and cluster config from the arguments (bad files: InputError naming file and line)."""
    from lyra_solver.bench.sim.engine import SimConfig
    from lyra_solver.bench.sim.traces import load_load_curve, load_philly, load_pollux_workload

    if args.pollux_workload is not None:
        n = args.pollux_workload
        path = _data_dir() / "pollux" / "workloads" / f"workload-{n}.csv"
        if not 1 <= n <= 8 or not path.exists():
            _fail("--pollux-workload", f"no workload {n} (1-8, in {path.parent})")
        trace = load_pollux_workload(path)
        config = SimConfig(training_servers=16, inference_servers=0, server_gpus=4, interval=args.interval,
                           time_limit=args.time_limit, check=args.check, tiresias_threshold=args.tiresias_threshold,
                           tiresias_starve_limit=args.tiresias_starve_limit)
        return trace, config
    trace = load_philly(args.trace, start=args.start, end=args.end, cluster=args.cluster, limit=args.limit)
    if not trace:
        _fail("--trace", f"{args.trace}: no job left after the filters")
    load = load_load_curve(args.load, window=args.load_window) if args.load else None
    config = SimConfig(training_servers=args.training_servers, inference_servers=args.inference_servers,
                       interval=args.interval, load=load, time_limit=args.time_limit, check=args.check,
                       tiresias_threshold=args.tiresias_threshold, tiresias_starve_limit=args.tiresias_starve_limit)
    return trace, config


def run_one(trace, config, policy_name: str, seed: int, mapping: dict, progress: bool = False):
    """One (policy, seed) run: summary dict, timing dict and the SimResult (picklable for worker processes)."""
    from lyra_solver.bench.sim.engine import simulate
    from lyra_solver.bench.sim.policies import get_policy
    from lyra_solver.bench.sim.report import summarize, timing
    from lyra_solver.bench.sim.traces import map_jobs

    wall, cpu = time.perf_counter(), time.process_time()
    specs = map_jobs(trace, seed=seed, server_gpus=config.server_gpus, **mapping)
    bar = _bar(len(specs), f"{policy_name} seed {seed}") if progress else None
    res = simulate(specs, get_policy(policy_name), config, progress=None if bar is None else bar.set)
    if bar is not None:
        bar.close()
    times = {**timing(res), "run_wall_s": round(time.perf_counter() - wall, 3),
             "run_cpu_s": round(time.process_time() - cpu, 3)}
    return summarize(res, config), times, res


class _Bar:
    """tqdm when installed, else nothing: progress by jobs completed."""

    def __init__(self, total: int, desc: str) -> None:
        from tqdm import tqdm

        self.t = tqdm(total=total, desc=desc, unit="job", file=sys.stderr, mininterval=0.5)
        self.n = 0

    def set(self, n: int) -> None:
        self.t.update(n - self.n)
        self.n = n

    def close(self) -> None:
        self.t.close()


def _bar(total: int, desc: str):
    try:
        return _Bar(total, desc)
    except ImportError:
        return None


def _run_task(task):
    """Module-level wrapper of :func:`run_one` for the harness's process and Ray backends."""
    trace, config, policy, seed, mapping = task
    return run_one(trace, config, policy, seed, mapping)


def _run_all(tasks, trace, config, mapping, args):
    """Every (policy, seed): in this process with a per-job bar (one run), else through the benchmark
    harness's backend (local processes, or Ray, imported only then)."""
    from lyra_solver.bench.harness import map_tasks
    from lyra_solver.bench.progress import wanted

    show = wanted(args)  # the command line's one progress rule (-q, --progress, --no-progress, a terminal)
    if len(tasks) == 1:
        p, s = tasks[0]
        return {(p, s): run_one(trace, config, p, s, mapping, progress=show)}
    bar = _bar(len(tasks), "runs") if show else None
    try:
        out = map_tasks(_run_task, [(trace, config, p, s, mapping) for p, s in tasks],
                        jobs=args.jobs or os.cpu_count() or 1, backend=args.backend,
                        address=getattr(args, "address", None),
                        progress=None if bar is None else bar.t.update)
    finally:
        if bar is not None:
            bar.close()
    return dict(zip(tasks, out, strict=True))


def run(args) -> int:
    from lyra_solver.bench.sim.policies import get_policy
    from lyra_solver.bench.sim.report import combine, markdown_table, write_outputs

    _validate(args)
    policies = [args.policy] if args.policy else list(dict.fromkeys(args.compare))
    for p in policies:
        get_policy(p)  # unknown name or packing not available: exit 2 before any work
    if args.address is not None and args.backend != "ray":
        _fail("--address", "only with --backend ray")
    if args.backend == "ray":
        _need_ray()
    trace, config = _setup(args)
    mapping = {"elastic_share": args.elastic_share, "restart_penalty": args.restart_penalty,
               "preemption_penalty": args.preemption_penalty}
    if args.packing:
        mapping["packing"] = {k: list(v) for k, v in sorted(args.packing.items())}
    seeds = list(range(args.seed, args.seed + args.seeds))
    tasks = [(p, s) for p in policies for s in seeds]
    t0 = time.perf_counter()
    results = _run_all(tasks, trace, config, mapping, args)
    wall = time.perf_counter() - t0
    summaries = {p: combine([results[(p, s)][0] for s in seeds]) for p in policies}
    timings = {p: [results[(p, s)][1] for s in seeds] for p in policies}
    base = "baseline" if "baseline" in policies else policies[0]
    print(markdown_table(summaries, timings, baseline=base))
    print(f"\n{len(trace)} jobs, {len(tasks)} runs, {wall:.1f} s wall "
          f"({datetime.now(UTC).strftime('%Y-%m-%d')})", file=sys.stderr)
    if args.out:
        meta = {"trace": args.trace or f"pollux workload {args.pollux_workload}", "jobs": len(trace),
                "start": args.start, "end": args.end, "cluster": args.cluster, "limit": args.limit,
                "load": args.load, "load_window": args.load_window, "seeds": seeds,
                "training_servers": config.training_servers, "inference_servers": config.inference_servers,
                "server_gpus": config.server_gpus, "interval": config.interval, "mapping": mapping,
                **({"tiresias_threshold": config.tiresias_threshold,
                    "tiresias_starve_limit": config.tiresias_starve_limit} if "tiresias" in policies else {}),
                "baseline": base}
        first = {p: results[(p, seeds[0])][2] for p in policies}
        write_outputs(Path(args.out), summaries, timings, first, config, meta)
    return 0
