"""What the simulator keeps between rounds to build less (the job structs shown again, the servers' tuple, the
server counts, the quiet check's memo) changes nothing: every snapshot it passes to ``decide`` is the one built
afresh, byte for byte, for every policy."""
from __future__ import annotations

import copy

import pytest
from lyra_solver import encode
from lyra_solver.bench.sim import (
    data_dir,
    engine,
    get_policy,
    load_load_curve,
    load_philly,
    load_pollux_workload,
    map_jobs,
)
from lyra_solver.bench.sim.cluster import Cluster
from lyra_solver.bench.sim.engine import SimConfig, simulate
from lyra_solver.bench.sim.policies import POLICIES, packing_available
from lyra_solver.types import FrozenDict

DATA = data_dir()
PHILLY = DATA / "philly" / "philly.csv"
QPS = DATA / "alibaba" / "genai_qps.csv"
POLLUX = DATA / "pollux"
needs_data = pytest.mark.skipif(not PHILLY.exists() or not QPS.exists(), reason="shared/data not present")


def _frozen(snap) -> bool:
    return all(j.placement is None or type(j.placement) is FrozenDict for j in snap.jobs)


def _replay_comparing(monkeypatch, specs, pol, cfg) -> int:
    """Replay with every round's snapshot also built afresh (no struct shown again, the servers listed anew, on
    a copy of the policy's state); returns the rounds compared."""
    passed = []
    for name in ("decide", "decide_built", "changes_built"):
        real = getattr(engine, name)

        def spy(snap, *a, _real=real, **k):
            passed.append(snap)
            return _real(snap, *a, **k)

        monkeypatch.setattr(engine, name, spy)
    round_ = engine._Sim._round
    compared = [0]

    def checked(self, t):
        self.sync()  # the running jobs' work of now, out of the engine's arrays (the round syncs first too)
        kept, self.shown = self.shown, {}
        cluster = self.cluster
        fresh_servers = list(cluster.training) + (cluster.lendable() if self.policy.loan else [])
        try:
            fresh, fresh_hidden = self.policy.snapshot(self, t, copy.deepcopy(self.state))
        finally:
            self.shown = kept
        round_(self, t)
        snap = passed[-1]
        assert encode(snap) == encode(fresh) and snap == fresh, t
        assert list(snap.servers) == fresh_servers and _frozen(snap)
        assert {st: cluster.count(st) for st in ("serving", "idle", "loaned")} == \
            {st: cluster.state.count(st) for st in ("serving", "idle", "loaned")}
        compared[0] += 1

    monkeypatch.setattr(engine._Sim, "_round", checked)
    simulate(specs, pol, cfg)
    return compared[0]


@needs_data
@pytest.mark.parametrize("policy", [p for p in POLICIES if POLICIES[p].packing == "off"
                                    or packing_available(POLICIES[p].packing)])
def test_every_snapshot_is_the_one_built_afresh(policy, monkeypatch):
    specs = map_jobs(load_philly(PHILLY, start="2017-10-09 06:00", limit=40), seed=3, restart_penalty=30.0,
                     preemption_penalty=300.0)
    cfg = SimConfig(training_servers=2, inference_servers=3, interval=300.0, load=load_load_curve(QPS),
                    tiresias_threshold=600.0)
    assert _replay_comparing(monkeypatch, specs, get_policy(policy), cfg) > 10


@needs_data
@pytest.mark.skipif(not (POLLUX / "workloads").exists(), reason="shared/data/pollux not present")
@pytest.mark.parametrize("policy, mode", [("optimus", "two-queue"), ("tiresias", "artifact"), ("lyra", "two-queue")])
def test_every_snapshot_of_a_pollux_workload_is_the_one_built_afresh(policy, mode, monkeypatch):
    """Jobs of the Pollux model (their oracle tables kept while their work and epoch are), and Tiresias' artifact
    round (queued jobs shown placed)."""
    specs = map_jobs(load_pollux_workload(POLLUX / "workloads" / "workload-1.csv")[:12], server_gpus=4)
    cfg = SimConfig(training_servers=16, inference_servers=0, server_gpus=4, interval=60.0, tiresias_mode=mode,
                    event_rounds=False, round_epochs=True, start_penalty=30.0)
    assert _replay_comparing(monkeypatch, specs, get_policy(policy), cfg) > 10


def test_server_counts_and_shown_servers_follow_every_change():
    c = Cluster(2, 4, 8)
    before = c.shown(True)
    assert c.shown(True) is before and [s.id for s in before] == ["t0", "t1", "i0", "i1", "i2", "i3"]
    c.set_need(3)
    assert c.count("serving") == 3 and c.count("idle") == 1 and [s.id for s in c.shown(True)] == ["t0", "t1", "i3"]
    c.set_state("i3", "loaned")
    assert [(s.id, s.state) for s in c.shown(True)][-1] == ("i3", "loaned") and c.count("loaned") == 1
    c.set_need(4)
    assert c.reclaim_wanted() == 1
    c.set_state("i3", "serving")
    assert c.count("serving") == 4 and c.shown(True) == tuple(c.training) and c.shown(False) == tuple(c.training)
    assert {st: c.state.count(st) for st in ("serving", "idle", "loaned")} == \
        {st: c.count(st) for st in ("serving", "idle", "loaned")}
    with pytest.raises(ValueError):
        c.set_state("i0", "lent")
