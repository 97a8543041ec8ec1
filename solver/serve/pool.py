"""The engine's worker processes, driven from the server's event loop: a bounded queue in front of N workers.

A request takes a warm idle worker or waits in a queue of at most ``queue_size`` requests (past that,
:class:`QueueFull`: the service answers 503). The request's deadline covers the wait and the work; past it a
queued request leaves the queue, and a running one's worker is killed with its process group (forked solver
children included) and replaced: :class:`Timeout` (504). A worker that dies is replaced as well
(:class:`WorkerDied`, a 500). Results travel as pickled messages over a pipe that the event loop watches with
``add_reader``, so no thread waits on a worker.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import multiprocessing
import os
import pickle
import signal
import time

__all__ = ["Pool", "QueueFull", "Timeout", "WorkerDied"]

log = logging.getLogger("lyra_solver.serve.pool")

#: Payloads above this many bytes are written to a worker's pipe from a thread (the event loop keeps answering).
BIG_PAYLOAD = 1 << 20
#: Seconds a stopping worker gets to exit after its pipe closes, before it is killed.
STOP_GRACE_S = 2.0


class QueueFull(Exception):
    """Every worker is busy and the queue is full."""


class Timeout(Exception):
    """The request's deadline passed (queued or running)."""


class WorkerDied(Exception):
    """The worker running the request exited (a crash, a kill by the system)."""


