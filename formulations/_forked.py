"""A solver call run in a forked child process that is killed at a deadline (issue 9).

Some backends ignore their own time limit for a while (HiGHS's set-up before its search, CP-SAT's presolve on
large models); :func:`run_bounded` runs such a call where it can be killed, so that the caller's wall time stays
within the limit plus a small grace.
"""
from __future__ import annotations

import time

__all__ = ["FORK_MIN_SIZE", "run_bounded"]

#: Models smaller than this (variables) are solved in this process: their set-up cannot overrun a limit by
#: much, and a fork (milliseconds, more in a large process) would cost more than it saves on every small round.
FORK_MIN_SIZE = 5_000


def run_bounded(func, deadline: float, *, what: str, size: int | None = None):
    """``func()`` run in a forked child process, killed at ``deadline`` (``time.perf_counter()``); its return
    value, or None when it was killed (or died); an exception in ``func`` is raised here as a RuntimeError.

    ``func()`` runs here, unbounded, where ``fork`` is not available, in a daemonic process (which may not
    have children), and for a model of ``size`` below :data:`FORK_MIN_SIZE`."""
    import multiprocessing as mp
    import pickle

    if ((size is not None and size < FORK_MIN_SIZE) or "fork" not in mp.get_all_start_methods()
            or mp.current_process().daemon):
        return func()
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child() -> None:
        try:
            try:
                answer = (True, func())
            except BaseException as exc:  # noqa: BLE001 - re-raised in the parent, not swallowed
                answer = (False, RuntimeError(f"{what} in its child process: {exc!r}"))
            send.send_bytes(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
        finally:
            send.close()

    proc = ctx.Process(target=child, daemon=True)
    proc.start()
    send.close()
    try:
        if recv.poll(max(deadline - time.perf_counter(), 0.0)):
            try:
                ok, value = pickle.loads(recv.recv_bytes())
            except EOFError:  # the child died without an answer
                return None
            if not ok:
                raise value
            return value
        return None
    finally:
        recv.close()
        if proc.is_alive():
            proc.kill()
        proc.join()
