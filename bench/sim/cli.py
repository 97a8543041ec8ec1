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

#: Defaults of the options a preset may set (their parser default is None, resolved by _resolve).
DEFAULTS = {"training_servers": 64, "inference_servers": 32, "interval": 60.0, "restart_penalty": 30.0,
            "preemption_penalty": 300.0, "tiresias_threshold": 3600.0, "tiresias_starve_limit": 8.0,
            "tiresias_mode": "two-queue"}

#: Presets: option values (an option given on the command line wins) and SimConfig fields.
PRESETS = {
    # the Pollux artifact's simulator (petuum/adaptdl osdi21-artifact, simulator/): 16 nodes x 4 GPUs, no
    # inference cluster, rounds every 60 s on the grid from time 0 only (a job waits for the next round to
    # start; its GPUs are given to others at the next round), 30 s for any change of allocation (the first
    # start included), Tiresias' threshold at 16 GPU-hours without the starvation rule, and the artifact's
    # Tiresias round (priority walk preempting in either queue, its allocator: the most free server first)
    "pollux-artifact": ({"training_servers": 16, "inference_servers": 0, "interval": 60.0, "restart_penalty": 30.0,
                         "preemption_penalty": 30.0, "tiresias_threshold": 57600.0, "tiresias_starve_limit": 0.0,
                         "tiresias_mode": "artifact"},
                        {"server_gpus": 4, "event_rounds": False, "round_origin": 0.0, "start_penalty": 30.0,
                         "round_epochs": True}),
}


def _policy_names() -> tuple[str, ...]:
    from lyra_solver.bench.sim.policies import POLICIES

    return tuple(POLICIES)


