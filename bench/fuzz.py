"""Fuzz the command line with mutated snapshots and MCKP instances (issue 9).

``python -m lyra_solver.bench.fuzz --time 60 --seed 0`` mutates valid snapshots (from
:func:`lyra_solver.bench.generate.generate_snapshot`) and valid MCKP instances for the given time, runs each
through the CLI in a subprocess under a memory limit (``RLIMIT_AS``) and a timeout, and reports every run that

- exits 3 (an internal error) or with any code outside 0, 1, 2 (a signal, the kernel's OOM killer);
- prints a traceback, or more than one line on standard error when it refuses (exit 2);
- runs past the timeout, or peaks above the memory limit (resident set);
- (``decide`` answers) gives a decision that ``lyra-solver check`` rejects.

The same seed gives the same cases in the same order. Exit 0 when nothing was found, 1 when something was
(each finding's input is kept under ``--out`` with a ``findings.json`` index), 2 on bad arguments.

Mutations: a field deleted, a value replaced by one of another type or an extreme (``2**31``, ``2**63``,
``1e308``, ``-1``, ``0``, ``""``, ids holding newlines or terminal escapes, very long strings, deep nesting),
a key repeated, numbers perturbed, the text truncated or a byte flipped, huge declared sizes
(``max_workers``, ``gpus``, ``capacity``), and MCKP values and weights near the float limits (``1e308``,
``2**53 + 1``).

Running time: the given ``--time`` plus at most one case's timeout.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import json
import logging
import math
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from lyra_solver.argparsing import int_at_least, positive_float
from lyra_solver.formulations.methods import JOINT, MCKP, PLACEMENT, RECLAIM, unique

_positive, _non_negative_int = positive_float, int_at_least(0)

log = logging.getLogger(__name__)

_EXTREMES = [0, -1, 1, 2**31 - 1, 2**31, 2**53 + 1, 2**63, 10**30, 1e308, -1e308, 5e-324, 0.5, "", "x", None, True,
             [], {}, "a\nb", "\x1b[31mred\x1b[0m", "x" * 10_000, [[[[[[[[[[[]]]]]]]]]]]]
_SIZE_FIELDS = ["max_workers", "min_workers", "gpus", "gpus_per_worker", "reclaim", "capacity"]


@dataclass(frozen=True)
class Finding:
    """One run that broke a promise: what ran, what came out, and why it counts."""

    case: int
    kind: str
    argv: list[str]
    input_file: str
    returncode: int | None
    problem: str
    stderr_tail: str
    seconds: float
    max_rss_mb: float


# ---------------------------------------------------------------------------------------------- mutation
def _paths(node, path=()):
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*path, i))


def _set(doc, path, value):
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def _delete(doc, path):
    node = doc
    for p in path[:-1]:
        node = node[p]
    if isinstance(node, dict):
        del node[path[-1]]
    else:
        node.pop(path[-1])


def mutate_document(doc: dict, rng: random.Random) -> bytes:
    """A few random mutations of ``doc`` (a JSON document as Python objects); the mutated JSON text."""
    doc = copy.deepcopy(doc)
    dup: tuple | None = None
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        paths = [p for p, _ in _paths(doc) if p]
        if not paths:
            break
        path = rng.choice(paths)
        op = rng.random()
        if op < 0.15:
            _delete(doc, path)
        elif op < 0.55:
            _set(doc, path, copy.deepcopy(rng.choice(_EXTREMES)))
        elif op < 0.7:
            sized = [p for p in paths if isinstance(p[-1], str) and p[-1] in _SIZE_FIELDS]
            if sized:
                _set(doc, rng.choice(sized), rng.choice([10**5, 10**6, 2**31 - 1, 2**40, 2**62]))
        elif op < 0.8:
            old = _get(doc, path)
            if isinstance(old, int | float) and not isinstance(old, bool):
                _set(doc, path, rng.choice([old * 10**rng.randint(1, 9), -old, old + 1, old - 1, float(old) / 3]))
        elif op < 0.9:
            objs = [p for p, v in _paths(doc) if isinstance(v, dict) and v]
            if objs:
                dup = rng.choice(objs)
        else:
            lists = [p for p, v in _paths(doc) if isinstance(v, list) and v and p]
            if lists:
                lp = rng.choice(lists)
                lst = _get(doc, lp)
                lst.append(copy.deepcopy(rng.choice(lst)))  # a repeated entry (same id)
    text = json.dumps(doc, allow_nan=True)
    if dup is not None:
        obj = _get(doc, dup)
        key = rng.choice(sorted(obj))
        inner = json.dumps(obj, allow_nan=True)
        text = text.replace(inner, "{" + json.dumps(key) + ": 0, " + inner[1:], 1)
    data = text.encode()
    r = rng.random()
    if r < 0.05 and data:
        data = data[: rng.randrange(len(data))]
    elif r < 0.1 and data:
        i = rng.randrange(len(data))
        data = data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
    return data


def _get(doc, path):
    node = doc
    for p in path:
        node = node[p]
    return node


def random_snapshot(rng: random.Random) -> dict:
    from lyra_solver.bench.generate import generate_snapshot

    options = None
    if rng.random() < 0.5:
        options = {"allocation": rng.choice(["exact", "greedy", "hull"]), "reclaim": rng.choice(["greedy", "exact"]),
                   "placement": rng.choice(["bfd", "exact"]), "time_limit": rng.choice([0.2, 1.0])}
    return generate_snapshot(servers=rng.randint(1, 30), jobs=rng.randint(0, 60), seed=rng.randrange(2**31),
                             gpus=rng.choice([1, 2, 4, 8, 16]), options=options)


def random_mckp(rng: random.Random) -> dict:
    classes = []
    for _ in range(rng.randint(0, 30)):
        k = rng.randint(1, 6)
        w = sorted(rng.randint(0, 20) for _ in range(k))
        classes.append({"weights": w, "values": [round(rng.uniform(-5, 50), 3) for _ in range(k)]})
    return {"capacity": rng.randint(0, 120), "classes": classes}


# ---------------------------------------------------------------------------------------------- running
def _limit(memory_mb: int):
    def preexec() -> None:
        limit = memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.setsid()  # a timeout kills the whole group

    return preexec


def run_cli(argv: list[str], *, memory_mb: int, timeout: float, cwd: str, module: str = "lyra_solver"
            ) -> tuple[int | None, bytes, bytes, float, float]:
    """Run ``python -m MODULE ARGV`` (default ``lyra-solver ARGV``) under the limits: (returncode or None on
    timeout, stdout, stderr, s, MB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", module, *argv], stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, cwd=cwd, preexec_fn=_limit(memory_mb))
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        rss_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
        code = None if timed_out.is_set() else proc.returncode
        return code, out.read(), err.read(), seconds, rss_mb


def judge(code: int | None, stderr: bytes, seconds: float, rss_mb: float, *, memory_mb: int) -> str | None:
    """Why a run broke a promise, or None."""
    text = stderr.decode("utf-8", "replace")
    if code is None:
        return "timeout"
    if "Traceback" in text:
        return "traceback"
    if code == 3:
        return "internal error (exit 3)"
    if code not in (0, 1, 2):
        return f"exit {code} (killed or crashed)"
    if rss_mb > memory_mb:
        return f"memory {rss_mb:.0f} MB above the limit"
    if code == 2:
        lines = text.strip("\n").split("\n")
        if len(lines) != 1 or not lines[0].startswith("error: "):
            return "exit 2 without exactly one error line"
        if not all(ch.isprintable() for ch in lines[0]):
            return "unescaped control character in the error line"
    return None


# ---------------------------------------------------------------------------------------------- forked runs
def _preload() -> None:
    """Import what every case needs once, in the fuzzing process: each forked case then starts in milliseconds."""
    import lyra_solver.bench.sim.cli  # noqa: F401
    import lyra_solver.bench.sim.engine  # noqa: F401
    import lyra_solver.check  # noqa: F401
    import lyra_solver.pipeline  # noqa: F401

    _cli_main()


@functools.cache
def _cli_main() -> Callable[[list[str]], int]:
    """The ``lyra-solver`` command's function, found as installed (its console-script entry point): the fuzzer
    drives the command line as a user's shell would, and imports no module of it (the command line dispatches
    ``bench fuzz`` here)."""
    from importlib.metadata import entry_points

    for script in entry_points(group="console_scripts", name="lyra-solver"):
        return script.load()
    raise RuntimeError("the lyra-solver command is not installed (pip install -e .)")


def run_forked(call, *, memory_mb: int, timeout: float, cwd: str, stdin: bytes | None = None
               ) -> tuple[int | None, bytes, bytes, float, float]:
    """Run ``call()`` (its return value is the exit code) in a forked child under the limits, its standard
    streams in files: (returncode or None on timeout, stdout, stderr, s, MB). The child is a process of its own
    (a crash, a leak or a hang cannot touch the fuzzer), without Python's start-up and imports."""
    import signal

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as inp:
        inp.write(stdin or b"")
        inp.seek(0)
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 3
            try:
                os.setsid()
                limit = memory_mb * 2**20
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
                os.chdir(cwd)
                for fd, fh in ((0, inp), (1, out), (2, err)):
                    os.dup2(fh.fileno(), fd)
                # fresh streams on the redirected descriptors (the parent's may be replaced, e.g. by pytest)
                sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the child ends with os._exit
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                logging.root.handlers.clear()  # the case configures its own logging, as the CLI would
                signal.alarm(max(1, math.ceil(timeout)))
                code = call()
                sys.stdout.flush()
                sys.stderr.flush()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
            except BaseException:  # noqa: BLE001 - a traceback is what the judge looks for
                import traceback

                traceback.print_exc()
                code = 3
            finally:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code if isinstance(code, int) and 0 <= code < 256 else 3)
        _, status, usage = os.wait4(pid, 0)
        seconds = time.perf_counter() - start
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        code = None if sig == signal.SIGALRM else os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read(), seconds, usage.ru_maxrss / 1024


