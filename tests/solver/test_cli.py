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
