"""Every field of every format type survives the round trips: generated over the types' fields (msgspec.inspect),
not a hand list, so a field added to a type is covered without touching this file.

- JSON: each struct of :mod:`lyra_solver.types`, every field given a value other than its default, encodes and
  decodes back equal;
- ``apply_decision``: servers and jobs with every field set keep every field but the ones a decision changes
  (a server's ``state``, a job's ``placement``);
- immutability: each sequence field of a constructed struct is a tuple and each mapping a read-only dict, even
  when built from lists and dicts.
"""
from __future__ import annotations

import json
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
from lyra_solver import apply_decision, decide, encode, parse_snapshot
from lyra_solver import types as T
from lyra_solver.types import FrozenDict, Inference, Job, Server, Snapshot

STRUCTS = sorted((obj for obj in vars(T).values()
                  if isinstance(obj, type) and issubclass(obj, msgspec.Struct) and obj.__module__ == T.__name__
                  and not obj.__name__.startswith("_")), key=lambda c: c.__name__)


def _number(t: Any, integer: bool) -> Any:
    lo = t.ge if t.ge is not None else (t.gt + (1 if integer else 0.25) if t.gt is not None else 1)
    hi = t.le if t.le is not None else (t.lt - (1 if integer else 0.25) if t.lt is not None else lo + 10)
    value = lo + (hi - lo) * 0.37 if not integer else min(lo + 3, hi)
    return int(value) if integer else float(value)


def sample(t: Any, avoid: Any = msgspec.NODEFAULT) -> Any:
    """A valid value of the inspected type ``t`` (bounds respected), unequal to ``avoid`` where it can be."""
    if isinstance(t, mi.UnionType):
        options = [u for u in t.types if not isinstance(u, mi.NoneType)]
        return sample(options[0], avoid)
    if isinstance(t, mi.BoolType):
        return not avoid if isinstance(avoid, bool) else True
    if isinstance(t, mi.IntType):
        return _number(t, True)
    if isinstance(t, mi.FloatType):
        value = _number(t, False)
        return value if value != avoid else value / 2
    if isinstance(t, mi.StrType):
        return "x" * max(t.min_length or 1, 1)
    if isinstance(t, mi.LiteralType):
        return next((v for v in reversed(t.values) if v != avoid), t.values[0])
    if isinstance(t, mi.StructType):
        return build(t.cls)
    if isinstance(t, mi.DictType):
        return {"k": sample(t.value_type)}
    if isinstance(t, mi.ListType | mi.VarTupleType):
        return tuple(sample(t.item_type) for _ in range(max(t.min_length or 1, 1)))
    raise AssertionError(f"no sample for {t!r}: extend sample()")


def build(cls: type, **given: Any) -> Any:
    """An instance of ``cls`` with every field set to a non-default value (or as ``given``)."""
    values = {f.name: sample(f.type, f.default) for f in mi.type_info(cls).fields if f.name not in given}
    return cls(**values, **given)


@pytest.mark.parametrize("cls", STRUCTS, ids=lambda c: c.__name__)
def test_every_field_survives_encode_and_decode(cls):
    obj = build(cls)
    for f in mi.type_info(cls).fields:  # every field is set, none left at its default (so encoding writes it)
        if f.default is not msgspec.NODEFAULT:
            assert getattr(obj, f.name) != f.default, (cls.__name__, f.name)
    assert msgspec.json.decode(encode(obj), type=cls) == obj


@pytest.mark.parametrize("cls", STRUCTS, ids=lambda c: c.__name__)
def test_constructed_structs_are_immutable_all_the_way_down(cls):
    obj = build(cls)
    for f in mi.type_info(cls).fields:
        value = getattr(obj, f.name)
        assert not isinstance(value, list | dict) or isinstance(value, FrozenDict), (cls.__name__, f.name)
        if isinstance(value, FrozenDict):
            with pytest.raises(TypeError):
                value["new"] = 1
        with pytest.raises(AttributeError):
            setattr(obj, f.name, value)


def _full_snapshot() -> Snapshot:
    """Servers and jobs with every field set (generated), made consistent where the rules need it."""
    servers = [build(Server, id="t0", pool="training", state=None, gpus=8),
               build(Server, id="i0", pool="inference", state="loaned", gpus=8),
               build(Server, id="i1", pool="inference", state="idle", gpus=8)]
    tp = T.PowerThroughput(rate_per_worker=10.0, exponent=0.9)
    jobs = [build(Job, id="a", min_workers=2, max_workers=12, gpus_per_worker=1, throughput=tp,
                  placement={"t0": 4, "i0": 4}, packing=build(T.PackingProfile, gpu_mem_gb=5.0, slowdown=None)),
            build(Job, id="b", min_workers=1, max_workers=4, gpus_per_worker=1, throughput=tp, placement=None,
                  packing=build(T.PackingProfile, gpu_mem_gb=5.0, slowdown=None))]
    snap = Snapshot(format_version=1, servers=servers, jobs=jobs, inference=Inference(reclaim=1),
                    options=T.Options(time_limit=5.0))
    return parse_snapshot(encode(snap))


def test_apply_decision_keeps_every_server_and_job_field():
    snap = _full_snapshot()
    decision = decide(snap, deterministic=True)
    assert decision.servers.reclaim == ("i0",) and decision.servers.loan  # both server paths run
    after = apply_decision(snap, decision)
    for old, new in zip(snap.servers, after.servers, strict=True):
        for f in msgspec.structs.fields(Server):
            if f.name != "state":
                assert getattr(new, f.name) == getattr(old, f.name), ("server", old.id, f.name)
    for old, new in zip(snap.jobs, after.jobs, strict=True):
        for f in msgspec.structs.fields(Job):
            if f.name != "placement":
                assert getattr(new, f.name) == getattr(old, f.name), ("job", old.id, f.name)
    for f in msgspec.structs.fields(Snapshot):
        if f.name not in ("servers", "jobs", "inference"):
            assert getattr(after, f.name) == getattr(snap, f.name), f.name
    assert parse_snapshot(encode(after)) == after
    assert json.loads(encode(after))["servers"][0]["gpu_mem_gb"] == snap.servers[0].gpu_mem_gb
