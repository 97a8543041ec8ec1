"""Metrics and outputs of simulation runs: summary.json, per-policy job CSVs, plots, a markdown table.

:func:`summarize` turns one :class:`.engine.SimResult` into the reproducible metrics of DESIGN "Simulation"
(JCT and queuing time mean/p50/p95/p99, makespan, deadline satisfaction, usage of each cluster, preemptions,
scaling and reclaim events);
:func:`combine` averages runs over seeds (mean, and the spread as the standard deviation); :func:`write_outputs`
writes ``summary.json`` (bytes reproducible for the same inputs and seeds), ``timings.json`` (decide times, which
are not), ``jobs-POLICY.csv``, ``segments-POLICY.csv`` (every interval of constant allocation),
``rounds-POLICY.csv`` (every round) and, with matplotlib installed, ``jct_cdf.png`` and ``timeline.png``;
:func:`markdown_table` is the stdout table with ratios to the baseline.
"""
from __future__ import annotations

import csv
import io
import json
import logging
import math
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

DIGITS = 6


def _r(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), DIGITS)


def _stats(values: list[float]) -> dict:
    if not values:
        return {"mean": None, "p50": None, "p95": None, "p99": None}
    a = np.asarray(values, dtype=np.float64)
    return {"mean": _r(a.mean()), "p50": _r(np.percentile(a, 50)), "p95": _r(np.percentile(a, 95)),
            "p99": _r(np.percentile(a, 99))}


def _usage(gs: dict, span: float, config) -> dict:
    g = config.server_gpus
    train_cap = config.training_servers * g * span
    inf_cap = config.inference_servers * g * span
    used_inf = gs["inference_serving"] + gs["inference_loaned_used"]
    usage = {
        "training": _r(gs["training_used"] / train_cap) if train_cap > 0 else None,
        "inference": _r(used_inf / inf_cap) if inf_cap > 0 else None,
        "inference_loaned": _r(gs["inference_loaned_used"] / inf_cap) if inf_cap > 0 else None,
        "total": _r((gs["training_used"] + used_inf) / (train_cap + inf_cap)) if train_cap + inf_cap > 0 else None,
        "inference_unmet_gpu_s": _r(gs["inference_unmet"]),
    }
    return usage


def summarize(result, config) -> dict:
    """Reproducible metrics of one run (no wall-clock times). ``usage``: GPU usage of each cluster over the
    whole run (first arrival to last completion); ``usage_arrivals``: the same while jobs arrive (first to last
    arrival: the loaded steady state, without the drain of the longest jobs)."""
    done = [r for r in result.jobs if r["end"] is not None]
    usage = _usage(result.gpu_seconds, result.makespan, config)
    return {
        "jobs": len(result.jobs), "completed": len(done), "makespan": _r(result.makespan),
        "jct": _stats([r["jct"] for r in done]),
        "queue": _stats([r["queue"] for r in result.jobs if r["queue"] is not None]),
        "usage": usage,
        "usage_arrivals": _usage(result.gpu_seconds_window, result.window, config),
        "deadline": _deadlines(result.jobs),
        **{k: result.counters[k] for k in sorted(result.counters)},
    }


def _deadlines(rows: list[dict]) -> dict:
    """Deadline satisfaction: of the jobs with a deadline, those that completed at or before it (a job still
    running at the end of the run missed it)."""
    with_dl = [r for r in rows if r.get("deadline") is not None]
    met = sum(1 for r in with_dl if r["met"])
    return {"jobs": len(with_dl), "met": met, "satisfaction": _r(met / len(with_dl)) if with_dl else None}


def timing(result) -> dict:
    ms = result.decide_ms
    if not ms:
        return {"rounds": 0, "p50": None, "p99": None, "mean": None, "total_s": 0.0}
    a = np.asarray(ms)
    return {"rounds": len(ms), "p50": round(float(np.percentile(a, 50)), 3),
            "p99": round(float(np.percentile(a, 99)), 3), "mean": round(float(a.mean()), 3),
            "total_s": round(float(a.sum()) / 1e3, 3)}


