"""Small helpers that suites use to judge their targets from the rows of a run."""
from __future__ import annotations

from collections.abc import Callable

NOT_MEASURED = "not measured here"


def find(rows: list[dict], *, method: str, pred: Callable[[dict], bool]) -> list[dict]:
    """Rows of ``method`` whose instance satisfies ``pred``."""
    return [r for r in rows if r["method"] == method and pred(r)]


def time_target(rows: list[dict], *, method: str, pred: Callable[[dict], bool], limit_s: float,
                key: Callable[[dict], float | None] | None = None, need_optimal: bool = True,
                what: str = "") -> tuple[str, str]:
    """``met`` when every matching row is (proven optimal and) within ``limit_s`` by ``key`` (default the
    row's median wall time); ``not measured here`` when no row matches."""
    rs = find(rows, method=method, pred=pred)
    if not rs:
        return NOT_MEASURED, f"no {what or 'matching'} instance in this run"
    key = key or (lambda r: r.get("time_s"))
    parts, ok = [], True
    for r in rs:
        t = key(r)
        good = t is not None and t <= limit_s and (not need_optimal or r["status"] == "optimal")
        ok &= good
        ts = "-" if t is None else (f"{t * 1000:.2f} ms" if t < 1 else f"{t:.2f} s")
        parts.append(f"{r['instance']}: {r['status']} in {ts}")
    return ("met" if ok else "not met"), "; ".join(parts)


def ratio_target(rows: list[dict], *, method: str, ref: str, pred: Callable[[dict], bool], at_least: float,
                 what: str = "") -> tuple[str, str]:
    """``met`` when ``method`` is proven optimal and at least ``at_least`` times faster than ``ref`` on every
    matching instance."""
    rs = [r for r in find(rows, method=method, pred=pred) if ref in r.get("speedup", {})]
    if not rs:
        return NOT_MEASURED, f"no {what or 'matching'} instance with both {method} and {ref} in this run"
    parts, ok = [], True
    for r in rs:
        s = r["speedup"][ref]
        ok &= r["status"] == "optimal" and s["ratio"] >= at_least
        parts.append(f"{r['instance']}: {'>=' if s['at_least'] else ''}{s['ratio']:.0f}x")
    return ("met" if ok else "not met"), "; ".join(parts)