def _cli_call(argv: list[str]):
    def call() -> int:
        return _cli_main()(argv)

    return call


# ---------------------------------------------------------------------------------------------- surfaces
#: The surfaces ``--surface`` chooses from: the CLI on snapshots and MCKP instances, the packing options (step 6's
#: snapshot fields, options and flags, and ``decide(keep_packing=...)``), and the simulator's trace CSV, load CSV
#: and flags.
SURFACES = ("cli", "packing", "trace", "load", "sim-flags")

_CSV_CELLS = ["", " ", "0", "-1", "1e300", "1e-300", "5e-324", "nan", "inf", "-inf", "Infinity", "1_000",
              "\u0661\u0662", "\uff11", "0x10", " 5", "5 ", "+3", "1e7", "10000001", "2147483648", "9" * 400, "\x00",
              '"', '""', "a\nb", "\x1b[2J", "2017-10-09T07:00:00+05:00", "2017-10-09 07:00:00-11:30",
              "9999-12-31 23:59:59", "0001-01-01 00:00:00", "2017-02-30 00:00:00", "2017-10-09", "1662859176.0",
              "x" * 10_000]
_PACKING_VALUES = [0, 1e-300, 0.5, 1, 1.0000001, 2, -1, 1e300, None, "x", "", [], {}, True, "a\nb", "x" * 5_000]


