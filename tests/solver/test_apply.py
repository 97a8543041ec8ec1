"""apply_decision: the next round's snapshot, tested over multi-round runs of decide -> check -> apply."""
from __future__ import annotations

import doctest
import json

import lyra_solver
import lyra_solver.apply
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lyra_solver import InputError, apply_decision, decide, encode, parse_snapshot
from lyra_solver.apply import placements_after
from lyra_solver.bench.generate import generate_snapshot
from lyra_solver.check import check_decision

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(snap, decision) -> None:
    violations = check_decision(json.loads(encode(snap)), json.loads(encode(decision)))
    assert violations == [], violations[:5]


def _assert_applied(before, decision, after) -> None:
    """The independent statement of DESIGN "Applying a decision", field by field."""
    state = {s.id: s.state for s in before.servers}
    for sid in decision.servers.reclaim:
        state[sid] = "serving"
    for sid in decision.servers.loan:
        state[sid] = "loaned"
    assert {s.id: s.state for s in after.servers} == state
    assert [(s.id, s.pool, s.gpus) for s in after.servers] == [(s.id, s.pool, s.gpus) for s in before.servers]
    assert after.inference.reclaim == max(0, before.inference.reclaim - len(decision.servers.reclaim))
    assert after.now == before.now and after.options == before.options
    guests = {jid for g in decision.packing for jid in g.jobs[1:]}
    for old, new in zip(before.jobs, after.jobs, strict=True):
        jd = decision.jobs[old.id]
        if jd.action == "run" and old.id not in guests:
            assert new.placement == jd.placement and sum(new.placement.values()) == jd.workers
        else:
            assert new.placement is None
        # nothing but the placement changes
        assert msgspec.structs.replace(new, placement=None) == msgspec.structs.replace(old, placement=None)
    # placements_after: the same placements, in the same order within each, without building the snapshot
    quick = placements_after(before, decision)
    assert [None if p is None else list(p.items()) for p in quick] == \
        [None if j.placement is None else list(j.placement.items()) for j in after.jobs]
    # a placement the decision keeps is the job's own object
    assert all(p is old.placement for p, old in zip(quick, before.jobs, strict=True) if p == old.placement)


@SETTINGS
@given(servers=st.integers(2, 60), jobs=st.integers(0, 120), seed=st.integers(0, 2**31 - 1),
       running=st.floats(0, 1), allocation=st.sampled_from(["exact", "greedy", "hull"]),
       queue=st.sampled_from(["sjf", "fifo", "las"]),
       reclaims=st.lists(st.integers(0, 4), min_size=2, max_size=5))
def test_multi_round_decide_check_apply(servers, jobs, seed, running, allocation, queue, reclaims):
    data = generate_snapshot(servers=servers, jobs=jobs, seed=seed, running_share=running, reclaim=reclaims[0])
    snap = parse_snapshot(encode(data))
    for k in [*reclaims[1:], 0]:
        decision = decide(snap, allocation=allocation, queue=queue)
        _check(snap, decision)
        after = apply_decision(snap, decision)
        _assert_applied(snap, decision, after)
        # the applied snapshot is a valid input of the next round (through JSON as well)
        assert parse_snapshot(encode(after)) == after
        snap = msgspec.structs.replace(after, inference=msgspec.structs.replace(after.inference, reclaim=k))
    # one more round on the last applied snapshot: every decision applies and checks
    decision = decide(snap, allocation=allocation, queue=queue)
    _check(snap, decision)


@SETTINGS
@given(servers=st.integers(2, 60), jobs=st.integers(0, 120), seed=st.integers(0, 2**31 - 1),
       allocation=st.sampled_from(["exact", "greedy", "hull"]))
def test_deciding_again_changes_nothing_where_nothing_changed(servers, jobs, seed, allocation):
    """Where nothing is pending (no job queued, no reclaim asked), decide -> apply -> decide keeps every job
    where it is and borrows or returns nothing: the applied decision is a fixed point. Proven for the exact
    allocation (the kept allocation is still optimal, and the restart penalty makes it strictly better than any
    other of equal value); the greedy and hull heuristics are not fixed points in general (their answer
    depends on the shape of the value table, which the restart penalty changes), so for them the second
    decision is only checked.

    (After a round that admitted jobs the next one may legitimately differ: donors of base demand may not grow
    back in the round they donate, DESIGN step 3, but may in the next.)"""
    data = generate_snapshot(servers=servers, jobs=jobs, seed=seed, running_share=1.0, reclaim=0)
    data["jobs"] = [j for j in data["jobs"] if "placement" in j]  # the ones that did not fit would queue
    snap = parse_snapshot(encode(data))
    decision = decide(snap, allocation=allocation)
    after = apply_decision(snap, decision)
    again = decide(after, allocation=allocation)
    _check(after, again)
    if allocation != "exact":
        return
    assert again.servers.reclaim == () and again.servers.loan == ()
    for job in after.jobs:
        jd = again.jobs[job.id]
        assert jd.action == "run" and jd.placement == job.placement and jd.changed is False, job.id
    assert apply_decision(after, again) == after


