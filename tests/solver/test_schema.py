"""The JSON Schemas are the contract for everything a schema can say.

The same corpus of bad snapshots (``malformed/`` and the cases below) goes through ``jsonschema`` with
``lyra-solver schema snapshot`` and through the command line's reader; every disagreement must be a rule that no
JSON Schema can express, listed in :data:`NOT_EXPRESSIBLE` with the reason.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from lyra_solver import cli
from lyra_solver.types import SCHEMAS, json_schema

jsonschema = pytest.importorskip("jsonschema")

HERE = Path(__file__).resolve().parent
MALFORMED = HERE / "malformed"
ROOT = HERE.parents[1]

#: Bad inputs the schema accepts and the engine refuses: each a rule across fields or values.
NOT_EXPRESSIBLE = {
    "gpus_per_worker_larger_than_every_server.json": "a worker must fit on the largest server (across objects)",
    "job_duplicate_id.json": "ids unique across the list (uniqueItems compares whole objects)",
    "server_duplicate_id.json": "ids unique across the list (uniqueItems compares whole objects)",
    "min_workers_above_max.json": "min_workers <= max_workers (a comparison of two fields)",
    "placement_above_max_workers.json": "placement counts add up to at most max_workers (a sum against a field)",
    "placement_below_min_workers.json": "placement counts add up to at least min_workers (a sum against a field)",
    "placement_on_idle_server.json": "a placement only on usable servers (the state of another object)",
    "placement_on_serving_server.json": "a placement only on usable servers (the state of another object)",
    "placement_overcommits_server.json": "GPUs used per server across all jobs within its GPUs (a sum over jobs)",
    "placement_unknown_server.json": "placement keys are server ids (a reference to another object)",
    "table_length_mismatch.json": "workers and rate of a table have the same length (two arrays compared)",
    "table_not_covering_max_workers.json": "a table covers min..max workers (array ends against fields)",
    "table_workers_not_increasing.json": "table workers strictly increasing (an order between items)",
    "remaining_work_1e999.json": "1e999 is read as infinity by a JSON parser; bounds cannot refuse it",
    "remaining_work_nan.json": "NaN is not JSON; a parser that reads it anyway gets a value no bound refuses",
    "extra:gpus_float_integral": "JSON Schema counts 8.0 as an integer; the engine wants integers written so",
    "extra:placement_count_float_integral": "JSON Schema counts 2.0 as an integer; the engine wants integers "
                                            "written so",
}

_VALID = json.loads((MALFORMED / "_valid.json").read_text())


def _variant(change) -> dict:
    doc = copy.deepcopy(_VALID)
    change(doc)
    return doc


def _set(path, value):
    def change(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change


#: More bad snapshots (issue 8: the schema used to accept these): name -> document.
EXTRA = {
    "placement_count_negative": _variant(lambda d: d["jobs"][0].__setitem__(
        "placement", {k: -1 for k in d["jobs"][0]["placement"]})) if "placement" in _VALID["jobs"][0] else None,
    "state_on_training_pool": _variant(_set(["servers", 0, "state"], "idle")),
    "state_null_on_inference": _variant(_set(["servers", 3, "state"], None)),
    "gpus_float_integral": _variant(_set(["servers", 0, "gpus"], 8.0)),
    "placement_count_float_integral": _variant(lambda d: d["jobs"][0].__setitem__(
        "placement", {k: float(v) for k, v in d["jobs"][0]["placement"].items()})),
    "min_workers_float": _variant(_set(["jobs", 0, "min_workers"], 1.5)),
    "reclaim_float": _variant(_set(["inference", "reclaim"], 0.5)),
    "exponent_above_one": _variant(_set(["jobs", 0, "throughput", "exponent"], 1.5)),
    "gpus_huge": _variant(_set(["servers", 0, "gpus"], 2**40)),
    "unknown_option_value": _variant(lambda d: d.setdefault("options", {}).__setitem__("placement", "magic")),
}
EXTRA = {k: v for k, v in EXTRA.items() if v is not None}


def _corpus():
    for path in sorted(MALFORMED.glob("*.json")):
        if path.name in ("_valid.json", "expected.json"):
            continue
        yield path.name, path.read_bytes()
    for name, doc in EXTRA.items():
        yield f"extra:{name}", json.dumps(doc).encode()


def _schema_accepts(validator, data: bytes) -> bool | None:
    try:
        doc = json.loads(data)
    except ValueError:
        return None  # not JSON: nothing for a schema to judge
    return validator.is_valid(doc)


def _cli_accepts(data: bytes, tmp_path: Path) -> bool:
    path = tmp_path / "snapshot.json"
    path.write_bytes(data)
    return cli.main(["check", str(path), str(ROOT / "tests" / "solver" / "malformed" / "_valid.json")]) != 2


def test_schemas_are_valid_and_named():
    for what in SCHEMAS:
        schema = json_schema(what)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"].startswith("https://json-schema.org/") and schema["$id"].endswith(":1")


def test_valid_inputs_pass_the_schema():
    from lyra_solver import decide, encode, parse_snapshot
    from lyra_solver.bench.generate import generate_snapshot

    snap = jsonschema.Draft202012Validator(json_schema("snapshot"))
    dec = jsonschema.Draft202012Validator(json_schema("decision"))
    docs = [_VALID, json.loads((ROOT / "examples" / "cluster.json").read_text())]
    docs += [generate_snapshot(servers=20, jobs=60, seed=s) for s in range(3)]
    for doc in docs:
        assert snap.is_valid(doc), list(snap.iter_errors(doc))[:1]
        decision = json.loads(encode(decide(parse_snapshot(json.dumps(doc).encode()))))
        assert dec.is_valid(decision), list(dec.iter_errors(decision))[:1]


def test_schema_and_engine_disagree_only_where_no_schema_can_say(tmp_path, capsys):
    validator = jsonschema.Draft202012Validator(json_schema("snapshot"))
    disagree = {}
    for name, data in _corpus():
        schema_ok = _schema_accepts(validator, data)
        engine_ok = _cli_accepts(data, tmp_path)
        assert not engine_ok, f"{name}: the engine accepts a bad input"
        if schema_ok is not None and schema_ok != engine_ok:
            disagree[name] = "schema accepts" if schema_ok else "schema refuses, engine accepts"
    capsys.readouterr()
    assert set(disagree) == set(NOT_EXPRESSIBLE), disagree
    assert all(v == "schema accepts" for v in disagree.values())


def test_decision_statuses_and_methods_are_closed():
    schema = json_schema("decision")
    summary = schema["$defs"]["Summary"]["properties"]
    assert "enum" in summary["statuses"]["additionalProperties"]
    assert "enum" in summary["methods"]["additionalProperties"]
    answer = json_schema("mckp-answer")["$defs"]["MCKPAnswer"]["properties"]
    assert "enum" in answer["status"] and "enum" in answer["method"]
