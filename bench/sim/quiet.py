"""Rounds whose decision is known without calling ``decide`` (the engine skips them, counted as ``quiet_rounds``).

:func:`is_quiet`: nothing queued, no reclaim asked, and every running job at its largest shown size (and, for a
policy whose rounds consolidate spread jobs, :meth:`~.policies.base.Policy.consolidates`, none spread over more
servers than its size needs). Then no step can change anything (nothing to admit, no loan wanted, every elastic
job's top option is the one it holds, placements of unchanged jobs are kept). Also quiet, for policies whose
:meth:`~.policies.base.Policy.skips_kept_sizes` holds (greedy allocation, elastic, no packing, no two-queue
preemption): nothing queued, no reclaim, and every elastic job held at the strict best size of its value row
(:class:`SizesKept`; not for jobs of the Pollux model, whose rates change with the epoch). Exact, not an
approximation: tests compare against runs that call ``decide`` every round.
"""
from __future__ import annotations

import numpy as np
from lyra_solver.values import TIME_CAP, JobOptions, value_table


def is_quiet(sim) -> bool:
    """Whether the engine ``sim``'s next round is known to change nothing (module docstring).

    What depends on the jobs' allocations only (guests, sizes at their top, spread placements, the elastic jobs
    whose kept sizes are not yet known) is found once per change of the engine's allocations
    (``sim.version``, bumped by every round, completion and arrival), not at every check."""
    if not sim.cfg.skip_quiet or len(sim.running) != len(sim.active) or sim.cluster.reclaim_wanted():
        return False
    kept = sim.kept
    if kept.version != sim.version:
        kept.version, kept.verdict, kept.pending = sim.version, _verdict(sim), None
    return kept.verdict if kept.verdict is not None else kept.holds(sim)


