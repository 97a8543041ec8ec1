"""lyra-solver's ``decide`` as the scheduling policy inside the Pollux artifact's own simulator (OSDI'21).

What it does
------------
The Pollux artifact (Qiao et al., OSDI 2021; ``petuum/adaptdl``, branch ``osdi21-artifact``, folder
``simulator/``, Apache-2.0) ships a cluster simulator with its own job model (measured step times, statistical
progress per epoch, 30 s for any change of allocation) and its Tiresias, Optimus and Pollux policies, with their
recorded results (``simulator/results-jobload/<policy>-<load>/summary.json``). This script runs that simulator,
unchanged, with a policy of ours in place of its Optimus: each 60 s round it builds a lyra-solver snapshot of the
cluster, calls :func:`lyra_solver.decide`, and hands the decision back to the simulator in its own allocation
format (a list of node indices, one per replica). It prints the mean JCT (s) and writes the per-job JCTs.

The snapshot of a round (:func:`build_snapshot`):

- servers: the simulator's nodes (16 x 4 GPUs by default), ``n0``..``n15``, pool ``training``;
- jobs: every active job (submitted, not complete), elastic in ``1..max`` workers of one GPU, ``max`` as the
  artifact's Optimus: the workload row's batch size over the model's smallest local batch (ncf: 1), capped at the
  cluster's GPUs and at the last replica count whose step time the artifact can predict;
- ``throughput``: a ``table`` of ``1 / step time`` (iterations per second) for ``w = 1..max``, the step time being
  the artifact's own prediction for ``w`` replicas at the row's batch size (``OptimusPolicy.predict_step_time``:
  the fewest nodes that hold ``w`` replicas, gradient accumulation beyond the largest local batch);
- ``remaining_work``: iterations left, so that ``remaining_work / rate(w)`` is the remaining time at ``w``.
  ``--remaining exact`` (default): the simulator's own truth, the statistical progress left to the end of the
  last epoch over the gain per iteration of each epoch (gradient statistics of that epoch at the row's batch
  size), the current epoch counted from the job's progress within it; ``--remaining epoch``: the artifact's
  Optimus oracle (validated iterations from the start of the current epoch to completion);
- ``placement`` of a running job: its previous allocation (replicas per node); ``restart_penalty`` and
  ``preemption_penalty`` 30 s (the artifact stops a job for 30 s at any change of allocation, its restart after
  a preemption included); ``submit_time``: the row's arrival;
- ``options``: ``objective`` and ``allocation`` as given, ``queue`` ``sjf``, placement ``bfd``, ``time_limit``
  1 s; ``decide`` runs with deterministic limits.

A job the decision runs keeps its previous list of node indices when its placement is unchanged (the simulator
restarts a job whose list differs in any way); otherwise its list is the decision's placement, node by node.

What it assumes
---------------
- The artifact's ``simulator/`` folder at ``--artifact`` (the folder itself or its parent). Its code is imported
  at run time from there, not copied. ``simulate()`` of its ``simulator.py`` runs as published: this script only
  binds the module's names ``OptimusPolicy`` (to our policy, a subclass of theirs, so the simulator gives our
  policy the Optimus job view: the row's batch size, ``max_replicas``, ``epoch``) and ``Cluster`` (to a subclass
  whose only addition is to tell our policy the cluster, for each job's progress within its epoch) for the
  duration of the run.
- Two shims for a current Python stack, installed only when missing: ``pandas.DataFrame.append`` (removed in
  pandas 2; the artifact's ``applications.py`` uses it to interpolate step times) as ``pandas.concat``, and
  placeholder ``pymoo`` 0.4 modules (its ``pollux.py`` imports them at import time; the Pollux policy itself is not
  run here and raises if called). ``autograd``, ``scipy``, ``pandas`` and ``numpy`` must be installed.
- The gain per iteration is taken at the row's batch size; the simulator runs a job at ``w`` replicas at a batch
  size rounded up to a multiple of ``w`` (bert 384 at 5 replicas: 385), a difference of well under 1%.

How to run
----------
::

    git --git-dir=<adaptdl mirror> archive osdi21-artifact simulator | tar -x -C /tmp/pollux-artifact
    pip install autograd                   # besides lyra-solver's own dependencies
    python scripts/pollux_artifact_policy.py --artifact /tmp/pollux-artifact \\
        --workload /tmp/pollux-artifact/simulator/workloads/workload-4.csv --objective hesrpt --allocation hull \\
        --out w4-hesrpt-hull.json
    python scripts/pollux_artifact_policy.py --artifact /tmp/pollux-artifact --policy tiresias \\
        --workload /tmp/pollux-artifact/simulator/workloads/workload-4.csv          # the artifact's own policy

A workload CSV inside the artifact's ``workloads[-LOAD]/`` folders is matched with the artifact's recorded means
for it (printed beside ours and written to ``--out``). One workload took from under a second (the artifact's
Tiresias, 80 jobs) to two minutes on a shared 2-core machine (``--verbatim``: up to 10 minutes).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import os
import sys
import time
import types
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The artifact stops a job for this long at any change of its allocation (``Job.reallocate``).
RESTART_PENALTY = 30.0
#: The artifact's scheduling interval (``simulator.py --interval`` default).
INTERVAL = 60
#: The artifact's cluster (``--min-nodes`` and ``--num-gpus`` defaults).
NUM_NODES, NODE_GPUS = 16, 4
POLICIES = ("lyra", "tiresias", "optimus")


# ---------------------------------------------------------------------------------------------- the snapshot
@dataclass(frozen=True)
class JobView:
    """What the snapshot shows of one active job.

    ``step_times[w - 1]``: predicted seconds per iteration at ``w`` replicas (``w = 1..len(step_times)``);
    ``remaining``: iterations left; ``submit_time``: arrival (s)."""

    name: str
    submit_time: float
    step_times: tuple[float, ...]
    remaining: float


def node_id(idx: int) -> str:
    """The snapshot's server id of the artifact's node ``idx``."""
    return f"n{idx}"


def build_snapshot(now: float, jobs: Sequence[JobView], prev: Mapping[str, Sequence[int]],
                   nodes: Mapping[int, int], *, objective: str, allocation: str,
                   restart_penalty: float = RESTART_PENALTY) -> dict[str, Any]:
    """The lyra-solver snapshot (JSON format, DESIGN "Formats") of one round of the artifact's simulator.

    ``prev``: the previous allocation (job name -> node index per replica); ``nodes``: node index -> GPUs.
    Every job is elastic in ``1..len(step_times)`` one-GPU workers with a ``table`` throughput of
    ``1 / step time`` iterations per second; a job with a previous allocation is running there.
    """
    snap_jobs = []
    for job in jobs:
        count = len(job.step_times)
        entry: dict[str, Any] = {
            "id": job.name, "submit_time": float(job.submit_time), "gpus_per_worker": 1,
            "min_workers": 1, "max_workers": count, "remaining_work": float(job.remaining),
            "throughput": {"kind": "table", "workers": list(range(1, count + 1)),
                           "rate": [1.0 / s for s in job.step_times]},
            "restart_penalty": restart_penalty, "preemption_penalty": restart_penalty,
        }
        held = prev.get(job.name)
        if held:
            entry["placement"] = {node_id(idx): n for idx, n in sorted(Counter(held).items())}
        snap_jobs.append(entry)
    return {
        "format_version": 1, "now": float(now),
        "servers": [{"id": node_id(idx), "pool": "training", "gpus": int(gpus)} for idx, gpus in sorted(nodes.items())],
        "jobs": snap_jobs,
        "options": {"queue": "sjf", "allocation": allocation, "reclaim": "greedy", "placement": "bfd",
                    "packing": "off", "time_limit": 1.0, "objective": objective},
    }


def decision_to_allocations(decision_jobs: Mapping[str, Any],
                            prev: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    """The artifact's allocations (job name -> node index per replica, grouped by node) from a decision's ``jobs``
    (``{name: {"action": ..., "placement": {server id: workers}}}``, dicts or :class:`lyra_solver.JobDecision`).

    A job whose placement equals its previous one keeps its previous list as it was (the simulator restarts a
    job whose list differs in any way, order included); jobs that wait or are preempted are left out."""
    out: dict[str, list[int]] = {}
    for name, jd in decision_jobs.items():
        action = jd["action"] if isinstance(jd, Mapping) else jd.action
        if action != "run":
            continue
        placement = jd["placement"] if isinstance(jd, Mapping) else jd.placement
        counts = {int(sid.removeprefix("n")): int(n) for sid, n in placement.items() if n}
        held = prev.get(name)
        if held and Counter(held) == Counter(counts):
            out[name] = list(held)
        else:
            out[name] = [idx for idx in sorted(counts) for _ in range(counts[idx])]
    return out


# --------------------------------------------------------------------------------------- the artifact's model
def step_times(predict, info, cap: int) -> tuple[float, ...]:
    """Predicted step times for ``1..min(info.max_replicas, cap)`` replicas, stopping before the first count
    the artifact cannot predict (its interpolation answers NaN or fails) or whose time is not positive."""
    out: list[float] = []
    for w in range(1, min(int(info.max_replicas), cap) + 1):
        try:
            s = float(predict(info, w))
        except (AssertionError, ValueError, IndexError):
            break
        if not math.isfinite(s) or s <= 0:
            break
        out.append(s)
    return tuple(out)


def gain(app, batch_size: float, epoch: int) -> float:
    """Statistical progress per iteration of ``app`` at ``batch_size`` in ``epoch`` (the artifact's ``Job.step``:
    ``(var + sqr) / (var / scale + sqr)``, ``scale`` = batch size over the model's initial batch size)."""
    sqr, var = app.get_grad_stats(batch_size, epoch)
    scale = batch_size / app.init_batch_size
    return float((var + sqr) / (var / scale + sqr))


class RemainingIterations:
    """Iterations left to a job's completion at its row's batch size, the simulator's truth: the progress left
    in each epoch to the end of the completion epoch, over that epoch's gain per iteration. Sums over whole
    later epochs are cached per (model, batch size, epoch)."""

    def __init__(self) -> None:
        self._tail: dict[tuple[str, float, int], float] = {}

    def _after(self, app, bsz: float, epoch: int, last: int) -> float:
        """Iterations of the whole epochs ``epoch..last``."""
        key = (app.name, bsz, epoch)
        if key not in self._tail:
            total = 0.0
            for e in range(last, epoch - 1, -1):
                total += (app.get_progress(e + 1) - app.get_progress(e)) / gain(app, bsz, e)
                self._tail[app.name, bsz, e] = total
        return self._tail[key]

    def __call__(self, app, bsz: float, epoch: int, progress: float) -> float:
        last = app.get_completion_epoch(bsz)
        if epoch > last:
            return 1.0
        left = max(0.0, app.get_progress(epoch + 1) - max(progress, app.get_progress(epoch)))
        rest = self._after(app, bsz, epoch + 1, last) if epoch + 1 <= last else 0.0
        return max(left / gain(app, bsz, epoch) + rest, 1e-6)


def optimus_remaining(app, bsz: float, epoch: int) -> float:
    """The artifact's Optimus oracle (``OptimusPolicy.optimize``): validated iterations from the start of the
    current epoch to the completion epoch (1 once past it)."""
    last = app.get_completion_epoch(bsz)
    if last <= epoch:
        return 1.0
    return float(app.get_iteration(bsz, last) - app.get_iteration(bsz, epoch))


# ------------------------------------------------------------------------------------------ loading the artifact
def _shim_pandas() -> None:
    """``DataFrame.append`` (removed in pandas 2) as ``pandas.concat``, for the artifact's ``applications.py``."""
    import pandas

    if not hasattr(pandas.DataFrame, "append"):
        def append(self, other, ignore_index=False):
            return pandas.concat([self, other], ignore_index=ignore_index)

        pandas.DataFrame.append = append


def _shim_pymoo() -> None:
    """Placeholder ``pymoo`` 0.4 modules when pymoo 0.4 is not installed: the artifact's ``pollux.py`` imports
    them (and subclasses three of their classes) at import time; its Pollux policy is not run here."""
    try:
        importlib.import_module("pymoo.model.problem")
        return
    except ImportError:
        pass

    def unavailable(*_a, **_k):
        raise RuntimeError("the Pollux policy needs pymoo 0.4 (not installed; this harness does not run it)")

    class Placeholder:
        def __init__(self, *_a, **_k):
            unavailable()

    names = {
        "pymoo": {}, "pymoo.model": {}, "pymoo.model.crossover": {"Crossover": Placeholder},
        "pymoo.model.mutation": {"Mutation": Placeholder}, "pymoo.model.problem": {"Problem": Placeholder},
        "pymoo.model.repair": {"Repair": Placeholder}, "pymoo.optimize": {"minimize": unavailable},
        "pymoo.algorithms": {}, "pymoo.algorithms.nsga2": {"NSGA2": Placeholder}, "pymoo.operators": {},
        "pymoo.operators.crossover": {}, "pymoo.operators.crossover.util": {"crossover_mask": unavailable},
        "pymoo.util": {}, "pymoo.util.nds": {},
        "pymoo.util.nds.non_dominated_sorting": {"NonDominatedSorting": Placeholder},
    }
    for name, attrs in names.items():
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        sys.modules[name] = mod
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, mod)


