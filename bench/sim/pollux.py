"""The Pollux artifact's job model: a job trains to the end of its model's ``max_epochs`` at a fixed batch size.

Facts of the artifact (Qiao et al., OSDI 2021; petuum/adaptdl, branch osdi21-artifact, ``simulator/``), read from
``shared/data/README.md`` and re-implemented here:

- **Work** is statistical progress: the ``progress`` reached at the end of epoch ``max_epochs - 1`` (the smallest
  over the validated batch sizes; epochs counted from 0). Epoch ``e`` runs from ``P(e)`` to ``P(e + 1)`` with
  ``P(0) = 0`` and ``P(e)`` the smallest ``progress`` of row ``e - 1`` over the validated batch sizes.
- **Progress per second** during epoch ``e`` = ``gain / step time``, ``gain = (var + sqr) / (var / scale + sqr)``,
  ``scale`` = the effective global batch / the initial (smallest validated) batch, with the gradient statistics
  ``grad_sqr``, ``grad_var`` of epoch ``e`` interpolated linearly between the two nearest validated batch sizes.
- **Batch configuration** at global batch ``B`` on ``n`` replicas: local batch ``ceil(B / n)``; gradient
  accumulation steps ``a = ceil(local / max_local) - 1`` (at least 1 on a single replica when ``B`` exceeds the
  initial batch, as the artifact does); atomic batch ``ceil(local / (a + 1))``, at most ``max_batch / (n (a + 1))``;
  the effective batch ``n x atomic x (a + 1)``.
- **Step time** of a placement (replicas per node) at the atomic batch: the measured ``placements.csv`` rows of
  that placement's arrangement (:func:`arrangement`: the one the artifact looks up for the placements its
  allocator makes), linear in the local batch (clamped to the measured range); a placement not measured there
  is interpolated linearly in (nodes, replicas, local batch) over the per-(nodes, replicas, local batch) means
  of ``placements.csv`` and the rows of ``scalability.csv`` (Delaunay,
  :class:`scipy.interpolate.LinearNDInterpolator`; nodes capped at 16; outside the hull the nearest measured
  point). With accumulation the step takes ``step + a (step - sync)``.
- ``max_epochs``: bert 2, cifar10 100, ncf 10, imagenet 90, deepspeech2 80, yolov3 50; yolov3's largest local
  batch is 8.

Epoch ends: the artifact steps each job round by round and rounds the part of an epoch that ends within a round to
whole seconds; the engine does the same with ``SimConfig.round_epochs`` (set by ``--preset pollux-artifact``,
``engine._Sim._epoch_end``), else it crosses epochs at their exact solved times. The roundings do not cancel (a
job's later epochs are about equally long): cifar10 at batch 2048 on 4 + 2 replicas ends 12.7 s later rounded.

Running time: loading an application O(R log R) for R measured rows; a rate O(log R) after the first call for its
(batch, placement, epoch), cached.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from lyra_solver.errors import InputError

MAX_EPOCHS = {"bert": 2, "cifar10": 100, "ncf": 10, "imagenet": 90, "deepspeech2": 80, "yolov3": 50}
MAX_LOCAL_BSZ = {"yolov3": 8}  # the artifact's override; others: the largest measured local batch


def _read(path: Path) -> list[dict[str, str]]:
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            return list(csv.DictReader(fh))
    except OSError as err:
        raise InputError("$", f"cannot read: {err.strerror}", str(path)) from None


class App:
    """One application's measurements (``validation/<app>/`` and ``throughput/<app>/`` of the Pollux data)."""

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        vdir = root / "validation" / name
        files = sorted(vdir.glob("validation-*.csv"), key=lambda p: int(p.stem.split("-")[1]))
        if not files:
            raise InputError("$", f"no validation curves for {name!r}", str(vdir))
        self.bsz = [int(p.stem.split("-")[1]) for p in files]
        cols = ("progress", "iteration", "grad_sqr", "grad_var")
        self.val = {}
        for b, p in zip(self.bsz, files, strict=True):
            rows = _read(p)
            self.val[b] = {c: np.array([float(r[c]) for r in rows]) for c in cols}
        self.init_bsz, self.max_bsz = self.bsz[0], self.bsz[-1]
        self.max_epochs = MAX_EPOCHS[name]
        tdir = root / "throughput" / name
        place = _read(tdir / "placements.csv")
        scal = _read(tdir / "scalability.csv")
        self.min_local = min(int(r["local_bsz"]) for r in place)
        self.max_local = MAX_LOCAL_BSZ.get(name, max(int(r["local_bsz"]) for r in place))
        by: dict[tuple[int, ...], list[tuple[float, float, float]]] = {}
        for r in place:  # one arrangement per row, as measured ("1212" and "1122" are different placements)
            key = tuple(int(c) for c in r["placement"])
            by.setdefault(key, []).append((float(r["local_bsz"]), float(r["step_time"]), float(r["sync_time"])))
        self.placements = {}
        for key, pts in by.items():
            pts.sort()
            self.placements[key] = tuple(np.array(x) for x in zip(*pts, strict=True))
        groups: dict[tuple[int, int, float], list[tuple[float, float]]] = {}
        for key, (lb, st, sy) in self.placements.items():
            for x, s, y in zip(lb.tolist(), st.tolist(), sy.tolist(), strict=True):
                groups.setdefault((len(key), sum(key), x), []).append((s, y))
        pts = [(*k, float(np.mean([v[0] for v in vs])), float(np.mean([v[1] for v in vs])))
               for k, vs in groups.items()]
        pts += [(int(r["num_nodes"]), int(r["num_replicas"]), float(r["local_bsz"]), float(r["step_time"]),
                 float(r["sync_time"])) for r in scal]
        self._nd_points = np.array([p[:3] for p in pts], dtype=np.float64)
        self._nd_values = np.array([p[3:] for p in pts], dtype=np.float64)
        self._nd = None
        self.work = self.progress_at(self.max_epochs)
        self._rates: dict[tuple[int, tuple[int, ...], int], float] = {}
        self._steps: dict[tuple[tuple[int, ...], float], tuple[float, float]] = {}

    # ------------------------------------------------------------------------------------------ statistics
    def progress_at(self, epoch: int) -> float:
        """``P(epoch)``: the progress at the start of ``epoch`` (0 for epoch 0)."""
        if epoch <= 0:
            return 0.0
        return float(min(v["progress"][epoch - 1] for v in self.val.values()))

    def _around(self, b: float) -> tuple[int, int]:
        lo = max(x for x in self.bsz if x <= b)
        hi = min(x for x in self.bsz if x >= b)
        return lo, hi

    def grad_stats(self, b: float, epoch: int) -> tuple[float, float]:
        """(grad_sqr, grad_var) of ``epoch`` at global batch ``b``, linear between validated batch sizes."""
        lo, hi = self._around(b)
        vl, vh = self.val[lo], self.val[hi]
        if lo == hi:
            return float(vl["grad_sqr"][epoch]), float(vl["grad_var"][epoch])
        w = (b - lo) / (hi - lo)
        return (float((1 - w) * vl["grad_sqr"][epoch] + w * vh["grad_sqr"][epoch]),
                float((1 - w) * vl["grad_var"][epoch] + w * vh["grad_var"][epoch]))

    def config(self, b: int, n: int) -> tuple[int, int]:
        """(atomic batch, accumulation steps) at global batch ``b`` on ``n`` replicas."""
        local = math.ceil(b / n - 1e-8)
        accum = math.ceil(local / self.max_local - 1e-8) - 1
        if n == 1 and b > self.init_bsz:
            accum = max(1, accum)
        atomic = math.ceil(local / (accum + 1) - 1e-8)
        atomic = min(atomic, int(self.max_bsz / (n * (accum + 1))))
        return atomic, accum

    # ------------------------------------------------------------------------------------------ step times
    def step_sync(self, counts: tuple[int, ...], local: float) -> tuple[float, float]:
        """(step time, sync time) of the placement ``counts`` (replicas per node) at local batch ``local``."""
        key = arrangement(counts)
        got = self._steps.get((key, local))
        if got is None:
            got = self._steps[(key, local)] = self._step_sync(key, local)
        return got

    def _step_sync(self, key: tuple[int, ...], local: float) -> tuple[float, float]:
        m = self.placements.get(key)
        if m is not None:
            lb, st, sy = m
            return float(np.interp(local, lb, st)), float(np.interp(local, lb, sy))
        q = np.array([[min(len(key), 16), sum(key), local]], dtype=np.float64)
        if self._nd is None:
            from scipy.interpolate import LinearNDInterpolator

            self._nd = LinearNDInterpolator(self._nd_points, self._nd_values)
        out = self._nd(q)[0]
        if not np.all(np.isfinite(out)):  # outside the measured hull: the nearest measured point (scaled axes)
            scale = self._nd_points.max(axis=0)
            k = int(np.argmin((((self._nd_points - q) / scale) ** 2).sum(axis=1)))
            out = self._nd_values[k]
        return float(out[0]), float(out[1])

    def rate(self, b: int, counts: tuple[int, ...], epoch: int) -> float:
        """Progress per second of a job at global batch ``b`` on the placement ``counts`` during ``epoch``."""
        key = (b, counts, epoch)
        r = self._rates.get(key)
        if r is None:
            n = sum(counts)
            atomic, accum = self.config(b, n)
            eff = n * atomic * (accum + 1)
            sqr, var = self.grad_stats(min(max(eff, self.init_bsz), self.max_bsz), min(epoch, self.max_epochs - 1))
            scale = eff / self.init_bsz
            gain = (var + sqr) / (var / scale + sqr)
            step, sync = self.step_sync(counts, atomic)
            r = self._rates[key] = gain / (step + accum * (step - sync))
        return r