def add_arguments(p: argparse.ArgumentParser) -> None:
    names = _policy_names()
    src = p.add_argument_group("trace")
    src.add_argument("--trace", help="Philly CSV (timestamp,duration,num_gpus,gpu_time,cluster)")
    src.add_argument("--pollux-workload", metavar="N|CSV",
                     help="replay Pollux workload N (1-8), or a workload CSV (name,time,application,num_replicas,"
                     "batch_size), on 16 nodes x 4 GPUs, no inference cluster, sized by the Pollux artifact's job "
                     "model")
    src.add_argument("--pollux-data", metavar="DIR",
                     help="the Pollux measurements (validation/, throughput/, workloads/; default "
                     "../shared/data/pollux)")
    src.add_argument("--start", help="keep jobs submitted at or after this UTC date/time (ISO)")
    src.add_argument("--end", help="keep jobs submitted before this UTC date/time (ISO)")
    src.add_argument("--cluster", help="keep one Philly virtual cluster (its hash)")
    src.add_argument("--limit", type=int, help="keep the first N jobs (after the filters)")
    src.add_argument("--load", help="inference load: the Alibaba GenAI QPS CSV or a CSV time,value "
                     "(default: no load, every inference server idle)")
    src.add_argument("--load-window", type=float, default=300.0, help="seconds per window of the QPS file "
                     "(default %(default)s)")
    src.add_argument("--load-mode", choices=["peak", "absolute"], default="peak",
                     help="peak: the load divided by its own peak, times the inference servers, serve (the default); "
                     "absolute: ceil(load / --load-per-server) servers serve, at most all of them")
    src.add_argument("--load-per-server", type=float, metavar="X",
                     help="with --load-mode absolute: the load one inference server serves (in the file's units)")
    src.add_argument("--slices", type=int, default=1, metavar="K",
                     help="replay K disjoint slices of the trace: the one --start/--end (or --limit) selects and the "
                     "K-1 after it of the same length (or number of jobs); ratios get a 95%% interval")
    m = p.add_argument_group("mapping (DESIGN 'Simulation')")
    m.add_argument("--elastic-share", type=float, default=0.5, help="share of elastic jobs (default %(default)s)")
    m.add_argument("--restart-penalty", type=float, help="seconds (default 30)")
    m.add_argument("--preemption-penalty", type=float, help="seconds (default 300)")
    m.add_argument("--packing-profile", action="append", default=[], metavar="APP=UTIL,MEM",
                   help="override an application's packing profile (gpu_util in (0, 1], gpu_mem_gb); repeatable; "
                   "used by policies with packing only (default: the table PACKING_PROFILES)")
    m.add_argument("--packing-profiles", choices=["auto", "alibaba", "table"], default="auto",
                   help="gpu_util of each job: drawn seeded from the fractional pods of Alibaba's GPU-sharing trace "
                   "(alibaba/openb_pod_list_default.csv), or its application's in the table; auto: alibaba when "
                   "the file is found (default %(default)s)")
    m.add_argument("--deadline-factor", default="0.5,1.5", metavar="LO,HI",
                   help="deadline = submit + lambda x duration, lambda uniform on [LO, HI] and seeded per job "
                   "(ElasticFlow's generator; default %(default)s)")
    m.add_argument("--load-factor", type=float, default=1.0,
                   help="arrival rate times this factor: every submit time divided by it (default %(default)s)")
    c = p.add_argument_group("cluster and policies")
    c.add_argument("--preset", choices=sorted(PRESETS),
                   help="a published setup: pollux-artifact = the Pollux artifact's simulator (16 x 4 GPUs, no "
                   "inference, 60 s rounds on the grid only, 30 s restart and preemption, Tiresias threshold "
                   "57,600 GPU-s, starvation off); options given explicitly win")
    c.add_argument("--training-servers", type=int, help="8-GPU training servers (default 64)")
    c.add_argument("--inference-servers", type=int, help="8-GPU inference servers (default 32)")
    c.add_argument("--interval", type=float, help="seconds between rounds (default 60)")
    c.add_argument("--time-limit", type=float, default=1.0, help="seconds per exact step (default %(default)s)")
    c.add_argument("--tiresias-threshold", type=float, metavar="GPU_S",
                   help="attained GPU-seconds at which a job enters Tiresias' second queue (default 3600)")
    c.add_argument("--tiresias-starve-limit", type=float, metavar="K",
                   help="Tiresias' STARVELIMIT: a second-queue job that has waited K times its last run is promoted "
                   "to the first queue; 0 disables (default 8, see policies.promote_starved)")
    c.add_argument("--tiresias-mode", choices=("two-queue", "artifact"),
                   help="two-queue: a running job is preempted only for a waiting first-queue job, never within its "
                   "queue, and jobs are placed by the engine; artifact: the Pollux artifact's tiresias.py, every "
                   "round walks all jobs in priority order (queue, then the order they entered it), a running job "
                   "the jobs ahead of it leave no room for is preempted, and the jobs started are placed on the "
                   "servers with most free GPUs first (default two-queue; pollux-artifact: artifact)")
    pol = c.add_mutually_exclusive_group(required=True)
    pol.add_argument("--policy", choices=names, help="one policy")
    pol.add_argument("--compare", nargs="+", choices=names, metavar="P",
                     help=f"several policies, ratios to the first baseline given ({', '.join(names)})")
    c.add_argument("--objective", nargs="+", metavar="NAME",
                   help="allocation objective(s) of every policy that allocates (elastic scaling): each such policy "
                   "runs once per objective, as POLICY@NAME for all but the default jct-reduction (choices: "
                   "lyra_solver.OBJECTIVES; default: jct-reduction)")
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
    r.add_argument("--max-work", type=int, default=None, metavar="UNITS",
                   help="the most work of each run (about CPU microseconds of replay, README 'Bound on the work'): a "
                   f"command of more than {FULL_RUNS} runs (policies x seeds x slices x sweep points) shares "
                   f"{FULL_RUNS} x UNITS equally; a run that passes its part stops the command (exit 2), one whose "
                   "least work passes it is refused before any runs, and so is a command of more than "
                   f"{MAX_RUNS} runs; 0: no bound (default {DEFAULT_MAX_WORK:,}: about 20 CPU seconds a run)")
    r.add_argument("--sweep", metavar="NAME=V1,V2,...",
                   help="repeat the comparison at each value of training-servers, inference-servers, elastic-share "
                   "or load-factor: sweep.json and sweep.png in --out (default: the current folder), each point's "
                   "outputs in --out/NAME=V")


def _fail(where: str, msg: str):
    from lyra_solver.errors import InputError

    raise InputError(where, msg)


