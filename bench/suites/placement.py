"""Placement suite: best-fit decreasing against the exact placement ILP on generated clusters.

Methods: the rows of the placement table (:data:`lyra_solver.formulations.methods.PLACEMENT`): the exact methods
of :func:`lyra_solver.formulations.placement.solve_placement` (CP-SAT and CBC, both references) and the heuristics
(best-fit decreasing, the engine's default placement).

Instances (:func:`generate_placement`): ``S`` servers, half training and half loaned, partly used (free GPUs
8, 6, 4 or 2); jobs with 1, 2 or 4 GPUs per worker, base demand 1-3 workers and up to twice as many extra
workers, added until 85% of the free GPUs are asked for. No job runs yet (nothing to move).

Objective (minimised, lexicographic as the ILP's): ``base_on_loaned * P + spans`` with ``P`` = workers + 1, i.e.
first the base-demand workers that sit on loaned servers, then the servers spanned summed over jobs; with no
base worker on a loaned server (the usual case) it is just the spans. A placement that leaves workers unplaced
(best-fit decreasing on a fragmented cluster) has status ``no_solution`` and its unplaced workers counted.
"""
from __future__ import annotations

import numpy as np
from lyra_solver.bench.suites import Config, Instance, Method, Outcome, Suite
from lyra_solver.formulations.methods import PLACEMENT

#: The heuristics of the placement table.
HEURISTICS: tuple[str, ...] = PLACEMENT.names(kind="heuristic")


def methods() -> list[Method]:
    """The exact methods of the placement table (all third-party: references), then the heuristics."""
    return [Method(r.name, r.kind, r.reference) for r in PLACEMENT.rows if not r.alias_of and r.kind == "exact"] + [
        Method(h, "heuristic") for h in HEURISTICS]


def generate_placement(n_servers: int, seed: int, *, fill: float = 0.85):
    """A seeded :class:`PlacementProblem` (see the module docstring); running time ``O(S + J)``."""
    from lyra_solver.formulations.placement import PlacementProblem

    rng = np.random.default_rng([seed, n_servers, 17])
    free = rng.choice(np.array([8, 8, 8, 6, 4, 2]), size=n_servers)
    loaned = np.arange(n_servers) >= (n_servers + 1) // 2
    budget = fill * float(free.sum())
    workers, base, gpw = [], [], []
    asked = 0
    while True:
        g = int(rng.choice([1, 2, 4], p=[0.6, 0.3, 0.1]))
        b = int(rng.integers(1, 4))
        w = b + int(rng.integers(0, 2 * b + 1))
        if asked + g * w > budget:
            break
        asked += g * w
        workers.append(w)
        base.append(b)
        gpw.append(g)
    return PlacementProblem.build(server_free=free, server_loaned=loaned, job_workers=workers, job_base=base,
                                  job_gpus_per_worker=gpw)


def instances(cfg: Config) -> list[Instance]:
    sizes = {"tiny": ((6, (0,)),), "quick": ((10, (0,)), (20, (0,)), (40, (0,))),
             "full": ((10, (0, 1)), (20, (0, 1)), (50, (0, 1)), (100, (0, 1)), (200, (0, 1)))}[cfg.scale]
    out = []
    for n, seeds in sizes:
        for seed in seeds:
            out.append(Instance("generated", f"{n} servers seed={seed + cfg.seed}", n,
                                {"servers": n, "seed": seed + cfg.seed}))
    return out


def build(spec: dict):
    return generate_placement(spec["servers"], spec["seed"])


def solve(problem, method: str, cfg: Config) -> Outcome:
    from lyra_solver.formulations.placement import solve_placement

    total = int(problem.job_workers.sum())
    scale = total + 1
    active = int((problem.job_workers > 0).sum())
    if method in HEURISTICS:
        res = PLACEMENT.function(method)(problem)
        pl = res.placement
        unplaced = int((problem.job_workers - np.asarray(res.placed)).clip(min=0).sum())
        base, spans = pl.base_on_loaned(problem), pl.spans()
        extra = {"jobs": problem.n_jobs, "workers": total, "base on loaned": base, "spans": spans,
                 "unplaced": unplaced}
        if unplaced:
            return Outcome(status="no_solution", backend_status="fragmented", extra=extra)
        return Outcome(status="feasible", objective=float(base * scale + spans), backend_status="bfd", extra=extra)
    res = solve_placement(problem, method=method, time_limit=cfg.time_limit)
    extra = {"jobs": problem.n_jobs, "workers": total}
    bound = None
    if res.bound is not None:
        bound = float(res.bound) * scale + active  # any placement spans at least one server per placed job
    if res.objective is None:
        return Outcome(status=str(res.status), bound=bound, backend_status=res.backend_status, extra=extra)
    base, spans, _moved = res.objective
    obj = float(base * scale + spans)
    if res.status == "optimal":
        bound = obj
    extra.update({"base on loaned": base, "spans": spans, "unplaced": 0})
    return Outcome(status=str(res.status), objective=obj, bound=bound, backend_status=res.backend_status,
                   extra=extra)


NOTES = """
Reading: the objective is the spans (servers spanned summed over jobs) when no base-demand worker sits on a loaned
server, and `base on loaned x (workers + 1) + spans` otherwise (the ILP's lexicographic order). Best-fit decreasing
counts as `no_solution` where fragmentation leaves workers unplaced (`unplaced`).
"""

SUITE = Suite(name="placement", title="Placement: best-fit decreasing against the exact placement ILP", sense="min",
              methods=methods, instances=instances, build=build, solve=solve,
              detail_groups=lambda g: True, notes=NOTES)
