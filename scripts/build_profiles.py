"""Derive the throughput profiles (``solver/data/profiles.json``) from the Pollux measurements.

Source: ``shared/data/pollux/throughput/<model>/{placements,scalability}.csv``, measured step times of six
real models on nodes of 4 GPUs, from the Pollux OSDI'21 artifact (petuum/adaptdl, branch osdi21-artifact,
``simulator/traces/``), Apache-2.0. Run from the repository root::

    python scripts/build_profiles.py [--data ../shared/data/pollux/throughput]

Method (written into the output too). Each model keeps its smallest measured local batch size ``b`` (the only
one measured at every placement). The rate of ``n`` replicas on ``k`` servers is ``n * b / step_time``:

- **measured** where the data hold a placement of ``n`` replicas on ``k`` nodes at ``b`` (``placements.csv``:
  up to 4 nodes, up to 4 replicas each; ``scalability.csv``: more nodes), the best arrangement when several
  share ``(n, k)``;
- **fitted** everywhere else (more replicas per server than a 4-GPU node holds, e.g. 8 workers on one 8-GPU
  server, and the ``(n, k)`` pairs no run measured), by the step-time model of the Pollux paper (Qiao et al.,
  OSDI 2021, section 3.2) fitted to every measured row of the model (all local batch sizes)::

      step(n, k, m) = (compute(m) ** g + sync(n, k) ** g) ** (1 / g)
      compute(m)    = a_c + b_c * m                          (local batch m)
      sync(n, k)    = 0                                      if n = 1
                    = a_l + b_l * (n - 2)                    if k = 1 (one server)
                    = a_x + b_x * (n - 2) + c_x * (k - 2)    otherwise

  with every coefficient >= 0 and ``g >= 1`` (``g`` is how far compute and synchronisation overlap), by least
  squares on the relative error (``scipy.optimize.least_squares``). The fit's median and largest relative
  error on the measured rows are stored per model (``fit``), with its coefficients.

The grid holds the per-replica rate ``rate / n`` for n = 1..64 replicas x k = 1..16 servers (``k > n`` cannot
be placed; those cells hold the ``k = n`` value).
"""
from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

MODELS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
N_MAX, K_MAX = 64, 16


def rows(folder: Path) -> list[tuple[int, int, float, float, float]]:
    """Every measured row as (replicas, nodes, local batch, step time, sync time)."""
    out = []
    with open(folder / "placements.csv") as fh:
        for r in csv.DictReader(fh):
            digits = [int(c) for c in r["placement"]]
            out.append((sum(digits), len(digits), float(r["local_bsz"]), float(r["step_time"]),
                        float(r["sync_time"])))
    with open(folder / "scalability.csv") as fh:
        for r in csv.DictReader(fh):
            out.append((int(r["num_replicas"]), int(r["num_nodes"]), float(r["local_bsz"]), float(r["step_time"]),
                        float(r["sync_time"])))
    return out


def measured(data: list[tuple[int, int, float, float, float]]) -> tuple[int, dict[tuple[int, int], float]]:
    """The smallest local batch ``b`` and the best measured rate per (replicas, nodes) at ``b``."""
    b = min(r[2] for r in data)
    best: dict[tuple[int, int], float] = {}
    for n, k, m, step, _sync in data:
        if m == b:
            best[(n, k)] = max(best.get((n, k), 0.0), n * b / step)
    return int(b), best


PARAMS = ("a_c", "b_c", "a_l", "b_l", "a_x", "b_x", "c_x", "g")


def step_model(p: np.ndarray, n, k, m) -> np.ndarray:
    """The fitted step time (module docstring) at replicas ``n``, servers ``k``, local batch ``m``."""
    a_c, b_c, a_l, b_l, a_x, b_x, c_x, g = p
    n, k, m = (np.asarray(x, dtype=np.float64) for x in (n, k, m))
    compute = a_c + b_c * m
    sync = np.where(n <= 1, 0.0, np.where(k <= 1, a_l + b_l * (n - 2), a_x + b_x * (n - 2) + c_x * (k - 2)))
    sync = np.maximum(sync, 0.0)
    return (compute ** g + sync ** g) ** (1.0 / g)


