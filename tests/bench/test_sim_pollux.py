"""The Pollux artifact's job model in the simulator: work and rates recomputed here from the raw CSV files with a
reader of this test's own, epochs crossed inside a run, the preset, bad workload rows, and the recorded means."""
from __future__ import annotations

import csv
import json
import math

import pytest
from lyra_solver.bench.sim import data_dir
from lyra_solver.bench.sim.engine import SimConfig, simulate
from lyra_solver.bench.sim.policies import get_policy
from lyra_solver.bench.sim.traces import TraceJob, load_pollux_workload, map_jobs
from lyra_solver.cli import main

POLLUX = data_dir() / "pollux"
needs_pollux = pytest.mark.skipif(not (POLLUX / "validation").exists(), reason="shared/data/pollux not present")


def _csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _boundaries(app: str, epochs: int) -> list[float]:
    """P(0..epochs): progress at the start of each epoch, the smallest over the validated batch sizes."""
    curves = [_csv(p) for p in (POLLUX / "validation" / app).glob("validation-*.csv")]
    return [0.0] + [min(float(c[e - 1]["progress"]) for c in curves) for e in range(1, epochs + 1)]


def _cifar_rate(epoch: int) -> float:
    """cifar10 at batch 2048 on one node of 4 replicas, by hand: local batch 512 (no accumulation), step time
    linear between the measured local batches of placement 4, gain from validation-2048's row."""
    place = _csv(POLLUX / "throughput" / "cifar10" / "placements.csv")
    rows = sorted((int(r["local_bsz"]), float(r["step_time"])) for r in place if r["placement"] == "4")
    lo = max(p for p in rows if p[0] <= 512)
    hi = min(p for p in rows if p[0] >= 512)
    step = lo[1] if lo == hi else lo[1] + (512 - lo[0]) * (hi[1] - lo[1]) / (hi[0] - lo[0])
    v = _csv(POLLUX / "validation" / "cifar10" / "validation-2048.csv")[epoch]
    sqr, var = float(v["grad_sqr"]), float(v["grad_var"])
    scale = 2048 / 128  # initial batch: the smallest validated one
    return (var + sqr) / (var / scale + sqr) / step


@needs_pollux
def test_a_lone_job_trains_to_max_epochs_at_the_rate_of_each_epoch():
    """One cifar10 job (batch 2048, 4 replicas) alone on one 4-GPU node: it ends when the progress of epoch 99's
    end is reached, each epoch at its own gain over the measured step time (recomputed here from the CSVs)."""
    trace = [TraceJob(line=2, submit=0.0, gpus=4, duration=0.0, key="x", app="cifar10", batch_size=2048,
                      root=str(POLLUX))]
    spec, = map_jobs(trace, restart_penalty=0.0, preemption_penalty=0.0, server_gpus=4)
    p = _boundaries("cifar10", 100)
    assert spec.work == pytest.approx(p[100], rel=1e-12)
    want = sum((p[e + 1] - p[e]) / _cifar_rate(e) for e in range(100))
    cfg = SimConfig(training_servers=1, inference_servers=0, server_gpus=4, interval=60.0, record=True, check=True)
    res = simulate([spec], get_policy("baseline"), cfg)
    assert res.jobs[0]["jct"] == pytest.approx(want, rel=1e-9)
    assert spec.duration == pytest.approx(want, rel=1e-9)
    rates = [s[3] for s in res.segments]
    assert len(set(rates)) > 50  # the rate changes at epoch ends, not only at rounds
    assert sum(r * (b - a) for _j, a, b, r in res.segments) == pytest.approx(spec.work, rel=1e-9)
    # the artifact charges its 30 s for the first allocation too (SimConfig.start_penalty, set by the preset)
    from dataclasses import replace

    late = simulate([spec], get_policy("baseline"), replace(cfg, start_penalty=30.0, record=False, check=False))
    assert late.jobs[0]["jct"] == pytest.approx(want + 30.0, rel=1e-9)


