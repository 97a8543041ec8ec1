"""``lyra-solver serve``: the engine as a long-running HTTP/1.1 service (the ``serve`` extra: uvicorn).

One server process runs uvicorn's event loop with a plain ASGI application (:mod:`lyra_solver.serve.app`): it
parses requests, reads bodies under a size limit and a deadline, answers health, readiness and metrics itself, and
hands each engine request to one of N worker processes (:mod:`lyra_solver.serve.pool`), which run the very code
of the command line (:mod:`lyra_solver.ops`), so answers are the CLI's bytes. A long round therefore never blocks
``/healthz``, and N requests run in parallel. SIGTERM (or Ctrl-C) stops accepting connections, lets what is in
flight finish (at most ``--request-timeout`` plus ``--body-timeout``), stops the workers and exits 0.

Why uvicorn: it is the most used ASGI server, kept by the Encode team (frequent releases, a security policy),
small (h11 and click are its only dependencies), and it implements HTTP/1.1 keep-alive, flow control,
``Expect: 100-continue`` and graceful shutdown, which the service needs and should not write itself. The ``serve``
extra adds what uvicorn's own ``standard`` extra uses for speed, httptools (the HTTP parser of Node.js) and uvloop
(an event loop on libuv), both kept by MagicStack: together they cut the server's CPU per request by about a quarter
(h11 and asyncio's loop, pure Python, were most of the server's own work); without them the service runs the same,
on the pure-Python ones. The application on top is plain ASGI rather than a framework (Starlette, FastAPI): eight fixed
routes need no router, and reading the body by hand is what gives the exact limits (413 as soon as the declared
or received size passes ``--max-body-mb``, 408 on a slow body) without a framework's buffering in between.
"""
from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import os
import signal
import socket
from collections.abc import Callable
from pathlib import Path

from lyra_solver.argparsing import int_at_least as _count
from lyra_solver.argparsing import positive_float as _positive
from lyra_solver.errors import InputError
from lyra_solver.logsetup import verbosity_of

__all__ = ["is_loopback", "read_token", "run"]

log = logging.getLogger("lyra_solver.serve")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_token(path: str) -> str:
    """The bearer token in ``path`` (surrounding whitespace dropped); :class:`InputError` when unreadable, empty,
    or not printable ASCII."""
    try:
        token = Path(path).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as err:
        raise InputError("$", f"--token-file: cannot read the token: {getattr(err, 'strerror', None) or err}",
                         path) from None
    if not token or not token.isprintable() or any(c.isspace() for c in token):
        raise InputError("$", "--token-file: the token must be one word of printable ASCII", path)
    return token


