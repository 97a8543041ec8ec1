"""``lyra-solver bench serve``: the HTTP service under load, beside the command line's time per call.

For each ``--workers`` count a real server process (``lyra-solver serve`` on a free loopback port) is started and
warmed; then, for each input (the example snapshot and a generated one, 1,000 servers x 5,000 jobs by default) and
each ``--concurrency``, that many client threads (each with its own keep-alive connection, standard library
``http.client``) send decide requests until the round's request count is reached. Every answer is compared with
the CLI's bytes for the same input; latency is measured per request at the client (send to last byte).

Reported per row: requests, errors, answers that differ from the CLI's, requests per second, p50 / p99 latency,
the engine's own median time in this process (parse, decide, encode: what the service adds is the difference),
and the CLI's median wall time per call (a new ``lyra-solver decide`` process each time, measured in the same run)
with its ratio to the service's p50. The machine's load average is printed before and after: on a shared machine
the figures move with it.

Running time: about ``sum over rounds of requests x latency / concurrency`` plus one server start per workers
count (seconds each) and the CLI calls.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

__all__ = ["main", "measure"]

PROG = "lyra-solver bench serve"


def _ints(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected integers >= 1, got {text!r}")
    return values


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise SystemExit(_fail(f"{message} (see --help)"))


def _fail(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0], allow_abbrev=False,
                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--workers", type=_ints, default=[1, 2], help="worker counts to compare, e.g. 1,2,4")
    p.add_argument("--concurrency", type=_ints, default=[1, 8, 32], help="client threads per round")
    p.add_argument("--snapshot", type=Path, default=Path("examples/cluster.json"), help="the small input")
    p.add_argument("--big", default="1000x5000", help="generated input SERVERSxJOBS (seed 0); 'none' to skip")
    p.add_argument("--requests", type=int, default=400, help="requests per round on the small input")
    p.add_argument("--big-requests", type=int, default=None,
                   help="requests per round on the big input (default: 2 x concurrency, at least 8)")
    p.add_argument("--cli-calls", type=int, default=5, help="CLI calls timed per input")
    p.add_argument("--quick", action="store_true", help="fewer requests (100 small, concurrency x 1 big, 3 CLI calls)")
    p.add_argument("--out", type=Path, default=None, help="write results.json here (a folder)")
    return p


def _cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``; None elsewhere or once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (the server's workers), from ``/proc``; empty where there is none."""
    out = []
    proc = Path("/proc")
    if not proc.is_dir():
        return out
    for entry in proc.iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


def _cpu(server_pid: int) -> tuple[float | None, float | None]:
    """CPU seconds so far of the server process and of its workers together."""
    workers = [_cpu_s(p) for p in _children(server_pid)]
    return _cpu_s(server_pid), (sum(w for w in workers if w is not None) if workers else None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(conn: http.client.HTTPConnection, body: bytes) -> tuple[int, bytes]:
    conn.request("POST", "/v1/decide", body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return resp.status, resp.read()


def measure(port: int, body: bytes, expected: bytes, concurrency: int, requests: int) -> dict:
    """``requests`` decide calls from ``concurrency`` threads: throughput, latency percentiles, errors, mismatches."""
    lock = threading.Lock()
    left = [requests]
    latencies: list[float] = []
    errors = [0]
    mismatches = [0]

    def client(_):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        try:
            while True:
                with lock:
                    if left[0] <= 0:
                        return
                    left[0] -= 1
                t = time.perf_counter()
                try:
                    status, data = _request(conn, body)
                except OSError:
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                    status, data = 0, b""
                dt = time.perf_counter() - t
                with lock:
                    if status != 200:
                        errors[0] += 1
                    else:
                        latencies.append(dt)
                        mismatches[0] += data != expected
        finally:
            conn.close()

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(client, range(concurrency)))
    wall = time.perf_counter() - t0
    lat = sorted(latencies)

    def pct(q: float) -> float | None:
        return lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3 if lat else None

    return {"concurrency": concurrency, "requests": requests, "errors": errors[0], "mismatches": mismatches[0],
            "rps": len(lat) / wall if wall > 0 else None, "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "min_ms": lat[0] * 1e3 if lat else None, "wall_s": wall}


def _cli_times(path: Path, calls: int) -> tuple[bytes, list[float]]:
    times, out = [], b""
    for _ in range(calls):
        t = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "lyra_solver", "decide", str(path)], capture_output=True,
                             timeout=600)
        times.append(time.perf_counter() - t)
        if res.returncode != 0:
            raise RuntimeError(f"lyra-solver decide {path}: exit {res.returncode}: {res.stderr.decode()[-300:]}")
        out = res.stdout
    return out, times


