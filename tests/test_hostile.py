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
                                  ("check", str(EXAMPLE), str(EXAMPLE))])
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