#: Most seeds of one comparison and most parallel processes (each seed is a replay per policy).
MAX_SEEDS = 1_000
MAX_JOBS = 1_024
#: Longest --time-limit accepted (seconds per round's exact steps).
MAX_TIME_LIMIT = 3_600.0
#: Most slices of one comparison (each is read from the trace and replayed per policy and seed).
MAX_SLICES = 1_000
#: The default of ``--max-work``: the most work units (``engine.EVENT_WORK``, ...) one run of a ``simulate``
#: command may do (a run of a policy of :data:`POLICY_WORK` ``w`` the ``w``-th part). Measured at 0.4-1.0 CPU
#: microseconds per unit (weighted) on the shared 2-core machine (README "Bound on the work"), so a run ends within
#: about 20 CPU seconds of replay: a Pollux workload (``--preset pollux-artifact``) with any policy, or a
#: 600-job Philly slice, fits whole.
DEFAULT_MAX_WORK = 20_000_000
#: Runs (weighted, as :data:`POLICY_WORK`) that each get the whole ``--max-work``; a command of more shares
#: ``FULL_RUNS x --max-work`` equally, so no command does more than that.
FULL_RUNS = 16
#: Most runs (policies x seeds x slices x sweep points) of one command.
MAX_RUNS = 256
#: Work units of a run besides its events (the summary, the results sent back): 23-36 ms measured.
RUN_WORK = 30_000
#: Work units per job of a run's mapping of the trace (``traces.map_jobs``: two hashes a row, about 15 us).
MAP_WORK = 15
#: Cost per unit of a policy's replay relative to ``baseline`` (measured on 50 rigid 8-GPU jobs of an hour queued
#: on one server, a round a minute, and 300 one-GPU jobs on one server); not listed: 1.
POLICY_WORK = {"lucid": 2, "lyra-exact": 2, "lyra-pack": 2, "gimbal": 2, "gimbal-makespan": 2, "gimbal-deadline": 2,
               "gimbal-exact": 4}


def _resolve(args) -> None:
    """Fill the options left out: from the preset if one is given, else :data:`DEFAULTS`."""
    preset = PRESETS[args.preset][0] if getattr(args, "preset", None) else {}
    for name, default in DEFAULTS.items():
        if getattr(args, name, None) is None:
            setattr(args, name, preset.get(name, default))


def _validate(args) -> None:
    """Every flag within its documented bounds (exit 2 naming the flag), before anything is read or allocated."""
    from lyra_solver.bench.sim.engine import MAX_INTERVAL, MAX_PENALTY, MAX_SERVERS, MIN_INTERVAL

    _resolve(args)
    if (args.trace is None) == (args.pollux_workload is None):
        _fail("--trace", "give exactly one of --trace and --pollux-workload")
    if args.trace == "-" and args.load == "-":
        _fail("--load", "standard input can feed --trace or --load, not both")
    for name, lo, hi in (("training_servers", 1, MAX_SERVERS), ("inference_servers", 0, MAX_SERVERS),
                         ("seeds", 1, MAX_SEEDS), ("jobs", 0, MAX_JOBS), ("seed", 0, 2**63 - 1)):
        v = getattr(args, name)
        if not lo <= v <= hi:
            _fail(f"--{name.replace('_', '-')}", f"must be in [{lo}, {hi}], got {v}")
    for name, lo, hi in (("interval", MIN_INTERVAL, MAX_INTERVAL), ("load_window", MIN_INTERVAL, MAX_INTERVAL),
                         ("restart_penalty", 0.0, MAX_PENALTY), ("preemption_penalty", 0.0, MAX_PENALTY)):
        v = getattr(args, name)
        if not lo <= v <= hi:  # NaN too
            _fail(f"--{name.replace('_', '-')}", f"must be in [{lo:g}, {hi:g}] seconds, got {v!r}")
    for name, hi in (("time_limit", MAX_TIME_LIMIT), ("tiresias_threshold", math.inf)):
        v = getattr(args, name)
        if not 0 < v <= hi or v == math.inf:
            most = "" if hi == math.inf else f" at most {hi:g}"
            _fail(f"--{name.replace('_', '-')}", f"must be a positive finite number{most}, got {v!r}")
    if not 0 <= args.elastic_share <= 1:
        _fail("--elastic-share", "must be in [0, 1]")
    if not 0 <= args.tiresias_starve_limit < float("inf"):
        _fail("--tiresias-starve-limit", "must be a non-negative finite number (0 disables the rule)")
    args.packing = _packing_profiles(args.packing_profile)
    args.deadline_range = _deadline_factor(args.deadline_factor)
    if not (args.load_factor > 0 and math.isfinite(args.load_factor)):
        _fail("--load-factor", "must be a positive finite number")
    if args.limit is not None and args.limit < 1:
        _fail("--limit", "must be at least 1")
    if args.max_work is None:
        args.max_work = DEFAULT_MAX_WORK
    if args.max_work < 0:
        _fail("--max-work", f"must be at least 0 (0: no bound), got {args.max_work}")


