"""``simulate --sweep NAME=V1,V2,...``: the comparison repeated over one parameter, ``sweep.json`` and a plot.

:func:`parse_sweep` reads and checks the option (an unknown parameter, an empty or malformed value list, a value
the parameter's own option would refuse: :class:`~lyra_solver.InputError` naming ``--sweep``, exit 2 before any
work); :func:`run_sweep` runs the comparison at each point through a callback (a point that fails is recorded as
failed with its error and the others still run); :func:`ratio_intervals` turns the runs of a point (slices x
seeds) into each policy's ratios to the reference policies with a 95% interval; :func:`write_sweep` writes
``sweep.json`` (bytes reproducible for the same inputs) and, with matplotlib installed, ``sweep.png`` (each ratio
against the swept value, with its interval as error bars).

Parameters that can be swept (:data:`SWEEP_PARAMETERS`): ``training-servers``, ``inference-servers``,
``elastic-share`` and ``load-factor`` (the arrival rate multiplied by the factor: every submit time divided by
it, the inference load curve unchanged). Each is the option of the same name, which the point overrides.

Ratios are ``reference / policy`` for the metrics where lower is better (mean and p99 JCT, mean queuing time,
makespan; higher is better) and ``policy / reference`` for deadline satisfaction, computed per run (the same
slice and seed for both policies) and summarised over the runs (``--slices`` x ``--seeds``) as a mean with a
Student-t 95% interval (:func:`.report.interval`, as the comparison's own ratios; none with one run).
"""
from __future__ import annotations

import copy
import dataclasses
import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lyra_solver.errors import InputError

log = logging.getLogger(__name__)

__all__ = ["METRICS", "SWEEP_PARAMETERS", "PointResult", "Sweep", "parse_sweep", "ratio_intervals", "run_sweep",
           "scale_arrivals", "sweep_table", "write_sweep"]


@dataclass(frozen=True)
class _Param:
    dest: str  # the attribute of the parsed arguments that the point overrides
    kind: type
    lo: float
    lo_open: bool
    hi: float = math.inf
    what: str = ""


#: The parameters a sweep may vary: option name -> how its values are read and checked.
SWEEP_PARAMETERS: dict[str, _Param] = {
    "training-servers": _Param("training_servers", int, 1, False, what="an integer of at least 1"),
    "inference-servers": _Param("inference_servers", int, 0, False, what="an integer of at least 0"),
    "elastic-share": _Param("elastic_share", float, 0.0, False, 1.0, what="a number in [0, 1]"),
    "load-factor": _Param("load_factor", float, 0.0, True, what="a positive finite number"),
}

#: (key in a point's ratios, path in a summary, True when lower is better).
METRICS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("jct_mean", ("jct", "mean"), True),
    ("jct_p99", ("jct", "p99"), True),
    ("queue_mean", ("queue", "mean"), True),
    ("makespan", ("makespan",), True),
    ("deadline_satisfaction", ("deadline", "satisfaction"), False),
)


@dataclass(frozen=True)
class Sweep:
    """A parsed ``--sweep``: the option's name, the attribute it sets and its values in the order given."""

    name: str
    dest: str
    values: tuple


@dataclass(frozen=True)
class PointResult:
    """What the comparison at one point gives: every policy's combined summary, and its per-run summaries
    (``runs[p][k]`` is run ``k``, the same slice and seed for every policy)."""

    summaries: Mapping[str, dict]
    runs: Mapping[str, Sequence[dict]]


def parse_sweep(text: str) -> Sweep:
    """Read ``NAME=V1,V2,...`` (:data:`SWEEP_PARAMETERS` names the parameters).

    Raises
    ------
    InputError
        At ``--sweep``: no ``=``, an unknown parameter, an empty value list or value, a value of the wrong type or
        out of the parameter's range, or a value given twice.

    Examples
    --------
    >>> parse_sweep("training-servers=4,8,16")
    Sweep(name='training-servers', dest='training_servers', values=(4, 8, 16))
    >>> parse_sweep("load-factor=0.5,2").values
    (0.5, 2.0)
    """
    name, eq, rest = text.partition("=")
    name = name.strip()
    if not eq:
        raise InputError("--sweep", f"{text!r}: expected NAME=V1,V2,... (NAME one of {', '.join(SWEEP_PARAMETERS)})")
    spec = SWEEP_PARAMETERS.get(name)
    if spec is None:
        raise InputError("--sweep", f"unknown parameter {name!r} (choose from {', '.join(SWEEP_PARAMETERS)})")
    if not rest.strip():
        raise InputError("--sweep", f"{name}: empty value list (expected {name}=V1,V2,...)")
    values = []
    for item in rest.split(","):
        item = item.strip()
        if not item:
            raise InputError("--sweep", f"{name}: empty value in {rest!r}")
        try:
            v = spec.kind(item)
        except ValueError:
            v = None
        ok = v is not None and math.isfinite(v) and (v > spec.lo if spec.lo_open else v >= spec.lo) and v <= spec.hi
        if not ok:
            raise InputError("--sweep", f"{name}: {item!r} is not {spec.what}")
        if v in values:
            raise InputError("--sweep", f"{name}: value {item!r} given twice")
        values.append(v)
    return Sweep(name, spec.dest, tuple(values))


