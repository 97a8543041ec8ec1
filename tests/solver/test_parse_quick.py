"""The quick passes of snapshot parsing stand in for the full checks only where those would pass.

- struct classes: the tuple and dict fields each class's ``__post_init__`` freezes, found from its annotations at
  class creation, are msgspec's view of its types (``types._frozen_fields``), and a class without any has no
  ``__post_init__``;
- repeated keys (``validate._no_repeated_key``): true for valid texts written in every way (optional fields
  written with their default values or left out, colons inside ids, dict keys and app labels, whitespace), false
  for a repeated key in any object, even one that repeats the same value; parsing then names it as the full
  check does (``tests/test_hostile.py`` has the error lines);
- rules across fields (``validate._decoded_rules_hold``): true exactly when :func:`check_rules` accepts the
  decoded snapshot, over generated snapshots with fields changed at random.
"""
from __future__ import annotations

import copy
import json

import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lyra_solver import types as T
from lyra_solver import validate as V
from lyra_solver.bench.generate import generate_snapshot
from lyra_solver.errors import InputError
from lyra_solver.io import parse_snapshot
from lyra_solver.types import Snapshot

from tests.test_hostile import _objects

STRUCTS = sorted((obj for obj in vars(T).values()
                  if isinstance(obj, type) and issubclass(obj, msgspec.Struct) and obj.__module__ == T.__name__
                  and obj is not T._Struct), key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", STRUCTS, ids=lambda c: c.__name__)
def test_frozen_fields_found_at_class_creation_are_msgspecs_view(cls):
    assert sorted(T._FROZEN_FIELDS[cls]) == sorted(T._frozen_fields(cls))
    assert hasattr(cls, "__post_init__") == bool(T._FROZEN_FIELDS[cls])


@pytest.mark.parametrize("cls", list(V._KEYS), ids=lambda c: c.__name__)
def test_skimming_structs_list_every_optional_field(cls):
    fields = mi.type_info(cls).fields
    listed = set(V._KEYS[cls].__struct_fields__)
    assert {f.name for f in fields if not f.required} <= listed <= {f.name for f in fields}


def rich_doc() -> dict:
    """A valid snapshot using every field, written with colons in ids, dict keys and app labels."""
    doc = generate_snapshot(servers=8, jobs=14, seed=5)
    rename = {s["id"]: f"rack:{s['id']}" for s in doc["servers"]}
    for s in doc["servers"]:
        s["id"] = rename[s["id"]]
        s["gpu_mem_gb"] = 40.0
    doc["servers"][0]["state"] = None  # a training server's state written out as null
    for k, job in enumerate(doc["jobs"]):
        job["id"] = f"job:{k}"
        if "placement" in job:
            job["placement"] = {rename[s]: n for s, n in job["placement"].items()}
        else:
            job["placement"] = None
        job["deadline"] = None if k % 2 else 5000.0 + k
        job["packing"] = None
    doc["jobs"][0]["packing"] = {"gpu_util": 0.5, "gpu_mem_gb": 10.0, "slowdown": {"job:1": 1.2, "x:y": 1.1},
                                 "app": ":a:b"}
    doc["jobs"][1]["packing"] = {"gpu_util": 0.4, "gpu_mem_gb": 0.0, "app": None, "slowdown": None}
    doc["jobs"][2]["packing"] = {"gpu_util": 0.4, "gpu_mem_gb": 1.0}
    doc["jobs"][3].update(gpus_per_worker=1, submit_time=0.0, restart_penalty=0.0, preemption_penalty=0.0,
                          attained_service=0.0)
    doc["now"] = 0.0
    doc["options"] = {"queue": "sjf", "allocation": "exact", "reclaim": "greedy", "placement": "bfd",
                      "packing": "off", "time_limit": 1.0, "packing_policy": "jct", "packing_overhead": 0.05,
                      "sample_stealing": True, "pair_speed": {":a:b|c": [0.5, 0.6], "c|d": [1.0, 1.0]},
                      "packing_seed": 0, "objective": "jct-reduction"}
    return doc


def dense_doc() -> dict:
    """:func:`rich_doc` with every job's submit time, penalties and attained service other than 0: the repeated-key
    pass skims none of these fields (every job writes them), its count stands in for the skim."""
    doc = rich_doc()
    for k, job in enumerate(doc["jobs"]):
        job.update(submit_time=-10.0 - k, restart_penalty=5.0 + k, preemption_penalty=7.0 + k,
                   attained_service=100.0 + k)
    return doc


def mixed_doc() -> dict:
    """:func:`dense_doc` with one job that has not run yet (attained service 0) and one submitted at time 0: the
    pass skims those two fields, not the penalties."""
    doc = dense_doc()
    doc["jobs"][4]["attained_service"] = 0.0
    doc["jobs"][5]["submit_time"] = 0.0
    return doc


DOCS = {"rich": rich_doc, "dense": dense_doc, "mixed": mixed_doc}
#: the optional job fields each doc's jobs all write with other than their defaults (JobColumns.written)
WRITTEN = {"rich": (), "dense": ("submit_time", "restart_penalty", "preemption_penalty", "attained_service"),
           "mixed": ("restart_penalty", "preemption_penalty")}


def test_job_columns_name_the_fields_every_job_writes():
    for name, make in DOCS.items():
        snap = msgspec.json.decode(json.dumps(make()).encode(), type=Snapshot)
        assert V.JobColumns(snap.jobs).written == WRITTEN[name]
        skimmed = [f for f in V._JobKeys.__struct_fields__ if f not in WRITTEN[name]]
        top = mi.type_info(V._skim_decoder(tuple(skimmed)).type)
        jobs = next(f.type for f in top.fields if f.name == "jobs")
        job = jobs.item_type  # (msgspec's view leaves UNSET out of the union)
        assert [f.name for f in job.fields] == skimmed


TEXTS = {
    "compact": lambda doc: json.dumps(doc, separators=(",", ":")),
    "spaced": lambda doc: json.dumps(doc),
    "indented": lambda doc: json.dumps(doc, indent=2),
    "space before colons": lambda doc: json.dumps(doc, separators=(" , ", " : ")),
}


@pytest.mark.parametrize("doc_name", list(DOCS))
@pytest.mark.parametrize("style", list(TEXTS))
def test_valid_texts_take_the_quick_path(style, doc_name, monkeypatch):
    doc = DOCS[doc_name]()
    data = TEXTS[style](doc).encode()
    snap = msgspec.json.decode(data, type=Snapshot)
    assert V._no_repeated_key(data, snap)
    assert V._decoded_rules_hold(snap)

    def not_called(data):
        raise AssertionError("the full repeated-key check ran on a valid snapshot")

    monkeypatch.setattr(V, "check_duplicate_keys", not_called)
    assert parse_snapshot(data) == snap
    without = copy.deepcopy(doc)  # the same snapshot with every optional default left out
    defaults = {"placement": None, "deadline": None, "packing": None, "gpus_per_worker": 1, "submit_time": 0.0,
                "restart_penalty": 0.0, "preemption_penalty": 0.0, "attained_service": 0.0}
    for job in without["jobs"]:
        for key, default in defaults.items():
            if key in job and job[key] == default:
                del job[key]
    assert V._no_repeated_key(TEXTS[style](without).encode(), snap)


def _repeated(doc: dict, target: str, key: str, style) -> bytes:
    """The text of ``doc`` with ``key`` written twice, with the same value, in the object at ``target``."""
    marker = "__repeat_marker__"

    def walk(node, path=""):
        if isinstance(node, dict):
            items = {k: walk(v, f"{path}.{k}" if path else k) for k, v in node.items()}
            return {marker: None, **items} if path == target else items
        if isinstance(node, list):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(node)]
        return node

    obj = dict(_objects(doc))[target]
    text = style(walk(doc))
    sep = text[text.index(f'"{marker}"') + len(marker) + 2:text.index("null", text.index(f'"{marker}"'))]
    return text.replace(f'"{marker}"{sep}null', f"{json.dumps(key)}{sep}{style(obj[key])}", 1).encode()