def _deadline_factor(text: str) -> tuple[float, float]:
    parts = text.split(",")
    try:
        lo, hi = (float(x) for x in parts) if len(parts) == 2 else (math.nan, math.nan)
    except ValueError:
        lo = hi = math.nan
    if not 0 < lo <= hi < math.inf:
        _fail("--deadline-factor", f"{text!r}: expected LO,HI with 0 < LO <= HI (finite)")
    return (lo, hi)


def _gpu_util_source(mode: str, policies) -> str | None:
    """The openb pod list the packing policies draw ``gpu_util`` from, or None for the table."""
    from lyra_solver.bench.sim.policies import get_policy

    if mode == "table" or all(get_policy(p.partition("@")[0]).packing == "off" for p in policies):  # run labels
        return None
    path = _data_dir() / "alibaba" / "openb_pod_list_default.csv"
    if not path.exists():
        if mode == "alibaba":
            _fail("--packing-profiles", f"alibaba: {path} not found")
        log.warning("packing profiles: %s not found, using the table PACKING_PROFILES", path)
        return None
    return str(path)


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
        root = Path(args.pollux_data) if args.pollux_data else _data_dir() / "pollux"
        if not (root / "validation").is_dir() or not (root / "throughput").is_dir():
            _fail("--pollux-data", f"{root}: no validation/ and throughput/ folders of Pollux measurements")
        w = args.pollux_workload
        if w.isdigit():
            path = root / "workloads" / f"workload-{w}.csv"
            if not 1 <= int(w) <= 8 or not path.exists():
                _fail("--pollux-workload", f"no workload {w} (1-8, in {path.parent})")
        else:
            path = Path(w)
        trace = load_pollux_workload(path, root=root)
        fields = {"training_servers": 16, "inference_servers": 0, "server_gpus": 4, **_preset_config(args)}
        _fits(trace, fields["training_servers"], fields["server_gpus"], "<stdin>" if w == "-" else str(path),
              args.interval)
        config = SimConfig(interval=args.interval, time_limit=args.time_limit, check=args.check,
                           tiresias_threshold=args.tiresias_threshold, tiresias_starve_limit=args.tiresias_starve_limit,
                           tiresias_mode=args.tiresias_mode, **fields)
        return trace, config
    trace = load_philly(args.trace, start=args.start, end=args.end, cluster=args.cluster, limit=args.limit)
    if not trace:
        _fail("--trace", f"{args.trace}: no job left after the filters")
    _fits(trace, args.training_servers, 8, "<stdin>" if args.trace == "-" else args.trace, args.interval,
          with_load=bool(args.load) and args.inference_servers > 0)
    load = load_load_curve(args.load, window=args.load_window, mode=args.load_mode,
                           per_server=args.load_per_server) if args.load else None
    config = SimConfig(training_servers=args.training_servers, inference_servers=args.inference_servers,
                       interval=args.interval, load=load, time_limit=args.time_limit, check=args.check,
                       tiresias_threshold=args.tiresias_threshold, tiresias_starve_limit=args.tiresias_starve_limit,
                       tiresias_mode=args.tiresias_mode, **_preset_config(args))
    return trace, config


def _fits(trace, servers: int, gpus: int, name: str, interval: float, with_load: bool = False) -> None:
    """Refuse, naming the CSV line, a job larger than the training cluster (it could never run: the replay would
    wait for it forever), and a replay whose rounds alone would pass the engine's bound on events."""
    from lyra_solver.bench.sim.engine import MAX_EVENTS
    from lyra_solver.errors import InputError

    total = servers * gpus
    for tj in trace:
        if tj.gpus > total:
            raise InputError(f"line {tj.line}", f"num_gpus {tj.gpus} is more than the training cluster's {total} GPUs "
                             f"({servers} servers x {gpus}): the job could never run", name)
    longest = max(tj.duration for tj in trace)
    if longest / 2 / interval > MAX_EVENTS:  # an elastic job runs at most twice as fast: rounds while it runs
        _fail("--interval", f"{interval:g} s: the longest job ({longest:g} s) alone would take more than "
              f"{MAX_EVENTS:,} rounds (bench.sim.engine.MAX_EVENTS)")
    span = max(tj.submit for tj in trace) - min(tj.submit for tj in trace)
    if with_load and span / interval > MAX_EVENTS:  # a load change every interval while the jobs arrive
        _fail("--interval", f"{interval:g} s: the trace's arrivals span {span:g} s, more than {MAX_EVENTS:,} "
              "load changes (bench.sim.engine.MAX_EVENTS); shorten it (--start, --end, --limit)")


