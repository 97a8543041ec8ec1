"""Hostile inputs, third pass (issue 23), the engine's side: valid extremes that crashed, error lines naming the
wrong key, unbounded inputs and outputs that a hostile id could draw on.

Each test reproduces one case of the issue, through the command line (a subprocess, as a user would) or the
Python API, and states the promised behaviour.
"""
from __future__ import annotations

import json
import math
import os
import warnings

import msgspec
import numpy as np
import pytest
from lyra_solver import InputError, decide, load_snapshot, parse_snapshot
from lyra_solver.formulations.mckp import MCKPProblem, solve_mckp

from tests.test_hostile import EXAMPLE, one_clean_line, run, snapshot


def _two_elastic_running(penalty: float) -> dict:
    job = {"min_workers": 1, "max_workers": 8, "remaining_work": 1000.0,
           "throughput": {"kind": "power", "rate_per_worker": 1.0, "exponent": 0.9}, "restart_penalty": penalty}
    return {"format_version": 1,
            "servers": [{"id": "t0", "gpus": 8, "pool": "training"}, {"id": "t1", "gpus": 8, "pool": "training"}],
            "jobs": [dict(job, id="a", placement={"t0": 2}), dict(job, id="b", placement={"t1": 2})]}


# ------------------------------------------------------------------------- 5. penalties of 6e299 on elastic jobs
def test_a_huge_restart_penalty_is_refused_at_validation(tmp_path):
    from lyra_solver.validate import MAX_PENALTY
    from lyra_solver.values import TIME_CAP

    assert MAX_PENALTY == TIME_CAP  # values stay within twice the cap: their sums cannot overflow
    doc = _two_elastic_running(6e299)
    with pytest.raises(InputError, match=r"jobs\[0\]\.restart_penalty: must be at most 1e\+15"):
        parse_snapshot(json.dumps(doc).encode())
    f = tmp_path / "s.json"
    f.write_text(json.dumps(doc))
    assert "jobs[0].restart_penalty" in one_clean_line(run("decide", str(f)))
    doc["jobs"][1]["restart_penalty"] = 0.0
    doc["jobs"][0]["preemption_penalty"] = 1e16
    doc["jobs"][0]["restart_penalty"] = 0.0
    with pytest.raises(InputError, match=r"jobs\[0\]\.preemption_penalty"):
        parse_snapshot(json.dumps(doc).encode())


@pytest.mark.parametrize("allocation", ["exact", "greedy", "hull"])
def test_penalties_at_the_limit_give_a_decision(allocation):
    from lyra_solver.validate import MAX_PENALTY

    doc = _two_elastic_running(MAX_PENALTY)
    for job in doc["jobs"]:
        job["preemption_penalty"] = MAX_PENALTY
    d = decide(parse_snapshot(json.dumps(doc).encode()), allocation=allocation)
    assert set(d.jobs) == {"a", "b"} and all(math.isfinite(v) for v in [d.summary.jct_reduction])


# ------------------------------------------------------------------------- 7. the key an error names
def test_error_names_the_bad_key_of_a_packing_slowdown():
    doc = snapshot()
    doc = json.loads(msgspec.json.encode(doc))
    doc["jobs"][3]["packing"] = {"gpu_util": 0.5, "gpu_mem_gb": 4.0, "slowdown": {"a": 1.5, "b": 0.5, "c": 2.0}}
    with pytest.raises(InputError) as err:
        parse_snapshot(json.dumps(doc).encode())
    assert err.value.path == "jobs[3].packing.slowdown.b"


def test_error_names_the_bad_key_of_pair_speed():
    doc = json.loads(msgspec.json.encode(snapshot()))
    doc["options"] = {"pair_speed": {"a|b": [0.5, 0.5], "c|d": [0.5, 1.5]}}
    with pytest.raises(InputError) as err:
        parse_snapshot(json.dumps(doc).encode())
    assert err.value.path == "options.pair_speed.c|d[1]"


@pytest.mark.parametrize(("field", "bad", "message"), [("workers", -1, ">= 1"), ("action", 5, "got `int`"),
                                                        ("changed", "yes", "got `str`")])
def test_error_names_the_bad_job_of_a_decision(field, bad, message):
    from lyra_solver.io import encode, parse_decision

    snap = load_snapshot(str(EXAMPLE))
    doc = json.loads(encode(decide(snap)))
    last = list(doc["jobs"])[-1]
    doc["jobs"][last][field] = bad
    with pytest.raises(InputError) as err:
        parse_decision(json.dumps(doc).encode())
    assert err.value.path == f"jobs.{last}.{field}" and message in err.value.problem


