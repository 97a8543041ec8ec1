"""Problem types check their arrays at construction; a bad argument raises ValueError naming it."""
from __future__ import annotations

import numpy as np
import pytest
from lyra_solver.formulations.placement import JointProblem, PlacementProblem
from lyra_solver.formulations.reclaim import ReclaimProblem

RECLAIM = dict(server_gpus=[8, 8], job_workers=[4, 1], job_min=[2, 1], job_gpus_per_worker=[1, 1],
               restart_cost=[30.0, 30.0], preempt_cost=[300.0, 300.0], host_job=[0, 0, 1],
               host_server=[0, 1, 1], host_count=[2, 2, 1], count=1)


def test_reclaim_problem_is_read_only_and_copied() -> None:
    gpus = np.array([8, 8])
    p = ReclaimProblem.build(**{**RECLAIM, "server_gpus": gpus})
    gpus[0] = 1
    assert p.server_gpus.tolist() == [8, 8] and p.server_gpus.dtype == np.int64
    with pytest.raises(ValueError):
        p.server_gpus[0] = 3
    assert ReclaimProblem(**RECLAIM).host_count.tolist() == [2, 2, 1]  # the constructor checks too


@pytest.mark.parametrize(("change", "prefix"), [
    ({"server_gpus": [8, -1]}, "server_gpus[1]: must be >= 0"),
    ({"server_gpus": [[8, 8]]}, "server_gpus: expected a 1-D array"),
    ({"job_min": [2]}, "job_min: expected 2 entries"),
    ({"job_min": [2, -1]}, "job_min[1]"),
    ({"job_workers": [4.5, 1]}, "job_workers[0]: expected an integer"),
    ({"job_gpus_per_worker": [1, 0]}, "job_gpus_per_worker[1]: must be >= 1"),
    ({"restart_cost": [30.0, float("nan")]}, "restart_cost[1]: must be finite"),
    ({"preempt_cost": [300.0]}, "preempt_cost: expected shape"),
    ({"host_job": [0, 2, 1]}, "host_job[1]: 2 is not a valid index into the 2 jobs"),
    ({"host_server": [0, 1, -1]}, "host_server[2]"),
    ({"host_server": [0, 1]}, "host_server: expected 3 entries"),
    ({"host_count": [2, -2, 1]}, "host_count[1]: must be >= 0"),
    ({"host_server": [0, 0, 1]}, "host_server[1]: job 0 is listed twice on server 0"),
    ({"host_count": [3, 2, 1]}, "host_count: job 0 has 5 workers"),
    ({"count": None}, "count: give exactly one"),
    ({"min_gpus": 8}, "count: give exactly one"),
    ({"count": -1}, "count: must be >= 0"),
    ({"count": 1.5}, "count: expected an integer"),
    ({"count": None, "min_gpus": True}, "min_gpus: expected an integer"),
    ({"shrink_loss": [[0.0, 1.0]]}, "shrink_loss: expected shape"),
    ({"shrink_loss": [[0.0, np.inf], [0.0, 1.0]]}, "shrink_loss[0][1]: must be finite"),
])
def test_reclaim_problem_names_the_bad_argument(change: dict, prefix: str) -> None:
    with pytest.raises(ValueError) as info:
        ReclaimProblem.build(**{**RECLAIM, **change})
    assert str(info.value).startswith(prefix), str(info.value)


PLACE = dict(server_free=[8, 8], server_loaned=[False, True], job_workers=[6, 3], job_base=[4, 3],
             job_gpus_per_worker=[1, 2], cur_job=[0], cur_server=[1], cur_count=[2])


@pytest.mark.parametrize(("change", "prefix"), [
    ({"server_free": [8, -8]}, "server_free[1]: must be >= 0"),
    ({"server_loaned": [False]}, "server_loaned: expected 2 entries"),
    ({"server_loaned": [0, 2]}, "server_loaned: expected booleans"),
    ({"job_workers": [6, -3]}, "job_workers[1]"),
    ({"job_base": [4]}, "job_base: expected 2 entries"),
    ({"job_gpus_per_worker": [1, 0]}, "job_gpus_per_worker[1]: must be >= 1"),
    ({"cur_job": [2]}, "cur_job[0]: 2 is not a valid index into the 2 jobs"),
    ({"cur_server": [5]}, "cur_server[0]: 5 is not a valid index into the 2 servers"),
    ({"cur_count": [1, 1]}, "cur_count: expected 1 entries"),
    ({"cur_count": [-1]}, "cur_count[0]: must be >= 0"),
])
def test_placement_problem_names_the_bad_argument(change: dict, prefix: str) -> None:
    with pytest.raises(ValueError) as info:
        PlacementProblem.build(**{**PLACE, **change})
    assert str(info.value).startswith(prefix), str(info.value)


def test_placement_problem_defaults_and_types() -> None:
    p = PlacementProblem.build(server_free=[4], server_loaned=[True], job_workers=[2], job_base=[1],
                               job_gpus_per_worker=[2])
    assert p.cur_job.shape == (0,) and p.cur_job.dtype == np.int64 and p.server_loaned.dtype == bool


JOINT = dict(server_free=[4, 4], job_min=[4], job_max=[6], job_gpus_per_worker=[1],
             value=[[[5.5, 4.0], [6.0, 4.8], [float("nan"), 5.0]]])


@pytest.mark.parametrize(("change", "prefix"), [
    ({"server_free": [4, -4]}, "server_free[1]"),
    ({"job_min": [0]}, "job_min[0]: must be >= 1"),
    ({"job_max": [3]}, "job_max[0]: 3 is below job_min[0] = 4"),
    ({"job_max": [6, 7]}, "job_max: expected 1 entries"),
    ({"job_gpus_per_worker": [0]}, "job_gpus_per_worker[0]"),
    ({"value": []}, "value: expected 1 tables"),
    ({"value": [[[5.5, 4.0]]]}, "value[0]: expected 3 rows"),
    ({"value": [[[5.5], [np.inf], [1.0]]]}, "value[0][1][0]: must be finite"),
])
def test_joint_problem_names_the_bad_argument(change: dict, prefix: str) -> None:
    with pytest.raises(ValueError) as info:
        JointProblem.build(**{**JOINT, **change})
    assert str(info.value).startswith(prefix), str(info.value)
