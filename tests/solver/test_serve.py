"""``lyra-solver serve`` as a user runs it: a real server process on a free loopback port, real HTTP clients.

Every server here is started with ``--port 0`` (the port it bound is read from its ``listening`` log line) and
stopped with SIGTERM; requests are bounded in number and every wait has a generous timeout (no wall-clock
assertion: a loaded 2-core machine must pass).
"""
from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

from lyra_solver.bench.generate import generate_snapshot  # noqa: E402
from lyra_solver.bench.mckp_instances import pisinger  # noqa: E402
from lyra_solver.client import Client, ServiceError  # noqa: E402
from lyra_solver.errors import InputError  # noqa: E402
from lyra_solver.io import encode  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster.json"
WAIT_S = 240  # start-up and readiness on a loaded machine


class Server:
    """A ``lyra-solver serve`` subprocess; its stderr lines (JSON) are collected by a thread."""

    def __init__(self, *args: str, port: int = 0) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "lyra_solver", "serve", "--port", str(port), *args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=ROOT)
        self.lines: list[str] = []
        self.url: str | None = f"http://127.0.0.1:{port}" if port else None
        self._listening = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if port:
            self._listening.set()
        if not self._listening.wait(WAIT_S) or self.url is None:
            self.stop()
            raise AssertionError(f"the server did not start:\n{self.log()}")

    def _read(self) -> None:
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            if '"listening"' in line and self.url is None:
                self.url = json.loads(line)["url"]
                self._listening.set()
        self._listening.set()

    def log(self) -> str:
        return "\n".join(self.lines[-40:])

    def records(self) -> list[dict]:
        return [json.loads(line) for line in list(self.lines)]

    def client(self, **kw) -> Client:
        return Client(self.url, **kw)

    def wait_ready(self, **kw) -> None:
        try:
            self.client(**kw).wait_ready(timeout=WAIT_S)
        except TimeoutError:
            raise AssertionError(f"never ready:\n{self.log()}") from None

    def stop(self, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the server did not stop on SIGTERM:\n{self.log()}") from None


def raw(url: str, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
        timeout: float = 120) -> tuple[int, dict, bytes]:
    """One request on a new connection (http.client): status, headers (lower-case), body."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


JSON_HEADERS = {"Content-Type": "application/json"}


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lyra_solver", *args], input=stdin, capture_output=True, cwd=ROOT,
                          timeout=300)


def hard_mckp() -> bytes:
    """An MCKP instance that CP-SAT does not finish within seconds (strongly correlated, 500 x 20): a request that
    runs until its time limit."""
    problem = pisinger("strongly", 500, 20, R=10000, seed=1)
    weights, values = problem.to_ragged()
    return json.dumps({"capacity": int(problem.capacity),
                       "classes": [{"weights": w, "values": v} for w, v in zip(weights, values, strict=True)]}
                      ).encode()


def busy_workers(url: str) -> int:
    _, _, text = raw(url, "GET", "/metrics")
    line = next(ln for ln in text.decode().splitlines() if ln.startswith("lyra_workers_busy "))
    return int(float(line.split()[1]))


def wait_until(predicate, timeout: float = WAIT_S, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# ------------------------------------------------------------------------------------------------- main server
@pytest.fixture(scope="module")
def server():
    s = Server("--workers", "2")
    try:
        s.wait_ready()
        yield s
    finally:
        code = s.stop()
        assert code == 0, s.log()


def test_health_ready_and_metrics(server):
    status, headers, body = raw(server.url, "GET", "/healthz")
    assert (status, json.loads(body)) == (200, {"status": "ok"})
    status, _, body = raw(server.url, "GET", "/readyz")
    assert status == 200 and json.loads(body) == {"ready": True, "warm": 2, "workers": 2}
    status, headers, text = raw(server.url, "GET", "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
    names = {ln.split("{")[0].split(" ")[0] for ln in text.decode().splitlines() if not ln.startswith("#")}
    assert {"lyra_requests_total", "lyra_request_duration_seconds_bucket", "lyra_request_duration_seconds_sum",
            "lyra_requests_in_flight", "lyra_queue_length", "lyra_workers_warm"} <= names
    assert 'lyra_requests_total{route="/healthz",status="200"}' in text.decode()


def test_decide_answers_are_the_clis_bytes(server, tmp_path):
    inputs = {"example": EXAMPLE.read_bytes()}
    for seed in (0, 1):
        inputs[f"generated-{seed}"] = encode(generate_snapshot(servers=12, jobs=30, seed=seed))
    for name, data in inputs.items():
        path = tmp_path / f"{name}.json"
        path.write_bytes(data)
        for query, flags in (("", []), ("allocation=greedy&queue=fifo", ["--allocation", "greedy", "--queue", "fifo"]),
                             ("format=table", ["--format", "table"])):
            expected = cli("decide", str(path), *flags)
            assert expected.returncode == 0, expected.stderr
            status, headers, body = raw(server.url, "POST", f"/v1/decide?{query}", data, JSON_HEADERS)
            assert status == 200, body
            assert body == expected.stdout, (name, query)
            assert headers["lyra-exit-code"] == "0"
            if name == "example" and query.startswith("allocation=greedy"):  # the option reached the engine
                assert json.loads(body)["summary"]["methods"]["allocation"] == "mckp-greedy"


def test_32_requests_in_parallel(server):
    data = EXAMPLE.read_bytes()
    expected = cli("decide", str(EXAMPLE)).stdout
    client = server.client(retries=0)
    with ThreadPoolExecutor(32) as pool:
        answers = list(pool.map(lambda _: client.decide_bytes(data), range(32)))
    assert answers == [expected] * 32


def test_200_decides_at_concurrency_8(server):
    data = EXAMPLE.read_bytes()
    expected = cli("decide", str(EXAMPLE)).stdout

    def one(_):
        return raw(server.url, "POST", "/v1/decide", data, JSON_HEADERS)[::2]

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, range(200)))
    assert answers == [(200, expected)] * 200


def _stdin_error(*args: str, stdin: bytes) -> str:
    """The CLI's error line for ``stdin``, without ``error: <stdin>: ``."""
    res = cli(*args, "-", stdin=stdin)
    assert res.returncode == 2
    (line,) = res.stderr.decode().splitlines()
    return line.removeprefix("error: <stdin>: ")


BAD_BODIES = [b'{"format_version": 1, "servers": [',  # malformed
              b'{"format_version": 1, "servers": 5, "jobs": []}',  # a wrong type
              b'{"format_version": 1, "servers": [], "servers": [], "jobs": []}',  # a duplicate key
              b"",  # empty
              b'{"format_version": 1, "servers": [{"id": "t0", "pool": "training", "gpus": -8}], "jobs": []}',
              b"\xff\xfe"]  # not UTF-8


@pytest.mark.parametrize("body", BAD_BODIES)
def test_bad_bodies_get_400_with_the_clis_line(server, body):
    status, headers, answer = raw(server.url, "POST", "/v1/decide", body, JSON_HEADERS)
    assert status == 400 and headers["content-type"] == "application/json"
    err = json.loads(answer)["error"]
    assert err["message"] == _stdin_error("decide", stdin=body)
    assert err["message"].startswith(err["path"] + ": ")
    assert raw(server.url, "GET", "/healthz")[0] == 200


def test_a_100_mb_body_gets_413_and_the_server_keeps_answering(server):
    big = b" " * (100 * 2**20)
    status, headers, answer = raw(server.url, "POST", "/v1/decide", big, JSON_HEADERS)
    assert status == 413 and "max-body-mb" in json.loads(answer)["error"]["message"]
    # the same without Content-Length (chunked): refused once the received size passes the limit
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    conn.request("POST", "/v1/decide", body=iter([b" " * 2**20] * 70), headers=JSON_HEADERS, encode_chunked=True)
    assert conn.getresponse().status == 413
    conn.close()
    assert raw(server.url, "POST", "/v1/decide", EXAMPLE.read_bytes(), JSON_HEADERS)[0] == 200
    # a client that waits for "100 Continue" (curl does on large bodies) gets the 413 before sending anything
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(b"POST /v1/decide HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Expect: 100-continue\r\nContent-Length: 104857600\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(65536)
            if not chunk:
                break
            head += chunk
    assert head.startswith(b"HTTP/1.1 413"), head[:200]


def test_refusals_before_the_body(server):
    data = EXAMPLE.read_bytes()
    status, _, answer = raw(server.url, "POST", "/v1/decide", data, {"Content-Type": "text/csv"})
    assert status == 415 and json.loads(answer)["error"]["path"] == "content-type"
    assert raw(server.url, "POST", "/v1/decide", data, {"Content-Type": "application/json; charset=utf-8"})[0] == 200
    assert raw(server.url, "GET", "/v1/decide")[0] == 405
    assert raw(server.url, "POST", "/nowhere", data, JSON_HEADERS)[0] == 404
    status, _, answer = raw(server.url, "POST", "/v1/decide?allocation=exactt", data, JSON_HEADERS)
    expected = cli("decide", str(EXAMPLE), "--allocation", "exactt").stderr.decode().strip()
    assert status == 400 and json.loads(answer)["error"]["message"] == expected.removeprefix("error: ")
    assert raw(server.url, "POST", "/v1/decide?output=x.json", data, JSON_HEADERS)[0] == 400
    assert raw(server.url, "POST", "/v1/decide?queue=fifo&queue=sjf", data, JSON_HEADERS)[0] == 400
    assert raw(server.url, "GET", "/v1/schema/nothing")[0] == 404


def test_check_apply_mckp_and_schema_routes(server, tmp_path):
    client = server.client()
    snap = EXAMPLE.read_bytes()
    decision = client.decide_bytes(snap)
    verdict = client.check(snap, decision)
    (tmp_path / "d.json").write_bytes(decision)
    assert verdict.ok and verdict.text.encode() == cli("check", str(EXAMPLE), str(tmp_path / "d.json")).stdout
    broken = json.loads(decision)
    job = next(k for k, v in broken["jobs"].items() if v["action"] == "run")
    broken["jobs"][job]["workers"] += 1000
    (tmp_path / "bad.json").write_text(json.dumps(broken))
    verdict = client.check(snap, (tmp_path / "bad.json").read_bytes())
    expected = cli("check", str(EXAMPLE), str(tmp_path / "bad.json"))
    assert not verdict.ok and verdict.text.encode() == expected.stdout and expected.returncode == 1
    with pytest.raises(InputError, match="workers-out-of-range"):
        client.apply(snap, (tmp_path / "bad.json").read_bytes())
    nxt = client.apply(snap, decision)
    placed = {j.id: j.placement for j in nxt.jobs}
    for jid, jd in json.loads(decision)["jobs"].items():
        assert placed[jid] == (jd.get("placement") if jd["action"] == "run" else None)
    inst = b'{"capacity": 5, "classes": [{"weights": [0, 2, 4], "values": [0.0, 5.5, 7.0]}, ' \
           b'{"weights": [1, 3], "values": [1.0, 4.0]}]}'
    (tmp_path / "m.json").write_bytes(inst)
    for method in ("auto", "greedy"):
        status, headers, body = raw(server.url, "POST", f"/v1/mckp?method={method}", inst, JSON_HEADERS)
        assert status == 200 and body == cli("mckp", str(tmp_path / "m.json"), "--method", method).stdout
    assert client.mckp(inst).choice == [1, 1]
    assert client.mckp(inst, method="greedy", time_limit=5).method == "greedy"
    for name in ("snapshot", "decision", "mckp", "mckp-answer"):
        assert raw(server.url, "GET", f"/v1/schema/{name}")[2] == cli("schema", name).stdout
    status, _, body = raw(server.url, "POST", "/v1/check", b'{"snapshot": {}, "decision": {}, "x": 1}', JSON_HEADERS)
    assert status == 400


def test_client_raises_input_error_and_access_logs_are_json(server):
    with pytest.raises(InputError) as info:
        server.client().decide(b'{"format_version": 1, "servers": 5, "jobs": []}')
    assert info.value.path == "servers"
    records = server.records()
    access = [r for r in records if r["logger"] == "lyra_solver.serve.access"]
    assert access and {"method", "path", "status", "ms", "bytes_in", "bytes_out"} <= set(access[-1])
    assert any(r["status"] == 400 for r in access)


# ------------------------------------------------------------------------------------------------- limits
@pytest.fixture(scope="module")
def tight(tmp_path_factory):
    token = tmp_path_factory.mktemp("token") / "token"
    token.write_text("s3cret-token\n")
    s = Server("--workers", "1", "--queue-size", "0", "--request-timeout", "3", "--body-timeout", "2",
               "--token-file", str(token))
    try:
        s.wait_ready(token="s3cret-token")
        yield s
    finally:
        assert s.stop() == 0, s.log()


def test_token_is_required_but_not_for_probes(tight):
    data = EXAMPLE.read_bytes()
    status, headers, _ = raw(tight.url, "POST", "/v1/decide", data, JSON_HEADERS)
    assert status == 401 and headers["www-authenticate"] == "Bearer"
    assert raw(tight.url, "POST", "/v1/decide", data, {**JSON_HEADERS, "Authorization": "Bearer wrong"})[0] == 401
    assert raw(tight.url, "GET", "/metrics")[0] == 401
    assert raw(tight.url, "GET", "/healthz")[0] == 200 and raw(tight.url, "GET", "/readyz")[0] == 200
    assert tight.client(token="s3cret-token").decide(data).format_version == 1


def test_queue_full_is_503_and_timeout_is_504_with_the_worker_replaced(tight):
    auth = {**JSON_HEADERS, "Authorization": "Bearer s3cret-token"}
    slow: dict = {}
    thread = threading.Thread(target=lambda: slow.update(answer=raw(
        tight.url, "POST", "/v1/mckp?method=cpsat&time-limit=120", hard_mckp(), auth)))
    thread.start()
    wait_until(lambda: busy_workers_auth(tight.url) == 1, what="the slow request to run")
    status, headers, body = raw(tight.url, "POST", "/v1/decide", EXAMPLE.read_bytes(), auth)
    assert status == 503 and int(headers["retry-after"]) >= 1
    with pytest.raises(ServiceError) as info:
        tight.client(token="s3cret-token", retries=0).decide(EXAMPLE.read_bytes())
    assert info.value.status == 503 and info.value.retry_after >= 1
    assert raw(tight.url, "GET", "/healthz", timeout=30)[0] == 200  # a long round never blocks health checks
    thread.join(WAIT_S)
    assert slow["answer"][0] == 504, slow["answer"]
    tight.wait_ready(token="s3cret-token")  # the killed worker was replaced and warmed
    assert raw(tight.url, "POST", "/v1/decide", EXAMPLE.read_bytes(), auth)[0] == 200
    assert any(r.get("message") == "request timed out: worker killed and replaced" for r in tight.records())


def busy_workers_auth(url: str) -> int:
    _, _, text = raw(url, "GET", "/metrics", headers={"Authorization": "Bearer s3cret-token"})
    line = next(ln for ln in text.decode().splitlines() if ln.startswith("lyra_workers_busy "))
    return int(float(line.split()[1]))


def _partial(url: str, declared: int, sent: bytes) -> socket.socket:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=60)
    sock.sendall(b"POST /v1/decide HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Authorization: Bearer s3cret-token\r\n" + f"Content-Length: {declared}\r\n\r\n".encode() + sent)
    return sock


def test_slow_and_truncated_bodies_hold_no_worker(tight):
    auth = {**JSON_HEADERS, "Authorization": "Bearer s3cret-token"}
    slow = _partial(tight.url, 10_000, b'{"format_version": 1')
    cut = _partial(tight.url, 10_000, b'{"format_version": 1')
    cut.close()  # truncated: the client went away
    # the only worker is free meanwhile: a whole request is answered at once
    assert raw(tight.url, "POST", "/v1/decide", EXAMPLE.read_bytes(), auth)[0] == 200
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = slow.recv(65536)
        if not chunk:
            break
        answer += chunk
    slow.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert raw(tight.url, "GET", "/healthz")[0] == 200


# ------------------------------------------------------------------------------------------------- start and stop
def test_readyz_waits_for_warm_workers_and_sigterm_drains_then_exits_0():
    s = Server("--workers", "1")
    try:
        first = None
        end = time.monotonic() + WAIT_S
        while first is None and time.monotonic() < end:  # the first answer comes before the worker is warm
            try:
                first = raw(s.url, "GET", "/readyz", timeout=30)
            except OSError:
                time.sleep(0.01)
        assert first is not None and first[0] == 503 and json.loads(first[2])["ready"] is False
        assert raw(s.url, "GET", "/healthz")[0] == 200  # alive while the worker warms
        s.wait_ready()
        inflight: dict = {}
        thread = threading.Thread(target=lambda: inflight.update(answer=raw(
            s.url, "POST", "/v1/mckp?method=cpsat&time-limit=2", hard_mckp(), JSON_HEADERS)))
        thread.start()
        wait_until(lambda: busy_workers(s.url) == 1, what="the request to run")
        s.proc.send_signal(signal.SIGTERM)
        thread.join(WAIT_S)
        assert inflight["answer"][0] == 200, inflight  # finished, not cut off
        assert json.loads(inflight["answer"][2])["status"] in ("feasible", "no_solution", "optimal")
        assert s.proc.wait(WAIT_S) == 0, s.log()
        with pytest.raises(OSError):
            raw(s.url, "GET", "/healthz", timeout=5)
    finally:
        s.stop()


def test_quiet_server_logs_no_access_lines():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    s = Server("--workers", "1", "-q", port=port)
    try:
        wait_until(lambda: _answers(s.url), what="the server to listen")
        assert raw(s.url, "GET", "/healthz")[0] == 200
    finally:
        assert s.stop() == 0
    assert not [ln for ln in s.lines if '"lyra_solver.serve.access"' in ln], s.log()


def _answers(url: str) -> bool:
    try:
        return raw(url, "GET", "/healthz", timeout=5)[0] == 200
    except OSError:
        return False


@pytest.mark.parametrize("args, fragment", [(["--host", "0.0.0.0"], "--token-file"),
                                            (["--host", "127.0.0.1", "--token-file", "/nonexistent/token"],
                                             "--token-file"),
                                            (["--workers", "0"], "--workers")])
def test_bad_settings_exit_2_with_one_line(args, fragment):
    res = cli("serve", "--port", "0", *args)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in lines[0]


def test_client_refuses_a_bad_url_and_names_a_down_server():
    with pytest.raises(ValueError):
        Client("ftp://x")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(OSError):
        Client(f"http://127.0.0.1:{port}", timeout=5).decide(EXAMPLE.read_bytes())


def _worker_pids(s: Server) -> list[int]:
    """Pids of the server's live worker processes (from its ``worker warm`` log lines)."""
    pids = []
    for r in s.records():
        if r.get("message") == "worker warm":
            try:
                stat = Path(f"/proc/{r['pid']}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == s.proc.pid:  # still a child of this server
                pids.append(r["pid"])
    return pids


def _dead(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to find the worker processes")
def test_killed_workers_give_one_500_and_are_replaced(server):
    slow: dict = {}
    thread = threading.Thread(target=lambda: slow.update(answer=raw(
        server.url, "POST", "/v1/mckp?method=cpsat&time-limit=120", hard_mckp(), JSON_HEADERS)))
    thread.start()
    wait_until(lambda: busy_workers(server.url) == 1, what="the slow request to run")
    pids = _worker_pids(server)
    assert len(pids) == 2
    for pid in pids:  # the busy one (its request fails) and the idle one (found dead when next used)
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: all(_dead(pid) for pid in pids), what="the killed workers to exit")
    thread.join(WAIT_S)
    status, _, body = slow["answer"]
    assert status == 500 and "worker process exited" in json.loads(body)["error"]["message"]
    assert raw(server.url, "GET", "/healthz")[0] == 200
    status, _, body = raw(server.url, "POST", "/v1/decide", EXAMPLE.read_bytes(), JSON_HEADERS)
    assert status == 200 and body == cli("decide", str(EXAMPLE)).stdout
    server.wait_ready()


def test_a_bug_in_the_engine_is_one_line_for_the_client_and_a_traceback_for_the_log(monkeypatch):
    from lyra_solver.serve import worker

    def broken(body, opts):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setitem(worker.OPS, "decide", broken)
    kind, line, trace = worker.handle("decide", b"{}", {})
    assert kind == "bug" and line == "ZeroDivisionError: division by zero" and "\n" not in line
    assert "Traceback" in trace and "broken" in trace
    assert worker.handle("mckp", b"{", {"method": "auto", "time_limit": None, "timings": False})[0] == "input"


def test_sigterm_during_start_up_exits_0():
    s = Server("--workers", "1")  # returns at the "listening" line, before the worker is warm
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(WAIT_S) == 0, s.log()