def random_trace_rows(rng: random.Random) -> list[list[str]]:
    """A small valid Philly-format trace (header first): a few jobs within hours, small sizes."""
    rows = [["timestamp", "duration", "num_gpus", "gpu_time", "cluster"]]
    t = 1_507_532_400 + rng.randint(0, 86_400)
    for _ in range(rng.randint(1, 12)):
        t += rng.randint(0, 900)
        g = rng.choice([1, 1, 2, 4, 8])
        d = rng.choice([1, 10, 60, 300, 1800, 4000])
        when = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S")
        rows.append([when, f"{d}.0", str(g), f"{d * g}.0", rng.choice(["a1", "b2"])])
    return rows


def random_load_rows(rng: random.Random) -> list[list[str]]:
    """A small valid load curve: plain ``time,value`` or Alibaba ``timestamp_anon,value``."""
    if rng.random() < 0.5:
        rows = [["time", "value"]]
        for k in range(rng.randint(1, 12)):
            rows.append([str(k * rng.choice([60, 300, 900])), f"{rng.uniform(0, 10):.3f}"])
    else:
        rows = [["timestamp_anon", "value", "container_ip", "request_type"]]
        t = 1_662_859_176.0
        for _ in range(rng.randint(1, 30)):
            t += rng.choice([0.0, 5.0, 60.0, 250.0, 900.0])
            rows.append([f"{t}", f"{rng.uniform(0, 2):.3f}", "", "API Requests"])
    return rows


def mutate_csv(rows: list[list[str]], rng: random.Random) -> bytes:
    """A few random mutations of a CSV (header first): cells replaced by odd or extreme text, columns dropped,
    repeated or renamed, rows repeated, cut or widened; then maybe a byte-order mark, CRLF endings, a truncation
    or a flipped byte."""
    import csv
    import io

    rows = [list(r) for r in rows]
    for _ in range(rng.choice([1, 1, 2, 3])):
        op = rng.random()
        if not rows[0]:  # every column gone: nothing more to mutate
            break
        if op < 0.5 and len(rows) > 1:
            r = rng.randrange(1, len(rows))
            if rows[r]:
                rows[r][rng.randrange(len(rows[r]))] = rng.choice(_CSV_CELLS)
        elif op < 0.6:
            c = rng.randrange(len(rows[0]))
            for row in rows:
                if c < len(row):
                    del row[c]
        elif op < 0.7:
            c = rng.randrange(len(rows[0]))
            for row in rows:
                if c < len(row):
                    row.append(row[c])
        elif op < 0.75:
            rows[0][rng.randrange(len(rows[0]))] = rng.choice(["", "Timestamp", "value ", "time", "x" * 300])
        elif op < 0.85 and len(rows) > 1:
            rows.insert(rng.randrange(1, len(rows) + 1), list(rng.choice(rows[1:])))
        elif op < 0.9 and len(rows) > 1:
            r = rng.randrange(1, len(rows))
            rows[r] = rows[r][: rng.randrange(len(rows[r]) + 1)] if rng.random() < 0.5 else [*rows[r], "extra"]
        elif op < 0.95:
            rows = rows[:1] if rng.random() < 0.5 else rows + [[]]
    buf = io.StringIO()
    csv.writer(buf, lineterminator=rng.choice(["\n", "\r\n"])).writerows(rows)
    data = buf.getvalue().encode("utf-8", "surrogatepass")
    r = rng.random()
    if r < 0.08:
        data = b"\xef\xbb\xbf" + data
    elif r < 0.12 and data:
        data = data[: rng.randrange(len(data))]
    elif r < 0.16 and data:
        i = rng.randrange(len(data))
        data = data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
    return data


def _csv_bytes(rows: list[list[str]]) -> bytes:
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode()


#: Policies the simulator surfaces draw from (all of them; each case is one policy and one seed, in process).
_SIM_POLICIES = ("baseline", "baseline-sjf", "loan", "elastic", "lyra", "lyra-exact", "lyra-pack", "tiresias")


def _sim_base(rng: random.Random) -> list[str]:
    return ["simulate", "--policy", rng.choice(_SIM_POLICIES), "--training-servers", str(rng.choice([1, 2, 4])),
            "--inference-servers", str(rng.choice([0, 1, 2, 4])), "--interval", rng.choice(["60", "300", "900"]),
            "--time-limit", "0.2", "--no-progress", "-q"]


#: Extreme values of the simulator's flags: numbers past every bound, non-numbers and odd text.
_FLAG_VALUES = ["0", "-1", "1", "0.5", "1e-300", "1e300", "nan", "inf", "-inf", "1e7", "1e8", "86400", "86401",
                "100000", "100001", "1000000000", "2147483648", "99999999999999999999", "", "x", "1_000",
                "\u0661", "a\nb", "\x1b[2J", "2017-10-09", "2017-10-09T06:00:00+05:00", "garbage", "-", "5e-324"]
_SIM_FLAGS = ["--interval", "--load-window", "--restart-penalty", "--preemption-penalty", "--training-servers",
              "--inference-servers", "--seeds", "--seed", "--jobs", "--time-limit", "--elastic-share",
              "--tiresias-threshold", "--tiresias-starve-limit", "--limit", "--start", "--end", "--cluster",
              "--packing-profile", "--pollux-workload", "--max-work"]


def sim_flag_case(rng: random.Random, trace: str, load: str) -> list[str]:
    """A simulate command line over valid files with one to three flags set to extreme or odd values."""
    argv = [*_sim_base(rng), "--trace", trace]
    if rng.random() < 0.6:
        argv += ["--load", load]
    for _ in range(rng.randint(1, 3)):
        flag = rng.choice(_SIM_FLAGS)
        if flag == "--packing-profile":
            value = rng.choice(["bert=0.5,4", "bert=0,4", "bert=2,4", "bert=nan,1", "nope=0.5,1", "bert=", "=",
                                "bert=0.5,-1", "bert=0.5,inf", "bert=1,1e308"])
        else:
            value = rng.choice(_FLAG_VALUES)
        argv += [flag, value]
    if rng.random() < 0.2:
        argv += ["--seeds", str(rng.randint(1, 3)), "--jobs", "1"]
    return argv


