"""One validator, whatever the origin of a snapshot: typed objects built in Python and dicts fail as their JSON
does (same field path), option arguments are checked against the vocabularies, and validation is remembered."""
from __future__ import annotations

import json
from pathlib import Path

import msgspec
import numpy as np
import pytest
from lyra_solver import io
from lyra_solver.errors import InputError
from lyra_solver.formulations.mckp import METHODS
from lyra_solver.formulations.vocabulary import ALLOCATIONS, QUEUE_ORDERS
from lyra_solver.pipeline import decide
from lyra_solver.types import Inference, Job, Options, PowerThroughput, Server, Snapshot
from lyra_solver.validate import validate_snapshot

ROOT = Path(__file__).resolve().parents[2]
MALFORMED = Path(__file__).resolve().parent / "malformed"
EXPECTED: dict[str, dict] = json.loads((MALFORMED / "expected.json").read_text())


def _job(**kw) -> Job:
    base = dict(id="a", min_workers=1, max_workers=4, remaining_work=1000.0,
                throughput=PowerThroughput(rate_per_worker=10.0, exponent=0.9))
    base.update(kw)
    return Job(**base)


def _snap(servers=None, jobs=None, **kw) -> Snapshot:
    servers = servers if servers is not None else [Server(id="t0", pool="training", gpus=8),
                                                   Server(id="i0", pool="inference", gpus=8, state="serving")]
    return Snapshot(format_version=1, servers=servers, jobs=jobs if jobs is not None else [_job()], **kw)


@pytest.mark.parametrize(("snap", "path", "words"), [
    (_snap(servers=[Server(id="t0", pool="training", gpus=-3)]), "servers[0].gpus", ">= 1"),
    (_snap(jobs=[_job(placement={"t0": 3}, max_workers=4), _job(id="b", placement={"t0": 6}, max_workers=8)]),
     "jobs[1].placement.t0", "8 gpus"),
    (_snap(jobs=[_job(placement={"nowhere": 1})]), "jobs[0].placement.nowhere", "unknown server"),
    (_snap(jobs=[_job(placement={"i0": 1})]), "jobs[0].placement.i0", "not loaned"),
    (_snap(jobs=[_job(remaining_work=-5.0)]), "jobs[0].remaining_work", ">= 0"),
    (_snap(jobs=[_job(throughput=PowerThroughput(rate_per_worker=1.0, exponent=7.0))]),
     "jobs[0].throughput.exponent", "<= 1"),
    (_snap(jobs=[_job(gpus_per_worker=16)]), "jobs[0].gpus_per_worker", "fit"),
    (_snap(jobs=[_job(remaining_work=float("nan"))]), "jobs[0].remaining_work", "finite"),
    (_snap(jobs=[_job(min_workers=True)]), "jobs[0].min_workers", "bool"),
    (_snap(jobs=[_job(id="")]), "jobs[0].id", "length"),
    (_snap(options=Options(queue="SJF")), "options.queue", "expected one of fifo, las, sjf"),
    (_snap(jobs=[_job(min_workers=object())]), "jobs[0].min_workers", "object"),
])
def test_typed_snapshot_is_validated_like_its_json(snap, path, words):
    with pytest.raises(InputError) as err:
        decide(snap)
    assert err.value.path == path
    assert words.lower() in err.value.problem.lower()


def _parses_as_json(name: str) -> bool:
    try:
        json.loads((MALFORMED / name).read_bytes())
    except ValueError:  # not JSON: only the byte-level reader sees these (the CLI tests cover them)
        return False
    return True


def test_corpus_has_files_beyond_json():
    assert 0 < sum(map(_parses_as_json, EXPECTED)) < len(EXPECTED)


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if _parses_as_json(n)))
def test_dict_snapshot_fails_as_the_file_does(name):
    """The malformed corpus as dicts through the validator: the path the command line names."""
    doc = json.loads((MALFORMED / name).read_bytes())
    if not isinstance(doc, dict):
        with pytest.raises(InputError):
            validate_snapshot(doc)
        return
    with pytest.raises(InputError) as err:
        validate_snapshot(doc)
    assert err.value.path == EXPECTED[name]["path"], err.value.line()


def test_numpy_numbers_are_accepted_and_decided_as_python_numbers():
    plain = _snap(jobs=[_job(min_workers=2, max_workers=4)])
    numpy = _snap(jobs=[_job(min_workers=np.int64(2), max_workers=np.int32(4), remaining_work=np.float64(1000))],
                  inference=Inference(reclaim=np.int64(0)))
    assert io.encode(numpy) == io.encode(plain)
    assert io.encode(decide(numpy)) == io.encode(decide(plain))


