"""The seed systems' simulation inputs: packing profiles from the Alibaba trace, deadlines, and the sweep."""
from __future__ import annotations

import json
import math
import statistics

import pytest
from lyra_solver.bench.datapath import shared_data
from lyra_solver.bench.sim.deadlines import DEFAULT_FACTOR, draw_deadlines
from lyra_solver.bench.sim.packing_profiles import draw_gpu_utils, load_fractional_pods
from lyra_solver.bench.sim.sweep import PointResult, parse_sweep, ratio_intervals, run_sweep, sweep_table, write_sweep
from lyra_solver.bench.sim.traces import TraceJob
from lyra_solver.errors import InputError

OPENB = shared_data("alibaba", "openb_pod_list_default.csv")


def _rows(n: int, duration: float = 600.0) -> list[TraceJob]:
    return [TraceJob(line=i + 2, submit=10.0 * i, gpus=1 + i % 4, duration=duration + i, key=f"r{i},x")
            for i in range(n)]


# ------------------------------------------------------------------------------------------ packing profiles
@pytest.mark.skipif(not OPENB.exists(), reason="needs shared/data/alibaba")
def test_fractional_pods_of_the_alibaba_trace():
    pool = load_fractional_pods(OPENB)
    assert len(pool) == 3078  # one-GPU pods with 0 < gpu_milli < 1000 (counted independently below)
    with open(OPENB, encoding="utf-8") as fh:
        head = fh.readline().strip().split(",")
        n, m = head.index("num_gpu"), head.index("gpu_milli")
        mine = sorted(int(r.split(",")[m]) / 1000 for r in fh if r.split(",")[n] == "1"
                      and 0 < int(r.split(",")[m]) < 1000)
    assert list(pool) == mine
    assert all(0 < u < 1 for u in pool) and list(pool) == sorted(pool)


def test_fractional_pods_bad_rows_exit_2_naming_file_and_line(tmp_path):
    p = tmp_path / "pods.csv"
    p.write_text("name,num_gpu,gpu_milli\na,1,500\nb,1,abc\n")
    with pytest.raises(InputError, match=r"pods.csv: line 3: gpu_milli: not an integer"):
        load_fractional_pods(p)
    p.write_text("name,num_gpu,gpu_milli\na,1,1500\n")
    with pytest.raises(InputError, match=r"line 2: gpu_milli: 1500 on a one-GPU pod"):
        load_fractional_pods(p)
    p.write_text("name,num_gpu,gpu_milli\na,1,1000\nb,2,500\nc,0,0\n")
    with pytest.raises(InputError, match="no fractional pod"):
        load_fractional_pods(p)
    p.write_text("name,gpu_milli\na,500\n")
    with pytest.raises(InputError, match="line 1: header lacks column 'num_gpu'"):
        load_fractional_pods(p)
    p.write_text("name,num_gpu,gpu_milli\na,1,250\nb,8,1000\nc,1,1000\nd,1,750\n")
    assert load_fractional_pods(p) == (0.25, 0.75)


def test_gpu_utils_are_seeded_per_row_and_follow_the_pool():
    rows = _rows(4000)
    pool = (0.1, 0.2, 0.2, 0.9)
    a = draw_gpu_utils(rows, pool, seed=3)
    assert a == draw_gpu_utils(rows, pool, seed=3)
    assert a != draw_gpu_utils(rows, pool, seed=4)
    assert draw_gpu_utils(rows[1000:1010], pool, seed=3) == a[1000:1010]  # a slice keeps its rows' draws
    share = {u: a.count(u) / len(a) for u in set(pool)}
    # the empirical distribution of the pool: 1/4, 1/2, 1/4, each within 4 standard errors
    for u, p in ((0.1, 0.25), (0.2, 0.5), (0.9, 0.25)):
        assert abs(share[u] - p) < 4 * math.sqrt(p * (1 - p) / len(a))
    with pytest.raises(ValueError):
        draw_gpu_utils(rows, (), seed=0)
    with pytest.raises(ValueError):
        draw_gpu_utils(rows, (0.5, 1.5), seed=0)


