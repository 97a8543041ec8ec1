"""Method "gpu": the torch kernel against the CPU DP, and the CUDA source run by a C++ emulation of its grid.

The CUDA kernel cannot run without a GPU; its source is compiled here with g++ against a small emulation of
the CUDA built-ins (one OS thread per CUDA thread, ``std::barrier`` for ``__syncthreads`` and
``grid.sync()``), so the very text that CuPy compiles on a GPU is checked against method ``dp`` on every
machine with a C++20 compiler. ``bench/gpu_check`` checks it on a real GPU.
"""
from __future__ import annotations

import ctypes
import importlib.util
import shutil
import subprocess
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lyra_solver.formulations.mckp import METHODS, MCKPProblem, solve_mckp
from lyra_solver.formulations.mckp import gpu as gpu_mod

HAS_TORCH = importlib.util.find_spec("torch") is not None


def _instances(seed: int, count: int, *, max_weight: int = 20):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, 25))
        m = int(rng.integers(1, 9))
        sizes = rng.integers(1, m + 1, n)
        w = rng.integers(0, max_weight, (n, m))
        v = rng.normal(0, 10, (n, m))
        cap = int(rng.integers(0, max_weight * n // 2 + 1))
        yield MCKPProblem.from_padded(w, v, sizes, cap)


def _check_same_optimum(p: MCKPProblem, res) -> None:
    ref = solve_mckp(p, method="dp")
    assert res.status == ref.status, (res, ref)
    if ref.objective is not None:
        assert res.method == "gpu"
        assert p.choice_weight(res.choice) <= p.capacity  # feasibility, checked independently of the solver
        assert abs(res.objective - p.choice_value(res.choice)) <= 1e-12 * max(1.0, abs(res.objective))
        assert abs(res.objective - ref.objective) <= 1e-9 * max(1.0, abs(ref.objective))


def test_gpu_is_a_registered_method():
    assert "gpu" in METHODS


@pytest.mark.skipif(HAS_TORCH, reason="checks the refusal without torch")
def test_refuses_clearly_without_torch_or_cupy():
    p = MCKPProblem.from_ragged([[0, 1]], [[0.0, 1.0]], 1)
    with pytest.raises(ValueError, match="torch"):
        solve_mckp(p, method="gpu", kernel="torch")


# ------------------------------------------------------------------------------------------------ torch
torch_only = pytest.mark.skipif(not HAS_TORCH, reason="torch not installed (pip install '.[gpu]')")


@torch_only
def test_torch_kernel_matches_dp_on_random_instances():
    for p in _instances(7, 40):
        _check_same_optimum(p, solve_mckp(p, method="gpu", kernel="torch", device="cpu"))


@torch_only
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_torch_kernel_matches_dp_property(data):
    n = data.draw(st.integers(1, 8))
    ws = [data.draw(st.lists(st.integers(0, 15), min_size=1, max_size=6)) for _ in range(n)]
    vs = [data.draw(st.lists(st.floats(-50, 50), min_size=len(w), max_size=len(w))) for w in ws]
    p = MCKPProblem.from_ragged(ws, vs, data.draw(st.integers(0, 60)))
    _check_same_optimum(p, solve_mckp(p, method="gpu", kernel="torch", device="cpu"))


@torch_only
def test_torch_kernel_infeasible_and_empty():
    p = MCKPProblem.from_ragged([[5, 6]], [[1.0, 2.0]], 4)
    assert str(solve_mckp(p, method="gpu", kernel="torch", device="cpu").status) == "infeasible"
    e = MCKPProblem.from_ragged([], [], 3)
    assert solve_mckp(e, method="gpu", kernel="torch", device="cpu").objective == 0.0


@torch_only
def test_memory_bound_refuses_a_capacity_too_large():
    p = MCKPProblem.from_ragged([[0, 10**6]] * 10, [[0.0, 1.0]] * 10, 10**7)
    with pytest.raises(ValueError, match="capacity"):
        solve_mckp(p, method="gpu", kernel="torch", device="cpu", max_bytes=10**6)


@torch_only
def test_time_limit_gives_a_feasible_choice_and_a_bound():
    rng = np.random.default_rng(3)
    n, m = 60, 6
    p = MCKPProblem.from_padded(rng.integers(0, 50, (n, m)), rng.normal(0, 5, (n, m)), np.full(n, m), 800)
    res = solve_mckp(p, method="gpu", kernel="torch", device="cpu", time_limit=0.0)
    ref = solve_mckp(p, method="dp")
    assert res.backend_status == "time_limit"
    assert str(res.status) in ("feasible", "optimal")
    assert p.choice_weight(res.choice) <= p.capacity
    assert res.bound >= ref.objective - 1e-9 and res.objective <= ref.objective + 1e-9


def test_unknown_kernel_is_refused():
    p = MCKPProblem.from_ragged([[0]], [[0.0]], 0)
    with pytest.raises(ValueError, match="kernel"):
        solve_mckp(p, method="gpu", kernel="opencl")


# ------------------------------------------------------------------------- CUDA source, emulated in C++
_PRELUDE = r"""
#include <algorithm>
#include <barrier>
#include <memory>
#include <thread>
#include <vector>
using std::min;
struct Dim { int x; };
static thread_local Dim threadIdx, blockIdx;
static Dim blockDim, gridDim;
static std::barrier<>* g_grid;
static std::vector<std::unique_ptr<std::barrier<>>> g_block;
static std::vector<std::vector<double>> g_smem;
static void __syncthreads() { g_block[blockIdx.x]->arrive_and_wait(); }
static double* block_smem() { return g_smem[blockIdx.x].data(); }
namespace cg { struct grid_group { void sync() { g_grid->arrive_and_wait(); } };
               inline grid_group this_grid() { return {}; } }
template <class T> static T __ldcg(const T* p) { return *p; }
template <class T> static T __ldg(const T* p) { return *p; }
#define __global__
"""

_LAUNCH = r"""
extern "C" void launch_dp_S(int grid, int block, int smem_bytes, double* f0, double* f1, const long long* offs,
                            const int* dw, const double* vv, const int* maxw, T* choice, int c1, int lo, int hi,
                            int smem_len) {
    gridDim.x = grid; blockDim.x = block;
    std::barrier<> gb(grid * block); g_grid = &gb;
    g_block.clear();
    for (int b = 0; b < grid; ++b) g_block.emplace_back(new std::barrier<>(block));
    g_smem.assign(grid, std::vector<double>(smem_bytes / 8));
    std::vector<std::thread> ts;
    for (int b = 0; b < grid; ++b)
        for (int t = 0; t < block; ++t)
            ts.emplace_back([=] { blockIdx.x = b; threadIdx.x = t;
                                  mckp_dp_S(f0, f1, offs, dw, vv, maxw, choice, c1, lo, hi, smem_len); });
    for (auto& t : ts) t.join();
}
extern "C" void launch_back_S(const T* choice, const long long* offs, const int* dw, int n, int c1,
                              long long* pos) {
    blockIdx.x = 0; threadIdx.x = 0;
    mckp_back_S(choice, offs, dw, n, c1, pos);
}
"""


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++ to emulate the CUDA kernel")
    body = gpu_mod._CUDA_SOURCE
    body = body.replace("#include <cooperative_groups.h>", "").replace("namespace cg = cooperative_groups;", "")
    body = body.replace("extern __shared__ double tile[];", "double* tile = block_smem();")
    src = _PRELUDE
    for size, ctype in ((1, "signed char"), (2, "short")):
        src += body.replace("CHOICE_T", ctype).replace("_CHOICE", f"_{size}")
        src += _LAUNCH.replace("_S", f"_{size}").replace("T*", f"{ctype}*")
    d = tmp_path_factory.mktemp("cuda_emulation")
    (d / "k.cpp").write_text(src)
    lib = d / "k.so"
    proc = subprocess.run([gxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", str(d / "k.cpp"), "-o", str(lib)],
                          capture_output=True, text=True)
    if proc.returncode != 0 and "barrier" in proc.stderr and "No such file" in proc.stderr:
        pytest.skip("g++ lacks C++20 <barrier>")
    assert proc.returncode == 0, proc.stderr
    return ctypes.CDLL(str(lib))


def _emulated_launcher(lib, itemsize: int, threads: int):
    def arg(x):
        if isinstance(x, np.ndarray):
            return ctypes.c_void_p(x.ctypes.data)
        return ctypes.c_int(int(x))

    def launch(which, grid, args, shared_mem):
        if which == "dp":
            getattr(lib, f"launch_dp_{itemsize}")(ctypes.c_int(grid), ctypes.c_int(threads),
                                                  ctypes.c_int(shared_mem), *map(arg, args))
        else:
            getattr(lib, f"launch_back_{itemsize}")(*map(arg, args))

    return launch


def _solve_emulated(lib, p: MCKPProblem, *, blocks: int, threads: int, monkeypatch=None, deadline=None):
    """solve_gpu's path with the emulated kernel in place of CuPy's."""
    def run(dw, vv, offs, n, cap, itemsize, deadline_, device):
        return gpu_mod.run_cooperative(dw, vv, offs, n, cap, itemsize, deadline_, blocks=blocks, xp=np,
                                       launch=_emulated_launcher(lib, itemsize, threads), sync=lambda: None)

    monkeypatch.setattr(gpu_mod, "_run_torch", run)  # solve_gpu picks _run_torch where CuPy is absent
    monkeypatch.setattr(gpu_mod, "_choose_kernel", lambda kernel: "torch")
    return solve_mckp(p, method="gpu", time_limit=deadline, max_bytes=1 << 30)


def test_cuda_source_emulated_matches_dp(emulated, monkeypatch):
    for p in _instances(11, 25):
        _check_same_optimum(p, _solve_emulated(emulated, p, blocks=3, threads=4, monkeypatch=monkeypatch))


def test_cuda_source_emulated_global_memory_path(emulated, monkeypatch):
    # heavy items: the tile (block width + heaviest item) exceeds the shared memory, so the L2 path runs
    for p in _instances(12, 8, max_weight=9000):
        _check_same_optimum(p, _solve_emulated(emulated, p, blocks=2, threads=3, monkeypatch=monkeypatch))


def test_cuda_source_emulated_int16_choices_and_chunks(emulated, monkeypatch):
    rng = np.random.default_rng(5)
    n, m = 9, 200  # 200 undominated items per class: int16 choice indices
    w = np.tile(np.arange(m), (n, 1))
    v = np.cumsum(rng.uniform(0.1, 1.0, (n, m)), axis=1)
    p = MCKPProblem.from_padded(w, v, np.full(n, m), 700)
    monkeypatch.setattr(gpu_mod, "_CHUNK", 2)  # a time limit makes chunks of classes: launches resume
    res = _solve_emulated(emulated, p, blocks=4, threads=8, monkeypatch=monkeypatch, deadline=3600.0)
    _check_same_optimum(p, res)


def test_run_cooperative_reports_classes_done_on_a_deadline(emulated, monkeypatch):
    p = next(_instances(13, 1))
    monkeypatch.setattr(gpu_mod, "_CHUNK", 1)
    red_n = p.n_classes
    assert red_n >= 2, "the seeded instance must have two classes for a deadline to fall between them"
    out = gpu_mod.run_cooperative(np.zeros(red_n, np.int64), np.ones(red_n), np.arange(red_n + 1), red_n, 3, 1,
                                  time.perf_counter() - 1.0, blocks=2, xp=np,
                                  launch=_emulated_launcher(emulated, 1, 2), sync=lambda: None)
    assert out[0] is None and out[2] == 1 and out[1] == 1.0  # one class done, its value 1.0 at every d
