"""`lyra-solver bench mckp --speed` (bench/mckp_speed.py): the rows it measures, its tables, its usage errors.

Times are not asserted (the machine is shared); what is checked is that every row is measured, proven and
consistent, and that the command's output carries both parts with the reference columns.
"""
from __future__ import annotations

import json

from lyra_solver.bench import mckp_speed
from lyra_solver.bench.harness import main as bench_main


def test_warm_solves_rows_are_proven_and_consistent():
    rows = mckp_speed.warm_solves(seeds=2, scale=0.01, classes=mckp_speed.CLASSES[:3])
    assert [r["class"] for r in rows] == [c[0] for c in mckp_speed.CLASSES[:3]]
    for r in rows:
        assert r["seeds"] == 2 and 0 < r["cpu_min"] <= r["cpu_median"] <= r["cpu_max"]
        assert r["wall_median"] <= r["wall_max"] and r["c_time"] and r["ends"]
    text = mckp_speed.format_report([], rows)
    assert "C ms (issue 24)" in text and "0.2-0.3 ms" in text and "<= 0.4 ms" in text


def test_cold_start_rows_pair_each_command_with_version():
    rows = mckp_speed.cold_start(rounds=1)
    assert [r["command"] for r in rows] == ["--version", "mckp (cluster 1,000 x 32)", "decide (examples/cluster.json)"]
    assert rows[0]["extra_wall_median"] == 0.0 and rows[0]["extra_cpu_max"] == 0.0
    for r in rows:
        assert r["wall_median"] > 0 and r["cpu_median"] > 0
    assert "excess wall median s" in mckp_speed.format_report(rows, [])


def test_bench_mckp_speed_through_the_harness(tmp_path, capsys):
    out = tmp_path / "speed.json"
    assert bench_main(["mckp", "--speed", "--no-cold", "--seeds", "1", "--quick", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Command: `lyra-solver bench mckp --speed") and "| cluster 1,000 x 32 | 3 |" in text
    doc = json.loads(out.read_text())
    assert doc["cold"] == [] and len(doc["warm"]) == len(mckp_speed.CLASSES)


def test_bench_mckp_speed_usage_errors(tmp_path, capsys):
    assert mckp_speed.main(["--seeds", "0"]) == 2
    assert "--seeds" in capsys.readouterr().err
    assert mckp_speed.main(["--out", str(tmp_path)]) == 2
    assert "--out" in capsys.readouterr().err
