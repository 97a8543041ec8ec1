"""Packing suite: Gimbal's greedy, Lucid's and Gandiva's pairing against the exact packing (CP-SAT).

Instances: crowded clusters (``lyra-solver generate`` snapshots, 70% of jobs running), every job with a packing
profile, half of them with a deadline between 0.8 and 3 times their remaining time at ``min_workers``; steps
1-5 of :func:`~lyra_solver.decide` run first and the jobs still waiting are the guests of step 6
(:func:`lyra_solver.steps.pack.packing_instance`). Two sources of profiles:

- ``generated``: ``gpu_util`` uniform over {0.23, 0.32, 0.47, 0.65, 0.81, 1.0}, ``gpu_mem_gb`` uniform in [1, 40];
- ``alibaba``: ``gpu_util`` drawn from the 3,078 fractional single-GPU pods of Alibaba's GPU-sharing trace
  (``shared/data/alibaba/openb_pod_list_default.csv``, ``gpu_milli / 1000``) and ``gpu_mem_gb = 48 gpu_util``
  (the trace shares a GPU's memory with its compute; 48 GB is an assumption, on 80 GB GPUs).

One group per (source, policy). Objective (maximised) as :mod:`lyra_solver.formulations.packing` defines it;
for ``jct`` it is multiplied by the median remaining time of the instance's jobs, so that it counts "jobs'
worth of progress per median job" and the harness's gap (relative to ``max(1, |bound|)``) is relative.
Columns: guests and hosts of the instance, candidate pairs, guests packed (jobs admitted by packing), search
steps (squeeze/swell steps of Gimbal's greedy; CP-SAT branches).
"""
from __future__ import annotations

import csv
import json
from functools import cache

import numpy as np
from lyra_solver.bench.suites import Config, Instance, Method, Outcome, Suite, outcome_of
from lyra_solver.formulations.methods import PACKING

__all__ = ["SUITE", "alibaba_pods", "crowded_snapshot"]

#: The heuristics of the packing table (:data:`lyra_solver.formulations.methods.PACKING`).
HEURISTICS: tuple[str, ...] = PACKING.names(kind="heuristic")
POLICIES = ("jct", "deadline", "makespan")
GENERATED_UTILS = (0.23, 0.32, 0.47, 0.65, 0.81, 1.0)


@cache
def alibaba_pods() -> tuple[tuple[float, float], ...] | None:
    """``(gpu_util, gpu_mem_gb)`` of each fractional single-GPU pod of the Alibaba trace; None if it is absent."""
    from lyra_solver.bench.datapath import shared_data

    path = shared_data("alibaba", "openb_pod_list_default.csv")
    if not path.exists():
        return None
    out = []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            milli = int(row["gpu_milli"])
            if row["num_gpu"] == "1" and 0 < milli < 1000:
                u = milli / 1000.0
                out.append((u, round(48.0 * u, 1)))
    return tuple(out)


def crowded_snapshot(*, servers: int, jobs: int, seed: int, source: str = "generated") -> dict:
    """A crowded snapshot (dict) whose jobs all have packing profiles, half of them deadlines; O(jobs)."""
    from lyra_solver.bench.generate import generate_snapshot
    from lyra_solver.io import parse_snapshot
    from lyra_solver.throughput import rate_one

    raw = generate_snapshot(servers=servers, jobs=jobs, seed=seed, running_share=0.7)
    rng = np.random.default_rng([seed, 23])
    pods = alibaba_pods() if source == "alibaba" else None
    if source == "alibaba" and pods is None:
        raise FileNotFoundError("shared/data/alibaba/openb_pod_list_default.csv")
    for job in raw["jobs"]:
        if pods:
            u, mem = pods[int(rng.integers(len(pods)))]
        else:
            u, mem = float(rng.choice(GENERATED_UTILS)), float(np.round(rng.uniform(1, 40), 1))
        job["packing"] = {"gpu_util": u, "gpu_mem_gb": mem}
    snap = parse_snapshot(json.dumps(raw).encode())
    for job, parsed in zip(raw["jobs"], snap.jobs, strict=True):
        if rng.random() < 0.5:
            t = parsed.remaining_work / rate_one(parsed.throughput, parsed.min_workers,
                                                 gpus_per_worker=parsed.gpus_per_worker)
            job["deadline"] = float(np.round(raw["now"] + t * rng.uniform(0.8, 3.0), 1))
    return raw


