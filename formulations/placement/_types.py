"""Worker placement: the problem types, the placement and the result types, shared by every method.

:class:`PlacementProblem` places each job's decided workers onto servers (DESIGN "Place");
:class:`JointProblem` chooses every job's worker count and placement together (Scale + Place on small
clusters). Indices, not ids: the engine maps a snapshot onto these arrays and maps the answer back.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from lyra_solver.formulations._arrays import bool_vector, float_array, index_vector, int_vector
from lyra_solver.formulations._result import SolveResult

__all__ = ["JointProblem", "JointResult", "Placement", "PlacementProblem", "PlacementResult", "joint_blocked_job",
           "joint_value", "placement_from", "unplaceable_job"]


@dataclass(frozen=True, eq=False, kw_only=True)
class PlacementProblem:
    """Place each job's workers onto servers (DESIGN "Place").

    Built with :meth:`build` (or the keyword constructor, which is the same): every array is copied into a
    read-only numpy array and checked (shapes, integrality, signs, index ranges); a ``ValueError`` names
    the offending argument.

    Attributes
    ----------
    server_free : (S,) int
        GPUs free (``>= 0``) on each usable server for the jobs of this problem (GPUs of jobs not in the
        problem already subtracted).
    server_loaned : (S,) bool
        True for a loaned (or newly loaned) inference server, False for a training server.
    job_workers : (J,) int
        Workers to place for each job (its decided count), ``>= 0``.
    job_base : (J,) int
        Base demand (``min_workers``, ``>= 0``) of each job: the workers that should sit on training servers.
    job_gpus_per_worker : (J,) int
        ``>= 1``.
    cur_job, cur_server, cur_count : (C,) int
        Current placement of running jobs (sparse), on usable servers only; workers kept in place are
        not "moved". Counts ``>= 0``.

    Examples
    --------
    >>> p = PlacementProblem.build(server_free=[8, 8], server_loaned=[False, True], job_workers=[6],
    ...                            job_base=[4], job_gpus_per_worker=[2])
    >>> p.n_servers, p.n_jobs
    (2, 1)
    >>> PlacementProblem.build(server_free=[8, 8], server_loaned=[False], job_workers=[6], job_base=[4],
    ...                        job_gpus_per_worker=[2])
    Traceback (most recent call last):
    ...
    ValueError: server_loaned: expected 2 entries, got 1
    """

    server_free: np.ndarray
    server_loaned: np.ndarray
    job_workers: np.ndarray
    job_base: np.ndarray
    job_gpus_per_worker: np.ndarray
    cur_job: np.ndarray = ()  # type: ignore[assignment]
    cur_server: np.ndarray = ()  # type: ignore[assignment]
    cur_count: np.ndarray = ()  # type: ignore[assignment]

    def __post_init__(self) -> None:
        put = object.__setattr__
        free = int_vector(self.server_free, "server_free", low=0)
        n_servers = free.shape[0]
        put(self, "server_free", free)
        put(self, "server_loaned", bool_vector(self.server_loaned, "server_loaned", length=n_servers))
        workers = int_vector(self.job_workers, "job_workers", low=0)
        n_jobs = workers.shape[0]
        put(self, "job_workers", workers)
        put(self, "job_base", int_vector(self.job_base, "job_base", length=n_jobs, low=0))
        put(self, "job_gpus_per_worker", int_vector(self.job_gpus_per_worker, "job_gpus_per_worker",
                                                    length=n_jobs, low=1))
        cj = index_vector(self.cur_job, "cur_job", length=None, bound=n_jobs, of="jobs")
        put(self, "cur_job", cj)
        put(self, "cur_server", index_vector(self.cur_server, "cur_server", length=cj.shape[0], bound=n_servers,
                                             of="servers"))
        put(self, "cur_count", int_vector(self.cur_count, "cur_count", length=cj.shape[0], low=0))

    @classmethod
    def build(cls, **arrays: Any) -> PlacementProblem:
        """Build and check a problem from keyword arguments (lists or arrays); see the class attributes."""
        return cls(**arrays)

    @classmethod
    def trusted(cls, *, server_free: Any, server_loaned: Any, job_workers: Any, job_base: Any,
                job_gpus_per_worker: Any, cur_job: Any = (), cur_server: Any = (),
                cur_count: Any = ()) -> PlacementProblem:
        """The problem :meth:`build` makes of the same arguments (the same read-only int64 and bool copies),
        without its checks: for a caller whose arrays come from a snapshot that was validated already (the
        round's place step, where the checks were a fifth of the step on a small cluster). Arrays that break
        the rules of the class attributes give wrong answers here instead of a ``ValueError``.

        Running time O(S + J + C) copies.
        """
        obj = object.__new__(cls)
        put = object.__setattr__
        for name, value, dtype in (("server_free", server_free, np.int64), ("server_loaned", server_loaned, bool),
                                   ("job_workers", job_workers, np.int64), ("job_base", job_base, np.int64),
                                   ("job_gpus_per_worker", job_gpus_per_worker, np.int64),
                                   ("cur_job", cur_job, np.int64), ("cur_server", cur_server, np.int64),
                                   ("cur_count", cur_count, np.int64)):
            arr = np.array(value, dtype=dtype)
            arr.setflags(write=False)
            put(obj, name, arr)
        return obj

    @property
    def n_servers(self) -> int:
        """Number of usable servers ``S``."""
        return int(self.server_free.shape[0])

    @property
    def n_jobs(self) -> int:
        """Number of jobs ``J`` to place."""
        return int(self.job_workers.shape[0])


@dataclass(frozen=True, eq=False)
class Placement:
    """A placement: for each job a tuple of ``(server index, workers)`` pairs, servers ascending."""

    per_job: tuple[tuple[tuple[int, int], ...], ...]

    def base_on_loaned(self, problem: PlacementProblem) -> int:
        """Base-demand workers on loaned servers: ``sum_j max(0, base_j - workers_j on training)``."""
        loaned, base = problem.server_loaned.tolist(), problem.job_base.tolist()
        total = 0
        for j, pairs in enumerate(self.per_job):
            on_training = sum(n for s, n in pairs if not loaned[s])
            total += max(0, base[j] - on_training)
        return total

    def spans(self) -> int:
        """Servers spanned, summed over jobs."""
        return sum(len(p) for p in self.per_job)

    def moved(self, problem: PlacementProblem) -> int:
        """Running workers not kept on their current server: ``sum_js max(0, cur_js - new_js)``."""
        new = {(j, s): n for j, pairs in enumerate(self.per_job) for s, n in pairs}
        triples = zip(problem.cur_job.tolist(), problem.cur_server.tolist(), problem.cur_count.tolist(), strict=True)
        return int(sum(max(0, c - new.get((j, s), 0)) for j, s, c in triples))

    def objective(self, problem: PlacementProblem) -> tuple[int, int, int]:
        """``(base_on_loaned, spans, moved)``, the lexicographic objective of :func:`solve_placement`."""
        return self.base_on_loaned(problem), self.spans(), self.moved(problem)

    def workers(self) -> np.ndarray:
        """Workers placed per job, ``(J,)`` int."""
        return np.fromiter((sum(n for _, n in pairs) for pairs in self.per_job), np.int64, len(self.per_job))


def unplaceable_job(problem: PlacementProblem) -> int | None:
    """The first job with workers to place whose worker fits on no server (``None`` when every job fits)."""
    widest = int(problem.server_free.max()) if problem.n_servers else 0
    for j in range(problem.n_jobs):
        if int(problem.job_workers[j]) > 0 and int(problem.job_gpus_per_worker[j]) > widest:
            return j
    return None


def placement_from(values: list[int], nvar: dict[tuple[int, int], int], n_jobs: int) -> Placement:
    """The placement read from a solution: ``values[nvar[(j, s)]]`` workers of job ``j`` on server ``s``."""
    per: list[list[tuple[int, int]]] = [[] for _ in range(n_jobs)]
    for (j, s), v in sorted(nvar.items()):
        if values[v] > 0:
            per[j].append((s, int(values[v])))
    return Placement(per_job=tuple(tuple(p) for p in per))


@dataclass(frozen=True, kw_only=True)
class PlacementResult(SolveResult):
    """Answer of :func:`~lyra_solver.formulations.placement.solve_placement`.

    The :class:`SolveResult` fields, with a lexicographic objective: ``status`` is ``optimal`` when all three
    stages are proven, ``feasible`` with a placement of every worker otherwise, ``infeasible`` / ``no_solution``
    without one; ``bound`` is a proven lower bound on the first component (base workers on loaned servers) and
    ``gap`` is 0 when optimal, else the relative gap of the first component and its bound. A heuristic that
    fragmentation stops short (best fit decreasing) gives ``no_solution`` with the partial placement it made and
    no objective: :attr:`placed` says how many workers each job got.

    Attributes
    ----------
    objective : tuple of int or None
        ``(base_on_loaned, spans, moved)`` of the placement, recomputed by :class:`Placement`.
    placement : Placement or None
    """

    objective: tuple[int, int, int] | None  # type: ignore[assignment]
    placement: Placement | None = None

    @property
    def placed(self) -> np.ndarray | None:
        """Workers placed per job (``(J,)`` int; ``job_workers`` unless a heuristic stopped short), ``None``
        without a placement. O(size of the placement)."""
        return None if self.placement is None else self.placement.workers()


@dataclass(frozen=True, eq=False, kw_only=True)
class JointProblem:
    """Scale and place together: each job picks a worker count and a placement.

    Built with :meth:`build` (or the keyword constructor): checked as :class:`PlacementProblem` is.

    Attributes
    ----------
    server_free : (S,) int
        Free GPUs per server, ``>= 0``.
    job_min, job_max : (J,) int
        Worker range, ``1 <= min_j <= max_j``.
    job_gpus_per_worker : (J,) int
        ``>= 1``.
    value : tuple of (max_j - min_j + 1, K_j) float arrays
        ``value[j][w - min_j][k - 1]``: value of running job ``j`` at ``w`` workers spread over exactly
        ``k`` servers (``k <= min(w, K_j, S)``); ``nan`` or ``-inf`` forbids the option.

    Examples
    --------
    >>> JointProblem.build(server_free=[4], job_min=[1], job_max=[2], job_gpus_per_worker=[1],
    ...                    value=[[[1.0]]])
    Traceback (most recent call last):
    ...
    ValueError: value[0]: expected 2 rows (job_max[0] - job_min[0] + 1), got 1
    """

    server_free: np.ndarray
    job_min: np.ndarray
    job_max: np.ndarray
    job_gpus_per_worker: np.ndarray
    value: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "server_free", int_vector(self.server_free, "server_free", low=0))
        jmin = int_vector(self.job_min, "job_min", low=1)
        n_jobs = jmin.shape[0]
        jmax = int_vector(self.job_max, "job_max", length=n_jobs)
        below = jmax < jmin
        if below.any():
            j = int(np.flatnonzero(below)[0])
            raise ValueError(f"job_max[{j}]: {int(jmax[j])} is below job_min[{j}] = {int(jmin[j])}")
        put(self, "job_min", jmin)
        put(self, "job_max", jmax)
        put(self, "job_gpus_per_worker", int_vector(self.job_gpus_per_worker, "job_gpus_per_worker",
                                                    length=n_jobs, low=1))
        try:
            n_values = len(self.value)
        except TypeError:
            raise ValueError("value: expected one table per job") from None
        if n_values != n_jobs:
            raise ValueError(f"value: expected {n_jobs} tables (one per job), got {n_values}")
        tables = []
        for j, v in enumerate(self.value):
            table = float_array(np.atleast_2d(np.asarray(v, dtype=np.float64)), f"value[{j}]",
                                shape=(None, None), nan=True)
            rows = int(jmax[j] - jmin[j] + 1)
            if table.shape[0] != rows:
                raise ValueError(f"value[{j}]: expected {rows} rows (job_max[{j}] - job_min[{j}] + 1), "
                                 f"got {table.shape[0]}")
            tables.append(table)
        put(self, "value", tuple(tables))

    @classmethod
    def build(cls, **arrays: Any) -> JointProblem:
        """Build and check a problem from keyword arguments (lists or arrays); see the class attributes."""
        return cls(**arrays)

    @property
    def n_servers(self) -> int:
        """Number of servers ``S``."""
        return int(self.server_free.shape[0])

    @property
    def n_jobs(self) -> int:
        """Number of jobs ``J``."""
        return int(self.job_min.shape[0])

    def option_value(self, j: int, w: int, k: int) -> float:
        """``value[j][w - min_j][k - 1]``, or ``-inf`` when the option is outside the table or forbidden."""
        v = self.value[j]
        r, c = w - int(self.job_min[j]), k - 1
        if not (0 <= r < v.shape[0] and 0 <= c < v.shape[1]):
            return float("-inf")
        x = float(v[r, c])
        return x if np.isfinite(x) else float("-inf")


def joint_blocked_job(problem: JointProblem) -> int | None:
    """The first job with no allowed (workers, servers spanned) option on this cluster (``None``: none)."""
    for j in range(problem.n_jobs):
        g = int(problem.job_gpus_per_worker[j])
        lo, hi = int(problem.job_min[j]), int(problem.job_max[j])
        hosts = int((problem.server_free >= g).sum())
        if not any(problem.option_value(j, w, k) != float("-inf")
                   for w in range(lo, hi + 1) for k in range(1, min(w, hosts) + 1)):
            return j
    return None


@dataclass(frozen=True, kw_only=True)
class JointResult(SolveResult):
    """Answer of :func:`~lyra_solver.formulations.placement.solve_joint`: the :class:`SolveResult` fields
    (``objective`` the total value, maximised; ``bound`` an upper bound) plus the solution.

    Attributes
    ----------
    workers : tuple of int
        Chosen worker count of each job (empty without a solution).
    placement : Placement or None
        ``(server, workers)`` pairs per job.
    """

    workers: tuple[int, ...] = ()
    placement: Placement | None = None


def joint_value(problem: JointProblem, placement: Placement) -> float:
    """Total value of a joint answer: ``sum_j value[j][w_j - min_j][k_j - 1]`` (``-inf`` if forbidden)."""
    total = 0.0
    for j, pairs in enumerate(placement.per_job):
        total += problem.option_value(j, sum(n for _, n in pairs), len(pairs))
    return total