def arrangement(counts: tuple[int, ...]) -> tuple[int, ...]:
    """The arrangement of a placement (replicas per node, in any order) that the artifact looks up.

    The artifact's allocators (``tiresias.py``, ``optimus.py``) fill the node with the most free GPUs first,
    repeatedly, so a placement comes out with its counts in non-increasing order; ``get_throughput`` then looks
    up its lexicographically smallest rotation, which is the one ``placements.csv`` measured (it holds one row
    set per rotation class: ``1122`` and ``1212``, ``123`` and ``132``). That rotation starts at the first of the
    smallest counts: the smallest counts, then the others in non-increasing order.

    >>> arrangement((1, 2, 3)), arrangement((2, 1, 2, 1)), arrangement((4, 4, 2))
    ((1, 3, 2), (1, 1, 2, 2), (2, 4, 4))
    """
    down = sorted((c for c in counts if c), reverse=True)
    return min(tuple(down[i:] + down[:i]) for i in range(len(down))) if down else ()


@cache
def app(name: str, root: str) -> App:
    """The measurements of application ``name`` under ``root`` (the ``pollux`` data folder), loaded once."""
    return App(name, Path(root))


def compact(n: int, server_gpus: int) -> tuple[int, ...]:
    """The most compact placement of ``n`` replicas on servers of ``server_gpus`` GPUs: full servers first."""
    full, rest = divmod(n, server_gpus)
    return (server_gpus,) * full + ((rest,) if rest else ())


@dataclass(frozen=True)
class PolluxJob:
    """A job of the artifact's model: application ``app`` (data under ``root``) at global batch ``batch``."""

    app: str
    batch: int
    root: str

    @property
    def data(self) -> App:
        return app(self.app, self.root)

    @property
    def work(self) -> float:
        return self.data.work

    def epochs(self) -> int:
        return self.data.max_epochs

    def boundary(self, epoch: int) -> float:
        """Progress at the start of ``epoch``."""
        return self.data.progress_at(epoch)

    def rate(self, counts: tuple[int, ...], epoch: int) -> float:
        return self.data.rate(self.batch, counts, epoch)

    def table(self, max_workers: int, epoch: int, server_gpus: int) -> tuple[list[int], list[float]]:
        """Rate per worker count 1..``max_workers`` during ``epoch`` on the most compact placement."""
        ws = list(range(1, max_workers + 1))
        return ws, [self.rate(compact(w, server_gpus), epoch) for w in ws]