@pytest.mark.parametrize("doc_name", list(DOCS))
@pytest.mark.parametrize("style", ["compact", "indented"])
def test_a_key_repeated_with_the_same_value_is_seen_in_every_object(style, doc_name):
    doc = DOCS[doc_name]()
    snap = parse_snapshot(TEXTS[style](doc).encode())
    cases = 0
    for path, obj in _objects(doc):
        for key in obj:
            data = _repeated(doc, path, key, TEXTS[style])
            assert msgspec.json.decode(data, type=Snapshot) == snap  # the decoder keeps one copy: the same snapshot
            assert not V._no_repeated_key(data, snap), (path, key)
            with pytest.raises(InputError) as exc:
                parse_snapshot(data)
            assert (exc.value.path, exc.value.problem) == (path or "$", f"duplicate key {json.dumps(key)}")
            cases += 1
    assert cases > 150


def test_escaped_text_is_left_to_the_full_check():
    doc = rich_doc()
    data = json.dumps(doc).replace('"job:0"', '"job\\u003a0"').encode()
    assert not V._no_repeated_key(data, msgspec.json.decode(data, type=Snapshot))
    assert parse_snapshot(data).jobs[0].id == "job:0"


# ---------------------------------------------------------------------------------------------- rules
def _change(doc: dict, where: int, what: int, value: int) -> None:
    """Change one field of the generated snapshot ``doc`` to a value that may break a rule."""
    jobs, servers = doc["jobs"], doc["servers"]
    job = jobs[where % len(jobs)]
    srv = servers[where % len(servers)]
    running = [j for j in jobs if j.get("placement")]
    tables = [j for j in jobs if j["throughput"]["kind"] == "table"]
    match what % 14:
        case 0:
            job["min_workers"] = 1 + value % 70
        case 1:
            job["max_workers"] = 1 + value % 70
        case 2:
            job["gpus_per_worker"] = 1 + value % 12
        case 3:
            job["restart_penalty" if value % 2 else "preemption_penalty"] = [0.0, 1e15, 2e15][value % 3]
        case 4:
            job["id"] = f"j{value % len(jobs)}"
        case 5:
            srv["id"] = f"{'ti'[value % 2]}{value % len(servers)}"
        case 6:
            srv["state"] = [None, "loaned", "idle", "serving"][value % 4]
        case 7:
            if running:
                job = running[where % len(running)]
                sid = sorted(job["placement"])[0]
                job["placement"][sid] = value % 11 - 2
        case 8:
            if running:
                job = running[where % len(running)]
                job["placement"][servers[value % len(servers)]["id"]] = 1 + value % 3
        case 9:
            if running:
                running[where % len(running)]["placement"] = {}
        case 10:
            if tables:
                tp = tables[where % len(tables)]["throughput"]
                k = value % len(tp["workers"])
                tp["workers"][k] = max(1, tp["workers"][k] + value % 5 - 2)
        case 11:
            if tables:
                tables[where % len(tables)]["throughput"]["rate"].append(10.0)
        case 12:
            job["placement"] = {servers[value % len(servers)]["id"]: 1 + value % 8}
        case 13:
            doc.setdefault("options", {})["pair_speed"] = {["a|b", "a|", "ab", "a|b|c"][value % 4]: [0.5, 0.5]}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 50), changes=st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99),
                                                             st.integers(0, 99)), max_size=3))
