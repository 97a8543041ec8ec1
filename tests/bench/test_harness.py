"""The benchmark harness on tiny suites: rows, best bound and gaps, results.json, plots, CLI usage, backends.

No timing is asserted: only the shape and the logic of what the harness writes.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from lyra_solver.bench import harness
from lyra_solver.bench.harness import (
    Config,
    Method,
    Outcome,
    Suite,
    annotate,
    best_bound,
    gap_to,
    map_tasks,
    run_suites,
)

ROOT = Path(__file__).resolve().parents[2]
# a generous limit: the rows are compared across runs, and a limit hit under a load spike (once in CI: a tiny CBC
# reclaim killed past a 5 s limit, not reproduced since) would change a row without anything being wrong
TINY = Config(scale="tiny", repeat=1, time_limit=30.0, threads=1)
ROW_KEYS = {"suite", "group", "instance", "size", "method", "kind", "status", "objective", "bound", "best_bound",
            "gap", "time_s", "times_s", "repeats", "speedup", "stats", "extra", "note", "backend_status"}


def _square(x: int) -> int:
    return x * x


# --- best bound and gap logic on hand-made rows -------------------------------------------------------------

def _row(method, status, objective, bound, time_s=1.0, instance="i"):
    return {"suite": "s", "group": "g", "instance": instance, "size": 1, "method": method, "status": status,
            "objective": objective, "bound": bound, "time_s": time_s, "times_s": [time_s], "repeats": 1,
            "stats": {}, "extra": {}, "note": "", "backend_status": ""}


def test_best_bound_is_the_tightest_in_the_objective_direction():
    rows = [_row("a", "feasible", 90.0, 110.0), _row("b", "feasible", 95.0, 104.0), _row("h", "feasible", 80.0, None)]
    assert best_bound(rows, "max") == 104.0
    rows_min = [_row("a", "feasible", 12.0, 7.0), _row("b", "feasible", 11.0, 9.0)]
    assert best_bound(rows_min, "min") == 9.0
    # an optimal objective is its own bound, even when the method reports none
    assert best_bound([_row("a", "optimal", 100.0, None), _row("b", "feasible", 90.0, 120.0)], "max") == 100.0
    assert best_bound([_row("h", "feasible", 1.0, None)], "max") is None


def test_gap_to_the_best_bound():
    assert gap_to(90.0, 100.0, "max") == pytest.approx(0.1)
    assert gap_to(110.0, 100.0, "min") == pytest.approx(0.1)
    assert gap_to(100.0, 100.0, "max") == 0.0
    assert gap_to(0.5, 0.0, "min") == pytest.approx(0.5)  # relative to max(1, |bound|)
    assert gap_to(None, 1.0, "max") is None and gap_to(1.0, None, "max") is None


def _fake_suite(sense="max", refs=("r",)):
    meths = [Method("ours"), Method("r", reference=True), Method("h", kind="heuristic")]
    return Suite(name="fake", title="fake", sense=sense, methods=lambda: [m for m in meths if m.name != "r" or refs],
                 instances=lambda c: [], build=lambda s: None, solve=lambda p, m, c: Outcome(status="x"))


def test_annotate_gaps_speedups_and_flags():
    rows = [_row("ours", "optimal", 100.0, 100.0, 0.5), _row("r", "feasible", 99.0, 101.0, 10.0),
            _row("h", "feasible", 90.0, None, 0.01)]
    out = {r["method"]: r for r in annotate(rows, _fake_suite())}
    assert all(r["best_bound"] == 100.0 for r in out.values())
    assert out["ours"]["gap"] == 0.0 and out["h"]["gap"] == pytest.approx(0.1)
    assert out["ours"]["speedup"]["r"] == {"ratio": pytest.approx(20.0), "at_least": True}  # r hit its limit
    assert "r" not in out["r"]["speedup"]
    assert out["h"]["kind"] == "heuristic" and out["ours"]["kind"] == "exact"
    # an objective beyond the best bound is flagged (a wrong bound or a wrong optimum)
    bad = annotate([_row("ours", "optimal", 100.0, 100.0), _row("h", "feasible", 120.0, None)], _fake_suite())
    assert "passes the best bound" in bad[1]["note"]
    # failed rows get no gap
    failed = annotate([_row("ours", "refused", None, None), _row("h", "feasible", 1.0, None)], _fake_suite())
    assert failed[0]["gap"] is None and failed[1]["gap"] is None


# --- tiny real suites --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_rows():
    return run_suites(["mckp", "reclaim", "placement", "decide"], TINY, progress=False)


def test_rows_shape_one_per_instance_and_method(tiny_rows):
    for name, rows in tiny_rows.items():
        suite = harness.load_suite(name)
        planned = harness.plan(suite, TINY)
        assert len(rows) == len(planned) > 0
        assert [(r["instance"], r["method"]) for r in rows] == [(t[1]["name"], t[2]) for t in planned]
        for r in rows:
            assert set(r) >= ROW_KEYS, ROW_KEYS - set(r)
            assert r["suite"] == name
            assert r["time_s"] is not None and r["time_s"] >= 0
            assert r["repeats"] in (0, TINY.repeat)


def test_every_registry_method_joins_its_suite(tiny_rows):
    from lyra_solver.formulations import mckp

    methods = {r["method"] for r in tiny_rows["mckp"]}
    assert methods == set(mckp.METHODS) - set(mckp.ALIASES)


def test_exact_methods_agree_and_heuristics_stay_below_the_bound(tiny_rows):
    for name, rows in tiny_rows.items():
        sense = harness.load_suite(name).sense
        for r in rows:
            if r["status"] == "optimal" and r["kind"] == "exact":
                assert r["gap"] == 0.0, r
            if r["gap"] is not None:
                assert r["gap"] >= 0.0, r  # nothing beats a proven bound
            if r["status"] in ("optimal", "feasible") and r["best_bound"] is not None:
                diff = r["objective"] - r["best_bound"]
                assert (diff if sense == "max" else -diff) <= 1e-6 * max(1.0, abs(r["best_bound"])), r


def test_tables_have_a_line_per_row_in_detail_groups(tiny_rows):
    suite = harness.load_suite("mckp")
    text = harness.suite_tables(suite, tiny_rows["mckp"])
    for r in tiny_rows["mckp"]:
        if suite.detail_groups(r["group"]):
            assert f"| {r['instance']} | {r['method']} |" in text
    assert "vs cpsat" in text and "vs highs" in text


def test_stats_mapping_becomes_columns():
    suite = _fake_suite()
    rows = annotate([{**_row("ours", "optimal", 1.0, 1.0), "stats": {"states": 12}},
                     _row("h", "feasible", 1.0, None)], suite)
    detail = harness.detail_table(rows, ["r"])
    assert "states" in detail.splitlines()[0] and "| 12 |" in detail
    summary = harness.summary_table(rows, [], ["ours", "h"])
    assert "states (mean)" in summary.splitlines()[0]

    class WithStats:
        status, objective, bound, backend_status = "optimal", 3.0, 3.0, "ok"
        stats = {"states": 5, "classes": 2}

    assert harness.outcome_of(WithStats()).stats == {"states": 5, "classes": 2}

    @dataclasses.dataclass(frozen=True)
    class Counts:
        states: int
        classes: int

    class WithDataclassStats(WithStats):
        stats = Counts(7, 3)

    assert harness.outcome_of(WithDataclassStats()).stats == {"states": 7, "classes": 3}


# --- CLI: results.json, plots, exit codes ---------------------------------------------------------------------

def test_results_json_schema_and_plots(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "SUITES", {**harness.SUITES})
    text, doc = harness.run_and_write(["mckp", "reclaim"], TINY, jobs=1, backend="local", address=None, out=tmp_path,
                                      progress=False, command="test")
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["format"] == harness.RESULTS_FORMAT
    assert {"machine", "config", "rows", "targets", "command", "created", "plots"} <= set(saved)
    assert {"cpu", "cores", "python", "libraries", "os"} <= set(saved["machine"])
    assert "numpy" in saved["machine"]["libraries"]
    assert saved["config"]["seed"] == 0 and saved["config"]["time_limit"] == TINY.time_limit
    assert saved["config"]["suites"] == ["mckp", "reclaim"]
    assert len(saved["rows"]) == len(doc["rows"]) and all(set(r) >= ROW_KEYS for r in saved["rows"])
    for t in saved["targets"]:
        assert t["verdict"] in ("met", "not met", "not measured here", "measured")
    assert "## MCKP" in text and "## Targets" in text
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert saved["plots"] == [] and "matplotlib is not installed" in text
    else:
        assert "mckp_time.png" in saved["plots"] and "reclaim_gap_cdf.png" in saved["plots"]
        for name in saved["plots"]:
            data = (tmp_path / name).read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv, needle", [
    (["nosuch"], "unknown suite"),
    (["mckp", "--jobs", "0"], "--jobs"),
    (["mckp", "--time-limit", "-1"], "--time-limit"),
    (["mckp", "--jobs", "x"], "--jobs"),
    (["mckp", "--backend", "spark"], "--backend"),
    (["mckp", "--servers", "10"], "--servers"),
    ([], "SUITE"),
])
def test_cli_usage_errors_exit_2_with_one_line(argv, needle):
    res = subprocess.run([sys.executable, "-m", "lyra_solver", "bench", *argv], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert res.returncode == 2, res
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], res.stderr
    assert res.stdout == ""


def test_cli_help_and_parse_of_the_decide_size():
    res = subprocess.run([sys.executable, "-m", "lyra_solver", "bench", "--help"], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert res.returncode == 0 and "--backend" in res.stdout
    args, names, cfg, jobs = harness.parse(["decide", "--servers", "12500", "--jobs", "50000"])
    assert names == ["decide"] and jobs == 1
    assert cfg.options["decide_size"]["servers"] == 12500 and cfg.options["decide_size"]["jobs"] == 50000
    args, names, cfg, jobs = harness.parse(["all", "--jobs", "2", "--quick"])
    assert names == list(harness.SUITES) and jobs == 2 and cfg.scale == "quick" and cfg.time_limit == 5.0


def test_cli_decide_at_a_given_size_writes_its_rows(tmp_path):
    res = subprocess.run([sys.executable, "-m", "lyra_solver", "bench", "decide", "--servers", "20", "--jobs", "40",
                          "--repeat", "1", "--out", str(tmp_path), "-q"], capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "results.json").read_text())
    assert {r["instance"] for r in doc["rows"]} == {"generated 20 servers x 8 GPUs, 40 jobs seed=1"}
    assert {r["method"] for r in doc["rows"]} == {"exact", "greedy", "hull"}
    assert "| generated 20 servers x 8 GPUs, 40 jobs seed=1 | exact |" in res.stdout


# --- backends -----------------------------------------------------------------------------------------------

def test_map_tasks_keeps_order_locally_and_rejects_bad_arguments():
    assert map_tasks(_square, range(7), jobs=1) == [x * x for x in range(7)]
    assert map_tasks(_square, range(7), jobs=2) == [x * x for x in range(7)]
    with pytest.raises(ValueError, match="jobs"):
        map_tasks(_square, [1], jobs=0)
    with pytest.raises(ValueError, match="backend"):
        map_tasks(_square, [1], backend="spark")


def _comparable(rows: list[dict]) -> list[dict]:
    drop = {"time_s", "times_s", "speedup", "repeats", "extra", "stats"}
    return [{k: v for k, v in r.items() if k not in drop} for r in rows]


def test_parallel_processes_give_the_same_rows(tiny_rows):
    par = run_suites(["reclaim", "placement"], TINY, jobs=2, progress=False)
    for name in par:
        assert _comparable(par[name]) == _comparable(tiny_rows[name])


def test_ray_backend_gives_the_same_rows(tiny_rows):
    pytest.importorskip("ray")
    ray_rows = run_suites(["reclaim"], TINY, jobs=2, backend="ray", progress=False)
    assert _comparable(ray_rows["reclaim"]) == _comparable(tiny_rows["reclaim"])
    assert map_tasks(_square, [3, 1, 2], jobs=2, backend="ray") == [9, 1, 4]


def test_report_writes_targets_and_links_plots(tmp_path):
    from lyra_solver.bench import report

    out = tmp_path / "res"
    text, doc = harness.run_and_write(["placement"], TINY, jobs=1, backend="local", address=None, out=out,
                                      progress=False, command="test")
    md = report.write_report(doc, tmp_path / "BENCHMARKS.md", results_dir=out, sections=False).read_text()
    assert "## Speed and quality targets" in md and "| target | verdict | measured |" in md
    for _issue, target, *_rest in report.EXTERNAL_TARGETS:
        assert target in md
    assert "`lyra-solver bench all --quick` under 5 minutes" in md
    assert "#12" not in md and "| issue |" not in md  # the rows say what they measure, not where they came from
    for name in doc["plots"]:
        assert (tmp_path / "docs" / "bench" / name).exists() and f"docs/bench/{name}" in md


def test_plots_are_skipped_with_a_note_without_matplotlib(tmp_path, monkeypatch):
    from lyra_solver.bench.plots import write_plots

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    rows = annotate([_row("ours", "optimal", 1.0, 1.0), _row("h", "feasible", 0.5, None)], _fake_suite())
    written, note = write_plots([{**r, "suite": "fake"} for r in rows], tmp_path)
    assert written == [] and "matplotlib is not installed" in note
    assert list(tmp_path.iterdir()) == []
