"""The value table's types, shared by the numpy table (:mod:`lyra_solver.values`) and the GPU one
(:mod:`lyra_solver.values_gpu`): what a job offers (:class:`JobOptions`), the padded table (:class:`ValueTable`)
and the cap on remaining times. Both modules import them from here, so neither imports the other's types (the
numpy module imports the GPU module only to dispatch to it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

__all__ = ["TIME_CAP", "JobOptions", "ValueTable"]

#: Remaining times are capped here (seconds, about 30 million years) so that absurd but valid inputs
#: (huge work, tiny rates) give finite values instead of ``inf - inf``.
TIME_CAP = 1e15


class JobOptions(NamedTuple):
    """What the value table needs of one job (a view the pipeline builds from the snapshot; a named tuple, cheap
    to build for 50,000 jobs a round)."""

    throughput: object
    min_workers: int
    max_workers: int
    remaining_work: float
    gpus_per_worker: int = 1
    current_workers: int = 0  # 0: not running
    restart_penalty: float = 0.0
    step: int = 1  # > 1: a thinned grid of options (see :func:`option_grid`)
    anchor: int = 0  # > 0: a count the thinned grid must hold (else the current count, else min)


@dataclass(frozen=True, eq=False)
class ValueTable:
    """Padded tables: ``values[j, k]`` and ``weights[j, k]`` for option ``w = min_j + k``, ``k < sizes[j]``.

    ``times[j, k]`` is the remaining time ``T_j(min_j + k)``. Padding holds ``-inf`` values and the row's last
    weight (so rows stay non-decreasing). ``objective`` is the formula of ``values``; ``ages`` and
    ``job_weights`` its per-job inputs (None for ``jct-reduction``), kept so that an option off the table's grid
    can be valued the same way (:func:`option_value`).
    """

    values: np.ndarray
    weights: np.ndarray
    times: np.ndarray
    sizes: np.ndarray
    min_workers: np.ndarray
    objective: str = "jct-reduction"
    ages: np.ndarray | None = None
    job_weights: np.ndarray | None = None

    @property
    def n_jobs(self) -> int:
        return int(self.sizes.shape[0])
