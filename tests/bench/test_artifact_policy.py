"""``scripts/pollux_artifact_policy.py``: the snapshot of a round of the Pollux artifact's simulator, and the
decision mapped back to the artifact's allocations, on fake jobs (the artifact is not needed). With the artifact
at ``$POLLUX_ARTIFACT`` (its ``simulator/`` folder or the folder above) one more test runs a short workload
through the artifact's own loop; without it, that test is skipped.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections import Counter
from pathlib import Path

import pytest
from lyra_solver import decide, parse_snapshot

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "pollux_artifact_policy.py"


@pytest.fixture(scope="module")
def harness():
    spec = importlib.util.spec_from_file_location("pollux_artifact_policy", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(spec.name, None)


def fake_jobs(h):
    # a: near-linear to 4 replicas, running on node 1 (2) and node 0 (1); b: flat (1 replica is all it can use);
    # c: new, scales well
    return [
        h.JobView("a", 0.0, (1.0, 0.55, 0.4, 0.3), 5000.0),
        h.JobView("b", 30.0, (0.2,), 100.0),
        h.JobView("c", 60.0, (2.0, 1.0, 0.7, 0.5, 0.45, 0.4), 800.0),
    ]


def test_snapshot_is_valid_and_shows_what_the_artifact_knows(harness):
    h = harness
    prev = {"a": [1, 1, 0]}
    snap = h.build_snapshot(120.0, fake_jobs(h), prev, {0: 4, 1: 4}, objective="hesrpt", allocation="hull")
    parsed = parse_snapshot(json.dumps(snap).encode())
    jobs = {j.id: j for j in parsed.jobs}
    assert [s.id for s in parsed.servers] == ["n0", "n1"]
    assert dict(jobs["a"].placement) == {"n0": 1, "n1": 2}
    assert jobs["b"].placement is None and jobs["b"].max_workers == 1
    assert jobs["c"].max_workers == 6 and jobs["c"].min_workers == 1
    assert snap["jobs"][0]["throughput"]["rate"] == pytest.approx([1.0, 1 / 0.55, 2.5, 1 / 0.3])
    assert snap["jobs"][0]["restart_penalty"] == 30.0
    assert snap["options"]["objective"] == "hesrpt" and snap["options"]["allocation"] == "hull"


@pytest.mark.parametrize("objective", ["jct-reduction", "hesrpt"])
def test_decision_maps_back_to_node_lists_within_capacity(harness, objective):
    h = harness
    prev = {"a": [1, 1, 0]}
    nodes = {0: 4, 1: 4}
    snap = h.build_snapshot(120.0, fake_jobs(h), prev, nodes, objective=objective, allocation="greedy")
    decision = decide(parse_snapshot(json.dumps(snap).encode()), deterministic=True)
    alloc = h.decision_to_allocations(decision.jobs, prev)
    used = Counter(idx for lst in alloc.values() for idx in lst)
    assert all(used[idx] <= gpus for idx, gpus in nodes.items())
    for name, lst in alloc.items():
        jd = decision.jobs[name]
        assert jd.action == "run" and len(lst) == jd.workers
        # grouped by node: the artifact reads consecutive equal entries as one node's replicas
        assert len(set(lst)) == len([i for k, i in enumerate(lst) if k == 0 or lst[k - 1] != i])
    assert set(alloc) == {k for k, jd in decision.jobs.items() if jd.action == "run"}


def test_an_unchanged_placement_keeps_the_previous_list_as_it_was(harness):
    prev = {"a": [1, 1, 0], "b": [0]}
    jobs = {"a": {"action": "run", "workers": 3, "placement": {"n0": 1, "n1": 2}},
            "b": {"action": "run", "workers": 1, "placement": {"n1": 1}},
            "c": {"action": "wait"}}
    alloc = harness.decision_to_allocations(jobs, prev)
    assert alloc == {"a": [1, 1, 0], "b": [1]}


class FakeApp:
    """Two epochs: progress 0 -> 10 -> 30; at batch size 8 (scale 8) the gain is 2 in epoch 0, 5.2 in epoch 1."""

    name = "fake"
    init_batch_size = 1

    def get_progress(self, epoch):
        return [0.0, 10.0, 30.0][epoch]

    def get_completion_epoch(self, bsz):
        return 1

    def get_grad_stats(self, bsz, epoch):
        # (sqr, var); gain = (var + sqr) / (var / scale + sqr): (4 + 3) / (0.5 + 3) = 2, (12 + 1) / (1.5 + 1) = 5.2
        return {0: (3.0, 4.0), 1: (1.0, 12.0)}[epoch]


def test_remaining_iterations_follow_the_progress_left_over_each_epochs_gain(harness):
    h, app = harness, FakeApp()
    assert h.gain(app, 8, 0) == pytest.approx(2.0)
    assert h.gain(app, 8, 1) == pytest.approx(5.2)
    rem = h.RemainingIterations()
    full = 10.0 / h.gain(app, 8, 0) + 20.0 / h.gain(app, 8, 1)
    assert rem(app, 8, 0, 0.0) == pytest.approx(full)
    assert rem(app, 8, 0, 4.0) == pytest.approx(6.0 / h.gain(app, 8, 0) + 20.0 / h.gain(app, 8, 1))
    assert rem(app, 8, 1, 25.0) == pytest.approx(5.0 / h.gain(app, 8, 1))
    assert rem(app, 8, 2, 30.0) == 1.0  # past the completion epoch


ARTIFACT = os.environ.get("POLLUX_ARTIFACT")


@pytest.mark.skipif(not ARTIFACT, reason="the Pollux artifact is not here (set POLLUX_ARTIFACT to its folder)")
def test_a_short_workload_runs_through_the_artifacts_loop(harness, tmp_path):
    pytest.importorskip("autograd")
    h = harness
    sim_dir = h.simulator_dir(ARTIFACT)
    rows = (sim_dir / "workloads" / "workload-4.csv").read_text().splitlines()[:9]  # header and 8 jobs
    workload = tmp_path / "w.csv"
    workload.write_text("\n".join(rows) + "\n")
    sim = h.load_artifact(sim_dir)
    res = h.run(sim, str(workload), "lyra", objective="hesrpt", allocation="hull")
    assert res["jobs"] == 8 and res["mean_jct_s"] > 0 and res["rounds"] > 0