# ------------------------------------------------------------------------------------------ deadlines
def test_deadlines_are_submit_plus_a_seeded_multiple_of_the_duration():
    rows = _rows(3000)
    d = draw_deadlines(rows, seed=0)
    lo, hi = DEFAULT_FACTOR
    lam = [(x - r.submit) / r.duration for x, r in zip(d, rows, strict=True)]
    assert all(lo <= v <= hi for v in lam)
    assert abs(statistics.mean(lam) - (lo + hi) / 2) < 0.03  # uniform on [lo, hi]: mean (lo + hi) / 2
    assert abs(statistics.pstdev(lam) - (hi - lo) / math.sqrt(12)) < 0.03
    assert d == draw_deadlines(rows, seed=0) and d != draw_deadlines(rows, seed=1)
    assert draw_deadlines(rows[5:9], seed=0) == d[5:9]
    fixed = draw_deadlines(rows[:3], factor=(1.5, 1.5))
    assert fixed == [r.submit + 1.5 * r.duration for r in rows[:3]]
    for bad in ((0.0, 1.0), (2.0, 1.0), (1.0, math.inf)):
        with pytest.raises(ValueError):
            draw_deadlines(rows, factor=bad)


# ------------------------------------------------------------------------------------------ sweep
@pytest.mark.parametrize(("text", "message"), [
    ("training-servers", "expected NAME=V1,V2"),
    ("gpus=1,2", "unknown parameter 'gpus'"),
    ("training-servers=", "training-servers: empty value list"),
    ("elastic-share=  ", "elastic-share: empty value list"),
    ("training-servers=4,,8", "empty value"),
    ("training-servers=4,x", "'x' is not an integer of at least 1"),
    ("training-servers=0,4", "'0' is not an integer"),
    ("inference-servers=-1", "'-1' is not an integer of at least 0"),
    ("elastic-share=0.5,1.5", "'1.5' is not a number in \\[0, 1\\]"),
    ("load-factor=0", "'0' is not a positive finite number"),
    ("load-factor=inf", "'inf' is not a positive finite number"),
    ("load-factor=nan", "'nan' is not a positive"),
    ("training-servers=4,8,4", "value '4' given twice"),
])
def test_bad_sweeps_are_refused_naming_the_option(text, message):
    with pytest.raises(InputError, match=message) as err:
        parse_sweep(text)
    assert err.value.path == "--sweep"


def test_parse_sweep_values():
    assert parse_sweep("inference-servers=0,4").values == (0, 4)
    assert parse_sweep(" elastic-share = 0, 0.5 ,1").values == (0.0, 0.5, 1.0)
    assert parse_sweep("load-factor=1.5").dest == "load_factor"