def _artifact_steps(p: list[float], rate, delay: float = 30.0, interval: float = 60.0) -> float:
    """A lone job allocated at time 0, stepped as the artifact's ``Job.step`` does (written here from its
    description): each round's ``interval`` seconds begin with what is left of the restart delay; then progress
    at the epoch's rate, the rest of an epoch that ends within the round taking ``round(exact time)`` seconds."""
    t, progress, epoch, rescale = 0.0, 0.0, 0, delay
    while True:
        seconds = interval
        d = min(rescale, seconds)
        rescale, seconds, now = rescale - d, seconds - d, t + d
        while seconds > 0:
            g, nxt = rate(epoch), p[epoch + 1]
            if progress + g * seconds < nxt:
                progress, seconds = progress + g * seconds, 0
            else:
                delta = round((nxt - progress) / g)
                epoch, progress, now, seconds = epoch + 1, nxt, now + delta, seconds - delta
                if epoch == len(p) - 1:
                    return now
        t += interval


@needs_pollux
def test_with_round_epochs_epoch_ends_fall_on_whole_seconds_as_the_artifact_steps_them():
    """``SimConfig.round_epochs`` (set by the preset): the lone cifar10 job of the test above ends exactly when
    the artifact's stepping ends it, a whole number of seconds, not at the exact time (the roundings of its 100
    epochs do not cancel: its later epochs are all about as long)."""
    trace = [TraceJob(line=2, submit=0.0, gpus=4, duration=0.0, key="x", app="cifar10", batch_size=2048,
                      root=str(POLLUX))]
    spec, = map_jobs(trace, restart_penalty=30.0, preemption_penalty=30.0, server_gpus=4)
    p = _boundaries("cifar10", 100)
    want = _artifact_steps(p, _cifar_rate)
    exact = 30.0 + sum((p[e + 1] - p[e]) / _cifar_rate(e) for e in range(100))
    cfg = SimConfig(training_servers=1, inference_servers=0, server_gpus=4, interval=60.0, event_rounds=False,
                    round_origin=0.0, start_penalty=30.0, round_epochs=True, check=True)
    got = simulate([spec], get_policy("baseline"), cfg).jobs[0]["jct"]
    assert got == want and got == int(got)
    assert abs(want - exact) > 1.0
    from dataclasses import replace

    assert simulate([spec], get_policy("baseline"), replace(cfg, round_epochs=False)).jobs[0]["jct"] == \
        pytest.approx(exact, rel=1e-9)


@needs_pollux
def test_rates_follow_the_measured_placement_and_accumulate_beyond_the_largest_local_batch():
    from lyra_solver.bench.sim.pollux import PolluxJob

    job = PolluxJob("cifar10", 2048, str(POLLUX))
    assert job.rate((4,), 3) == pytest.approx(_cifar_rate(3), rel=1e-12)
    rows = {(r["placement"], int(r["local_bsz"])): float(r["step_time"])
            for r in _csv(POLLUX / "throughput" / "cifar10" / "placements.csv")}
    # 2 + 2 replicas on two nodes at local batch 512: the measured placement "22", not "4"
    assert job.rate((2, 2), 3) / job.rate((4,), 3) == pytest.approx(
        (rows[("4", 513)] + rows[("4", 363)]) / (rows[("22", 513)] + rows[("22", 363)]), rel=0.05)
    # yolov3 (largest local batch 8) at batch 64 on 4 replicas: local 16 = 2 accumulation steps of 8
    yolo = PolluxJob("yolov3", 64, str(POLLUX)).data
    assert yolo.config(64, 4) == (8, 1)
    step, sync = yolo.step_sync((4,), 8)
    v = _csv(POLLUX / "validation" / "yolov3" / "validation-64.csv")[0]
    sqr, var = float(v["grad_sqr"]), float(v["grad_var"])
    gain = (var + sqr) / (var / 8 + sqr)
    assert yolo.rate(64, (4,), 0) == pytest.approx(gain / (step + (step - sync)), rel=1e-12)


