"""The ``lyra-solver`` command line: a thin argparse layer over the library.

Exit codes: 0 done; 1 a check failed or no feasible answer; 2 bad input or usage (one line on stderr naming
the file, the field path and the problem); 3 an internal error (a bug: one line, no traceback, unless
``LYRA_DEBUG=1``). Input files are only read; outputs are written whole or not at all.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from pathlib import Path

from lyra_solver import __version__, io
from lyra_solver.errors import InputError, escape
from lyra_solver.formulations.vocabulary import (
    ALLOCATIONS,
    MCKP_METHODS,
    PACKING_POLICIES,
    PACKINGS,
    PLACEMENTS,
    QUEUE_ORDERS,
    RECLAIMS,
)
from lyra_solver.ops import TABLE_IDS, decision_table  # noqa: F401  (moved to ops, where decide's paths live)
from lyra_solver.types import SCHEMAS

log = logging.getLogger("lyra_solver.cli")

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        raise UsageError(f"{self.prog}: {message} (see --help)")


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

    io.write_atomic("-", ops.schema(args.what).data)
    return EXIT_OK


def cmd_generate(args) -> int:
    from lyra_solver.bench.generate import generate_snapshot

    with _progress(args, total=args.jobs, desc="generate", unit="job") as bar:
        try:
            snap = generate_snapshot(servers=args.servers, jobs=args.jobs, seed=args.seed, gpus=args.gpus,
                                     progress=bar.update if bar is not None else None)
        except ValueError as err:
            raise UsageError(f"lyra-solver generate: --{err}") from None
    io.write_atomic(args.output or "-", io.encode(snap))
    return EXIT_OK


#: Work (jobs to make, rounds, ...) from which a command shows a progress bar on a terminal.
PROGRESS_FROM = 5_000


@contextlib.contextmanager
def _progress(args, *, total: int, desc: str, unit: str):
    """A tqdm bar on standard error for ``total`` steps, or None (small work, ``-q``, or not a terminal)."""
    if getattr(args, "quiet", False) or total < PROGRESS_FROM:
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, disable=None)
    try:
        yield bar
    finally:
        bar.close()


def cmd_bench(args) -> int:
    from lyra_solver.bench.harness import main as run

    return run(args.rest)


def cmd_serve(args) -> int:
    from lyra_solver.serve import run

    return run(args)


def cmd_simulate(args) -> int:
    from lyra_solver.bench.sim.cli import run

    return run(args)


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default where it has one (not for flags, nor where the help already says it)."""

    def _get_help_string(self, action):
        if action.default in (None, False) or action.default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


def _common() -> argparse.ArgumentParser:
    """Options of every subcommand: verbosity."""
    c = argparse.ArgumentParser(add_help=False)
    g = c.add_mutually_exclusive_group()
    g.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                   help="log what each step does on standard error (-vv: more)")
    g.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                   help="only errors on standard error (no warnings, no progress bar)")
    return c


def _add(sub, name: str, help_: str, run, **kw) -> argparse.ArgumentParser:
    """A subcommand with the common options; other commands (simulate, bench, ...) are added the same way."""
    p = sub.add_parser(name, help=help_, description=help_, parents=[_common()], formatter_class=_Help, **kw)
    p.set_defaults(run=run)
    return p


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="lyra-solver", description="Decision engine for deep-learning GPU clusters.",
                parents=[_common()], formatter_class=_Help)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}",
                   help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    d = _add(sub, "decide", "one scheduling round: snapshot -> decision", cmd_decide)
    d.add_argument("snapshot", help="snapshot JSON file, - for standard input")
    d.add_argument("-o", "--output", help="write the decision here (default: standard output)")
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

    c = _add(sub, "check", "independent feasibility check of a decision (exit 1 naming each broken rule)",
             cmd_check)
    c.add_argument("snapshot", help="snapshot JSON file, - for standard input")
    c.add_argument("decision", help="decision JSON file, - for standard input")

    m = _add(sub, "mckp", "solve a multiple-choice knapsack instance", cmd_mckp)
    m.add_argument("instance", help="MCKP instance JSON, - for standard input")
    m.add_argument("--method", default="auto", choices=MCKP_METHODS, help="exact method or heuristic")
    m.add_argument("--time-limit", type=_positive_float, metavar="S",
                   help="seconds; when hit, the best answer so far with its bound (default: no limit)")
    m.add_argument("-o", "--output", help="write the answer here (default: standard output)")
    m.add_argument("--timings", action="store_true", help="add time_s to the answer")

    s = _add(sub, "schema", "JSON Schema of a format", cmd_schema)
    s.add_argument("what", choices=sorted(SCHEMAS), help="which format")

    g = _add(sub, "generate", "a random valid snapshot (seeded)", cmd_generate)
    g.add_argument("--servers", type=int, default=100, help="servers, half training and half inference")
    g.add_argument("--jobs", type=int, default=300, help="training jobs, about half of them running")
    g.add_argument("--gpus", type=int, default=8, help="GPUs per server")
    g.add_argument("--seed", type=int, default=0, help="random seed (same seed, same bytes)")
    g.add_argument("-o", "--output", help="write the snapshot here (default: standard output)")

    from lyra_solver.bench.sim.cli import add_arguments as simulate_arguments

    simulate_arguments(_add(sub, "simulate", "replay a trace through the engine: metrics, summary.json, plots",
                            cmd_simulate))

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
    return p


#: Output formats of ``decide``.
FORMATS = ("json", "pretty", "table")


def _positive_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not x > 0 or x == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return x


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    first = next((i for i, a in enumerate(args_list) if not a.startswith("-")), None)
    if first is not None and args_list[first:first + 2] == ["bench", "serve"]:  # the service under load
        from lyra_solver.bench.serve import main as serve_bench

        return serve_bench(args_list[first + 2:])
    if first is not None and args_list[first] == "bench":  # the harness parses its own options
        from lyra_solver.bench.harness import main as bench_main

        return bench_main(args_list[first + 1:])
    try:
        args = build_parser().parse_args(argv)
    except UsageError as err:
        _say(f"error: {err}")
        return EXIT_INPUT
    verbose = getattr(args, "verbose", 0)
    level = logging.ERROR if getattr(args, "quiet", False) else (
        logging.WARNING if not verbose else logging.INFO if verbose == 1 else logging.DEBUG)
    logging.basicConfig(level=level, format="lyra-solver: %(levelname)s: %(message)s")
    try:
        code = args.run(args)
        _flush_stdout()
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
