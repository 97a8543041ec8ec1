"""Hostile inputs to the simulator (issue 23 points 1, 2, 3, 12, 14, 15): every input ends, in memory that follows
its size, with exit 0 or one error line naming the flag, the file and its line."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from lyra_solver import InputError
from lyra_solver.bench.sim.engine import MAX_EVENTS, ReplayTooLong, SimConfig, simulate
from lyra_solver.bench.sim.policies import get_policy
from lyra_solver.bench.sim.traces import LoadCurve, load_load_curve, load_philly, map_jobs, merge_close

from tests.test_hostile import one_clean_line, run

HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"
SMALL = HEADER + ("2017-10-09 07:01:55,66.0,4,66.0,a\n2017-10-09 07:02:55,100.0,1,100.0,a\n"
                  "2017-10-09 07:05:55,1000.0,8,100.0,a\n")
BASE = ("simulate", "--policy", "lyra", "--training-servers", "4", "--inference-servers", "2", "--no-progress")


def _write(tmp_path: Path, name: str, text: str | bytes) -> str:
    f = tmp_path / name
    (f.write_bytes if isinstance(text, bytes) else f.write_text)(text)
    return str(f)


def clean_exit(res) -> str:
    """A run that ended well: exit 0, at most one line on stderr, no warning."""
    err = res.stderr.decode()
    assert res.returncode == 0, err
    assert len(err.strip("\n").splitlines()) <= 1 and "arning" not in err, err
    return res.stdout.decode()


# ------------------------------------------------------------------------- 1. a job larger than the cluster
def test_a_job_larger_than_the_training_cluster_is_refused_naming_its_line(tmp_path):
    rows = "2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 07:02:55,66.0,64,66.0,a\n"
    trace = _write(tmp_path, "t.csv", HEADER + rows)
    line = one_clean_line(run(*BASE, "--trace", trace, "--interval", "60", timeout=60))
    assert "t.csv: line 3: num_gpus 64" in line and "could never run" in line
    specs = map_jobs(load_philly(trace))
    with pytest.raises(ValueError, match="line 3"):
        simulate(specs, get_policy("baseline"), SimConfig(training_servers=4, inference_servers=0))


@pytest.mark.parametrize(("field", "value"), [("duration", 1e300), ("restart_penalty", 1e9),
                                              ("preemption_penalty", math.nan)])
def test_the_python_api_refuses_what_would_never_end(tmp_path, field, value):
    from dataclasses import replace

    specs = map_jobs(load_philly(_write(tmp_path, "t.csv", SMALL)))
    specs[1] = replace(specs[1], **{field: value})
    with pytest.raises(ValueError, match=f"line 3: {field}"):
        simulate(specs, get_policy("baseline"), SimConfig(training_servers=4, inference_servers=0))
    with pytest.raises(ValueError, match="interval"):
        simulate(specs[:1], get_policy("baseline"), SimConfig(training_servers=4, interval=1e-300))


# ------------------------------------------------------------------------- 2. a bounded number of events
@pytest.mark.parametrize(("flag", "value"), [("--interval", "1e-300"), ("--interval", "nan"), ("--interval", "1e300"),
                                             ("--preemption-penalty", "1e9"), ("--restart-penalty", "nan"),
                                             ("--restart-penalty", "-1"), ("--load-window", "1e-3"),
                                             ("--time-limit", "1e300"), ("--seeds", "1000000000"),
                                             ("--jobs", "1000000000")])
def test_flags_past_their_bounds_are_refused(tmp_path, flag, value):
    trace = _write(tmp_path, "t.csv", SMALL)
    line = one_clean_line(run(*BASE, "--trace", trace, flag, value, timeout=60))
    assert line.startswith(f"error: {flag}:"), line


def test_a_duration_past_its_bound_is_refused_naming_its_line(tmp_path):
    trace = _write(tmp_path, "t.csv", HEADER + "2017-10-09 07:01:55,1e300,4,66.0,a\n")
    assert "t.csv: line 2: duration: must be at most" in one_clean_line(run(*BASE, "--trace", trace, timeout=60))


def test_load_steps_closer_than_a_round_are_merged(tmp_path):
    trace = _write(tmp_path, "t.csv", SMALL)
    load = _write(tmp_path, "l.csv", "time,value\n0,1\n1e-300,2\n2e-300,0.5\n")
    clean_exit(run(*BASE, "--trace", trace, "--load", load, "--interval", "60", timeout=60))
    curve = LoadCurve((0.0, 1e-300, 10.0, 70.0, 75.0, 200.0), (0.1, 0.9, 0.2, 0.3, 1.0, 0.0), 3e-300)
    merged = merge_close(curve, 60.0)
    assert merged.times == (0.0, 70.0, 200.0) and merged.values == (0.9, 1.0, 0.0) and merged.period == 60.0
    assert all(b - a >= 60.0 for a, b in zip(merged.times, merged.times[1:], strict=False))


def test_the_replay_stops_at_its_bound_on_events(tmp_path, monkeypatch):
    import lyra_solver.bench.sim.engine as engine
    from lyra_solver.cli import main

    assert MAX_EVENTS == 5_000_000
    monkeypatch.setattr(engine, "MAX_EVENTS", 3)
    specs = map_jobs(load_philly(_write(tmp_path, "t.csv", SMALL)))
    with pytest.raises(ReplayTooLong, match="3 events"):
        simulate(specs, get_policy("baseline"), SimConfig(training_servers=4, inference_servers=0))
    trace = _write(tmp_path, "t2.csv", SMALL)
    assert main([*BASE, "--trace", trace]) == 2  # one run: in this process, with the bound patched


def test_arrivals_spread_over_millennia_with_a_load_are_refused(tmp_path):
    trace = _write(tmp_path, "t.csv", HEADER + "0001-01-01 00:00:00,10,4,66.0,a\n9999-01-01 00:00:00,10,4,66.0,a\n")
    load = _write(tmp_path, "l.csv", "time,value\n0,1\n300,2\n")
    assert "--interval" in one_clean_line(run(*BASE, "--trace", trace, "--load", load, timeout=60))
    clean_exit(run(*BASE, "--trace", trace, timeout=60))  # without a load the idle years cost nothing


# ------------------------------------------------------------------------- 3. memory follows the input's size
def test_a_three_line_load_spanning_1e15_s_makes_a_few_points(tmp_path):
    load = _write(tmp_path, "l.csv", "timestamp_anon,value\n0,1\n1,2\n1000000000000000,3\n")
    curve = load_load_curve(load, window=300.0)
    assert len(curve.times) <= 4 and curve.period == pytest.approx(1e15, rel=1e-6)
    assert curve.at(0.0) == 1.0 and curve.at(400.0) == 0.0 and curve.at(curve.times[-1]) == 1.0
    trace = _write(tmp_path, "t.csv", SMALL)
    clean_exit(run(*BASE, "--trace", trace, "--load", load, timeout=60))
    assert "--training-servers" in one_clean_line(run(*BASE, "--trace", trace, "--training-servers", "1000000000"))


def test_sparse_windows_equal_the_dense_curve(tmp_path):
    rows = [(0, 1.0), (10, 2.0), (320, 0.5), (1300, 4.0), (1310, 1.0), (2000, 3.0)]
    load = _write(tmp_path, "l.csv", "timestamp_anon,value\n" + "".join(f"{t},{v}\n" for t, v in rows))
    curve = load_load_curve(load, window=300.0)
    dense: dict[int, float] = {}
    for t, v in rows:
        dense[t // 300] = dense.get(t // 300, 0.0) + v
    peak = max(dense.values())
    for x in range(0, 2100, 7):
        assert curve.at(float(x)) == pytest.approx(dense.get(x // 300, 0.0) / peak), x
    assert curve.period == 7 * 300.0


# ------------------------------------------------------------------------- 12, 14. CSV details
def test_a_byte_order_mark_is_accepted(tmp_path):
    plain = load_philly(_write(tmp_path, "a.csv", SMALL))
    marked = load_philly(_write(tmp_path, "b.csv", b"\xef\xbb\xbf" + SMALL.encode()))
    assert [(j.submit, j.gpus, j.duration) for j in plain] == [(j.submit, j.gpus, j.duration) for j in marked]
    assert load_load_curve(_write(tmp_path, "l.csv", b"\xef\xbb\xbftime,value\n0,1\n60,2\n")).values == (0.5, 1.0)


@pytest.mark.parametrize(("text", "problem"), [
    (HEADER.replace("cluster", "duration") + "2017-10-09 07:01:55,10,4,66.0,20\n", "appears twice"),
    (HEADER + "2017-10-09 07:01:55,10,1_0,66.0,a\n", "not an integer"),
    (HEADER + "2017-10-09 07:01:55,1_000,1,66.0,a\n", "not a number"),
    (HEADER + "2017-10-09 07:01:55,\u0661\u0662,1,66.0,a\n", "not a number"),
    (HEADER + "2017-10-09 07:01:55,10,\u0661,66.0,a\n", "not an integer"),
    (HEADER + "2017-10-09 07:01:55,infinity,1,66.0,a\n", "not a number"),
])
def test_csv_numbers_and_columns_are_refused_naming_the_line(tmp_path, text, problem):
    with pytest.raises(InputError, match=problem) as err:
        load_philly(_write(tmp_path, "t.csv", text))
    assert err.value.path.startswith("line ")


def test_utc_offsets_are_honoured(tmp_path):
    jobs = load_philly(_write(tmp_path, "t.csv", HEADER + "2017-10-09 12:00:00+05:00,10,1,10,a\n"
                                                          "2017-10-09 08:00:00,10,1,10,a\n"))
    assert [j.submit for j in jobs] == [0.0, 3600.0]  # 12:00+05:00 is 07:00 UTC, an hour before the other
    assert len(load_philly(_write(tmp_path, "u.csv", SMALL), start="2017-10-09T12:03:00+05:00")) == 1


# ------------------------------------------------------------------------- 15. standard input, and "load"
def test_trace_from_standard_input(tmp_path):
    clean_exit(run(*BASE, "--trace", "-", "--out", str(tmp_path / "a"), stdin=SMALL.encode(), timeout=60))
    clean_exit(run(*BASE, "--trace", _write(tmp_path, "t.csv", SMALL), "--out", str(tmp_path / "b"), timeout=60))
    a, b = (json.loads((tmp_path / d / "summary.json").read_text()) for d in "ab")
    for doc in (a, b):  # the same replay: only the trace's name and hash (standard input has none) differ
        doc["meta"].pop("trace")
        doc["meta"].get("inputs", {}).pop(str(tmp_path / "t.csv"), None)
    assert a == b
    load = "time,value\n0,1\n600,3\n"
    clean_exit(run(*BASE, "--trace", _write(tmp_path, "t.csv", SMALL), "--load", "-", stdin=load.encode()))
    assert "--load" in one_clean_line(run(*BASE, "--trace", "-", "--load", "-", stdin=b""))


@pytest.mark.parametrize(("text", "problem"), [(None, "cannot read the load"), ("", "empty load file"),
                                               ("a,b\n1,2\n", "lacks column 'value'")])
def test_load_errors_say_load(tmp_path, text, problem):
    load = str(tmp_path / "absent.csv") if text is None else _write(tmp_path, "l.csv", text)
    line = one_clean_line(run(*BASE, "--trace", _write(tmp_path, "t.csv", SMALL), "--load", load))
    assert problem in line and "trace" not in line


def test_nothing_is_written_but_the_output_folder(tmp_path):
    trace = _write(tmp_path, "t.csv", SMALL)
    before = sorted(p.name for p in tmp_path.iterdir())
    clean_exit(run(*BASE, "--trace", trace, "--out", str(tmp_path / "out"), timeout=120))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "out"])
    assert math.isfinite(len(list((tmp_path / "out").iterdir())))


@pytest.mark.parametrize(("extra", "flag"), [
    (["--slices", "1000000000", "--limit", "1"], "--slices"),
    (["--slices", "2", "--start", "2017-10-09", "--end", "9000-01-01"], "--slices"),
    (["--load-mode", "absolute", "--load-per-server", "1e-320"], "value"),
])
def test_slices_and_absolute_load_past_their_bounds(tmp_path, extra, flag):
    trace = _write(tmp_path, "t.csv", SMALL)
    load = _write(tmp_path, "l.csv", "time,value\n0,1e300\n60,2\n")
    line = one_clean_line(run(*BASE, "--trace", trace, "--load", load, *extra, timeout=60))
    assert f": {flag}:" in line or line.startswith(f"error: {flag}:"), line
    assert "--slices" in one_clean_line(run(*BASE, "--trace", "-", "--slices", "2", "--limit", "1", stdin=b""))


# ------------------------------------------------------------------------- 2-3. a bound on the work before it runs
def _congested(tmp_path: Path) -> list:
    """12 jobs of 4-8 GPUs, half an hour to two hours, arriving within minutes on one 8-GPU server: the queue is
    served almost one job at a time, the case closest to the bound."""
    rows = "".join(f"2017-10-09 07:{i:02d}:00,{1800 + 600 * (i % 4)},{4 + 4 * (i % 2)},1,a\n" for i in range(12))
    return map_jobs(load_philly(_write(tmp_path, "c.csv", HEADER + rows)))


@pytest.mark.parametrize("policy", ["baseline", "lyra", "tiresias", "lyra-pack", "gimbal"])
def test_a_replay_does_its_least_work_and_stops_past_its_share(tmp_path, policy):
    from dataclasses import replace

    from lyra_solver.bench.sim.engine import least_work

    specs = _congested(tmp_path)
    cfg = SimConfig(training_servers=1, inference_servers=0, interval=60.0)
    least = least_work(specs, cfg)
    free = simulate(specs, get_policy(policy), cfg)
    held = simulate(specs, get_policy(policy), replace(cfg, max_work=10**12))  # a bound it stays within: the same
    assert held.jobs == free.jobs and held.series == free.series and held.counters == free.counters
    with pytest.raises(ReplayTooLong, match="share of the work"):  # the least work is done by every replay
        simulate(specs, get_policy(policy), replace(cfg, max_work=least - 1))


def test_a_long_job_at_a_short_interval_is_refused_before_it_runs(tmp_path):
    import time

    trace = _write(tmp_path, "t.csv", HEADER + "2017-10-09 07:01:55,1e7,1,1,a\n")
    t0 = time.perf_counter()
    line = one_clean_line(run(*BASE, "--trace", trace, "--interval", "1", "--out", str(tmp_path / "o"), timeout=60))
    assert line.startswith("error: --max-work: each run may do") and "--interval 1 s" in line, line
    assert time.perf_counter() - t0 < 30 and not (tmp_path / "o").exists()


@pytest.mark.parametrize("extra", [["--seeds", "1000"], ["--compare", "baseline", "gimbal-exact", "tiresias",
                                                         "--seeds", "300"]])
def test_many_runs_are_refused_at_once(tmp_path, extra):
    import time

    trace = _write(tmp_path, "t.csv", SMALL)
    base = [a for a in BASE if a not in ("--policy", "lyra")] if "--compare" in extra else BASE
    t0 = time.perf_counter()
    line = one_clean_line(run(*base, "--trace", trace, *extra, timeout=60))
    assert line.startswith("error: --max-work:"), line
    assert time.perf_counter() - t0 < 30


def test_the_largest_clusters_end_within_their_share(tmp_path):
    import time

    trace = _write(tmp_path, "t.csv", SMALL)
    t0 = time.perf_counter()
    res = run(*BASE, "--trace", trace, "--training-servers", "100000", "--inference-servers", "100000", timeout=60)
    assert time.perf_counter() - t0 < 60
    clean_exit(res)
    many = run(*BASE, "--trace", trace, "--training-servers", "100000", "--max-work", "500000", timeout=60)
    assert one_clean_line(many).startswith("error: --max-work: a replay passed its share of the work, 469,955 units")


def test_max_work_zero_is_the_documented_opt_out(tmp_path):
    trace = _write(tmp_path, "t.csv", HEADER + "2017-10-09 07:01:55,20000,1,1,a\n")
    args = (*BASE, "--trace", trace, "--interval", "1")
    assert one_clean_line(run(*args, "--max-work", "40000", timeout=60)).startswith("error: --max-work:")
    assert "| lyra |" in clean_exit(run(*args, "--max-work", "0", timeout=120))
    assert one_clean_line(run(*args, "--max-work", "-1", timeout=60)).startswith("error: --max-work: must be")


def test_a_sweep_is_refused_before_its_first_point(tmp_path):
    """Alone a run gets the whole --max-work; a command of more than FULL_RUNS runs shares FULL_RUNS times it."""
    from lyra_solver.bench.sim.cli import FULL_RUNS, MAP_WORK, RUN_WORK
    from lyra_solver.bench.sim.engine import least_work

    trace = _write(tmp_path, "t.csv", SMALL)
    specs = map_jobs(load_philly(trace))
    one = least_work(specs, SimConfig(training_servers=8, inference_servers=2)) + MAP_WORK * len(specs)
    budget = one + RUN_WORK  # exactly a run's least work, alone
    points = ",".join(f"{0.04 * i:.2f}" for i in range(FULL_RUNS + 1))
    out = tmp_path / "sw"
    res = run(*BASE, "--trace", trace, "--sweep", f"elastic-share={points}", "--max-work", str(budget),
              "--out", str(out), timeout=60)
    assert one_clean_line(res).startswith("error: --max-work:")
    assert f"x {FULL_RUNS + 1} sweep points" in res.stderr.decode()
    assert not out.exists()
    alone = run(*BASE, "--trace", trace, "--max-work", str(budget), timeout=60)  # not refused before it runs
    assert b"each run may do" not in alone.stderr


def test_local_processes_are_at_most_the_cpu_count(tmp_path, monkeypatch):
    import lyra_solver.bench.harness as harness
    import lyra_solver.bench.sim.cli as sim_cli
    from lyra_solver.cli import main

    asked = []

    def fake(fn, items, *, jobs, **kw):
        asked.append(jobs)
        return [fn(a) for a in items]

    monkeypatch.setattr(harness, "map_tasks", fake)
    monkeypatch.setattr(sim_cli.os, "cpu_count", lambda: 2)
    trace = _write(tmp_path, "t.csv", SMALL)
    assert main([*BASE, "--trace", trace, "--seeds", "3", "--jobs", "64"]) == 0
    assert asked == [2]


def test_a_sweep_point_past_its_share_stops_the_sweep(tmp_path):
    trace = _write(tmp_path, "t.csv", SMALL)
    res = run(*BASE, "--trace", trace, "--sweep", "training-servers=4,8", "--max-work", "35000", timeout=60)
    assert one_clean_line(res).startswith("error: --max-work: a replay passed its share of the work, 4,955 units")


def test_a_csv_past_its_size_limit_is_refused_before_parsing(tmp_path):
    import time

    from lyra_solver.bench.sim._rows import MAX_CSV_BYTES

    big = tmp_path / "big.csv"
    with open(big, "w") as fh:
        fh.write("time,value\n")
        fh.write("0,1\n" * (MAX_CSV_BYTES // 4 + 1))
    trace = _write(tmp_path, "t.csv", SMALL)
    t0 = time.perf_counter()
    line = one_clean_line(run(*BASE, "--trace", trace, "--load", str(big), timeout=60))
    assert "big.csv: $: load file larger than the 8 MiB limit" in line, line
    line = one_clean_line(run(*BASE, "--trace", str(big), timeout=60))
    assert "big.csv: $: trace file larger than the 8 MiB limit" in line, line
    assert time.perf_counter() - t0 < 30