@needs_pollux
def test_a_placement_reads_the_rows_of_the_arrangement_the_artifact_looks_up():
    """``placements.csv`` measures one arrangement per rotation class: ``1122`` and ``1212`` are different
    placements of the same counts, as are ``123`` and ``132``. The artifact's allocator fills the node with most
    free GPUs first (counts non-increasing: 2, 2, 1, 1 and 3, 2, 1) and looks up the smallest rotation: ``1122``
    and ``132``, whatever order the counts come in here."""
    from lyra_solver.bench.sim.pollux import app, arrangement

    rows = {(r["placement"], int(r["local_bsz"])): (float(r["step_time"]), float(r["sync_time"]))
            for r in _csv(POLLUX / "throughput" / "cifar10" / "placements.csv")}
    data = app("cifar10", str(POLLUX))
    for counts in ((1, 2, 1, 2), (2, 1, 1, 2), (2, 2, 1, 1)):
        assert arrangement(counts) == (1, 1, 2, 2)
        assert data.step_sync(counts, 64) == rows[("1122", 64)] != rows[("1212", 64)]
    for counts in ((1, 2, 3), (3, 2, 1), (2, 3, 1)):
        assert arrangement(counts) == (1, 3, 2)
        assert data.step_sync(counts, 64) == rows[("132", 64)] != rows[("123", 64)]


@needs_pollux
def test_snapshot_shows_the_exact_remaining_time_at_every_count():
    """The oracle: remaining_work / rate(w) is the job's remaining time at w workers held to its end, each
    later epoch at its own rate (summed here epoch by epoch, from the model's progress boundaries)."""
    from lyra_solver.bench.sim.engine import _Sim
    from lyra_solver.bench.sim.jobs import SimJob
    from lyra_solver.bench.sim.pollux import compact

    trace = load_pollux_workload(POLLUX / "workloads" / "workload-1.csv")[:3]
    specs = map_jobs(trace, server_gpus=4)
    sim = _Sim(specs, get_policy("optimus"), SimConfig(training_servers=16, inference_servers=0, server_gpus=4),
               None)
    j = SimJob(specs[0], 0)
    m = specs[0].model
    while j.epoch < 7:
        j.next_epoch()
    j.remaining = j.level + 0.25 * (j.remaining - j.level)  # three quarters of epoch 7 done
    tab = sim.job_throughput(j, 1, 6)
    assert list(tab.workers) == [1, 2, 3, 4, 5, 6]
    for w, rate in zip(tab.workers, tab.rate, strict=True):
        done = specs[0].work - j.remaining
        expected, e = 0.0, 0
        while e < m.epochs():
            lo = m.boundary(e)
            hi = m.boundary(e + 1) if e + 1 < m.epochs() else specs[0].work
            left = hi - max(lo, done)
            if left > 0:
                expected += left / m.rate(compact(w, 4), e)
            e += 1
        assert j.remaining / rate == pytest.approx(expected, rel=1e-9)
    # later epochs train faster at this batch: the current epoch's rate alone would overstate the time left
    assert j.remaining / tab.rate[0] < j.remaining / m.rate(compact(1, 4), 7)
    assert compact(6, 4) == (4, 2) and compact(8, 4) == (4, 4)


