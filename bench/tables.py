"""Markdown tables of benchmark rows (:mod:`lyra_solver.bench.harness`, the suites of :mod:`lyra_solver.bench.suites`):
a line per row in detail groups, a line per method in summary groups (status counts, gap and time distributions,
median speed-ups), and the targets table.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lyra_solver.bench.suites import Suite

__all__ = ["clip", "detail_table", "suite_tables", "summary_table", "targets_table"]

#: Most characters of a row's note (a refusal's reason, an error) shown in a table cell.
NOTE_CHARS = 120


def clip(text: str, limit: int = NOTE_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis when cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 3]
    if " " in cut and not text[limit - 3].isspace():
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "..."

def _num(x: float | None, digits: int = 6) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e15):
        return f"{int(x)}"
    return f"{x:.{digits}g}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100.0 * x:.3g}%"


def _secs(x: float | None) -> str:
    if x is None:
        return "-"
    if x < 0.001:
        return f"{x:.2g}"
    return f"{x:.4f}" if x < 0.1 else f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _ratio(s: dict | None) -> str:
    if not s:
        return "-"
    return (">=" if s["at_least"] else "") + (f"{s['ratio']:.1f}x" if s["ratio"] < 100 else f"{s['ratio']:.0f}x")


def _table(header: list[str], lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "/") for c in cells) + " |" for cells in lines]
    return "\n".join(out)


def _columns(rows: list[dict], key: str) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        for k in r.get(key) or {}:
            seen.setdefault(k, None)
    return list(seen)


def detail_table(rows: list[dict], refs: list[str]) -> str:
    """One line per (instance, method)."""
    stats, extra = _columns(rows, "stats"), _columns(rows, "extra")
    header = (["instance", "method", "status", "objective", "best bound", "gap", "time s"]
              + [f"vs {r}" for r in refs] + extra + stats)
    lines = []
    for r in rows:
        status = r["status"] + (f" ({r['backend_status']})" if r.get("backend_status") else "")
        if r.get("note"):
            status += f" [{clip(r['note'])}]"
        lines.append([r["instance"], r["method"], status, _num(r.get("objective"), 10), _num(r.get("best_bound"), 10),
                      _pct(r.get("gap")), _secs(r.get("time_s"))]
                     + [_ratio(r["speedup"].get(ref)) if r["method"] != ref else "-" for ref in refs]
                     + [_num((r.get("extra") or {}).get(k), 4) for k in extra]
                     + [_num((r.get("stats") or {}).get(k), 4) for k in stats])
    return _table(header, lines)


def _dist(values: list[float], fmt: Callable[[float], str]) -> str:
    if not values:
        return "-"
    s = sorted(values)
    p95 = s[min(len(s) - 1, math.ceil(0.95 * len(s)) - 1)]
    return f"{fmt(statistics.median(s))} / {fmt(p95)} / {fmt(s[-1])}"


def summary_table(rows: list[dict], refs: list[str], methods: list[str]) -> str:
    """One line per method over a group of instances: statuses, gap and time distributions, speed-ups."""
    stats, extra = _columns(rows, "stats"), _columns(rows, "extra")
    header = (["method", "instances", "optimal / feasible / other", "gap % (median / p95 / worst)",
               "time s (median / p95 / max)"] + [f"vs {r} (median)" for r in refs]
              + [f"{k} (mean)" for k in extra + stats])
    lines = []
    for m in methods:
        rs = [r for r in rows if r["method"] == m]
        if not rs:
            continue
        n_opt = sum(r["status"] == "optimal" for r in rs)
        n_feas = sum(r["status"] == "feasible" for r in rs)
        gaps = [r["gap"] for r in rs if r.get("gap") is not None]
        times = [r["time_s"] for r in rs if r.get("time_s") is not None]
        cells = [m, str(len(rs)), f"{n_opt} / {n_feas} / {len(rs) - n_opt - n_feas}",
                 _dist(gaps, lambda g: f"{100 * g:.3g}"), _dist(times, _secs)]
        for ref in refs:
            rat = [r["speedup"][ref] for r in rs if ref in r["speedup"] and m != ref]
            if not rat:
                cells.append("-")
                continue
            med = statistics.median([x["ratio"] for x in rat])
            cells.append(_ratio({"ratio": med, "at_least": any(x["at_least"] for x in rat)}))
        for key, k in [("extra", k) for k in extra] + [("stats", k) for k in stats]:
            vals = [float(r[key][k]) for r in rs if isinstance((r.get(key) or {}).get(k), int | float)]
            cells.append(_num(statistics.fmean(vals), 4) if vals else "-")
        lines.append(cells)
    return _table(header, lines)


def suite_tables(suite: Suite, rows: list[dict]) -> str:
    """The markdown of one suite: a table per group (detail or summary, as the suite says), then its notes."""
    refs = [m.name for m in suite.methods() if m.reference]
    methods = [m.name for m in suite.methods()]
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["group"], []).append(r)
    parts = [f"## {suite.title}\n"]
    for group, rs in groups.items():
        present = [ref for ref in refs if any(r["method"] == ref for r in rs)]
        n_inst = len({r["instance"] for r in rs})
        parts.append(f"### {group} ({n_inst} instance{'s' if n_inst != 1 else ''})\n")
        parts.append(detail_table(rs, present) if suite.detail_groups(group) else summary_table(rs, present, methods))
        parts.append("")
    if suite.notes:
        parts.append(suite.notes.strip() + "\n")
    return "\n".join(parts)


def targets_table(targets: list[dict]) -> str:
    """One row per target: what is asked, the verdict of this run, what was measured."""
    lines = [[t["target"], t["verdict"], t["detail"]] for t in targets]
    return _table(["target", "verdict", "measured"], lines)
