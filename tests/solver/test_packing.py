"""Step 6 (packing) in the round: every packed decision keeps the checker's rules; options and CLI flags."""
from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lyra_solver import io
from lyra_solver.bench.generate import generate_snapshot
from lyra_solver.check import check_decision, format_violations
from lyra_solver.cli import main
from lyra_solver.errors import InputError
from lyra_solver.formulations.vocabulary import PACKINGS
from lyra_solver.pipeline import decide

METHODS = list(PACKINGS[1:])  # every packing option but off, from the method table


def with_profiles(snap: dict, seed: int, *, mem_max: float = 60.0, deadlines: bool = True) -> dict:
    """Give every job a packing profile (and some a deadline); some servers smaller GPU memory."""
    import numpy as np

    rng = np.random.default_rng(seed)
    for job in snap["jobs"]:
        job["packing"] = {"gpu_util": float(rng.choice([0.23, 0.32, 0.47, 0.65, 0.81, 1.0])),
                          "gpu_mem_gb": float(np.round(rng.uniform(1, mem_max), 1)),
                          "app": str(rng.choice(["resnet", "bert", "ncf"]))}
        if deadlines and rng.random() < 0.5:
            job["deadline"] = float(rng.uniform(100, 50_000))
    for server in snap["servers"]:
        if rng.random() < 0.3:
            server["gpu_mem_gb"] = 40.0
    return snap


@given(st.integers(0, 10_000), st.sampled_from(METHODS), st.sampled_from(["jct", "deadline", "makespan"]),
       st.booleans())
def test_every_packed_decision_passes_the_checker(seed, method, policy, stealing):
    raw = with_profiles(generate_snapshot(servers=6, jobs=24, seed=seed, running_share=0.7), seed)
    raw["options"] = {"sample_stealing": stealing, "pair_speed": {"resnet|bert": [0.7, 0.8]}, "packing_seed": seed}
    snap = io.parse_snapshot(json.dumps(raw).encode())
    run = dict(packing=method, packing_policy=policy, time_limit=0.3, deterministic=True)
    decision = decide(snap, **run)
    out = json.loads(io.encode(decision))
    found = check_decision(raw, out)
    assert found == [], format_violations(found)
    if out["summary"]["methods"]["packing"] == "none":  # no waiting job may join any host (size, memory rules)
        from lyra_solver.steps.pack import packing_instance

        assert out["packing"] == [] and packing_instance(snap, decide(snap), queue=snap.options.queue) is None
    else:
        assert out["summary"]["methods"]["packing"] in ("gimbal", "lucid", "random", "cpsat")
    packed = {e["jobs"][1] for e in out["packing"]}  # the engine writes the host first, then its guest
    base = json.loads(io.encode(decide(snap)))
    # packing only starts waiting jobs; it changes nothing else
    for jid, entry in out["jobs"].items():
        if jid in packed:
            assert base["jobs"][jid] == {"action": "wait"} and entry["action"] == "run"
        else:
            assert entry == base["jobs"][jid]
    assert io.encode(decide(snap, **run)) == io.encode(decision)


def test_off_is_the_default_and_changes_nothing():
    raw = with_profiles(generate_snapshot(servers=6, jobs=24, seed=3, running_share=0.7), 3)
    snap = io.parse_snapshot(json.dumps(raw).encode())
    off = decide(snap)
    assert off.packing == () and "packing" not in off.summary.methods
    assert io.encode(decide(snap, packing="off")) == io.encode(off)


def test_packing_starts_waiting_jobs_on_a_crowded_cluster():
    raw = with_profiles(generate_snapshot(servers=6, jobs=40, seed=5, running_share=0.8), 5, deadlines=False)
    snap = io.parse_snapshot(json.dumps(raw).encode())
    for method in METHODS:
        out = decide(snap, packing=method)
        assert out.packing, method
        assert all(g.shares[g.jobs[0]] in [k / 10 for k in range(1, 11)] for g in out.packing)


def test_measured_pair_speed_overrides_the_model():
    from lyra_solver.steps.pack import packing_instance

    raw = with_profiles(generate_snapshot(servers=6, jobs=40, seed=5, running_share=0.8), 5, deadlines=False)
    for job in raw["jobs"]:
        job["packing"]["app"] = "x"
    raw["options"] = {"pair_speed": {"x|x": [0.3, 0.4]}}
    snap = io.parse_snapshot(json.dumps(raw).encode())
    inst = packing_instance(snap, decide(snap))
    assert inst is not None
    assert (inst.problem.speed_guest == 0.3).all() and (inst.problem.speed_host == 0.4).all()


def test_bad_pair_speed_key_is_named():
    raw = generate_snapshot(servers=2, jobs=2, seed=0)
    raw["options"] = {"pair_speed": {"nobar": [0.5, 0.5]}}
    with pytest.raises(InputError, match="pair_speed"):
        io.parse_snapshot(json.dumps(raw).encode())
    raw["options"] = {"pair_speed": {"a|b": [0.5, 1.5]}}
    with pytest.raises(InputError):
        io.parse_snapshot(json.dumps(raw).encode())
    raw = generate_snapshot(servers=2, jobs=2, seed=0)
    raw["jobs"][0]["packing"] = {"gpu_util": 0.0, "gpu_mem_gb": 1}
    with pytest.raises(InputError, match="gpu_util"):
        io.parse_snapshot(json.dumps(raw).encode())


