"""A second, deliberately simple FIFO simulator, written without the engine (no decide, no snapshot, no
lyra_solver code: the profile is read from the package's JSON file by this test), that must agree with the
``baseline`` policy on two slices of the Philly trace: every job's start and end time.

What it models: training servers only; jobs at their requested size; a round at every tick (``interval``
seconds apart, from the first arrival while anything is active, on the grid ``first + k interval`` after an idle
spell) and at an arrival or completion while GPUs are free; at a round the queued jobs are taken in arrival
order and each one that fits in the free GPUs starts (backfilling); a job of ``g`` GPUs does ``duration x
rate(g on the fewest servers)`` of work at the rate of the servers its placement spans. The one thing it takes
from the engine is that span per job (``segments-baseline.csv``'s placement column): which servers a job lands
on is the placement heuristic's business, tested elsewhere; admission, round times, GPU counting and every
start and end time are this file's own.
"""
from __future__ import annotations

import csv
import heapq
import json
import math
from importlib import resources

import pytest
from lyra_solver.bench.sim import data_dir
from lyra_solver.cli import main

PHILLY = data_dir() / "philly" / "philly.csv"
needs_data = pytest.mark.skipif(not PHILLY.exists(), reason="shared/data not present")


def _per_replica() -> dict[str, list[list[float]]]:
    raw = json.loads(resources.files("lyra_solver").joinpath("data/profiles.json").read_text())
    return {m: v["per_replica_rate"] for m, v in raw["models"].items()}


def _rate(per, app: str, w: int, k: int) -> float:
    grid = per[app]
    return grid[min(w, len(grid)) - 1][min(k, len(grid[0])) - 1] * w


def simple_fifo(jobs: list[dict], servers: int, gpus: int, interval: float, spans: dict[str, int]) -> dict:
    """Start and end time of every job (``id, submit, gpus, duration, app``), FIFO with backfill."""
    per = _per_replica()
    cap = servers * gpus
    jobs = sorted(jobs, key=lambda j: (j["submit"], j["line"]))
    work = {j["id"]: j["duration"] * _rate(per, j["app"], j["gpus"], math.ceil(j["gpus"] / gpus)) for j in jobs}
    arrivals = [(j["submit"], k) for k, j in enumerate(jobs)]
    queued: list[int] = []
    running: list[tuple[float, int]] = []  # (end, index) heap
    free = cap
    start, end = {}, {}
    origin = jobs[0]["submit"]
    t, next_tick, a = origin, origin, 0
    while a < len(arrivals) or queued or running:
        busy = bool(queued or running)
        if next_tick < t:
            next_tick = origin + math.ceil((t - origin) / interval) * interval
        t2 = min(arrivals[a][0] if a < len(arrivals) else math.inf, running[0][0] if running else math.inf,
                 next_tick if busy else math.inf)
        if t2 == math.inf:
            break
        t = t2
        event = False
        while running and running[0][0] <= t:
            _, k = heapq.heappop(running)
            free += jobs[k]["gpus"]
            event = True
        while a < len(arrivals) and arrivals[a][0] <= t:
            queued.append(arrivals[a][1])
            a += 1
            event = True
        tick = busy and t >= next_tick
        if tick:
            next_tick = t + interval
        if (tick or (event and free > 0)) and (queued or running):
            for k in list(queued):
                j = jobs[k]
                if j["gpus"] <= free:
                    free -= j["gpus"]
                    queued.remove(k)
                    start[j["id"]] = t
                    end[j["id"]] = t + work[j["id"]] / _rate(per, j["app"], j["gpus"], spans[j["id"]])
                    heapq.heappush(running, (end[j["id"]], k))
    return {jid: (start[jid], end[jid]) for jid in start}


@needs_data
@pytest.mark.parametrize("start, limit, servers", [("2017-10-09 06:00", 150, 4), ("2017-10-11", 120, 3)])
def test_baseline_agrees_with_a_simple_fifo_simulator(tmp_path, capsys, start, limit, servers):
    out = tmp_path / "o"
    assert main(["simulate", "--trace", str(PHILLY), "--start", start, "--limit", str(limit), "--training-servers",
                 str(servers), "--inference-servers", "0", "--interval", "300", "--policy", "baseline",
                 "--no-progress", "--out", str(out)]) == 0
    capsys.readouterr()
    with open(out / "jobs-baseline.csv", newline="") as fh:
        rows = [{"id": r["id"], "line": int(r["line"]), "submit": float(r["submit"]), "gpus": int(r["gpus"]),
                 "app": r["app"], "start": float(r["start"]), "end": float(r["end"])} for r in csv.DictReader(fh)]
    # the traced durations, read from the trace itself (the rows' line numbers), not from the engine
    with open(PHILLY, newline="") as fh:
        traced = {i + 2: float(r["duration"]) for i, r in enumerate(csv.DictReader(fh))}
    for r in rows:
        r["duration"] = traced[r["line"]]
    with open(out / "segments-baseline.csv", newline="") as fh:
        segs = list(csv.DictReader(fh))
    spans = {}
    for s in segs:
        assert s["job"] not in spans, "baseline never moves a job"
        spans[s["job"]] = len(s["placement"].split(";"))
    got = simple_fifo(rows, servers, 8, 300.0, spans)
    assert len(got) == len(rows) == limit
    queued = 0
    for r in rows:
        s, e = got[r["id"]]
        assert r["start"] == pytest.approx(s, abs=1e-6), r["id"]
        assert r["end"] == pytest.approx(e, rel=1e-9, abs=1e-6), r["id"]
        queued += s > r["submit"]
    assert queued > limit // 4  # the slices are congested: the FIFO order is exercised
