"""Trace-driven cluster simulator (DESIGN "Simulation"): Philly jobs and an inference load curve replayed
through the very ``decide`` and ``apply_decision`` a scheduler calls.

- :mod:`.traces`: loaders (Philly, Pollux workloads, load curves) and the seeded job mapping;
- :mod:`.policies`: the policies, one module each behind one interface (snapshot-building rules, decide
  options, state across rounds), and the table of names;
- :mod:`.cluster`: the servers' state and the GPUs held; :mod:`.jobs`: a job's state during a run;
- :mod:`.metrics`: counters, GPU-seconds and series gathered during a run;
- :mod:`.quiet`: rounds skipped because their decision is known; :mod:`.packing`: speeds of jobs sharing GPUs;
- :mod:`.engine`: the event loop (:func:`simulate`);
- :mod:`.report`: summary.json, CSVs, plots and the markdown table;
- :mod:`.cli`: ``lyra-solver simulate``.
"""
from __future__ import annotations

import importlib
from pathlib import Path

__all__ = ["POLICIES", "LoadCurve", "Policy", "SimConfig", "SimJobSpec", "SimResult", "TraceJob", "data_dir",
           "get_policy", "load_load_curve", "load_philly", "load_pollux_workload", "map_jobs", "simulate"]


_LAZY = {"SimConfig": "engine", "SimResult": "engine", "simulate": "engine", "POLICIES": "policies",
         "Policy": "policies", "get_policy": "policies", "LoadCurve": "traces", "SimJobSpec": "traces",
         "TraceJob": "traces", "load_load_curve": "traces", "load_philly": "traces",
         "load_pollux_workload": "traces", "map_jobs": "traces"}


def __getattr__(name: str):  # the engine is imported on first use, so that the CLI's parser stays light
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def data_dir() -> Path:
    """The data folder (``--data-dir``, ``LYRA_SOLVER_DATA``, else ``../shared/data`` beside the repository):
    :func:`lyra_solver.bench.datapath.shared_data`."""
    from lyra_solver.bench.datapath import shared_data

    return shared_data()