@pytest.mark.parametrize(("option", "value"), [
    ("allocation", "Exact"), ("queue", "SJF"), ("reclaim", "foo"), ("placement", "foo"), ("packing", "on"),
    ("allocation", 3), ("time_limit", -1.0), ("time_limit", float("inf")), ("time_limit", "1"),
])
def test_option_arguments_are_checked_against_the_vocabulary(option, value):
    with pytest.raises(InputError) as err:
        decide(_snap(), **{option: value})
    assert err.value.path == option
    if option != "time_limit":
        assert "expected one of" in err.value.problem


def test_each_allocation_runs_an_mckp_method():
    from lyra_solver.formulations.vocabulary import ALLOCATION_METHOD

    assert set(ALLOCATION_METHOD) == set(ALLOCATIONS)
    assert set(ALLOCATION_METHOD.values()) <= set(METHODS)


def test_unknown_option_in_the_file_names_the_allowed_values():
    doc = json.loads((ROOT / "examples" / "cluster.json").read_bytes())
    doc.setdefault("options", {})["queue"] = "shortest"
    with pytest.raises(InputError) as err:
        io.parse_snapshot(json.dumps(doc).encode())
    assert err.value.path == "options.queue"
    assert ", ".join(sorted(QUEUE_ORDERS)) in err.value.problem


def test_validation_is_remembered_and_a_changed_snapshot_is_a_new_one():
    snap = io.parse_snapshot((ROOT / "examples" / "cluster.json").read_bytes())
    assert validate_snapshot(snap) is snap
    typed = _snap()
    checked = validate_snapshot(typed)
    assert validate_snapshot(typed) is checked
    with pytest.raises(AttributeError):
        typed.jobs.append(_job())  # a tuple: a validated snapshot cannot grow
    grown = msgspec.structs.replace(typed, jobs=[*typed.jobs, _job()])  # duplicate id: must be seen
    with pytest.raises(InputError, match="duplicate job id"):
        decide(grown)


def test_decide_on_a_typed_snapshot_equals_decide_on_its_json():
    snap = io.parse_snapshot((ROOT / "examples" / "cluster.json").read_bytes())
    rebuilt = msgspec.convert(msgspec.to_builtins(snap), Snapshot)
    assert io.encode(decide(rebuilt)) == io.encode(decide(snap))


def test_not_a_snapshot_is_refused():
    with pytest.raises(InputError, match="expected a Snapshot"):
        validate_snapshot([1, 2, 3])
    with pytest.raises(TypeError, match="Snapshot"):
        decide({"format_version": 1, "servers": [], "jobs": []})


def test_public_api_from_the_top():
    import logging

    import lyra_solver

    for name in lyra_solver.__all__:
        assert getattr(lyra_solver, name) is not None, name
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("lyra_solver").handlers)


def test_check_decision_accepts_typed_objects_and_dicts():
    from lyra_solver import check_decision

    snap = io.parse_snapshot((ROOT / "examples" / "cluster.json").read_bytes())
    decision = decide(snap)
    assert check_decision(snap, decision) == []
    as_dicts = json.loads(io.encode(snap)), json.loads(io.encode(decision))
    assert check_decision(*as_dicts) == []
    broken = msgspec.structs.replace(decision, jobs={})
    assert check_decision(snap, broken) == check_decision(as_dicts[0], json.loads(io.encode(broken))) != []


def test_encoding_is_canonical_whatever_the_origin():
    given = _snap(jobs=[_job(submit_time=0, restart_penalty=0.0, gpus_per_worker=1, remaining_work=1000)],
                  inference=Inference(reclaim=0), options=Options(queue="sjf", time_limit=1))
    bare = _snap()
    assert given == bare
    assert io.encode(given) == io.encode(bare)
    decoded = io.parse_snapshot(b'{"format_version": 1, "now": 0.0, "servers": [{"id": "t0", "pool": "training", '
                                b'"gpus": 8}, {"id": "i0", "pool": "inference", "gpus": 8, "state": "serving"}], '
                                b'"jobs": [{"id": "a", "min_workers": 1, "max_workers": 4, "remaining_work": 1000, '
                                b'"restart_penalty": 0, "throughput": {"kind": "power", "rate_per_worker": 10, '
                                b'"exponent": 0.9}}], "options": {"queue": "sjf"}}')
    assert io.encode(decoded) == io.encode(bare)