def methods() -> list[Method]:
    return [Method("exact", "exact")] + [Method(h, "heuristic") for h in HEURISTICS]


def instances(cfg: Config) -> list[Instance]:
    sizes = {"tiny": ((4, 16, (0,)),), "quick": ((8, 40, (0, 1, 2)),),
             "full": ((8, 40, (0, 1, 2, 3, 4)), (16, 80, (0, 1, 2, 3, 4)))}[cfg.scale]
    sources = ("generated", "alibaba") if alibaba_pods() is not None else ("generated",)
    out = []
    for source in sources:
        for policy in POLICIES:
            for servers, jobs, seeds in sizes:
                for s in seeds:
                    seed = s + cfg.seed
                    out.append(Instance(f"{source}, {policy}", f"{source} {policy} {servers}x{jobs} seed={seed}",
                                        servers, {"source": source, "policy": policy, "servers": servers,
                                                  "jobs": jobs, "seed": seed}))
    return out


def build(spec: dict):
    """The packing problem of step 6 on the instance's snapshot (None when no guest can join a host)."""
    from lyra_solver.io import parse_snapshot
    from lyra_solver.pipeline import decide
    from lyra_solver.steps.pack import packing_instance

    raw = crowded_snapshot(servers=spec["servers"], jobs=spec["jobs"], seed=spec["seed"], source=spec["source"])
    snap = parse_snapshot(json.dumps(raw).encode())
    inst = packing_instance(snap, decide(snap), policy=spec["policy"])
    return None if inst is None else inst.problem


def _unit(problem) -> float:
    if problem.policy != "jct":
        return 1.0
    return float(np.median(np.concatenate([problem.host_time, problem.guest_time])))


def solve(problem, method: str, cfg: Config) -> Outcome:
    from lyra_solver.formulations.packing import solve_packing

    if problem is None:
        return Outcome(status="optimal", objective=0.0, bound=0.0, backend_status="no candidate",
                       extra={"guests": 0, "hosts": 0, "candidates": 0, "packed": 0, "steps": 0})
    if method == "exact":
        res = solve_packing(problem, method="exact", time_limit=min(cfg.time_limit, 30.0),
                            num_workers=cfg.threads, seed=cfg.seed)
    elif method == "random":  # the seeded one
        res = PACKING.function(method)(problem, seed=cfg.seed)
    else:
        res = PACKING.function(method)(problem)
    unit = _unit(problem)
    out = outcome_of(res, extra={"guests": problem.n_guests, "hosts": problem.n_hosts,
                                 "candidates": problem.n_candidates, "packed": res.packed, "steps": res.steps})
    return Outcome(status=out.status, objective=None if out.objective is None else out.objective * unit,
                   bound=None if out.bound is None else out.bound * unit, backend_status=out.backend_status,
                   extra=out.extra)


NOTES = """
Reading: a gap is the distance of a method's objective to the exact optimum (CP-SAT, proven unless its status says
`feasible`: then the gap is to its bound). `packed` is the number of waiting jobs that packing starts (jobs admitted
by packing); `steps` counts Gimbal's squeeze/swell steps and CP-SAT's branches. Lucid and random pairing keep
shares at 1.0 and pack one guest per host; Gimbal tunes the shares of whole packing sets. The `jct` objective is
scaled by the instance's median remaining time; `deadline` counts jobs predicted to meet their deadline (plus a
tie-break below 1); `makespan` sums (jobs in a set) x (the set's smallest speed) - 1 over the packing sets.
"""

SUITE = Suite(name="packing", title="Packing: Gimbal, Lucid and random pairing against the exact packing",
              sense="max", methods=methods, instances=instances, build=build, solve=solve, notes=NOTES)