def _preset_config(args) -> dict:
    return dict(PRESETS[args.preset][1]) if getattr(args, "preset", None) else {}


def policy_of(label: str):
    """The policy of a run's label: ``NAME`` (its own options) or ``NAME@OBJECTIVE`` (that allocation objective,
    see ``--objective``). Raises :class:`InputError` for an unknown policy or objective."""
    from lyra_solver.bench.sim.policies import get_policy

    name, _, objective = label.partition("@")
    if not objective:
        return get_policy(name)
    _check_objectives([objective])
    return get_policy(name, {"objective": objective})


def allocates(name: str) -> bool:
    """Whether the policy ``name`` allocates (scales elastic jobs), so that ``--objective`` applies to it."""
    from lyra_solver.bench.sim.policies import get_policy

    return get_policy(name).elastic


def _check_objectives(names) -> None:
    from lyra_solver import OBJECTIVES

    for o in names:
        if o not in OBJECTIVES:
            _fail("--objective", f"unknown objective {o!r} (choose from {', '.join(OBJECTIVES)})")


def _labels(policies: list[str], objectives: list[str] | None) -> list[str]:
    """Run labels: each allocating policy once per objective (``POLICY@OBJECTIVE`` but for the default)."""
    from lyra_solver import OBJECTIVES

    if not objectives:
        return policies
    out = []
    for p in policies:
        if not allocates(p):
            out.append(p)
            continue
        out += [p if o == OBJECTIVES[0] else f"{p}@{o}" for o in dict.fromkeys(objectives)]
    return list(dict.fromkeys(out))


def run_one(trace, config, policy_name: str, seed: int, mapping: dict, progress: bool = False):
    """One (policy, seed) run: summary dict, timing dict and the SimResult (picklable for worker processes).
    ``policy_name`` is a run label (:func:`policy_of`)."""
    from lyra_solver.bench.sim.engine import simulate
    from lyra_solver.bench.sim.report import summarize, timing
    from lyra_solver.bench.sim.traces import map_jobs

    wall, cpu = time.perf_counter(), time.process_time()
    specs = map_jobs(trace, seed=seed, server_gpus=config.server_gpus, **mapping)
    bar = _bar(len(specs), f"{policy_name} seed {seed}") if progress else None
    res = simulate(specs, policy_of(policy_name), config, progress=None if bar is None else bar.set)
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


def _run_all(tasks, traces, configs, mapping, args):
    """Every (policy, seed): in this process with a per-job bar (one run), else through the benchmark
    harness's backend (local processes, or Ray, imported only then)."""
    from lyra_solver.bench.harness import map_tasks
    from lyra_solver.bench.progress import wanted

    show = wanted(args)  # the command line's one progress rule (-q, --progress, --no-progress, a terminal)
    if len(tasks) == 1:
        p, s, k = tasks[0]
        return {(p, s, k): run_one(traces[k], configs[k], p, s, mapping, progress=show)}
    bar = _bar(len(tasks), "runs") if show else None
    jobs = args.jobs or os.cpu_count() or 1
    if args.backend == "local":  # more processes than CPUs only add their start-up time and memory
        jobs = min(jobs, os.cpu_count() or 1)
    try:
        out = map_tasks(_run_task, [(traces[k], configs[k], p, s, mapping) for p, s, k in tasks],
                        jobs=jobs, backend=args.backend,
                        address=getattr(args, "address", None),
                        progress=None if bar is None else bar.t.update)
    finally:
        if bar is not None:
            bar.close()
    return dict(zip(tasks, out, strict=True))


def _check_more(args) -> None:
    if args.load_mode == "absolute":
        if args.load is None:
            _fail("--load-mode", "absolute needs --load")
        v = args.load_per_server
        if v is None or not 0 < v < math.inf:
            _fail("--load-per-server", "--load-mode absolute needs a positive finite --load-per-server")
    elif args.load_per_server is not None:
        _fail("--load-per-server", "only with --load-mode absolute")
    if not 1 <= args.slices <= MAX_SLICES:
        _fail("--slices", f"must be in [1, {MAX_SLICES}], got {args.slices}")
    if args.slices > 1:
        if args.pollux_workload is not None:
            _fail("--slices", "only with --trace (a Pollux workload is one slice)")
        if args.trace == "-":
            _fail("--slices", "needs a trace file (standard input is read once)")
        if args.limit is None and (args.start is None or args.end is None):
            _fail("--slices", "needs --limit, or --start and --end, to say how long a slice is")


