"""Hostile and huge inputs (issue 9): every class of case a hostile or careless user can produce.

Each test reproduces one case of the issue against the command line (as a subprocess, as a user would) or the
Python API, and states the promised behaviour: exit 2 with one escaped line naming the file/stream and the
field path, never exit 3 or a traceback, outputs whole or absent, links and devices left as they are.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.json"


def run(*args: str, stdin: bytes | None = None, shell_redirect: str = "", timeout: float = 120,
        ) -> subprocess.CompletedProcess:
    """The CLI as a subprocess; ``shell_redirect`` (e.g. ``">&-"``) goes through ``sh`` to break a stream."""
    cmd = [sys.executable, "-m", "lyra_solver", *args]
    if shell_redirect:
        quoted = " ".join("'" + c.replace("'", "'\\''") + "'" for c in cmd)
        return subprocess.run(["sh", "-c", f"{quoted} {shell_redirect}"], input=stdin, capture_output=True,
                              cwd=ROOT, timeout=timeout)
    return subprocess.run(cmd, input=stdin, capture_output=True, cwd=ROOT, timeout=timeout)


def one_clean_line(res: subprocess.CompletedProcess) -> str:
    """The single stderr line of a refused run (exit 2), checked to hold no control character."""
    err = res.stderr.decode("utf-8", "replace")
    assert res.returncode == 2, (res.returncode, err)
    assert "Traceback" not in err
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1, err
    assert all(ch.isprintable() for ch in lines[0]), repr(lines[0])
    return lines[0]


def snapshot(servers: int = 6, jobs: int = 10, seed: int = 0) -> dict:
    from lyra_solver.bench.generate import generate_snapshot

    return generate_snapshot(servers=servers, jobs=jobs, seed=seed)


# ---------------------------------------------------------------------------------------------- 5. -o
def test_output_through_a_symlink_follows_it(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert run("decide", str(EXAMPLE), "-o", str(link)).returncode == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_bytes())["format_version"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]  # no temporary left


def test_output_to_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "new.json")
    assert run("decide", str(EXAMPLE), "-o", str(link)).returncode == 0
    assert link.is_symlink() and json.loads((tmp_path / "new.json").read_bytes())["format_version"] == 1


def test_output_to_a_fifo_is_written_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    res = run("decide", str(EXAMPLE), "-o", str(fifo))
    reader.join(timeout=60)
    assert res.returncode == 0, res.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(got[0])["format_version"] == 1


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="no /dev/null")
def test_output_to_a_device_is_written_not_replaced():
    before = os.lstat("/dev/null")
    assert run("decide", str(EXAMPLE), "-o", "/dev/null").returncode == 0
    after = os.lstat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_output_keeps_an_existing_files_permissions(tmp_path):
    out = tmp_path / "d.json"
    out.write_text("old")
    out.chmod(0o640)
    assert run("decide", str(EXAMPLE), "-o", str(out)).returncode == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_concurrent_writers_leave_one_whole_output(tmp_path):
    out = tmp_path / "same.json"
    expected = run("decide", str(EXAMPLE)).stdout
    procs = [subprocess.Popen([sys.executable, "-m", "lyra_solver", "decide", str(EXAMPLE), "-o", str(out)],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(8)]
    codes = [p.wait(timeout=300) for p in procs]
    errs = [p.stderr.read() for p in procs]
    for p in procs:
        p.stderr.close()
    assert codes == [0] * len(procs), errs
    assert out.read_bytes() == expected
    assert [p.name for p in tmp_path.iterdir()] == ["same.json"]


def test_output_naming_the_input_is_refused(tmp_path):
    snap = tmp_path / "s.json"
    snap.write_bytes(EXAMPLE.read_bytes())
    link = tmp_path / "l.json"
    link.symlink_to(snap)
    for target in (snap, link):
        line = one_clean_line(run("decide", str(snap), "-o", str(target)))
        assert "overwrite the input" in line
    assert snap.read_bytes() == EXAMPLE.read_bytes()


# ---------------------------------------------------------------------------------------------- 2. duplicate keys
def _objects(node, path=""):
    """Every JSON object of a document with its field path (the form error lines use)."""
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _objects(v, f"{path}.{k}" if path else k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _objects(v, f"{path}[{i}]")


def _with_duplicate(doc: dict, target_path: str, key: str) -> bytes:
    """The document's JSON text with ``key`` repeated (first copy holding a decoy) in the object at the path."""
    marker = "__dup_marker__"

    def walk(node, path=""):
        if isinstance(node, dict):
            items = {k: walk(v, f"{path}.{k}" if path else k) for k, v in node.items()}
            if path == target_path:
                items = {marker: None, **items}
            return items
        if isinstance(node, list):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(node)]
        return node

    text = json.dumps(walk(doc))
    return text.replace(f'"{marker}": null', f'{json.dumps(key)}: "decoy"', 1).encode()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), pick=st.integers(0, 10**6))