# ------------------------------------------------------------------------- 8. decide(keep_packing=...)
@pytest.mark.parametrize(("keep", "path"), [
    ("abc", "keep_packing"), (5, "keep_packing"), ({"server": "t0"}, "keep_packing"), ([3], "keep_packing[0]"),
    ([{"server": "t0", "gpus": 2, "jobs": [], "shares": {}}], "keep_packing[0].jobs"),
    ([{"server": "t0", "gpus": 0, "jobs": ["a"], "shares": {}}], "keep_packing[0].gpus"),
    ([{"server": "t0", "gpus": 1, "jobs": ["a", "b"], "shares": {"a": 0.5, "b": 2.0}}], "keep_packing[0].shares.b"),
])
def test_keep_packing_is_validated(keep, path):
    snap = load_snapshot(str(EXAMPLE))
    with pytest.raises(InputError) as err:
        decide(snap, packing="gimbal", keep_packing=keep)
    assert err.value.path == path


def test_keep_packing_as_json_dicts_equals_the_typed_groups():
    from lyra_solver.io import encode
    from lyra_solver.packing import pack_step  # noqa: F401 - the step keep_packing feeds

    snap = load_snapshot(str(EXAMPLE))
    first = decide(snap, packing="gimbal")
    typed = decide(snap, packing="gimbal", keep_packing=first.packing)
    plain = decide(snap, packing="gimbal", keep_packing=json.loads(encode(first))["packing"])
    assert encode(typed) == encode(plain)


# ------------------------------------------------------------------------- 9. values a float solver cannot hold
@pytest.mark.parametrize("method", ["highs", "cbc"])
def test_float_solvers_refuse_values_they_cannot_represent(method, tmp_path):
    weights, values = [[0, 1, 4], [0, 2, 3]], [[0.0, 6e299, 1e299], [-2e299, 0.0, 3e299]]
    exact = solve_mckp(weights, values, 4, method="core")
    assert str(exact.status) == "optimal" and exact.objective > 1e299
    with pytest.raises(ValueError, match="cannot solve reliably"):
        solve_mckp(weights, values, 4, method=method)
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"capacity": 4, "classes": [{"weights": w, "values": v}
                                                        for w, v in zip(weights, values, strict=True)]}))
    assert f"method {method}" in one_clean_line(run("mckp", str(f), "--method", method))


@pytest.mark.parametrize("method", ["highs", "cbc"])
def test_float_solvers_agree_with_core_up_to_their_value_limit(method):
    from lyra_solver.formulations.mckp._types import FLOAT_SOLVER_MAX_VALUE_SUM

    rng = np.random.default_rng(7)
    for _ in range(25):
        n = int(rng.integers(2, 5))
        ws = [sorted(rng.integers(0, 6, size=3).tolist()) for _ in range(n)]
        vs = [(rng.uniform(-1, 1, size=3) * FLOAT_SOLVER_MAX_VALUE_SUM / n).tolist() for _ in range(n)]
        cap = int(rng.integers(0, 12))
        ref = solve_mckp(ws, vs, cap, method="core")
        res = solve_mckp(ws, vs, cap, method=method)
        assert res.status == ref.status
        if ref.objective is not None:
            assert res.objective == pytest.approx(ref.objective, rel=1e-9, abs=1e-3)


def test_cpsat_refuses_weights_its_constraints_cannot_hold():
    half = 2**61
    weights, values = [[half, 0], [half - 1, 5]], [[1.0, 2.0], [3.0, 1.0]]
    assert str(solve_mckp(weights, values, 2**62 - 1, method="core").status) == "optimal"
    with pytest.raises(ValueError, match="CP-SAT"):
        solve_mckp(weights, values, 2**62 - 1, method="cpsat")
    below = solve_mckp([[half - 10, 0], [half - 10, 5]], values, 2**62 - 1, method="cpsat")
    assert str(below.status) == "optimal"  # just below 2**62: still solved


# ------------------------------------------------------------------------- 10. input size
@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("args", [("decide", "/dev/zero"), ("mckp", "/dev/zero"), ("check", str(EXAMPLE), "/dev/zero"),
                                  ("check", "/dev/zero", str(EXAMPLE)),
                                  ("simulate", "--policy", "lyra", "--training-servers", "4", "--trace", "/dev/zero")])
def test_an_endless_input_is_refused_naming_it(args):
    line = one_clean_line(run(*args, timeout=60))
    assert "/dev/zero" in line and "MiB limit" in line


def test_input_limit_on_files_and_streams(tmp_path):
    import io as pyio

    from lyra_solver.io import read_bytes, read_limited

    f = tmp_path / "s.json"
    f.write_bytes(b" " * 1000)
    assert len(read_bytes(str(f), limit=1000)) == 1000
    with pytest.raises(InputError, match="limit") as err:
        read_bytes(str(f), limit=999)
    assert err.value.source == str(f)
    assert read_limited(pyio.BytesIO(b"x" * 50), "<stdin>", limit=50) == b"x" * 50
    with pytest.raises(InputError, match="limit"):
        read_limited(pyio.BytesIO(b"x" * 51), "<stdin>", limit=50)