def _socket(host: str, port: int) -> socket.socket:
    info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = info[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


def run(args, build_parser: Callable[[], argparse.ArgumentParser]) -> int:
    """Serve until SIGTERM or SIGINT; returns the exit code (0 after a clean drain).

    ``args`` is the ``serve`` subcommand's namespace (``host``, ``port``, ``workers``, ``queue_size``,
    ``max_body_mb``, ``request_timeout``, ``body_timeout``, ``token_file``, ``verbose``/``quiet``);
    ``build_parser`` the command line's parser factory (:func:`lyra_solver.cli.build_parser`), whose subcommands
    parse the requests' query options. Bad settings raise :class:`InputError` (one line, exit 2), before anything
    is started.
    """
    try:
        import uvicorn
    except ImportError:
        raise InputError("$", "serve needs uvicorn: pip install 'lyra-solver[serve]'", "lyra-solver serve") from None
    from lyra_solver.serve.app import App, QueryOptions, Settings
    from lyra_solver.serve.logs import configure
    from lyra_solver.serve.pool import Pool

    token = read_token(args.token_file) if args.token_file else None
    if not is_loopback(args.host) and token is None:
        raise InputError("$", f"--host {args.host} is not a loopback address: serving beyond this machine needs "
                              f"--token-file (a bearer token every request must present)", "lyra-solver serve")
    verbosity = verbosity_of(args)
    configure(verbosity)
    try:
        sock = _socket(args.host, args.port)
    except OSError as err:
        raise InputError("$", f"cannot listen on {args.host}:{args.port}: {err.strerror or err}",
                         "lyra-solver serve") from None
    settings = Settings(max_body=int(args.max_body_mb * 2**20), request_timeout=args.request_timeout,
                        body_timeout=args.body_timeout, token=token)
    pool = Pool(args.workers, args.queue_size, verbosity)
    app = App(settings, pool, QueryOptions(build_parser))
    http, loop_factory = _accelerators()
    config = uvicorn.Config(app, http=http, lifespan="on", log_config=None, access_log=False, server_header=False,
                            timeout_graceful_shutdown=args.request_timeout + args.body_timeout + 5.0,
                            timeout_keep_alive=5, limit_concurrency=args.max_connections, backlog=2048)
    server = uvicorn.Server(config)
    stopped: list[int] = []

    def remember(sig, _frame) -> None:
        # before uvicorn's own handlers are in place (start-up): stop as soon as it has started; after its drain,
        # uvicorn restores this handler and raises the signal again: note it and end with exit 0
        stopped.append(sig)
        server.should_exit = True

    previous = {s: signal.signal(s, remember) for s in (signal.SIGTERM, signal.SIGINT)}
    host, port = sock.getsockname()[:2]
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
    log.info("listening", extra={"fields": {"url": url, "host": host, "port": port, "workers": args.workers,
                                            "pid": os.getpid(), "auth": token is not None, "http": http,
                                            "loop": "asyncio" if loop_factory is None else "uvloop"}})
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(server.serve(sockets=[sock]))
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        sock.close()
    log.info("stopped", extra={"fields": {"signal": signal.Signals(stopped[0]).name if stopped else None}})
    return 0


def _accelerators() -> tuple[str, Callable[[], asyncio.AbstractEventLoop] | None]:
    """uvicorn's HTTP protocol and the event loop: httptools and uvloop when installed (the ``serve`` extra
    installs both, as uvicorn's own ``standard`` extra does), else h11 and asyncio's loop (pure Python, slower:
    about half a millisecond more of the server's CPU per request)."""
    try:
        import httptools  # noqa: F401  (uvicorn's "httptools" protocol imports it again)
        http = "httptools"
    except ImportError:
        http = "h11"
    try:
        import uvloop
    except ImportError:
        return http, None
    return http, uvloop.new_event_loop


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def add_arguments(p) -> None:
    """The options of ``lyra-solver serve`` (on the subcommand's parser ``p``)."""
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on; one that is not loopback needs --token-file")
    p.add_argument("--port", type=_count(0), default=8080, help="TCP port (0: any free port, logged at start)")
    p.add_argument("--workers", type=_count(1), default=default_workers(),
                   help="engine worker processes: requests that run at once (default: the cores available)")
    p.add_argument("--queue-size", type=_count(0), default=64,
                   help="requests that may wait for a worker; past that 503 with Retry-After")
    p.add_argument("--max-body-mb", type=_positive, default=64.0, help="largest request body, MiB (413 past it)")
    p.add_argument("--request-timeout", type=_positive, default=60.0, metavar="S",
                   help="seconds from a body's arrival to its answer, queue included (504 past it: the worker is "
                        "killed and replaced)")
    p.add_argument("--body-timeout", type=_positive, default=30.0, metavar="S",
                   help="seconds a client has to send its whole body (408 past it; no worker is held meanwhile)")
    p.add_argument("--max-connections", type=_count(1), default=1000,
                   help="open connections at most (uvicorn answers 503 past it)")
    p.add_argument("--token-file", metavar="FILE",
                   help="file holding a bearer token that every request but /healthz and /readyz must present "
                        "(Authorization: Bearer TOKEN)")