def packing_snapshot(rng: random.Random) -> dict:
    """A valid snapshot whose jobs carry packing profiles (some with measured slowdowns), with packing options."""
    doc = random_snapshot(rng)
    apps = ["resnet", "bert", "ncf", "a|b", "x" * 50]
    ids = [j["id"] for j in doc["jobs"]]
    for job in doc["jobs"]:
        if rng.random() < 0.8:
            prof = {"gpu_util": rng.choice([0.23, 0.32, 0.47, 0.65, 0.81, 1.0]),
                    "gpu_mem_gb": round(rng.uniform(0.5, 60), 1)}
            if rng.random() < 0.6:
                prof["app"] = rng.choice(apps[:3])
            if ids and rng.random() < 0.3:
                prof["slowdown"] = {rng.choice(ids): round(rng.uniform(1, 3), 2) for _ in range(rng.randint(1, 3))}
            job["packing"] = prof
        if rng.random() < 0.2:
            job["deadline"] = rng.choice([0.0, 600.0, 1e5, -5.0])
    options = doc.setdefault("options", {})
    options.update({"packing": rng.choice(["gimbal", "lucid", "random", "exact"]),
                    "packing_policy": rng.choice(["jct", "deadline", "makespan"]),
                    "packing_overhead": rng.choice([0.0, 0.05, 0.5, 0.99]),
                    "sample_stealing": rng.random() < 0.5, "packing_seed": rng.randint(0, 10)})
    if rng.random() < 0.5:
        options["pair_speed"] = {"resnet|bert": [round(rng.uniform(0.1, 1), 2), round(rng.uniform(0.1, 1), 2)],
                                 "ncf|resnet": [1.0, 0.5]}
    for srv in doc["servers"]:
        if rng.random() < 0.3:
            srv["gpu_mem_gb"] = rng.choice([16.0, 40.0, 80.0, 1e-3])
    return doc


def mutate_packing(doc: dict, rng: random.Random) -> bytes:
    """Mutations aimed at the packing fields (profiles, slowdowns, pair speeds, options), else anywhere."""
    doc = copy.deepcopy(doc)
    targets = [p for p, _ in _paths(doc) if p and any(str(k) in ("packing", "options", "pair_speed", "slowdown",
                                                                "gpu_mem_gb", "deadline") for k in p)]
    if targets and rng.random() < 0.8:
        for _ in range(rng.choice([1, 1, 2])):
            path = rng.choice(targets)
            with contextlib.suppress(KeyError, IndexError, TypeError):
                _set(doc, path, copy.deepcopy(rng.choice(_PACKING_VALUES + _EXTREMES[:10])))
        return json.dumps(doc, allow_nan=True).encode()
    return mutate_document(doc, rng)


def _keep_packing_call(snapshot_file: str, keep: object, packing: str):
    """``decide(snapshot, packing=..., keep_packing=keep)`` in a child: exit 0 with the decision on stdout (checked
    by the caller), 2 with one line on an InputError or TypeError, as the CLI would."""
    def call() -> int:
        from lyra_solver import InputError, decide, encode, load_snapshot

        try:
            d = decide(load_snapshot(snapshot_file), packing=packing, keep_packing=keep)
        except (InputError, TypeError) as err:
            print(f"error: {err}".replace("\n", "\\n"), file=sys.stderr)
            return 2
        sys.stdout.buffer.write(encode(d))
        return 0

    return call


def mutate_keep(groups: list, ids: list[str], rng: random.Random) -> object:
    """A previous decision's packing (JSON dicts), mutated: a field removed or replaced, ids unknown, empty job
    lists, shares out of range, or not a list at all."""
    groups = copy.deepcopy(groups) or [{"server": "t0", "gpus": 1, "jobs": ids[:2] or ["a"], "shares": {}}]
    op = rng.random()
    if op < 0.1:
        return rng.choice(["abc", 5, None, {"server": "t0"}, b"x", [3], [[]]])
    g = rng.choice(groups)
    key = rng.choice(sorted(g))
    if op < 0.3:
        del g[key]
    elif op < 0.7:
        g[key] = copy.deepcopy(rng.choice(_PACKING_VALUES + [[], ["nope"], ids[::-1], {"x": 0.5}, {"x": 2.0}]))
    elif op < 0.85:
        g["jobs"] = [rng.choice([*ids, "ghost", ""]) for _ in range(rng.randint(0, 4))]
    else:
        groups.append(copy.deepcopy(g))  # the same guest twice
    return groups


_PY_WARNING = re.compile(r"\b[A-Z]\w*Warning: ")


def _judge_clean(code: int | None, stderr: bytes) -> str | None:
    """A run that ended well (exit 0 or 1) must say at most one line, and no warning, on standard error."""
    if code not in (0, 1):
        return None
    text = stderr.decode("utf-8", "replace")
    lines = [ln for ln in text.strip("\n").split("\n") if ln]
    warned = [ln for ln in lines if _PY_WARNING.search(ln)]
    if warned:  # Python's warnings (RuntimeWarning, ...); the engine's logged fallbacks are its documented output
        return f"a warning on a clean exit: {warned[0][:200]}"
    said = [ln for ln in lines if not ln.startswith("lyra-solver: ")]  # logged fallbacks are not counted
    if len(said) > (1 if code == 0 else 2):
        return f"{len(said)} lines on standard error on a clean exit"
    return None