def test_duplicate_key_anywhere_in_a_snapshot_is_named(seed, pick):
    from lyra_solver import InputError, parse_snapshot

    doc = snapshot(seed=seed)
    objs = [(p, o) for p, o in _objects(doc) if o]
    path, obj = objs[pick % len(objs)]
    key = sorted(obj)[pick % len(obj)]
    with pytest.raises(InputError) as exc:
        parse_snapshot(_with_duplicate(doc, path, key))
    assert exc.value.path == (path or "$")
    assert exc.value.problem == f"duplicate key {json.dumps(key)}"


def test_duplicate_keys_on_the_command_line(tmp_path):
    doc = json.loads(EXAMPLE.read_bytes())
    running = next(i for i, j in enumerate(doc["jobs"]) if j.get("placement"))
    server = sorted(doc["jobs"][running]["placement"])[0]
    f = tmp_path / "dup.json"
    f.write_bytes(_with_duplicate(doc, f"jobs[{running}].placement", server))
    line = one_clean_line(run("decide", str(f)))
    assert line == f'error: {f}: jobs[{running}].placement: duplicate key "{server}"'

    m = tmp_path / "m.json"
    m.write_bytes(b'{"capacity": 3, "classes": [{"weights": [0, 1], "values": [0, 1], "weights": [0, 2]}]}')
    assert one_clean_line(run("mckp", str(m))) == f'error: {m}: classes[0]: duplicate key "weights"'

    out = tmp_path / "d.json"
    assert run("decide", str(EXAMPLE), "-o", str(out)).returncode == 0
    dec = json.loads(out.read_bytes())
    jid = sorted(dec["jobs"])[0]
    bad = tmp_path / "bad-decision.json"
    bad.write_bytes(_with_duplicate(dec, "jobs", jid))
    assert one_clean_line(run("check", str(EXAMPLE), str(bad))) == f'error: {bad}: jobs: duplicate key "{jid}"'


def test_escaped_colons_do_not_hide_a_duplicate():
    from lyra_solver import InputError, parse_snapshot

    doc = snapshot()
    doc["jobs"][0]["id"] = "a:b"
    text = _with_duplicate(doc, "jobs[1]", "id").replace(b'"a:b"', b'"a\\u003ab"')
    with pytest.raises(InputError, match='duplicate key "id"'):
        parse_snapshot(text)
    parse_snapshot(json.dumps(doc).replace('"a:b"', '"a\\u003ab"').encode())  # no duplicate: accepted


# ---------------------------------------------------------------------------------------------- 4. environment
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("args", [("decide", str(EXAMPLE)), ("schema", "snapshot"), ("generate", "--servers", "3"),
                                  ("check", str(ROOT / "tests/solver/broken_decisions/snapshot.json"),
                                   str(ROOT / "tests/solver/broken_decisions/valid.json"))])
def test_full_standard_output_is_exit_2(args):
    line = one_clean_line(run(*args, shell_redirect="> /dev/full"))
    assert "<stdout>" in line and "No space left" in line


def test_closed_standard_output_is_exit_2():
    line = one_clean_line(run("decide", str(EXAMPLE), shell_redirect=">&-"))
    assert "<stdout>" in line and "closed" in line


def test_closed_standard_input_is_exit_2():
    line = one_clean_line(run("decide", "-", shell_redirect="<&-"))
    assert "<stdin>" in line and "closed" in line


def test_unreadable_input_is_exit_2(tmp_path):
    assert "cannot read" in one_clean_line(run("decide", str(tmp_path / "absent.json")))
    assert "cannot read" in one_clean_line(run("decide", str(tmp_path)))


def test_output_to_a_directory_is_exit_2(tmp_path):
    assert "directory" in one_clean_line(run("decide", str(EXAMPLE), "-o", str(tmp_path)))


@pytest.mark.parametrize("bad_id", ["a\nb", "x\x1b[31mred\x1b[0m", "bell\x07", "tab\tid", "csi\x9b2J"])
def test_ids_with_control_characters_are_escaped_in_error_lines(tmp_path, bad_id):
    doc = snapshot()
    doc["jobs"][0]["id"] = bad_id
    doc["jobs"][1]["id"] = bad_id  # a duplicate id: the error line names it
    f = tmp_path / "s.json"
    f.write_text(json.dumps(doc))
    line = one_clean_line(run("decide", str(f)))
    assert "duplicate job id" in line and repr(bad_id)[1:-1] in line