def _leaves(d: dict, prefix=()):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _leaves(v, (*prefix, k))
        else:
            yield (*prefix, k), v


def _put(d: dict, path, value) -> None:
    for k in path[:-1]:
        d = d.setdefault(k, {})
    d[path[-1]] = value


def combine(per_seed: list[dict]) -> dict:
    """Mean over seeds of every numeric metric, and ``spread`` (standard deviation) beside it."""
    if len(per_seed) == 1:
        return {**per_seed[0], "seeds": 1}
    out: dict = {}
    spread: dict = {}
    paths = [p for p, _ in _leaves(per_seed[0])]
    for p in paths:
        vals = []
        for s in per_seed:
            v = s
            for k in p:
                v = v[k]
            vals.append(v)
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals):
            a = np.asarray(vals, dtype=np.float64)
            _put(out, p, _r(a.mean()))
            _put(spread, p, _r(a.std()))
        else:
            _put(out, p, None)
    out["seeds"] = len(per_seed)
    out["spread"] = spread
    return out


BASES = ("baseline", "baseline-sjf")


def interval(values: list[float]) -> dict:
    """Mean and 95% confidence interval (Student's t over the runs) of ``values``; the interval is None for a
    single value."""
    a = np.asarray(values, dtype=np.float64)
    out = {"mean": _r(a.mean()), "ci95": None, "n": int(a.size)}
    if a.size >= 2:
        from scipy.stats import t as student

        half = float(student.ppf(0.975, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size))
        out["ci95"] = [_r(a.mean() - half), _r(a.mean() + half)]
    return out


def ratios(runs: dict[str, list[dict]]) -> dict:
    """``{"vs_BASE": {policy: {"jct_mean": ..., "queue_mean": ...}}}`` for each of ``baseline`` and
    ``baseline-sjf`` that the comparison holds: the base's mean over the policy's, per run (seed and slice:
    the runs of every policy line up), then :func:`interval` over the runs. A run where the policy's mean is 0 (or
    missing) gives no ratio (an infinite one); ``n`` counts the runs that gave one."""
    out = {}
    for base in BASES:
        if base not in runs:
            continue
        per = {}
        for name, rs in runs.items():
            row = {}
            for metric in ("jct", "queue"):
                vals = [b[metric]["mean"] / r[metric]["mean"] for b, r in zip(runs[base], rs, strict=True)
                        if b[metric]["mean"] is not None and r[metric]["mean"]]
                row[f"{metric}_mean"] = interval(vals) if vals else {"mean": None, "ci95": None, "n": 0}
            per[name] = row
        out[f"vs_{base}"] = per
    return out


def summary_bytes(summaries: dict[str, dict], meta: dict, ratios: dict | None = None) -> bytes:
    body = {"meta": meta, "policies": summaries}
    if ratios:
        body["ratios"] = ratios
    return (json.dumps(body, indent=2, sort_keys=True) + "\n").encode()


def jobs_csv(result) -> bytes:
    buf = io.StringIO()
    cols = ["id", "line", "submit", "gpus", "app", "min_workers", "max_workers", "work", "start", "end", "queue",
            "jct", "preemptions", "scalings", "packed", "deadline"]
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in result.jobs:
        w.writerow(["" if r[c] is None else (repr(_r(r[c])) if isinstance(r[c], float) else r[c]) for c in cols])
    return buf.getvalue().encode()


def _num(x) -> str:
    return repr(_r(x)) if isinstance(x, float) else str(x)


def segments_csv(result) -> bytes:
    """One row per job and interval of constant allocation: ``job,start,end,workers,gpus_per_worker,placement,
    packed_on``; ``placement`` is ``server:GPUs;...`` sorted by server id (a packing guest: the host's GPUs it
    shares), ``packed_on`` the host job of a guest, else empty. Rows in the order the intervals closed."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["job", "start", "end", "workers", "gpus_per_worker", "placement", "packed_on"])
    for jid, a, b, workers, placement, host in result.allocations:
        w.writerow([jid, _num(float(a)), _num(float(b)), workers, 1, ";".join(f"{s}:{n}" for s, n in placement),
                    host or ""])
    return buf.getvalue().encode()


def rounds_csv(result) -> bytes:
    """One row per round (skipped quiet rounds too): ``time,queued,running,training_gpus_used,
    loaned_gpus_used,serving_servers,idle_servers``."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["time", "queued", "running", "training_gpus_used", "loaned_gpus_used", "serving_servers",
                "idle_servers"])
    for row in result.rounds:
        w.writerow([_num(float(row[0])), *row[1:]])
    return buf.getvalue().encode()