def test_cli_packing_flags(tmp_path, capsys):
    raw = with_profiles(generate_snapshot(servers=6, jobs=40, seed=5, running_share=0.8), 5)
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(raw))
    out = tmp_path / "dec.json"
    assert main(["decide", str(snap), "--packing", "gimbal", "--packing-policy", "deadline", "-o", str(out)]) == 0
    decision = json.loads(out.read_text())
    assert decision["packing"] and decision["summary"]["methods"]["packing"] == "gimbal"
    assert main(["check", str(snap), str(out)]) == 0
    assert main(["decide", str(snap), "--packing", "best"]) == 2
    assert "--packing" in capsys.readouterr().err


def test_options_round_trip():
    raw = generate_snapshot(servers=2, jobs=2, seed=0)
    raw["options"] = {"packing": "lucid", "packing_policy": "makespan", "packing_overhead": 0.1,
                      "sample_stealing": False, "packing_seed": 4}
    snap = io.parse_snapshot(json.dumps(raw).encode())
    assert snap.options.packing == "lucid" and snap.options.packing_overhead == 0.1
    assert msgspec.json.decode(io.encode(snap))["options"]["packing_policy"] == "makespan"


def _two_hosts_one_guest(mem: dict | None = None):
    tp = {"kind": "power", "rate_per_worker": 1.0, "exponent": 1.0}
    raw = {"format_version": 1,
           "servers": [{"id": s, "pool": "training", "gpus": 1, "gpu_mem_gb": (mem or {}).get(s, 80.0)}
                       for s in ("t0", "t1")],
           "jobs": [{"id": "a", "min_workers": 1, "max_workers": 1, "remaining_work": 5000.0, "throughput": tp,
                     "placement": {"t0": 1}, "packing": {"gpu_util": 0.5, "gpu_mem_gb": 10.0}},
                    {"id": "b", "min_workers": 1, "max_workers": 1, "remaining_work": 9000.0, "throughput": tp,
                     "placement": {"t1": 1}, "packing": {"gpu_util": 0.4, "gpu_mem_gb": 10.0}},
                    {"id": "g", "min_workers": 1, "max_workers": 1, "remaining_work": 800.0, "throughput": tp,
                     "packing": {"gpu_util": 0.3, "gpu_mem_gb": 10.0}}]}
    return raw, io.parse_snapshot(json.dumps(raw).encode())


@pytest.mark.parametrize("method", METHODS)
def test_keep_packing_keeps_a_guest_on_its_host_gpus(method):
    """The guest goes to one host without ``keep_packing``; told it shared the other host's GPU last round, it
    stays there (re-pairing would restart it), and every decision passes the checker. Entries that no longer
    match (an unknown host, other GPUs, a server whose memory no longer fits) are ignored."""
    from lyra_solver.types import PackingGroup

    raw, snap = _two_hosts_one_guest()
    run = dict(packing=method, time_limit=1.0, deterministic=True)
    free = decide(snap, **run)
    assert [g.jobs for g in free.packing] and free.packing[0].jobs[1] == "g"
    first = free.packing[0].jobs[0]
    other, at = ("b", "t1") if first == "a" else ("a", "t0")
    kept = decide(snap, **run, keep_packing=[PackingGroup(server=at, gpus=1, jobs=[other, "g"],
                                                          shares={other: 1.0, "g": 1.0})])
    assert [(g.server, g.jobs) for g in kept.packing] == [(at, (other, "g"))]
    assert kept.jobs["g"].placement == {at: 1}
    for out in (free, kept):
        found = check_decision(raw, json.loads(io.encode(out)))
        assert found == [], format_violations(found)
    for stale in (PackingGroup(server=at, gpus=1, jobs=["zz", "g"], shares={"zz": 1.0, "g": 1.0}),
                  PackingGroup(server="t0" if at == "t1" else "t1", gpus=1, jobs=[other, "g"],
                               shares={other: 1.0, "g": 1.0}),
                  PackingGroup(server=at, gpus=2, jobs=[other, "g"], shares={other: 1.0, "g": 1.0})):
        assert io.encode(decide(snap, **run, keep_packing=[stale])) == io.encode(free)
    _, small = _two_hosts_one_guest({at: 15.0})  # the pair's 20 GB no longer fits where it was
    keep = [PackingGroup(server=at, gpus=1, jobs=[other, "g"], shares={other: 1.0, "g": 1.0})]
    assert [g.jobs for g in decide(small, **run, keep_packing=keep).packing] == [(first, "g")]


@given(st.integers(0, 10_000), st.sampled_from(METHODS), st.floats(0.2, 1.0))
def test_next_round_with_keep_packing_passes_the_checker(seed, method, progress):
    """A round, its decision carried out (``apply_decision``: guests back to the queue), the jobs' work partly
    done, then the next round told the last packing: every rule still holds (any ``gpus_per_worker``) and the
    same inputs give the same bytes."""
    from lyra_solver.apply import apply_decision

    raw = with_profiles(generate_snapshot(servers=6, jobs=24, seed=seed, running_share=0.8), seed, deadlines=False)
    snap = io.parse_snapshot(json.dumps(raw).encode())
    run = dict(packing=method, time_limit=0.3, deterministic=True)
    first = decide(snap, **run)
    nxt = apply_decision(snap, first)
    nxt = msgspec.structs.replace(nxt, jobs=[msgspec.structs.replace(j, remaining_work=j.remaining_work * progress)
                                             for j in nxt.jobs])
    raw2 = msgspec.to_builtins(nxt)
    second = decide(nxt, **run, keep_packing=first.packing)
    found = check_decision(raw2, json.loads(io.encode(second)))
    assert found == [], format_violations(found)
    assert io.encode(decide(nxt, **run, keep_packing=first.packing)) == io.encode(second)
