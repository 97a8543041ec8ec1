"""Value-table backends: the shared array expression, the dispatch, batching, and the torch (CPU) path.

Every backend is checked against the numpy reference :func:`lyra_solver.values.value_table` within
:data:`lyra_solver.values_gpu.RTOL`. torch tests skip without torch; GPU tests skip without a GPU.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lyra_solver.types import PROFILE_MODELS, PowerThroughput, ProfileThroughput, TableThroughput
from lyra_solver.values import AUTO_MIN_CELLS, JobOptions, resolve_backend, value_table, value_tables
from lyra_solver.values_gpu import ATOL, RTOL, jobs_of, pack_jobs, to_numpy, value_table_device, value_table_gpu

from tests.solver.test_values import job_options

ROOT = Path(__file__).resolve().parents[2]
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_CUPY = importlib.util.find_spec("cupy") is not None
torch_only = pytest.mark.skipif(not HAS_TORCH, reason="torch not installed (pip install '.[gpu]')")


def _cuda() -> bool:
    if not HAS_TORCH:
        return False
    import torch

    return torch.cuda.is_available()


def assert_close(ref, values, times, pen, dtype: str) -> None:
    """The documented tolerance: ``|V - V_ref| <= rtol (|T(min)| + |T(w)| + penalty) + atol``, padding exact."""
    values, times = np.asarray(values, np.float64), np.asarray(times, np.float64)
    fin = np.isfinite(ref.values)
    assert np.array_equal(fin, np.isfinite(values))
    assert np.all(np.isneginf(values[~fin]))
    scale = np.abs(ref.times[:, :1]) + np.abs(ref.times) + np.asarray(pen)[:, None]
    rtol, atol = RTOL[dtype], ATOL[dtype]
    assert np.all(np.abs(values[fin] - ref.values[fin]) <= rtol * scale[fin] + atol)
    assert np.all(np.abs(times - ref.times) <= rtol * np.abs(ref.times) + atol)


def _mixed_jobs(n: int, seed: int) -> list[JobOptions]:
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n):
        lo = int(rng.integers(1, 10))
        hi = lo + int(rng.integers(0, 40))
        if i % 3 == 0:
            tp = PowerThroughput(rate_per_worker=float(rng.uniform(0.1, 100)), exponent=float(rng.uniform(0.1, 1)))
        elif i % 3 == 1:
            pts = sorted({int(rng.integers(1, lo + 1)), hi, *(int(x) for x in rng.integers(lo, hi + 1, 3))})
            tp = TableThroughput(workers=pts, rate=[float(x) for x in rng.uniform(1, 100, len(pts))])
        else:
            tp = ProfileThroughput(model=PROFILE_MODELS[i % len(PROFILE_MODELS)])
        jobs.append(JobOptions(tp, lo, hi, float(rng.uniform(1, 1e6)), int(rng.choice([1, 2, 4, 8])),
                               int(rng.integers(lo, hi + 1)) if i % 2 else 0, float(rng.uniform(0.5, 100))))
    return jobs


def _pen(jobs):
    return [j.restart_penalty for j in jobs]


# ------------------------------------------------------------------------------- the shared expression
@settings(max_examples=40, deadline=None)
@given(jobs=st.lists(job_options(), min_size=1, max_size=10), server_gpus=st.sampled_from([4, 8, 16]),
       dtype=st.sampled_from(["float64", "float32"]))
def test_shared_expression_on_numpy_matches_reference(jobs, server_gpus, dtype):
    """The expression every GPU backend runs, evaluated by numpy (so its formula is checked on any CPU)."""
    ref = value_table(jobs, server_gpus=server_gpus, backend="numpy")
    arrays = pack_jobs(jobs, server_gpus=server_gpus)
    values, times = value_table_device(arrays, backend="numpy", dtype=dtype)
    assert_close(ref, values, times, _pen(jobs), dtype)


def test_pack_and_unpack_round_trip():
    jobs = _mixed_jobs(60, 1)
    again = jobs_of(pack_jobs(jobs))
    a, b = value_table(jobs, backend="numpy"), value_table(again, backend="numpy")
    assert np.array_equal(a.values, b.values) and np.array_equal(a.weights, b.weights)


# ----------------------------------------------------------------------------------------- dispatch
def test_auto_is_numpy_for_small_tables_and_unknown_backends_are_refused():
    assert resolve_backend("auto", AUTO_MIN_CELLS - 1) == "numpy"
    assert resolve_backend("numpy", 10**9) == "numpy"
    with pytest.raises(ValueError, match="backend"):
        resolve_backend("jax", 10)
    with pytest.raises(ValueError, match="backend"):
        value_table(_mixed_jobs(2, 0), backend="opencl")


@pytest.mark.skipif(HAS_CUPY, reason="checks the refusal without CuPy")
def test_a_missing_library_is_refused_by_name():
    with pytest.raises(ValueError, match="cupy"):
        value_table(_mixed_jobs(2, 0), backend="cupy")


def test_auto_picks_a_gpu_library_only_for_large_tables(monkeypatch):
    from lyra_solver import values

    monkeypatch.setattr(values, "_gpu_library", lambda: None)  # as on a machine without a GPU
    jobs = [JobOptions(PowerThroughput(rate_per_worker=2.0, exponent=0.7), 1, 64, 1e4)] * (AUTO_MIN_CELLS // 64)
    assert resolve_backend("auto", len(jobs) * 64) == "numpy"
    t = value_table(jobs)
    assert t.values.shape == (len(jobs), 64)
    monkeypatch.setattr(values, "_gpu_library", lambda: "torch")  # as on a machine whose torch sees a GPU
    assert resolve_backend("auto", AUTO_MIN_CELLS) == "torch"
    assert resolve_backend("auto", AUTO_MIN_CELLS - 1) == "numpy"


def test_the_gpu_library_probe_answers_what_this_machine_has():
    from lyra_solver import values

    got = values._gpu_library()
    if _cuda():
        assert got == "torch"
    elif importlib.util.find_spec("cupy") is None:
        assert got is None  # no torch GPU, no CuPy: numpy (CI's case)
    else:
        assert got in (None, "cupy")


def test_importing_the_package_and_a_numpy_decide_import_no_gpu_library():
    code = (
        "import sys, lyra_solver\n"
        "from lyra_solver import io\n"
        "from lyra_solver.pipeline import decide\n"
        "bad = [m for m in ('torch', 'cupy', 'triton') if m in sys.modules]\n"
        "assert not bad, ('after import', bad)\n"
        f"snap = io.load_snapshot({str(ROOT / 'examples' / 'cluster.json')!r})\n"
        "decide(snap, backend='numpy'); decide(snap)\n"
        "bad = [m for m in ('torch', 'cupy', 'triton') if m in sys.modules]\n"
        "assert not bad, ('after decide', bad)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_cli_backend_flag(tmp_path):
    out = tmp_path / "d.json"
    run = [sys.executable, "-m", "lyra_solver.cli", "decide", str(ROOT / "examples" / "cluster.json")]
    proc = subprocess.run([*run, "--backend", "numpy", "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["summary"]
    if not HAS_CUPY:
        proc = subprocess.run([*run, "--backend", "cupy"], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2
        # the flag is named, not the input file (which is fine)
        assert proc.stderr.count("\n") == 1 and "cupy" in proc.stderr and proc.stderr.startswith("error: --backend: ")
        assert "cluster.json" not in proc.stderr


# ------------------------------------------------------------------------------------------ batched
def test_batched_tables_equal_one_table_per_batch():
    batches = [_mixed_jobs(7, 2), [], _mixed_jobs(1, 3), _mixed_jobs(20, 4)]
    out = value_tables(batches, backend="numpy")
    assert len(out) == len(batches)
    for b, t in zip(batches, out, strict=True):
        if not b:
            assert t.n_jobs == 0
            continue
        ref = value_table(b, backend="numpy")
        for name in ("values", "weights", "times", "sizes", "min_workers"):
            assert np.array_equal(getattr(t, name), getattr(ref, name)), name


# --------------------------------------------------------------------------------------- torch (CPU)
@torch_only
@settings(max_examples=15, deadline=None)
@given(jobs=st.lists(job_options(), min_size=1, max_size=8), server_gpus=st.sampled_from([4, 8]))
def test_torch_backend_matches_numpy(jobs, server_gpus):
    ref = value_table(jobs, server_gpus=server_gpus, backend="numpy")
    got = value_table(jobs, server_gpus=server_gpus, backend="torch")
    assert np.array_equal(got.weights, ref.weights) and np.array_equal(got.sizes, ref.sizes)
    assert_close(ref, got.values, got.times, _pen(jobs), "float64")


@torch_only
def test_torch_float32_within_its_tolerance():
    jobs = _mixed_jobs(200, 5)
    ref = value_table(jobs, backend="numpy")
    values, times = value_table_device(pack_jobs(jobs), backend="torch", device="cpu", dtype="float32")
    assert_close(ref, to_numpy(values), to_numpy(times), _pen(jobs), "float32")


@torch_only
def test_fused_torch_compile_kernel_matches_numpy():
    """torch.compile (inductor: C++ here, Triton on a GPU) of the same expression: one fused kernel."""
    jobs = _mixed_jobs(90, 6)
    ref = value_table(jobs, backend="numpy")
    try:
        got = value_table_gpu(jobs, backend="torch", device="cpu", fused=True)
    except Exception as exc:  # noqa: BLE001 - no working C++ toolchain for inductor
        if "compiler" in str(exc).lower() or "InductorError" in type(exc).__name__:
            pytest.skip(f"torch.compile unavailable here: {exc}")
        raise
    assert_close(ref, got.values, got.times, _pen(jobs), "float64")


@torch_only
def test_batched_on_torch_matches_numpy():
    batches = [_mixed_jobs(5, 8), _mixed_jobs(9, 9)]
    got = value_tables(batches, backend="torch")
    for b, g, ref in zip(batches, got, value_tables(batches, backend="numpy"), strict=True):
        assert_close(ref, g.values, g.times, _pen(b), "float64")


@torch_only
def test_decide_with_torch_backend_gives_the_numpy_decision():
    from lyra_solver import io
    from lyra_solver.pipeline import decide

    snap = io.load_snapshot(str(ROOT / "examples" / "cluster.json"))
    assert io.encode(decide(snap, backend="torch")) == io.encode(decide(snap, backend="numpy"))


# ------------------------------------------------------------------------------------------- GPU only
@pytest.mark.skipif(not _cuda(), reason="no CUDA device")
def test_cuda_backends_match_numpy():
    jobs = _mixed_jobs(500, 10)
    ref = value_table(jobs, backend="numpy")
    for fused in (False, True):
        got = value_table_gpu(jobs, backend="torch", fused=fused)
        assert_close(ref, got.values, got.times, _pen(jobs), "float64")
    if HAS_CUPY:
        got = value_table_gpu(jobs, backend="cupy")
        assert_close(ref, got.values, got.times, _pen(jobs), "float64")
