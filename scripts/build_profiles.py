"""Derive the compact throughput profiles (``solver/data/profiles.json``) from the Pollux measurements.

Source: ``shared/data/pollux/throughput/<model>/{placements,scalability}.csv``, measured step times of six
real models, from the Pollux OSDI'21 artifact (petuum/adaptdl, branch osdi21-artifact,
``simulator/traces/``), Apache-2.0. Run from the repository root::

    python scripts/build_profiles.py [--data ../shared/data/pollux/throughput]

Method (documented in the output too): each model keeps its smallest measured local batch size ``b`` (the
only one measured everywhere); the rate of a placement of ``n`` replicas on ``k`` nodes is
``n * b / step_time``, best arrangement when several share (n, k). The per-replica rate ``rate / n`` is
then filled into a dense grid of n = 1..64 replicas x k = 1..16 nodes: linear in n between measured points
of the same k (constant beyond them), then linear in k between measured node counts at the same n.
"""
from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

MODELS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
N_MAX, K_MAX = 64, 16


def measured(folder: Path) -> tuple[int, dict[tuple[int, int], float]]:
    with open(folder / "placements.csv") as fh:
        rows = list(csv.DictReader(fh))
    b = min(int(r["local_bsz"]) for r in rows)
    best: dict[tuple[int, int], float] = {}

    def add(n: int, k: int, step: float) -> None:
        rate = n * b / step
        best[(n, k)] = max(best.get((n, k), 0.0), rate)

    for r in rows:
        if int(r["local_bsz"]) == b:
            digits = [int(c) for c in r["placement"]]
            add(sum(digits), len(digits), float(r["step_time"]))
    with open(folder / "scalability.csv") as fh:
        for r in csv.DictReader(fh):
            if int(r["local_bsz"]) == b:
                add(int(r["num_replicas"]), int(r["num_nodes"]), float(r["step_time"]))
    return b, best


def dense(best: dict[tuple[int, int], float]) -> np.ndarray:
    per = np.full((N_MAX, K_MAX), np.nan)
    ns = np.arange(1, N_MAX + 1)
    ks_measured = sorted({k for _, k in best})
    for k in ks_measured:
        pts = sorted((n, r / n) for (n, kk), r in best.items() if kk == k)
        per[:, k - 1] = np.interp(ns, [p[0] for p in pts], [p[1] for p in pts])
    for n in range(N_MAX):
        per[n, :] = np.interp(np.arange(1, K_MAX + 1), ks_measured, per[n, [k - 1 for k in ks_measured]])
    return per


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/pollux/throughput")
    ap.add_argument("--out", default="solver/data/profiles.json")
    args = ap.parse_args(argv)
    out = {
        "source": "Pollux OSDI'21 artifact (petuum/adaptdl osdi21-artifact, simulator/traces), Apache-2.0; "
                  "derived by scripts/build_profiles.py",
        "method": "per-replica rate n*b/step_time at the smallest local batch b, best arrangement per "
                  "(replicas n, nodes k), filled linearly in n then in k; rows n=1..64, columns k=1..16",
        "models": {},
    }
    for m in MODELS:
        b, best = measured(Path(args.data) / m)
        per = dense(best)
        out["models"][m] = {
            "local_bsz": b,
            "measured_points": len(best),
            "per_replica_rate": [[float(f"{x:.5g}") for x in row] for row in per],
        }
    Path(args.out).write_text(json.dumps(out, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
