"""The HTTP side of ``lyra-solver serve``: a plain ASGI application (routes, body limits, errors, auth, metrics).

Routes (every answer to ``/v1/*`` is the command line's bytes for the same input and options):

=====================  ======  ===========================================================================
``/v1/decide``         POST    snapshot -> decision (``lyra-solver decide``; its options as query parameters)
``/v1/check``          POST    ``{"snapshot": ..., "decision": ...}`` -> the checker's text (``lyra-solver check``)
``/v1/mckp``           POST    MCKP instance -> answer (``lyra-solver mckp``; ``method``, ``time-limit``, ``timings``)
``/v1/apply``          POST    ``{"snapshot": ..., "decision": ...}`` -> the next round's snapshot
``/v1/schema/{name}``  GET     JSON Schema (``lyra-solver schema NAME``)
``/healthz``           GET     the server process answers
``/readyz``            GET     200 once every worker is warm, else 503
``/metrics``           GET     Prometheus text
=====================  ======  ===========================================================================

The command's exit code travels in the ``Lyra-Exit-Code`` header (``check``: 1 when a rule is broken; ``mckp``: 1
when no feasible choice was found; the status is 200 in both cases: the answer is there). Errors are JSON
``{"error": {"path": ..., "message": ...}}``: 400 bad input (the CLI's line, without its ``error: FILE:``
prefix), 401 a missing or wrong bearer token, 404, 405, 408 a body slower than ``--body-timeout``, 413 a body over
``--max-body-mb``, 415 a content type other than JSON, 503 (``Retry-After``) the queue is full, 504 past
``--request-timeout``, 500 a bug (the traceback in the server's log, one line here).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl

import msgspec
from lyra_solver.argparsing import UsageError
from lyra_solver.serve.metrics import CONTENT_TYPE as METRICS_TYPE
from lyra_solver.serve.metrics import Metrics
from lyra_solver.serve.pool import Pool, QueueFull, Timeout, WorkerDied

__all__ = ["App", "QueryOptions", "Settings"]

log = logging.getLogger("lyra_solver.serve")
access = logging.getLogger("lyra_solver.serve.access")

JSON = "application/json"
#: POST routes -> the worker operation and the CLI subcommand whose options they take (None: no options).
POSTS = {"/v1/decide": ("decide", "decide"), "/v1/check": ("check", None), "/v1/mckp": ("mckp", "mckp"),
         "/v1/apply": ("apply", None)}
GETS = ("/healthz", "/readyz", "/metrics")
SCHEMA = "/v1/schema/"
#: Paths that answer without the bearer token (liveness and readiness probes).
OPEN = ("/healthz", "/readyz")
#: CLI options that have no meaning over HTTP (files and the terminal).
NOT_QUERY = {"help", "output", "verbose", "quiet", "progress"}
#: Distinct query strings whose parsed options are kept (:meth:`QueryOptions.parse`).
PARSED_QUERIES = 256


@dataclass(frozen=True)
class Settings:
    """What ``lyra-solver serve`` was started with (see its ``--help``)."""

    max_body: int
    request_timeout: float
    body_timeout: float
    token: str | None = None
    retry_after: int = 1


class HTTPError(Exception):
    def __init__(self, status: int, message: str, path: str = "$", headers: tuple = (), close: bool = False):
        super().__init__(message)
        self.status, self.message, self.path, self.headers, self.close = status, message, path, headers, close


class _Disconnected(Exception):
    pass


def _error_body(path: str, message: str) -> bytes:
    return msgspec.json.encode({"error": {"message": message, "path": path}}, order="sorted") + b"\n"


class QueryOptions:
    """The options of the CLI's subcommands given as HTTP queries, parsed and checked by the CLI's own parser.

    ``build_parser`` is the command line's :func:`lyra_solver.cli.build_parser`, handed over by ``serve`` (the
    service imports no module of the command line that starts it); it is called once, on first use.
    """

    def __init__(self, build_parser: Callable[[], argparse.ArgumentParser]) -> None:
        self._build = build_parser
        self._subcommands: dict[str, argparse.ArgumentParser] | None = None
        self._tables: dict[str, dict[str, argparse.Action]] = {}
        self._parsed: dict[tuple[str, str], tuple[tuple[str, object], ...]] = {}

    def subcommand(self, name: str) -> argparse.ArgumentParser:
        """The CLI's own parser of subcommand ``name`` (options, choices and checks all come from it)."""
        if self._subcommands is None:
            parser = self._build()
            self._subcommands = {}
            for action in parser._actions:  # argparse keeps its subcommands in the one _SubParsersAction
                if isinstance(action, argparse._SubParsersAction):
                    self._subcommands.update(action.choices)
        return self._subcommands[name]

    def table(self, name: str) -> dict[str, argparse.Action]:
        """Query parameter (the long option without ``--``) -> the CLI's action, for subcommand ``name``."""
        if name not in self._tables:
            table = {}
            for action in self.subcommand(name)._actions:
                long = [s for s in action.option_strings if s.startswith("--")]
                if long and action.dest not in NOT_QUERY:
                    table[long[0][2:]] = action
            self._tables[name] = table
        return self._tables[name]

    def parse(self, name: str, query: str) -> dict:
        """The options of CLI subcommand ``name`` given as an HTTP query (``allocation=greedy&time-limit=0.5``; a
        flag as ``timings=true``), parsed and checked by the CLI's own parser: the namespace's fields as a dict.

        Raises :class:`HTTPError` 400 with the CLI's usage line for an unknown parameter, a repeated one, or a
        value the CLI refuses.

        The options of a query string that parsed are kept (at most :data:`PARSED_QUERIES` of them), so a
        scheduler that sends the same options each round pays argparse once (it was a tenth of the server's
        time per request); the options are a pure function of the text, and each call gets a new dict."""
        key = (name, query)
        items = self._parsed.get(key)
        if items is None:
            items = tuple(_parse_query(self, name, query).items())
            if len(self._parsed) >= PARSED_QUERIES:
                self._parsed.clear()
            self._parsed[key] = items
        return dict(items)


