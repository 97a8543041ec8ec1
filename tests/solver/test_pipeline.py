"""Property tests of the round pipeline: every decision passes the independent checker, is byte-for-byte
deterministic, and running jobs keep their placement unless their count changed or a server was reclaimed."""
from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lyra_solver import io
from lyra_solver.bench.generate import generate_snapshot
from lyra_solver.check import check_decision
from lyra_solver.pipeline import decide

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _round(snap: dict, **kw):
    data = io.encode(snap)
    decision = decide(io.parse_snapshot(data), **kw)
    return data, decision, io.encode(decision)


def _assert_keeps_placement(snap: dict, decision: dict) -> None:
    reclaimed = set(decision["servers"]["reclaim"])
    for job in snap["jobs"]:
        before = job.get("placement")
        if before is None:
            continue
        after = decision["jobs"][job["id"]]
        if after["action"] != "run":
            continue
        if after["workers"] == sum(before.values()) and not reclaimed & set(before):
            assert after["placement"] == before, job["id"]
            assert after["changed"] is False


@SETTINGS
@given(servers=st.integers(1, 200), jobs=st.integers(0, 500), seed=st.integers(0, 2**31 - 1),
       gpus=st.sampled_from([1, 2, 4, 8, 16]), running=st.floats(0, 1), reclaim=st.integers(0, 8),
       queue=st.sampled_from(["sjf", "fifo", "las"]), allocation=st.sampled_from(["exact", "greedy", "hull"]))
def test_random_snapshots_pass_checker(servers, jobs, seed, gpus, running, reclaim, queue, allocation):
    snap = generate_snapshot(servers=servers, jobs=jobs, seed=seed, gpus=gpus, running_share=running,
                             reclaim=reclaim)
    data, decision, out = _round(snap, queue=queue, allocation=allocation)
    as_dict = json.loads(out)
    violations = check_decision(json.loads(data), as_dict)
    assert violations == [], violations[:5]
    # determinism: same input, same bytes (also through a fresh parse)
    assert io.encode(decide(io.parse_snapshot(data), queue=queue, allocation=allocation)) == out
    _assert_keeps_placement(snap, as_dict)


@pytest.mark.parametrize("reclaim", ["greedy", "exact"])
def test_reclaim_methods_give_checked_decisions(reclaim):
    snap = generate_snapshot(servers=40, jobs=80, seed=7, reclaim=4)
    data, decision, out = _round(snap, reclaim=reclaim)
    assert check_decision(json.loads(data), json.loads(out)) == []
    assert len(decision.servers.reclaim) == 4
    assert decision.summary.methods["reclaim"] in ("greedy", "cpsat")


def test_exact_allocation_is_at_least_heuristics():
    snap = generate_snapshot(servers=30, jobs=40, seed=3, running_share=0.3)
    exact = _round(snap, allocation="exact")[1]
    for method in ("greedy", "hull"):
        heur = _round(snap, allocation=method)[1]
        # same admission, same capacity: the exact MCKP optimum bounds the heuristics' objective
        assert heur.summary.jct_reduction <= exact.summary.bound + 1e-6


