"""Reclaim suite: Lyra's greedy reclaim and the baselines against the exact reclamation ILP.

Methods: the rows of the reclaim table (:data:`lyra_solver.formulations.methods.RECLAIM`): the exact methods of
:func:`lyra_solver.formulations.reclaim.solve_reclaim` (CP-SAT and CBC, both third-party solvers, so both are
references) and the heuristics of :mod:`lyra_solver.heuristics.reclaim` (Lyra's greedy, fewest jobs first,
random).

Groups (``--quick`` sizes in brackets), as in the former ``reclaim_bench``:

* ``generated``: clusters of 100 to 2,000 loaned servers [100, 200] (3 seeds [1]), reclaiming 1%, 5%, 10% and
  25% [5%, 20%] of them (:func:`lyra_solver.bench.reclaim_instances.generate_cluster`);
* ``alibaba``: every rise of the Alibaba GenAI inference load between 5-minute windows, scaled to 500 [100]
  inference servers, all loaned (all 117 rises [the first 4]), on 10 generated clusters in turn;
* ``target``: 1,000 loaned servers x ~3,200 jobs, reclaiming 10 to 500 servers, 3 seeds [100 servers, seed 0];
* ``stress`` (full only): 1,000 servers, 3,000 / 5,000 jobs scattered on 1-3 random servers.

The objective is the reclaim cost (seconds of restart and preemption, minimised); the gap is
``(cost - best bound) / max(1, best bound)``, the figure the former benchmark printed.
"""
from __future__ import annotations

import numpy as np
from lyra_solver.bench.suites import Config, Instance, Method, Outcome, Suite, Target, outcome_of
from lyra_solver.bench.suites._judge import NOT_MEASURED
from lyra_solver.formulations.methods import RECLAIM

#: The heuristics of the reclaim table (``random`` takes the instance's seed).
HEURISTICS: tuple[str, ...] = RECLAIM.names(kind="heuristic")


def methods() -> list[Method]:
    """The exact methods of the reclaim table (all third-party: references), then the heuristics."""
    return [Method(r.name, r.kind, r.reference) for r in RECLAIM.rows if not r.alias_of and r.kind == "exact"] + [
        Method(h, "heuristic") for h in HEURISTICS]


def instances(cfg: Config) -> list[Instance]:
    from lyra_solver.bench.reclaim_instances import alibaba_load_curve, default_qps_path, reclaim_events

    s0 = cfg.seed
    out: list[Instance] = []
    if cfg.scale == "tiny":
        sizes, seeds, fractions, event_servers, max_events = [20], 1, [0.2], 20, 1
    elif cfg.scale == "quick":
        sizes, seeds, fractions, event_servers, max_events = [100, 200], 1, [0.05, 0.2], 100, 4
    else:
        sizes, seeds, fractions, event_servers, max_events = [100, 250, 500, 1000, 2000], 3, [0.01, 0.05, 0.1, 0.25], \
            500, 0
    for size in sizes:
        for seed in range(seeds):
            for frac in fractions:
                count = max(1, int(round(frac * size)))
                out.append(Instance("generated", f"cluster {size} loaned seed={seed + s0} reclaim {count}", size,
                                    {"kind": "cluster", "n": size, "seed": seed + s0, "count": count}))
    qps = default_qps_path()
    if qps.exists():
        events = reclaim_events(alibaba_load_curve(qps, window_s=300.0), event_servers)
        if max_events > 0:
            events = events[:max_events]
        pool = min(10, max(1, len(events)))
        for i, k in enumerate(events.tolist()):
            out.append(Instance("alibaba", f"alibaba rise {i} on {event_servers} loaned: reclaim {k}", event_servers,
                                {"kind": "cluster", "n": event_servers, "seed": 1000 + (i % pool) + s0,
                                 "count": int(k), "random_seed": i}))
    if cfg.scale != "tiny":
        for seed in range(3) if cfg.scale == "full" else (0,):
            for count in (10, 50, 100, 250, 500) if cfg.scale == "full" else (100,):
                out.append(Instance("target", f"1000 loaned x ~3200 jobs seed={seed + s0} reclaim {count}", 1000,
                                    {"kind": "cluster", "n": 1000, "seed": seed + s0, "count": count,
                                     "n_training": 500, "gpu_mix": [0.9, 0.08, 0.02]}))
    if cfg.scale == "full":
        for n_jobs in (3000, 5000):
            for count in (20, 100, 300):
                out.append(Instance("stress", f"scattered 1000 x {n_jobs} seed={s0} reclaim {count}", 1000,
                                    {"kind": "scattered", "n": 1000, "jobs": n_jobs, "seed": s0, "count": count}))
    return out