def _parse_query(options: QueryOptions, name: str, query: str) -> dict:
    table = options.table(name)
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=False, errors="strict")
    except UnicodeDecodeError:
        raise HTTPError(400, "the query string is not valid UTF-8", "query") from None
    argv: list[str] = ["-"]
    seen = set()
    for key, value in pairs:
        k = key.replace("_", "-")
        action = table.get(k)
        if action is None:
            raise HTTPError(400, f"unknown query parameter {key!r} for {name}; expected one of "
                                 f"{', '.join(sorted(table))}", f"query.{key}")
        if k in seen:
            raise HTTPError(400, f"query parameter {key!r} given twice", f"query.{key}")
        seen.add(k)
        if action.nargs == 0:  # a flag of the CLI
            v = value.lower()
            if v in ("", "1", "true", "yes"):
                argv.append(f"--{k}")
            elif v not in ("0", "false", "no"):
                raise HTTPError(400, f"query parameter {key!r} is a flag: true or false, got {value!r}",
                                f"query.{key}")
        else:
            argv += [f"--{k}", value]
    try:
        ns = options.subcommand(name).parse_args(argv)
    except UsageError as err:
        raise HTTPError(400, str(err), "query") from None
    return {k: v for k, v in vars(ns).items() if not callable(v)}


def _header(scope, name: bytes) -> str | None:
    for k, v in scope["headers"]:
        if k == name:
            return v.decode("latin-1")
    return None


def _is_json(content_type: str | None) -> bool:
    if content_type is None:  # no content type: taken as JSON (what curl --data-binary @file.json sends is not)
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media == JSON or (media.startswith("application/") and media.endswith("+json"))


