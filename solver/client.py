"""A small client of ``lyra-solver serve`` (standard library only: ``http.client``).

>>> from lyra_solver.client import Client                      # doctest: +SKIP
>>> decision = Client("http://127.0.0.1:8080").decide(snapshot)  # doctest: +SKIP

Each thread gets its own keep-alive connection. Bad input comes back as :class:`~lyra_solver.errors.InputError`
(the field path and the CLI's message), exactly as the library raises it; any other refusal as
:class:`ServiceError` with the HTTP status. A 503 (queue full) is retried after its ``Retry-After``, ``retries``
times; a connection the server closed while idle is reopened once (every route is a pure function of its input, so
repeating a request is safe).
"""
from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import msgspec
from lyra_solver import io
from lyra_solver.errors import InputError
from lyra_solver.types import Decision, MCKPAnswer, MCKPInstance, Snapshot

__all__ = ["CheckResult", "Client", "Response", "ServiceError"]


class ServiceError(Exception):
    """The service refused or failed a request: ``status`` (HTTP), ``path`` and ``message`` from its error body."""

    def __init__(self, status: int, message: str, path: str = "$", retry_after: float | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.message, self.path, self.retry_after = status, message, path, retry_after


@dataclass(frozen=True)
class Response:
    """A raw answer: HTTP ``status``, ``headers`` (lower-case names), ``data`` (the body's bytes)."""

    status: int
    headers: dict[str, str]
    data: bytes

    @property
    def exit_code(self) -> int | None:
        """The CLI's exit code for the same call (``Lyra-Exit-Code``), when the route has one."""
        value = self.headers.get("lyra-exit-code")
        return int(value) if value is not None else None


@dataclass(frozen=True)
class CheckResult:
    """``check``'s answer: ``ok`` (no rule broken) and the checker's text (one broken rule a line)."""

    ok: bool
    text: str


def _document(doc: Any) -> bytes:
    """JSON bytes of a document: bytes as given, a library object canonically encoded, a mapping as JSON."""
    if isinstance(doc, bytes | bytearray | memoryview):
        return bytes(doc)
    if isinstance(doc, str):
        return doc.encode()
    if isinstance(doc, msgspec.Struct):
        return io.encode(doc)
    return msgspec.json.encode(doc)


def _query(options: Mapping[str, Any]) -> str:
    pairs = []
    for key, value in options.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        pairs.append((key.replace("_", "-"), str(value)))
    return urlencode(pairs)


class Client:
    """A client of one service.

    Parameters
    ----------
    url : str
        The service, e.g. ``http://127.0.0.1:8080`` (``https://`` too).
    token : str, optional
        Bearer token (the server's ``--token-file``).
    timeout : float
        Seconds per request (connect, send, wait, read).
    retries : int
        Times a 503 (queue full) is retried, after the server's ``Retry-After``.
    """

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 120.0, retries: int = 2) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"Client: url must be http://HOST[:PORT] or https://..., got {url!r}")
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self._prefix = parts.path.rstrip("/")
        self._token, self.timeout, self.retries = token, timeout, retries
        self._local = threading.local()

    # ------------------------------------------------------------------------------------------ transport
    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = cls(self._host, self._port, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def request(self, verb: str, path: str, body: bytes | None = None, /, **options: Any) -> Response:
        """One request, raw (``options`` become the query string): no status is turned into an exception here."""
        target = self._prefix + path + (f"?{q}" if (q := _query(options)) else "")
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token}"
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.request(verb, target, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()  # a kept-alive connection the server had closed: once more on a new one
                if attempt:
                    raise
                continue
            except BaseException:
                self.close()
                raise
            out = Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
            if resp.will_close:
                self.close()
            return out
        raise AssertionError("unreachable")

    def call(self, verb: str, path: str, body: bytes | None = None, /, **options: Any) -> Response:
        """A request whose answer must be 200; bad input raises :class:`InputError`, another status
        :class:`ServiceError` (a 503 is retried ``retries`` times first)."""
        for attempt in range(self.retries + 1):
            resp = self.request(verb, path, body, **options)
            if resp.status == 200:
                return resp
            try:
                err = json.loads(resp.data)["error"]
                message, where = str(err["message"]), str(err.get("path", "$"))
            except (ValueError, KeyError, TypeError):
                message, where = resp.data.decode("utf-8", "replace").strip() or f"HTTP {resp.status}", "$"
            if resp.status == 400:
                problem = message[len(where) + 2:] if message.startswith(f"{where}: ") else message
                raise InputError(where, problem)
            retry_after = resp.headers.get("retry-after")
            wait = float(retry_after) if retry_after and retry_after.replace(".", "", 1).isdigit() else 1.0
            if resp.status == 503 and attempt < self.retries:
                time.sleep(wait)
                continue
            raise ServiceError(resp.status, message, where, wait if resp.status == 503 else None)
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------------------------------ routes
    def decide_bytes(self, snapshot: Snapshot | Mapping | bytes, **options: Any) -> bytes:
        """The decision as the CLI's bytes (``lyra-solver decide`` with the same options)."""
        return self.call("POST", "/v1/decide", _document(snapshot), **options).data

    def decide(self, snapshot: Snapshot | Mapping | bytes, **options: Any) -> Decision:
        """The decision for ``snapshot``; ``options`` are ``decide``'s (``allocation="greedy"``,
        ``time_limit=0.5``, ...). Not with ``format`` other than json (use :meth:`decide_bytes`)."""
        return io.parse_decision(self.decide_bytes(snapshot, **options))

    def check(self, snapshot: Snapshot | Mapping | bytes, decision: Decision | Mapping | bytes) -> CheckResult:
        """The independent checker's verdict on ``decision`` for ``snapshot``."""
        body = b'{"snapshot": ' + _document(snapshot) + b', "decision": ' + _document(decision) + b"}"
        resp = self.call("POST", "/v1/check", body)
        return CheckResult(resp.exit_code == 0, resp.data.decode())

    def apply(self, snapshot: Snapshot | Mapping | bytes, decision: Decision | Mapping | bytes) -> Snapshot:
        """The next round's snapshot once ``decision`` is carried out."""
        body = b'{"snapshot": ' + _document(snapshot) + b', "decision": ' + _document(decision) + b"}"
        return io.parse_snapshot(self.call("POST", "/v1/apply", body).data)

    def mckp(self, instance: MCKPInstance | Mapping | bytes, **options: Any) -> MCKPAnswer:
        """The answer for an MCKP instance (``method=``, ``time_limit=``, ``timings=``)."""
        return msgspec.json.decode(self.call("POST", "/v1/mckp", _document(instance), **options).data,
                                   type=MCKPAnswer)

    def schema(self, name: str) -> dict:
        """The JSON Schema of a format (``snapshot``, ``decision``, ``mckp``, ``mckp-answer``)."""
        return json.loads(self.call("GET", f"/v1/schema/{name}").data)

    def healthz(self) -> bool:
        """Whether the server process answers."""
        return self.request("GET", "/healthz").status == 200

    def readyz(self) -> bool:
        """Whether every worker is warm."""
        return self.request("GET", "/readyz").status == 200

    def metrics(self) -> str:
        """The Prometheus text."""
        return self.call("GET", "/metrics").data.decode()

    def wait_ready(self, timeout: float = 120.0, interval: float = 0.1) -> None:
        """Block until :meth:`readyz` (``TimeoutError`` past ``timeout`` seconds)."""
        end = time.monotonic() + timeout
        while True:
            try:
                if self.readyz():
                    return
            except OSError:
                self.close()
            if time.monotonic() > end:
                raise TimeoutError(f"the service at {self._host}:{self._port} was not ready within {timeout:g} s")
            time.sleep(interval)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
