"""Speeds of jobs that share GPUs under a decision's packing groups.

:func:`packed_rates`: a host's workers on shared GPUs run at the host's speed of the pair, the others at 1; a
guest's workers all share (:func:`lyra_solver.formulations.packing.pair_speed` with the decision's shares,
:func:`lyra_solver.formulations.packing.job_rate` over the workers, sample stealing as the options say). A pair
counts while both of its jobs run: once one completes the other runs unshared. Running time O(P + W) for P
groups and W workers of packed jobs.
"""
from __future__ import annotations

from lyra_solver.formulations.packing import job_rate, pair_speed


def _shared_at(groups) -> dict[str, tuple[str, tuple[tuple[str, int], ...]]]:
    """Packing guest -> (its host, the (server, GPUs) it shares with it), from a decision's packing groups."""
    at: dict[str, tuple[str, list]] = {}
    for g in groups:
        for guest in g.jobs[1:]:
            at.setdefault(guest, (g.jobs[0], []))[1].append((g.server, g.gpus))
    return {k: (h, tuple(sorted(v))) for k, (h, v) in at.items()}


def packed_rates(groups, by_id: dict, opts, solo) -> dict[str, float]:
    """The rate of each running job that shares GPUs, by id. ``by_id``: running jobs by id (.jobs.SimJob);
    ``opts``: the snapshot options (pair speeds, overhead, sample stealing); ``solo(job)``: its unshared rate."""
    measured = opts.pair_speed or {}
    speeds: dict[str, list[float]] = {}
    for g in groups:
        h, q = by_id.get(g.jobs[0]), by_id.get(g.jobs[1])
        if h is None or q is None:
            continue
        m = measured.get(f"{h.spec.app}|{q.spec.app}")
        rev = measured.get(f"{q.spec.app}|{h.spec.app}")
        m = m if m is not None else (rev[::-1] if rev is not None else None)
        sh, sq = pair_speed(h.spec.gpu_util, q.spec.gpu_util, g.shares[h.spec.id], g.shares[q.spec.id],
                            overhead=opts.packing_overhead, measured_a=None if m is None else m[0],
                            measured_b=None if m is None else m[1])
        speeds.setdefault(h.spec.id, []).extend([float(sh)] * g.gpus)
        speeds.setdefault(q.spec.id, []).extend([float(sq)] * g.gpus)
    out = {}
    for jid, sp in speeds.items():
        j = by_id[jid]
        w = max(j.workers, len(sp))
        out[jid] = float(job_rate(solo(j), sp + [1.0] * (w - len(sp)), sample_stealing=opts.sample_stealing))
    return out