def scale_arrivals(trace: Sequence, factor: float) -> list:
    """The trace at ``factor`` times its arrival rate (``--load-factor``): every submit time divided by ``factor``
    (durations, sizes and the rows' seeds unchanged, so each row keeps its application, elasticity and profile).

    Examples
    --------
    >>> from lyra_solver.bench.sim.traces import TraceJob
    >>> [j.submit for j in scale_arrivals([TraceJob(2, 0.0, 1, 60.0, "a"), TraceJob(3, 600.0, 1, 60.0, "b")], 2.0)]
    [0.0, 300.0]
    """
    if not (factor > 0 and math.isfinite(factor)):
        raise ValueError(f"factor must be a positive finite number, got {factor}")
    if factor == 1.0:
        return list(trace)
    return [dataclasses.replace(tj, submit=tj.submit / factor) for tj in trace]


def _get(summary: Mapping, path: tuple[str, ...]):
    v = summary
    for k in path:
        if not isinstance(v, Mapping) or k not in v:
            return None
        v = v[k]
    return v if isinstance(v, int | float) and not isinstance(v, bool) else None


def ratio_intervals(runs: Mapping[str, Sequence[dict]], references: Sequence[str]) -> dict:
    """Each policy's ratio to each reference policy, per metric of :data:`METRICS`, over the runs.

    Parameters
    ----------
    runs : mapping policy -> list of per-run summaries
        Run ``k`` of every policy is the same slice and seed.
    references : sequence of str
        Policies of ``runs`` to compare against.

    Returns
    -------
    dict
        ``{reference: {policy: {metric: {"mean", "ci95", "n"}}}}`` (:func:`.report.interval`: ``ci95`` the
        Student-t 95% interval ``[lo, hi]``, None for one run); a metric missing or zero in a run (e.g. no
        deadlines, no job queued) is left out of that run, and a metric with no run left is ``None``.

    Examples
    --------
    >>> runs = {"a": [{"jct": {"mean": 10.0}}, {"jct": {"mean": 20.0}}],
    ...         "b": [{"jct": {"mean": 5.0}}, {"jct": {"mean": 10.0}}]}
    >>> ratio_intervals(runs, ["a"])["a"]["b"]["jct_mean"]
    {'mean': 2.0, 'ci95': [2.0, 2.0], 'n': 2}
    """
    from .report import interval

    out: dict = {}
    for ref in references:
        per_policy: dict = {}
        for pol, pruns in runs.items():
            metrics: dict = {}
            for key, path, lower_better in METRICS:
                vals = []
                for r_ref, r_pol in zip(runs[ref], pruns, strict=True):
                    a, b = _get(r_ref, path), _get(r_pol, path)
                    if a is None or b is None:
                        continue
                    num, den = (a, b) if lower_better else (b, a)
                    if den > 0:
                        vals.append(num / den)
                metrics[key] = interval(vals) if vals else None
            per_policy[pol] = metrics
        out[ref] = per_policy
    return out


