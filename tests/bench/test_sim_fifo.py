"""A second, deliberately simple FIFO simulator, written without the engine (no decide, no snapshot, no
lyra_solver code: the profile is read from the package's JSON file by this test), that must agree with the
``baseline`` policy on slices of the Philly trace: every job's start and end time, and every job's placement.

What it models: training servers only, each with its own count of free GPUs; jobs at their requested size,
one GPU per worker; a round at every tick (``interval`` seconds apart, from the first arrival while anything is
active, on the grid ``first + k interval`` after an idle spell) and at an arrival or completion while GPUs are
free; at a round the queued jobs are taken in arrival order and each one whose GPUs the free GPUs (all servers
together) can hold starts (backfilling); a job of ``g`` GPUs does ``duration x rate(g on the fewest servers)``
of work at the rate of the servers its own placement spans, and gives its GPUs back to those servers when it
ends.

Placement (its own, the rule of best fit decreasing, written here from its description): the jobs started in
a round are placed after admission, in decreasing order of GPUs, ties in arrival order; running jobs keep
their servers. A job takes, repeatedly, the server with the fewest free GPUs that holds all it still needs
(best fit), else all the GPUs of the server with the most free. The subtle rule is the tie between servers
with the same free count: the one whose free count was set last in this round's placement wins (a server a
job of this round took GPUs from comes before untouched ones), else the lowest server index. It decides no
span of its own job, only which GPUs come free later; on these slices the lowest index always gives the same
times, but on 20,000 random placement problems (free counts and job sizes, checked once against
``best_fit_decreasing`` outside this file) the lowest index placed 1,017 differently and this rule none
(:func:`test_the_tie_rule` holds the smallest such case), so it is modelled; every job's servers are
compared with ``segments-baseline.csv`` after the fact (never read as an input).
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
GPUS = 8  # GPUs per server


def _per_replica() -> dict[str, list[list[float]]]:
    raw = json.loads(resources.files("lyra_solver").joinpath("data/profiles.json").read_text())
    return {m: v["per_replica_rate"] for m, v in raw["models"].items()}


def _rate(per, app: str, w: int, k: int) -> float:
    grid = per[app]
    return grid[min(w, len(grid)) - 1][min(k, len(grid[0])) - 1] * w


def place(free: list[int], need: int, stamp: list[int], clock: list[int], *, ties_last_set: bool = True) -> dict:
    """Take ``need`` GPUs from ``free`` (per server, changed in place): best fit for all that is left, else
    everything of the server with most free GPUs, repeatedly. Ties between servers of equal free count go to
    the one set last this round (``stamp``, ``clock`` its counter) when ``ties_last_set``, else to the lowest
    index. Returns ``{server: GPUs}``."""
    def key(s):  # higher wins among equal free counts
        return (stamp[s], -s) if ties_last_set else (0, -s)

    got: dict[int, int] = {}
    while need > 0:
        fits = [s for s in range(len(free)) if free[s] >= need]
        if fits:
            f = min(free[s] for s in fits)
            s = max((s for s in fits if free[s] == f), key=key)
            k = need
        else:
            f = max(free)
            assert f > 0, "admission counted the free GPUs: the job fits"
            s = max((s for s in range(len(free)) if free[s] == f), key=key)
            k = f
        free[s] -= k
        clock[0] += 1
        stamp[s] = clock[0]
        got[s] = got.get(s, 0) + k
        need -= k
    return got


def simple_fifo(jobs: list[dict], servers: int, gpus: int, interval: float, *, ties_last_set: bool = True,
                span: bool = True) -> dict:
    """Start, end and servers of every job (``id, line, submit, gpus, duration, app``), FIFO with backfill.
    Without ``span`` every job runs at the rate of the fewest servers (to show that the span matters)."""
    per = _per_replica()
    jobs = sorted(jobs, key=lambda j: (j["submit"], j["line"]))
    work = {j["id"]: j["duration"] * _rate(per, j["app"], j["gpus"], math.ceil(j["gpus"] / gpus)) for j in jobs}
    arrivals = [(j["submit"], k) for k, j in enumerate(jobs)]
    queued: list[int] = []
    running: list[tuple[float, int]] = []  # (end, index) heap
    free = [gpus] * servers
    held: dict[int, dict[int, int]] = {}
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
            for s, n in held[k].items():
                free[s] += n
            event = True
        while a < len(arrivals) and arrivals[a][0] <= t:
            queued.append(arrivals[a][1])
            a += 1
            event = True
        tick = busy and t >= next_tick
        if tick:
            next_tick = t + interval
        if (tick or (event and sum(free) > 0)) and (queued or running):
            left = sum(free)
            admitted = []
            for k in list(queued):  # admission: arrival order, the free GPUs counted over all servers
                if jobs[k]["gpus"] <= left:
                    left -= jobs[k]["gpus"]
                    queued.remove(k)
                    admitted.append(k)
            stamp, clock = [0] * servers, [0]
            for k in sorted(admitted, key=lambda k: -jobs[k]["gpus"]):  # placement: largest first
                j = jobs[k]
                held[k] = place(free, j["gpus"], stamp, clock, ties_last_set=ties_last_set)
                start[j["id"]] = t
                end[j["id"]] = t + work[j["id"]] / _rate(per, j["app"], j["gpus"],
                                                      len(held[k]) if span else math.ceil(j["gpus"] / gpus))
                heapq.heappush(running, (end[j["id"]], k))
    return {jobs[k]["id"]: (start[jobs[k]["id"]], end[jobs[k]["id"]], held[k]) for k in held}


def _baseline(tmp_path, capsys, start: str, limit: int, servers: int) -> tuple[list[dict], list[dict]]:
    """The engine's ``baseline`` run on a slice: its job rows (with the traced durations, read from the trace
    itself by the rows' line numbers, not from the engine) and its segments."""
    out = tmp_path / "o"
    assert main(["simulate", "--trace", str(PHILLY), "--start", start, "--limit", str(limit), "--training-servers",
                 str(servers), "--inference-servers", "0", "--interval", "300", "--policy", "baseline",
                 "--no-progress", "--out", str(out)]) == 0
    capsys.readouterr()
    with open(out / "jobs-baseline.csv", newline="") as fh:
        rows = [{"id": r["id"], "line": int(r["line"]), "submit": float(r["submit"]), "gpus": int(r["gpus"]),
                 "app": r["app"], "start": float(r["start"]), "end": float(r["end"])} for r in csv.DictReader(fh)]
    with open(PHILLY, newline="") as fh:
        traced = {i + 2: float(r["duration"]) for i, r in enumerate(csv.DictReader(fh))}
    for r in rows:
        r["duration"] = traced[r["line"]]
    with open(out / "segments-baseline.csv", newline="") as fh:
        segs = list(csv.DictReader(fh))
    return rows, segs


