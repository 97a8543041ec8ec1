"""A job's state during a simulation run (:class:`SimJob`): work left, what it holds, its penalties and counts.

Only the engine changes these records. Running time O(1) per access.
"""
from __future__ import annotations

from .traces import SimJobSpec


class SimJob:
    """One job of a run: its fixed :class:`.traces.SimJobSpec` and what changes.

    ``placement`` (server id -> workers) while it holds GPUs; ``rate`` its progress per second; ``blocked``
    the time until which it makes no progress (a restart or preemption penalty); ``attained`` GPU-seconds
    received; ``host`` the host's id while it runs as a packing guest (holding no GPUs of its own).
    """

    __slots__ = ("spec", "idx", "remaining", "placement", "workers", "rate", "blocked", "attained", "start",
                 "end", "resume_penalty", "preemptions", "scalings", "train_gpus", "inf_gpus", "host", "packed",
                 "model", "epoch", "level", "alloc", "alloc_since", "shared", "seg", "slot")

    def __init__(self, spec: SimJobSpec, idx: int) -> None:
        self.spec, self.idx = spec, idx
        self.remaining = spec.work
        self.placement: dict[str, int] | None = None
        self.workers = 0
        self.rate = 0.0
        self.blocked = 0.0
        self.attained = 0.0
        self.start: float | None = None
        self.end: float | None = None
        self.resume_penalty = False
        self.preemptions = 0
        self.scalings = 0
        self.train_gpus = 0
        self.inf_gpus = 0
        self.host: str | None = None  # the host's id while the job runs as a packing guest
        self.packed = 0  # rounds run as a packing guest
        # the Pollux artifact's job model (.pollux.PolluxJob) or None; its epoch; the remaining work at which its
        # rate next changes (the end of the epoch), 0 for jobs whose rate depends on the placement only
        self.model = spec.model
        # the allocation held since alloc_since (workers, ((server, GPUs), ...), host), for segments-POLICY.csv
        self.alloc: tuple | None = None
        self.alloc_since = 0.0
        self.shared: tuple = ()  # a guest's (server, GPUs) shared with its host
        self.epoch = 0
        self.level = 0.0 if spec.model is None else self._level()
        self.seg: tuple[float, float, float] = (0.0, 0.0, self.remaining)  # engine's round_epochs segment
        self.slot = -1  # its row of the engine's arrays of running jobs (engine._Sim._run_add), -1 when none

    def _level(self) -> float:
        m = self.model
        if self.epoch + 1 >= m.epochs():
            return 0.0
        return max(0.0, self.spec.work - m.boundary(self.epoch + 1))

    @property
    def held(self) -> int:
        """GPUs it holds (0 while waiting or running as a guest)."""
        return self.train_gpus + self.inf_gpus

    def allocation(self) -> tuple | None:
        """What it holds now: (workers, ((server, GPUs), ...) sorted by server, host or None); None when it
        holds nothing."""
        if self.host is not None:
            return (self.workers, self.shared, self.host)
        if self.placement is None:
            return None
        return (self.workers, tuple(sorted(self.placement.items())), None)

    def finish_time(self, t: float) -> float:
        """When its work (its epoch, for the Pollux model) is done at the current rate."""
        return max(t, self.blocked) + (self.remaining - self.level) / self.rate

    def next_epoch(self) -> None:
        """Cross into the next epoch (the remaining work is exactly the old epoch's end)."""
        self.remaining = self.level
        self.epoch += 1
        self.level = self._level()

    def row(self) -> dict:
        """The job's line of ``jobs-POLICY.csv``."""
        sp = self.spec
        return {"id": sp.id, "line": sp.line, "submit": sp.submit, "gpus": sp.gpus, "app": sp.app,
                "min_workers": sp.min_workers, "max_workers": sp.max_workers, "work": sp.work,
                "start": self.start, "end": self.end,
                "queue": None if self.start is None else self.start - sp.submit,
                "jct": None if self.end is None else self.end - sp.submit,
                "preemptions": self.preemptions, "scalings": self.scalings, "packed": self.packed,
                "deadline": sp.deadline,
                "met": None if sp.deadline is None else self.end is not None and self.end <= sp.deadline}