def _write(path: Path, data: bytes) -> None:
    from lyra_solver.bench.outputs import write_file

    write_file(path, data)  # a unique temporary name made exclusively in the folder: a planted link is not followed


def _savefig(fig, path: Path) -> None:
    import io as _io

    buf = _io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    _write(path, buf.getvalue())


def write_outputs(out: Path, summaries: dict[str, dict], timings: dict[str, list[dict]], results: dict,
                  config, meta: dict, ratios: dict | None = None) -> list[Path]:
    """Write the files of ``--out``; returns the paths written. ``results``: one SimResult per policy (the
    first seed's), for the job CSVs and the plots."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, res in results.items():
        for kind, data in (("jobs", jobs_csv(res)), ("segments", segments_csv(res)), ("rounds", rounds_csv(res))):
            p = out / f"{kind}-{name}.csv"
            _write(p, data)
            written.append(p)
    p = out / "summary.json"
    _write(p, summary_bytes(summaries, meta, ratios))
    written.append(p)
    p = out / "timings.json"
    _write(p, (json.dumps({"decide_ms": timings}, indent=2, sort_keys=True) + "\n").encode())
    written.append(p)
    written += plots(out, results, config)
    return written


def plots(out: Path, results: dict, config) -> list[Path]:
    """JCT CDF per policy; queue length and usage of each cluster over time. Skipped without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("plots skipped: matplotlib is not installed (pip install 'lyra-solver[bench]')")
        return []
    written = []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, res in results.items():
        jct = np.sort([r["jct"] for r in res.jobs if r["jct"] is not None])
        if jct.size:
            ax.plot(jct / 3600.0, np.arange(1, jct.size + 1) / jct.size, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (hours)")
    ax.set_ylabel("fraction of jobs")
    ax.grid(alpha=0.3)
    ax.legend()
    p = out / "jct_cdf.png"
    fig.tight_layout()
    _savefig(fig, p)
    plt.close(fig)
    written.append(p)

    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    tg = max(1, config.training_servers * config.server_gpus)
    ig = max(1, config.inference_servers * config.server_gpus)
    for name, res in results.items():
        if not res.series:
            continue
        s = np.asarray(res.series, dtype=np.float64)
        step = max(1, s.shape[0] // 4000)
        s = s[::step]
        hours = (s[:, 0] - s[0, 0]) / 3600.0
        axes[0].plot(hours, s[:, 1], label=name, lw=0.8)
        axes[1].plot(hours, s[:, 2] / tg, label=name, lw=0.8)
        axes[2].plot(hours, (s[:, 3] + s[:, 4]) / ig, label=name, lw=0.8)
    axes[0].set_ylabel("queued jobs")
    axes[1].set_ylabel("training usage")
    axes[2].set_ylabel("inference usage")
    axes[2].set_xlabel("hours")
    axes[0].legend(fontsize=7, ncol=4)
    for a in axes:
        a.grid(alpha=0.3)
    p = out / "timeline.png"
    fig.tight_layout()
    _savefig(fig, p)
    plt.close(fig)
    written.append(p)
    return written


def _ratio(base, x) -> str:
    if base is None or x is None or x == 0:
        return "-"
    return f"{base / x:.2f}x"


def _fmt(x, scale=1.0, digits=0) -> str:
    return "-" if x is None else f"{x / scale:,.{digits}f}"


def _met(d: dict | None) -> str:
    if not d or d.get("satisfaction") is None:
        return "-"
    return f"{d['satisfaction'] * 100:.1f}%"


def _ci(r: dict | None) -> str:
    if r is None or r["mean"] is None:
        return "-"
    if r["ci95"] is None:
        return f"{r['mean']:.2f}x"
    return f"{r['mean']:.2f}x [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]"


def markdown_table(summaries: dict[str, dict], timings: dict[str, list[dict]] | None = None,
                   baseline: str = "baseline", ratios: dict | None = None) -> str:
    """One row per policy: JCT and queuing (hours) with the baseline's value divided by the policy's (higher
    is better), usage of each cluster and in all, its change from the baseline, events and decide time. With
    ``ratios`` (:func:`ratios`), the JCT and queue ratios against ``baseline`` and ``baseline-sjf`` are the
    mean over runs with its 95% interval when there are several runs."""
    base = summaries.get(baseline)
    vs = [b for b in BASES if ratios and f"vs_{b}" in ratios]
    extra = "".join(f"JCT vs {b} | queue vs {b} | " for b in vs)
    head = ("| policy | mean JCT (h) | " + (extra if vs else "JCT vs baseline | ") + "mean queue (h) | "
            + ("" if vs else "queue vs baseline | ") + "p99 JCT (h) | "
            "usage training* | usage inference* | usage total* | usage vs baseline | preemptions | scalings | "
            "reclaims | packed** | makespan (h) | deadlines met | decide p50/p99 (ms) |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name, s in summaries.items():
        bj = base["jct"]["mean"] if base else None
        bq = base["queue"]["mean"] if base else None
        bu = base["usage_arrivals"]["total"] if base else None
        u = s["usage_arrivals"]
        du = "-" if bu in (None, 0) or u["total"] is None else f"{(u['total'] / bu - 1) * 100:+.1f}%"
        t = (timings or {}).get(name)
        tm = "-"
        if t:
            p50 = np.mean([x["p50"] for x in t if x["p50"] is not None] or [math.nan])
            p99 = np.mean([x["p99"] for x in t if x["p99"] is not None] or [math.nan])
            tm = f"{p50:.1f} / {p99:.1f}"
        if vs:
            rat = "".join(f"{_ci(ratios[f'vs_{b}'][name]['jct_mean'])} | "
                          f"{_ci(ratios[f'vs_{b}'][name]['queue_mean'])} | " for b in vs)
            lines.append(
                f"| {name} | {_fmt(s['jct']['mean'], 3600, 2)} | {rat}{_fmt(s['queue']['mean'], 3600, 2)} | "
                f"{_fmt(s['jct']['p99'], 3600, 1)} | {_fmt(u['training'], 0.01, 1)}% | "
                f"{_fmt(u['inference'], 0.01, 1)}% | {_fmt(u['total'], 0.01, 1)}% | {du} | "
                f"{_fmt(s['preemptions'])} | {_fmt(s['scaling_events'])} | {_fmt(s['reclaim_events'])} | "
                f"{_fmt(s.get('packed'))} | {_fmt(s.get('makespan'), 3600, 1)} | {_met(s.get('deadline'))} | "
                f"{tm} |")
            continue
        lines.append(
            f"| {name} | {_fmt(s['jct']['mean'], 3600, 2)} | {_ratio(bj, s['jct']['mean'])} | "
            f"{_fmt(s['queue']['mean'], 3600, 2)} | {_ratio(bq, s['queue']['mean'])} | "
            f"{_fmt(s['jct']['p99'], 3600, 1)} | {_fmt(u['training'], 0.01, 1)}% | "
            f"{_fmt(u['inference'], 0.01, 1)}% | {_fmt(u['total'], 0.01, 1)}% | {du} | "
            f"{_fmt(s['preemptions'])} | {_fmt(s['scaling_events'])} | {_fmt(s['reclaim_events'])} | "
            f"{_fmt(s.get('packed'))} | {_fmt(s.get('makespan'), 3600, 1)} | {_met(s.get('deadline'))} | {tm} |")
    lines.append("")
    lines.append("*usage while jobs arrive (first to last arrival); JCT/queue ratios: baseline / policy, "
                 "higher is better; **packed: job-rounds run as a packing guest")
    return "\n".join(lines)
