"""``python -m lyra_solver.bench.round_speed``: issue 24's round targets beside a host yardstick."""
import subprocess
import sys

import pytest
from lyra_solver.bench import round_speed

YARD = {"python": 0.11, "objects": 0.015, "decode": 0.04, "numpy": 0.12}


def test_the_report_judges_each_measure_against_its_target():
    rounds = {"parse": 0.149, "decide": 0.1001, "compiled": True}
    sims = {"sim10k": {"command_wall": 9.0, "replay_wall": 8.0, "replay_cpu": 7.9, "decide": 5.0,
                       "decide_p50_ms": 0.4}}
    text = round_speed.format_report(YARD, rounds, sims, quick=False)
    assert "Python loop 110.0, struct attributes 15.0, struct decoding 40.0, numpy 120.0" in text
    assert "- parse: met (0.149 s against 0.15 s, 0.99x the target)" in text
    assert "- decide: not met (0.1001 s against 0.1 s, 1.00x the target)" in text
    assert "- sim10k: met (8 s against 8 s, 1.00x the target)" in text
    assert "the full replay" not in text and "- full" not in text  # not measured: no row, no verdict
    # several runs of the 10,000-job run: the median judged, every run's wall shown and the slowest named
    sims["sim10k"].update(replay_wall=7.9, walls=[8.4, 7.9, 7.6])
    text = round_speed.format_report(YARD, rounds, sims, quick=False)
    assert "| the 10,000-job run: replay wall, median of 3 runs (8.4, 7.9, 7.6 s); that run's CPU 7.9 s," in text
    assert "- sim10k: met (7.9 s against 8 s, 0.99x the target; the slowest of 3 runs 8.4 s, 1.05x)" in text
    quick = round_speed.format_report(YARD, {**rounds, "compiled": False}, {}, quick=True)
    assert "met" not in quick and "2,500 x 10,000" in quick and "warm, numpy" in quick


def test_the_quick_run_measures_a_round_and_a_missing_trace_is_a_usage_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "lyra_solver.bench.round_speed", "--quick"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Command: `python -m lyra_solver.bench.round_speed --quick`")
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| parse") or line.startswith("| `decide`")]
    assert len(rows) == 2 and all(float(r.split("|")[2]) > 0 for r in rows)
    proc = subprocess.run([sys.executable, "-m", "lyra_solver.bench.round_speed", "--sim", "--data-dir",
                           str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "no philly/philly.csv" in proc.stderr and proc.stdout == ""


def test_the_run_of_median_wall_is_reported(monkeypatch, tmp_path):
    """``sim_times`` runs the command ``runs`` times and reports the run of median replay wall (the lower middle
    one of an even count) with every wall in the order run; fewer than one run is refused, and so is ``--runs 0``."""
    walls = iter([9.0, 7.0, 8.0, 6.0])
    monkeypatch.setattr(round_speed, "_sim_once", lambda data_dir, full: {
        "command_wall": 1.0, "replay_wall": (w := next(walls)), "replay_cpu": w, "decide": 1.0, "decide_p50_ms": 0.1})
    got = round_speed.sim_times(tmp_path, runs=3)
    assert got["walls"] == [9.0, 7.0, 8.0] and got["replay_wall"] == got["replay_cpu"] == 8.0
    assert round_speed.sim_times(tmp_path, runs=1) == {**got, "replay_wall": 6.0, "replay_cpu": 6.0, "walls": [6.0]}
    with pytest.raises(ValueError, match="runs"):
        round_speed.sim_times(tmp_path, runs=0)
    proc = subprocess.run([sys.executable, "-m", "lyra_solver.bench.round_speed", "--sim", "--runs", "0"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "--runs" in proc.stderr and proc.stdout == ""