def _fast_throughput(sim: types.ModuleType) -> None:
    """Speed up two costs of the artifact's simulator without changing any number it computes.

    - ``Application.get_throughput`` for a placement absent from the placement traces builds a 3-D Delaunay
      interpolator over the same points at every call (0.5 s each; the results are memoized, but the elastic
      policies meet hundreds of new placements). Here the interpolator is built once per model from the very
      same points, and the function is otherwise the artifact's, memoized as there.
    - ``fit_perf_params`` (its goodput model's fit, 0.7 s per new configuration met) only feeds the Pollux
      policy's speedup function and, for a job without a fixed batch size, its batch size choice; every job of
      the Tiresias and Optimus views (and ours) has a fixed batch size and no policy here reads the fit, so it
      is skipped (``perf_params`` stays ``None``).

    Checked: the artifact's own Tiresias and Optimus reproduce their recorded per-job JCTs with this on.
    """
    from scipy.interpolate import LinearNDInterpolator, interp1d

    apps = importlib.import_module("applications")
    xs, ys = ["num_nodes", "num_replicas", "local_bsz"], ["step_time", "sync_time"]
    nd: dict[int, Any] = {}
    memo: dict[tuple, Any] = {}

    def get_throughput(self, placement, local_bsz):
        key = (self, placement, local_bsz)
        if key in memo:
            return memo[key]
        pl = tuple(filter(None, placement))
        pl = min(pl[i:] + pl[:i] for i in range(len(pl)))
        placement_id = int("".join(map(str, pl)))
        if placement_id in self.placements.placement.values:
            df = self.placements[self.placements.placement == placement_id]
            ret = interp1d(df.local_bsz.values, df[ys].values, axis=0)(local_bsz)
        else:
            if id(self) not in nd:
                df = self.placements.groupby(xs)[xs + ys].mean()
                df = df.append(self.scalability, ignore_index=True)
                nd[id(self)] = LinearNDInterpolator(df[xs].values, df[ys].values)
            ret = nd[id(self)]([min(len(pl), 16), sum(pl), local_bsz])[0]
        assert sum(ret) == sum(ret), f"{self.name} {pl} {local_bsz}"
        memo[key] = ret
        return ret

    apps.Application.get_throughput = get_throughput
    sim.fit_perf_params = lambda *_a, **_k: None