def test_base_demand_prefers_training_and_extras_prefer_loaned():
    snap = {
        "format_version": 1,
        "servers": [{"id": "t0", "pool": "training", "gpus": 8},
                    {"id": "i0", "pool": "inference", "gpus": 8, "state": "loaned"}],
        "jobs": [{"id": "a", "min_workers": 2, "max_workers": 10, "remaining_work": 1e6,
                  "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0}}],
    }
    decision = _round(snap)[1]
    ja = decision.jobs["a"]
    assert ja.action == "run" and ja.workers == 10
    assert ja.placement == {"t0": 8, "i0": 2} or ja.placement["t0"] >= 2
    # with room for base demand only on training servers, nothing of the base lands on the loaned one
    assert ja.placement.get("t0", 0) >= 2


def test_reclaim_shrinks_rather_than_preempts():
    snap = {
        "format_version": 1,
        "servers": [{"id": "t0", "pool": "training", "gpus": 4},
                    {"id": "i0", "pool": "inference", "gpus": 4, "state": "loaned"},
                    {"id": "i1", "pool": "inference", "gpus": 4, "state": "loaned"}],
        "inference": {"reclaim": 1},
        "jobs": [
            {"id": "elastic", "min_workers": 4, "max_workers": 8, "remaining_work": 1e5,
             "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0},
             "placement": {"t0": 4, "i0": 4}, "restart_penalty": 10, "preemption_penalty": 100},
            {"id": "rigid", "min_workers": 4, "max_workers": 4, "remaining_work": 1e5,
             "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0},
             "placement": {"i1": 4}, "restart_penalty": 10, "preemption_penalty": 100},
        ],
    }
    decision = _round(snap)[1]
    assert decision.servers.reclaim == ("i0",)
    assert decision.jobs["rigid"].action == "run"
    assert decision.jobs["elastic"].workers == 4
    assert decision.summary.preemptions == 0


def test_idle_servers_are_not_borrowed_for_nothing():
    snap = {
        "format_version": 1,
        "servers": [{"id": "t0", "pool": "training", "gpus": 8},
                    {"id": "i0", "pool": "inference", "gpus": 8, "state": "idle"}],
        "jobs": [{"id": "a", "min_workers": 2, "max_workers": 2, "remaining_work": 1e5,
                  "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0}}],
    }
    decision = _round(snap)[1]
    assert decision.servers.loan == ()
    assert decision.jobs["a"].placement == {"t0": 2}


def test_queue_waits_when_full_and_sjf_admits_shortest():
    jobs = [{"id": f"q{k}", "min_workers": 8, "max_workers": 8, "remaining_work": 1e5 * (3 - k),
             "submit_time": float(k), "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0}}
            for k in range(3)]
    snap = {"format_version": 1, "servers": [{"id": "t0", "pool": "training", "gpus": 8}], "jobs": jobs}
    sjf = _round(snap, queue="sjf")[1]
    fifo = _round(snap, queue="fifo")[1]
    assert [k for k, v in sjf.jobs.items() if v.action == "run"] == ["q2"]
    assert [k for k, v in fifo.jobs.items() if v.action == "run"] == ["q0"]


def _placement_objective(snap: dict, decision: dict) -> tuple[int, int]:
    """(base-demand workers on loaned servers, servers spanned), summed over running jobs."""
    training = {s["id"] for s in snap["servers"] if s["pool"] == "training"}
    mins = {j["id"]: j["min_workers"] for j in snap["jobs"]}
    base_loaned = spans = 0
    for jid, jd in decision["jobs"].items():
        if jd["action"] == "run":
            on_training = sum(n for s, n in jd["placement"].items() if s in training)
            base_loaned += max(0, mins[jid] - on_training)
            spans += len(jd["placement"])
    return base_loaned, spans


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_exact_placement_never_worse_than_bfd(seed):
    snap = generate_snapshot(servers=16, jobs=30, seed=seed, running_share=0.4, reclaim=2)
    data, _, bfd = _round(snap, placement="bfd")
    _, exact_decision, exact = _round(snap, placement="exact", time_limit=20.0)
    assert check_decision(json.loads(data), json.loads(exact)) == []
    if exact_decision.summary.statuses["placement"] == "optimal":
        assert _placement_objective(snap, json.loads(exact)) <= _placement_objective(snap, json.loads(bfd))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(servers=st.integers(1, 60), jobs=st.integers(0, 150), seed=st.integers(0, 2**31 - 1),
       allocation=st.sampled_from(["exact", "greedy", "hull"]), queue=st.sampled_from(["sjf", "fifo", "las"]))
def test_decide_built_is_decide_on_valid_snapshots(servers, jobs, seed, allocation, queue):
    """The simulator's path (no re-validation) gives the bytes of ``decide`` on every valid snapshot, typed ones
    built in Python included."""
    import msgspec
    from lyra_solver.pipeline import decide_built
    from lyra_solver.types import Snapshot

    data = io.encode(generate_snapshot(servers=servers, jobs=jobs, seed=seed, running_share=0.5))
    typed = msgspec.json.decode(data, type=Snapshot)  # built, never validated
    want = io.encode(decide(io.parse_snapshot(data), allocation=allocation, queue=queue, deterministic=True))
    assert io.encode(decide_built(typed, allocation=allocation, queue=queue, deterministic=True)) == want


def _changes_are_the_decisions(data: bytes, **kw) -> None:
    """changes_built on the snapshot ``data`` names exactly what decide_built's decision changes: the jobs
    apply.placements_after moves (in job order, with the decision's placements), its reclaim and loan lists."""
    import msgspec
    from lyra_solver.apply import placements_after
    from lyra_solver.pipeline import changes_built, decide_built
    from lyra_solver.types import Snapshot

    snap = msgspec.json.decode(data, type=Snapshot)
    decision = decide_built(snap, deterministic=True, **kw)
    after = placements_after(snap, decision)
    want = [(i, a) for i, (job, a) in enumerate(zip(snap.jobs, after, strict=True)) if a is not job.placement]
    ch = changes_built(snap, deterministic=True, **kw)
    assert [i for i, _ in ch.moved] == [i for i, _ in want]
    for (i, got), (_, a) in zip(ch.moved, want, strict=True):
        assert got == a and (got is None) is (a is None)
        if got is not None:  # the run entry's placement: the same servers in the same order
            assert list(got.items()) == list(decision.jobs[snap.jobs[i].id].placement.items())
    assert list(ch.reclaim) == list(decision.servers.reclaim) and list(ch.loan) == list(decision.servers.loan)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(servers=st.integers(1, 40), jobs=st.integers(0, 100), seed=st.integers(0, 2**31 - 1),
       running=st.floats(0, 1), reclaim=st.integers(0, 6),
       allocation=st.sampled_from(["exact", "greedy", "hull"]), queue=st.sampled_from(["sjf", "fifo", "las"]),
       placement=st.sampled_from(["bfd", "exact"]), objective=st.sampled_from(["jct-reduction", "srpt"]))
def test_changes_built_names_what_the_decision_changes(servers, jobs, seed, running, reclaim, allocation, queue,
                                                       placement, objective):
    """The simulator's round without the decision (pipeline.changes_built) carries out the same placements and
    servers as the whole decision, on small rounds (one pass over every job) ..."""
    if placement == "exact":  # the placement ILP on small rounds only (a second each beyond)
        servers, jobs = min(servers, 12), min(jobs, 30)
    data = io.encode(generate_snapshot(servers=servers, jobs=jobs, seed=seed, running_share=running,
                                       reclaim=reclaim))
    _changes_are_the_decisions(data, allocation=allocation, queue=queue, placement=placement, objective=objective)


@pytest.mark.parametrize("seed", [0, 1])
def test_changes_built_on_a_large_round(seed):
    """... and on large ones (the decision's loop over the running jobs only, decision._ARRAYS_MIN_JOBS)."""
    from lyra_solver.steps.decision import _ARRAYS_MIN_JOBS

    data = io.encode(generate_snapshot(servers=300, jobs=_ARRAYS_MIN_JOBS + 500, seed=seed, running_share=0.6,
                                       reclaim=4))
    _changes_are_the_decisions(data, allocation="greedy")


def test_changes_built_with_the_kernels_loaded(monkeypatch):
    """... and with the numba kernels loaded (the simulator's case), where the scale step takes the greedy's
    choice of Lyra's table by its kernel without building the problem (greedy.table_choice): the same placements
    as the whole decision, whose report path builds it, on rounds with free GPUs to scale into."""
    pytest.importorskip("numba")
    import lyra_solver.steps.scale as scale_mod
    from lyra_solver.formulations.mckp import _numba

    assert _numba.load()
    taken = []
    real = scale_mod.table_choice
    monkeypatch.setattr(scale_mod, "table_choice", lambda *a: taken.append(real(*a)) or taken[-1])
    for seed in range(8):
        data = io.encode(generate_snapshot(servers=12 + 4 * seed, jobs=20 + 10 * seed, seed=seed, running_share=0.3,
                                           reclaim=seed % 3))
        _changes_are_the_decisions(data, allocation="greedy")
    assert sum(c is not None for c in taken) >= 3  # the path was taken (rounds whose jobs can grow)


def test_changes_built_loans_only_servers_that_host():
    """A borrowed server that hosts no worker (4 GPUs, workers of 8) is not loaned, by either path."""
    data = json.dumps({"format_version": 1, "servers": [
        {"id": "t0", "pool": "training", "gpus": 8},
        {"id": "i0", "pool": "inference", "gpus": 4, "state": "idle"},
        {"id": "i1", "pool": "inference", "gpus": 8, "state": "idle"}], "jobs": [
        {"id": "a", "min_workers": 1, "max_workers": 4, "remaining_work": 1e6, "gpus_per_worker": 8,
         "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0}, "placement": {"t0": 1}},
        {"id": "b", "min_workers": 1, "max_workers": 1, "remaining_work": 1e5, "gpus_per_worker": 8,
         "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0}}]}).encode()
    assert decide(io.parse_snapshot(data)).servers.loan == ("i1",)
    _changes_are_the_decisions(data)


@pytest.mark.parametrize("shown", [{}, {"t0": 0}])
def test_changes_built_on_a_placement_without_workers(shown):
    """A snapshot taken as valid may show a job on an empty placement, or on a server with no workers: the round
    stops the first (its placement is kept, yet it runs no more) and keeps the second, by both paths
    (changes_of looks at the held jobs without workers as well as at the placements replaced)."""
    data = json.dumps({"format_version": 1, "servers": [{"id": "t0", "pool": "training", "gpus": 8}], "jobs": [
        {"id": "a", "min_workers": 1, "max_workers": 4, "remaining_work": 1e6,
         "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0}, "placement": shown},
        {"id": "b", "min_workers": 1, "max_workers": 1, "remaining_work": 1e5, "gpus_per_worker": 8,
         "throughput": {"kind": "power", "rate_per_worker": 10, "exponent": 1.0}, "placement": {"t0": 1}}]}).encode()
    from lyra_solver.pipeline import changes_built
    from lyra_solver.types import Snapshot

    moved = changes_built(msgspec.json.decode(data, type=Snapshot), deterministic=True).moved
    assert moved == (((0, None),) if not shown else ())
    _changes_are_the_decisions(data)


def test_changes_built_takes_no_packing():
    """Packing (step 6) needs the whole decision: changes_built refuses it, from the options or an argument."""
    from lyra_solver.errors import InputError
    from lyra_solver.pipeline import changes_built

    snap = io.parse_snapshot(io.encode(generate_snapshot(servers=2, jobs=3, seed=0, options={"packing": "gimbal"})))
    with pytest.raises(InputError) as err:
        changes_built(snap)
    assert err.value.path == "options.packing"
    with pytest.raises(TypeError, match="must be a lyra_solver.Snapshot"):
        changes_built({"format_version": 1, "servers": [], "jobs": []})


def test_decide_built_still_checks_its_arguments():
    from lyra_solver.errors import InputError
    from lyra_solver.pipeline import decide_built

    snap = io.parse_snapshot(io.encode(generate_snapshot(servers=2, jobs=3, seed=0)))
    with pytest.raises(TypeError, match="must be a lyra_solver.Snapshot"):
        decide_built({"format_version": 1, "servers": [], "jobs": []})
    with pytest.raises(InputError) as err:
        decide_built(snap, queue="Fifo")
    assert err.value.path == "queue"
    with pytest.raises(InputError) as err:
        decide_built(snap, keep_packing="x")
    assert err.value.path == "keep_packing"


def test_the_settings_read_once_are_settings_of_for_each_call(monkeypatch):
    """_decide reads a round's settings once per options object and overrides (pipeline._settings): every call
    still runs on settings_of's values with its own deadline, and an override equal to the last one's but of
    another type (True for 1) or outside its vocabulary is refused as settings_of refuses it, after a good call."""
    import dataclasses

    from lyra_solver.errors import InputError
    from lyra_solver.pipeline import decide_built, settings_of
    from lyra_solver.steps import STEPS

    snap = io.parse_snapshot(io.encode(generate_snapshot(servers=2, jobs=3, seed=0)))
    seen = []
    name, first = STEPS[0]

    def spy(state, settings):
        seen.append(settings)
        return first(state, settings)

    monkeypatch.setattr("lyra_solver.pipeline.STEPS", ((name, spy),) + tuple(STEPS[1:]))
    for kw in ({}, {"queue": "fifo"}, {"queue": "fifo"}, {"time_limit": 1}, {"time_limit": 1.0}, {}):
        decide_built(snap, deterministic=True, **kw)
        want = dataclasses.replace(settings_of(snap, **kw), deterministic=True, deadline=seen[-1].deadline)
        assert seen[-1] == want and type(seen[-1].time_limit) is type(want.time_limit), kw
    assert len({s.deadline for s in seen}) == len(seen)  # each round its own deadline
    decide_built(snap, time_limit=1)
    with pytest.raises(InputError) as err:
        decide_built(snap, time_limit=True)
    assert err.value.path == "time_limit"
    with pytest.raises(InputError) as err:
        decide_built(snap, queue="Fifo")
    assert err.value.path == "queue"


def test_used_gpus_of_a_step_result_is_kept_read_only_and_right():
    """:func:`lyra_solver.steps._state.used_gpus` keeps its answer for a placement tuple (a step's result) on the
    cluster: the same array for the same tuple, read-only, equal to the sum it stands for; a list (a step's
    work in progress) is counted afresh every time."""
    from lyra_solver import parse_snapshot
    from lyra_solver.steps._state import Cluster, used_gpus

    snap = parse_snapshot(b'''{"format_version": 1,
      "servers": [{"id": "t0", "pool": "training", "gpus": 8}, {"id": "t1", "pool": "training", "gpus": 8}],
      "jobs": [{"id": "a", "min_workers": 1, "max_workers": 4, "remaining_work": 10, "gpus_per_worker": 2,
                "throughput": {"kind": "power", "rate_per_worker": 1, "exponent": 1}, "placement": {"t0": 2, "t1": 1}},
               {"id": "b", "min_workers": 3, "max_workers": 3, "remaining_work": 10,
                "throughput": {"kind": "power", "rate_per_worker": 1, "exponent": 1}, "placement": {"t1": 3}}]}''')
    cl = Cluster.of(snap)
    used = used_gpus(cl, cl.placement)
    assert used.tolist() == [4, 5]
    assert used_gpus(cl, cl.placement) is used
    assert not used.flags.writeable
    other = (None, {1: 2})
    assert used_gpus(cl, other).tolist() == [0, 2]
    work = [{0: 1}, None]
    first = used_gpus(cl, work)
    work[0] = {1: 1}
    assert first.tolist() == [2, 0] and used_gpus(cl, work).tolist() == [0, 2]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), running=st.floats(0.0, 1.0))
def test_index_view_sharing_the_servers_is_the_view_afresh(seed, running):
    """:meth:`Cluster.of` shares the servers' part with the previous call on the same servers tuple (the
    simulator keeps it between rounds) and counts the snapshot's used GPUs in its placement pass: each view
    equals the one built with nothing shared, and the used GPUs it keeps equal the sum :func:`used_gpus` makes
    of a list (never kept)."""
    import msgspec
    from lyra_solver.steps import _state
    from lyra_solver.steps._state import Cluster, used_gpus

    snap = io.parse_snapshot(json.dumps(generate_snapshot(servers=6, jobs=12, seed=seed,
                                                          running_share=running)).encode())
    fewer = msgspec.structs.replace(snap, jobs=snap.jobs[: len(snap.jobs) // 2])  # the same servers tuple
    other = io.parse_snapshot(json.dumps(generate_snapshot(servers=7, jobs=5, seed=seed)).encode())
    for s in (snap, fewer, other, snap):
        shared = Cluster.of(s)
        _state._last_servers = None
        fresh = Cluster.of(s)
        for name in ("sid", "server_gpus", "placement"):
            assert getattr(shared, name) == getattr(fresh, name)
        for name in ("gpus", "kind", "gpw", "min_w", "max_w"):
            assert getattr(shared, name).tolist() == getattr(fresh, name).tolist()
        assert not shared.gpus.flags.writeable and not shared.kind.flags.writeable
        kept = used_gpus(shared, shared.placement)
        assert kept.tolist() == used_gpus(shared, list(shared.placement)).tolist()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), running=st.floats(0.0, 1.0), data=st.data())
def test_worker_counts_equal_the_sums_of_any_placement(seed, running, data):
    """:func:`lyra_solver.steps._state.worker_counts` takes an unchanged job's count from the index view
    (:attr:`Cluster.workers`, the snapshot's) and sums only the entries that are other objects: on a step's
    placement with entries replaced (another dict of other counts, a copy, ``None``, an empty dict) it equals
    the sum over every entry; the jobs given as ``base`` count ``min_workers`` (an admitted job's base demand)."""
    from lyra_solver.steps._state import Cluster, worker_counts

    snap = io.parse_snapshot(json.dumps(generate_snapshot(servers=6, jobs=12, seed=seed,
                                                          running_share=running)).encode())
    cl = Cluster.of(snap)
    assert cl.workers.tolist() == [sum(p.values()) if p else 0 for p in cl.placement]
    assert not cl.workers.flags.writeable
    placement = list(cl.placement)
    n = len(placement)
    for j in data.draw(st.lists(st.integers(0, n - 1), max_size=n)):
        placement[j] = data.draw(st.sampled_from([None, {}, {0: 1}, {0: 2, 1: 3},
                                                  dict(placement[j]) if placement[j] else None]))
    base = tuple(data.draw(st.sets(st.integers(0, n - 1), max_size=n)))
    for j in base:
        placement[j] = {0: int(cl.min_w[j])}
    counts = worker_counts(cl, tuple(placement), base)
    assert counts.tolist() == [sum(p.values()) if p else 0 for p in placement]
    assert worker_counts(cl, cl.placement).tolist() == cl.workers.tolist()
    counts[:] = -1  # a new array each time: the view's is never handed out
    assert cl.workers.tolist() == [sum(p.values()) if p else 0 for p in cl.placement]


def test_an_unchanged_placement_is_the_snapshots_in_server_order():
    """A running job no step moves keeps its snapshot placement: the decision shows it with its servers in the
    snapshot's server order (the order every decision writes), whatever order the snapshot gave them in, and
    ``changed`` false; where the snapshot's order is that order, it is the snapshot's own mapping."""
    from lyra_solver import decide, encode, parse_snapshot

    snap = parse_snapshot(b'''{"format_version": 1,
      "servers": [{"id": "t0", "pool": "training", "gpus": 8}, {"id": "t1", "pool": "training", "gpus": 8},
                  {"id": "t2", "pool": "training", "gpus": 8}],
      "jobs": [{"id": "a", "min_workers": 4, "max_workers": 4, "remaining_work": 100,
                "throughput": {"kind": "power", "rate_per_worker": 1, "exponent": 1},
                "placement": {"t1": 2, "t0": 2}},
               {"id": "b", "min_workers": 3, "max_workers": 3, "remaining_work": 100,
                "throughput": {"kind": "power", "rate_per_worker": 1, "exponent": 1},
                "placement": {"t1": 1, "t2": 2}}]}''')
    d = decide(snap)
    a, b = d.jobs["a"], d.jobs["b"]
    assert list(a.placement.items()) == [("t0", 2), ("t1", 2)] and a.changed is False
    assert list(b.placement.items()) == [("t1", 1), ("t2", 2)] and b.changed is False
    assert b.placement is snap.jobs[1].placement
    assert b'"placement":{"t0":2,"t1":2}' in encode(d)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(servers=st.integers(1, 80), jobs=st.integers(0, 200), seed=st.integers(0, 2**31 - 1),
       running=st.floats(0.0, 1.0), reclaim=st.integers(0, 8), objective=st.sampled_from(["jct-reduction", "hesrpt"]),
       reverse=st.booleans())
def test_decision_of_a_large_round_is_the_small_rounds_pass(servers, jobs, seed, running, reclaim, objective,
                                                            reverse):
    """:func:`lyra_solver.steps.decision._decision` has two passes, one over every job (below
    ``_ARRAYS_MIN_JOBS``) and one over the running jobs (counting their workers on the way) with the preempted ones
    found from the index view's list of placed jobs: on the same rounds (reclaims that preempt, borrowed servers
    that host or not, snapshot placements listing their servers in index order or reversed, kept or shrunk) both
    give the same decision bytes."""
    from unittest import mock

    import lyra_solver.steps.decision as decision_step

    snap = generate_snapshot(servers=servers, jobs=jobs, seed=seed, running_share=running, reclaim=reclaim)
    data = io.encode(snap)  # its mappings' keys sorted
    if reverse:  # servers out of index order: the decision lists them in order (a shrunk job's too)
        snap = json.loads(data)
        for job in snap["jobs"]:
            if job.get("placement"):
                job["placement"] = dict(reversed(job["placement"].items()))
        data = json.dumps(snap).encode()
    small = decide(io.parse_snapshot(data), objective=objective)
    with mock.patch.object(decision_step, "_ARRAYS_MIN_JOBS", 0):
        large = decide(io.parse_snapshot(data), objective=objective)
    assert io.encode(large) == io.encode(small)

    def listed(d):  # the mappings' items in their order (the bytes list them sorted)
        return [(k, v.action, v.workers, v.changed, v.placement and list(v.placement.items()))
                for k, v in d.jobs.items()]

    assert listed(large) == listed(small)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(servers=st.integers(1, 80), jobs=st.integers(0, 200), seed=st.integers(0, 2**31 - 1),
       running=st.floats(0.0, 1.0), reclaim=st.integers(0, 8),
       objective=st.sampled_from(["jct-reduction", "srpt", "hesrpt"]), queue=st.sampled_from(["sjf", "fifo"]))
def test_the_scale_step_gives_the_workers_held(servers, jobs, seed, running, reclaim, objective, queue):
    """The scale step's ``held`` (every objective's, the joint admission's too) is each job's workers after
    admission, 0 for an admitted job: the sum over its placement. The place step moves exactly the jobs whose target
    differs from it; a job whose target is what it holds keeps its placement (the very dict) where the place step
    does not consolidate spread jobs (Lyra's objective)."""
    import dataclasses

    from lyra_solver.pipeline import settings_of
    from lyra_solver.steps import STEPS, RoundState
    from lyra_solver.steps._state import Cluster
    from lyra_solver.steps.place import place

    snap = io.parse_snapshot(io.encode(generate_snapshot(servers=servers, jobs=jobs, seed=seed,
                                                         running_share=running, reclaim=reclaim)))
    opts = settings_of(snap, objective=objective, queue=queue)
    state = RoundState(Cluster.of(snap))
    for name, step in STEPS[:4]:
        state = dataclasses.replace(state, **{name: step(state, opts)})
    sc, adm = state.scaled, state.admitted
    admitted = set(adm.admitted)
    held = [0 if j in admitted or not adm.placement[j] else sum(adm.placement[j].values()) for j in sc.jobs]
    assert sc.held is not None and sc.held.tolist() == held
    placed = place(state, opts)
    for j, t, h in zip(sc.jobs, sc.targets.tolist(), held, strict=True):
        if t == 0:
            assert placed.placement[j] is None
        elif t == h and not opts.compact_growth:
            assert placed.placement[j] is adm.placement[j]
    with pytest.raises(ValueError, match="Scaled.held"):
        place(dataclasses.replace(state, scale=dataclasses.replace(sc, held=None)), opts)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(servers=st.integers(1, 80), jobs=st.integers(0, 200), seed=st.integers(0, 2**31 - 1),
       running=st.floats(0.0, 1.0), reclaim=st.integers(0, 8))
def test_reclaim_keeps_the_gpus_its_placements_use(servers, jobs, seed, running, reclaim):
    """The reclaim step keeps the GPUs its result uses per server (for the loan, admission and scale steps): the
    sum over its placements, counted afresh."""
    from lyra_solver.pipeline import settings_of
    from lyra_solver.steps import RoundState
    from lyra_solver.steps._state import Cluster, used_gpus
    from lyra_solver.steps.reclaim import reclaim as reclaim_step

    snap = io.parse_snapshot(io.encode(generate_snapshot(servers=servers, jobs=jobs, seed=seed,
                                                         running_share=running, reclaim=reclaim)))
    cl = Cluster.of(snap)
    rec = reclaim_step(RoundState(cl), settings_of(snap))
    kept = used_gpus(cl, rec.placement)
    assert kept.tolist() == used_gpus(cl, list(rec.placement)).tolist()  # a list is counted afresh
    assert not kept.flags.writeable


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(servers=st.integers(1, 60), jobs=st.integers(0, 150), seed=st.integers(0, 2**31 - 1),
       running=st.floats(0.0, 1.0), reclaim=st.integers(0, 8))
def test_reclaim_knows_the_queued_jobs_of_a_large_round(servers, jobs, seed, running, reclaim):
    """On a large round (forced here at any size) the reclaim step lists the jobs left without a placement by
    array operations (the jobs with no snapshot placement and the preempted ones): the jobs whose placement is
    ``None``, as the admission step would find them one by one; a result whose placement is replaced afterwards
    finds them afresh."""
    import dataclasses
    from unittest import mock

    import lyra_solver.steps.reclaim as reclaim_step
    from lyra_solver.pipeline import settings_of
    from lyra_solver.steps import RoundState
    from lyra_solver.steps._state import Cluster

    snap = io.parse_snapshot(io.encode(generate_snapshot(servers=servers, jobs=jobs, seed=seed,
                                                         running_share=running, reclaim=reclaim)))
    cl = Cluster.of(snap)
    with mock.patch.object(reclaim_step, "_ARRAYS_MIN_JOBS", 0):
        rec = reclaim_step.reclaim(RoundState(cl), settings_of(snap))
    assert rec.known_queued is not None
    expected = [j for j, p in enumerate(rec.placement) if p is None]
    queued, at = rec.queued_array()
    assert rec.queued == queued == at.tolist() == expected
    if rec.placement:
        other = dataclasses.replace(rec, placement=(None if rec.placement[0] else {0: 1}, *rec.placement[1:]))
        again = [j for j, p in enumerate(other.placement) if p is None]
        assert other.queued == other.queued_array()[0] == other.queued_array()[1].tolist() == again


@given(max_w=st.lists(st.integers(0, 2**40), max_size=40), seed=st.integers(0, 2**31 - 1))
def test_loan_total_demand_is_exact(max_w, seed):
    """The loan step's total demand is the exact integer sum of max_workers x gpus_per_worker, by numpy where int64
    holds it and by Python ints where it may not."""
    import numpy as np
    from lyra_solver.steps.loan import _total_demand

    gpw = np.random.default_rng(seed).integers(1, 2**20, size=len(max_w))
    a = np.array(max_w, np.int64)
    assert _total_demand(a, gpw) == sum(w * int(g) for w, g in zip(max_w, gpw.tolist(), strict=True))


def test_job_decisions_are_not_tracked_by_the_collector():
    """A decision's job structs are not tracked by the garbage collector (``gc=False``: a string, numbers and a
    frozen dict of numbers form no cycle), so the collection after a large round does not walk them; they still
    pickle, copy and compare as before."""
    import copy
    import gc
    import pickle

    from lyra_solver.types import JobDecision

    d = JobDecision("run", 2, {"t0": 2}, True)
    assert not gc.is_tracked(d) and not gc.is_tracked(JobDecision("wait"))
    assert pickle.loads(pickle.dumps(d)) == d == copy.deepcopy(d) and d.placement == {"t0": 2}