def test_idempotent_on_a_quiet_cluster():
    """Deterministic instance of the property above, so that it is exercised whatever hypothesis draws."""
    data = generate_snapshot(servers=40, jobs=30, seed=5, running_share=1.0, reclaim=0)
    snap = parse_snapshot(encode(data))
    after = apply_decision(snap, decide(snap))
    assert all(j.placement is not None for j in after.jobs)
    again = decide(after)
    assert all(jd.changed is False for jd in again.jobs.values())
    assert apply_decision(after, again) == after


def _tiny():
    return parse_snapshot(json.dumps({
        "format_version": 1,
        "servers": [{"id": "t0", "pool": "training", "gpus": 8},
                    {"id": "i0", "pool": "inference", "gpus": 8, "state": "idle"},
                    {"id": "i1", "pool": "inference", "gpus": 8, "state": "loaned"}],
        "inference": {"reclaim": 3},
        "jobs": [{"id": "a", "min_workers": 1, "max_workers": 24, "remaining_work": 1e7, "restart_penalty": 5,
                  "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0},
                  "placement": {"t0": 4, "i1": 4}},
                 {"id": "b", "min_workers": 4, "max_workers": 4, "remaining_work": 1e3, "preemption_penalty": 9,
                  "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0},
                  "placement": {"t0": 4}},
                 {"id": "c", "min_workers": 2, "max_workers": 2, "remaining_work": 1e3,
                  "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0}}]}).encode())


def test_reclaim_is_reduced_by_what_was_returned_and_preempted_jobs_are_queued():
    snap = _tiny()
    decision = msgspec.convert({
        "format_version": 1, "servers": {"reclaim": ["i1"], "loan": ["i0"]},
        "jobs": {"a": {"action": "run", "workers": 2, "placement": {"t0": 2}, "changed": True},
                 "b": {"action": "preempt"}, "c": {"action": "run", "workers": 2, "placement": {"i0": 2}}},
        "summary": {"jct_reduction": 0, "preemptions": 1, "methods": {}}}, lyra_solver.Decision)
    after = apply_decision(snap, decision)
    assert [s.state for s in after.servers] == [None, "loaned", "serving"]
    assert after.inference.reclaim == 2
    assert [j.placement for j in after.jobs] == [{"t0": 2}, None, {"i0": 2}]
    assert snap == _tiny()  # inputs untouched


@pytest.mark.parametrize("change, message", [
    ({"jobs": {"a": {"action": "wait"}, "b": {"action": "wait"}}}, "job 'c' missing"),
    ({"jobs": {"a": {"action": "wait"}, "b": {"action": "wait"}, "c": {"action": "wait"},
               "z": {"action": "wait"}}}, "unknown job 'z'"),
    ({"servers": {"reclaim": ["nope"], "loan": []}}, "unknown server 'nope'"),
    ({"jobs": {"a": {"action": "run", "workers": 1, "placement": {"x9": 1}}, "b": {"action": "wait"},
               "c": {"action": "wait"}}}, "unknown server 'x9'"),
    ({"jobs": {"a": {"action": "run", "workers": 1}, "b": {"action": "wait"}, "c": {"action": "wait"}}},
     "without a placement"),
])
def test_unappliable_decisions_are_input_errors(change, message):
    base = {"format_version": 1, "servers": {"reclaim": [], "loan": []},
            "jobs": {"a": {"action": "wait"}, "b": {"action": "wait"}, "c": {"action": "wait"}},
            "summary": {"jct_reduction": 0, "preemptions": 0, "methods": {}}}
    base.update(change)
    with pytest.raises(InputError, match=message):
        apply_decision(_tiny(), msgspec.convert(base, lyra_solver.Decision))


def test_doctest():
    assert doctest.testmod(lyra_solver.apply).failed == 0


def test_packing_guests_return_to_the_queue_and_the_next_snapshot_is_valid():
    snap = parse_snapshot(b'''{"format_version": 1, "options": {"packing": "gimbal", "allocation": "greedy"},
      "servers": [{"id": "t0", "pool": "training", "gpus": 8}],
      "jobs": [{"id": "h", "min_workers": 8, "max_workers": 8, "remaining_work": 1e7,
                "throughput": {"kind": "profile", "model": "imagenet"}, "placement": {"t0": 8},
                "packing": {"gpu_util": 0.81, "gpu_mem_gb": 14, "app": "imagenet"}},
               {"id": "g", "min_workers": 1, "max_workers": 1, "remaining_work": 1e6,
                "throughput": {"kind": "profile", "model": "ncf"},
                "packing": {"gpu_util": 0.23, "gpu_mem_gb": 2, "app": "ncf"}}]}''')
    decision = decide(snap)
    _check(snap, decision)
    assert [g.jobs for g in decision.packing] == [("h", "g")] and decision.jobs["g"].action == "run"
    after = apply_decision(snap, decision)
    _assert_applied(snap, decision, after)
    assert after.jobs[0].placement == {"t0": 8} and after.jobs[1].placement is None
    assert parse_snapshot(encode(after)) == after  # valid: the guest holds none of the host's GPUs
    again = decide(after)  # packed again the next round
    _check(after, again)
    assert [g.jobs for g in again.packing] == [("h", "g")]
