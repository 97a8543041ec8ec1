"""Seeded generator of realistic, valid snapshots (any size).

``lyra-solver generate --servers 1000 --jobs 5000 --seed 1 -o big.json`` writes one. Half the servers are
training servers; inference servers are loaned (40%), idle (30%) or serving (30%). Jobs use 1, 2, 4 or 8 GPUs
per worker, 60% are elastic, throughputs mix ``power`` (50%), ``table`` (20%) and ``profile`` (30%, the six
measured models); about half the jobs run, placed first-fit on training and loaned servers (a job that does
not fit is queued). The inference side asks for up to 5 loaned servers back.
"""
from __future__ import annotations

import numpy as np
from lyra_solver.types import PROFILE_MODELS

#: Largest sizes the generator builds (it holds the whole snapshot in memory: about 1 KB per job and 100 bytes
#: per server). Beyond them ``generate`` refuses (exit 2) instead of exhausting memory.
MAX_SERVERS = 1_000_000
MAX_JOBS = 1_000_000
MAX_GPUS = 2**31 - 1


def generate_snapshot(*, servers: int = 100, jobs: int = 300, seed: int = 0, gpus: int = 8,
                      running_share: float = 0.5, elastic_share: float = 0.6, reclaim: int | None = None,
                      options: dict | None = None, progress=None) -> dict:
    """A valid snapshot as a plain dict (format_version 1), a pure function of its arguments.

    ``progress``, if given, is called with 1 after each job is made (e.g. a progress bar's ``update``).
    """
    for name, value, lo, hi in (("servers", servers, 1, MAX_SERVERS), ("jobs", jobs, 0, MAX_JOBS),
                                ("gpus", gpus, 1, MAX_GPUS), ("seed", seed, 0, None)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise TypeError(f"{name}: expected an integer, got {type(value).__name__}")
        if value < lo or (hi is not None and value > hi):
            limit = f"{lo}..{hi:,}" if hi is not None else f">= {lo}"
            raise ValueError(f"{name}: must be {limit}, got {value}")
    rng = np.random.default_rng(seed)
    n_train = max(1, (servers + 1) // 2)
    srv = [{"id": f"t{i}", "pool": "training", "gpus": gpus} for i in range(n_train)]
    states = rng.choice(["loaned", "idle", "serving"], p=[0.4, 0.3, 0.3], size=servers - n_train)
    srv += [{"id": f"i{i}", "pool": "inference", "gpus": gpus, "state": str(st)} for i, st in enumerate(states)]
    usable = [k for k, s in enumerate(srv) if s["pool"] == "training" or s.get("state") == "loaned"]
    free = {k: gpus for k in usable}
    order = list(usable)

    gpw_choices = [g for g in (1, 2, 4, 8) if g <= gpus] or [1]
    gpw_p = np.array([0.6, 0.25, 0.1, 0.05][: len(gpw_choices)])
    out = []
    for j in range(jobs):
        gpw = int(rng.choice(gpw_choices, p=gpw_p / gpw_p.sum()))
        lo = int(rng.integers(1, 5))
        hi = lo * int(rng.choice([2, 4, 8])) if rng.random() < elastic_share else lo
        hi = min(hi, max(lo, 64))
        work = float(np.round(rng.lognormal(13, 1.5), 1))
        r = rng.random()
        if r < 0.5:
            tp = {"kind": "power", "rate_per_worker": float(np.round(rng.uniform(20, 400), 2)),
                  "exponent": float(np.round(rng.uniform(0.5, 1.0), 3))}
        elif r < 0.7:
            pts = sorted({lo, hi, *rng.integers(lo, hi + 1, size=3).tolist()})
            base = rng.uniform(20, 400)
            rates = np.maximum.accumulate(base * np.asarray(pts, float) ** rng.uniform(0.5, 0.95)
                                          * rng.uniform(0.9, 1.0, len(pts)))
            tp = {"kind": "table", "workers": [int(p) for p in pts], "rate": [float(np.round(x, 3)) for x in rates]}
        else:
            tp = {"kind": "profile", "model": str(rng.choice(PROFILE_MODELS))}
        job = {"id": f"j{j}", "submit_time": float(-rng.integers(0, 86400)), "gpus_per_worker": gpw,
               "min_workers": lo, "max_workers": hi, "remaining_work": work, "throughput": tp,
               "restart_penalty": float(rng.integers(10, 61)),
               "attained_service": float(rng.integers(0, 100000))}
        job["preemption_penalty"] = job["restart_penalty"] * float(rng.integers(5, 21))
        if rng.random() < running_share:
            w = int(rng.integers(lo, hi + 1))
            placed = _first_fit(free, order, w, gpw, rng)
            if placed:
                job["placement"] = {srv[k]["id"]: n for k, n in sorted(placed.items())}
        out.append(job)
        if progress is not None:
            progress(1)
    loaned = sum(1 for s in srv if s.get("state") == "loaned")
    ask = int(rng.integers(0, min(5, loaned) + 1)) if reclaim is None else reclaim
    snap = {"format_version": 1, "now": 0.0, "servers": srv, "inference": {"reclaim": ask}, "jobs": out}
    if options:
        snap["options"] = dict(options)
    return snap


def _first_fit(free: dict[int, int], order: list[int], w: int, gpw: int, rng) -> dict[int, int] | None:
    """Place ``w`` workers first fit from a random start; all or nothing (mutates ``free`` on success)."""
    if not order:
        return None
    start = int(rng.integers(0, len(order)))
    placed: dict[int, int] = {}
    left = w
    for i in range(len(order)):
        k = order[(start + i) % len(order)]
        n = min(left, free[k] // gpw)
        if n > 0:
            placed[k] = n
            left -= n
            if left == 0:
                break
    if left:
        return None
    for k, n in placed.items():
        free[k] -= n * gpw
    return placed
