"""The command line, run as a subprocess as a user would."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster.json"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lyra_solver", *args], input=stdin, capture_output=True, cwd=ROOT,
                          timeout=120)


def test_decide_example_is_checked_and_deterministic(tmp_path):
    out1, out2 = tmp_path / "d1.json", tmp_path / "d2.json"
    before = EXAMPLE.read_bytes()
    assert run("decide", str(EXAMPLE), "-o", str(out1)).returncode == 0
    assert run("decide", str(EXAMPLE), "-o", str(out2)).returncode == 0
    assert out1.read_bytes() == out2.read_bytes()
    assert EXAMPLE.read_bytes() == before
    chk = run("check", str(EXAMPLE), str(out1))
    assert chk.returncode == 0, chk.stdout
    decision = json.loads(out1.read_bytes())
    assert set(decision["jobs"]) == {j["id"] for j in json.loads(before)["jobs"]}
    assert decision["servers"]["reclaim"] and decision["summary"]["methods"]["allocation"].startswith("mckp-")


def test_decide_reads_stdin_and_writes_stdout():
    res = run("decide", "-", stdin=EXAMPLE.read_bytes())
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["format_version"] == 1


def test_check_names_broken_rules(tmp_path):
    out = tmp_path / "d.json"
    assert run("decide", str(EXAMPLE), "-o", str(out)).returncode == 0
    decision = json.loads(out.read_bytes())
    job = next(k for k, v in decision["jobs"].items() if v["action"] == "run")
    decision["jobs"][job]["workers"] += 1000
    del decision["jobs"][next(k for k in reversed(list(decision["jobs"])) if k != job)]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(decision))
    res = run("check", str(EXAMPLE), str(bad))
    assert res.returncode == 1
    text = res.stdout.decode()
    assert "job-missing" in text and "workers-out-of-range" in text


def test_refuses_to_overwrite_input(tmp_path):
    snap = tmp_path / "s.json"
    snap.write_bytes(EXAMPLE.read_bytes())
    res = run("decide", str(snap), "-o", str(snap))
    assert res.returncode == 2 and snap.read_bytes() == EXAMPLE.read_bytes()
    assert len(res.stderr.decode().strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["decide"], ["decide", "x.json", "--allocation", "magic"], ["nope"],
                                  ["decide", "x.json", "--time-limit", "-1"]])
def test_usage_errors_are_one_line_exit_2(args):
    res = run(*args)
    assert res.returncode == 2
    err = res.stderr.decode().strip().splitlines()
    assert len(err) == 1 and "Traceback" not in res.stderr.decode()


def test_missing_file_is_exit_2():
    res = run("decide", "does-not-exist.json")
    assert res.returncode == 2
    assert "does-not-exist.json" in res.stderr.decode()


@pytest.mark.parametrize("what", ["snapshot", "decision", "mckp"])
def test_schema(what):
    res = run("schema", what)
    assert res.returncode == 0
    schema = json.loads(res.stdout)
    assert "$defs" in schema or "properties" in schema


def test_mckp_command(tmp_path):
    inst = {"capacity": 4, "classes": [{"weights": [0, 2, 4], "values": [0.0, 5.5, 7.0]},
                                       {"weights": [0, 1, 2], "values": [0.0, 3.0, 4.0]}]}
    f = tmp_path / "m.json"
    f.write_text(json.dumps(inst))
    for method in ("auto", "greedy", "hull", "cpsat", "highs", "cbc"):
        res = run("mckp", str(f), "--method", method)
        assert res.returncode == 0, (method, res.stderr)
        ans = json.loads(res.stdout)
        assert ans["choice"] is not None
        if method in ("auto", "cpsat", "highs", "cbc"):
            assert ans["status"] == "optimal" and ans["objective"] == pytest.approx(9.5)
        else:
            assert ans["objective"] <= 9.5 + 1e-9


def test_mckp_bad_instance_is_exit_2(tmp_path):
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"capacity": 4, "classes": [{"weights": [0, 2], "values": [0.0]}]}))
    res = run("mckp", str(f))
    assert res.returncode == 2
    assert "classes[0].values" in res.stderr.decode()


def test_generate_then_decide(tmp_path):
    snap = tmp_path / "g.json"
    assert run("generate", "--servers", "30", "--jobs", "60", "--seed", "5", "-o", str(snap)).returncode == 0
    out = tmp_path / "d.json"
    assert run("decide", str(snap), "-o", str(out), "--allocation", "greedy").returncode == 0
    assert run("check", str(snap), str(out)).returncode == 0


def test_unwritable_output_is_exit_2_and_leaves_nothing(tmp_path):
    out = tmp_path / "missing-dir" / "d.json"
    res = run("decide", str(EXAMPLE), "-o", str(out))
    assert res.returncode == 2
    assert "cannot write" in res.stderr.decode() and len(res.stderr.decode().strip().splitlines()) == 1
    assert not out.parent.exists()


BROKEN = ROOT / "tests" / "solver" / "broken_decisions"
BROKEN_EXPECTED = json.loads((BROKEN / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(BROKEN_EXPECTED))
def test_check_command_exits_1_naming_the_rule(name, capsys):
    from lyra_solver.cli import main

    rc = main(["check", str(BROKEN / "snapshot.json"), str(BROKEN / name)])
    out, err = capsys.readouterr()
    if name == "not_json.json":  # not a decision at all: bad input
        assert rc == 2 and name in err
        return
    if name == "job_duplicated.json":  # a repeated key is bad input (issue 9), named with its path
        assert rc == 2 and name in err and "jobs: duplicate key" in err
        return
    if BROKEN_EXPECTED[name].startswith("malformed"):  # not a decision at all: exit 2, one line naming the field
        from lyra_solver.check import check_decision_text

        snap = json.loads((BROKEN / "snapshot.json").read_text())
        where = next(v.where for v in check_decision_text(snap, (BROKEN / name).read_bytes()) if v.rule == "malformed")
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"error: {BROKEN / name}: {where}: not a decision"), err
        return
    assert rc == 1
    assert BROKEN_EXPECTED[name] in out


def test_check_command_accepts_the_valid_decision(capsys):
    from lyra_solver.cli import main

    assert main(["check", str(BROKEN / "snapshot.json"), str(BROKEN / "valid.json")]) == 0
    assert capsys.readouterr().out.startswith("ok")


@pytest.mark.parametrize("field, value", [("min_workers", 10**20), ("max_workers", 2**31), ("gpus_per_worker", 10**12)])
def test_huge_integers_are_bad_input_not_a_crash(tmp_path, field, value):
    snap = json.loads(EXAMPLE.read_bytes())
    snap["jobs"][4][field] = value
    f = tmp_path / "s.json"
    f.write_text(json.dumps(snap))
    res = run("decide", str(f))
    assert res.returncode == 2, res.stderr
    assert f"jobs[4].{field}" in res.stderr.decode()


def test_absurd_but_valid_numbers_still_decide(tmp_path):
    snap = json.loads(EXAMPLE.read_bytes())
    snap["jobs"][4]["remaining_work"] = 1e308
    snap["jobs"][6]["throughput"] = {"kind": "power", "rate_per_worker": 1e-300, "exponent": 1.0}
    f = tmp_path / "s.json"
    f.write_text(json.dumps(snap))
    out = tmp_path / "d.json"
    assert run("decide", str(f), "-o", str(out)).returncode == 0
    assert run("check", str(f), str(out)).returncode == 0


# ------------------------------------------------------------------------------------- structure (issue 8)
def _subcommands():
    from lyra_solver.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, __import__("argparse")._SubParsersAction))
    return parser, sub.choices


def test_version():
    import lyra_solver

    res = subprocess.run([sys.executable, "-m", "lyra_solver", "--version"], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == f"lyra-solver {lyra_solver.__version__}"


def test_every_option_has_help_and_every_subcommand_has_verbosity():
    import argparse

    parser, commands = _subcommands()
    for name, sub in commands.items():
        if name == "bench":  # parses its own options (lyra_solver.bench.harness)
            continue
        flags = {s for a in sub._actions for s in a.option_strings}
        assert {"-v", "--verbose", "-q", "--quiet"} <= flags, name
        for action in sub._actions:
            assert action.help and action.help is not argparse.SUPPRESS, (name, action.dest)


@pytest.mark.parametrize("argv", [["decide", str(EXAMPLE), "-q"], ["decide", str(EXAMPLE), "-v"],
                                  ["-v", "decide", str(EXAMPLE)], ["schema", "snapshot", "-v"]])
def test_verbosity_after_or_before_the_subcommand(argv):
    res = subprocess.run([sys.executable, "-m", "lyra_solver", *argv], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    if "-v" in argv and argv[0] != "schema":
        assert "INFO" in res.stderr
    if "-q" in argv:
        assert res.stderr == ""


def test_decide_formats_agree():
    def run(fmt):
        res = subprocess.run([sys.executable, "-m", "lyra_solver", "decide", str(EXAMPLE), "--format", fmt],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        return res.stdout

    compact, pretty, table = run("json"), run("pretty"), run("table")
    assert json.loads(compact) == json.loads(pretty) and "\n  " in pretty
    decision = json.loads(compact)
    lines = {line.split("  ")[0]: line for line in table.splitlines()}
    for name, ids in (("servers reclaimed", decision["servers"]["reclaim"]),
                      ("servers loaned", decision["servers"]["loan"])):
        assert lines[name].split()[2] == str(len(ids)) and all(i in lines[name] for i in ids)
    preempted = [k for k, v in decision["jobs"].items() if v["action"] == "preempt"]
    assert str(len(preempted)) in lines["jobs preempted"]
    assert f"{decision['summary']['jct_reduction']:g}" in table


@pytest.mark.parametrize("argv", [["decide"], ["decide", str(EXAMPLE), "--format", "xml"], ["nope"],
                                  ["generate", "--servers", "0"], ["check", str(EXAMPLE)], ["decide", "-v", "-q", "x"]])
def test_usage_errors_everywhere_are_one_line_exit_2(argv):
    res = subprocess.run([sys.executable, "-m", "lyra_solver", *argv], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and res.stderr.startswith("error: ")


def test_long_commands_get_a_progress_bar():
    import argparse

    from lyra_solver.cli import PROGRESS_FROM, _progress
    from tqdm import tqdm

    ns = argparse.Namespace
    with _progress(ns(quiet=False, progress=True), total=PROGRESS_FROM, desc="x", unit="job") as bar:
        assert isinstance(bar, tqdm)
    with _progress(ns(quiet=False), total=PROGRESS_FROM, desc="x", unit="job") as bar:
        assert bar is None  # standard error is not a terminal under pytest: no bar without --progress
    with _progress(ns(quiet=True, progress=True), total=PROGRESS_FROM, desc="x", unit="job") as bar:
        assert bar is None
    with _progress(ns(progress=True), total=PROGRESS_FROM - 1, desc="x", unit="job") as bar:
        assert bar is None