class _Worker:
    def __init__(self, ctx, verbosity: int, index: int) -> None:
        from lyra_solver.serve.worker import main

        self.index = index
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=main, args=(child, verbosity), name=f"lyra-worker-{index}", daemon=False)
        self.process.start()
        child.close()
        self.warm = False

    def kill(self) -> None:
        """SIGKILL the worker's process group (its forked solver children too), then the worker itself."""
        pid = self.process.pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                # the worker leads its own group (setpgrp at start); the group outlives a reaped leader while a
                # forked solver child is left in it, so it is killed by its id, not looked up from the pid
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, OSError):
                self.process.kill()
        with contextlib.suppress(OSError):
            self.conn.close()

    async def receive(self, timeout: float | None) -> bytes:
        """The worker's next message; :class:`Timeout` past ``timeout`` seconds, :class:`WorkerDied` on EOF."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bytes] = loop.create_future()
        fd = self.conn.fileno()

        def readable() -> None:
            loop.remove_reader(fd)
            if fut.done():
                return
            try:
                fut.set_result(self.conn.recv_bytes())
            except (EOFError, OSError) as err:
                fut.set_exception(WorkerDied(str(err) or "the worker's pipe closed"))

        def expired() -> None:
            if not fut.done():
                fut.set_exception(Timeout())

        loop.add_reader(fd, readable)
        # one timer on the future itself (wait_for adds a second future and a callback per request)
        timer = None if timeout is None else loop.call_later(timeout, expired)
        try:
            return await fut
        finally:
            if timer is not None:
                timer.cancel()
            with contextlib.suppress(Exception):
                loop.remove_reader(fd)

    async def send(self, payload: bytes) -> None:
        if len(payload) > BIG_PAYLOAD:
            await asyncio.get_running_loop().run_in_executor(None, self.conn.send_bytes, payload)
        else:
            self.conn.send_bytes(payload)


class Pool:
    """N engine workers behind a bounded queue (use from one event loop).

    Parameters
    ----------
    workers : int
        Worker processes (requests that run at once).
    queue_size : int
        Requests that may wait for a worker; one more is :class:`QueueFull`.
    verbosity : int
        The workers' log verbosity (:func:`lyra_solver.serve.logs.configure`).
    warm_timeout : float
        Seconds a new worker has to load and warm up before it is killed and replaced.
    """

    def __init__(self, workers: int, queue_size: int, verbosity: int = 0, warm_timeout: float = 300.0) -> None:
        self.size = workers
        self.queue_size = queue_size
        self.verbosity = verbosity
        self.warm_timeout = warm_timeout
        self.ctx = multiprocessing.get_context("spawn")
        self.idle: collections.deque[_Worker] = collections.deque()
        self.waiters: collections.deque[asyncio.Future] = collections.deque()
        self.all: set[_Worker] = set()
        self.busy = 0
        self.restarts = 0
        self.closing = False
        self._count = 0
        self._tasks: set[asyncio.Task] = set()

    # ------------------------------------------------------------------------------------------ state
    @property
    def warm(self) -> int:
        return sum(1 for w in self.all if w.warm)

    @property
    def queued(self) -> int:
        return sum(1 for f in self.waiters if not f.done())

    def ready(self) -> bool:
        return not self.closing and self.warm == self.size

    # ------------------------------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        for _ in range(self.size):
            self._spawn()

    def _spawn(self) -> None:
        if self.closing:
            return
        self._count += 1
        worker = _Worker(self.ctx, self.verbosity, self._count)
        self.all.add(worker)
        task = asyncio.get_running_loop().create_task(self._warm(worker))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _warm(self, worker: _Worker) -> None:
        t0 = time.perf_counter()
        try:
            msg = pickle.loads(await worker.receive(self.warm_timeout))
        except (Timeout, WorkerDied) as err:
            log.error("worker did not start", extra={"fields": {"worker": worker.index, "reason": type(err).__name__,
                                                                 "exitcode": worker.process.exitcode}})
            self._replace(worker)
            await asyncio.sleep(1.0)  # no busy loop when the installation is broken
            return
        worker.warm = True
        log.info("worker warm", extra={"fields": {"worker": worker.index, "pid": worker.process.pid,
                                                  "warm_up_s": round(msg[1], 3),
                                                  "start_s": round(time.perf_counter() - t0, 3)}})
        self._release(worker)

    def _replace(self, worker: _Worker) -> None:
        worker.kill()
        self.all.discard(worker)
        with contextlib.suppress(ValueError):
            self.idle.remove(worker)
        if not self.closing:
            self.restarts += 1
            self._spawn()

    def _release(self, worker: _Worker) -> None:
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(worker)
                return
        self.idle.append(worker)

    async def close(self) -> None:
        """Stop every worker: close its pipe (it exits), kill what is left after :data:`STOP_GRACE_S`."""
        self.closing = True
        for fut in self.waiters:
            if not fut.done():
                fut.set_exception(QueueFull())
        for task in list(self._tasks):
            task.cancel()
        for w in self.all:
            with contextlib.suppress(OSError):
                w.conn.close()
        deadline = time.monotonic() + STOP_GRACE_S
        while any(w.process.is_alive() for w in self.all) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for w in self.all:
            if w.process.is_alive():
                w.kill()
            w.process.join(timeout=1.0)
        self.all.clear()
        self.idle.clear()

    # ------------------------------------------------------------------------------------------ requests
    async def run(self, op: str, body: bytes, opts: dict, timeout: float) -> tuple:
        """The worker's answer to one request (see :mod:`lyra_solver.serve.worker`), within ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        message = pickle.dumps((op, body, opts), protocol=pickle.HIGHEST_PROTOCOL)
        for _ in range(self.size + 1):  # an idle worker that died meanwhile is replaced, the request sent to another
            worker = await self._acquire(deadline)
            if not worker.process.is_alive():  # died while idle (a write to its pipe could still succeed)
                log.error("worker died while idle", extra={"fields": {"worker": worker.index,
                                                                      "exitcode": worker.process.exitcode}})
                self._replace(worker)
                continue
            try:
                await worker.send(message)
                break
            except OSError:
                log.error("worker died while idle", extra={"fields": {"worker": worker.index,
                                                                      "exitcode": worker.process.exitcode}})
                self._replace(worker)
        else:
            raise WorkerDied("every worker tried had exited")
        self.busy += 1
        try:
            reply = pickle.loads(await worker.receive(max(0.0, deadline - loop.time())))
        except Timeout:
            log.warning("request timed out: worker killed and replaced",
                        extra={"fields": {"worker": worker.index, "op": op, "timeout_s": timeout}})
            self._replace(worker)
            raise
        except (WorkerDied, OSError, EOFError) as err:
            code = worker.process.exitcode
            log.error("worker died", extra={"fields": {"worker": worker.index, "op": op, "exitcode": code}})
            self._replace(worker)
            raise WorkerDied(f"the worker process exited ({'signal ' + str(-code) if code and code < 0 else code})"
                             ) from err
        except asyncio.CancelledError:  # the server is being torn down mid-request: the worker's state is unknown
            self._replace(worker)
            raise
        finally:
            self.busy -= 1
        self._release(worker)
        return reply

    async def _acquire(self, deadline: float) -> _Worker:
        if self.closing:
            raise QueueFull()
        if self.idle and not self.queued:
            return self.idle.popleft()
        if self.queued >= self.queue_size:
            raise QueueFull()
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[_Worker] = loop.create_future()
        self.waiters.append(fut)
        try:
            return await asyncio.wait_for(asyncio.shield(fut), max(0.0, deadline - loop.time()))
        except TimeoutError:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self._release(fut.result())  # handed over just as the deadline passed: pass it on
            else:
                fut.cancel()
            raise Timeout() from None
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self._release(fut.result())
            else:
                fut.cancel()
            raise
        finally:
            with contextlib.suppress(ValueError):
                self.waiters.remove(fut)