def _slices(args, first: list) -> list[list]:
    """``args.slices`` disjoint slices: the first one given, then the next ones of the same length (the time
    window ``--end - --start``, or ``--limit`` jobs)."""
    from dataclasses import replace as dc_replace
    from datetime import timedelta

    from lyra_solver.bench.sim.traces import _when, load_philly

    k = args.slices
    if k == 1:
        return [first]
    if args.start is not None and args.end is not None:
        t0, t1 = _when(args.start), _when(args.end)
        span = t1 - t0
        out = [first]
        for i in range(1, k):
            try:
                a, b = t0 + i * span, t0 + (i + 1) * span
            except OverflowError:
                _fail("--slices", f"slice {i + 1} of {k} would end after the year 9999")
            fmt = "%Y-%m-%d %H:%M:%S"
            out.append(load_philly(args.trace, start=a.strftime(fmt), end=b.strftime(fmt), cluster=args.cluster,
                                   limit=args.limit))
        if any(not t for t in out):
            _fail("--slices", f"the trace holds fewer than {k} non-empty slices of {span / timedelta(hours=1):g} h")
        return out
    every = load_philly(args.trace, start=args.start, end=args.end, cluster=args.cluster)
    n = args.limit
    if len(every) < k * n:
        _fail("--slices", f"the trace holds {len(every)} jobs after the filters, fewer than {k} x {n}")
    out = []
    for i in range(k):
        part = every[i * n:(i + 1) * n]
        base = part[0].submit
        out.append([dc_replace(tj, submit=tj.submit - base) for tj in part])
    return out