def fit(data: list[tuple[int, int, float, float, float]]) -> tuple[np.ndarray, float, float]:
    """Least-squares fit of :func:`step_model` on relative errors: (parameters, median and largest error)."""
    from scipy.optimize import least_squares

    a = np.asarray(data, dtype=np.float64)
    n, k, m, step = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    one = (n == 1)
    slope, icpt = np.polyfit(m[one], step[one], 1) if one.sum() >= 2 else (step.mean() / m.mean(), 0.0)
    x0 = np.array([max(icpt, 1e-4), max(slope, 1e-6), 0.01, 0.001, 0.05, 0.001, 0.001, 1.5])
    lo = np.zeros(len(PARAMS))
    lo[-1] = 1.0
    hi = np.full(len(PARAMS), np.inf)
    hi[-1] = 10.0

    def resid(p):
        return step_model(p, n, k, m) / step - 1.0

    res = least_squares(resid, x0, bounds=(lo, hi), method="trf", x_scale="jac", max_nfev=20000)
    err = np.abs(resid(res.x))
    return res.x, float(np.median(err)), float(err.max())


def grid(b: int, best: dict[tuple[int, int], float], params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-replica rates (n x k) and where they were measured (True) or fitted (False)."""
    ns = np.arange(1, N_MAX + 1)[:, None]
    ks = np.arange(1, K_MAX + 1)[None, :]
    kk = np.minimum(ks, ns)  # k > n cannot be placed: the k = n value
    per = b / step_model(params, np.broadcast_to(ns, kk.shape), kk, b)
    src = np.zeros(per.shape, dtype=bool)
    for (n, k), r in best.items():
        if n <= N_MAX and k <= K_MAX:
            per[n - 1, k - 1] = r / n
            src[n - 1, k - 1] = True
    for n in range(1, K_MAX):  # cells with k > n repeat k = n (measured or fitted)
        per[n - 1, n:] = per[n - 1, n - 1]
    return per, src


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/pollux/throughput")
    ap.add_argument("--out", default="solver/data/profiles.json")
    args = ap.parse_args(argv)
    out = {
        "source": "Pollux OSDI'21 artifact (petuum/adaptdl osdi21-artifact, simulator/traces), Apache-2.0; "
                  "derived by scripts/build_profiles.py",
        "method": "per-replica rate n*b/step_time at the smallest local batch b: measured (best arrangement per "
                  "(replicas n, servers k)) where the data hold (n, k), else the fitted Pollux step-time model "
                  "step = (compute^g + sync^g)^(1/g), compute = a_c + b_c m, sync = 0 (n = 1), a_l + b_l (n - 2) "
                  "(k = 1), a_x + b_x (n - 2) + c_x (k - 2) (k > 1); rows n=1..64, columns k=1..16 (k > n: the "
                  "k = n value)",
        "models": {},
    }
    for m in MODELS:
        data = rows(Path(args.data) / m)
        b, best = measured(data)
        params, med, worst = fit(data)
        per, src = grid(b, best, params)
        out["models"][m] = {
            "local_bsz": b,
            "measured_points": len(best),
            "fit": {"params": {k: float(f"{v:.6g}") for k, v in zip(PARAMS, params, strict=True)},
                    "median_rel_error": round(med, 4), "max_rel_error": round(worst, 4), "rows": len(data)},
            "measured": [[n, k] for n, k in sorted(best) if n <= N_MAX and k <= K_MAX],
            "per_replica_rate": [[float(f"{x:.5g}") for x in row] for row in per],
        }
        print(f"{m}: b={b}, {len(best)} measured (n, k), fit median {med:.1%} max {worst:.1%} over {len(data)} rows")
    Path(args.out).write_text(json.dumps(out, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
