"""Input validation of the engine's command line on malformed snapshots.

Every file in ``malformed/`` (except ``_valid.json`` and ``expected.json``) is a small variation of
``malformed/_valid.json`` with exactly one problem; ``malformed/expected.json`` gives, per file, the
field path the error must name and a few words its message must contain (lower case; a word may list
alternative phrasings separated by ``|``, e.g. ``"positive|>= 1"``, any one of which is enough). The
contract (DESIGN,
"Command line"): exit code 2, exactly one stderr line ``error: FILE: PATH: PROBLEM``, never a
traceback, no output written, input files only read.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lyra_solver.check import check_decision, format_violations

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "malformed"
EXPECTED: dict[str, dict] = json.loads((HERE / "expected.json").read_text())
TIMEOUT_S = 120


def decide(path: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m lyra_solver decide PATH -o OUT`` from the repository root.

    The snapshot is passed relative to the repository root, as a user would type it.
    """
    return subprocess.run(
        [sys.executable, "-m", "lyra_solver", "decide", str(path.relative_to(ROOT)), "-o", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
    )


def test_manifest_lists_every_file() -> None:
    files = {p.name for p in HERE.iterdir() if p.is_file()} - {"_valid.json", "expected.json"}
    assert files == set(EXPECTED)
    assert len(files) >= 30
    for name, entry in EXPECTED.items():
        assert set(entry) == {"path", "words"}, name
        assert entry["path"] and entry["words"], name
        assert all(w == w.lower() for w in entry["words"]), name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_snapshot_is_rejected(name: str, tmp_path: Path) -> None:
    path = HERE / name
    before = path.read_bytes()
    out = tmp_path / "decision.json"
    expected_path: str = EXPECTED[name]["path"]
    words: list[str] = EXPECTED[name]["words"]

    proc = decide(path, out)

    stderr = proc.stderr
    assert proc.returncode == 2, f"exit {proc.returncode}, stderr: {stderr!r}"
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, f"expected exactly one stderr line, got {lines!r}"
    line = lines[0]
    assert line.startswith("error: "), line
    assert name in line, line
    anchor = f"{name}: {expected_path}: "
    assert anchor in line, f"expected {anchor!r} in {line!r}"
    problem = line.split(anchor, 1)[1].lower()
    assert problem.strip(), line
    for word in words:
        assert any(alt in problem for alt in word.split("|")), \
            f"expected the word {word!r} in the problem of {line!r}"
    assert not out.exists(), "no decision is written for a bad snapshot"
    assert path.read_bytes() == before, "the input file is only read"


def test_valid_snapshot_gives_a_decision(tmp_path: Path) -> None:
    path = HERE / "_valid.json"
    before = path.read_bytes()
    out = tmp_path / "decision.json"

    proc = decide(path, out)

    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert path.read_bytes() == before
    decision = json.loads(out.read_text())
    assert isinstance(decision, dict) and decision.get("format_version") == 1
    snapshot = json.loads(before)
    assert set(decision.get("jobs", {})) == {job["id"] for job in snapshot["jobs"]}


def test_valid_snapshot_decision_passes_the_checker(tmp_path: Path) -> None:
    path = HERE / "_valid.json"
    out = tmp_path / "decision.json"
    proc = decide(path, out)
    assert proc.returncode == 0, proc.stderr
    found = check_decision(json.loads(path.read_text()), json.loads(out.read_text()))
    assert found == [], format_violations(found)