def simulator_dir(artifact: str | os.PathLike) -> Path:
    """The artifact's ``simulator/`` folder: ``artifact`` itself or its ``simulator`` child."""
    path = Path(artifact)
    for cand in (path, path / "simulator"):
        if (cand / "simulator.py").is_file() and (cand / "optimus.py").is_file():
            return cand
    raise FileNotFoundError(f"{artifact}: no simulator/simulator.py of the Pollux artifact there")


def load_artifact(artifact: str | os.PathLike, *, fast: bool = True) -> types.ModuleType:
    """Import the artifact's ``simulator.py`` (and its siblings) from ``artifact``, with the shims above (and,
    with ``fast``, :func:`_fast_throughput`)."""
    sim_dir = simulator_dir(artifact)
    _shim_pandas()
    _shim_pymoo()
    if str(sim_dir) not in sys.path:
        sys.path.insert(0, str(sim_dir))
    sim = importlib.import_module("simulator")
    if fast:
        _fast_throughput(sim)
    return sim


# ------------------------------------------------------------------------------------------------ the policy
def make_policy(sim: types.ModuleType, *, objective: str, allocation: str, remaining: str = "exact"):
    """A policy class for the artifact's simulator: a subclass of its ``OptimusPolicy`` (so its ``Cluster``
    gives it the Optimus job view) whose ``optimize`` asks :func:`lyra_solver.decide`."""
    from lyra_solver import decide, parse_snapshot

    base = sim.OptimusPolicy

    class LyraPolicy(base):
        """``optimize(jobs, nodes, prev_allocations, node_template) -> (allocations, len(nodes))``, the
        interface of the artifact's policies; ``cluster`` is set by the run (for progress within an epoch)."""

        def __init__(self):
            super().__init__()
            self.cluster = None
            self._tables: dict[tuple[str, int, int], tuple[float, ...]] = {}
            self._remaining = RemainingIterations()
            self.decide_s: list[float] = []
            self.rounds = 0

        def _table(self, info, cap: int) -> tuple[float, ...]:
            key = (info.application.name, int(info.target_batch_size), min(int(info.max_replicas), cap))
            if key not in self._tables:
                self._tables[key] = step_times(self.predict_step_time, info, cap)
            return self._tables[key]

        def optimize(self, jobs, nodes, prev_allocations, node_template=None):
            gpus = {idx: int(node.resources["nvidia.com/gpu"]) for idx, node in nodes.items()}
            by_name = {job.name: job for job in self.cluster.jobs} if self.cluster is not None else {}
            views = []
            for name, info in jobs.items():
                app, bsz = info.application, info.target_batch_size
                table = self._table(info, sum(gpus.values()))
                if remaining == "exact" and name in by_name:
                    left = self._remaining(app, bsz, by_name[name].epoch, by_name[name].progress)
                else:
                    left = optimus_remaining(app, bsz, info.epoch)
                views.append(JobView(name, info.creation_timestamp, table, left))
            prev = {k: v for k, v in prev_allocations.items() if k in jobs}
            now = self.cluster.current_time if self.cluster is not None else 0.0
            snap = build_snapshot(now, views, prev, gpus, objective=objective, allocation=allocation)
            t0 = time.perf_counter()
            decision = decide(parse_snapshot(json.dumps(snap).encode()), deterministic=True)
            self.decide_s.append(time.perf_counter() - t0)
            self.rounds += 1
            return decision_to_allocations(decision.jobs, prev), len(nodes)

    return LyraPolicy