def run_sweep(args, sweep: Sweep, compare: Callable[[object], PointResult], references: Sequence[str],
              out: Path | None = None) -> dict:
    """Run ``compare`` at every point of ``sweep`` and gather the points.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``simulate`` options; each point gets a shallow copy with ``sweep.dest`` set to the point's value
        (and ``out`` set to ``out / "NAME=VALUE"`` when ``out`` is given, so each point writes its own outputs).
    sweep : Sweep
    compare : callable
        Runs the comparison for one copy of ``args``; returns a :class:`PointResult`.
    references : sequence of str
        The policies the ratios are taken against (:func:`ratio_intervals`).
    out : Path, optional
        The sweep's output folder.

    Returns
    -------
    dict
        The sweep document (``sweep.json``): ``parameter``, ``values``, ``references``, ``points`` (one per value,
        in order: ``{"value", "status": "ok", "policies": {...}, "ratios": {...}}`` or ``{"value", "status":
        "failed", "error": "..."}``) and ``failed`` (the values whose point failed).

    Notes
    -----
    A point fails when ``compare`` raises (an :class:`~lyra_solver.InputError` of the point's value, a decision the
    checker rejects, ...): the error is logged and recorded, and the next point runs; an error marked
    ``stops_sweep`` (``--max-work`` spent) is raised at once.
    """
    points, failed = [], []
    for v in sweep.values:
        a = copy.copy(args)
        setattr(a, sweep.dest, v)
        if out is not None:
            a.out = str(out / f"{sweep.name}={v}")
        try:
            res = compare(a)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as err:  # a failing point keeps the others
            if getattr(err, "stops_sweep", False):  # but the command's bound on its work, --max-work, is spent
                raise
            msg = err.line() if isinstance(err, InputError) else f"{type(err).__name__}: {err}"
            log.error("sweep point %s=%s failed: %s", sweep.name, v, msg)
            points.append({"value": v, "status": "failed", "error": msg})
            failed.append(v)
            continue
        points.append({"value": v, "status": "ok", "policies": dict(res.summaries),
                       "ratios": ratio_intervals(res.runs, references)})
    return {"format_version": 1, "parameter": sweep.name, "values": list(sweep.values),
            "references": list(references), "points": points, "failed": failed}


def sweep_table(doc: dict, metric: str = "jct_mean") -> str:
    """A markdown table of one ratio over the sweep: a row per point, a column per (reference, policy)."""
    refs = doc["references"]
    ok = [p for p in doc["points"] if p["status"] == "ok"]
    pols = list(ok[0]["policies"]) if ok else []
    cols = [(r, p) for r in refs for p in pols if p != r]
    head = f"| {doc['parameter']} | " + " | ".join(f"{p} vs {r}" for r, p in cols) + " |"
    lines = [head, "|" + "---|" * (len(cols) + 1)]
    for pt in doc["points"]:
        if pt["status"] != "ok":
            lines.append(f"| {pt['value']} | " + " | ".join("failed" for _ in cols) + " |")
            continue
        cells = []
        for r, p in cols:
            iv = pt["ratios"][r][p][metric]
            cells.append("n/a" if iv is None or iv["mean"] is None else
                         f"{iv['mean']:.2f}x" + (f" [{iv['ci95'][0]:.2f}, {iv['ci95'][1]:.2f}]" if iv["ci95"] else ""))
        lines.append(f"| {pt['value']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_sweep(out: Path, doc: dict) -> list[Path]:
    """Write ``sweep.json`` (and ``sweep.png`` with matplotlib) into ``out``; returns the paths written.

    Each file is written to a temporary name and renamed, so no partial file is left behind."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "sweep.json"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes((json.dumps(doc, indent=2, sort_keys=True) + "\n").encode())
    tmp.replace(path)
    written = [path]
    try:
        import matplotlib
    except ImportError:
        log.warning("matplotlib is not installed: no sweep.png")
        return written
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [p for p in doc["points"] if p["status"] == "ok"]
    keys = [k for k, _, _ in METRICS
            if any(iv is not None for p in ok for by in p["ratios"].values() for m in by.values()
                   for kk, iv in m.items() if kk == k)]
    if not ok or not keys:
        return written
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.6), squeeze=False)
    pols = list(ok[0]["policies"])
    for ax, key in zip(axes[0], keys, strict=True):
        for ref in doc["references"]:
            for pol in pols:
                if pol == ref:
                    continue
                xs, ys, lo, hi = [], [], [], []
                for p in ok:
                    iv = p["ratios"][ref][pol][key]
                    if iv is None or iv["mean"] is None:
                        continue
                    xs.append(p["value"])
                    ys.append(iv["mean"])
                    lo.append(iv["mean"] - iv["ci95"][0] if iv["ci95"] else 0.0)
                    hi.append(iv["ci95"][1] - iv["mean"] if iv["ci95"] else 0.0)
                if xs:
                    ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=f"{pol} vs {ref}")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xlabel(doc["parameter"])
        ax.set_title(key.replace("_", " ") + " ratio")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("ratio (higher is better), 95% interval")
    fig.tight_layout()
    png = out / "sweep.png"
    tmp = png.with_name("sweep.tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(png)
    written.append(png)
    return written