def test_quick_rules_pass_is_true_exactly_when_the_rules_hold(seed, changes):
    doc = generate_snapshot(servers=6, jobs=12, seed=seed)
    for change in changes:
        _change(doc, *change)
    snap = msgspec.json.decode(json.dumps(doc).encode(), type=Snapshot)
    try:
        V.check_rules(snap)
        holds = True
    except InputError:
        holds = False
    assert V._decoded_rules_hold(snap) == holds


def test_parsing_leaves_the_collector_as_it_found_it():
    import gc

    data = json.dumps(rich_doc()).encode()
    assert gc.isenabled()
    parse_snapshot(data)
    assert gc.isenabled()
    with pytest.raises(InputError):
        parse_snapshot(data.replace(b'"format_version": 1', b'"format_version": 2'))
    assert gc.isenabled()
    gc.disable()
    try:
        parse_snapshot(data)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_parsed_snapshot_skips_the_young_collection(monkeypatch):
    """From PROMOTE_MIN_BYTES of JSON, what the parse made moves to the collector's oldest generation (no young
    collection scans it); the application's young cyclic garbage is collected first, not moved with it; objects
    that the application froze stay frozen (the promotion is then not made)."""
    import gc
    import weakref

    class Node:
        pass

    data = json.dumps(rich_doc()).encode()
    monkeypatch.setattr(V, "PROMOTE_MIN_BYTES", len(data))
    cycle = Node()
    cycle.self = cycle
    dead = weakref.ref(cycle)
    del cycle
    snap = parse_snapshot(data)
    assert dead() is None  # collected before the promotion, not moved to the oldest generation
    young = {id(o) for o in gc.get_objects(generation=0)} | {id(o) for o in gc.get_objects(generation=1)}
    made = [snap.jobs, snap.servers, *(j.placement for j in snap.jobs if j.placement is not None)]
    assert len(made) > 2 and not any(id(o) in young for o in made)
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen >= 1
        parse_snapshot(data)
        assert gc.get_freeze_count() == frozen  # the application's frozen objects left frozen, nothing added
    finally:
        gc.unfreeze()


def test_a_small_snapshot_leaves_the_collector_alone(monkeypatch):
    import gc

    data = json.dumps(rich_doc()).encode()
    monkeypatch.setattr(V, "PROMOTE_MIN_BYTES", len(data) + 1)
    gc.collect()
    snap = parse_snapshot(data)
    young = {id(o) for o in gc.get_objects(generation=0)} | {id(o) for o in gc.get_objects(generation=1)}
    assert id(snap.jobs) in young