class _Server:
    def __init__(self, workers: int, port: int) -> None:
        self.port = port
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lyra_solver", "serve", "-q", "--port", str(port), "--workers", str(workers),
             "--queue-size", "1024", "--request-timeout", "600", "--max-body-mb", "256"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        end = time.monotonic() + 300
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited: {self.proc.stderr.read().decode()[-500:]}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    conn.close()
                    return
                conn.close()
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("the server was not ready within 300 s")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def _fmt(x, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    """Exit 0 done (every answer the CLI's bytes), 1 when an answer differed or failed, 2 bad usage."""
    args = build_parser().parse_args(argv)
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        return _fail("the service needs uvicorn: pip install 'lyra-solver[serve]'")
    if not args.snapshot.is_file():
        return _fail(f"--snapshot {args.snapshot}: no such file (run from the repository, or give one)")
    big = None
    if args.big != "none":
        try:
            servers, jobs = (int(x) for x in args.big.lower().split("x"))
        except ValueError:
            return _fail(f"--big: expected SERVERSxJOBS or none, got {args.big!r}")
        big = (servers, jobs)
    if args.quick:
        args.requests, args.cli_calls = min(args.requests, 100), min(args.cli_calls, 3)
    from lyra_solver.bench.generate import generate_snapshot
    from lyra_solver.io import encode

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="lyra-bench-serve-") as tmp:
        inputs = {"example": args.snapshot}
        if big is not None:
            path = Path(tmp) / "big.json"
            path.write_bytes(encode(generate_snapshot(servers=big[0], jobs=big[1], seed=0)))
            inputs[f"{big[0]:,} x {big[1]:,}"] = path
        reference = {}
        for name, path in inputs.items():
            out, times = _cli_times(path, args.cli_calls if name == "example" else max(1, args.cli_calls // 2))
            wall, cpu = _inprocess_ms(path.read_bytes(), out, args.requests if name == "example" else 3)
            reference[name] = {"bytes": out, "cli_ms": [t * 1e3 for t in times], "body": path.read_bytes(),
                               "inprocess_ms": wall, "inprocess_cpu_ms": cpu}
        rows = []
        for workers in args.workers:
            server = _Server(workers, _free_port())
            try:
                health = _health_ms(server.port, args.requests)
                for name, ref in reference.items():
                    _request_warm(server.port, ref["body"])
                    for c in args.concurrency:
                        n = args.requests if name == "example" else (
                            args.big_requests or (c if args.quick else max(8, 2 * c)))
                        cpu0 = _cpu(server.proc.pid)
                        row = measure(server.port, ref["body"], ref["bytes"], c, max(n, c))
                        cpu1 = _cpu(server.proc.pid)
                        for key, a, b in (("server_cpu_ms", cpu0[0], cpu1[0]), ("worker_cpu_ms", cpu0[1], cpu1[1])):
                            row[key] = (b - a) * 1e3 / row["requests"] if a is not None and b is not None else None
                        row.update(input=name, workers=workers, cli_ms=statistics.median(ref["cli_ms"]),
                                   inprocess_ms=statistics.median(ref["inprocess_ms"]),
                                   inprocess_cpu_ms=statistics.median(ref["inprocess_cpu_ms"]), healthz_ms=health)
                        rows.append(row)
                        print(f"{name} workers={workers} c={c}: {_fmt(row['rps'])} req/s, p50 "
                              f"{_fmt(row['p50_ms'], '.2f')} ms, p99 {_fmt(row['p99_ms'], '.2f')} ms",
                              file=sys.stderr)
            finally:
                server.stop()
    load_after = os.getloadavg()
    print(_table(rows, reference, load_before, load_after, args))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        doc = {"command": f"{PROG} " + " ".join(argv or sys.argv[1:]), "cores": os.cpu_count(),
               "load_before": load_before, "load_after": load_after, "rows": rows,
               "cli_ms": {k: v["cli_ms"] for k, v in reference.items()}}
        (args.out / "results.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return 1 if any(r["errors"] or r["mismatches"] for r in rows) else 0


def _inprocess_ms(body: bytes, expected: bytes, calls: int) -> tuple[list[float], list[float]]:
    """Wall and CPU ms of the engine alone on ``body`` (parse, decide, encode: :func:`lyra_solver.ops.decide` in
    this process, after one warm-up call), the reference for the service's own overhead."""
    from lyra_solver import ops

    args = argparse.Namespace(format="json", backend="auto")
    if ops.decide(body, args).data != expected:
        raise RuntimeError("the in-process answer differs from the CLI's")
    times, cpu = [], []
    for _ in range(calls):
        t, c = time.perf_counter(), time.process_time()
        ops.decide(body, args)
        times.append((time.perf_counter() - t) * 1e3)
        cpu.append((time.process_time() - c) * 1e3)
    return times, cpu


def _health_ms(port: int, calls: int) -> float:
    """Median ms of ``GET /healthz`` on one keep-alive connection: HTTP and the event loop, no worker."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times = []
    try:
        for _ in range(calls):
            t = time.perf_counter()
            conn.request("GET", "/healthz")
            conn.getresponse().read()
            times.append((time.perf_counter() - t) * 1e3)
    finally:
        conn.close()
    return statistics.median(times)


def _request_warm(port: int, body: bytes) -> None:
    """Two requests before a round's measurement: each worker's first call of an input size is not measured."""
    for _ in range(2):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        _request(conn, body)
        conn.close()


def _table(rows: list[dict], reference: dict, before, after, args) -> str:
    lines = [f"Machine: {os.cpu_count()} cores, load average {before[0]:.1f} before and {after[0]:.1f} after.", "",
             "| input | workers | concurrency | requests | errors | differ from CLI | req/s | p50 ms | p99 ms "
             "| engine in-process ms (median) | CPU ms/request: server + workers | CLI ms/call (median) | CLI / p50 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ratio = r["cli_ms"] / r["p50_ms"] if r["p50_ms"] else None
        lines.append(f"| {r['input']} | {r['workers']} | {r['concurrency']} | {r['requests']} | {r['errors']} "
                     f"| {r['mismatches']} | {_fmt(r['rps'])} | {_fmt(r['p50_ms'], '.2f')} "
                     f"| {_fmt(r['p99_ms'], '.2f')} | {r['inprocess_ms']:.2f} "
                     f"| {_fmt(r.get('server_cpu_ms'), '.2f')} + {_fmt(r.get('worker_cpu_ms'), '.2f')} "
                     f"| {r['cli_ms']:.0f} "
                     f"| {_fmt(ratio, '.0f')}x |")
    lines.append("")
    for name, ref in reference.items():
        ms = ref["cli_ms"]
        lines.append(f"CLI `lyra-solver decide` on {name}: {len(ms)} calls, median {statistics.median(ms):.0f} ms, "
                     f"min {min(ms):.0f}, max {max(ms):.0f}.")
    ex = [r for r in rows if r["input"] == "example" and r["concurrency"] == 1]
    if ex:
        best = min(r["p50_ms"] for r in ex if r["p50_ms"] is not None)
        lines.append(f"Target p50 <= 5 ms on the example at concurrency 1: {best:.2f} ms "
                     f"({'met' if best <= 5 else 'not met'}); the engine alone in this process: "
                     f"{ex[0]['inprocess_ms']:.2f} ms (median), so the service adds {best - ex[0]['inprocess_ms']:.2f} "
                     f"ms; GET /healthz (HTTP only): " + ", ".join(f"{r['healthz_ms']:.2f} ms" for r in ex) + ".")
        cpu = [r for r in ex if r.get("server_cpu_ms") is not None and r.get("worker_cpu_ms") is not None]
        if cpu:
            lines.append("CPU per request at concurrency 1 (what a quiet machine's latency is made of): "
                         + ", ".join(f"{r['workers']} worker(s): server {r['server_cpu_ms']:.2f} + workers "
                                     f"{r['worker_cpu_ms']:.2f} ms" for r in cpu)
                         + f"; the engine alone: {ex[0]['inprocess_cpu_ms']:.2f} ms CPU (median) in this process.")
    top = max(args.concurrency)
    for name in reference:
        by_w = [(r["workers"], r["rps"]) for r in rows if r["input"] == name and r["concurrency"] == top]
        if len(by_w) > 1:
            lines.append(f"Throughput at concurrency {top} on {name} by workers: "
                         + ", ".join(f"{w}: {_fmt(x)} req/s" for w, x in by_w) + ".")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
