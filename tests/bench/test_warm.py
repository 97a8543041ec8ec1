"""``python -m lyra_solver.bench.warm`` (issue 24, a cold numba cache): it compiles every kernel that the engine's
paths take into numba's disk cache and marks the cache warm; afterwards a new process running other work (a
Philly slice under the simulator's compiled policies, ``decide`` and ``mckp`` on other instances) compiles
nothing: numba's cache misses are counted on every kernel of the package's four kernel modules."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lyra_solver.bench.sim import data_dir
from lyra_solver.formulations.mckp import _numba

PHILLY = data_dir() / "philly" / "philly.csv"

_MISSES = r"""
import importlib, json, sys
from lyra_solver.formulations.mckp import _numba
assert _numba.load()
from lyra_solver.cli import main
for argv in json.loads(sys.argv[1]):
    assert main(argv) == 0, argv
from numba.core.registry import CPUDispatcher
misses = {}
for name in ("formulations.mckp._nbkernels", "heuristics._nbadmit", "_nbvalues", "bench.sim._nbtime"):
    for attr, f in vars(importlib.import_module("lyra_solver." + name)).items():
        if isinstance(f, CPUDispatcher) and f.stats.cache_misses:
            misses[f"{name}.{attr}"] = len(f.stats.cache_misses)
print(json.dumps(misses))
"""


@pytest.mark.skipif(not _numba.numba_available(), reason="numba not installed (the fast extra)")
@pytest.mark.skipif(not PHILLY.exists(), reason="shared/data not present")
def test_after_the_warm_up_other_work_compiles_no_kernel(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "LYRA_NUMBA_COLD"}
    proc = subprocess.run([sys.executable, "-m", "lyra_solver.bench.warm"], capture_output=True, text=True,
                          env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("numba's cache is warm (")
    root = Path(_numba.__file__).parents[2]
    marker = _numba.marker_path(root, env.get("NUMBA_CACHE_DIR"))
    assert marker is not None and marker.exists()

    def out(name):
        return ["-o", str(tmp_path / name)]

    for argv in (["generate", "snapshot", "--servers", "400", "--jobs", "1500", "--seed", "11"],
                 ["generate", "mckp", "--classes", "400", "--items", "24", "--kind", "weakly", "--seed", "12"],
                 ["generate", "mckp", "--classes", "600", "--items", "32", "--kind", "cluster", "--seed", "13"]):
        subprocess.run([sys.executable, "-m", "lyra_solver", *argv, *out(argv[1] + argv[-1])], check=True,
                       capture_output=True, env=env)
    sim = ["simulate", "--max-work", "0", "--trace", str(PHILLY), "--start", "2017-10-09T06:00", "--limit", "300",
           "--training-servers", "12", "--inference-servers", "6", "--interval", "300", "--no-progress", "--force"]
    work = [[*sim, "--policy", policy, "--out", str(tmp_path / f"sim-{policy}")]
            for policy in ("lyra", "lyra-exact", "lyra-fifo")]
    work += [["decide", str(tmp_path / "snapshot11"), "--allocation", allocation, *out(f"d-{allocation}")]
             for allocation in ("exact", "greedy")]
    work += [["mckp", str(tmp_path / f"mckp{seed}"), "--method", method, *out(f"m{seed}{method}")]
             for seed in (12, 13) for method in ("auto", "greedy")]
    proc = subprocess.run([sys.executable, "-c", _MISSES, json.dumps(work)], capture_output=True, text=True,
                          env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {}
