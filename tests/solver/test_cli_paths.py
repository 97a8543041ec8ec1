"""The command line as people expect it (issue 22, and points 4 and 13 of issue 23), run as subprocesses: output
paths checked before any work, flags and help, the progress rule, where data is, `generate mckp`."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster.json"
#: A small `bench decide` run (3 tasks, a few seconds): the real harness end to end.
SMALL_BENCH = ("bench", "decide", "--servers", "20", "--jobs", "40", "--repeat", "0")
TRACE = "timestamp,duration,num_gpus,gpu_time,cluster\n" + "".join(
    f"2017-10-03 00:{i:02d}:00,{300 + 60 * i},{1 + i % 4},10,c1\n" for i in range(6))


def run(*args: str, env: dict | None = None, stdin: str | None = None, cwd: Path = ROOT):
    full = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "lyra_solver", *args], input=stdin, capture_output=True,
                          text=True, cwd=cwd, env=full, timeout=300)


def one_error_line(res, *needles: str) -> str:
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


# ---------------------------------------------------------------------------------------------------------
# Output paths, before any work


def test_bench_out_an_existing_file_is_refused_before_work_and_left_unchanged(tmp_path):
    f = tmp_path / "cluster.json"
    f.write_bytes(EXAMPLE.read_bytes())
    res = run("bench", "mckp", "--quick", "--out", str(f))
    one_error_line(res, "--out", "not a folder")
    assert res.stdout == "" and f.read_bytes() == EXAMPLE.read_bytes()


@pytest.mark.parametrize("argv,needle", [
    (["--out", ""], "--out: empty path"),
    (["--report", ""], "--report: empty path"),
    (["--report", "/dev/null"], "--report: '/dev/null' is not a regular file"),
    (["--plots", "p"], "--plots: only with --report"),
])
def test_bench_output_paths_refused_at_once(argv, needle):
    res = run("bench", "mckp", "--quick", *argv)
    one_error_line(res, needle)
    assert res.stdout == ""


def test_bench_report_in_a_folder_that_cannot_be_made(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    one_error_line(run("bench", "mckp", "--quick", "--report", str(blocker / "B.md")), "--report", "not a folder")


def test_existing_output_folder_needs_force_and_then_holds_no_stale_file(tmp_path):
    out = tmp_path / "res"
    out.mkdir()
    (out / "results.json").write_text("stale")
    (out / "mckp_time.png").write_text("stale plot of an earlier run")
    (out / "notes.txt").write_text("mine")
    res = run(*SMALL_BENCH, "--out", str(out))
    one_error_line(res, "--out", "not empty", "--force")
    assert (out / "results.json").read_text() == "stale"
    res = run(*SMALL_BENCH, "--out", str(out), "--force")
    assert res.returncode == 0, res.stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["suites"] == ["decide"]
    assert not (out / "mckp_time.png").exists()  # an earlier run's output: removed, not left beside the new ones
    assert (out / "notes.txt").read_text() == "mine"  # not ours: kept
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_an_empty_existing_folder_is_fine(tmp_path):
    res = run(*SMALL_BENCH, "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "results.json").is_file()


@pytest.fixture
def trace(tmp_path) -> Path:
    p = tmp_path / "trace.csv"
    p.write_text(TRACE)
    return p


SIM = ("--policy", "lyra", "--training-servers", "2", "--inference-servers", "0", "--interval", "300")


def test_simulate_out_checked_before_the_table_is_printed(tmp_path, trace):
    f = tmp_path / "summary.json"
    f.write_text("mine")
    res = run("simulate", "--trace", str(trace), *SIM, "--out", str(f))
    one_error_line(res, "--out", "not a folder")
    assert res.stdout == "" and f.read_text() == "mine"
    one_error_line(run("simulate", "--trace", str(trace), *SIM, "--out", ""), "--out: empty path")


def test_simulate_out_folder_force_and_no_planted_link_followed(tmp_path, trace):
    out = tmp_path / "sim"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (out / "summary.json.tmp").symlink_to(victim)  # the fixed temporary name of earlier versions
    (out / "jobs-old.csv").write_text("stale")
    one_error_line(run("simulate", "--trace", str(trace), *SIM, "--out", str(out)), "not empty")
    res = run("simulate", "--trace", str(trace), *SIM, "--out", str(out), "--force")
    assert res.returncode == 0, res.stderr
    assert victim.read_text() == "precious"
    summary = out / "summary.json"
    assert summary.is_file() and not summary.is_symlink()
    assert json.loads(summary.read_text())["policies"]["lyra"]
    assert not (out / "jobs-old.csv").exists() and (out / "jobs-lyra.csv").is_file()


def test_write_file_makes_a_new_unique_temporary_file(tmp_path, monkeypatch):
    from lyra_solver.bench.outputs import write_file

    victim = tmp_path / "victim"
    victim.write_text("precious")
    target = tmp_path / "results.json"
    for name in ("results.json.tmp", ".results.json.tmp"):
        (tmp_path / name).symlink_to(victim)
    write_file(target, "new\n")
    write_file(target, b"newer\n")  # replaced whole
    assert target.read_text() == "newer\n" and victim.read_text() == "precious"
    target.unlink()
    target.symlink_to(victim)  # a link at the target itself is replaced, not followed
    write_file(target, "x")
    assert not target.is_symlink() and victim.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".results.json.tmp", "results.json", "results.json.tmp",
                                                          "victim"]


def test_bench_decide_beyond_the_generator_exits_2_before_work():
    one_error_line(run("bench", "decide", "--servers", "1000000000"), "--servers", "at most 1,000,000")
    one_error_line(run("bench", "decide", "--servers", "10", "--jobs", "2000000000"), "--jobs", "at most")


# ---------------------------------------------------------------------------------------------------------
# Flags and help


def test_short_version_flag():
    long, short = run("--version"), run("-V")
    assert short.returncode == long.returncode == 0 and short.stdout == long.stdout != ""


@pytest.mark.parametrize("argv", [["decide", str(EXAMPLE), "--alloc", "exact"], ["--verb", "schema", "snapshot"],
                                  ["generate", "--serv=3"], ["bench", "mckp", "--qui"]])
def test_no_abbreviations(argv):
    abbreviated = next(a for a in argv if a.startswith("--"))
    one_error_line(run(*argv), "unrecognized arguments", abbreviated)


def _help_of(command: str) -> str:
    res = run(*([command] if command else []), "-h")
    assert res.returncode == 0, res.stderr
    return " ".join(res.stdout.split())  # argparse wraps lines: one line to search


@pytest.mark.parametrize("command", ["", "decide", "check", "mckp", "schema", "generate", "simulate", "bench",
                                     "completion"])
def test_help_shows_true_defaults_only(command):
    text = _help_of(command)
    assert "(default: None)" not in text and "(default: [])" not in text and "(default: False)" not in text
    for m in re.finditer(r"\(default[^)]*\)", text):  # one default per option, never two in a row
        assert not text[m.end():m.end() + 10].lstrip().startswith("(default"), text[m.start() - 80:m.end() + 40]


def test_generate_help_shows_the_seed_and_every_default():
    text = _help_of("generate")
    assert re.search(r"--seed SEED random seed \(same seed, same bytes\) \(default: 0\)", text), text
    for default in ("(default 100)", "(default 300)", "(default 8)", "(default cluster)", "(default 1000)"):
        assert default in text


def test_schema_writes_to_o(tmp_path):
    out = tmp_path / "s.json"
    assert run("schema", "snapshot", "-o", str(out)).returncode == 0
    assert json.loads(out.read_text()) == json.loads(run("schema", "snapshot").stdout)


def test_check_refuses_a_snapshot_as_the_decision_and_two_stdins():
    line = one_error_line(run("check", str(EXAMPLE), str(EXAMPLE)), str(EXAMPLE), "not a decision")
    assert "servers:" in line
    one_error_line(run("check", "-", "-", stdin=EXAMPLE.read_text()), "standard input")


def test_check_words_a_json_error_as_decide_does(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format_version": 1, x')
    d = one_error_line(run("decide", str(bad)))
    c = one_error_line(run("check", str(EXAMPLE), str(bad)))
    assert f"{bad}: $: not valid JSON: " in d and c == d


def test_backend_error_names_the_flag_not_the_input(monkeypatch, capsys):
    from lyra_solver import cli, values

    def missing(name, n):
        raise ValueError(f"backend: {name!r} is not installed")

    monkeypatch.setattr(values, "resolve_backend", missing)
    assert cli.main(["decide", str(EXAMPLE), "--backend", "torch"]) == 2
    err = capsys.readouterr().err
    assert err == "error: --backend: 'torch' is not installed\n"


@pytest.mark.parametrize("argv,needle", [
    (["--restart-penalty", "nan"], "--restart-penalty: must be a finite number"),
    (["--preemption-penalty", "inf"], "--preemption-penalty: must be a finite number"),
    (["--start", "yesterday"], "--start: not an ISO date"),
    (["--end", "2017-13-45"], "--end: not an ISO date"),
])
def test_simulate_flags_named(trace, argv, needle):
    one_error_line(run("simulate", "--trace", str(trace), *SIM, *argv), needle)


def test_a_trace_row_of_a_trillion_gpus_is_named_by_file_and_line(tmp_path):
    p = tmp_path / "huge.csv"
    p.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-03 00:00:00,100,1000000000000,1,c\n")
    one_error_line(run("simulate", "--trace", str(p), *SIM), f"{p}: line 2: num_gpus")


def test_global_verbosity_reaches_bench_and_vv_adds_debug_lines():
    quiet = run("-q", *SMALL_BENCH, "--progress")
    assert quiet.returncode == 0 and quiet.stderr == ""  # -q wins over --progress: no bar, no log line
    loud = run("-vv", *SMALL_BENCH)
    assert loud.returncode == 0 and "DEBUG" in loud.stderr and "INFO" in loud.stderr
    assert "DEBUG" in run("-vv", "decide", str(EXAMPLE)).stderr
    assert "DEBUG" not in run("-v", "decide", str(EXAMPLE)).stderr


def test_one_progress_rule_for_bench():
    assert run(*SMALL_BENCH).stderr == ""  # standard error is not a terminal here: no bar
    assert "bench:" in run(*SMALL_BENCH, "--progress").stderr  # asked for: a bar
    assert run(*SMALL_BENCH, "--progress", "--no-progress").returncode == 2  # one or the other


def test_progress_rule():
    import argparse
    import io

    from lyra_solver.bench.progress import wanted

    class Tty(io.StringIO):
        def isatty(self):
            return True

    ns = argparse.Namespace
    assert wanted(ns(), stream=Tty()) and not wanted(ns(), stream=io.StringIO())
    assert wanted(ns(progress=True), stream=io.StringIO())
    assert not wanted(ns(progress=False), stream=Tty()) and not wanted(ns(quiet=True, progress=True), stream=Tty())


# ---------------------------------------------------------------------------------------------------------
# Where data is


def test_data_variable_pointing_nowhere_is_exit_2_naming_it(tmp_path, trace):
    env = {"LYRA_SOLVER_DATA": str(tmp_path / "nowhere")}
    one_error_line(run("bench", "decide", "--quick", env=env), "LYRA_SOLVER_DATA")
    one_error_line(run("simulate", "--pollux-workload", "1", "--policy", "lyra", env=env), "LYRA_SOLVER_DATA")
    one_error_line(run("bench", "decide", "--quick", "--data-dir", str(tmp_path / "nowhere")), "--data-dir")


def test_data_folder_from_the_variable_and_the_flag(tmp_path, monkeypatch):
    from lyra_solver.bench import datapath

    monkeypatch.setenv(datapath.ENV, str(tmp_path))
    assert datapath.shared_data("philly", "philly.csv") == tmp_path / "philly" / "philly.csv"
    other = tmp_path / "other"
    other.mkdir()
    assert datapath.set_data_dir(str(other)) == other.resolve()
    assert datapath.data_root() == other.resolve()
    monkeypatch.delenv(datapath.ENV)
    default = datapath._repository_default()
    assert default == ROOT.parent / "shared" / "data"  # a source checkout: ../shared/data beside it


def test_a_pollux_workload_missing_names_where_to_set_the_data(tmp_path):
    res = run("simulate", "--pollux-workload", "1", "--policy", "lyra", env={"LYRA_SOLVER_DATA": str(tmp_path)})
    one_error_line(res, "--pollux", str(tmp_path))  # the flag and the folder it looked in


MACHINE_PATH = re.compile(r"""["'`(\s](/(work|home|Users|mnt|root|scratch)/)""")


