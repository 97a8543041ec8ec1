"""Outputs anyone can check: segments-POLICY.csv and rounds-POLICY.csv read back by this test's own reader
(GPU capacity per server per instant, and the per-round totals recomputed from the segments), the SHA-256 of
every input in summary.json, ratios with intervals over slices, and the load modes."""
from __future__ import annotations

import csv
import hashlib
import json
from collections import defaultdict

import pytest
from lyra_solver.bench.sim import data_dir
from lyra_solver.bench.sim.policies import POLICIES
from lyra_solver.cli import main

DATA = data_dir()
PHILLY = DATA / "philly" / "philly.csv"
QPS = DATA / "alibaba" / "genai_qps.csv"
needs_data = pytest.mark.skipif(not PHILLY.exists() or not QPS.exists(), reason="shared/data not present")
GPUS = 8


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _run(tmp_path, name, *extra, limit="40"):
    out = tmp_path / name
    rc = main(["simulate", "--trace", str(PHILLY), "--start", "2017-10-09 06:00", "--limit", limit,
               "--training-servers", "2", "--inference-servers", "3", "--interval", "300", "--load", str(QPS),
               "--no-progress", "--out", str(out), *extra])
    return rc, out


@needs_data
def test_segments_hold_gpu_capacity_per_server_and_add_up_to_the_rounds(tmp_path, capsys):
    rc, out = _run(tmp_path, "all", "--compare", *POLICIES, "--jobs", "2")
    assert rc == 0
    capsys.readouterr()
    for policy in POLICIES:
        segs = _read(out / f"segments-{policy}.csv")
        jobs = {r["id"]: r for r in _read(out / f"jobs-{policy}.csv")}
        assert segs and set(segs[0]) == {"job", "start", "end", "workers", "gpus_per_worker", "placement",
                                         "packed_on"}
        # every instant where the allocation changes: the GPUs held on each server, guests excluded (they share
        # their host's GPUs)
        cuts = sorted({float(s["start"]) for s in segs} | {float(s["end"]) for s in segs})
        by_job = defaultdict(list)
        for s in segs:
            a, b = float(s["start"]), float(s["end"])
            assert a < b and a >= float(jobs[s["job"]]["start"]) - 1e-9 and b <= float(jobs[s["job"]]["end"]) + 1e-6
            place = [(p.split(":")[0], int(p.split(":")[1])) for p in s["placement"].split(";")]
            assert [p[0] for p in place] == sorted(p[0] for p in place)  # sorted by server
            if s["packed_on"]:
                assert int(s["workers"]) >= 1
            else:
                assert sum(n for _, n in place) == int(s["workers"]) * int(s["gpus_per_worker"])
            by_job[s["job"]].append((a, b, place, s["packed_on"]))
        for jid, iv in by_job.items():  # a job's intervals do not overlap
            iv.sort()
            assert all(x[1] <= y[0] + 1e-9 for x, y in zip(iv, iv[1:], strict=False)), (policy, jid)
        for t in cuts:
            held: dict[str, int] = defaultdict(int)
            for iv in by_job.values():
                for a, b, place, host in iv:
                    if a <= t < b and not host:
                        for server, n in place:
                            held[server] += n
            assert all(n <= GPUS for n in held.values()), (policy, t, dict(held))
            assert all(s[0] in "ti" and int(s[1:]) < (2 if s[0] == "t" else 3) for s in held), (policy, held)
            if not POLICIES[policy].loan:
                assert not any(s.startswith("i") for s in held), policy  # only loaning policies borrow
        # the per-round totals are what the segments hold at that instant
        for r in _read(out / f"rounds-{policy}.csv"):
            t = float(r["time"])
            train = loaned = 0
            for iv in by_job.values():
                for a, b, place, host in iv:
                    if a <= t < b and not host:
                        train += sum(n for s, n in place if s.startswith("t"))
                        loaned += sum(n for s, n in place if s.startswith("i"))
            assert (train, loaned) == (int(r["training_gpus_used"]), int(r["loaned_gpus_used"])), (policy, t)
            assert int(r["serving_servers"]) + int(r["idle_servers"]) <= 3
        # work and time: every job's intervals lie between its start and end, and it held something at its start
        for jid, row in jobs.items():
            if row["end"]:
                assert min(a for a, *_ in by_job[jid]) == pytest.approx(float(row["start"]))


@needs_data
def test_summary_carries_the_sha256_of_every_input(tmp_path, capsys):
    rc, out = _run(tmp_path, "h", "--policy", "baseline")
    assert rc == 0
    capsys.readouterr()
    inputs = json.loads((out / "summary.json").read_text())["meta"]["inputs"]
    assert inputs[str(PHILLY)] == hashlib.sha256(PHILLY.read_bytes()).hexdigest()
    assert inputs[str(QPS)] == hashlib.sha256(QPS.read_bytes()).hexdigest()
    assert len(inputs["lyra_solver/data/profiles.json"]) == 64


@needs_data
def test_ratios_against_both_baselines_with_a_95_percent_interval_over_slices(tmp_path, capsys):
    rc, out = _run(tmp_path, "s", "--compare", "baseline", "baseline-sjf", "lyra", "lyra-fifo", "--slices", "3",
                   "--limit", "30", "--jobs", "2", limit="30")
    assert rc == 0
    table = capsys.readouterr().out
    s = json.loads((out / "summary.json").read_text())
    assert s["meta"]["slices"] == 3
    r = s["ratios"]
    assert set(r) == {"vs_baseline", "vs_baseline-sjf"}
    assert r["vs_baseline"]["baseline"]["jct_mean"] == {"mean": 1.0, "ci95": [1.0, 1.0], "n": 3}
    lyra = r["vs_baseline-sjf"]["lyra"]["jct_mean"]
    assert lyra["n"] == 3 and lyra["ci95"][0] <= lyra["mean"] <= lyra["ci95"][1]
    assert "JCT vs baseline-sjf" in table and "| lyra-fifo |" in table and "[" in table
    # three disjoint slices of 30 jobs each
    assert s["policies"]["baseline"]["seeds"] == 3 and s["policies"]["baseline"]["jobs"] == 30


@needs_data
def test_slices_need_a_length_and_bad_load_modes_exit_2(tmp_path, capsys):
    base = ["simulate", "--trace", str(PHILLY), "--policy", "baseline", "--out", str(tmp_path / "o")]
    for extra, flag in [(["--slices", "2"], "--slices"), (["--slices", "0", "--limit", "5"], "--slices"),
                        (["--load-mode", "absolute", "--load", str(QPS)], "--load-per-server"),
                        (["--load-per-server", "3"], "--load-per-server"),
                        (["--load-mode", "absolute"], "--load-mode")]:
        assert main(base + extra) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and flag in err, err
    assert not (tmp_path / "o").exists()


def test_load_modes_peak_and_absolute(tmp_path):
    from lyra_solver.bench.sim.traces import load_load_curve

    f = tmp_path / "load.csv"
    f.write_text("time,value\n0,50\n60,50\n")
    peak = load_load_curve(f)
    assert peak.servers(0, 10) == 10  # a constant load serves every server in the peak mode
    absolute = load_load_curve(f, mode="absolute", per_server=20.0)
    assert absolute.servers(0, 10) == 3 and absolute.servers(30, 2) == 2  # ceil(50 / 20), at most the cluster
    with pytest.raises(ValueError, match="per_server"):
        load_load_curve(f, mode="absolute")