def run(sim: types.ModuleType, workload: str, policy: str = "lyra", *, objective: str = "jct-reduction",
        allocation: str = "greedy", remaining: str = "exact", quiet: bool = True) -> dict[str, Any]:
    """One run of the artifact's ``simulate()`` on ``workload`` with ``policy`` (``lyra``: ours; ``tiresias``
    or ``optimus``: the artifact's own, unchanged). Returns the JCTs, their mean, restarts and timings."""
    args = argparse.Namespace(workload=workload, policy="optimus" if policy == "lyra" else policy,
                              min_nodes=NUM_NODES, max_nodes=None, interval=INTERVAL, interference=0.0,
                              num_gpus=NODE_GPUS, low_util=None, high_util=None, output=None)
    saved = sim.OptimusPolicy, sim.Cluster
    made: list[Any] = []
    ours = (make_policy(sim, objective=objective, allocation=allocation, remaining=remaining)
            if policy == "lyra" else None)

    class TellingCluster(saved[1]):
        """The artifact's ``Cluster``, telling the policy which cluster it schedules."""

        def __init__(self, workload, policy, *a, **k):
            super().__init__(workload, policy, *a, **k)
            policy.cluster = self
            made.append(self)

    t0 = time.perf_counter()
    try:
        if ours is not None:
            sim.OptimusPolicy = ours
        sim.Cluster = TellingCluster
        with open(os.devnull, "w") as sink, (contextlib.redirect_stdout(sink) if quiet else contextlib.nullcontext()):
            logs, jcts = sim.simulate(args)
    finally:
        sim.OptimusPolicy, sim.Cluster = saved
    wall = time.perf_counter() - t0
    cluster = made[0]
    out: dict[str, Any] = {
        "workload": str(workload), "policy": policy, "jobs": len(jcts),
        "mean_jct_s": sum(jcts.values()) / len(jcts), "restarts": sum(j.num_restarts or 0 for j in cluster.jobs),
        "makespan_s": cluster.current_time, "wall_s": round(wall, 1), "jcts": dict(sorted(jcts.items())),
    }
    if policy == "lyra":
        pol = cluster.policy
        ds = sorted(pol.decide_s)
        pct = {"p50": ds[len(ds) // 2], "p99": ds[int(0.99 * (len(ds) - 1))]} if ds else {}
        out.update(objective=objective, allocation=allocation, remaining=remaining, rounds=pol.rounds,
                   decide_ms={k: round(1e3 * v, 2) for k, v in pct.items()}, decide_total_s=round(sum(ds), 1))
    return out


def recorded(sim_dir: Path, workload: str) -> dict[str, float]:
    """The artifact's recorded mean JCT of each policy for ``workload`` when it is one of its
    ``workloads[-LOAD]/workload-N.csv`` files (by name; load 1.0 for ``workloads/``), else empty."""
    path = Path(workload)
    folder, name = path.parent.name, path.stem
    load = "1.0" if folder == "workloads" else folder.removeprefix("workloads-")
    out = {}
    for pol in ("tiresias", "optimus", "pollux"):
        summary = sim_dir / "results-jobload" / f"{pol}-{load}" / "summary.json"
        if summary.is_file():
            avgs = json.loads(summary.read_text()).get("avgs", {})
            if name in avgs:
                out[pol] = float(avgs[name])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from lyra_solver import ALLOCATIONS, OBJECTIVES

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--artifact", required=True, help="the Pollux artifact: its simulator/ folder or the folder above")
    p.add_argument("--workload", required=True, help="a workload CSV (name,time,application,num_replicas,batch_size)")
    p.add_argument("--policy", choices=POLICIES, default="lyra",
                   help="lyra (default: decide as the policy) or the artifact's own tiresias / optimus")
    p.add_argument("--objective", choices=OBJECTIVES, default=OBJECTIVES[0])
    p.add_argument("--allocation", choices=ALLOCATIONS, default="greedy")
    p.add_argument("--remaining", choices=("exact", "epoch"), default="exact",
                   help="iterations left: the simulator's truth (exact) or the artifact's Optimus oracle (epoch)")
    p.add_argument("--out", help="write the result (per-job JCTs included) as JSON here")
    p.add_argument("--verbatim", action="store_true",
                   help="run the artifact's step-time interpolation and goodput fit as published "
                        "(slow; the same numbers)")
    p.add_argument("--verbose", action="store_true", help="let the artifact print its per-round log")
    a = p.parse_args(argv)
    try:
        sim_dir = simulator_dir(a.artifact)
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not Path(a.workload).is_file():
        print(f"error: {a.workload}: no such workload file", file=sys.stderr)
        return 2
    sim = load_artifact(sim_dir, fast=not a.verbatim)
    res = run(sim, a.workload, a.policy, objective=a.objective, allocation=a.allocation,
              remaining=a.remaining, quiet=not a.verbose)
    res["recorded_mean_jct_s"] = recorded(sim_dir, a.workload)
    res["artifact"] = str(sim_dir)
    res["verbatim"] = a.verbatim
    label = a.policy if a.policy != "lyra" else f"lyra {a.objective} {a.allocation} ({a.remaining} remaining)"
    print(f"{Path(a.workload).name}: {label}: mean JCT {res['mean_jct_s']:.2f} s, {res['jobs']} jobs, "
          f"{res['restarts']} restarts, {res['wall_s']} s wall")
    for pol, val in res["recorded_mean_jct_s"].items():
        print(f"  recorded {pol}: {val:.2f} s (ratio recorded / this run: {val / res['mean_jct_s']:.3f})")
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
