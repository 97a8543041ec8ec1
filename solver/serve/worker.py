"""An engine worker process of ``lyra-solver serve``: warm up, then answer requests from its pipe, one at a time.

Messages are pickled tuples over a :func:`multiprocessing.Pipe`. The server sends ``(op, payload)`` with ``op`` one
of :data:`OPS`; the worker answers ``("ready", seconds)`` once after its warm-up, then per request
``("ok", data, code, media)``, ``("input", path, message)`` (bad input: the CLI's error line) or
``("bug", one_line, traceback)``. It exits when the pipe closes (the server stopped or died).

The worker runs in its own process group (the server kills the group on a timeout, forked solver children
included) and ignores SIGINT, so a Ctrl-C on the terminal reaches only the server, which drains and stops it.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import pickle
import signal
import sys
import time
import traceback

import msgspec
from lyra_solver import io, ops
from lyra_solver.errors import InputError

__all__ = ["OPS", "handle", "main", "warm_up"]

log = logging.getLogger("lyra_solver.serve.worker")


class _Pair(msgspec.Struct, forbid_unknown_fields=True):
    """The body of ``/v1/check`` and ``/v1/apply``: two documents, kept as their exact bytes."""

    snapshot: msgspec.Raw
    decision: msgspec.Raw


def _pair(body: bytes) -> tuple[bytes, bytes]:
    pair = io.decode(body, _Pair)
    return bytes(pair.snapshot), bytes(pair.decision)


def _check(body: bytes, _opts: dict) -> ops.Output:
    return ops.check(*_pair(body), "snapshot", "decision")


def _apply(body: bytes, _opts: dict) -> ops.Output:
    return ops.apply(*_pair(body), "snapshot", "decision")


def _decide(body: bytes, opts: dict) -> ops.Output:
    return ops.decide(body, argparse.Namespace(**opts))


def _mckp(body: bytes, opts: dict) -> ops.Output:
    return ops.mckp(body, argparse.Namespace(**opts))


#: Operation name -> function of (body bytes, options) returning the CLI's output.
OPS = {"decide": _decide, "check": _check, "mckp": _mckp, "apply": _apply}


def handle(op: str, body: bytes, opts: dict) -> tuple:
    """One request's answer message (never raises for bad input or a bug in the engine)."""
    try:
        out = OPS[op](body, opts)
        return ("ok", out.data, out.code, out.media)
    except InputError as err:
        return ("input", err.path, err.line())
    except RecursionError:
        return ("input", "$", "$: nested too deeply")
    except MemoryError:
        return ("bug", "out of memory (the input is too large for this worker's memory or limits)", "")
    except Exception as err:  # a bug: the server logs the traceback, the client gets one line
        return ("bug", f"{type(err).__name__}: {err}", traceback.format_exc())


#: A small snapshot that takes every step of a round (a reclaim, a loan, an admission, elastic scaling, packing).
WARM_SNAPSHOT = b"""{"format_version": 1,
 "servers": [{"id": "t0", "pool": "training", "gpus": 8}, {"id": "i0", "pool": "inference", "gpus": 8,
  "state": "loaned"}, {"id": "i1", "pool": "inference", "gpus": 8, "state": "idle"}],
 "inference": {"reclaim": 1},
 "jobs": [{"id": "a", "min_workers": 2, "max_workers": 8, "remaining_work": 1e6,
   "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 0.9}, "placement": {"t0": 4, "i0": 4},
   "packing": {"gpu_util": 0.4, "gpu_mem_gb": 10}},
  {"id": "b", "min_workers": 2, "max_workers": 4, "remaining_work": 1e5,
   "throughput": {"kind": "profile", "model": "bert"}, "packing": {"gpu_util": 0.3, "gpu_mem_gb": 10}},
  {"id": "c", "min_workers": 16, "max_workers": 16, "remaining_work": 1e5,
   "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0},
   "packing": {"gpu_util": 0.3, "gpu_mem_gb": 10}}]}"""


def warm_up() -> float:
    """Load what the first request would otherwise pay for: the engine's modules, numba's compiled kernels (from
    their disk cache) and every route's code path, on small built-in inputs. Returns the seconds it took."""
    t0 = time.perf_counter()
    from lyra_solver.formulations.mckp import _numba

    # a long-running process: every later solve, small ones too, takes the kernels (when installed); a cold cache
    # is compiled in the background meanwhile (the numpy twins serve until then, see _numba.ready)
    _numba.load(wait=False)
    import numpy as np

    rng = np.random.default_rng(0)
    classes = []
    for _ in range(64):  # enough items for the kernel paths of the exact core
        w = np.sort(rng.integers(1, 100, 32))
        classes.append({"weights": [0, *map(int, w)], "values": [0.0, *map(float, np.cumsum(rng.random(32)))]})
    inst = msgspec.json.encode({"capacity": 800, "classes": classes})
    for method in ("auto", "greedy"):
        _mckp(inst, {"method": method, "time_limit": 5.0, "timings": False})
    for packing in ("off", "gimbal"):
        decision = _decide(WARM_SNAPSHOT, {"packing": packing, "format": "json"}).data
    pair = b'{"snapshot": ' + WARM_SNAPSHOT + b', "decision": ' + decision + b"}"
    _check(pair, {})
    _apply(pair, {})
    return time.perf_counter() - t0


def main(conn, verbosity: int) -> None:
    """The worker's loop (the target of its process): warm up, say ready, answer until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError):
        os.setpgrp()  # a group of its own: killed as one on a timeout, untouched by the terminal's Ctrl-C
    from lyra_solver.serve.logs import configure

    configure(verbosity)
    try:
        seconds = warm_up()
    except Exception:  # a broken installation: say so, the server logs it; serve anyway (the first call pays)
        log.error("warm-up failed", exc_info=True)
        seconds = float("nan")
    conn.send_bytes(pickle.dumps(("ready", seconds)))
    while True:
        try:
            op, body, opts = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        reply = handle(op, body, opts)
        del body
        try:
            conn.send_bytes(pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))
        except (BrokenPipeError, OSError):
            return
        sys.stderr.flush()
