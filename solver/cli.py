"""The ``lyra-solver`` command line: a thin argparse layer over the library.

Exit codes: 0 done; 1 a check failed or no feasible answer; 2 bad input or usage (one line on stderr naming
the file, the field path and the problem); 3 an internal error (a bug: one line, no traceback, unless
``LYRA_DEBUG=1``). Input files are only read; outputs are written whole or not at all.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import sys
import time
from pathlib import Path

from lyra_solver import __version__, io
from lyra_solver.argparsing import UsageError, _Help, _Parser, int_at_least, positive_float
from lyra_solver.errors import InputError, escape
from lyra_solver.formulations.vocabulary import (
    ALLOCATIONS,
    MCKP_METHODS,
    OBJECTIVES,
    PACKING_POLICIES,
    PACKINGS,
    PLACEMENTS,
    QUEUE_ORDERS,
    RECLAIMS,
)
from lyra_solver.logsetup import configure_logging, verbosity_of
from lyra_solver.ops import TABLE_IDS, decision_table  # noqa: F401  (moved to ops, where decide's paths live)
from lyra_solver.types import SCHEMAS

log = logging.getLogger("lyra_solver.cli")

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


def _out_guard(out: str | None, inputs: list[str]) -> None:
    if not out or out == "-":
        return
    target = Path(out).resolve()
    for src in inputs:
        if src != "-" and Path(src).resolve() == target:
            raise InputError("$", f"refusing to overwrite the input file with -o {out}", src)


def _name(source: str) -> str:
    return "<stdin>" if source == "-" else source


def cmd_decide(args) -> int:
    from lyra_solver import ops

    _out_guard(args.output, [args.snapshot])
    out = ops.decide(io.read_bytes(args.snapshot), args, _name(args.snapshot))
    io.write_atomic(args.output or "-", out.data)
    return out.code


def cmd_check(args) -> int:
    from lyra_solver import ops

    if args.snapshot == "-" and args.decision == "-":
        raise UsageError("lyra-solver check: the snapshot and the decision cannot both be standard input (-)")
    snap_bytes = io.read_bytes(args.snapshot)
    dec_bytes = io.read_bytes(args.decision)
    out = ops.check(snap_bytes, dec_bytes, args.snapshot, _name(args.decision))
    io.write_atomic("-", out.data)
    if out.note:
        print(out.note, file=sys.stderr)
    return out.code


def cmd_mckp(args) -> int:
    from lyra_solver import ops

    _out_guard(args.output, [args.instance])
    out = ops.mckp(io.read_bytes(args.instance), args, _name(args.instance))
    io.write_atomic(args.output or "-", out.data)
    return out.code


def cmd_schema(args) -> int:
    from lyra_solver import ops

    io.write_atomic(args.output or "-", ops.schema(args.what).data)
    return EXIT_OK


#: ``generate`` makes a snapshot (the default) or an MCKP instance; the options of each kind, with their defaults.
GENERATE_OPTIONS = {
    "snapshot": {"servers": 100, "jobs": 300, "gpus": 8},
    "mckp": {"classes": 100, "items": 10, "kind": "cluster", "range": 1000, "capacity_fraction": 0.3},
}
#: ``generate mckp --kind``: the cluster value tables of the engine's scale step, or one of Pisinger's classes.
MCKP_KINDS = ("cluster", "uncorrelated", "weakly", "strongly", "subset-sum", "zigzag", "strongly-kp",
              "uncorrelated-binding")
#: Most items (classes x items per class) ``generate mckp`` makes (it holds the instance in memory).
MAX_MCKP_ITEMS = 10_000_000


def cmd_generate(args) -> int:
    what = args.what
    for kind, opts in GENERATE_OPTIONS.items():
        for name, default in opts.items():
            if getattr(args, name) is None:
                setattr(args, name, default)
            elif kind != what:
                raise UsageError(f"lyra-solver generate: --{name.replace('_', '-')}: only with "
                                 f"`lyra-solver generate {kind}`")
    if what == "mckp":
        data = generate_mckp(classes=args.classes, items=args.items, kind=args.kind, seed=args.seed,
                             coefficient_range=args.range, capacity_fraction=args.capacity_fraction)
        io.write_atomic(args.output or "-", data)
        return EXIT_OK
    from lyra_solver.bench.generate import generate_snapshot

    with _progress(args, total=args.jobs, desc="generate", unit="job") as bar:
        try:
            snap = generate_snapshot(servers=args.servers, jobs=args.jobs, seed=args.seed, gpus=args.gpus,
                                     progress=bar.update if bar is not None else None)
        except ValueError as err:
            raise UsageError(f"lyra-solver generate: --{err}") from None
    io.write_atomic(args.output or "-", io.encode(snap))
    return EXIT_OK


def generate_mckp(*, classes: int, items: int, kind: str = "cluster", seed: int = 0, coefficient_range: int = 1000,
                  capacity_fraction: float = 0.3) -> bytes:
    """An MCKP instance (the ``mckp`` command's input format) as canonical JSON bytes, a pure function of its
    arguments.

    ``kind`` ``cluster`` is :func:`lyra_solver.bench.mckp_instances.cluster` (non-concave value tables of elastic
    jobs, ``items`` the most options per job, capacity ``capacity_fraction`` of the summed largest weights); the
    others are Pisinger's classes (:func:`lyra_solver.bench.mckp_instances.pisinger`, coefficients in
    ``1..coefficient_range``, his capacity). Bad arguments raise :class:`UsageError` naming the flag.

    Running time O(classes x items).
    """
    from lyra_solver.bench.mckp_instances import cluster, pisinger
    from lyra_solver.types import MCKPClass, MCKPInstance

    for flag, value in (("--classes", classes), ("--items", items), ("--range", coefficient_range)):
        if value < 1:
            raise UsageError(f"lyra-solver generate: {flag}: must be >= 1, got {value}")
    if classes * items > MAX_MCKP_ITEMS:
        raise UsageError(f"lyra-solver generate: --classes x --items: at most {MAX_MCKP_ITEMS:,} items, got "
                         f"{classes * items:,}")
    if not 0 < capacity_fraction <= 1:
        raise UsageError(f"lyra-solver generate: --capacity-fraction: must be in (0, 1], got {capacity_fraction}")
    if kind not in MCKP_KINDS:
        raise UsageError(f"lyra-solver generate: --kind: expected one of {', '.join(MCKP_KINDS)}, got {kind!r}")
    if kind == "cluster":
        problem = cluster(classes, items, concave=False, seed=seed, capacity_fraction=capacity_fraction)
    else:
        problem = pisinger(kind.replace("-", "_"), classes, items, R=coefficient_range, seed=seed)
    sizes = problem.sizes.tolist()
    weights, values = problem.weights.tolist(), problem.values.tolist()
    inst = MCKPInstance(capacity=int(problem.capacity),
                        classes=[MCKPClass(weights=weights[i][:n], values=values[i][:n]) for i, n in enumerate(sizes)])
    return io.encode(inst)


#: Work (jobs to make, rounds, ...) from which a command shows a progress bar on a terminal.
PROGRESS_FROM = 5_000


@contextlib.contextmanager
def _progress(args, *, total: int, desc: str, unit: str):
    """A tqdm bar on standard error for ``total`` steps, or None: small work, or the progress rule says none
    (:func:`lyra_solver.bench.progress.wanted`: ``-q``, ``--no-progress``, standard error not a terminal without
    ``--progress``)."""
    from lyra_solver.bench.progress import bar, wanted

    with bar(total, desc, unit, enabled=total >= PROGRESS_FROM and wanted(args)) as b:
        yield b


def _bench(rest: list[str]) -> int:
    """``lyra-solver bench REST...``: the fuzzer for ``bench fuzz``, else the harness (each parses its own options)."""
    if rest and rest[0] == "fuzz":  # `lyra-solver bench fuzz`: hostile inputs through this command line
        from lyra_solver.bench.fuzz import main as fuzz_main

        return fuzz_main([a for a in rest[1:] if a not in COMMON_FLAGS], prog="lyra-solver bench fuzz")
    from lyra_solver.bench.harness import main as run

    return run(rest)


def cmd_bench(args) -> int:
    return _bench(args.rest)


#: Files ``simulate --out`` writes (under ``--force``, removed from the folder before the run).
SIMULATE_OUTPUTS = ("summary.json", "timings.json", "jobs-*.csv", "jct_cdf.png", "timeline.png")


def cmd_serve(args) -> int:
    from lyra_solver.serve import run

    return run(args, build_parser)


def cmd_simulate(args) -> int:
    from lyra_solver.bench.outputs import check_out_dir
    from lyra_solver.bench.sim.cli import run

    _simulate_flags(args)
    if args.data_dir is not None:
        from lyra_solver.bench.datapath import set_data_dir

        set_data_dir(args.data_dir)
    check_out_dir(args.out, "--out", force=args.force, patterns=SIMULATE_OUTPUTS)  # before any work
    return run(args)


def _simulate_flags(args) -> None:
    """Flags of ``simulate`` that its own checks let through: NaN or infinite numbers, dates that are not ISO."""
    from datetime import datetime

    for name, value in sorted(vars(args).items()):
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"--{name.replace('_', '-')}", f"must be a finite number, got {value}")
    for name in ("start", "end"):
        text = getattr(args, name, None)
        if text is not None:
            try:
                datetime.fromisoformat(text)
            except ValueError:
                raise InputError(f"--{name}", f"not an ISO date or date-time (e.g. 2017-10-03 or "
                                              f"2017-10-03T12:00): {text!r}") from None


def cmd_completion(args) -> int:
    try:
        import shtab
    except ImportError:
        raise UsageError("lyra-solver completion: needs shtab (pip install 'lyra-solver[completion]')") from None
    script = shtab.complete(build_parser(), shell=args.shell)
    io.write_atomic(args.output or "-", (script.rstrip("\n") + "\n").encode())
    return EXIT_OK


#: The options that every command takes, before or after its name (``-q bench`` is ``bench -q``).
COMMON_FLAGS = ("-q", "--quiet", "-v", "-vv", "-vvv", "--verbose", "--progress", "--no-progress")


def _common() -> argparse.ArgumentParser:
    """Options of every subcommand: verbosity and progress."""
    c = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    g = c.add_mutually_exclusive_group()
    g.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                   help="log what each step does on standard error (-vv: debug lines too)")
    g.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                   help="only errors on standard error (no warnings, no progress bar)")
    p = c.add_mutually_exclusive_group()
    p.add_argument("--progress", dest="progress", action="store_true", default=argparse.SUPPRESS,
                   help="a progress bar on standard error even when it is not a terminal")
    p.add_argument("--no-progress", dest="progress", action="store_false", default=argparse.SUPPRESS,
                   help="no progress bar (default: a bar for long work when standard error is a terminal)")
    return c


def _add(sub, name: str, help_: str, run, **kw) -> argparse.ArgumentParser:
    """A subcommand with the common options; other commands (simulate, bench, ...) are added the same way."""
    p = sub.add_parser(name, help=help_, description=help_, parents=[_common()], formatter_class=_Help,
                       allow_abbrev=False, **kw)
    p.set_defaults(run=run)
    return p


def _output(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("-o", "--output", metavar="FILE",
                   help=f"write {what} here, whole or not at all (default: standard output)")


def _decide_arguments(d: argparse.ArgumentParser) -> None:
    d.add_argument("snapshot", help="snapshot JSON file, - for standard input")
    _output(d, "the decision")
    d.add_argument("--queue", choices=QUEUE_ORDERS,
                   help="admission order (default: the snapshot's options.queue, else sjf)")
    d.add_argument("--allocation", choices=ALLOCATIONS,
                   help="elastic scaling: exact MCKP or a heuristic (default: options.allocation, else exact)")
    d.add_argument("--reclaim", choices=RECLAIMS,
                   help="which loaned servers to return (default: options.reclaim, else greedy)")
    d.add_argument("--placement", choices=PLACEMENTS,
                   help="best fit decreasing or the placement ILP (default: options.placement, else bfd)")
    d.add_argument("--packing", choices=PACKINGS,
                   help="step 6, GPU sharing after placement: pack waiting jobs onto running jobs' GPUs "
                        "(default: options.packing, else off)")
    d.add_argument("--packing-policy", choices=PACKING_POLICIES,
                   help="objective of packing (default: options.packing_policy, else jct)")
    d.add_argument("--objective", choices=OBJECTIVES,
                   help="the allocation's value table (default: options.objective, else jct-reduction, Lyra's; "
                        "see lyra_solver.objectives)")
    d.add_argument("--time-limit", type=_positive_float, metavar="S",
                   help="seconds for the exact steps of the round together (default: options.time_limit, else 1.0)")
    d.add_argument("--format", choices=FORMATS, default="json",
                   help="json: canonical one-line JSON; pretty: indented JSON; table: what changes, for a person")
    d.add_argument("--timings", action="store_true", help="add summary.time_s (output then varies run to run)")
    d.add_argument("--backend", choices=["auto", "numpy", "torch", "cupy"], default="auto",
                   help="value-table array library (auto: a GPU only for large tables)")
    d.add_argument("--deterministic", action="store_true",
                   help="exact steps on deterministic limits (CP-SAT deterministic time, one worker, fixed seed): "
                        "the same answer under any machine load; wall time may then exceed --time-limit")


def _check_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument("snapshot", help="snapshot JSON file, - for standard input")
    c.add_argument("decision", help="decision JSON file, - for standard input (not both)")


def _mckp_arguments(m: argparse.ArgumentParser) -> None:
    m.add_argument("instance", help="MCKP instance JSON (as `lyra-solver generate mckp` writes), - for standard input")
    m.add_argument("--method", default="auto", choices=MCKP_METHODS, help="exact method or heuristic")
    m.add_argument("--time-limit", type=_positive_float, metavar="S",
                   help="seconds; when hit, the best answer so far with its bound (default: no limit)")
    _output(m, "the answer")
    m.add_argument("--timings", action="store_true", help="add time_s to the answer")


def _schema_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("what", choices=sorted(SCHEMAS), help="which format")
    _output(s, "the schema")


def _generate_arguments(g: argparse.ArgumentParser) -> None:
    snap, mckp = GENERATE_OPTIONS["snapshot"], GENERATE_OPTIONS["mckp"]
    g.add_argument("what", nargs="?", choices=tuple(GENERATE_OPTIONS), default="snapshot",
                   help="what to make: a snapshot (for decide) or an MCKP instance (for mckp)")
    g.add_argument("--seed", type=_nonneg_int, default=0, help="random seed (same seed, same bytes)")
    _output(g, "the snapshot or instance")
    s = g.add_argument_group("generate snapshot")
    s.add_argument("--servers", type=int, help=f"servers, half training and half inference (default {snap['servers']})")
    s.add_argument("--jobs", type=int, help=f"training jobs, about half of them running (default {snap['jobs']})")
    s.add_argument("--gpus", type=int, help=f"GPUs per server (default {snap['gpus']})")
    m = g.add_argument_group("generate mckp")
    m.add_argument("--classes", type=int, metavar="N", help=f"classes (jobs) (default {mckp['classes']})")
    m.add_argument("--items", type=int, metavar="K",
                   help=f"items per class (cluster: the most options of a job) (default {mckp['items']})")
    m.add_argument("--kind", choices=MCKP_KINDS,
                   help="cluster: non-concave value tables of elastic jobs, as the engine's scale step sees them; "
                        f"the others: Pisinger's classes (default {mckp['kind']})")
    m.add_argument("--range", type=int, metavar="R",
                   help=f"Pisinger kinds: weights and values in 1..R (default {mckp['range']})")
    m.add_argument("--capacity-fraction", type=float, metavar="F",
                   help="cluster: capacity as a share of the summed heaviest items "
                        f"(default {mckp['capacity_fraction']})")


def _simulate_cli_arguments(p: argparse.ArgumentParser) -> None:
    """What the command line adds to the simulator's own options (:mod:`lyra_solver.bench.sim.cli`)."""
    p.add_argument("--force", action="store_true",
                   help="write into an --out folder that is not empty (the files of an earlier run there are "
                        "removed first)")
    p.add_argument("--data-dir", metavar="DIR",
                   help="folder of the data sets (philly/, alibaba/, pollux/) (default: $LYRA_SOLVER_DATA, else "
                        "../shared/data beside the repository)")