def test_file_names_with_control_characters_are_escaped(tmp_path):
    f = tmp_path / "evil\x1b[2Jname\n.json"
    f.write_text("{")
    line = one_clean_line(run("decide", str(f)))
    assert "\\x1b[2Jname\\n.json" in line


@pytest.mark.parametrize("argv", [
    ["generate", "--servers", "0"], ["generate", "--servers", "-4"], ["generate", "--jobs", "-1"],
    ["generate", "--seed", "-1"], ["generate", "--gpus", "0"], ["generate", "--servers", str(10**12)],
    ["generate", "--servers", "x"], ["decide", str(EXAMPLE), "--time-limit", "-1"],
    ["decide", str(EXAMPLE), "--time-limit", "nan"], ["decide", str(EXAMPLE), "--allocation", "bogus"],
    ["mckp", "-", "--time-limit", "inf"], ["mckp", "-", "--method", "bogus"],
])
def test_every_argument_is_validated(argv):
    line = one_clean_line(run(*argv, stdin=b""))
    assert line.startswith("error: ")


@pytest.mark.parametrize("bad", [None, {}, "examples/cluster.json", EXAMPLE, b"{}", 3])
def test_decide_refuses_what_is_not_a_snapshot(bad):
    from lyra_solver import decide

    with pytest.raises(TypeError, match="Snapshot"):
        decide(bad)


@pytest.mark.parametrize("bad", [None, {"capacity": 3}, "instance.json", 3])
def test_solve_mckp_refuses_what_is_not_a_problem(bad):
    from lyra_solver.formulations.mckp import solve_mckp

    with pytest.raises(TypeError, match="takes an MCKPProblem"):
        solve_mckp(bad)


# ---------------------------------------------------------------------------------------------- 7. fuzz command
def test_fuzz_judges_each_broken_promise():
    from lyra_solver.bench.fuzz import judge

    assert judge(0, b"", 0.1, 100, memory_mb=2048) is None
    assert judge(2, b"error: f.json: jobs[0].id: bad\n", 0.1, 100, memory_mb=2048) is None
    assert judge(None, b"", 60, 100, memory_mb=2048) == "timeout"
    assert judge(3, b"error: internal error (X)\n", 0.1, 100, memory_mb=2048).startswith("internal error")
    assert judge(1, b"Traceback (most recent call last):\n", 0.1, 100, memory_mb=2048) == "traceback"
    assert judge(-9, b"", 0.1, 100, memory_mb=2048).startswith("exit -9")
    assert judge(0, b"", 0.1, 4000, memory_mb=2048).startswith("memory")
    assert judge(2, b"error: a\nb\n", 0.1, 100, memory_mb=2048).startswith("exit 2 without")
    assert judge(2, b"error: \x1b[31m\n", 0.1, 100, memory_mb=2048).startswith("unescaped")


def test_fuzz_is_seeded_and_runs_clean(tmp_path):
    import random

    from lyra_solver.bench.fuzz import fuzz, mutate_document, random_snapshot

    a = [mutate_document(random_snapshot(random.Random(7)), random.Random(k)) for k in range(5)]
    b = [mutate_document(random_snapshot(random.Random(7)), random.Random(k)) for k in range(5)]
    assert a == b
    cases, findings = fuzz(seconds=600, seed=3, max_cases=4, out_dir=tmp_path, timeout=120)
    assert cases == 4 and findings == [], findings
    assert json.loads((tmp_path / "findings.json").read_text()) == []


def test_fuzz_command_line_refuses_bad_arguments():
    from lyra_solver.bench.fuzz import main

    assert main(["--time", "-1"]) == 2
    assert main(["--seed", "x"]) == 2
    assert main(["--memory-mb", "10"]) == 2


# ---------------------------------------------------------------------------------------------- 1. sizes
def _decide_checked(doc: dict, **kw):
    """decide on a snapshot dict, checked by the independent checker; (decision, peak traced MB)."""
    import tracemalloc

    from lyra_solver import decide, encode, parse_snapshot
    from lyra_solver.check import check_decision

    snap = parse_snapshot(json.dumps(doc).encode())
    tracemalloc.start()
    try:
        dec = decide(snap, **kw)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    as_dict = json.loads(encode(dec))
    assert check_decision(doc, as_dict) == []
    return as_dict, peak


