"""What a simulation run measures while it runs: event counters, GPU-seconds of each cluster (over the whole run
and over the arrival window), the per-round series, ``decide`` times and, when asked, progress segments.

:class:`Metrics` is filled by the engine; :mod:`.report` turns its totals into summary.json. Running time O(1)
per accumulation.
"""
from __future__ import annotations

COUNTERS = ("quiet_rounds", "rounds", "preemptions", "scaling_events", "restarts", "reclaim_events",
            "reclaim_rounds", "loans", "packed")


class Metrics:
    """Counters (:data:`COUNTERS` plus any a policy adds), GPU-seconds, the series
    ``(t, queued, training GPUs used, serving GPUs, loaned GPUs used)`` per round, ``decide`` wall times (ms)
    and, with ``record``, segments ``(job id, start, end, rate)`` of constant progress."""

    def __init__(self, last_arrival: float, record: bool = False) -> None:
        self.counters: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self.gs = {"training_used": 0.0, "inference_serving": 0.0, "inference_loaned_used": 0.0,
                   "inference_unmet": 0.0}
        self.gs_window = dict(self.gs)  # the same, over the arrival window only (first to last arrival)
        self.last_arrival = last_arrival
        self.series: list[tuple[float, int, int, int, int]] = []
        self.decide_ms: list[float] = []
        self.record = record
        self.segments: list[tuple[str, float, float, float]] = []
        # allocation intervals (job id, start, end, workers, ((server, GPUs), ...), host or None)
        self.allocations: list[tuple] = []
        # per round: (t, queued, running, training GPUs used, loaned GPUs used, serving servers, idle servers)
        self.rounds: list[tuple[float, int, int, int, int, int, int]] = []

    def allocated(self, j, t: float) -> None:
        """Close ``j``'s allocation interval at ``t`` if what it holds changed, and open the new one."""
        now = j.allocation()
        if now == j.alloc:
            return
        if j.alloc is not None and t > j.alloc_since:
            self.allocations.append((j.spec.id, j.alloc_since, t, *j.alloc))
        j.alloc, j.alloc_since = now, t

    def count(self, name: str, by: int = 1) -> None:
        self.counters[name] += by

    def gpu_time(self, t: float, t2: float, used_train: int, used_inf: int, serving_gpus: int,
                 unmet_gpus: int) -> None:
        """Accumulate GPU-seconds over ``[t, t2)`` at constant usage."""
        dt = t2 - t
        for gs, d in ((self.gs, dt), (self.gs_window, max(0.0, min(t2, self.last_arrival) - t))):
            if d > 0:
                gs["training_used"] += used_train * d
                gs["inference_loaned_used"] += used_inf * d
                gs["inference_serving"] += serving_gpus * d
                gs["inference_unmet"] += unmet_gpus * d