def build(spec: dict):
    """``(ReclaimProblem, seed of the random baseline)``."""
    from lyra_solver.bench.reclaim_instances import generate_cluster, generate_scattered, with_count

    if spec["kind"] == "scattered":
        return generate_scattered(spec["n"], spec["jobs"], spec["seed"], count=spec["count"]), spec["seed"]
    kw = {}
    if "n_training" in spec:
        kw["n_training"] = spec["n_training"]
    if "gpu_mix" in spec:
        kw["gpu_mix"] = tuple(spec["gpu_mix"])
    inst = generate_cluster(spec["n"], spec["seed"], **kw)
    return with_count(inst.problem, spec["count"]), spec.get("random_seed", spec["seed"])


def solve(built, method: str, cfg: Config) -> Outcome:
    from lyra_solver.formulations.reclaim import solve_reclaim

    problem, seed = built
    if method in HEURISTICS:
        fn = RECLAIM.function(method)
        res = fn(problem, seed) if method == "random" else fn(problem)
    else:
        res = solve_reclaim(problem, method=method, time_limit=cfg.time_limit)
    return outcome_of(res, extra={"jobs": problem.n_jobs, "preemptions": res.preemptions})


def _target_10s(rows: list[dict], config: dict) -> tuple[str, str]:
    rs = [r for r in rows if r["group"] == "target" and r["kind"] == "exact"]
    if not rs:
        return NOT_MEASURED, "no target instance in this run (`lyra-solver bench reclaim`)"
    worst = {}
    for r in rs:
        worst[r["method"]] = max(worst.get(r["method"], 0.0), r["time_s"] or float("inf"))
    ok = all(r["status"] == "optimal" for r in rs) and min(worst.values()) <= 10.0
    return ("met" if ok else "not met"), ", ".join(f"{m}: slowest {t:.2f} s" for m, t in worst.items())


def _greedy_gap(rows: list[dict], config: dict) -> tuple[str, str]:
    gaps = [r["gap"] for r in rows if r["method"] == "greedy" and r.get("gap") is not None]
    if not gaps:
        return NOT_MEASURED, "no greedy row with a proven bound"
    return "measured", (f"greedy gap median {100 * float(np.median(gaps)):.2f}%, p95 "
                        f"{100 * float(np.percentile(gaps, 95)):.2f}%, worst {100 * max(gaps):.2f}% "
                        f"over {len(gaps)} instances")


TARGETS = (
    Target(4, "exact reclamation on 1,000 loaned servers x ~3,200 jobs proven within 10 s", _target_10s),
    Target(4, "Lyra's greedy reclaim: cost gap to the proven optimum (reported)", _greedy_gap),
)

NOTES = """
Reading: the gap is (heuristic cost - best bound) / max(1, best bound); a large percentage on a small optimum
is a few seconds of restart time. `preemptions (mean)` compares how many jobs each method preempts (the exact
model minimises cost first, then preemptions). The stress rows scatter each job over random servers, which no
scheduler would do.
"""

SUITE = Suite(name="reclaim", title="Reclamation: Lyra's greedy and baselines against the exact ILP", sense="min",
              methods=methods, instances=instances, build=build, solve=solve, targets=TARGETS,
              detail_groups=lambda g: g in ("target", "stress"), notes=NOTES)
