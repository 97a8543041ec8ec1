"""Packing: the speed model's limits, exact = brute force, no heuristic above the exact optimum."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lyra_solver.formulations.packing import (
    SHARES,
    PackingProblem,
    evaluate_packing,
    job_rate,
    pair_speed,
    solve_packing,
)
from lyra_solver.formulations.packing.speed import alibaba_pair_statistics
from lyra_solver.heuristics.packing import gimbal_greedy, lucid_pairing, random_pairing

utils = st.floats(0.01, 1.0)
shares = st.sampled_from(SHARES.tolist())
overheads = st.floats(0.0, 0.5)


# ------------------------------------------------------------------------------------------------ speed model
@given(utils, shares, overheads)
def test_alone_keeps_at_most_one_minus_overhead(u, s, o):
    a, _ = pair_speed(u, 0.0, s, 1.0, overhead=o)
    assert a <= 1 - o + 1e-12
    if s >= u:
        assert a == pytest.approx(1 - o)


@given(utils, utils, shares, shares, overheads)
def test_speeds_never_above_one(ua, ub, sa, sb, o):
    a, b = pair_speed(ua, ub, sa, sb, overhead=o)
    assert 0 < a <= 1 - o + 1e-12 and 0 < b <= 1 - o + 1e-12


@given(utils, utils)
def test_shares_two_is_free_competition(ua, ub):
    a, b = pair_speed(ua, ub, 1.0, 1.0, overhead=0.0)
    if ua + ub <= 1:
        assert a == pytest.approx(1.0) and b == pytest.approx(1.0)
    else:  # a saturated GPU splits in proportion to demand
        assert a == pytest.approx(1.0 / (ua + ub)) and b == pytest.approx(1.0 / (ua + ub))


@given(utils, utils, shares, shares)
def test_more_share_never_slower(ua, ub, sa, sb):
    a, _ = pair_speed(ua, ub, sa, sb)
    a_up, b_other = pair_speed(ua, ub, min(1.0, sa + 0.1), sb)
    assert a_up >= a - 1e-12


def test_vectorised_matches_scalar_and_measured_overrides():
    rng = np.random.default_rng(0)
    ua, ub = rng.uniform(0.05, 1, 50), rng.uniform(0.05, 1, 50)
    sa, sb = rng.choice(SHARES, 50), rng.choice(SHARES, 50)
    a, b = pair_speed(ua, ub, sa, sb)
    for i in range(50):
        ai, bi = pair_speed(float(ua[i]), float(ub[i]), float(sa[i]), float(sb[i]))
        assert a[i] == pytest.approx(float(ai)) and b[i] == pytest.approx(float(bi))
    m = np.full(50, np.nan)
    m[3] = 0.42
    a2, _ = pair_speed(ua, ub, sa, sb, measured_a=m)
    assert a2[3] == 0.42 and np.array_equal(np.delete(a2, 3), np.delete(a, 3))


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="util_a"):
        pair_speed(0.0, 0.5, 1.0, 1.0)
    with pytest.raises(ValueError, match="share_b"):
        pair_speed(0.5, 0.5, 1.0, 1.5)
    with pytest.raises(ValueError, match="overhead"):
        pair_speed(0.5, 0.5, 1.0, 1.0, overhead=1.0)
    with pytest.raises(ValueError, match="worker_speeds"):
        job_rate(1.0, [])


def test_job_rate_min_and_stealing():
    speeds = np.array([[1.0, 0.5, 0.8], [1.0, 1.0, 1.0]])
    assert job_rate([10.0, 20.0], speeds, sample_stealing=False).tolist() == [5.0, 20.0]
    assert job_rate([10.0, 20.0], speeds).tolist() == pytest.approx([23 / 3, 20.0])


def test_alibaba_defaults():
    from lyra_solver.bench.suites.packing import alibaba_pods

    pods = alibaba_pods()
    if pods is None:
        pytest.skip("shared/data/alibaba is absent")
    stats = alibaba_pair_statistics([round(u * 1000) for u, _ in pods])
    # the figures of the speed module's docstring
    assert stats["pods"] == 3078 and stats["median_util"] == 0.47
    assert round(stats["share_pairs_within_threshold"], 2) == 0.35
    assert round(stats["mean_speed"], 2) == 0.82 and round(stats["min_pair_throughput"], 2) == 1.17


# ------------------------------------------------------------------------------------------------ problems
@st.composite
def problems(draw, max_hosts=2, max_guests=2, max_candidates=3):
    H = draw(st.integers(1, max_hosts))
    Q = draw(st.integers(1, max_guests))
    hw = [draw(st.integers(1, 3)) for _ in range(H)]
    gw = [draw(st.integers(1, 2)) for _ in range(Q)]
    cands = []
    for g in range(Q):
        for h in range(H):
            if gw[g] <= hw[h] and len(cands) < max_candidates and draw(st.booleans()):
                cands.append((g, h, [(h, gw[g])]))
    finite_or_inf = st.one_of(st.just(np.inf), st.floats(5.0, 3000.0))
    return PackingProblem.build(
        host_util=[draw(st.floats(0.05, 1.0)) for _ in range(H)],
        host_time=[draw(st.floats(5.0, 2000.0)) for _ in range(H)], host_workers=hw, host_gpus=hw,
        host_mem=[10.0] * H, guest_util=[draw(st.floats(0.05, 1.0)) for _ in range(Q)],
        guest_time=[draw(st.floats(5.0, 2000.0)) for _ in range(Q)], guest_gpus=gw, guest_mem=[10.0] * Q,
        slot_host=list(range(H)), slot_capacity=hw, slot_mem=[80.0] * H, candidates=cands,
        host_deadline=[draw(finite_or_inf) for _ in range(H)], guest_deadline=[draw(finite_or_inf) for _ in range(Q)],
        policy=draw(st.sampled_from(["jct", "deadline", "makespan"])), sample_stealing=draw(st.booleans()),
        overhead=draw(st.sampled_from([0.0, 0.05, 0.2])))


def close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


@given(problems())
def test_exact_agrees_with_brute_force(p):
    exact = solve_packing(p, method="exact")
    brute = solve_packing(p, method="brute")
    assert exact.status == "optimal" and brute.status == "optimal"
    assert close(exact.objective, brute.objective), (exact, brute)
    assert exact.bound >= brute.objective - 1e-6 * max(1.0, abs(brute.objective))
    assert exact.objective >= -1e-12  # packing nothing is always allowed


@given(problems(max_hosts=3, max_guests=4, max_candidates=8), st.integers(0, 3))
def test_no_heuristic_beats_the_exact_optimum(p, seed):
    exact = solve_packing(p)
    assert exact.status == "optimal"
    for res in (gimbal_greedy(p), lucid_pairing(p), random_pairing(p, seed=seed)):
        assert res.status == "feasible"
        assert res.objective <= exact.objective + 1e-6 * max(1.0, abs(exact.objective)), res.method
        shares_g = [share_index for share_index in res.guest_share]
        assert all(s in (0.0, *SHARES.tolist()) for s in shares_g)
        # the objective the heuristic reports is the problem's objective of its answer
        gk = [max(0, round(s * 10) - 1) for s in res.guest_share]
        hk = [max(0, round(s * 10) - 1) for s in res.host_share]
        assert close(evaluate_packing(p, res.assignment, gk, hk), res.objective)


def test_gimbal_tunes_shares_where_lucid_does_not():
    # a short guest on a long, GPU-hungry host: squeezing the host lets the guest run at full speed
    p = PackingProblem.build(host_util=[0.9], host_time=[1000.0], host_workers=[1], host_gpus=[1], host_mem=[10.0],
                             guest_util=[0.9], guest_time=[10.0], guest_gpus=[1], guest_mem=[10.0], slot_host=[0],
                             slot_capacity=[1], slot_mem=[80.0], candidates=[(0, 0, [(0, 1)])])
    g, lu, ex = gimbal_greedy(p), lucid_pairing(p), solve_packing(p)
    assert lu.packed == 0  # 0.9 + 0.9 > 1.0
    assert g.packed == 1 and g.steps > 0 and g.host_share[0] < 1.0
    assert close(g.objective, ex.objective)


def test_random_pairing_is_seeded():
    p = PackingProblem.build(host_util=[0.3, 0.4, 0.2], host_time=[100.0, 200.0, 300.0], host_workers=[1, 1, 1],
                             host_gpus=[1, 1, 1], host_mem=[1.0] * 3, guest_util=[0.3, 0.2], guest_time=[50.0, 60.0],
                             guest_gpus=[1, 1], guest_mem=[1.0] * 2, slot_host=[0, 1, 2], slot_capacity=[1, 1, 1],
                             slot_mem=[80.0] * 3,
                             candidates=[(g, h, [(h, 1)]) for g in range(2) for h in range(3)])
    answers = {random_pairing(p, seed=s).assignment for s in range(20)}
    assert len(answers) > 1
    assert random_pairing(p, seed=7).assignment == random_pairing(p, seed=7).assignment


def test_problem_validation_names_the_argument():
    base = dict(host_util=[0.5], host_time=[100.0], host_workers=[1], host_gpus=[1], host_mem=[10.0],
                guest_util=[0.5], guest_time=[10.0], guest_gpus=[1], guest_mem=[10.0], slot_host=[0],
                slot_capacity=[1], slot_mem=[80.0], candidates=[(0, 0, [(0, 1)])])
    for key, value, match in [("host_util", [0.0], "host_util"), ("guest_gpus", [2], "smaller job joins"),
                              ("guest_mem", [75.0], "memory"), ("candidates", [(0, 0, [(0, 2)])], "host workers"),
                              ("guest_time", [-1.0], "guest_time"), ("slot_host", [3], "slot_host")]:
        with pytest.raises(ValueError, match=match):
            PackingProblem.build(**{**base, key: value})
    with pytest.raises(ValueError, match="policy"):
        PackingProblem.build(**base, policy="fastest")
    p = PackingProblem.build(**base)
    with pytest.raises(ValueError, match="method"):
        solve_packing(p, method="magic")
    with pytest.raises(ValueError, match="assignment"):
        evaluate_packing(p, [1], [0], [0])


def test_empty_problem():
    p = PackingProblem.build(host_util=[], host_time=[], host_workers=[], host_gpus=[], host_mem=[], guest_util=[0.5],
                             guest_time=[1.0], guest_gpus=[1], guest_mem=[1.0], slot_host=[], slot_capacity=[],
                             slot_mem=[], candidates=[])
    for res in (solve_packing(p), gimbal_greedy(p), lucid_pairing(p), random_pairing(p)):
        assert res.assignment == (-1,) and res.objective == 0.0