def _power(lo: int, hi: int, **extra) -> dict:
    return {"min_workers": lo, "max_workers": hi, "remaining_work": 1e9,
            "throughput": {"kind": "power", "rate_per_worker": 100.0, "exponent": 0.9}, **extra}


def test_one_queued_job_with_a_huge_max_workers_keeps_the_table_small():
    doc = snapshot(servers=600, jobs=200, seed=4)
    doc["jobs"].append({"id": "huge", **_power(1, 100_000)})
    dec, peak = _decide_checked(doc, time_limit=1.0)
    assert dec["jobs"]["huge"]["action"] == "run"
    assert peak < 400, peak  # the padded table was jobs x 100,000 options (GBs)


def test_a_million_gpu_server_with_one_elastic_job():
    doc = {"format_version": 1, "servers": [{"id": "s", "pool": "training", "gpus": 1_000_000}],
           "jobs": [{"id": "a", **_power(1, 1_000_000)}]}
    dec, peak = _decide_checked(doc, time_limit=1.0)
    assert dec["jobs"]["a"]["workers"] == 1_000_000 and dec["summary"]["statuses"]["allocation"] == "optimal"
    assert peak < 600, peak


def test_a_server_of_2_31_gpus_with_a_job_of_1_to_2_31_workers():
    big = 2**31 - 1
    doc = {"format_version": 1, "servers": [{"id": "s", "pool": "training", "gpus": big}],
           "jobs": [{"id": "a", **_power(1, big)}, {"id": "b", **_power(2, 9, placement={"s": 5})}]}
    dec, peak = _decide_checked(doc, time_limit=1.0)
    assert dec["summary"]["methods"]["allocation"].endswith("-thinned")
    # chosen among the thinned options, with a proven bound over every option (the LP bound) and its gap
    summary = dec["summary"]
    assert summary["bound"] is not None and 0.0 <= summary["optimality_gap"] <= 1e-6
    assert (summary["statuses"]["allocation"] == "optimal") == (summary["optimality_gap"] == 0.0)
    a, b = dec["jobs"]["a"]["workers"], dec["jobs"]["b"]["workers"]
    assert a + b <= big and a > big * 0.999  # within one grid step (about 4,300 workers) of the best
    assert peak < 400, peak


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), cells=st.sampled_from([8, 20, 60]))
def test_a_thinned_table_gives_a_feasible_decision_within_the_full_bound(seed, cells):
    import lyra_solver.steps.scale as scale

    doc = snapshot(servers=8, jobs=12, seed=seed)
    full, _ = _decide_checked(doc)
    old = scale.MAX_TABLE_CELLS
    scale.MAX_TABLE_CELLS = cells
    try:
        thin, _ = _decide_checked(doc)
    finally:
        scale.MAX_TABLE_CELLS = old
    # what the thinned round achieves is a choice of the full MCKP: never above the full optimum's bound
    bound = full["summary"].get("bound")
    assert bound is None or thin["summary"]["jct_reduction"] <= bound + 1e-6 * max(1.0, abs(bound))
    if thin["summary"]["methods"]["allocation"].endswith("-thinned"):
        # and the thinned round's own bound (LP over every option) is at least the full table's optimum
        assert thin["summary"]["bound"] is not None and thin["summary"]["optimality_gap"] is not None
        if full["summary"]["statuses"]["allocation"] == "optimal":
            assert thin["summary"]["bound"] >= bound - 1e-9 * max(1.0, abs(bound))


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=600), min_size=1,
                     max_size=4), steps=st.integers(1, 5))