# ------------------------------------------------------------------------- 11. check prints ids escaped
@pytest.mark.parametrize("bad_id", ["a\nok: the decision keeps every rule\n", "x\x1b[2J\r", "ls\u2028ep", "\x9b31m"])
def test_check_output_carries_no_control_characters(tmp_path, bad_id):
    snap = json.loads(EXAMPLE.read_text())
    dec = json.loads(msgspec.json.encode(decide(load_snapshot(str(EXAMPLE)))))
    dec["jobs"][bad_id] = {"action": "run", "workers": 1, "changed": True, "placement": {bad_id: 1}}
    dec["servers"]["reclaim"] = [bad_id]
    s, d = tmp_path / "s.json", tmp_path / "d.json"
    s.write_text(json.dumps(snap))
    d.write_text(json.dumps(dec))
    res = run("check", str(s), str(d))
    assert res.returncode == 1
    out = res.stdout.decode()
    lines = out.rstrip("\n").split("\n")
    assert all(line.isprintable() for line in lines), out
    assert not any(line.startswith("ok") for line in lines)
    assert all(" at " in line for line in lines)


# ------------------------------------------------------------------------- 16. no RuntimeWarning on exit 0
def test_huge_work_over_a_tiny_rate_warns_nothing(tmp_path):
    doc = _two_elastic_running(0.0)
    for job in doc["jobs"]:
        job["remaining_work"] = 1e300
        job["throughput"] = {"kind": "power", "rate_per_worker": 1e-300, "exponent": 0.5}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decide(parse_snapshot(json.dumps(doc).encode()))
    f = tmp_path / "s.json"
    f.write_text(json.dumps(doc))
    res = run("decide", str(f))
    assert res.returncode == 0 and res.stderr == b"", res.stderr


# ------------------------------------------------------------------------- 17. MCKP weight sums in integers
def test_weights_adding_up_to_just_below_2_62_are_accepted(tmp_path):
    p = MCKPProblem.from_ragged([[2**61, 0], [2**61 - 1]], [[1.0, 2.0], [3.0]], 2**62)
    assert str(solve_mckp(p).status) == "optimal"
    with pytest.raises(ValueError, match="2\\*\\*62 or more"):
        MCKPProblem.from_ragged([[2**61], [2**61]], [[1.0], [3.0]], 2**62)
    with pytest.raises(ValueError, match="too large"):
        MCKPProblem.from_padded(np.array([[2**62 + 1]], dtype=np.uint64), [[1.0]], [1], 5)
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"capacity": 2**62, "classes": [{"weights": [2**62 - 1], "values": [1.0]},
                                                            {"weights": [0], "values": [3.0]}]}))
    res = run("mckp", str(f))
    assert res.returncode == 0 and json.loads(res.stdout)["objective"] == 4.0, res.stderr


def test_exact_sum_is_exact():
    from lyra_solver.formulations.mckp._types import exact_sum

    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.integers(0, 2**62, size=int(rng.integers(1, 50)), dtype=np.int64)
        assert exact_sum(a) == sum(int(x) for x in a)
    assert exact_sum(np.array([2**62, 2**62])) == 2**63


# ------------------------------------------------------------------------- 18. error lines have a length cap
def test_a_ten_megabyte_id_gives_a_short_error_line(tmp_path):
    doc = json.loads(msgspec.json.encode(snapshot()))
    doc["jobs"][2]["placement"] = {"x" * 10_000_000 + "END": 1}
    f = tmp_path / "s.json"
    f.write_text(json.dumps(doc))
    line = one_clean_line(run("decide", str(f)))
    assert len(line) < 2000 and "..." in line and "jobs[2].placement.xxx" in line and "END" in line
    assert "unknown server" in line


def test_shorten_keeps_both_ends():
    from lyra_solver.errors import MAX_PART, shorten

    assert shorten("abc") == "abc"
    long = "a" * 1000 + "b" * 1000
    out = shorten(long)
    assert len(out) <= MAX_PART and out.startswith("a") and out.endswith("b") and "..." in out


@pytest.mark.parametrize("seed", [2, 3])
def test_packing_a_job_of_huge_work_over_a_tiny_rate(seed):
    """Found by a sweep of extreme values: the packing step's remaining time was inf (refused by the packing
    problem) where the value table caps it."""
    doc = json.loads(msgspec.json.encode(snapshot(seed=seed)))
    for job in doc["jobs"]:
        job["remaining_work"] = 1e16
        job["packing"] = {"gpu_util": 0.5, "gpu_mem_gb": 4.0}
        if job["throughput"]["kind"] == "power":
            job["throughput"]["rate_per_worker"] = 1e-300
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = decide(parse_snapshot(json.dumps(doc).encode()), packing="gimbal")
    assert set(d.jobs) == {j["id"] for j in doc["jobs"]}
