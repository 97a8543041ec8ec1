"""The three live bugs of issue 18, each as the round that showed it.

- a thinned allocation reported ``mckp-core-thinned``, which the decision format did not know: the engine's own
  output was refused by ``parse_decision`` and by the decision JSON Schema;
- ``apply_decision`` rebuilt reclaimed and loaned servers from four fields, so ``gpu_mem_gb`` went back to 80 and
  the next round could pack 10 + 10 GB onto a 16 GB GPU;
- the validation cache keyed on list identity and length: a job replaced in a validated snapshot went through
  ``decide`` unchecked.
"""
from __future__ import annotations

import json

import msgspec
import pytest
from lyra_solver import (
    Inference,
    InputError,
    Job,
    PowerThroughput,
    Server,
    Snapshot,
    apply_decision,
    check_decision,
    decide,
    encode,
    parse_decision,
    parse_snapshot,
    validate_snapshot,
)
from lyra_solver.types import json_schema

jsonschema = pytest.importorskip("jsonschema")


def _thinned_snapshot() -> Snapshot:
    """Two running elastic jobs with a million options each on one huge server: more cells than the scale step
    builds, so the value table is thinned (no limit lowered: the round as a user could send it)."""
    tp = {"kind": "power", "rate_per_worker": 10.0, "exponent": 0.8}
    doc = {"format_version": 1,
           "servers": [{"id": "t0", "pool": "training", "gpus": 3_000_000}],
           "jobs": [{"id": "a", "min_workers": 1, "max_workers": 1_000_000, "remaining_work": 1e12,
                     "throughput": tp, "placement": {"t0": 10}, "restart_penalty": 30},
                    {"id": "b", "min_workers": 1, "max_workers": 1_000_000, "remaining_work": 3e11,
                     "throughput": tp, "placement": {"t0": 10}, "restart_penalty": 30}]}
    return parse_snapshot(json.dumps(doc).encode())


def test_a_thinned_round_is_parsed_and_schema_valid():
    snap = _thinned_snapshot()
    decision = decide(snap, deterministic=True)
    method = decision.summary.methods["allocation"]
    assert method.endswith("-thinned"), method
    data = encode(decision)
    assert parse_decision(data) == decision
    jsonschema.validate(json.loads(data), json_schema("decision"))
    assert check_decision(snap, decision) == []


def _sixteen_gb_snapshot() -> Snapshot:
    """16 GB GPUs everywhere: a loaned server inference wants back and idle ones to borrow."""
    servers = [Server(id="t0", pool="training", gpus=8, gpu_mem_gb=16.0),
               Server(id="i0", pool="inference", gpus=8, state="loaned", gpu_mem_gb=16.0),
               Server(id="i1", pool="inference", gpus=8, state="idle", gpu_mem_gb=16.0),
               Server(id="i2", pool="inference", gpus=8, state="idle", gpu_mem_gb=16.0)]
    tp = PowerThroughput(rate_per_worker=10.0, exponent=0.9)
    jobs = [Job(id="a", min_workers=2, max_workers=16, remaining_work=1e6, throughput=tp,
                placement={"t0": 4, "i0": 4}, restart_penalty=30.0),
            Job(id="b", min_workers=4, max_workers=12, remaining_work=5e5, throughput=tp)]
    return validate_snapshot(Snapshot(format_version=1, servers=servers, jobs=jobs, inference=Inference(reclaim=1)))


def test_apply_keeps_every_field_of_reclaimed_and_loaned_servers():
    snap = _sixteen_gb_snapshot()
    decision = decide(snap)
    assert decision.servers.reclaim and decision.servers.loan  # both paths of apply_decision run
    after = apply_decision(snap, decision)
    for old, new in zip(snap.servers, after.servers, strict=True):
        assert new.gpu_mem_gb == 16.0, new
        # every field but the state, whatever fields a server has
        assert msgspec.structs.replace(new, state=None) == msgspec.structs.replace(old, state=None)


def test_a_validated_snapshot_cannot_be_changed():
    snap = _sixteen_gb_snapshot()
    bad = msgspec.structs.replace(snap.jobs[1], min_workers=9, max_workers=3, remaining_work=-5.0)
    with pytest.raises(TypeError):
        snap.jobs[0] = bad  # type: ignore[index]
    with pytest.raises(TypeError):
        snap.jobs[0].placement["t0"] = 99  # type: ignore[index]
    with pytest.raises(AttributeError):
        snap.jobs = (bad,)  # type: ignore[misc]
    # the only way to another snapshot is a new object, which decide validates
    changed = msgspec.structs.replace(snap, jobs=(bad, *snap.jobs[1:]))
    with pytest.raises(InputError, match="jobs"):
        decide(changed)
    # a snapshot built with lists stores tuples: nothing to change behind the validator's back
    built = Snapshot(format_version=1, servers=list(snap.servers), jobs=list(snap.jobs))
    assert type(built.servers) is tuple and type(built.jobs) is tuple
    assert validate_snapshot(built) is validate_snapshot(built)