def _completion_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument("shell", choices=("bash", "zsh", "tcsh"), help="the shell to complete in")
    _output(c, "the script")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="lyra-solver", description="Decision engine for deep-learning GPU clusters.",
                parents=[_common()], formatter_class=_Help, allow_abbrev=False)
    p.add_argument("-V", "--version", action="version", version=f"%(prog)s {__version__}",
                   help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    _decide_arguments(_add(sub, "decide", "one scheduling round: snapshot -> decision", cmd_decide))
    _check_arguments(_add(sub, "check", "independent feasibility check of a decision (exit 1 naming each broken "
                                        "rule, exit 2 when it is not a decision)", cmd_check))
    _mckp_arguments(_add(sub, "mckp", "solve a multiple-choice knapsack instance", cmd_mckp))
    _schema_arguments(_add(sub, "schema", "JSON Schema of a format", cmd_schema))
    _generate_arguments(_add(sub, "generate", "a random valid snapshot or MCKP instance (seeded)", cmd_generate))

    from lyra_solver.bench.sim.cli import add_arguments as simulate_arguments

    sim = _add(sub, "simulate", "replay a trace through the engine: metrics, summary.json, plots", cmd_simulate)
    simulate_arguments(sim)
    _simulate_cli_arguments(sim)

    from lyra_solver.serve import add_arguments as serve_arguments

    serve_arguments(_add(sub, "serve", "the engine as an HTTP/1.1 JSON service (pip install 'lyra-solver[serve]'): "
                                       "POST /v1/decide, /v1/check, /v1/mckp, /v1/apply; GET /healthz, /readyz, "
                                       "/metrics", cmd_serve))

    # `bench` parses its own arguments (lyra_solver.bench.harness); main() hands them over unparsed.
    b = sub.add_parser("bench", add_help=False,
                       help="optimality gaps and speed of every method: tables, results.json, plots "
                            "(lyra-solver bench --help)")
    b.add_argument("rest", nargs=argparse.REMAINDER)
    b.set_defaults(run=cmd_bench)
    _completion_arguments(_add(sub, "completion", "shell completion script (needs shtab: the extra 'completion')",
                               cmd_completion))
    return p


#: Output formats of ``decide``.
FORMATS = ("json", "pretty", "table")

_positive_float, _nonneg_int = positive_float, int_at_least(0)


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    first = next((i for i, a in enumerate(args_list) if not a.startswith("-")), None)
    if first is not None and args_list[first:first + 2] == ["bench", "serve"]:  # the service under load
        from lyra_solver.bench.serve import main as serve_bench

        return serve_bench(args_list[first + 2:])
    if (first is not None and args_list[first] == "bench"
            and all(a in COMMON_FLAGS for a in args_list[:first])):  # the harness parses its own options
        return _bench(args_list[first + 1:] + args_list[:first])  # `-q bench X` is `bench X -q`
    try:
        args = build_parser().parse_args(argv)
    except UsageError as err:
        _say(f"error: {err}")
        return EXIT_INPUT
    # the project's loggers at the level asked; other libraries' only from warnings (their debug lines are noise)
    configure_logging("lyra-solver", verbosity_of(args))
    log.debug("%s: %s", args.command, {k: v for k, v in sorted(vars(args).items()) if k not in ("run", "command")})
    t0 = time.perf_counter()
    try:
        code = args.run(args)
        _flush_stdout()
        log.debug("%s: exit %d after %.3f s", args.command, code, time.perf_counter() - t0)
        return code
    except UsageError as err:
        _say(f"error: {err}")
        return EXIT_INPUT
    except InputError as err:
        _say(f"error: {err.line()}")
        return EXIT_INPUT
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except OSError as err:  # the environment (a stream or file), not a bug: name it
        where = escape(str(err.filename)) if err.filename else "an input/output stream"
        _say(f"error: {where}: {err.strerror or err}")
        return EXIT_INPUT
    except MemoryError:
        _say("error: out of memory (the input is too large for this machine's memory or limits)")
        return EXIT_INPUT
    except Exception as err:  # never a traceback for the user
        if os.environ.get("LYRA_DEBUG"):
            raise
        _say(f"error: internal error ({type(err).__name__}: {err}); rerun with LYRA_DEBUG=1 for details")
        return EXIT_INTERNAL


def _say(line: str) -> None:
    """One line on standard error, escaped (no newline or terminal code from the input gets through)."""
    if sys.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            print(escape(line), file=sys.stderr)


def _flush_stdout() -> None:
    """Flush what a command printed: a full or closed standard output is bad input on ``<stdout>``."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as err:
        _quiet_stdout()
        raise InputError("$", f"cannot write: {getattr(err, 'strerror', None) or err}", "<stdout>") from None


def _quiet_stdout() -> None:
    """Point standard output at /dev/null so that the interpreter's final flush cannot fail again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


if __name__ == "__main__":
    raise SystemExit(main())
