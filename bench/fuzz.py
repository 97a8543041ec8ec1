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
import json
import logging
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

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


def fuzz(*, seconds: float, seed: int, memory_mb: int = 2048, timeout: float = 60.0, out_dir: Path,
         check: bool = True, max_cases: int | None = None) -> tuple[int, list[Finding]]:
    """Run mutated cases for ``seconds`` (or ``max_cases``); return (cases run, findings)."""
    rng = random.Random(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    cwd = str(out_dir)
    findings: list[Finding] = []
    deadline = time.monotonic() + seconds
    case = 0
    while time.monotonic() < deadline and (max_cases is None or case < max_cases):
        kind = "mckp" if rng.random() < 0.3 else "decide"
        doc = random_mckp(rng) if kind == "mckp" else random_snapshot(rng)
        data = mutate_document(doc, rng) if rng.random() < 0.85 else json.dumps(doc).encode()
        name = out_dir / f"case{case:05d}.json"
        name.write_bytes(data)
        if kind == "mckp":
            argv = ["mckp", name.name, "--method", rng.choice(["auto", "dp", "cpsat", "highs", "greedy", "hull"]),
                    "--time-limit", "2"]
        else:
            argv = ["decide", name.name, "--time-limit", rng.choice(["0.2", "1"])]
            if rng.random() < 0.3:
                argv += ["--reclaim", "exact", "--placement", "exact"]
        code, stdout, stderr, secs, rss = run_cli(argv, memory_mb=memory_mb, timeout=timeout, cwd=cwd)
        problem = judge(code, stderr, secs, rss, memory_mb=memory_mb)
        if problem is None and check and kind == "decide" and code == 0:
            dec = out_dir / f"case{case:05d}.decision.json"
            dec.write_bytes(stdout)
            c_code, c_out, c_err, c_secs, c_rss = run_cli(["check", name.name, dec.name], memory_mb=memory_mb,
                                                          timeout=timeout, cwd=cwd)
            if c_code != 0:
                problem = f"check rejects the decision (exit {c_code}): {c_out.decode()[-300:]}"
            else:
                dec.unlink()
        if problem is None:
            name.unlink()
        else:
            findings.append(Finding(case, kind, argv, str(name), code, problem,
                                    stderr.decode("utf-8", "replace")[-500:], round(secs, 3), round(rss, 1)))
            log.warning("case %d (%s): %s", case, " ".join(argv), problem)
        case += 1
    (out_dir / "findings.json").write_text(json.dumps([asdict(f) for f in findings], indent=2) + "\n")
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
OVERRUN_MCKP_METHODS = ("core", "dp", "cpsat", "cbc", "highs", "greedy", "hull")
OVERRUN_DECIDE = {"exact steps": ["--allocation", "exact", "--reclaim", "exact", "--placement", "exact",
                                  "--packing", "exact"],
                  "default steps": []}


#: The reclaim, placement and joint front doors' exact methods (the CLI reaches only their CP-SAT method, through
#: ``decide``): each is timed in its own process through ``python -m lyra_solver.bench.fuzz --front-door``.
OVERRUN_FRONT_DOORS = ("reclaim", "placement", "joint")
OVERRUN_FRONT_DOOR_METHODS = ("cpsat", "cbc")


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


def _positive(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < x < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return x


def _non_negative_int(text: str) -> int:
    try:
        x = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if x < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {x}")
    return x


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
    logging.basicConfig(level=logging.WARNING, format="fuzz: %(message)s")
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
    cases, findings = fuzz(seconds=args.time, seed=args.seed, memory_mb=args.memory_mb, timeout=args.timeout,
                           out_dir=out_dir, check=not args.no_check, max_cases=args.cases)
    print(f"{cases} cases, {len(findings)} findings (seed {args.seed}, {args.memory_mb} MB, {args.timeout:g} s "
          f"per run); inputs of findings in {out_dir}")
    for f in findings:
        print(f"- case {f.case} [{f.kind}] {f.problem}: {' '.join(f.argv)} (exit {f.returncode}, {f.seconds} s, "
              f"{f.max_rss_mb} MB)")
    return 1 if findings else 0


if __name__ == "__main__":
    raise SystemExit(main())
