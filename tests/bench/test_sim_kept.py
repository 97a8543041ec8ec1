"""The snapshot and index view the simulator keeps across rounds (:mod:`lyra_solver.bench.sim.kept`) are the ones
built afresh: every round's snapshot equals the policy's own (struct for struct), every index view equals
``Cluster.of`` of that snapshot (placements with their keys in the same order, used GPUs, columns), and a replay
gives the same results with and without them."""
from __future__ import annotations

import numpy as np
import pytest
from lyra_solver.bench.sim import data_dir, engine, get_policy, kept, load_load_curve, load_philly, map_jobs
from lyra_solver.bench.sim.engine import SimConfig, simulate
from lyra_solver.bench.sim.policies import POLICIES
from lyra_solver.steps._state import Cluster, used_gpus
from lyra_solver.steps.admit import times_at_min
from lyra_solver.types import Job, Server, Snapshot

DATA = data_dir()
PHILLY = DATA / "philly" / "philly.csv"
QPS = DATA / "alibaba" / "genai_qps.csv"
needs_data = pytest.mark.skipif(not PHILLY.exists() or not QPS.exists(), reason="shared/data not present")

#: the policies whose rounds use the kept snapshot (the base policy's snapshot rules, decided as changes)
KEPT = [p for p in POLICIES
        if engine._Sim([], POLICIES[p], SimConfig(training_servers=1, inference_servers=1), None)._kept is not None]


