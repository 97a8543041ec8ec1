"""PNG plots of a benchmark run (matplotlib, the ``bench`` extra; skipped with a note when it is missing).

Per suite: ``<suite>_time.png``, the median solve time against instance size on log-log axes, one line per
method; ``<suite>_gap_cdf.png``, the empirical CDF of the gap to the best proven bound of each heuristic.
"""
from __future__ import annotations

import math
from pathlib import Path

__all__ = ["write_plots"]


def _suites(rows: list[dict]) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        seen.setdefault(r["suite"], None)
    return list(seen)


def _save(fig, path: Path, dpi: int) -> None:
    """PNG bytes of ``fig``, written whole through a unique temporary file (``outputs.write_file``)."""
    import io

    from lyra_solver.bench.outputs import write_file

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    write_file(path, buf.getvalue())


def write_plots(rows: list[dict], out: Path, *, time_groups: dict[str, tuple[str, ...] | None] | None = None,
                dpi: int = 80) -> tuple[list[str], str]:
    """Write the plots of ``rows`` into ``out``; returns (file names written, a note: empty or why none).

    ``time_groups`` names, per suite, the groups drawn on the time plot (default every group).

    Running time ``O(rows)`` plus matplotlib's rendering.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "Plots skipped: matplotlib is not installed (pip install 'lyra-solver[bench]')."
    written: list[str] = []
    for suite in _suites(rows):
        rs = [r for r in rows if r["suite"] == suite]
        # solve time against size, one line per method (median over instances of the same size)
        series: dict[str, dict[float, list[float]]] = {}
        keep = (time_groups or {}).get(suite)
        for r in rs:
            if keep is not None and r["group"] not in keep:
                continue
            if r.get("time_s") and r.get("size") and r["status"] in ("optimal", "feasible"):
                series.setdefault(r["method"], {}).setdefault(float(r["size"]), []).append(r["time_s"])
        if series:
            fig, ax = plt.subplots(figsize=(6, 4))
            for method, pts in series.items():
                xs = sorted(pts)
                ys = [sorted(pts[x])[(len(pts[x]) - 1) // 2] for x in xs]
                ax.plot(xs, ys, marker="o", label=method)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("instance size")
            ax.set_ylabel("solve time (s, median)")
            ax.set_title(f"{suite}: solve time against size")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
            fig.tight_layout()
            name = f"{suite}_time.png"
            _save(fig, out / name, dpi)
            plt.close(fig)
            written.append(name)
        # gap CDF per heuristic
        gaps: dict[str, list[float]] = {}
        for r in rs:
            if r.get("kind") == "heuristic" and r.get("gap") is not None and math.isfinite(r["gap"]):
                gaps.setdefault(r["method"], []).append(max(0.0, r["gap"]))
        if gaps:
            fig, ax = plt.subplots(figsize=(6, 4))
            for method, gs in gaps.items():
                xs = sorted(100.0 * g for g in gs)
                ys = [(i + 1) / len(xs) for i in range(len(xs))]
                ax.step(xs, ys, where="post", label=f"{method} ({len(xs)})")
            ax.set_xscale("symlog", linthresh=0.01)
            ax.set_xlabel("gap to the best proven bound (%)")
            ax.set_ylabel("share of instances")
            ax.set_ylim(0, 1.02)
            ax.set_title(f"{suite}: gap of each heuristic (CDF)")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
            fig.tight_layout()
            name = f"{suite}_gap_cdf.png"
            _save(fig, out / name, dpi)
            plt.close(fig)
            written.append(name)
    return written, ""