def _sha256(path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _inputs(args, trace) -> dict[str, str]:
    """SHA-256 of every input file: the trace or workload, the load curve, the throughput profiles, and for a
    Pollux workload the measurements of its applications."""
    from importlib import resources

    files = {}
    if args.trace and args.trace != "-":  # standard input: read once, not hashed
        files[args.trace] = args.trace
    if args.load and args.load != "-":
        files[args.load] = args.load
    prof = resources.files("lyra_solver").joinpath("data/profiles.json")
    files["lyra_solver/data/profiles.json"] = str(prof)
    if args.pollux_workload is not None:
        root = Path(args.pollux_data) if args.pollux_data else _data_dir() / "pollux"
        w = args.pollux_workload
        wpath = root / "workloads" / f"workload-{w}.csv" if w.isdigit() else Path(w)
        if w != "-":
            files[str(wpath)] = str(wpath)
        for app in sorted({tj.app for tj in trace}):
            for sub in ("validation", "throughput"):
                for f in sorted((root / sub / app).glob("*.csv")):
                    files[str(f)] = str(f)
    return {label: _sha256(path) for label, path in sorted(files.items())}


def run(args) -> int:
    from lyra_solver.bench.sim.policies import get_policy

    _validate(args)
    _check_more(args)
    policies = [args.policy] if args.policy else list(dict.fromkeys(args.compare))
    for p in policies:
        get_policy(p)  # unknown name or packing not available: exit 2 before any work
    if args.objective:
        _check_objectives(args.objective)
        if not any(allocates(p) for p in policies):
            _fail("--objective", "none of the policies allocates (elastic, lyra, lyra-exact, ... take an objective)")
    policies = _labels(policies, args.objective)
    if args.address is not None and args.backend != "ray":
        _fail("--address", "only with --backend ray")
    if args.backend == "ray":
        _need_ray()
    if args.sweep is None:
        _compare(args, policies)
        return 0
    return _sweep(args, policies)


def _sweep(args, policies) -> int:
    """``--sweep``: the comparison at each point (a failing point is recorded and the others run), then
    sweep.json, sweep.png and a table of the mean JCT ratios."""
    from lyra_solver.bench.sim.sweep import parse_sweep, run_sweep, sweep_table, write_sweep

    sweep = parse_sweep(args.sweep)
    if args.trace is None:
        _fail("--sweep", "needs --trace (a Pollux workload fixes its cluster)")
    base = "baseline" if "baseline" in policies else policies[0]
    refs = [base] + (["baseline-sjf"] if "baseline-sjf" in policies and base != "baseline-sjf" else [])
    out = Path(args.out) if args.out else Path(".")
    points = len(sweep.values)
    if args.max_work:  # every point within its share of --max-work before any runs
        import copy

        for v in sweep.values:
            a = copy.copy(args)
            setattr(a, sweep.dest, v)
            try:
                _, config, traces = _prepare(a)
            except Exception:  # noqa: BLE001 - the point fails when it runs and is recorded there, as before
                continue
            _bounded(a, traces, config, policies, share=points)
    doc = run_sweep(args, sweep, lambda a: _compare(a, policies, heading=f"{sweep.name}={getattr(a, sweep.dest)}",
                                                    share=points), refs, out=out if args.out else None)
    written = write_sweep(out, doc)
    print(f"\n## sweep over {sweep.name}: mean JCT ratios (mean [95% interval] over the runs)\n")
    print(sweep_table(doc))
    print(f"\nwrote {', '.join(str(w) for w in written)}", file=sys.stderr)
    if doc["failed"]:
        print(f"sweep: {len(doc['failed'])} of {len(sweep.values)} points failed ("
              + ", ".join(f"{sweep.name}={v}" for v in doc["failed"]) + "); the others are in sweep.json",
              file=sys.stderr)
        return 1
    return 0


def _bounded(args, traces, config, policies, share: int = 1) -> list:
    """The configuration of each slice's runs, each run stopped past its part of the work: ``--max-work`` (a
    policy of :data:`POLICY_WORK` ``w`` its ``w``-th part) while the command has at most :data:`FULL_RUNS`
    weighted runs (``share`` sweep points of them), else ``FULL_RUNS x --max-work`` shared equally; less
    :data:`RUN_WORK` and :data:`MAP_WORK` a job. Exit 2 (``--max-work``) before any run when the command has more
    than :data:`MAX_RUNS` runs or one run's :func:`.engine.least_work` already passes its part."""
    from dataclasses import replace as dc_replace

    from lyra_solver.bench.sim.engine import least_work

    if not args.max_work:
        return [config] * len(traces)
    count = len(policies) * args.seeds * len(traces) * share
    if count > MAX_RUNS:
        _fail("--max-work", f"{count:,} runs ({len(policies)} policies x {args.seeds} seeds x {len(traces)} slices"
              f"{f' x {share} sweep points' if share > 1 else ''}), at most {MAX_RUNS}: use fewer seeds, "
              "policies, slices or sweep points, or --max-work 0 (no bound)")
    weights = [POLICY_WORK.get(p.partition("@")[0], 1) for p in policies]
    runs = sum(weights) * args.seeds * len(traces) * share
    each = min(args.max_work // max(weights), FULL_RUNS * args.max_work // runs) - RUN_WORK
    least = max(least_work(_least_specs(t, args, config), config) + MAP_WORK * len(t) for t in traces)
    if least > each:
        jobs = max(len(t) for t in traces)
        shared = f", {FULL_RUNS} x it shared by {runs:,} weighted runs" if runs > FULL_RUNS else ""
        _fail("--max-work", f"each run may do {max(each, 0):,} work units (--max-work {args.max_work:,}{shared}: "
              f"{len(policies)} policies x {args.seeds} seeds x {len(traces)} slices"
              f"{f' x {share} sweep points' if share > 1 else ''}), but a replay of {jobs} jobs at --interval "
              f"{config.interval:g} s on {config.training_servers} + {config.inference_servers} servers needs at "
              f"least {least:,} (README 'Bound on the work'): use fewer seeds, policies, slices or servers, a "
              "shorter trace, a longer --interval, or a larger --max-work (0: no bound)")
    return [dc_replace(config, max_work=each - MAP_WORK * len(t)) for t in traces]


def _least_specs(trace, args, config) -> list:
    """Jobs for :func:`.engine.least_work` of every seed's mapping: a Pollux row mapped (its duration comes from
    its model), a Philly row at its widest range (``ceil(g/2)..max(g, min(2g, 64))``, whether it is drawn elastic
    or not: the least work of any draw), without hashing every row as :func:`.traces.map_jobs` does."""
    from lyra_solver.bench.sim.traces import SimJobSpec, map_jobs

    if any(tj.batch_size for tj in trace):
        return map_jobs(trace, seed=args.seed, server_gpus=config.server_gpus)
    return [SimJobSpec(id="", line=tj.line, submit=tj.submit, gpus=tj.gpus, duration=tj.duration, app="", work=0.0,
                       min_workers=-(-tj.gpus // 2), max_workers=max(tj.gpus, min(2 * tj.gpus, 64)),
                       restart_penalty=0.0, preemption_penalty=0.0) for tj in trace]


def _prepare(args):
    """The first slice's trace, the cluster configuration and every slice at the load factor."""
    from lyra_solver.bench.sim.sweep import scale_arrivals

    trace, config = _setup(args)
    return trace, config, [scale_arrivals(t, args.load_factor) for t in _slices(args, trace)]


def _compare(args, policies, heading: str | None = None, share: int = 1):
    """One comparison (every policy x seed x slice) on the options of ``args``: prints the table, writes --out, returns
    the :class:`~lyra_solver.bench.sim.sweep.PointResult`."""
    from lyra_solver.bench.sim.report import combine, markdown_table, ratios, write_outputs
    from lyra_solver.bench.sim.sweep import PointResult

    trace, config, traces = _prepare(args)
    mapping = {"elastic_share": args.elastic_share, "restart_penalty": args.restart_penalty,
               "preemption_penalty": args.preemption_penalty, "deadline_factor": list(args.deadline_range)}
    if args.packing:
        mapping["packing"] = {k: list(v) for k, v in sorted(args.packing.items())}
    source = _gpu_util_source(args.packing_profiles, policies)
    if source is not None:
        mapping["gpu_util_source"] = source
    seeds = list(range(args.seed, args.seed + args.seeds))
    runs = [(s, k) for k in range(len(traces)) for s in seeds]
    tasks = [(p, s, k) for p in policies for s, k in runs]
    configs = _bounded(args, traces, config, policies, share=share)
    t0 = time.perf_counter()
    from lyra_solver.bench.sim.engine import ReplayTooLong

    try:
        results = _run_all(tasks, traces, configs, mapping, args)
    except ReplayTooLong as err:
        from lyra_solver.errors import InputError

        spent = InputError("--max-work", str(err))
        spent.stops_sweep = True  # the command's bound, not the point's: a sweep stops (sweep.run_sweep)
        raise spent from None
    wall = time.perf_counter() - t0
    summaries = {p: combine([results[(p, s, k)][0] for s, k in runs]) for p in policies}
    for p in policies:  # the allocation objective of each policy that allocates
        if allocates(p.partition("@")[0]):
            summaries[p]["objective"] = policy_of(p).decide_options(1.0).objective
    timings = {p: [results[(p, s, k)][1] for s, k in runs] for p in policies}
    base = "baseline" if "baseline" in policies else policies[0]
    rat = ratios({p: [results[(p, s, k)][0] for s, k in runs] for p in policies})
    if heading:
        print(f"\n## {heading}\n")
    print(markdown_table(summaries, timings, baseline=base, ratios=rat))
    print(f"{sum(len(t) for t in traces)} jobs, {len(tasks)} runs, {wall:.1f} s wall "
          f"({datetime.now(UTC).strftime('%Y-%m-%d')})", file=sys.stderr)
    if args.out:
        pw = args.pollux_workload
        meta = {"trace": args.trace or (f"pollux workload {pw}" if pw.isdigit() else pw), "jobs": len(trace),
                "slices": len(traces), "inputs": _inputs(args, trace), "load_mode": args.load_mode,
                "load_per_server": args.load_per_server,
                "start": args.start, "end": args.end, "cluster": args.cluster, "limit": args.limit,
                "load": args.load, "load_window": args.load_window, "seeds": seeds,
                "training_servers": config.training_servers, "inference_servers": config.inference_servers,
                "server_gpus": config.server_gpus, "interval": config.interval, "mapping": mapping,
                "load_factor": args.load_factor,
                **({"preset": args.preset, "event_rounds": config.event_rounds,
                    "round_origin": config.round_origin, "start_penalty": config.start_penalty,
                    "round_epochs": config.round_epochs}
                   if getattr(args, "preset", None) else {}),
                **({"tiresias_threshold": config.tiresias_threshold,
                    "tiresias_starve_limit": config.tiresias_starve_limit} if "tiresias" in policies else {}),
                # named only where it is not the default (summaries of the default rule are unchanged)
                **({"tiresias_mode": config.tiresias_mode}
                   if "tiresias" in policies and config.tiresias_mode != "two-queue" else {}),
                "baseline": base}
        first = {p: results[(p, seeds[0], 0)][2] for p in policies}
        write_outputs(Path(args.out), summaries, timings, first, config, meta, ratios=rat)
    return PointResult(summaries=summaries, runs={p: [results[(p, s, k)][0] for s, k in runs] for p in policies})