def test_wide_class_hull_equals_the_column_sweep(rows, steps):
    import numpy as np
    from lyra_solver.formulations.mckp import MCKPProblem, _lp

    m = max(len(r) for r in rows)
    w = np.zeros((len(rows), m), dtype=np.int64)
    v = np.zeros((len(rows), m))
    for i, r in enumerate(rows):
        w[i, : len(r)] = np.arange(len(r)) * steps
        v[i, : len(r)] = r
    red = _lp.undominated(MCKPProblem.from_padded(w, v, [len(r) for r in rows], 10**6))
    old = _lp._WIDE_CLASS
    try:
        _lp._WIDE_CLASS = 1  # every class through the whole-row rounds
        fast = _lp.upper_hull(red)
    finally:
        _lp._WIDE_CLASS = old
    _lp._WIDE_CLASS, sweep = 10**9, None
    try:
        sweep = _lp.upper_hull(red)
    finally:
        _lp._WIDE_CLASS = old
    for a, b in zip(fast.__dict__.values(), sweep.__dict__.values(), strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_generate_refuses_a_trillion_servers_quickly():
    from lyra_solver.bench.generate import MAX_SERVERS, generate_snapshot

    with pytest.raises(ValueError, match="servers"):
        generate_snapshot(servers=10**12)
    with pytest.raises(TypeError, match="seed"):
        generate_snapshot(servers=3, seed=1.5)
    assert MAX_SERVERS == 1_000_000


@pytest.mark.parametrize("method", ["highs", "cbc"])
def test_float_solvers_count_model_building_in_the_time_limit(method):
    import numpy as np
    from lyra_solver.formulations.mckp import MCKPProblem, solve_mckp

    n = 3000
    p = MCKPProblem.from_padded(np.tile([0, 2], (n, 1)), np.tile([0.0, 1.0], (n, 1)), np.full(n, 2), n)
    res = solve_mckp(p, method=method, time_limit=1e-9)  # the limit passes while the model is built
    assert str(res.status) == "no_solution" and "building the model" in res.backend_status


# ---------------------------------------------------------------------------------------------- 3. numbers
@pytest.mark.parametrize("method", ["auto", "dp", "cpsat", "highs", "cbc", "greedy", "hull"])
def test_values_whose_sums_overflow_a_double_are_refused(method):
    from lyra_solver.formulations.mckp import solve_mckp

    with pytest.raises(ValueError, match="values: .*overflow"):
        solve_mckp([[0, 1], [0, 1]], [[0.0, 1e308], [0.0, 1e308]], 10, method=method)


@pytest.mark.parametrize("method", ["auto", "cpsat", "dp", "highs", "cbc"])
def test_weights_beyond_2_53_refused_by_float_solvers_solved_exactly_by_the_others(method):
    from lyra_solver.formulations.mckp import solve_mckp

    weights, values = [[0, 2**53 + 1], [0, 10]], [[0.0, 5.0], [0.0, 10.0]]
    if method in ("highs", "cbc"):
        with pytest.raises(ValueError, match=r"weights: .*2\*\*53"):
            solve_mckp(weights, values, 10, method=method)
        return
    res = solve_mckp(weights, values, 10, method=method)
    assert str(res.status) == "optimal" and res.objective == 10.0 and list(res.choice) == [0, 1]


def test_numbers_on_the_command_line(tmp_path):
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"capacity": 10, "classes": [{"weights": [0, 1], "values": [0, 1e308]}] * 2}))
    assert "overflow" in one_clean_line(run("mckp", str(f)))
    f.write_text(json.dumps({"capacity": 10, "classes": [{"weights": [0, 2**53 + 1], "values": [0, 5]},
                                                         {"weights": [0, 10], "values": [0, 10]}]}))
    assert "2**53" in one_clean_line(run("mckp", str(f), "--method", "highs"))
    ok = run("mckp", str(f))
    assert ok.returncode == 0 and json.loads(ok.stdout)["objective"] == 10.0


# ---------------------------------------------------------------------------------------------- 6. deterministic
def _busy(seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", f"import time\nt=time.time()+{seconds}\nwhile time.time()<t: pass"])


def test_deterministic_exact_answers_do_not_depend_on_machine_load(tmp_path):
    doc = snapshot(servers=40, jobs=60, seed=11)
    doc["inference"] = {"reclaim": 4}
    f = tmp_path / "s.json"
    f.write_text(json.dumps(doc))
    argv = ("decide", str(f), "--reclaim", "exact", "--placement", "exact", "--time-limit", "0.05",
            "--deterministic")
    quiet = run(*argv)
    assert quiet.returncode == 0, quiet.stderr
    hogs = [_busy(60) for _ in range(3)]
    try:
        loaded = run(*argv)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert loaded.stdout == quiet.stdout


def test_deterministic_reclaim_and_placement_in_python():
    from lyra_solver import decide, encode, parse_snapshot

    doc = snapshot(servers=30, jobs=40, seed=5)
    doc["inference"] = {"reclaim": 3}
    snap = parse_snapshot(json.dumps(doc).encode())
    outs = {encode(decide(snap, reclaim="exact", placement="exact", time_limit=0.01, deterministic=True))
            for _ in range(3)}
    assert len(outs) == 1


def test_the_exact_steps_share_one_time_limit():
    from lyra_solver.pipeline import Settings

    s = Settings(queue="sjf", allocation="exact", reclaim="exact", placement="exact", packing="off", time_limit=5.0,
                 deadline=0.0)
    assert s.left() == 0.001  # the round's deadline has passed: a step gets the minimum, not another 5 s
    assert Settings(queue="sjf", allocation="exact", reclaim="exact", placement="exact", packing="off",
                    time_limit=5.0, deterministic=True, deadline=0.0).left() == 5.0