def fuzz_surface(surface: str, case: int, rng: random.Random, out_dir: Path, *, memory_mb: int, timeout: float,
                 check: bool) -> tuple[str, list[str], str, int | None, bytes, float, float, str | None]:
    """One case of ``surface``: (kind, argv, input file, exit code, stderr, s, MB, problem or None)."""
    cwd = str(out_dir)
    stdin = None
    if surface == "cli":
        kind = "mckp" if rng.random() < 0.3 else "decide"
        doc = random_mckp(rng) if kind == "mckp" else random_snapshot(rng)
        data = mutate_document(doc, rng) if rng.random() < 0.85 else json.dumps(doc).encode()
        name = out_dir / f"case{case:05d}.json"
        if kind == "mckp":
            argv = ["mckp", name.name, "--method", rng.choice(["auto", "dp", "cpsat", "highs", "greedy", "hull"]),
                    "--time-limit", "2"]
        else:
            argv = ["decide", name.name, "--time-limit", rng.choice(["0.2", "1"])]
            if rng.random() < 0.3:
                argv += ["--reclaim", "exact", "--placement", "exact"]
    elif surface == "packing":
        kind = "decide"
        doc = packing_snapshot(rng)
        data = mutate_packing(doc, rng) if rng.random() < 0.8 else json.dumps(doc).encode()
        name = out_dir / f"case{case:05d}.json"
        argv = ["decide", name.name, "--time-limit", "0.3"]
        if rng.random() < 0.5:
            argv += ["--packing", rng.choice(["off", "gimbal", "lucid", "random", "exact"])]
        if rng.random() < 0.5:
            argv += ["--packing-policy", rng.choice(["jct", "deadline", "makespan"])]
    elif surface in ("trace", "load"):
        kind = "simulate"
        name = out_dir / f"case{case:05d}.csv"
        trace_rows, load_rows = random_trace_rows(rng), random_load_rows(rng)
        argv = _sim_base(rng)
        if surface == "trace":
            data = mutate_csv(trace_rows, rng) if rng.random() < 0.85 else _csv_bytes(trace_rows)
            argv += ["--trace", name.name]
            if rng.random() < 0.3:
                argv += ["--load", f"case{case:05d}.load.csv"]
                (out_dir / f"case{case:05d}.load.csv").write_bytes(_csv_bytes(load_rows))
        else:
            data = mutate_csv(load_rows, rng) if rng.random() < 0.85 else _csv_bytes(load_rows)
            (out_dir / f"case{case:05d}.trace.csv").write_bytes(_csv_bytes(trace_rows))
            argv += ["--trace", f"case{case:05d}.trace.csv", "--load", name.name,
                     "--load-window", rng.choice(["60", "300", "3600"])]
            argv[argv.index("--inference-servers") + 1] = str(rng.choice([1, 2, 4]))
        if rng.random() < 0.1:  # the same file through standard input
            stdin = data
            argv[argv.index(name.name)] = "-"
    else:  # sim-flags
        kind = "simulate"
        name = out_dir / f"case{case:05d}.csv"
        data = _csv_bytes(random_trace_rows(rng))
        (out_dir / f"case{case:05d}.load.csv").write_bytes(_csv_bytes(random_load_rows(rng)))
        argv = sim_flag_case(rng, name.name, f"case{case:05d}.load.csv")
    name.write_bytes(data)
    code, stdout, stderr, secs, rss = run_forked(_cli_call(argv), memory_mb=memory_mb, timeout=timeout, cwd=cwd,
                                                 stdin=stdin)
    problem = judge(code, stderr, secs, rss, memory_mb=memory_mb) or _judge_clean(code, stderr)
    if problem is None and check and kind == "decide" and code == 0:
        problem = _check_decision(name, stdout, out_dir, case, memory_mb=memory_mb, timeout=timeout)
        if problem is None and surface == "packing":  # the round again, told a mutated previous packing
            argv2 = ["<python>", "decide", name.name, "keep_packing=..."]
            try:
                dec = json.loads(stdout)
                snap_ids = [j["id"] for j in json.loads(data).get("jobs", [])]
            except (ValueError, AttributeError, TypeError):
                dec, snap_ids = None, []
            if isinstance(dec, dict):
                keep = mutate_keep(dec.get("packing") or [], snap_ids, rng)
                packing = rng.choice(["gimbal", "lucid", "random", "exact"])
                code, stdout2, stderr, secs, rss = run_forked(_keep_packing_call(name.name, keep, packing),
                                                              memory_mb=memory_mb, timeout=timeout, cwd=cwd)
                problem = judge(code, stderr, secs, rss, memory_mb=memory_mb)
                if problem is None and code == 0:
                    problem = _check_decision(name, stdout2, out_dir, case, memory_mb=memory_mb, timeout=timeout)
                if problem is not None:
                    argv = argv2
                    (out_dir / f"case{case:05d}.keep.json").write_text(json.dumps(keep, default=repr))
    if problem is None:
        for extra in out_dir.glob(f"case{case:05d}*"):
            extra.unlink()
    return kind, argv, str(name), code, stderr, secs, rss, problem


def _check_decision(snapshot: Path, decision: bytes, out_dir: Path, case: int, *, memory_mb: int,
                    timeout: float) -> str | None:
    dec = out_dir / f"case{case:05d}.decision.json"
    dec.write_bytes(decision)
    c_code, c_out, _, _, _ = run_forked(_cli_call(["check", snapshot.name, dec.name]), memory_mb=memory_mb,
                                        timeout=timeout, cwd=str(out_dir))
    if c_code != 0:
        return f"check rejects the decision (exit {c_code}): {c_out.decode()[-300:]}"
    dec.unlink()
    return None