class App:
    """The ASGI application: one instance per server, driving one :class:`Pool`."""

    def __init__(self, settings: Settings, pool: Pool, options: QueryOptions) -> None:
        self.settings = settings
        self.pool = pool
        self.options = options
        self.metrics = Metrics()
        self.schemas: dict[str, bytes] = {}

    # ------------------------------------------------------------------------------------------ ASGI
    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                self.pool.start()
                for name in {o for _, o in POSTS.values() if o}:  # the CLI's parser, built once before any request
                    self.options.table(name)
                await send({"type": "lifespan.startup.complete"})
            elif msg["type"] == "lifespan.shutdown":
                await self.pool.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope, receive, send) -> None:
        t0 = time.perf_counter()
        path = scope["path"]
        route = self._route(path)
        self.metrics.in_flight += 1
        status, size_in, size_out = 0, 0, 0
        try:
            try:
                status, headers, body, size_in = await self._answer(scope, receive, route)
            except HTTPError as err:
                status, body = err.status, _error_body(err.path, err.message)
                headers = [("content-type", JSON), *err.headers]
                if err.close:
                    headers.append(("connection", "close"))
            except _Disconnected:
                status = 499  # the client went away before its body arrived: nothing to answer
                return
            except Exception as err:  # a bug of the service itself: traceback in the log, one line to the client
                log.error("internal error", exc_info=True, extra={"fields": {"route": route}})
                status, headers = 500, [("content-type", JSON)]
                body = _error_body("$", f"internal error ({type(err).__name__}: {err}); the server's log has the "
                                        f"traceback")
            headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            size_out = len(body)
        finally:
            self.metrics.in_flight -= 1
            seconds = time.perf_counter() - t0
            if status:
                self.metrics.observe(route, status, seconds)
            if access.isEnabledFor(logging.INFO):  # -q: no line, and no fields built for it
                client = scope.get("client")
                access.info("request", extra={"fields": {
                    "method": scope["method"], "path": path,
                    "query": scope.get("query_string", b"").decode("latin-1"), "status": status,
                    "ms": round(seconds * 1e3, 3), "bytes_in": size_in, "bytes_out": size_out,
                    "client": f"{client[0]}:{client[1]}" if client else None}})

    @staticmethod
    def _route(path: str) -> str:
        if path in POSTS or path in GETS:
            return path
        if path.startswith(SCHEMA):
            return SCHEMA + "{name}"
        return "other"

    # ------------------------------------------------------------------------------------------ routes
    async def _answer(self, scope, receive, route: str) -> tuple[int, list, bytes, int]:
        path = scope["path"]
        try:
            self._admit(scope, route)
            if route in POSTS:
                op, options_of = POSTS[route]
                opts = (self.options.parse(options_of, scope.get("query_string", b"").decode("latin-1"))
                        if options_of else {})
        except HTTPError as err:
            await self._refuse(scope, receive, err)
        if route == "/healthz":
            return 200, [("content-type", JSON)], b'{"status":"ok"}\n', 0
        if route == "/readyz":
            ready = self.pool.ready()
            doc = {"ready": ready, "warm": self.pool.warm, "workers": self.pool.size}
            return (200 if ready else 503), [("content-type", JSON)], msgspec.json.encode(doc) + b"\n", 0
        if route == "/metrics":
            return 200, [("content-type", METRICS_TYPE)], self._metrics(), 0
        if route == SCHEMA + "{name}":
            return 200, [("content-type", JSON)], self._schema(path[len(SCHEMA):]), 0
        body = await self._body(scope, receive)
        try:
            reply = await self.pool.run(op, body, opts, self.settings.request_timeout)
        except QueueFull:
            raise HTTPError(503, "every worker is busy and the queue is full; retry later",
                            headers=(("retry-after", str(self.settings.retry_after)),)) from None
        except Timeout:
            raise HTTPError(504, f"no answer within --request-timeout {self.settings.request_timeout:g} s") from None
        except WorkerDied as err:
            log.error("internal error", extra={"fields": {"route": route, "reason": str(err)}})
            raise HTTPError(500, f"internal error ({err}); the request was not answered") from None
        kind = reply[0]
        if kind == "ok":
            _, data, code, media = reply
            return 200, [("content-type", media), ("lyra-exit-code", str(code))], data, len(body)
        if kind == "input":
            raise HTTPError(400, reply[2], reply[1])
        log.error("internal error", extra={"fields": {"route": route, "error": reply[1], "traceback": reply[2]}})
        raise HTTPError(500, f"internal error ({reply[1]}); the server's log has the traceback")

    def _admit(self, scope, route: str) -> None:
        """Refuse what is decided before the body: unknown route, wrong method, token, content type."""
        method, path = scope["method"], scope["path"]
        if route == "other":
            raise HTTPError(404, f"no route {path}; see the README's service section")
        allowed = "POST" if route in POSTS else "GET, HEAD"
        if method not in allowed.split(", "):
            raise HTTPError(405, f"{path} takes {allowed}, not {method}", headers=(("allow", allowed),))
        if self.settings.token is not None and route not in OPEN:
            self._authorise(scope)
        if route in POSTS and not _is_json(_header(scope, b"content-type")):
            raise HTTPError(415, f"content type {_header(scope, b'content-type')!r}: send the document as "
                                 f"application/json", "content-type")

    def _authorise(self, scope) -> None:
        given = _header(scope, b"authorization") or ""
        scheme, _, token = given.partition(" ")
        expected = self.settings.token.encode()
        ok = scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode("latin-1"), expected)
        if not ok:
            raise HTTPError(401, "missing or wrong bearer token (Authorization: Bearer TOKEN)", "authorization",
                            headers=(("www-authenticate", "Bearer"),))

    def _metrics(self) -> bytes:
        p = self.pool
        return self.metrics.render({
            "lyra_queue_length": ("Requests waiting for a worker.", p.queued),
            "lyra_workers_busy": ("Workers running a request.", p.busy),
            "lyra_workers_warm": ("Workers warm and serving.", p.warm),
            "lyra_workers": ("Workers configured (--workers).", p.size),
            "lyra_worker_restarts_total": ("Workers replaced after a timeout or a crash.", p.restarts),
        })

    def _schema(self, name: str) -> bytes:
        if name not in self.schemas:
            from lyra_solver import ops
            from lyra_solver.types import SCHEMAS

            if name not in SCHEMAS:
                raise HTTPError(404, f"no schema {name!r}; expected one of {', '.join(sorted(SCHEMAS))}", "name")
            self.schemas[name] = ops.schema(name).data
        return self.schemas[name]

    # ------------------------------------------------------------------------------------------ bodies
    async def _body(self, scope, receive) -> bytes:
        """The whole request body within ``body_timeout``; 413 past ``max_body`` (once the client has sent it, so
        that it reads the answer), 408 when it is too slow. No worker is held meanwhile."""
        limit = self.settings.max_body
        deadline = asyncio.get_running_loop().time() + self.settings.body_timeout
        declared = _header(scope, b"content-length")
        too_big = HTTPError(413, f"the request body is over --max-body-mb ({limit} bytes)", close=True)
        if declared is not None and declared.isdigit() and int(declared) > limit:
            if (_header(scope, b"expect") or "").lower() == "100-continue":
                raise too_big  # the client waits for our word before it sends: it need not send anything
            await self._drain(receive, deadline)
            raise too_big
        chunks, size = [], 0
        while True:
            msg = await self._receive(receive, deadline)
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > limit:
                await self._drain(receive, deadline)
                raise too_big
            chunks.append(chunk)
            if not msg.get("more_body", False):
                return b"".join(chunks)

    async def _receive(self, receive, deadline: float) -> dict:
        # a deadline on this task (one timer), not wait_for (a task per chunk): a body that is there already
        # is taken without a suspension
        try:
            async with asyncio.timeout_at(deadline):
                msg = await receive()
        except TimeoutError:
            raise HTTPError(408, f"the request body did not arrive within --body-timeout "
                                 f"{self.settings.body_timeout:g} s", close=True) from None
        if msg["type"] == "http.disconnect":
            raise _Disconnected()
        return msg

    async def _drain(self, receive, deadline: float) -> None:
        """Read and drop the rest of a body that will be refused, until it ends or the deadline passes."""
        try:
            while True:
                msg = await self._receive(receive, deadline)
                if not msg.get("more_body", False):
                    return
        except HTTPError:
            return

    async def _refuse(self, scope, receive, err: HTTPError) -> None:
        """Raise ``err`` once the request's body (if any, up to the limit) has been read and dropped."""
        if scope["method"] in ("POST", "PUT", "PATCH"):
            deadline = asyncio.get_running_loop().time() + self.settings.body_timeout
            with contextlib.suppress(_Disconnected):
                await self._drain(receive, deadline)
        raise err