@needs_pollux
@pytest.mark.parametrize("row, problem", [
    ("cifar10-0,107,cifar10,6,99999", "batch_size"),
    ("cifar10-0,107,cifar10,6,64", "batch_size"),
    ("x-0,107,resnet,6,2048", "application"),
    ("cifar10-0,107,cifar10,128,2048", "num_replicas"),
])
def test_a_workload_row_the_model_cannot_size_exits_2_naming_file_and_line(tmp_path, capsys, row, problem):
    bad = tmp_path / "w.csv"
    bad.write_text("name,time,application,num_replicas,batch_size\nncf-2,135,ncf,1,32768\n" + row + "\n")
    rc = main(["simulate", "--pollux-workload", str(bad), "--pollux-data", str(POLLUX), "--policy", "tiresias",
               "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert str(bad) in err and "line 3" in err and problem in err, err
    assert not (tmp_path / "o").exists()


@needs_pollux
def test_the_preset_sets_the_artifacts_cluster_and_an_explicit_option_wins(tmp_path, capsys):
    rc = main(["simulate", "--pollux-workload", "1", "--preset", "pollux-artifact", "--policy", "tiresias",
               "--no-progress", "--out", str(tmp_path / "a")])
    meta = json.loads((tmp_path / "a" / "summary.json").read_text())["meta"]
    assert rc == 0
    assert (meta["training_servers"], meta["server_gpus"], meta["inference_servers"], meta["interval"]) == \
        (16, 4, 0, 60.0)
    assert (meta["tiresias_threshold"], meta["tiresias_starve_limit"]) == (57600.0, 0.0)
    assert meta["mapping"]["restart_penalty"] == meta["mapping"]["preemption_penalty"] == 30.0
    assert (meta["preset"], meta["event_rounds"], meta["round_origin"], meta["start_penalty"]) == \
        ("pollux-artifact", False, 0.0, 30.0)
    rc = main(["simulate", "--pollux-workload", "1", "--preset", "pollux-artifact", "--policy", "tiresias",
               "--tiresias-threshold", "3600", "--no-progress", "--out", str(tmp_path / "b")])
    assert rc == 0
    assert json.loads((tmp_path / "b" / "summary.json").read_text())["meta"]["tiresias_threshold"] == 3600.0
    capsys.readouterr()


def _recorded(policy: str, n: int) -> float:
    return json.loads((POLLUX / "results" / "jobload-1.0.json").read_text())["mean_jct_s"][policy][f"workload-{n}"]


def _mean_jct(tmp_path, policy: str, n: int) -> float:
    out = tmp_path / f"{policy}-{n}"
    assert main(["simulate", "--pollux-workload", str(n), "--preset", "pollux-artifact", "--policy", policy,
                 "--no-progress", "--out", str(out)]) == 0
    return json.loads((out / "summary.json").read_text())["policies"][policy]["jct"]["mean"]


@needs_pollux
def test_tiresias_on_workload_1_reproduces_the_artifacts_recorded_mean(tmp_path, capsys):
    """Under the preset (the artifact's Tiresias round and allocator, epoch ends on whole seconds) every job's JCT
    is the artifact's own (all 160 of each of workloads 1-8, compared against its per-job results outside the
    repository); the recorded mean, kept to two decimals, to within their rounding (the target: 10%)."""
    got, want = _mean_jct(tmp_path, "tiresias", 1), _recorded("tiresias", 1)
    assert abs(got - want) <= 0.005 + 1e-9, (got, want)
    capsys.readouterr()


@pytest.mark.slow
@needs_pollux
@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("policy, tol", [("tiresias", 0.10), ("optimus", 0.15)])
def test_mean_jct_within_the_target_of_the_artifacts_recorded_means(tmp_path, capsys, policy, tol, n):
    got, want = _mean_jct(tmp_path, policy, n), _recorded(policy, n)
    assert math.isclose(got, want, rel_tol=tol), (policy, n, got, want)
    capsys.readouterr()


@needs_pollux
def test_a_packing_policy_under_the_preset_replays_to_the_end(tmp_path, capsys):
    """Regression: ``gimbal`` on workload 1 under the preset stood still at t = 22,766 s until the event limit. A
    job was restarted by a round when its progress was already past its epoch's end (a packing rate change had
    moved the end it was due at), so its rounded epoch end fell before its restart delay ended: the next event
    was that end, at the current time, and the completion rule, which waited for the delay, never took it. It
    now crosses the epoch then; every job completes."""
    out = tmp_path / "g"
    assert main(["simulate", "--pollux-workload", "1", "--preset", "pollux-artifact", "--policy", "gimbal",
                 "--out", str(out), "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())["policies"]["gimbal"]
    assert summary["completed"] == summary["jobs"] == 160
    capsys.readouterr()