def _verdict(sim) -> bool | None:
    """Quiet (True) or not (False) whatever the jobs' work, or None: quiet iff the kept sizes hold."""
    pol = sim.policy
    jobs, top = sim.jobs, sim.top
    # guests are queued in the snapshot; a job is a guest only while the last decision packed (a round after one
    # that packed carries out every job, and a guest not packed again leaves its host), which ``check`` verifies
    if sim.packing or sim.cfg.check:
        for i in sim.running:
            if jobs[i].host is not None:
                if not sim.packing:
                    raise AssertionError(f"job {jobs[i].spec.id} is a packing guest after a round that packed none")
                return False
    if sim.vec:  # the running jobs' workers in their rows (the engine's arrays), against their largest sizes
        _, idx, workers, _ = sim.running_rows()
        at_top = bool((workers == sim.top_rows()[idx]).all())
    else:
        at_top = all(jobs[i].workers == top[i] for i in sim.running)
    if at_top and pol.consolidates():  # a spread job may be moved onto fewer servers (steps/place.py)
        G = sim.cluster.G
        at_top = all(len(jobs[i].placement or ()) <= -(-jobs[i].workers // G) for i in sim.running)  # 1 GPU each
    if at_top:
        return True
    return None if pol.skips_kept_sizes() and not sim.modelled else False


def _unkept_np(idx: np.ndarray, wk: np.ndarray, rem: np.ndarray, elastic: np.ndarray, kept_w: np.ndarray,
               kept_r: np.ndarray) -> np.ndarray:
    """The rows of the running jobs (arrival indices ``idx``, workers ``wk``, remaining work ``rem``: the engine's
    rows) of an elastic job not found kept at its size and work (``kept_w``, ``kept_r`` by arrival index, -1: none
    found); their indices, ascending. The numpy twin of :func:`._nbtime.unkept`. O(len(idx))."""
    return np.flatnonzero(elastic[idx] & ((kept_w[idx] != wk) | (np.maximum(rem, 0.0) > kept_r[idx])))


def _by_arrival(j) -> int:
    return j.idx


class SizesKept:
    """Whether the greedy allocation keeps every running job at its size, in a round with nothing queued, no
    reclaim and no packing (so nothing is admitted, nothing shrinks and the scale step alone could change
    a placement).

    The scale step's values are those of :func:`lyra_solver.values.value_table` (computed here by the same
    function on the same options, over each elastic job's whole range ``min..max``; the step's row is a
    part of it that holds the current size). When the current size ``c`` of every elastic job is the
    strict maximum of its row (by a margin far above rounding), ``c`` is the last undominated item of its
    class, and the sizes held fit in the capacity (which counts their workers above ``min``), so the
    greedy takes every upgrade up to ``c`` and stops there: the targets are the current sizes, placement
    keeps every job where it is, and no borrowed server hosts a worker. The decision changes nothing.

    A job found so at size ``c`` with remaining work ``R`` stays so while it holds ``c`` and its work only
    shrinks: ``value(c) - value(w) = R (1 / rate(w) - 1 / rate(c)) + restart_penalty`` does not decrease
    as ``R`` does (no time at the cap, rates fixed by ``w``), so the margin found once, far above
    rounding, still holds. Such jobs are remembered and their rows not computed again.

    The other way round, a job found not kept at size ``c`` stays so while ``R`` stays large: with
    ``g = max_w (1 / rate(c) - 1 / rate(w))`` and ``u = max_w 1 / rate(w)`` (read off its row, times over
    ``R``), ``R g >= pen (1 + 1e-6) + 1e-6 (1 + R u)`` makes ``value(c) - value(w)`` negative by far more than
    rounding for the fastest ``w``, below the margin (no time at the cap). Such a job makes the check false
    without a table (:attr:`beaten`); below that work its row is computed again.
    """

    def __init__(self) -> None:
        self.kept: dict[int, tuple[int, float]] = {}  # job -> (size, remaining work) found kept
        self.beaten: dict[int, tuple[int, float, float, float]] = {}  # job -> (size, g, u, pen) found not kept
        # is_quiet's memo for one version of the engine's allocations: its verdict, and the running elastic
        # jobs (in arrival order) not found kept (None: not listed yet)
        self.version: int | None = None
        self.verdict: bool | None = None
        self.pending: list | None = None
        # with the engine's arrays: kept's sizes and works by job (-1: none found), whether each job is elastic
        self._kw: np.ndarray | None = None
        self._kr: np.ndarray | None = None
        self._el: np.ndarray | None = None
        self._out: np.ndarray | None = None  # scratch: the rows listed (._nbtime.unkept)

    def _listed(self, sim) -> list:
        """The running elastic jobs not found kept at their size and work (:meth:`holds`' listing), in arrival
        order, from the engine's arrays (:meth:`~.engine._Sim.running_rows`). O(running jobs) in numpy."""
        if self._kw is None:
            n = len(sim.jobs)
            self._kw, self._kr = np.full(n, -1.0), np.zeros(n)
            self._el = np.fromiter((j.spec.min_workers < j.spec.max_workers for j in sim.jobs), bool, n)
            self._out = np.zeros(n, np.int64)
            for i, (w, r) in self.kept.items():
                self._kw[i], self._kr[i] = w, r
        jobs, idx, workers, rem = sim.running_rows()
        nb = sim._kernels()  # the compiled twin once the package's kernels are loaded
        if nb is None:
            found = _unkept_np(idx, workers, rem, self._el, self._kw, self._kr).tolist()
        else:
            found = self._out[:nb.unkept(len(idx), idx, workers, rem, self._el, self._kw, self._kr,
                                         self._out)].tolist()
        rows = [jobs[k] for k in found]
        rows.sort(key=_by_arrival)
        return rows

    def holds(self, sim) -> bool:
        """Whether every running elastic job is kept at its size. The jobs not found kept are listed once per
        version of the allocations (:attr:`pending`; one found kept stays so, the class docstring) and only
        their rows computed, with their work of now."""
        rows = self.pending
        if rows is None and sim.vec:  # the same listing on the engine's arrays of running jobs
            rows = self._listed(sim)
        elif rows is None:
            rows = []
            jobs, kept = sim.jobs, self.kept
            for i in sim.running:
                j = jobs[i]
                sp = j.spec
                if sp.min_workers < sp.max_workers:
                    seen = kept.get(i)
                    if seen is None or seen[0] != j.workers or max(j.remaining, 0.0) > seen[1]:
                        rows.append(j)
            rows.sort(key=_by_arrival)  # in arrival order, as always
        self.pending = rows
        if not rows:
            return True
        beaten = self.beaten
        for j in rows:  # one job surely not kept decides (the class docstring)
            b = beaten.get(j.idx)
            if b is not None and b[0] == j.workers:
                r = max(sim.remaining(j), 0.0)
                if r * b[1] >= b[3] * (1.0 + 1e-6) + 1e-6 * (1.0 + r * b[2]) and r * b[2] < 0.5 * TIME_CAP:
                    return False
        sim.sync_jobs(rows)
        opts = [JobOptions(sim.throughput(j.spec.app), j.spec.min_workers, j.spec.max_workers,
                           max(j.remaining, 0.0), 1, j.workers, j.spec.restart_penalty) for j in rows]
        table = value_table(opts, server_gpus=sim.cluster.G, backend="numpy")
        n = len(rows)
        at = np.fromiter((j.workers - j.spec.min_workers for j in rows), np.int64, n)
        values = table.values.copy()
        held = values[np.arange(n), at]
        values[np.arange(n), at] = -np.inf
        pen = np.fromiter((j.spec.restart_penalty for j in rows), np.float64, n)
        # far above rounding and above the 1e-9 (of |T(min)| + |T(w)| + penalty) by which a GPU backend's table
        # may differ from numpy's
        longest = np.abs(table.times).max(axis=1)
        margin = 1e-6 * (1.0 + np.abs(table.times[:, 0]) + longest + pen)
        ok = held - values.max(axis=1) > margin
        # per row: g and u times the work (T(c) - the shortest time, the longest time), for the jobs not kept
        fastest = table.times[np.arange(n), at] - table.times.min(axis=1)
        left = []
        for j, good, top, gain in zip(rows, ok.tolist(), longest.tolist(), fastest.tolist(), strict=True):
            if good and top < TIME_CAP:
                self.kept[j.idx] = (j.workers, max(j.remaining, 0.0))
                if self._kw is not None:
                    self._kw[j.idx], self._kr[j.idx] = self.kept[j.idx]
            else:
                left.append(j)
                r = max(j.remaining, 0.0)
                if not good and gain > 0.0 and r > 0.0 and top < TIME_CAP:
                    beaten[j.idx] = (j.workers, gain / r, top / r, j.spec.restart_penalty)
        self.pending = left
        return bool(ok.all())