def test_no_machine_path_in_the_package():
    hits = []
    for folder in ("solver", "formulations", "heuristics", "bench"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".json", ".typed") and path.is_file():
                for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                    if MACHINE_PATH.search(line):
                        hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert hits == []


# ---------------------------------------------------------------------------------------------------------
# generate mckp, then mckp


@pytest.mark.parametrize("kind", ["cluster", "uncorrelated", "weakly", "strongly", "subset-sum"])
def test_generate_mckp_then_mckp(tmp_path, kind):
    inst = tmp_path / "inst.json"
    res = run("generate", "mckp", "--classes", "30", "--items", "6", "--kind", kind, "--seed", "4", "-o", str(inst))
    assert res.returncode == 0, res.stderr
    again = run("generate", "mckp", "--classes", "30", "--items", "6", "--kind", kind, "--seed", "4")
    assert again.stdout.encode() == inst.read_bytes()  # same seed, same bytes
    doc = json.loads(inst.read_text())
    assert len(doc["classes"]) == 30 and all(1 <= len(c["weights"]) <= 6 for c in doc["classes"])
    answers = {}
    for method in ("core", "dp"):
        res = run("mckp", str(inst), "--method", method)
        assert res.returncode == 0, res.stderr
        answers[method] = json.loads(res.stdout)
    for a in answers.values():  # checked here, independently of the solver: one item per class, capacity kept
        choice = a["choice"]
        assert len(choice) == 30 and a["status"] == "optimal"
        assert sum(c["weights"][k] for c, k in zip(doc["classes"], choice, strict=True)) <= doc["capacity"]
        assert sum(c["values"][k] for c, k in zip(doc["classes"], choice, strict=True)) == pytest.approx(a["objective"])
    assert answers["core"]["objective"] == pytest.approx(answers["dp"]["objective"])