def test_ratio_intervals_are_student_t_over_the_runs():
    ref = [{"jct": {"mean": 10.0, "p99": 20.0}, "queue": {"mean": 4.0}, "makespan": 100.0,
            "deadline": {"satisfaction": 0.5}} for _ in range(3)]
    pol = [{"jct": {"mean": m, "p99": 10.0}, "queue": {"mean": 0.0}, "makespan": 50.0,
            "deadline": {"satisfaction": 0.75}} for m in (5.0, 10.0, 4.0)]
    r = ratio_intervals({"ref": ref, "pol": pol}, ["ref"])["ref"]
    x = [2.0, 1.0, 2.5]
    mean = sum(x) / 3
    sd = math.sqrt(sum((v - mean) ** 2 for v in x) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(0.975, 2)
    got = r["pol"]["jct_mean"]
    assert got["n"] == 3 and got["mean"] == pytest.approx(mean, abs=1e-6)
    assert got["ci95"] == pytest.approx([mean - half, mean + half], abs=1e-6)
    assert r["pol"]["jct_p99"] == {"mean": 2.0, "ci95": [2.0, 2.0], "n": 3}
    assert r["pol"]["queue_mean"] is None  # the policy never queues: no finite ratio in any run
    assert r["pol"]["makespan"]["mean"] == 2.0
    assert r["pol"]["deadline_satisfaction"]["mean"] == 1.5  # higher is better: policy / reference
    assert r["ref"]["jct_mean"] == {"mean": 1.0, "ci95": [1.0, 1.0], "n": 3}
    one = ratio_intervals({"ref": ref[:1], "pol": pol[:1]}, ["ref"])["ref"]["pol"]["jct_mean"]
    assert one == {"mean": 2.0, "ci95": None, "n": 1}


def test_a_failing_point_keeps_the_others(tmp_path):
    import argparse

    def compare(a):
        if a.training_servers == 8:
            raise InputError("--training-servers", "this point cannot run")
        k = a.training_servers
        runs = {"lucid": [{"jct": {"mean": 10.0 * k + s}} for s in range(2)],
                "gimbal": [{"jct": {"mean": 8.0 * k + s}} for s in range(2)]}
        return PointResult(summaries={p: v[0] for p, v in runs.items()}, runs=runs)

    args = argparse.Namespace(training_servers=64, out=None)
    sweep = parse_sweep("training-servers=4,8,16")
    doc = run_sweep(args, sweep, compare, ["lucid"], out=tmp_path)
    assert args.training_servers == 64  # the caller's options are untouched
    assert [p["status"] for p in doc["points"]] == ["ok", "failed", "ok"]
    assert doc["failed"] == [8] and "this point cannot run" in doc["points"][1]["error"]
    assert doc["points"][0]["ratios"]["lucid"]["gimbal"]["jct_mean"]["n"] == 2
    written = write_sweep(tmp_path, doc)
    back = json.loads((tmp_path / "sweep.json").read_text())
    assert back == json.loads(json.dumps(doc)) and len(back["points"]) == 3
    if len(written) == 2:
        assert (tmp_path / "sweep.png").stat().st_size > 0
    assert not list(tmp_path.glob("*.tmp*"))
    table = sweep_table(doc)
    assert "| 8 | failed |" in table and "gimbal vs lucid" in table


# ------------------------------------------------------------------------------------------ the policies
PHILLY = shared_data("philly", "philly.csv")
needs_data = pytest.mark.skipif(not PHILLY.exists() or not OPENB.exists(), reason="needs shared/data")


@needs_data
@pytest.mark.parametrize("policy", ["lucid", "gimbal", "gimbal-deadline", "gimbal-makespan", "gimbal-exact"])
def test_packing_systems_pass_the_checker_conserve_work_and_report_deadlines(policy):
    from collections import defaultdict

    from lyra_solver.bench.sim import get_policy, load_philly, map_jobs
    from lyra_solver.bench.sim.engine import SimConfig, simulate
    from lyra_solver.bench.sim.report import summarize

    specs = map_jobs(load_philly(PHILLY, start="2017-10-09 06:00", limit=40), seed=1, elastic_share=0.0,
                     gpu_util_source=str(OPENB), deadline_factor=(0.5, 1.5))
    assert len({s.gpu_util for s in specs}) > 6  # drawn per job, not one per application
    cfg = SimConfig(training_servers=1, inference_servers=0, interval=300.0, check=True, record=True)
    pol = get_policy(policy)
    assert not pol.loan and not pol.elastic and pol.queue == "sjf"
    res = simulate(specs, pol, cfg)  # check=True: every decision passes the independent checker
    rows = {r["id"]: r for r in res.jobs}
    assert all(r["end"] is not None for r in rows.values())
    assert res.counters["packed"] > 0
    done = defaultdict(float)
    for jid, a, b, rate in res.segments:
        done[jid] += rate * (b - a)
    for s in specs:
        assert done[s.id] == pytest.approx(s.work, rel=1e-9), s.id
        assert rows[s.id]["met"] == (rows[s.id]["end"] <= s.deadline)
    summary = summarize(res, cfg)
    met = sum(rows[s.id]["end"] <= s.deadline for s in specs)
    assert summary["deadline"] == {"jobs": len(specs), "met": met, "satisfaction": round(met / len(specs), 6)}
    assert summary["makespan"] == pytest.approx(max(r["end"] for r in res.jobs) - min(s.submit for s in specs))


@needs_data
def test_lucid_pairs_stay_under_its_threshold_with_full_shares():
    """Lucid packs a guest only when the two utilisations add to at most 1.0, and never tunes shares."""
    from lyra_solver.bench.sim import get_policy, load_philly, map_jobs
    from lyra_solver.bench.sim.engine import SimConfig, _Sim

    specs = map_jobs(load_philly(PHILLY, start="2017-10-09 06:00", limit=40), seed=1, elastic_share=0.0,
                     gpu_util_source=str(OPENB))
    util = {s.id: s.gpu_util for s in specs}
    seen = []
    sim = _Sim(specs, get_policy("lucid"), SimConfig(training_servers=1, inference_servers=0, interval=300.0), None)
    real = sim._round

    def spy(t):
        real(t)
        seen.extend(sim.packing)

    sim._round = spy
    sim.run()
    assert seen
    for g in seen:
        assert sum(util[j] for j in g.jobs) <= 1.0 + 1e-9
        assert set(g.shares.values()) == {1.0}


# ------------------------------------------------------------------------------------------ simulate --sweep
def _cli(argv, capsys):
    from lyra_solver.cli import main

    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@needs_data
def test_a_three_point_sweep_writes_sweep_json_with_three_points_and_a_plot(tmp_path, capsys):
    argv = ["simulate", "--trace", str(PHILLY), "--start", "2017-10-09 06:00", "--limit", "30",
            "--inference-servers", "0", "--interval", "300", "--compare", "lucid", "gimbal", "--check",
            "--seeds", "2", "--jobs", "1", "--no-progress", "--sweep", "training-servers=1,2,3",
            "--out", str(tmp_path)]
    code, out, err = _cli(argv, capsys)
    assert code == 0, err
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert doc["parameter"] == "training-servers" and doc["values"] == [1, 2, 3] and doc["failed"] == []
    assert [p["value"] for p in doc["points"]] == [1, 2, 3] and len(doc["points"]) == 3
    for p in doc["points"]:
        assert p["status"] == "ok" and set(p["policies"]) == {"lucid", "gimbal"}
        iv = p["ratios"]["lucid"]["gimbal"]["jct_mean"]
        assert iv["n"] == 2 and iv["ci95"][0] <= iv["mean"] <= iv["ci95"][1]
        summary = json.loads((tmp_path / f"training-servers={p['value']}" / "summary.json").read_text())
        assert summary["meta"]["training_servers"] == p["value"]
        assert summary["policies"]["gimbal"]["jct"]["mean"] == p["policies"]["gimbal"]["jct"]["mean"]
    pytest.importorskip("matplotlib")
    assert (tmp_path / "sweep.png").stat().st_size > 0
    assert "gimbal vs lucid" in out


@pytest.mark.parametrize(("flag", "message"), [
    (["--sweep", "gpus=1,2"], "--sweep: unknown parameter 'gpus'"),
    (["--sweep", "training-servers="], "--sweep: training-servers: empty value list"),
    (["--sweep", "load-factor=1,-2"], "--sweep: load-factor: '-2' is not a positive finite number"),
    (["--deadline-factor", "1.5,0.5"], "--deadline-factor: '1.5,0.5': expected LO,HI"),
    (["--deadline-factor", "x"], "--deadline-factor"),
    (["--load-factor", "0"], "--load-factor: must be a positive finite number"),
])
def test_bad_sweep_and_mapping_options_exit_2_naming_them(tmp_path, capsys, flag, message):
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,c\n")
    code, out, err = _cli(["simulate", "--trace", str(trace), "--compare", "lucid", "gimbal", "--out",
                           str(tmp_path / "o"), *flag], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "o").exists()


@needs_data
def test_a_failing_sweep_point_is_reported_and_the_others_kept(tmp_path, capsys, monkeypatch):
    import lyra_solver.bench.sim.cli as simcli

    real = simcli._setup

    def setup(args):
        if args.training_servers == 2:
            raise RuntimeError("point two broke")
        return real(args)

    monkeypatch.setattr(simcli, "_setup", setup)
    argv = ["simulate", "--trace", str(PHILLY), "--start", "2017-10-09 06:00", "--limit", "20",
            "--inference-servers", "0", "--interval", "300", "--compare", "baseline-sjf", "lucid", "--jobs", "1",
            "--no-progress", "--sweep", "training-servers=1,2,3", "--out", str(tmp_path)]
    code, out, err = _cli(argv, capsys)
    assert code == 1 and "training-servers=2" in err and "1 of 3 points failed" in err
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert [p["status"] for p in doc["points"]] == ["ok", "failed", "ok"]
    assert doc["points"][1]["error"] == "RuntimeError: point two broke"
    assert not (tmp_path / "training-servers=2").exists() and (tmp_path / "training-servers=3").exists()


@needs_data
def test_load_factor_compresses_arrivals_and_deadlines_follow(tmp_path, capsys):
    from lyra_solver.bench.sim import load_philly, map_jobs
    from lyra_solver.bench.sim.sweep import scale_arrivals

    trace = load_philly(PHILLY, start="2017-10-09 06:00", limit=20)
    fast = scale_arrivals(trace, 4.0)
    assert [j.submit for j in fast] == [j.submit / 4.0 for j in trace]
    a, b = map_jobs(trace, deadline_factor=(1.0, 2.0)), map_jobs(fast, deadline_factor=(1.0, 2.0))
    for x, y in zip(a, b, strict=True):  # the same row keeps its application and its lambda
        assert x.app == y.app and (x.deadline - x.submit) == pytest.approx(y.deadline - y.submit)