def _same_view(got: Cluster, want: Cluster) -> None:
    assert got.snap is want.snap and got.sid == want.sid and got.server_gpus == want.server_gpus
    for name in ("gpus", "kind", "gpw", "min_w", "max_w", "workers"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert [None if p is None else list(p.items()) for p in got.placement] == \
        [None if p is None else list(p.items()) for p in want.placement]
    assert got.held == want.held
    assert got.not_held is not None and not got.not_held.flags.writeable  # the jobs held lacks, as an array
    assert got.not_held.dtype == np.int64 and got.not_held.tolist() == [j for j, p in enumerate(want.placement)
                                                                        if p is None]
    assert np.array_equal(used_gpus(got, got.placement), used_gpus(want, want.placement))
    assert got.submit is not None and not got.submit.flags.writeable and want.submit is None  # kept: the keeper's
    assert got.submit.dtype == np.float64 and got.submit.tolist() == [j.submit_time for j in want.snap.jobs]


def _specs(limit: int = 150):
    return map_jobs(load_philly(PHILLY, start="2017-10-09 06:00", limit=limit), seed=5, restart_penalty=30.0,
                    preemption_penalty=300.0)


def _cfg() -> SimConfig:
    # a small cluster under the inference load: servers loaned and reclaimed (the servers shown change), jobs
    # preempted, shrunk and grown
    return SimConfig(training_servers=3, inference_servers=4, interval=300.0, load=load_load_curve(QPS))


def test_the_kept_rounds_are_the_changes_only_ones_of_base_snapshots():
    assert {"baseline", "loan", "elastic", "lyra", "lyra-exact"} <= set(KEPT)
    assert "tiresias" not in KEPT and "lyra-pack" not in KEPT  # own snapshot rules; packing


@needs_data
@pytest.mark.parametrize("policy", KEPT)
def test_every_kept_snapshot_and_view_is_the_one_built_afresh(policy, monkeypatch):
    counts = {"views": 0, "snapshots": 0, "indexed": 0, "keys": 0, "keys known": 0}
    last: dict[str, Job] = {}
    real_snapshot, real_index = kept.Kept.snapshot, kept.Kept._index

    def snapshot(self, pol, view, t, rows=None):
        got = real_snapshot(self, pol, view, t, rows)  # the running jobs synced (rows: in its own pass)
        view.shown = dict(last)  # the policy's own rules, from the structs the last snapshot showed
        try:
            want, hidden = pol.snapshot(view, t, None)
        finally:
            view.shown = {}
        assert not hidden and got.servers is want.servers and got == want, t
        assert all(a == b for a, b in zip(got.jobs, want.jobs, strict=True)), t
        last.clear()
        last.update({job.id: job for job in got.jobs})
        counts["snapshots"] += 1
        return got

    def index(self, servers, active, idx):
        counts["indexed"] += 1
        return real_index(self, servers, active, idx)

    real_changes = engine.changes_built

    def changes(snap, *, index=None, **kw):
        assert index is not None
        fresh = Cluster.of(snap)
        _same_view(index, fresh)
        known = np.flatnonzero(~np.isnan(index.sjf_memo)).tolist()  # the sjf keys kept: those computed afresh
        assert index.sjf_memo[known].tolist() == times_at_min(fresh, known).tolist()
        counts["views"] += 1
        counts["keys known"] += len(known)
        out = real_changes(snap, index=index, **kw)
        counts["keys"] += int((~np.isnan(index.sjf_memo)).sum()) - len(known)
        return out

    monkeypatch.setattr(kept.Kept, "snapshot", snapshot)
    monkeypatch.setattr(kept.Kept, "_index", index)
    monkeypatch.setattr(engine, "changes_built", changes)
    simulate(_specs(), get_policy(policy), _cfg())
    assert counts["views"] == counts["snapshots"] > 50
    if POLICIES[policy].loan:  # the servers shown changed, and the placements were indexed again
        assert counts["indexed"] > 3
    if POLICIES[policy].queue == "sjf":  # keys computed in one round and read in later ones
        assert counts["keys"] > 10 and counts["keys known"] > counts["keys"]


@needs_data
@pytest.mark.parametrize("policy", ["lyra", "lyra-exact", "loan"])
def test_a_replay_gives_the_same_results_without_them(policy, monkeypatch):
    pol, specs = get_policy(policy), _specs(300)
    with_kept = simulate(specs, pol, _cfg())
    monkeypatch.setattr(engine, "Kept", lambda n: None)
    without = simulate(specs, pol, _cfg())
    for name in ("jobs", "series", "counters", "gpu_seconds", "makespan", "segments", "allocations", "rounds"):
        assert getattr(with_kept, name) == getattr(without, name), name


@needs_data
def test_a_snapshot_a_caller_keeps_does_not_change(monkeypatch):
    """The keeper brings a running job's struct up to now in place only where nobody else holds it (the snapshots
    made before are gone): every third round's snapshot is kept here and still shows what it showed when made,
    and in the other rounds most running jobs' structs were brought up to now in place."""
    import msgspec

    held, seen = [], {"rounds": 0, "in place": 0, "copied": 0}
    real = kept.Kept.snapshot

    def snapshot(self, pol, view, t, rows=None):
        keep_this = seen["rounds"] % 3 == 0
        kept_last = seen["rounds"] % 3 == 1  # the last round's snapshot is held: its structs must be copied
        before = {i: id(self.shown[i]) for i in view.running if self.shown[i] is not None}
        got = real(self, pol, view, t, rows)
        same = sum(id(self.shown[i]) == k for i, k in before.items())  # the very struct, brought up to now
        if kept_last:
            assert same == 0, t
            seen["copied"] += len(before)
        else:
            seen["in place"] += same
        if keep_this:
            held.append((got, msgspec.to_builtins(got)))
        seen["rounds"] += 1
        return got

    monkeypatch.setattr(kept.Kept, "snapshot", snapshot)
    simulate(_specs(), get_policy("lyra"), _cfg())
    assert seen["rounds"] > 50 and seen["in place"] > 100 and seen["copied"] > 50
    for snap, shown in held:
        assert msgspec.to_builtins(snap) == shown


def _snap(servers, jobs) -> Snapshot:
    return Snapshot(format_version=1, servers=tuple(servers), jobs=jobs, now=0.0)


def _shown(job_id: str, placement) -> Job:
    return Job(id=job_id, min_workers=1, max_workers=4, remaining_work=10.0, throughput={1: 1.0}, placement=placement)


class _Job:  # what the keeper reads of an engine job
    def __init__(self, placement):
        self.placement = placement


def test_a_placement_on_a_server_not_shown_is_indexed_again_or_left_to_cluster_of():
    t = [Server(id=f"t{k}", pool="training", gpus=4) for k in range(2)]
    i0 = Server(id="i0", pool="inference", gpus=4, state="loaned")
    k = kept.Kept(3)
    active = {0: _Job({"t1": 2}), 1: _Job(None), 2: _Job({"i0": 1, "t0": 1})}
    servers = (*t, i0)
    snap = _snap(servers, [_shown("a", {"t1": 2}), _shown("b", None), _shown("c", {"i0": 1, "t0": 1})])
    _same_view(k.view(snap, active), Cluster.of(snap))
    # job 1 starts on i0 and t0; job 0 stops
    k.placed(1, {"i0": 2, "t0": 1})
    active[1].placement = {"i0": 2, "t0": 1}
    k.placed(0, None)
    active[0].placement = None
    snap = _snap(servers, [_shown("a", None), _shown("b", {"i0": 2, "t0": 1}), _shown("c", {"i0": 1, "t0": 1})])
    _same_view(k.view(snap, active), Cluster.of(snap))
    # a server the keeper's servers lack: indexed again at the next view, by the servers then shown
    i1 = Server(id="i1", pool="inference", gpus=4, state="loaned")
    k.placed(0, {"i1": 1})
    active[0].placement = {"i1": 1}
    assert k.servers is None
    servers = (*t, i1, i0)  # i1 before i0: every placement on i0 is indexed again
    snap = _snap(servers, [_shown("a", {"i1": 1}), _shown("b", {"i0": 2, "t0": 1}), _shown("c", {"i0": 1, "t0": 1})])
    _same_view(k.view(snap, active), Cluster.of(snap))
    # i1 given back (a new tuple without it): the jobs on i0 are indexed again, the one on i1 is not shown's
    servers = (*t, i0)
    snap = _snap(servers, [_shown("a", {"i1": 1}), _shown("b", {"i0": 2, "t0": 1}), _shown("c", {"i0": 1, "t0": 1})])
    assert k.view(snap, active) is None
    with pytest.raises(KeyError):
        Cluster.of(snap)


def test_the_sjf_keys_kept_are_dropped_when_the_usual_server_size_changes():
    k = kept.Kept(2)
    active = {0: _Job(None), 1: _Job(None)}
    jobs = [_shown("a", None), _shown("b", None)]
    four = _snap([Server(id=f"t{s}", pool="training", gpus=4) for s in range(2)], jobs)
    cl = k.view(four, active)
    assert np.isnan(cl.sjf_memo).all()
    cl.sjf_memo[:] = [1.0, 2.0]  # what the admission step computed
    k.learn()
    assert k.view(four, active).sjf_memo.tolist() == [1.0, 2.0]
    k.learn()
    eight = _snap([Server(id=f"t{s}", pool="training", gpus=8) for s in range(2)], jobs)
    assert np.isnan(k.view(eight, active).sjf_memo).all()  # the key depends on the servers' usual size