def fuzz(*, seconds: float, seed: int, memory_mb: int = 2048, timeout: float = 60.0, out_dir: Path,
         check: bool = True, max_cases: int | None = None, surfaces: tuple[str, ...] = ("cli",)
         ) -> tuple[int, list[Finding]]:
    """Run mutated cases for ``seconds`` (or ``max_cases``), the ``surfaces`` in turn; return (cases run,
    findings). Each case runs in a forked child of this process (:func:`run_forked`)."""
    rng = random.Random(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    _preload()
    findings: list[Finding] = []
    deadline = time.monotonic() + seconds
    case = 0
    exits: dict[str, dict[str, int]] = {s: {} for s in surfaces}
    while time.monotonic() < deadline and (max_cases is None or case < max_cases):
        surface = surfaces[case % len(surfaces)]
        kind, argv, name, code, stderr, secs, rss, problem = fuzz_surface(
            surface, case, rng, out_dir, memory_mb=memory_mb, timeout=timeout, check=check)
        key = "timeout" if code is None else str(code)
        exits[surface][key] = exits[surface].get(key, 0) + 1
        if problem is not None:
            findings.append(Finding(case, f"{surface}/{kind}", argv, name, code, problem,
                                    stderr.decode("utf-8", "replace")[-500:], round(secs, 3), round(rss, 1)))
            log.warning("case %d [%s] (%s): %s", case, surface, " ".join(argv), problem)
        case += 1
    (out_dir / "findings.json").write_text(json.dumps([asdict(f) for f in findings], indent=2) + "\n")
    (out_dir / "exits.json").write_text(json.dumps(exits, indent=2, sort_keys=True) + "\n")
    log.info("exit codes per surface: %s", exits)
    return case, findings


# ---------------------------------------------------------------------------------------------- overruns
@dataclass(frozen=True)
class Overrun:
    """One timed run of the overrun check: what ran, under which limit, and how long it took."""

    case: str
    method: str
    time_limit: float
    returncode: int | None
    status: str
    solver_s: float | None  # the answer's own time_s (the call inside the process)
    process_s: float  # the whole process: start-up, imports, reading, writing
    max_rss_mb: float

    @property
    def overrun_s(self) -> float | None:
        """Seconds the call took beyond its limit (negative: within it)."""
        return None if self.solver_s is None else self.solver_s - self.time_limit


def _mckp_instance(n: int, m: int, seed: int, *, concave: bool) -> dict:
    """``n`` classes of ``m`` items: random ones, or concave value-table-like ones (weights 0, g, 2g, ...)."""
    rng = random.Random(seed)
    classes = []
    for _ in range(n):
        if concave:
            g, scale, e = rng.choice([1, 2, 4]), rng.uniform(10, 1000), rng.uniform(0.3, 0.9)
            classes.append({"weights": [g * k for k in range(m)],
                            "values": [round(scale * ((k + 1) ** e - 1), 6) for k in range(m)]})
        else:
            w = sorted(rng.randint(0, 100) for _ in range(m))
            classes.append({"weights": w, "values": sorted(round(rng.uniform(0, 100), 6) for _ in range(m))})
    light, heavy = sum(c["weights"][0] for c in classes), sum(c["weights"][-1] for c in classes)
    return {"capacity": light + (heavy - light) // 3, "classes": classes}


def _overrun_cases(scale: float, seed: int) -> list[tuple[str, str, dict]]:
    """(name, kind, document) of the large cases: MCKP instances and snapshots, sized by ``scale``."""
    from lyra_solver.bench.generate import generate_snapshot

    n_wide = max(10, int(100_000 * scale))
    n_table = max(10, int(5_000 * scale))
    cases = [(f"mckp {n_wide}x2 random", "mckp", _mckp_instance(n_wide, 2, seed, concave=False)),
             (f"mckp {n_table}x32 concave", "mckp", _mckp_instance(n_table, 32, seed, concave=True))]
    servers, jobs = max(4, int(1_000 * scale)), max(4, int(5_000 * scale))
    snap = generate_snapshot(servers=servers, jobs=jobs, seed=seed, reclaim=max(1, servers // 10))
    cases.append((f"decide {servers}x{jobs}", "decide", snap))
    huge = generate_snapshot(servers=max(4, int(5_000 * scale)), jobs=max(4, int(1_000 * scale)), seed=seed)
    huge["jobs"].append({"id": "huge", "min_workers": 1, "max_workers": 100_000, "remaining_work": 1e9,
                         "throughput": {"kind": "power", "rate_per_worker": 100.0, "exponent": 0.9}})
    cases.append(("decide + one 1..100,000-worker job", "decide", huge))
    # small enough for the placement ILP (job x server pairs), every job with a packing profile
    servers, jobs = max(4, int(100 * scale)), max(4, int(400 * scale))
    packed = generate_snapshot(servers=servers, jobs=jobs, seed=seed, running_share=0.7, reclaim=max(1, servers // 10))
    prng = random.Random(seed)
    for job in packed["jobs"]:
        job["packing"] = {"gpu_util": prng.choice([0.23, 0.32, 0.47, 0.65, 0.81, 1.0]),
                          "gpu_mem_gb": round(prng.uniform(1, 60), 1), "app": prng.choice(["resnet", "bert", "ncf"])}
    cases.append((f"decide {servers}x{jobs} with packing profiles", "decide", packed))
    return cases


#: What each kind of case runs: MCKP methods, and decide's exact steps (every one of them in one round).
#: (every MCKP method of the table but its aliases and ``gpu``, which needs a device)
OVERRUN_MCKP_METHODS = tuple(m for m in MCKP.names(aliases=False) if m != "gpu")
OVERRUN_DECIDE = {"exact steps": ["--allocation", "exact", "--reclaim", "exact", "--placement", "exact",
                                  "--packing", "exact"],
                  "default steps": []}


#: The reclaim, placement and joint front doors' exact methods (the CLI reaches only their CP-SAT method, through
#: ``decide``): each is timed in its own process through ``python -m lyra_solver.bench.fuzz --front-door``.
OVERRUN_FRONT_DOORS = ("reclaim", "placement", "joint")
OVERRUN_FRONT_DOOR_METHODS = unique(RECLAIM.names(kind="exact"), PLACEMENT.names(kind="exact"),
                                    JOINT.names(kind="exact"))


def joint_instance(n_servers: int, seed: int):
    """A seeded :class:`~lyra_solver.formulations.placement.JointProblem`: the jobs of
    :func:`~lyra_solver.bench.suites.placement.generate_placement`, each free between its base and its worker count,
    valued by a concave speed-up lowered by 5 % per extra server spanned. Running time ``O(J w_max^2)``."""
    import numpy as np
    from lyra_solver.bench.suites.placement import generate_placement
    from lyra_solver.formulations.placement import JointProblem

    p = generate_placement(n_servers, seed)
    rng = np.random.default_rng([seed, n_servers, 23])
    value = []
    for lo, hi in zip(p.job_base.tolist(), p.job_workers.tolist(), strict=True):
        rate, k_max = float(rng.uniform(1, 10)), min(hi, 4)
        value.append([[round(rate * w ** 0.8 * (1 - 0.05 * k), 2) for k in range(k_max)] for w in range(lo, hi + 1)])
    return JointProblem.build(server_free=p.server_free, job_min=p.job_base, job_max=p.job_workers,
                              job_gpus_per_worker=p.job_gpus_per_worker, value=value)


def front_door_instance(family: str, scale: float, seed: int):
    """The large instance of one front door for the overrun check: ``(label, problem)``."""
    if family == "reclaim":
        from lyra_solver.bench.reclaim_instances import generate_scattered

        n = max(10, int(3_000 * scale))
        return f"reclaim scattered {n} x {5 * n}", generate_scattered(n, 5 * n, seed, count=max(1, n // 10))
    if family == "placement":
        from lyra_solver.bench.suites.placement import generate_placement

        n = max(4, int(300 * scale))
        p = generate_placement(n, seed)
        return f"placement {p.n_jobs} jobs x {n} servers", p
    n = max(4, int(200 * scale))
    p = joint_instance(n, seed)
    return f"joint {p.n_jobs} jobs x {n} servers", p


def call_front_door(family: str, method: str, *, scale: float, seed: int, time_limit: float) -> dict:
    """Build the front door's instance, then time one call of it (building the instance not counted)."""
    from lyra_solver.formulations.placement import solve_joint, solve_placement
    from lyra_solver.formulations.reclaim import solve_reclaim

    label, problem = front_door_instance(family, scale, seed)
    solve = {"reclaim": solve_reclaim, "placement": solve_placement, "joint": solve_joint}[family]
    start = time.perf_counter()
    res = solve(problem, method=method, time_limit=time_limit)
    return {"case": label, "status": str(res.status), "time_s": time.perf_counter() - start,
            "backend_status": res.backend_status}


def overrun_check(*, time_limit: float, scale: float, seed: int, out_dir: Path, memory_mb: int,
                  methods: tuple[str, ...] = OVERRUN_MCKP_METHODS,
                  front_door_methods: tuple[str, ...] = OVERRUN_FRONT_DOOR_METHODS) -> list[Overrun]:
    """Run every MCKP method, decide's exact steps and the reclaim, placement and joint front doors' exact methods
    on large cases under ``time_limit``; measure overruns.

    Each run is a CLI process (``--timings``) under the memory limit and a hard timeout of ten times the
    limit plus a minute; ``solver_s`` is the answer's own ``time_s`` (the call: model building included),
    ``process_s`` the whole process.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    results: list[Overrun] = []
    for name, kind, doc in _overrun_cases(scale, seed):
        path = out_dir / (name.replace(" ", "_").replace(",", "").replace("+", "plus") + ".json")
        path.write_text(json.dumps(doc))
        runs = ([(m, ["mckp", path.name, "--method", m]) for m in methods] if kind == "mckp"
                else [(label, ["decide", path.name, *flags]) for label, flags in OVERRUN_DECIDE.items()])
        for method, argv in runs:
            argv = [*argv, "--time-limit", f"{time_limit:g}", "--timings", "-q"]
            code, out, err, secs, rss = run_cli(argv, memory_mb=memory_mb, timeout=10 * time_limit + 60,
                                                cwd=str(out_dir))
            status, solver_s = _answer_status(kind, code, out, err)
            results.append(Overrun(name, method, time_limit, code, status, solver_s, round(secs, 3), round(rss, 1)))
            log.info("%s / %s: %s, %s s in the call, %.2f s in all", name, method, status, solver_s, secs)
    for family in OVERRUN_FRONT_DOORS:
        for method in front_door_methods:
            argv = ["--front-door", f"{family}:{method}", "--time-limit", f"{time_limit:g}", "--scale", f"{scale:g}",
                    "--seed", str(seed)]
            code, out, err, secs, rss = run_cli(argv, memory_mb=memory_mb, timeout=10 * time_limit + 60,
                                                cwd=str(out_dir), module="lyra_solver.bench.fuzz")
            name, status, solver_s = family, *_answer_status("mckp", code, out, err)
            if code == 0:
                doc = json.loads(out)
                name, status = doc["case"], f"{doc['status']} ({doc['backend_status'][:60]})"
            results.append(Overrun(name, method, time_limit, code, status, solver_s, round(secs, 3), round(rss, 1)))
            log.info("%s / %s: %s, %s s in the call, %.2f s in all", name, method, status, solver_s, secs)
    return results


def _answer_status(kind: str, code: int | None, out: bytes, err: bytes) -> tuple[str, float | None]:
    if code is None:
        return "timeout (killed)", None
    if code not in (0, 1):  # 1: an answer without a solution (infeasible, or none found in time)
        lines = err.decode("utf-8", "replace").strip().splitlines()
        return f"exit {code}: {lines[-1][:100] if lines else ''}", None
    try:
        doc = json.loads(out)
    except ValueError:
        return "unreadable answer", None
    if kind == "mckp":
        return str(doc.get("status")), doc.get("time_s")
    summary = doc.get("summary", {})
    statuses = summary.get("statuses", {})
    return ", ".join(f"{k} {summary.get('methods', {}).get(k)} {v}" for k, v in statuses.items()), summary.get("time_s")


def overrun_table(results: list[Overrun]) -> str:
    """The overrun check's results as a Markdown table."""
    rows = ["| case | method | limit s | call s | overrun s | process s | peak MB | status |",
            "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in results:
        call = "-" if r.solver_s is None else f"{r.solver_s:.2f}"
        over = "-" if r.overrun_s is None else f"{r.overrun_s:+.2f}"
        rows.append(f"| {r.case} | {r.method} | {r.time_limit:g} | {call} | {over} | {r.process_s:.2f} | "
                    f"{r.max_rss_mb:.0f} | {r.status} |")
    return "\n".join(rows)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line on stderr, exit 2
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def build_parser(prog: str = "python -m lyra_solver.bench.fuzz") -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--time", type=_positive, default=60.0, help="seconds of fuzzing (default 60)")
    p.add_argument("--seed", type=_non_negative_int, default=0)
    p.add_argument("--cases", type=_non_negative_int, default=None, help="stop after this many cases")
    p.add_argument("--memory-mb", type=_non_negative_int, default=2048, help="address-space limit per run (MB)")
    p.add_argument("--timeout", type=_positive, default=60.0, help="seconds per run before it counts as a hang")
    p.add_argument("--out", type=Path, default=None, help="folder for failing inputs (default: a temporary one)")
    p.add_argument("--no-check", action="store_true", help="do not run `check` on the decisions")
    p.add_argument("--surface", action="append", choices=(*SURFACES, "all"), default=None,
                   help="what to fuzz, repeatable (default cli): cli (decide and mckp on mutated files), packing "
                        "(packing profiles, options and flags, decide(keep_packing=...)), trace and load (the "
                        "simulator's CSVs), sim-flags (the simulator's flags); all: every one in turn")
    p.add_argument("--overrun", action="store_true",
                   help="instead of fuzzing: time every MCKP method and decide's exact steps on large instances "
                        "under --time-limit and report how far past it each call ran")
    p.add_argument("--time-limit", type=_positive, default=2.0, help="--overrun: the limit given to each run")
    p.add_argument("--scale", type=_positive, default=1.0,
                   help="--overrun: size factor of the instances (1: 100,000 x 2 and 5,000 x 32 MCKP, "
                        "1,000 x 5,000 snapshot)")
    p.add_argument("--max-overrun", type=_positive, default=1.0,
                   help="--overrun: seconds past the limit that count as a finding (default 1)")
    p.add_argument("--front-door", default=None, metavar="FAMILY:METHOD",
                   help="(used by --overrun) time one call of the reclaim, placement or joint front door on its "
                        "large instance and print {case, status, time_s, backend_status} as JSON")
    return p


def main(argv: list[str] | None = None, prog: str = "python -m lyra_solver.bench.fuzz") -> int:
    """Run the fuzzer from the command line: exit 0 nothing found, 1 findings, 2 bad arguments."""
    parser = build_parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    if args.memory_mb < 256:
        print("error: --memory-mb: at least 256 MB are needed to start Python with numpy", file=sys.stderr)
        return 2
    from lyra_solver.logsetup import configure_logging

    configure_logging("fuzz", levels=False)
    if args.front_door is not None:
        family, _, method = args.front_door.partition(":")
        if family not in OVERRUN_FRONT_DOORS or method not in OVERRUN_FRONT_DOOR_METHODS:
            print(f"error: --front-door: expected one of {', '.join(OVERRUN_FRONT_DOORS)} and a method "
                  f"({', '.join(OVERRUN_FRONT_DOOR_METHODS)}) as FAMILY:METHOD, got {args.front_door!r}",
                  file=sys.stderr)
            return 2
        print(json.dumps(call_front_door(family, method, scale=args.scale, seed=args.seed,
                                         time_limit=args.time_limit)))
        return 0
    out_dir = args.out if args.out is not None else Path(tempfile.mkdtemp(prefix="lyra_fuzz_"))
    if args.overrun:
        results = overrun_check(time_limit=args.time_limit, scale=args.scale, seed=args.seed, out_dir=out_dir,
                                memory_mb=args.memory_mb)
        print(overrun_table(results))
        late = [r for r in results if r.solver_s is None and r.returncode is None
                or r.overrun_s is not None and r.overrun_s > args.max_overrun]
        print(f"{len(results)} runs, {len(late)} past the limit by more than {args.max_overrun:g} s (or killed); "
              f"instances in {out_dir}")
        return 1 if late else 0
    chosen = args.surface or ["cli"]
    surfaces = SURFACES if "all" in chosen else tuple(dict.fromkeys(chosen))
    cases, findings = fuzz(seconds=args.time, seed=args.seed, memory_mb=args.memory_mb, timeout=args.timeout,
                           out_dir=out_dir, check=not args.no_check, max_cases=args.cases, surfaces=surfaces)
    print(f"{cases} cases ({', '.join(surfaces)}), {len(findings)} findings (seed {args.seed}, {args.memory_mb} MB, "
          f"{args.timeout:g} s per run); inputs of findings in {out_dir}")
    exits = json.loads((out_dir / "exits.json").read_text())
    for surface, codes in exits.items():
        print(f"  {surface}: " + ", ".join(f"exit {k}: {v}" for k, v in sorted(codes.items())))
    for f in findings:
        print(f"- case {f.case} [{f.kind}] {f.problem}: {' '.join(f.argv)} (exit {f.returncode}, {f.seconds} s, "
              f"{f.max_rss_mb} MB)")
    return 1 if findings else 0


if __name__ == "__main__":
    raise SystemExit(main())