def _disagreements(rows: list[dict], got: dict) -> list[str]:
    """Jobs whose start or end time differs between the engine's rows and the simple simulator's."""
    return [r["id"] for r in rows if r["id"] not in got
            or r["start"] != pytest.approx(got[r["id"]][0], abs=1e-6)
            or r["end"] != pytest.approx(got[r["id"]][1], rel=1e-9, abs=1e-6)]


SLICES = [("2017-10-09 06:00", 150, 4), ("2017-10-11", 120, 3), ("2017-10-16", 150, 5)]


@needs_data
@pytest.mark.parametrize("start, limit, servers", SLICES)
def test_baseline_agrees_with_a_simple_fifo_simulator(tmp_path, capsys, start, limit, servers):
    rows, segs = _baseline(tmp_path, capsys, start, limit, servers)
    got = simple_fifo(rows, servers, GPUS, 300.0)
    assert len(got) == len(rows) == limit
    assert _disagreements(rows, got) == []
    queued = sum(got[r["id"]][0] > r["submit"] for r in rows)
    assert queued > limit // 4  # the slices are congested: the FIFO order is exercised
    # the placement itself, compared with the engine's segments only after the fact (never an input)
    assert len(segs) == limit  # baseline never moves a job: one interval each
    for seg in segs:
        mine = ";".join(f"t{s}:{n}" for s, n in sorted(got[seg["job"]][2].items(), key=lambda p: f"t{p[0]}"))
        assert seg["placement"] == mine, seg["job"]


@needs_data
def test_the_span_matters(tmp_path, capsys):
    """Run at the rate of the fewest servers instead of the span its placement holds, the simple simulator
    disagrees with baseline on the third slice (its fragmentation spreads jobs): the comparison above can fail,
    and agrees only because the placement is modelled."""
    start, limit, servers = SLICES[2]
    rows, _ = _baseline(tmp_path, capsys, start, limit, servers)
    got = simple_fifo(rows, servers, GPUS, 300.0)
    assert sum(len(got[r["id"]][2]) > math.ceil(r["gpus"] / GPUS) for r in rows) > 0
    assert _disagreements(rows, got) == []
    assert _disagreements(rows, simple_fifo(rows, servers, GPUS, 300.0, span=False)) != []


def test_the_tie_rule():
    """Free GPUs ``[1, 3]``, jobs of 2 then 1 GPU: the first takes server 1 (the only fit), leaving it 1 free,
    as server 0 has; the second goes to server 1 (set last), not to the lowest index (best fit decreasing's
    answer, ``((1, 2),), ((1, 1),)``)."""
    for ties, second in ((True, {1: 1}), (False, {0: 1})):
        free, stamp, clock = [1, 3], [0, 0], [0]
        assert place(free, 2, stamp, clock, ties_last_set=ties) == {1: 2}
        assert place(free, 1, stamp, clock, ties_last_set=ties) == second
