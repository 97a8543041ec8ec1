"""Tests of the independent decision checker ``solver.check``.

One hand-built valid snapshot/decision pair (``broken_decisions/snapshot.json`` and ``valid.json``:
training, loaned, idle and serving inference servers, a reclaim request, running and queued jobs, a
packing entry) must pass; every other file in ``broken_decisions/`` is a small mutation of the valid
decision and ``broken_decisions/expected.json`` names the rule id it must trigger.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lyra_solver.check import Violation, check_decision, check_decision_text, format_violations

HERE = Path(__file__).parent / "broken_decisions"
SNAPSHOT: dict = json.loads((HERE / "snapshot.json").read_text())
VALID_TEXT: str = (HERE / "valid.json").read_text()
VALID: dict = json.loads(VALID_TEXT)
EXPECTED: dict[str, str] = json.loads((HERE / "expected.json").read_text())


def rules(violations: list[Violation]) -> set[str]:
    """The set of rule ids of some violations."""
    return {v.rule for v in violations}


def test_valid_decision_has_no_violation() -> None:
    assert check_decision(SNAPSHOT, VALID) == []
    assert check_decision_text(SNAPSHOT, VALID_TEXT) == []


def test_inputs_are_not_modified() -> None:
    snapshot, decision = copy.deepcopy(SNAPSHOT), copy.deepcopy(VALID)
    check_decision(snapshot, decision)
    assert snapshot == SNAPSHOT and decision == VALID


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_decision_reports_its_rule(name: str) -> None:
    text = (HERE / name).read_text()
    assert text != VALID_TEXT
    found = check_decision_text(SNAPSHOT, text)
    assert EXPECTED[name] in rules(found), format_violations(found)
    assert all(isinstance(v, Violation) and v.where and v.message for v in found)


def test_broken_files_cover_the_required_rules() -> None:
    required = {
        "job-missing", "job-duplicated", "job-unknown", "workers-out-of-range", "placement-sum",
        "placement-serving-server", "placement-reclaimed-server", "placement-idle-not-loaned",
        "server-overcommitted", "reclaim-count", "reclaim-hosts-worker", "loan-not-idle",
        "wait-on-running", "preempt-on-queued", "summary-preemptions", "malformed",
    }
    assert required <= set(EXPECTED.values())
    files = {p.name for p in HERE.glob("*.json")} - {"snapshot.json", "valid.json", "expected.json"}
    assert files == set(EXPECTED), "every broken file is listed in expected.json and vice versa"


def test_violation_paths_point_into_the_decision() -> None:
    found = check_decision_text(SNAPSHOT, (HERE / "placement_on_serving.json").read_text())
    assert Violation("placement-serving-server", "jobs.d.placement.i3", found[0].message) in found
    found = check_decision_text(SNAPSHOT, (HERE / "reclaim_duplicate.json").read_text())
    assert [v.where for v in found if v.rule == "reclaim-duplicate"] == ["servers.reclaim[1]"]
    found = check_decision_text(SNAPSHOT, (HERE / "overcommitted_two_jobs.json").read_text())
    assert [v.where for v in found if v.rule == "server-overcommitted"] == ["jobs.d.placement.i0"]


def test_jobs_as_a_list_is_malformed_at_jobs() -> None:
    found = check_decision(SNAPSHOT, json.loads((HERE / "malformed_jobs_list.json").read_text()))
    assert Violation("malformed", "jobs", found[0].message) in found


@pytest.mark.parametrize("decision", [None, 3, "x", [], [VALID], True, 1.5])
def test_decision_not_an_object(decision: Any) -> None:
    found = check_decision(SNAPSHOT, decision)
    assert [(v.rule, v.where) for v in found] == [("malformed", "$")]


@pytest.mark.parametrize("text", ["", "{", "[1,", '{"format_version": NaN}', "nul"])
def test_decision_text_not_json(text: str) -> None:
    assert [(v.rule, v.where) for v in check_decision_text(SNAPSHOT, text)] == [("malformed", "$")]


def test_duplicate_key_outside_jobs() -> None:
    text = VALID_TEXT.replace('"format_version": 1,', '"format_version": 1, "format_version": 1,', 1)
    assert rules(check_decision_text(SNAPSHOT, text)) == {"duplicate-key"}


def test_format_violations() -> None:
    vs = [Violation("job-missing", "jobs.a", "job 'a' has no entry"), Violation("malformed", "$", "bad")]
    assert format_violations(vs) == "job-missing at jobs.a: job 'a' has no entry\nmalformed at $: bad"
    assert format_violations([]) == ""
    with pytest.raises(AttributeError):
        vs[0].rule = "x"  # type: ignore[misc]


# -- valid variants: things the contract allows -------------------------------------------------------


def _no_changed(s: dict, d: dict) -> None:
    for entry in d["jobs"].values():
        entry.pop("changed", None)


def _no_summary_no_packing(s: dict, d: dict) -> None:
    d.pop("summary")
    d.pop("packing")
    d["jobs"]["g"] = {"action": "wait"}


def _no_reclaim_requested(s: dict, d: dict) -> None:
    s.pop("inference")
    d["servers"]["reclaim"] = []


def _reclaim_more_than_loaned(s: dict, d: dict) -> None:
    s["inference"]["reclaim"] = 5  # only 2 loaned servers: return both
    d["servers"]["reclaim"] = ["i1", "i0"]
    d["jobs"]["a"] = {"action": "run", "workers": 4, "placement": {"t0": 4}, "changed": True}


def _equal_gpus_may_join(s: dict, d: dict) -> None:
    h = next(j for j in s["jobs"] if j["id"] == "h")
    h["min_workers"] = h["max_workers"] = 4  # 4 GPUs, as many as b
    h["packing"] = {"gpu_util": 0.5, "gpu_mem_gb": 20}
    next(j for j in s["jobs"] if j["id"] == "b")["packing"] = {"gpu_util": 0.4, "gpu_mem_gb": 30}
    d["jobs"]["h"] = {"action": "run", "workers": 4, "placement": {"t1": 4}, "changed": True}
    d["packing"].append({"server": "t1", "gpus": 1, "jobs": ["h", "b"], "shares": {"b": 1.0, "h": 0.1}})


def _empty_server_lists_omitted(s: dict, d: dict) -> None:
    s.pop("inference")
    d["servers"] = {}
    d["jobs"]["d"] = {"action": "wait"}


def _wait_with_zero_workers(s: dict, d: dict) -> None:
    d["jobs"]["f"] = {"action": "wait", "workers": 0, "placement": {}}


VALID_VARIANTS: dict[str, Callable[[dict, dict], None]] = {
    "no_changed": _no_changed,
    "no_summary_no_packing": _no_summary_no_packing,
    "no_reclaim_requested": _no_reclaim_requested,
    "reclaim_more_than_loaned": _reclaim_more_than_loaned,
    "equal_gpus_may_join": _equal_gpus_may_join,
    "wait_with_zero_workers": _wait_with_zero_workers,
    "empty_server_lists_omitted": _empty_server_lists_omitted,
}


@pytest.mark.parametrize("name", sorted(VALID_VARIANTS))
def test_valid_variants_pass(name: str) -> None:
    snapshot, decision = copy.deepcopy(SNAPSHOT), copy.deepcopy(VALID)
    VALID_VARIANTS[name](snapshot, decision)
    found = check_decision(snapshot, decision)
    assert found == [], format_violations(found)


def test_reclaim_count_follows_loaned_servers() -> None:
    snapshot = copy.deepcopy(SNAPSHOT)
    snapshot["inference"]["reclaim"] = 5
    found = check_decision(snapshot, VALID)
    assert [v.where for v in found if v.rule == "reclaim-count"] == ["servers.reclaim"]
    assert "= 2" in next(v.message for v in found if v.rule == "reclaim-count")


# -- robustness: never raise, whatever the decision holds ------------------------------------------


def _paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every key/index path inside a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


JUNK: list[Any] = [None, True, -1, 0, 2.5, float("nan"), float("inf"), "", "t0", [], [1, "a"], {}, {"x": None}]


def test_never_raises_on_junk_anywhere() -> None:
    paths = list(_paths(VALID))
    assert len(paths) > 50
    for path in paths:
        for junk in JUNK:
            decision = copy.deepcopy(VALID)
            target = decision
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = junk
            found = check_decision(SNAPSHOT, decision)
            assert isinstance(found, list) and all(isinstance(v, Violation) for v in found)
            assert "checker could not read" not in format_violations(found), (path, junk)


def test_the_module_docstring_lists_every_rule_id():
    """The rule ids of the module docstring are the ones the checker writes (literal ids, and the two families
    ``reclaim-``/``loan-`` x ``duplicate``/``unknown-server`` that rule_reclaim and rule_loan share)."""
    import re

    import lyra_solver.check as check

    source = Path(check.__file__).read_text()
    listed = set(re.findall(r"``([a-z-]+)``", check.__doc__.partition("Rule ids")[2].partition("Complexity")[0]))
    written = set(re.findall(r'Violation\(\s*"([a-z-]+)"', source))
    families = re.findall(r'Violation\(f"\{field\}(-[a-z-]+)"', source)
    assert families  # the shared walk still writes its two families
    written |= {f"{field}{suffix}" for field in ("reclaim", "loan") for suffix in families}
    assert listed == written