@pytest.mark.parametrize("argv,needle", [
    (["mckp", "--servers", "3"], "--servers: only with `lyra-solver generate snapshot`"),
    (["--classes", "3"], "--classes: only with `lyra-solver generate mckp`"),
    (["mckp", "--classes", "0"], "--classes: must be >= 1"),
    (["mckp", "--classes", "100000", "--items", "1000"], "at most 10,000,000 items"),
    (["mckp", "--kind", "hard"], "--kind"),
    (["mckp", "--seed", "-1"], "--seed"),
])
def test_generate_refuses_bad_flags(argv, needle):
    one_error_line(run("generate", *argv), needle)


# ---------------------------------------------------------------------------------------------------------
# Tables, completion


def test_bench_tables_say_what_they_hold():
    from lyra_solver.bench.suites.mckp import GROUPS, SUITE
    from lyra_solver.bench.tables import clip, targets_table

    groups = {i.group for i in SUITE.instances(__import__("lyra_solver.bench.harness").bench.harness.Config(
        scale="quick"))}
    assert all(len(g) > 2 and "issue" not in g for g in groups) and set(GROUPS.values()) <= groups
    table = targets_table([{"issue": 13, "target": "t", "verdict": "met", "detail": "d"}])
    assert table.splitlines()[0] == "| target | verdict | measured |" and "13" not in table
    note = "ValueError: capacity 10000000 too large for a dense table of 30 classes x 1,000,001 states"
    cut = clip(note, 40)
    assert len(cut) <= 40 and cut.endswith("...") and note.startswith(cut[:-3]) and note[len(cut) - 3] == " "
    assert clip("short", 40) == "short"


def test_completion_script():
    pytest.importorskip("shtab")
    res = run("completion", "bash")
    assert res.returncode == 0, res.stderr
    for word in ("decide", "generate", "--allocation", "--classes", "simulate"):
        assert word in res.stdout


def test_bench_lists_what_it_skips_for_lack_of_data(tmp_path, monkeypatch):
    from lyra_solver.bench import datapath, harness

    monkeypatch.setenv(datapath.ENV, str(tmp_path))  # a data folder without the Philly trace
    monkeypatch.setattr(datapath, "_ASKED", {})
    cfg = harness.Config(scale="tiny", repeat=0, time_limit=2.0)
    text, doc = harness.run_and_write(["decide"], cfg, jobs=1, backend="local", address=None, out=None,
                                      progress=False, command="test")
    assert "Skipped for lack of data: the instances built on philly/philly.csv" in text
    assert doc["config"]["missing_data"] == ["philly/philly.csv"]
    assert not any(r["group"] == "philly" for r in doc["rows"])
    (tmp_path / "philly").mkdir()
    (tmp_path / "philly" / "philly.csv").write_text("x")
    assert datapath.missing_data() == []
